/*
 * Blueprint reading: the example blueprints, $(vars.X) expansion and --vars, the
 * node pools they ask for, the gcloud commands for them, and located errors for bad input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

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
    int rc = gc_blueprint_load(path, vars, count, bp, &err);
    if (rc)
        fail_msg("%s", err.message);
}

/* Loads `text`, expects exit 2 and a message containing each of the NULL-terminated parts. */
static void expect_error(const char *text, const char *const *parts)
{
    gc_blueprint bp;
    gc_error err = {0};
    assert_int_equal(gc_blueprint_load(write_blueprint(text), NULL, 0, &bp, &err), GC_EXIT_USAGE);
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
    assert_string_equal(bp.pools[0].name, "tpu7x-np-0"); /* default name: the module id */
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
    assert_string_equal(bp.pools[0].name, "tpu-v6e-np-0");
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
    gc_pool_spec *pools = gc_blueprint_all_pools(&bp, "head-np", &count);
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
    char *line = gc_argv_shell_line(argv);
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
    expect_error(
        HEADER "  - id: pool\n"
               "    source: modules/compute/gke-node-pool\n"
               "    settings:\n"
               "      machine_type: $(cluster.machine)\n",
        (const char *[]){"blueprint.yaml:18:21:", "$(cluster.machine) cannot be evaluated", NULL});
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
    assert_int_equal(gc_blueprint_load(EXAMPLES "gke-tpu-v6e-pathways.yaml", vars, 1, &bp, &err),
                     GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--vars =1: expected NAME=VALUE"));
}

static void test_missing_file(void **state)
{
    (void)state;
    gc_blueprint bp;
    gc_error err = {0};
    assert_int_equal(gc_blueprint_load("/nonexistent/bp.yaml", NULL, 0, &bp, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "/nonexistent/bp.yaml"));
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
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
