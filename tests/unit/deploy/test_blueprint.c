/*
 * Blueprint reading: the example blueprints, $(vars.X) expansion and --vars, the
 * node pools they ask for, the gcloud commands for them, and located errors for bad input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deploy/internal.h"
#include "gcluster/deploy.h"
#include "kube_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXAMPLES GCLUSTER_SOURCE_DIR "/examples/"

static char *tmp;

static int setup(void **state)
{
    (void)state;
    tmp = kube_test_tmpdir();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kube_test_rmtree(tmp);
    return 0;
}

static const char *write_blueprint(const char *text)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/blueprint.yaml", tmp);
    kube_test_write(path, "%s", text);
    return path;
}

/* A small valid blueprint; tests append modules or replace parts of it. */
#define HEADER                                                                                     \
    "blueprint_name: test\n"                                                                       \
    "vars:\n"                                                                                      \
    "  project_id: proj\n"                                                                         \
    "  deployment_name: demo\n"                                                                    \
    "  region: us-east5\n"                                                                         \
    "  zone: us-east5-b\n"                                                                         \
    "  slices: 2\n"                                                                                \
    "deployment_groups:\n"                                                                         \
    "- group: primary\n"                                                                           \
    "  modules:\n"                                                                                 \
    "  - id: cluster\n"                                                                            \
    "    source: modules/scheduler/gke-cluster\n"                                                  \
    "    settings:\n"                                                                              \
    "      enable_pathways_for_tpus: true\n"

static void load_ok(const char *path, const char *const *vars, size_t count, gc_blueprint *bp)
{
    gc_error err = {0};
    int rc = deploy_blueprint_load(path, vars, count, bp, &err);
    if (rc)
        fail_msg("%s", err.message);
}

/* Loads `text`, expects exit 2 and a message containing each of the NULL-terminated parts. */
static void expect_error(const char *text, const char *const *parts)
{
    gc_blueprint bp;
    gc_error err = {0};
    assert_int_equal(deploy_blueprint_load(write_blueprint(text), NULL, 0, &bp, &err),
                     GC_EXIT_USAGE);
    for (const char *const *p = parts; *p; p++)
        if (!strstr(err.message, *p))
            fail_msg("expected \"%s\" in: %s", *p, err.message);
}

static void test_v6e_example(void **state)
{
    (void)state;
    gc_blueprint bp;
    load_ok(EXAMPLES "gke-tpu-v6e-pathways.yaml", NULL, 0, &bp);
    assert_string_equal(bp.name, "gke-tpu-v6e-pathways");
    assert_string_equal(bp.cluster, "gke-tpu-v6e");
    assert_string_equal(bp.project, "my-project");
    assert_string_equal(bp.region, "us-east5");
    assert_string_equal(bp.zone, "us-east5-b");
    assert_true(bp.pathways);
    assert_true(bp.kueue_install);
    assert_true(bp.jobset_install);
    assert_null(bp.kueue_config_path);
    assert_int_equal(json_integer_value(json_object_get(bp.kueue_vars, "tpu_quota")), 32);
    assert_string_equal(json_string_value(json_object_get(bp.kueue_vars, "accelerator_type")),
                        "tpu-v6e-slice");
    assert_int_equal(bp.pool_count, 2); /* num_slices: 2 → one pool per slice */
    for (size_t i = 0; i < 2; i++) {
        char name[32];
        snprintf(name, sizeof(name), "tpu-v6e-np-%zu", i);
        assert_string_equal(bp.pools[i].name, name);
        assert_string_equal(bp.pools[i].machine_type, "ct6e-standard-4t");
        assert_string_equal(bp.pools[i].accelerator, "tpu-v6e-slice");
        assert_string_equal(bp.pools[i].topology, "4x4");
        assert_int_equal(bp.pools[i].static_nodes, 4);
    }
    assert_int_equal(bp.unhandled_count, 1);
    assert_string_equal(bp.unhandled[0].id, "gke-tpu-v6e-net");
    assert_string_equal(bp.unhandled[0].source, "modules/network/vpc");
    gc_blueprint_free(&bp);
}

static void test_tpu7x_example_with_template(void **state)
{
    (void)state;
    gc_blueprint bp;
    load_ok(EXAMPLES "gke-tpu-7x-pathways.yaml", NULL, 0, &bp);
    assert_int_equal(bp.pool_count, 1);
    /* No name: gke-node-pool's <machine_type>-<module id>, and one slice has no -0 suffix. */
    assert_string_equal(bp.pools[0].name, "tpu7x-standard-4t-tpu7x-np");
    assert_string_equal(bp.pools[0].accelerator, "tpu7x");
    assert_string_equal(bp.pools[0].topology, "2x2x2");
    assert_int_equal(bp.pools[0].static_nodes, 2); /* 8 chips / 4 per host */
    assert_non_null(bp.kueue_config_path);
    assert_non_null(strstr(bp.kueue_config_path, "examples/kueue-config-custom.yaml.tftpl"));
    gc_blueprint_free(&bp);
}

static void test_vars_override_keeps_types(void **state)
{
    (void)state;
    const char *vars[] = {"num_slices=1", "deployment_name=other",
                          "enable_pathways_for_tpus=false"};
    gc_blueprint bp;
    load_ok(EXAMPLES "gke-tpu-v6e-pathways.yaml", vars, 3, &bp);
    assert_int_equal(bp.pool_count, 1);
    assert_string_equal(bp.pools[0].name, "tpu-v6e-np"); /* one pool: no -0 suffix */
    assert_string_equal(bp.cluster, "other");
    assert_false(bp.pathways);
    gc_blueprint_free(&bp);
}

static void test_embedded_reference_and_escape(void **state)
{
    (void)state;
    gc_blueprint bp;
    load_ok(write_blueprint(HEADER "  - id: pool\n"
                                   "    source: github.com/GoogleCloudPlatform/cluster-toolkit//"
                                   "modules/compute/gke-node-pool?ref=v1.60.0\n"
                                   "    settings:\n"
                                   "      name: $(vars.deployment_name)-cpu-$(vars.slices)\n"
                                   "      machine_type: n2-standard-8\n"
                                   "      autoscaling_total_max_nodes: 7\n"
                                   "  - id: other\n"
                                   "    source: community/modules/thing\n"
                                   "    settings:\n"
                                   "      literal: \\$(not.a.reference)\n"
                                   "      module_output: $(cluster.endpoint)\n"),
            NULL, 0, &bp);
    assert_int_equal(bp.pool_count, 1);
    assert_string_equal(bp.pools[0].name, "demo-cpu-2");
    assert_null(bp.pools[0].accelerator);
    assert_int_equal(bp.pools[0].static_nodes, -1);
    assert_int_equal(bp.pools[0].min_nodes, 0);
    assert_int_equal(bp.pools[0].max_nodes, 7);
    assert_string_equal(bp.cluster, "demo"); /* gke-cluster without name: deployment_name */
    /* A module deploy does not act on may use Terraform-only references: listed, not fatal. */
    assert_int_equal(bp.unhandled_count, 1);
    assert_string_equal(bp.unhandled[0].id, "other");
    gc_blueprint_free(&bp);
}

static void test_all_pools_puts_head_first(void **state)
{
    (void)state;
    gc_blueprint bp;
    load_ok(EXAMPLES "gke-tpu-v6e-pathways.yaml", NULL, 0, &bp);
    size_t count;
    gc_pool_spec *pools = deploy_blueprint_all_pools(&bp, "head-np", &count);
    assert_int_equal(count, 3);
    assert_string_equal(pools[0].name, "head-np");
    assert_string_equal(pools[0].machine_type, "n4-standard-64");
    assert_int_equal(pools[0].min_nodes, 0);
    assert_int_equal(pools[0].max_nodes, 100);
    assert_string_equal(pools[1].name, "tpu-v6e-np-0");
    free(pools);
    gc_blueprint_free(&bp);
}

static void test_shell_line_quotes(void **state)
{
    (void)state;
    char *argv[] = {"echo", "a b", "it's", "", "--x=1,2", NULL};
    char *line = deploy_argv_shell_line(argv);
    assert_string_equal(line, "echo 'a b' 'it'\\''s' '' --x=1,2");
    free(line);
}

static void test_malformed_yaml_is_located(void **state)
{
    (void)state;
    expect_error("blueprint_name: x\nvars: {a: [1, 2}\n",
                 (const char *[]){"blueprint.yaml:2:", NULL});
}

static void test_unknown_variable_is_located(void **state)
{
    (void)state;
    expect_error(HEADER "  - id: pool\n"
                        "    source: modules/compute/gke-node-pool\n"
                        "    settings:\n"
                        "      machine_type: $(vars.machne_type)\n",
                 (const char *[]){"blueprint.yaml:18:21:", "$(vars.machne_type)",
                                  "vars: project_id", "--vars machne_type=VALUE", NULL});
}

static void test_unknown_variable_in_unhandled_module(void **state)
{
    (void)state;
    expect_error(HEADER "  - id: net\n"
                        "    source: modules/network/vpc\n"
                        "    settings:\n"
                        "      x: [$(vars.nope)]\n",
                 (const char *[]){"blueprint.yaml:18:11:", "$(vars.nope)", NULL});
}

static void test_wrong_types_are_located(void **state)
{
    (void)state;
    expect_error(HEADER "  - id: pool\n"
                        "    source: modules/compute/gke-node-pool\n"
                        "    settings:\n"
                        "      static_node_count: four\n",
                 (const char *[]){"blueprint.yaml:18:26:", "static_node_count", "a whole number",
                                  "not a string", NULL});
    /* The wrong type comes from a variable: the message points at the variable. */
    expect_error("blueprint_name: t\nvars:\n  deployment_name: d\n  enable_pathways_for_tpus: yes\n"
                 "deployment_groups:\n- group: g\n  modules:\n  - id: c\n"
                 "    source: modules/scheduler/gke-cluster\n",
                 (const char *[]){"blueprint.yaml:4:29:", "vars.enable_pathways_for_tpus",
                                  "true or false", NULL});
}

static void test_unevaluable_reference(void **state)
{
    (void)state;
    expect_error(HEADER "  - id: pool\n"
                        "    source: modules/compute/gke-node-pool\n"
                        "    settings:\n"
                        "      machine_type: $(cluster.machine)\n",
                 (const char *[]){"blueprint.yaml:18:21:",
                                  "module pool: setting machine_type uses "
                                  "cluster.machine, which is known only once Terraform has run",
                                  NULL});
}

static void test_structure_errors(void **state)
{
    (void)state;
    expect_error("- just\n- a list\n", (const char *[]){"a YAML mapping", NULL});
    expect_error("vars: {}\ndeployment_groups: []\n", (const char *[]){"blueprint_name", NULL});
    expect_error(
        "blueprint_name: x\ndeployment_groups: {}\n",
        (const char *[]){"blueprint.yaml:2:20:", "deployment_groups must be a list", NULL});
    expect_error(HEADER "  - id: cluster\n    source: modules/network/vpc\n",
                 (const char *[]){"blueprint.yaml:15:9:", "module id cluster is used twice", NULL});
    expect_error(HEADER "  - id: x\n    source: modules/network/vpc\n    use: [nothing]\n",
                 (const char *[]){"blueprint.yaml:17:11:", "uses nothing", NULL});
    expect_error(HEADER "  - id: c2\n    source: modules/scheduler/gke-cluster\n",
                 (const char *[]){"second gke-cluster", NULL});
}

static void test_tpu_pool_checks(void **state)
{
    (void)state;
    expect_error(HEADER "  - id: pool\n"
                        "    source: modules/compute/gke-node-pool\n"
                        "    settings:\n"
                        "      machine_type: ct6e-standard-4t\n"
                        "      static_node_count: 2\n"
                        "      placement_policy: {type: COMPACT, tpu_topology: 4x4}\n",
                 (const char *[]){
                     "blueprint.yaml:19:26:", "4x4 slice of ct6e-standard-4t has 4 hosts", NULL});
    expect_error(HEADER "  - id: pool\n"
                        "    source: modules/compute/gke-node-pool\n"
                        "    settings:\n"
                        "      machine_type: ct6e-standard-4t\n"
                        "      placement_policy: {tpu_topology: 3x5}\n",
                 (const char *[]){"blueprint.yaml:19:", "module pool", "3x5", NULL});
    expect_error(HEADER "  - id: pool\n"
                        "    source: modules/compute/gke-node-pool\n"
                        "    settings:\n"
                        "      machine_type: tpu7x-standard-4t\n",
                 (const char *[]){"needs placement_policy.tpu_topology", NULL});
}

/* Deploy applies one Kueue configuration: a setting it reads once may come from one module. */
static void test_setting_in_two_modules_is_located(void **state)
{
    (void)state;
    expect_error(HEADER "  - id: kueue-a\n"
                        "    source: modules/management/kubectl-apply\n"
                        "    settings:\n"
                        "      kueue: {install: true, config_path: a.yaml.tftpl}\n"
                        "  - id: kueue-b\n"
                        "    source: modules/management/kubectl-apply\n"
                        "    settings:\n"
                        "      kueue:\n"
                        "        config_path: b.yaml.tftpl\n",
                 (const char *[]){"blueprint.yaml:23:22:", "module kueue-b sets kueue.config_path",
                                  "module kueue-a already sets it (", "blueprint.yaml:18:43);",
                                  NULL});
    expect_error(HEADER "  - id: jobset-a\n"
                        "    source: modules/management/kubectl-apply\n"
                        "    settings: {jobset: {install: true}}\n"
                        "  - id: jobset-b\n"
                        "    source: modules/management/kubectl-apply\n"
                        "    settings: {jobset: {install: false}}\n",
                 (const char *[]){"module jobset-b sets jobset.install", "jobset-a", NULL});
    expect_error(HEADER "  - id: vars-a\n"
                        "    source: modules/management/kubectl-apply\n"
                        "    settings: {kueue: {config_template_vars: {tpu_quota: 8}}}\n"
                        "  - id: vars-b\n"
                        "    source: modules/management/kubectl-apply\n"
                        "    settings: {kueue: {config_template_vars: {tpu_quota: 16}}}\n",
                 (const char *[]){"module vars-b sets kueue.config_template_vars.tpu_quota",
                                  "vars-a", NULL});
}

/* Two modules may split the work: one installs Kueue, the other JobSet. */
static void test_modules_may_set_different_settings(void **state)
{
    (void)state;
    gc_blueprint bp;
    load_ok(write_blueprint(HEADER "  - id: kueue\n"
                                   "    source: modules/management/kubectl-apply\n"
                                   "    settings: {kueue: {install: true, config_template_vars: "
                                   "{tpu_quota: 8}}}\n"
                                   "  - id: jobset\n"
                                   "    source: modules/management/kubectl-apply\n"
                                   "    settings: {jobset: {install: true}, kueue: "
                                   "{config_template_vars: {pathways_cpu_quota: 96}}}\n"),
            NULL, 0, &bp);
    assert_true(bp.kueue_install);
    assert_true(bp.jobset_install);
    assert_int_equal(json_integer_value(json_object_get(bp.kueue_vars, "tpu_quota")), 8);
    assert_int_equal(json_integer_value(json_object_get(bp.kueue_vars, "pathways_cpu_quota")), 96);
    gc_blueprint_free(&bp);
}

static void test_bad_vars_flag(void **state)
{
    (void)state;
    const char *vars[] = {"=1"};
    gc_blueprint bp;
    gc_error err = {0};
    assert_int_equal(
        deploy_blueprint_load(EXAMPLES "gke-tpu-v6e-pathways.yaml", vars, 1, &bp, &err),
        GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--vars =1: expected NAME=VALUE"));
}

static void test_missing_file(void **state)
{
    (void)state;
    gc_blueprint bp;
    gc_error err = {0};
    assert_int_equal(deploy_blueprint_load("/nonexistent/bp.yaml", NULL, 0, &bp, &err),
                     GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "/nonexistent/bp.yaml"));
}

/* Loads `text` with options; fails the test on an error. */
static void open_ok(const char *text, const gc_blueprint_options *o, gc_blueprint *bp)
{
    gc_error err = {0};
    if (gc_blueprint_open(write_blueprint(text), o, bp, &err))
        fail_msg("%s", err.message);
}

static long long int_setting(const gc_blueprint *bp, const char *module, const char *key)
{
    const gc_bp_module *m = deploy_blueprint_module(bp, module);
    assert_non_null(m);
    const json_t *v = deploy_blueprint_setting(bp, m, key);
    if (!json_is_integer(v))
        fail_msg("%s.%s is not an integer", module, key);
    return (long long)json_integer_value(v);
}

/* HCL arithmetic and logic in $(...), with Terraform's precedence; identifiers may hold '-'. */
static void test_expressions(void **state)
{
    (void)state;
    gc_blueprint bp;
    open_ok("blueprint_name: e\n"
            "vars:\n"
            "  a: 6\n"
            "  b: 4\n"
            "  half: 0.5\n"
            "  name: x\n"
            "  nested: $(vars.a * vars.b)\n"
            "  stage: $(ghpc_stage(\"./t.yaml.tftpl\"))\n"
            "  text: $(vars.name)-$(vars.a)\n"
            "deployment_groups:\n"
            "- group: g\n"
            "  modules:\n"
            "  - id: other-mod\n"
            "    source: modules/x/y\n"
            "    settings:\n"
            "      sum: $(vars.a + vars.b * 2)\n"
            "      paren: $((vars.a + vars.b) * 2)\n"
            "      minus: $(vars.a - vars.b - 1)\n"
            "      div: $(vars.a / vars.b)\n"
            "      mod: $(vars.a % vars.b)\n"
            "      neg: $(-vars.a + 1)\n"
            "      cond: '$(vars.a > vars.b && !false ? \"big\" : \"small\")'\n"
            "      eq: $(vars.name == \"x\")\n"
            "      list: [$(vars.a), $(vars.nested)]\n"
            "      merged: $(merge({a = 1}, {b = vars.b}))\n"
            "      flat: $(flatten([[1], [2, [3]]]))\n"
            "      escaped: \\$(vars.a) and \\\\$(vars.b)\n"
            "      later: $(vars.half * 4)\n"
            "      out: $(other-mod.thing)\n"
            "      outsum: $(other-mod.thing + 1)\n"
            "      concat: $(concat([1], [other-mod.thing]))\n",
            &(gc_blueprint_options){0}, &bp);
    assert_int_equal(int_setting(&bp, "other-mod", "sum"), 14);
    assert_int_equal(int_setting(&bp, "other-mod", "paren"), 20);
    assert_int_equal(int_setting(&bp, "other-mod", "minus"), 1);
    assert_int_equal(int_setting(&bp, "other-mod", "mod"), 2);
    assert_int_equal(int_setting(&bp, "other-mod", "neg"), -5);
    assert_int_equal(int_setting(&bp, "other-mod", "later"), 2);
    const gc_bp_module *m = deploy_blueprint_module(&bp, "other-mod");
    assert_true(json_real_value(deploy_blueprint_setting(&bp, m, "div")) == 1.5);
    assert_string_equal(json_string_value(deploy_blueprint_setting(&bp, m, "cond")), "big");
    assert_true(json_is_true(deploy_blueprint_setting(&bp, m, "eq")));
    assert_int_equal(
        json_integer_value(json_array_get(deploy_blueprint_setting(&bp, m, "list"), 1)),
        24); /* a variable whose value is an expression */
    assert_int_equal(
        json_integer_value(json_object_get(deploy_blueprint_setting(&bp, m, "merged"), "b")), 4);
    assert_int_equal(json_array_size(deploy_blueprint_setting(&bp, m, "flat")), 3);
    assert_string_equal(json_string_value(deploy_blueprint_setting(&bp, m, "escaped")),
                        "$(vars.a) and \\4");
    assert_string_equal(json_string_value(json_object_get(bp.vars, "stage")), "./t.yaml.tftpl");
    assert_string_equal(json_string_value(json_object_get(bp.vars, "text")), "x-6");
    /* Outputs of modules deploy does not model are unknown, and so is what uses them. */
    assert_string_equal(deploy_blueprint_unknown(deploy_blueprint_setting(&bp, m, "out")),
                        "other-mod.thing");
    assert_non_null(deploy_blueprint_unknown(deploy_blueprint_setting(&bp, m, "outsum")));
    assert_non_null(deploy_blueprint_unknown(deploy_blueprint_setting(&bp, m, "concat")));
    assert_null(deploy_blueprint_unknown(deploy_blueprint_setting(&bp, m, "sum")));
    gc_blueprint_free(&bp);
}

static void test_expression_errors(void **state)
{
    (void)state;
    expect_error("blueprint_name: e\nvars:\n  a: $(vars.b)\n  b: $(vars.a)\n"
                 "deployment_groups: []\n",
                 (const char *[]){"refers to itself", NULL});
    expect_error("blueprint_name: e\nvars:\n  a: 1\ndeployment_groups:\n- group: g\n  modules:\n"
                 "  - id: p\n    source: modules/compute/gke-node-pool\n    settings:\n"
                 "      static_node_count: $(vars.a * \"x\")\n",
                 (const char *[]){"blueprint.yaml:10:26:", "* needs numbers", NULL});
    expect_error("blueprint_name: e\nvars:\n  a: 1\ndeployment_groups:\n- group: g\n  modules:\n"
                 "  - id: p\n    source: modules/x/y\n    settings:\n"
                 "      s: $(nothere.out)\n",
                 (const char *[]){"blueprint.yaml:10:10:", "module nothere", NULL});
    expect_error("blueprint_name: e\nvars:\n  a:\ndeployment_groups:\n- group: g\n  modules:\n"
                 "  - id: p\n    source: modules/compute/gke-node-pool\n    settings:\n"
                 "      static_node_count: $(vars.a + 1)\n",
                 (const char *[]){"a variable without a value", "--vars", NULL});
    expect_error("blueprint_name: e\nvars:\n  a: $(1e300 * 1e300)\ndeployment_groups: []\n",
                 (const char *[]){"blueprint.yaml:3:6:", "the result of * is too large", NULL});
    expect_error("blueprint_name: e\nvars:\n  a: $(1e999)\ndeployment_groups: []\n",
                 (const char *[]){"too large a number", NULL});
    expect_error("blueprint_name: e\nvars:\n  a: 1\ndeployment_groups:\n- group: g\n  modules:\n"
                 "  - id: p\n    source: modules/compute/gke-node-pool\n    settings:\n"
                 "      static_node_count: $(1e30 / 1)\n",
                 (const char *[]){"a whole number from 0 to 100000", NULL});
}

/* The outputs of gke-node-pool that blueprints compute with, from the machine and topology. */
static void test_node_pool_outputs(void **state)
{
    (void)state;
    gc_blueprint bp;
    open_ok(HEADER "  - id: tpu-pool\n"
                   "    source: modules/compute/gke-node-pool\n"
                   "    settings:\n"
                   "      machine_type: ct6e-standard-4t\n"
                   "      num_slices: $(vars.slices)\n"
                   "      placement_policy: {type: COMPACT, tpu_topology: 4x4}\n"
                   "  - id: A3_High-GPU_pool\n"
                   "    source: modules/compute/gke-node-pool\n"
                   "    settings:\n"
                   "      machine_type: a3-highgpu-8g\n"
                   "      static_node_count: 3\n"
                   "  - id: use\n"
                   "    source: modules/x/y\n"
                   "    settings:\n"
                   "      quota: $(vars.slices * tpu-pool.node_count_static * "
                   "tpu-pool.tpu_chips_per_node)\n"
                   "      gpus: $(A3_High-GPU_pool.static_gpu_count)\n"
                   "      accel: $(tpu-pool.tpu_accelerator_type)\n",
            &(gc_blueprint_options){0}, &bp);
    assert_int_equal(int_setting(&bp, "use", "quota"), 32); /* 2 x 4 hosts x 4 chips */
    assert_int_equal(int_setting(&bp, "use", "gpus"), 24);  /* 3 nodes x 8 GPUs */
    const gc_bp_module *m = deploy_blueprint_module(&bp, "use");
    assert_string_equal(json_string_value(deploy_blueprint_setting(&bp, m, "accel")),
                        "tpu-v6e-slice");
    /* Pool names as gke-node-pool gives them: <machine_type>-<id lower-cased, outside a-z0-9-
     * removed>, -N per slice when there are several. */
    assert_int_equal(bp.pool_count, 3);
    assert_string_equal(bp.pools[0].name, "ct6e-standard-4t-tpu-pool-0");
    assert_string_equal(bp.pools[1].name, "ct6e-standard-4t-tpu-pool-1");
    assert_int_equal(bp.pools[0].static_nodes, 4);
    assert_string_equal(bp.pools[2].name, "a3-highgpu-8g-a3high-gpupool");
    gc_blueprint_free(&bp);
}

/* -d: the deployment file's vars replace the blueprint's; --vars replace both. */
static void test_deployment_file(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof(path), "%s/deployment.yaml", tmp);
    kube_test_write(path, "terraform_backend_defaults: {type: gcs}\n"
                          "vars:\n  deployment_name: from-file\n  project_id: file-proj\n");
    const char *vars[] = {"project_id=flag-proj"};
    gc_blueprint bp;
    open_ok(HEADER, &(gc_blueprint_options){.deployment_file = path}, &bp);
    assert_string_equal(bp.cluster, "from-file");
    assert_string_equal(bp.project, "file-proj");
    gc_blueprint_free(&bp);
    open_ok(HEADER, &(gc_blueprint_options){.deployment_file = path, .vars = vars, .var_count = 1},
            &bp);
    assert_string_equal(bp.project, "flag-proj");
    gc_blueprint_free(&bp);

    kube_test_write(path, "vars: [1, 2]\n");
    gc_error err = {0};
    assert_int_equal(gc_blueprint_open(write_blueprint(HEADER),
                                       &(gc_blueprint_options){.deployment_file = path}, &bp, &err),
                     GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "vars must be a mapping"));
    assert_int_equal(gc_blueprint_open(write_blueprint(HEADER),
                                       &(gc_blueprint_options){.deployment_file = "/nonexistent"},
                                       &bp, &err),
                     GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--deployment-file"));
}

/* -l: a failed validator is an error, a warning, or nothing. */
static void test_validation_level(void **state)
{
    (void)state;
    const char *text = HEADER "  - id: pool\n"
                              "    source: modules/compute/gke-node-pool\n"
                              "    settings:\n"
                              "      machine_type: ct6e-standard-4t\n"
                              "      static_node_count: 2\n"
                              "      placement_policy: {type: COMPACT, tpu_topology: 4x4}\n";
    const char *zone[] = {"zone=europe-west4-a"};
    gc_blueprint bp;
    gc_error err = {0};
    assert_int_equal(
        gc_blueprint_open(write_blueprint(text), &(gc_blueprint_options){0}, &bp, &err),
        GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "has 4 hosts, but static_node_count is 2"));
    open_ok(text, &(gc_blueprint_options){.validation = GC_VALIDATION_WARNING}, &bp);
    assert_int_equal(bp.warnings.count, 1);
    assert_non_null(strstr(bp.warnings.items[0], "has 4 hosts"));
    gc_blueprint_free(&bp);
    open_ok(
        text,
        &(gc_blueprint_options){.validation = GC_VALIDATION_IGNORE, .vars = zone, .var_count = 1},
        &bp);
    assert_int_equal(bp.warnings.count, 0);
    gc_blueprint_free(&bp);
    assert_int_equal(gc_blueprint_open(write_blueprint(HEADER),
                                       &(gc_blueprint_options){.vars = zone, .var_count = 1}, &bp,
                                       &err),
                     GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "zone europe-west4-a is not in region us-east5"));
    gc_validation_level level;
    assert_int_equal(gc_validation_level_parse("WARNING", &level, &err), 0);
    assert_int_equal(level, GC_VALIDATION_WARNING);
    assert_int_equal(gc_validation_level_parse("warn", &level, &err), GC_EXIT_USAGE);
}

/* Unset variables the blueprint needs say which --vars to pass. */
static void test_unset_vars_say_the_fix(void **state)
{
    (void)state;
    expect_error("blueprint_name: t\nvars:\n  deployment_name: d\n  zone:\n  topo:\n"
                 "deployment_groups:\n- group: g\n  modules:\n  - id: p\n"
                 "    source: modules/compute/gke-node-pool\n    settings:\n"
                 "      zones: [$(vars.zone)]\n",
                 (const char *[]){"pass --vars zone=ZONE", NULL});
    expect_error("blueprint_name: t\nvars:\n  deployment_name: d\n  topo:\n"
                 "deployment_groups:\n- group: g\n  modules:\n  - id: p\n"
                 "    source: modules/compute/gke-node-pool\n    settings:\n"
                 "      machine_type: ct6e-standard-4t\n"
                 "      placement_policy: {tpu_topology: $(vars.topo)}\n",
                 (const char *[]){"pass --vars topo=TOPOLOGY", NULL});
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v6e_example),
        cmocka_unit_test(test_tpu7x_example_with_template),
        cmocka_unit_test(test_vars_override_keeps_types),
        cmocka_unit_test(test_embedded_reference_and_escape),
        cmocka_unit_test(test_all_pools_puts_head_first),
        cmocka_unit_test(test_shell_line_quotes),
        cmocka_unit_test(test_malformed_yaml_is_located),
        cmocka_unit_test(test_unknown_variable_is_located),
        cmocka_unit_test(test_unknown_variable_in_unhandled_module),
        cmocka_unit_test(test_wrong_types_are_located),
        cmocka_unit_test(test_unevaluable_reference),
        cmocka_unit_test(test_structure_errors),
        cmocka_unit_test(test_tpu_pool_checks),
        cmocka_unit_test(test_setting_in_two_modules_is_located),
        cmocka_unit_test(test_modules_may_set_different_settings),
        cmocka_unit_test(test_bad_vars_flag),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_expressions),
        cmocka_unit_test(test_expression_errors),
        cmocka_unit_test(test_node_pool_outputs),
        cmocka_unit_test(test_deployment_file),
        cmocka_unit_test(test_validation_level),
        cmocka_unit_test(test_unset_vars_say_the_fix),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
