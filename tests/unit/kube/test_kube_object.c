/*
 * The vocabulary every room reads objects and names with (src/kube/object.c, src/kube/names.c):
 * conditions (also malformed ones a server may send), metadata, container statuses, requests,
 * node selection and tolerations; and the Kubernetes name forms at their edges.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/kube.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("bad test JSON: %s: %s", e.text, text);
    return v;
}

static void conditions_by_type_even_when_malformed(void **state)
{
    (void)state;
    json_t *o = parse("{\"status\": {\"conditions\": ["
                      "{\"status\": \"True\"},"
                      "{\"type\": 7, \"status\": \"True\"},"
                      "{\"type\": \"Ready\", \"status\": \"False\"},"
                      "{\"type\": \"Active\", \"status\": \"True\", \"reason\": \"Ready\"}]}}");
    assert_non_null(gc_kube_condition(o, "Active"));
    assert_string_equal(gc_kube_string(gc_kube_condition(o, "Active"), "reason"), "Ready");
    assert_true(gc_kube_condition_true(o, "Active"));
    assert_false(gc_kube_condition_true(o, "Ready"));
    assert_null(gc_kube_condition(o, "Missing"));
    assert_false(gc_kube_condition_true(o, "Missing"));
    json_t *odd = parse("{\"status\": {\"conditions\": {\"type\": \"Active\"}}}");
    assert_null(gc_kube_condition(odd, "Active"));
    assert_null(gc_kube_condition(NULL, "Active"));
    json_decref(odd);
    json_decref(o);
}

static void metadata_fields(void **state)
{
    (void)state;
    json_t *o = parse("{\"metadata\": {\"name\": \"pw\", \"labels\": {\"a/b\": \"c\"},"
                      "\"annotations\": {\"n\": 3}}}");
    assert_string_equal(gc_kube_field(o, NULL, "name"), "pw");
    assert_string_equal(gc_kube_field(o, "labels", "a/b"), "c");
    assert_null(gc_kube_field(o, "annotations", "n")); /* not a string */
    assert_null(gc_kube_field(o, "labels", "x"));
    assert_string_equal(gc_kube_string_or(o, "kind", "?"), "?");
    assert_true(gc_kube_same("a", "a"));
    assert_false(gc_kube_same("a", NULL));
    assert_false(gc_kube_same(NULL, NULL));
    json_decref(o);
}

static bool failed(const json_t *cs, void *ctx)
{
    (void)ctx;
    return gc_kube_last_termination(cs) != NULL;
}

static void container_statuses_init_first(void **state)
{
    (void)state;
    json_t *pod = parse(
        "{\"status\": {\"containerStatuses\": [{\"name\": \"main\", \"state\": {\"terminated\": "
        "{\"exitCode\": 3, \"reason\": \"Error\"}}}], \"initContainerStatuses\": [{\"name\": "
        "\"init\", \"state\": {\"running\": {}}, \"lastState\": {\"terminated\": {\"exitCode\": "
        "1, \"reason\": \"OOMKilled\", \"message\": \"m\"}}}]}}");
    gc_kube_container_state c;
    assert_true(gc_kube_each_container(pod, failed, NULL, &c));
    assert_string_equal(c.name, "init");
    assert_string_equal(c.reason, "OOMKilled");
    assert_int_equal(c.exit_code, 1);
    json_decref(pod);
}

static void requests_as_kueue_counts_them(void **state)
{
    (void)state;
    /* A limit stands in for a missing request; an ordinary init container counts only where it
     * alone asks for more than the containers and sidecars. */
    json_t *spec = parse(
        "{\"containers\": [{\"resources\": {\"requests\": {\"cpu\": \"1\"}, \"limits\": "
        "{\"google.com/tpu\": \"4\"}}}, {\"resources\": {\"requests\": {\"memory\": \"1Gi\"}}}],"
        "\"initContainers\": [{\"resources\": {\"requests\": {\"cpu\": \"8\"}}}]}");
    json_t *r = gc_kube_pod_requests(spec);
    assert_true(fabs(json_number_value(json_object_get(r, "cpu")) - 8) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(r, "google.com/tpu")) - 4) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(r, "memory")) - 1073741824.0) < 1);
    char text[32];
    gc_kube_format_quantity(1073741824.0 * 2880, "memory", text, sizeof(text));
    assert_string_equal(text, "2880Gi");
    json_decref(r);
    json_decref(spec);
}

static void node_selection_and_tolerations(void **state)
{
    (void)state;
    json_t *spec = parse(
        "{\"nodeSelector\": {\"pool\": \"tpu\"}, \"affinity\": {\"nodeAffinity\": "
        "{\"requiredDuringSchedulingIgnoredDuringExecution\": {\"nodeSelectorTerms\": ["
        "{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", \"values\": [\"a\"]}]},"
        "{\"matchExpressions\": [{\"key\": \"zone\", \"operator\": \"In\", \"values\": [\"b\"]}]}"
        "]}}}, \"tolerations\": [{\"key\": \"google.com/tpu\", \"operator\": \"Exists\"}]}");
    json_t *a = parse("{\"pool\": \"tpu\", \"zone\": \"b\"}");
    json_t *wrong_zone = parse("{\"pool\": \"tpu\", \"zone\": \"c\"}");
    json_t *keys = parse("{\"pool\": true}");
    assert_true(gc_kube_selection_matches(spec, a, NULL));
    assert_false(gc_kube_selection_matches(spec, wrong_zone, NULL));
    assert_true(gc_kube_selection_matches(spec, wrong_zone, keys)); /* zone does not count */
    json_t *taints = parse("[{\"key\": \"soft\", \"effect\": \"PreferNoSchedule\"},"
                           "{\"key\": \"google.com/tpu\", \"value\": \"present\", \"effect\": "
                           "\"NoSchedule\"}, {\"key\": \"gpu\", \"value\": \"x\", \"effect\": "
                           "\"NoExecute\"}]");
    const json_t *t = gc_kube_untolerated_taint(taints, json_object_get(spec, "tolerations"), NULL);
    assert_non_null(t);
    char words[64];
    gc_kube_taint_words(t, words, sizeof(words));
    assert_string_equal(words, "gpu=x:NoExecute");
    json_decref(taints);
    json_decref(keys);
    json_decref(wrong_zone);
    json_decref(a);
    json_decref(spec);
}

static void name_forms(void **state)
{
    (void)state;
    char long_label[65];
    memset(long_label, 'a', 64);
    long_label[64] = '\0';
    assert_true(gc_kube_is_dns_label("a-1"));
    assert_true(gc_kube_is_dns_label("1a"));
    assert_false(gc_kube_is_dns_label(""));
    assert_false(gc_kube_is_dns_label("-a"));
    assert_false(gc_kube_is_dns_label("a-"));
    assert_false(gc_kube_is_dns_label("A"));
    assert_false(gc_kube_is_dns_label("a.b"));
    assert_false(gc_kube_is_dns_label(long_label));
    long_label[63] = '\0';
    assert_true(gc_kube_is_dns_label(long_label));
    assert_false(gc_kube_is_dns1035_label("1a"));
    assert_true(gc_kube_is_dns1035_label("a1"));
    assert_true(gc_kube_is_dns_subdomain("kueue.x-k8s.io"));
    assert_false(gc_kube_is_dns_subdomain(".a"));
    assert_false(gc_kube_is_dns_subdomain("a_b"));
    assert_true(gc_kube_is_label_value(""));
    assert_true(gc_kube_is_label_value("A_b.c-D"));
    assert_false(gc_kube_is_label_value("_a"));
    assert_false(gc_kube_is_label_value("a b"));
    assert_true(gc_kube_is_label_key("cloud.google.com/gke-nodepool"));
    assert_true(gc_kube_is_label_key("pool"));
    assert_false(gc_kube_is_label_key("cloud.google.com/"));
    assert_false(gc_kube_is_label_key("Cloud.com/x"));
    assert_false(gc_kube_is_label_key("/x"));
    assert_false(gc_kube_is_label_key(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conditions_by_type_even_when_malformed),
        cmocka_unit_test(metadata_fields),
        cmocka_unit_test(container_statuses_init_first),
        cmocka_unit_test(requests_as_kueue_counts_them),
        cmocka_unit_test(node_selection_and_tolerations),
        cmocka_unit_test(name_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
