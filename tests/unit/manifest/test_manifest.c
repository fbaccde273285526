/*
 * The Pathways and ordinary JobSets, checked field by field on the parsed YAML output
 * (so the emitter is part of every check), plus the round-trip property: any --command
 * comes back byte for byte.
 */
#include "gcluster/emit.h"
#include "gcluster/job.h"
#include "gcluster/submit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static gc_submit_request pathways_request(void)
{
    gc_submit_request r;
    gc_submit_request_defaults(&r);
    r.name = "pw-demo";
    r.compute_type = "v6e-16";
    r.num_slices = 2;
    r.pathways = true;
    r.pathways_gcs_location = "gs://bucket/prefix";
    r.command = "python train.py";
    r.image = "us-docker.pkg.dev/p/r/jax:1";
    return r;
}

/* Builds, emits and parses back the JobSet for `r`. */
static json_t *render(const gc_submit_request *r)
{
    gc_submit_plan plan;
    gc_error err = {0};
    if (gc_submit_prepare(r, &plan, &err) != 0)
        fail_msg("prepare failed: %s", err.message);
    gc_buf yaml;
    gc_buf_init(&yaml);
    assert_int_equal(gc_submit_render_offline(&plan, &yaml, &err), 0);
    gc_submit_plan_free(&plan);
    gc_yaml_doc doc;
    if (gc_yaml_load(yaml.data, yaml.len, "manifest", &doc, &err) != 0)
        fail_msg("not YAML: %s\n%s", err.message, yaml.data);
    json_t *root = json_incref(gc_yaml_root(&doc));
    gc_yaml_doc_free(&doc);
    gc_buf_free(&yaml);
    return root;
}

/* Follows a path like "spec.replicatedJobs[0].template.spec" through objects and arrays. */
static json_t *at(json_t *root, const char *path)
{
    json_t *node = root;
    char key[128];
    const char *p = path;
    while (node && *p) {
        size_t n = strcspn(p, ".[");
        snprintf(key, sizeof(key), "%.*s", (int)n, p);
        if (n)
            node = json_object_get(node, key);
        p += n;
        if (*p == '[') {
            node = json_array_get(node, strtoul(p + 1, NULL, 10));
            p = strchr(p, ']') + 1;
        }
        if (*p == '.')
            p++;
    }
    return node;
}

static const char *str_at(json_t *root, const char *path)
{
    const char *s = json_string_value(at(root, path));
    if (!s)
        fail_msg("no string at %s", path);
    return s;
}

static json_t *named(json_t *array, const char *name)
{
    size_t i;
    json_t *item;
    json_array_foreach(array, i, item)
    {
        if (!strcmp(json_string_value(json_object_get(item, "name")), name))
            return item;
    }
    fail_msg("no item named %s", name);
    return NULL;
}

static bool array_has_string(json_t *array, const char *s)
{
    size_t i;
    json_t *item;
    json_array_foreach(array, i, item)
    {
        if (json_string_value(item) && !strcmp(json_string_value(item), s))
            return true;
    }
    return false;
}

static const char *env_field_path(json_t *container, const char *name)
{
    return json_string_value(json_object_get(
        json_object_get(
            json_object_get(named(json_object_get(container, "env"), name), "valueFrom"),
            "fieldRef"),
        "fieldPath"));
}

static void jobset_level_fields(void **state)
{
    (void)state;
    gc_submit_request r = pathways_request();
    json_t *js = render(&r);
    assert_string_equal(str_at(js, "apiVersion"), "jobset.x-k8s.io/v1alpha2");
    json_t *labels = at(js, "metadata.labels");
    assert_string_equal(json_string_value(json_object_get(labels, "kueue.x-k8s.io/queue-name")),
                        "user-queue");
    assert_string_equal(json_string_value(json_object_get(labels, "gcluster.google.com/workload")),
                        "pw-demo");
    json_t *annotations = at(js, "metadata.annotations");
    assert_string_equal(
        json_string_value(json_object_get(annotations, "gcluster.google.com/compute-type")),
        "v6e-16");
    assert_string_equal(
        json_string_value(json_object_get(annotations, "gcluster.google.com/num-slices")), "2");
    assert_int_equal(json_integer_value(at(js, "spec.ttlSecondsAfterFinished")), 3600);
    assert_true(json_is_true(at(js, "spec.network.enableDNSHostnames")));
    assert_true(json_is_true(at(js, "spec.network.publishNotReadyAddresses")));
    assert_string_equal(str_at(js, "spec.coordinator.replicatedJob"), "pathways-head");
    assert_string_equal(str_at(js, "spec.startupPolicy.startupPolicyOrder"), "InOrder");
    assert_string_equal(str_at(js, "spec.successPolicy.operator"), "All");
    assert_string_equal(str_at(js, "spec.successPolicy.targetReplicatedJobs[0]"), "pathways-head");
    assert_int_equal(json_integer_value(at(js, "spec.failurePolicy.maxRestarts")), 1);
    assert_string_equal(str_at(js, "spec.failurePolicy.restartStrategy"), "Recreate");
    assert_string_equal(str_at(js, "spec.failurePolicy.rules[0].action"), "FailJobSet");
    assert_string_equal(str_at(js, "spec.failurePolicy.rules[0].onJobFailureReasons[0]"),
                        "PodFailurePolicy");
    json_decref(js);
}

static void head_pod_runs_proxy_and_rm_as_native_sidecars(void **state)
{
    (void)state;
    gc_submit_request r = pathways_request();
    json_t *js = render(&r);
    json_t *head = at(js, "spec.replicatedJobs[0]");
    assert_string_equal(str_at(head, "name"), "pathways-head");
    assert_string_equal(
        json_string_value(json_object_get(at(head, "template.metadata.annotations"),
                                          "alpha.jobset.sigs.k8s.io/exclusive-topology")),
        "kubernetes.io/hostname");
    assert_int_equal(json_integer_value(at(head, "template.spec.backoffLimit")), 0);
    assert_string_equal(str_at(head, "template.spec.completionMode"), "Indexed");
    json_t *pod = at(head, "template.spec.template.spec");
    assert_string_equal(json_string_value(json_object_get(json_object_get(pod, "nodeSelector"),
                                                          "cloud.google.com/gke-nodepool")),
                        "cpu-np");
    assert_true(json_is_true(json_object_get(pod, "hostNetwork")));
    assert_string_equal(str_at(pod, "dnsPolicy"), "ClusterFirstWithHostNet");
    assert_string_equal(str_at(pod, "restartPolicy"), "Never");

    json_t *proxy = named(json_object_get(pod, "initContainers"), "pathways-proxy");
    json_t *rm = named(json_object_get(pod, "initContainers"), "pathways-rm");
    assert_string_equal(str_at(proxy, "restartPolicy"), "Always");
    assert_string_equal(str_at(rm, "restartPolicy"), "Always");
    /* Google's template forgets this: without it $(PATHWAYS_HEAD) is never expanded. */
    assert_string_equal(env_field_path(proxy, "PATHWAYS_HEAD"),
                        "metadata.labels['jobset.sigs.k8s.io/coordinator']");
    assert_true(array_has_string(json_object_get(proxy, "args"),
                                 "--resource_manager_address=$(PATHWAYS_HEAD):29001"));
    assert_true(array_has_string(json_object_get(proxy, "args"),
                                 "--gcs_scratch_location=gs://bucket/prefix"));
    assert_int_equal(json_integer_value(at(proxy, "ports[0].containerPort")), 29000);
    assert_string_equal(str_at(proxy, "resources.limits.cpu"), "16");
    assert_string_equal(str_at(proxy, "resources.limits.memory"), "100Gi");

    assert_true(array_has_string(json_object_get(rm, "args"), "--instance_type=tpuv6e:4x4"));
    assert_true(array_has_string(json_object_get(rm, "args"), "--instance_count=2"));
    assert_true(array_has_string(json_object_get(rm, "args"), "--node_type=resource_manager"));
    assert_string_equal(str_at(named(json_object_get(rm, "env"), "TPU_SKIP_MDS_QUERY"), "value"),
                        "true");
    assert_string_equal(env_field_path(rm, "HOST_ADDRESS"),
                        "metadata.labels['jobset.sigs.k8s.io/coordinator']");
    assert_string_equal(str_at(rm, "resources.limits.memory"), "32Gi");

    json_t *user = named(json_object_get(pod, "containers"), "workload-container");
    assert_int_equal(json_array_size(json_object_get(pod, "containers")), 1);
    assert_string_equal(str_at(user, "command[0]"), "/bin/bash");
    assert_string_equal(str_at(user, "command[2]"), "python train.py");
    assert_string_equal(str_at(named(json_object_get(user, "env"), "JAX_PLATFORMS"), "value"),
                        "proxy");
    assert_string_equal(str_at(named(json_object_get(user, "env"), "JAX_BACKEND_TARGET"), "value"),
                        "grpc://$(PATHWAYS_HEAD):29000");
    assert_null(json_object_get(user, "restartPolicy"));
    json_decref(js);
}

static void workers_request_tpu_cpu_and_memory_per_slice(void **state)
{
    (void)state;
    gc_submit_request r = pathways_request();
    json_t *js = render(&r);
    json_t *worker = at(js, "spec.replicatedJobs[1]");
    assert_string_equal(str_at(worker, "name"), "worker");
    assert_int_equal(json_integer_value(json_object_get(worker, "replicas")), 2);
    assert_string_equal(
        json_string_value(json_object_get(at(worker, "template.metadata.annotations"),
                                          "alpha.jobset.sigs.k8s.io/exclusive-topology")),
        "cloud.google.com/gke-nodepool");
    assert_int_equal(json_integer_value(at(worker, "template.spec.parallelism")), 4);
    assert_int_equal(json_integer_value(at(worker, "template.spec.completions")), 4);
    assert_int_equal(json_integer_value(at(worker, "template.spec.backoffLimit")), 16);
    json_t *pod = at(worker, "template.spec.template.spec");
    json_t *selector = json_object_get(pod, "nodeSelector");
    assert_string_equal(
        json_string_value(json_object_get(selector, "cloud.google.com/gke-tpu-accelerator")),
        "tpu-v6e-slice");
    assert_string_equal(
        json_string_value(json_object_get(selector, "cloud.google.com/gke-tpu-topology")), "4x4");
    assert_string_equal(str_at(pod, "tolerations[0].key"), "google.com/tpu");
    assert_string_equal(str_at(pod, "tolerations[0].operator"), "Exists");
    assert_string_equal(str_at(pod, "restartPolicy"), "OnFailure");
    assert_int_equal(json_integer_value(json_object_get(pod, "terminationGracePeriodSeconds")), 30);
    json_t *c = named(json_object_get(pod, "containers"), "pathways-worker");
    json_t *requests = at(c, "resources.requests");
    assert_int_equal(json_integer_value(json_object_get(requests, "google.com/tpu")), 4);
    assert_non_null(json_object_get(requests, "cpu"));
    assert_non_null(json_object_get(requests, "memory"));
    assert_int_equal(
        json_integer_value(json_object_get(at(c, "resources.limits"), "google.com/tpu")), 4);
    assert_string_equal(env_field_path(c, "MEGASCALE_SLICE_ID"),
                        "metadata.labels['jobset.sigs.k8s.io/job-index']");
    assert_string_equal(env_field_path(c, "MEGASCALE_NUM_SLICES"),
                        "metadata.labels['jobset.sigs.k8s.io/replicatedjob-replicas']");
    assert_string_equal(env_field_path(c, "MEGASCALE_COORDINATOR_ADDRESS"),
                        "metadata.labels['jobset.sigs.k8s.io/coordinator']");
    json_decref(js);
}

static void headless_has_no_user_container_and_no_sidecar_restart_policy(void **state)
{
    (void)state;
    gc_submit_request r = pathways_request();
    r.command = NULL;
    r.image = NULL;
    r.pathways_headless = true;
    json_t *js = render(&r);
    assert_null(at(js, "spec.successPolicy"));
    json_t *pod = at(js, "spec.replicatedJobs[0].template.spec.template.spec");
    assert_null(json_object_get(pod, "initContainers"));
    json_t *containers = json_object_get(pod, "containers");
    assert_int_equal(json_array_size(containers), 2);
    assert_null(json_object_get(named(containers, "pathways-proxy"), "restartPolicy"));
    assert_null(json_object_get(named(containers, "pathways-rm"), "restartPolicy"));
    assert_string_equal(json_string_value(json_object_get(at(js, "metadata.annotations"),
                                                          "gcluster.google.com/pathways")),
                        "headless");
    json_decref(js);
}

static void colocated_python_runs_beside_each_worker(void **state)
{
    (void)state;
    gc_submit_request r = pathways_request();
    r.pathways_sidecar_image = "us-docker.pkg.dev/p/r/sidecar:1";
    json_t *js = render(&r);
    json_t *head = at(js, "spec.replicatedJobs[0].template.spec.template.spec");
    assert_int_equal(json_array_size(json_object_get(head, "containers")), 1);
    assert_int_equal(json_array_size(json_object_get(head, "initContainers")), 2);
    json_t *worker = at(js, "spec.replicatedJobs[1].template.spec.template.spec");
    json_t *sidecar = named(json_object_get(worker, "initContainers"), "colocated-python-sidecar");
    assert_string_equal(str_at(sidecar, "restartPolicy"), "Always");
    assert_int_equal(json_integer_value(at(sidecar, "ports[0].containerPort")), 50051);
    assert_string_equal(
        str_at(named(json_object_get(sidecar, "env"), "GRPC_SERVER_ADDRESS"), "value"),
        "0.0.0.0:50051");
    assert_string_equal(str_at(sidecar, "volumeMounts[0].mountPath"), "/tmp");
    json_decref(js);
}

static void elastic_slices_change_proxy_args_and_backoff(void **state)
{
    (void)state;
    gc_submit_request r = pathways_request();
    r.num_slices = 4;
    r.pathways_elastic_slices = 1;
    r.pathways_elastic_slices_set = true;
    r.pathways_max_slice_restarts = 3;
    r.pathways_max_slice_restarts_set = true;
    json_t *js = render(&r);
    json_t *proxy =
        named(at(js, "spec.replicatedJobs[0].template.spec.template.spec.initContainers"),
              "pathways-proxy");
    assert_true(array_has_string(json_object_get(proxy, "args"), "--num_elastic_slices=1"));
    assert_int_equal(
        json_integer_value(at(js, "spec.replicatedJobs[1].template.spec.backoffLimit")), 12);
    json_decref(js);
}

static void extra_args_never_produce_empty_tokens(void **state)
{
    (void)state;
    gc_submit_request r = pathways_request();
    r.pathways_worker_args = "  --a=1   \t --b=2\n";
    json_t *js = render(&r);
    json_t *args = at(js, "spec.replicatedJobs[1].template.spec.template.spec.containers[0].args");
    size_t n = json_array_size(args);
    assert_string_equal(json_string_value(json_array_get(args, n - 2)), "--a=1");
    assert_string_equal(json_string_value(json_array_get(args, n - 1)), "--b=2");
    for (size_t i = 0; i < n; i++)
        assert_true(strlen(json_string_value(json_array_get(args, i))) > 0);
    json_decref(js);
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The property: whatever bytes --command holds, the manifest carries them unchanged. */
static void any_command_survives_the_round_trip(void **state)
{
    (void)state;
    static const char *const pieces[] = {
        "\n",
        "\n\n",
        " ",
        "\t",
        "\r\n",
        ": ",
        "#",
        " # x",
        "---",
        "...",
        "- ",
        "env:",
        "'",
        "\"",
        "\\",
        "{",
        "}",
        "[",
        "]",
        "&a",
        "*a",
        "!!str",
        "%",
        "|",
        ">",
        "true",
        "0x1F",
        "~",
        "null",
        "é",
        "✓",
        "🚀",
        "日本",
        "echo $HOME",
        "python train.py",
        "$(PATHWAYS_HEAD)",
        "${VAR:-x}",
        "`date`",
        "&&",
        "||",
    };
    const size_t npieces = sizeof(pieces) / sizeof(*pieces);
    uint64_t seed = 0xdeadbeefcafef00dull;
    for (int round = 0; round < 500; round++) {
        gc_buf command;
        gc_buf_init(&command);
        gc_buf_puts(&command, "x");
        int n = 1 + (int)(next_random(&seed) % 20);
        for (int k = 0; k < n; k++)
            gc_buf_puts(&command, pieces[next_random(&seed) % npieces]);
        gc_submit_request r = pathways_request();
        r.command = command.data;
        json_t *js = render(&r);
        const char *got = str_at(
            js, "spec.replicatedJobs[0].template.spec.template.spec.containers[0].command[2]");
        if (strcmp(got, command.data) != 0)
            fail_msg("command changed in round %d", round);
        json_decref(js);
        gc_buf_free(&command);
    }
}

static void a_100_kib_command_survives(void **state)
{
    (void)state;
    gc_buf command;
    gc_buf_init(&command);
    while (command.len < 100 * 1024)
        gc_buf_puts(&command, "echo 'line: 1' # env: x\n\tpython -c \"print('---')\"  \n");
    gc_submit_request r = pathways_request();
    r.command = command.data;
    json_t *js = render(&r);
    assert_string_equal(
        str_at(js, "spec.replicatedJobs[0].template.spec.template.spec.containers[0].command[2]"),
        command.data);
    json_decref(js);
    gc_buf_free(&command);
}

static void pathways_name_limit_is_22(void **state)
{
    (void)state;
    gc_submit_request r = pathways_request();
    r.name = "abcdefghijklmnopqrstuv"; /* 22: 2 x 22 + 19 = 63 */
    gc_submit_plan plan;
    gc_error err = {0};
    assert_int_equal(gc_submit_prepare(&r, &plan, &err), 0);
    assert_int_equal(gc_pathways_coordinator_length(strlen(r.name)), 63);
    gc_submit_plan_free(&plan);
    r.name = "abcdefghijklmnopqrstuvw";
    assert_int_equal(gc_submit_prepare(&r, &plan, &err), GC_EXIT_USAGE);
    gc_submit_plan_free(&plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jobset_level_fields),
        cmocka_unit_test(head_pod_runs_proxy_and_rm_as_native_sidecars),
        cmocka_unit_test(workers_request_tpu_cpu_and_memory_per_slice),
        cmocka_unit_test(headless_has_no_user_container_and_no_sidecar_restart_policy),
        cmocka_unit_test(colocated_python_runs_beside_each_worker),
        cmocka_unit_test(elastic_slices_change_proxy_args_and_backoff),
        cmocka_unit_test(extra_args_never_produce_empty_tokens),
        cmocka_unit_test(any_command_survives_the_round_trip),
        cmocka_unit_test(a_100_kib_command_survives),
        cmocka_unit_test(pathways_name_limit_is_22),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
