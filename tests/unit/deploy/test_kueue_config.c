/*
 * The Kueue configuration deploy applies: the built-in objects with default and
 * overridden quotas, the head pool override, user templates and their errors and warnings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deploy/internal.h"
#include "gcluster/deploy.h"
#include "gcluster/kube.h"
#include "kube/internal.h"
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

/* A Pathways blueprint's modules down to its kueue settings; tests append their own. */
#define PATHWAYS_KUEUE_BLUEPRINT                                                                   \
    "vars: {deployment_name: d}\n"                                                                 \
    "deployment_groups:\n"                                                                         \
    "- group: g\n"                                                                                 \
    "  modules:\n"                                                                                 \
    "  - id: c\n"                                                                                  \
    "    source: modules/scheduler/gke-cluster\n"                                                  \
    "    settings: {enable_pathways_for_tpus: true}\n"                                             \
    "  - id: k\n"                                                                                  \
    "    source: modules/management/kubectl-apply\n"                                               \
    "    use: [c]\n"                                                                               \
    "    settings:\n"                                                                              \
    "      kueue:\n"                                                                               \
    "        install: true\n"

/* Objects for a blueprint (example file, with --vars), or the failure message. */
typedef struct rendered {
    json_t *objects;
    gc_buf warnings;
    gc_error err;
    int rc;
} rendered;

static void render(rendered *out, const char *path, const char *const *vars, size_t count,
                   const char *head_pool)
{
    memset(out, 0, sizeof(*out));
    gc_buf_init(&out->warnings);
    gc_blueprint bp;
    out->rc = deploy_blueprint_load(path, vars, count, &bp, &out->err);
    if (out->rc)
        fail_msg("%s", out->err.message);
    out->rc =
        deploy_kueue_objects(&bp, head_pool, "v1beta2", &out->objects, &out->warnings, &out->err);
    gc_blueprint_free(&bp);
}

static void rendered_free(rendered *r)
{
    json_decref(r->objects);
    gc_buf_free(&r->warnings);
}

static json_t *find(const json_t *objects, const char *kind, const char *name)
{
    size_t i;
    json_t *obj;
    json_array_foreach(objects, i, obj)
    {
        if (!strcmp(json_string_value(json_object_get(obj, "kind")), kind) &&
            !strcmp(json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")),
                    name))
            return obj;
    }
    fail_msg("no %s %s", kind, name);
    return NULL;
}

/* The nominalQuota of `resource` for `flavor` in the ClusterQueue's only group, as text. */
static void quota_text(const json_t *cq, const char *flavor, const char *resource, char *out,
                       size_t size)
{
    json_t *group =
        json_array_get(json_object_get(json_object_get(cq, "spec"), "resourceGroups"), 0);
    size_t i, j;
    json_t *f, *res;
    json_array_foreach(json_object_get(group, "flavors"), i, f)
    {
        if (strcmp(json_string_value(json_object_get(f, "name")), flavor))
            continue;
        json_array_foreach(json_object_get(f, "resources"), j, res)
        {
            if (strcmp(json_string_value(json_object_get(res, "name")), resource))
                continue;
            json_t *q = json_object_get(res, "nominalQuota");
            if (json_is_integer(q))
                snprintf(out, size, "%lld", (long long)json_integer_value(q));
            else
                snprintf(out, size, "%s", json_string_value(q));
            return;
        }
    }
    fail_msg("no quota for %s/%s", flavor, resource);
}

static void assert_quota(const json_t *cq, const char *flavor, const char *resource,
                         const char *expected)
{
    char text[64];
    quota_text(cq, flavor, resource, text, sizeof(text));
    assert_string_equal(text, expected);
}

static void test_builtin_defaults(void **state)
{
    (void)state;
    rendered r;
    render(&r, EXAMPLES "gke-tpu-v6e-pathways.yaml", NULL, 0, NULL);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.warnings.len, 0);
    /* Cluster Toolkit's kueue-configuration-pathways order: the TPU flavor, the head flavor, the
     * queue, the local queue, the five priority classes. */
    assert_int_equal(json_array_size(r.objects), 9);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(json_array_get(r.objects, 0), "metadata"), "name")),
                        "flavor-tpu-v6e-slice");
    static const char *const kinds[] = {"ResourceFlavor", "ResourceFlavor", "ClusterQueue",
                                        "LocalQueue",     "PriorityClass",  "PriorityClass",
                                        "PriorityClass",  "PriorityClass",  "PriorityClass"};
    for (size_t i = 0; i < 9; i++)
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(r.objects, i), "kind")), kinds[i]);

    json_t *pathways = find(r.objects, "ResourceFlavor", "pathways-flavor");
    assert_string_equal(json_string_value(json_object_get(pathways, "apiVersion")),
                        "kueue.x-k8s.io/v1beta2");
    json_t *labels = json_object_get(json_object_get(pathways, "spec"), "nodeLabels");
    assert_int_equal(json_object_size(labels), 1);
    assert_string_equal(json_string_value(json_object_get(labels, "cloud.google.com/gke-nodepool")),
                        "cpu-np");
    json_t *tpu = find(r.objects, "ResourceFlavor", "flavor-tpu-v6e-slice");
    labels = json_object_get(json_object_get(tpu, "spec"), "nodeLabels");
    assert_string_equal(
        json_string_value(json_object_get(labels, "cloud.google.com/gke-tpu-accelerator")),
        "tpu-v6e-slice");
    json_t *toleration =
        json_array_get(json_object_get(json_object_get(tpu, "spec"), "tolerations"), 0);
    assert_string_equal(json_string_value(json_object_get(toleration, "key")), "google.com/tpu");
    assert_string_equal(json_string_value(json_object_get(toleration, "value")), "present");
    assert_string_equal(json_string_value(json_object_get(toleration, "effect")), "NoSchedule");
    /* No tpu_topology in config_template_vars: the flavor selects the accelerator only. */
    assert_int_equal(json_object_size(labels), 1);

    /* One group covering all three resources; the TPU flavor first, the head flavor with no
     * TPU quota. */
    json_t *cq = find(r.objects, "ClusterQueue", "cluster-queue");
    json_t *groups = json_object_get(json_object_get(cq, "spec"), "resourceGroups");
    assert_int_equal(json_array_size(groups), 1);
    json_t *covered = json_object_get(json_array_get(groups, 0), "coveredResources");
    assert_int_equal(json_array_size(covered), 3);
    assert_string_equal(json_string_value(json_array_get(covered, 0)), "google.com/tpu");
    assert_string_equal(json_string_value(json_array_get(covered, 1)), "cpu");
    assert_string_equal(json_string_value(json_array_get(covered, 2)), "memory");
    json_t *flavors = json_object_get(json_array_get(groups, 0), "flavors");
    assert_string_equal(json_string_value(json_object_get(json_array_get(flavors, 0), "name")),
                        "flavor-tpu-v6e-slice");
    assert_quota(cq, "pathways-flavor", "google.com/tpu", "0");
    assert_quota(cq, "pathways-flavor", "cpu", "480");
    assert_quota(cq, "pathways-flavor", "memory", "2T"); /* 2000G, as Kueue stores it */
    assert_quota(cq, "flavor-tpu-v6e-slice", "google.com/tpu", "32"); /* the example's config var */
    assert_quota(cq, "flavor-tpu-v6e-slice", "cpu", "999999");
    assert_quota(cq, "flavor-tpu-v6e-slice", "memory", "999999T");

    json_t *lq = find(r.objects, "LocalQueue", "user-queue");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(lq, "metadata"), "namespace")),
        "default");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(lq, "spec"), "clusterQueue")),
        "cluster-queue");
    static const struct {
        const char *name;
        int value;
    } classes[] = {
        {"very-low", 100}, {"low", 250}, {"medium", 500}, {"high", 750}, {"very-high", 1000}};
    for (size_t i = 0; i < 5; i++) {
        json_t *pc = find(r.objects, "PriorityClass", classes[i].name);
        assert_int_equal(json_integer_value(json_object_get(pc, "value")), classes[i].value);
        assert_true(json_is_false(json_object_get(pc, "globalDefault")));
    }
    assert_string_equal(json_string_value(json_object_get(
                            find(r.objects, "PriorityClass", "very-low"), "description")),
                        "Very Low");
    rendered_free(&r);
}

static void test_overridden_quotas(void **state)
{
    (void)state;
    /* config_template_vars values come from vars in the example, so --vars reaches them. */
    const char *vars[] = {"tpu_quota=8"};
    rendered r;
    render(&r, EXAMPLES "gke-tpu-v6e-pathways.yaml", vars, 1, NULL);
    assert_int_equal(r.rc, 0);
    assert_quota(find(r.objects, "ClusterQueue", "cluster-queue"), "flavor-tpu-v6e-slice",
                 "google.com/tpu", "8");
    rendered_free(&r);

    char path[512];
    snprintf(path, sizeof(path), "%s/quotas.yaml", tmp);
    kube_test_write(path,
                    "blueprint_name: q\n" PATHWAYS_KUEUE_BLUEPRINT "        config_template_vars:\n"
                    "          accelerator_type: tpu-v5p-slice\n"
                    "          pathways_cpu_quota: 96\n"
                    "          pathways_memory_quota: 384Gi\n"
                    "          tpu_flavor_cpu_quota: \"1.5k\"\n"
                    "          tpu_flavor_memory_quota: 4Ti\n"
                    "          namespace: team-a\n");
    render(&r, path, NULL, 0, NULL);
    assert_int_equal(r.rc, 0);
    json_t *cq = find(r.objects, "ClusterQueue", "cluster-queue");
    assert_quota(cq, "pathways-flavor", "cpu", "96");
    assert_quota(cq, "pathways-flavor", "memory", "384Gi");
    assert_quota(cq, "flavor-tpu-v5p-slice", "cpu", "1500");
    assert_quota(cq, "flavor-tpu-v5p-slice", "memory", "4Ti");
    assert_quota(cq, "flavor-tpu-v5p-slice", "google.com/tpu", "999999");
    json_t *labels = json_object_get(
        json_object_get(find(r.objects, "ResourceFlavor", "flavor-tpu-v5p-slice"), "spec"),
        "nodeLabels");
    assert_string_equal(
        json_string_value(json_object_get(labels, "cloud.google.com/gke-tpu-accelerator")),
        "tpu-v5p-slice");
    /* The module's built-in configuration puts user-queue in "default" whatever the variables
     * say (its template has no ${namespace}). */
    json_t *lq = find(r.objects, "LocalQueue", "user-queue");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(lq, "metadata"), "namespace")),
        "default");
    rendered_free(&r);
}

static void test_bad_quota_is_an_error(void **state)
{
    (void)state;
    const char *vars[] = {"tpu_quota=lots"};
    rendered r;
    render(&r, EXAMPLES "gke-tpu-v6e-pathways.yaml", vars, 1, NULL);
    assert_int_equal(r.rc, GC_EXIT_USAGE);
    assert_non_null(strstr(r.err.message, "config_template_vars.tpu_quota is \"lots\", not a "
                                          "Kubernetes quantity"));
    rendered_free(&r);
}

static void test_head_pool_override(void **state)
{
    (void)state;
    rendered r;
    render(&r, EXAMPLES "gke-tpu-v6e-pathways.yaml", NULL, 0, "pathways-head");
    assert_int_equal(r.rc, 0);
    json_t *labels = json_object_get(
        json_object_get(find(r.objects, "ResourceFlavor", "pathways-flavor"), "spec"),
        "nodeLabels");
    assert_string_equal(json_string_value(json_object_get(labels, "cloud.google.com/gke-nodepool")),
                        "pathways-head");
    rendered_free(&r);

    /* A user template follows the override through ${pathways_head_np}. */
    render(&r, EXAMPLES "gke-tpu-7x-pathways.yaml", NULL, 0, "pathways-head");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.warnings.len, 0);
    labels = json_object_get(
        json_object_get(find(r.objects, "ResourceFlavor", "pathways-flavor"), "spec"),
        "nodeLabels");
    assert_string_equal(json_string_value(json_object_get(labels, "cloud.google.com/gke-nodepool")),
                        "pathways-head");
    rendered_free(&r);
}

static void test_user_template(void **state)
{
    (void)state;
    rendered r;
    render(&r, EXAMPLES "gke-tpu-7x-pathways.yaml", NULL, 0, NULL);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.warnings.len, 0);
    assert_int_equal(json_array_size(r.objects), 4);
    json_t *cq = find(r.objects, "ClusterQueue", "cluster-queue");
    assert_quota(cq, "tpu7x-flavor", "google.com/tpu", "8");
    assert_quota(cq, "pathways-flavor", "cpu", "480"); /* a default the template uses */
    json_t *labels = json_object_get(
        json_object_get(find(r.objects, "ResourceFlavor", "tpu7x-flavor"), "spec"), "nodeLabels");
    assert_string_equal(
        json_string_value(json_object_get(labels, "cloud.google.com/gke-tpu-accelerator")),
        "tpu7x");
    rendered_free(&r);
}

/* A blueprint using `template` (written to tmp) as its kueue.config_path. */
static const char *template_blueprint(const char *template)
{
    static char path[512];
    char tpl[512];
    snprintf(tpl, sizeof(tpl), "%s/kueue.yaml.tftpl", tmp);
    kube_test_write(tpl, "%s", template);
    snprintf(path, sizeof(path), "%s/tpl.yaml", tmp);
    kube_test_write(path, "blueprint_name: t\n" PATHWAYS_KUEUE_BLUEPRINT
                          "        config_path: kueue.yaml.tftpl\n"
                          "        config_template_vars: {flavor: tpu, quota: 16}\n");
    return path;
}

static void test_template_without_head_flavor_warns(void **state)
{
    (void)state;
    rendered r;
    render(&r,
           template_blueprint("apiVersion: kueue.x-k8s.io/v1beta2\n"
                              "kind: ResourceFlavor\n"
                              "metadata: {name: ${flavor}}\n"
                              "---\n"
                              "apiVersion: kueue.x-k8s.io/v1beta2\n"
                              "kind: ClusterQueue\n"
                              "metadata: {name: cq}\n"
                              "spec:\n"
                              "  resourceGroups:\n"
                              "  - coveredResources: [google.com/tpu]\n"
                              "    flavors: [{name: tpu, resources: [{name: google.com/tpu, "
                              "nominalQuota: ${quota}}]}]\n"
                              "---\n"
                              "apiVersion: kueue.x-k8s.io/v1beta2\n"
                              "kind: ClusterQueue\n"
                              "metadata: {name: cq}\n"
                              "spec:\n"
                              "  resourceGroups:\n"
                              "  - coveredResources: [cpu]\n"
                              "    flavors: [{name: tpu, resources: [{name: cpu, nominalQuota: "
                              "1}]}]\n"),
           NULL, 0, NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.warnings.data, "no ResourceFlavor selects the Pathways head pool "
                                            "(cloud.google.com/gke-nodepool: cpu-np)"));
    /* Two ClusterQueues of one name are merged, as Cluster Toolkit does. */
    assert_int_equal(json_array_size(r.objects), 2);
    json_t *cq = find(r.objects, "ClusterQueue", "cq");
    assert_int_equal(
        json_array_size(json_object_get(json_object_get(cq, "spec"), "resourceGroups")), 2);
    rendered_free(&r);

    render(&r,
           template_blueprint("apiVersion: kueue.x-k8s.io/v1beta2\n"
                              "kind: ResourceFlavor\n"
                              "metadata: {name: head}\n"
                              "spec: {nodeLabels: {cloud.google.com/gke-nodepool: cpu-np}}\n"),
           NULL, 0, NULL);
    assert_int_equal(r.rc, 0);
    assert_non_null(strstr(r.warnings.data, "ResourceFlavor head selects the Pathways head pool "
                                            "cpu-np, but no ClusterQueue"));
    rendered_free(&r);
}

static void expect_template_error(const char *template, const char *expected)
{
    rendered r;
    render(&r, template_blueprint(template), NULL, 0, NULL);
    assert_int_equal(r.rc, GC_EXIT_USAGE);
    if (!strstr(r.err.message, expected))
        fail_msg("expected \"%s\" in: %s", expected, r.err.message);
    rendered_free(&r);
}

static void test_template_errors(void **state)
{
    (void)state;
    expect_template_error("a: 1\nb: ${nope}\n",
                          "kueue.yaml.tftpl:2:4: nope is not a template variable");
    expect_template_error("a: 1\n%{ for x in [1] }x%{ endfor }\n",
                          "kueue.yaml.tftpl:2:1: %{ for x in [1] } is not supported");
    expect_template_error("a: 1\n%{ if tpu_quota }x%{ endif }\n",
                          "kueue.yaml.tftpl:2:1: the condition of %{ if tpu_quota } is not true");
    expect_template_error("a: 1\n%{ if true }x\n", "%{ if } without %{ endif }");
    expect_template_error("a: ${quota\n", "kueue.yaml.tftpl:1:4: \"${\" has no closing }");
    expect_template_error("a: [1\n", "kueue.yaml.tftpl:");
    expect_template_error("apiVersion: v1\nkind: ConfigMap\n", "is not a Kubernetes object");
}

static void test_template_render_escapes(void **state)
{
    (void)state;
    json_t *vars = json_pack("{s:s, s:i, s:b}", "a", "x", "n", 7, "t", 1);
    gc_buf out;
    gc_buf_init(&out);
    gc_error err = {0};
    const char *text = "${a}-${n}-${t} $${a} %%{b} $ { %x";
    assert_int_equal(deploy_kueue_template_render(text, strlen(text), vars, "t", &out, &err), 0);
    assert_string_equal(out.data, "x-7-true ${a} %{b} $ { %x");
    gc_buf_free(&out);
    /* Terraform's directives and expressions, as the toolkit's templates use them. */
    gc_buf_init(&out);
    text = "l:\n  %{ if a != \"\" }k: ${a}%{ endif }\n  %{ if a == \"\" }no%{ else }yes%{ endif }"
           "\nq: ${n * 2 + 1}\n%{~ if t ~}\n  s\n%{~ endif ~}\n!";
    assert_int_equal(deploy_kueue_template_render(text, strlen(text), vars, "t", &out, &err), 0);
    assert_string_equal(out.data, "l:\n  k: x\n  yes\nq: 15s!");
    gc_buf_free(&out);
    json_decref(vars);
}

static void test_no_kueue_without_pathways_or_template(void **state)
{
    (void)state;
    const char *vars[] = {"enable_pathways_for_tpus=false"};
    rendered r;
    render(&r, EXAMPLES "gke-tpu-v6e-pathways.yaml", vars, 1, NULL);
    assert_int_equal(r.rc, 0);
    assert_int_equal(json_array_size(r.objects), 0);
    rendered_free(&r);
}

static void test_quantities_are_canonical(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"2000G", "2T"},   {"480", "480"},        {"0", "0"},          {"1.5k", "1500"},
        {"0.5", "500m"},   {"2048Mi", "2Gi"},     {"1.5Gi", "1536Mi"}, {"999999Gi", "999999Gi"},
        {"1e3", "1e3"},    {"1000e3", "1e6"},     {"+32", "32"},       {"4000000k", "4G"},
        {"1024Ki", "1Mi"}, {"1500000u", "1500m"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *canonical = gc_quantity_canonical(cases[i][0]);
        if (!canonical || strcmp(canonical, cases[i][1]))
            fail_msg("%s: want %s, got %s", cases[i][0], cases[i][1],
                     canonical ? canonical : "NULL");
        free(canonical);
    }
    static const char *const invalid[] = {"lots", "12x", "", "1.2.3", "Gi", "1e", "--1"};
    for (size_t i = 0; i < sizeof(invalid) / sizeof(*invalid); i++)
        if (kube_quantity_valid(invalid[i]) || gc_quantity_canonical(invalid[i]))
            fail_msg("\"%s\" accepted as a quantity", invalid[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_defaults),
        cmocka_unit_test(test_overridden_quotas),
        cmocka_unit_test(test_bad_quota_is_an_error),
        cmocka_unit_test(test_head_pool_override),
        cmocka_unit_test(test_user_template),
        cmocka_unit_test(test_template_without_head_flavor_warns),
        cmocka_unit_test(test_template_errors),
        cmocka_unit_test(test_template_render_escapes),
        cmocka_unit_test(test_no_kueue_without_pathways_or_template),
        cmocka_unit_test(test_quantities_are_canonical),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
