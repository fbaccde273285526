/*
 * The checks a connected submit makes of its JobSet, without a server: how Kueue would count a
 * pod's requests against a ClusterQueue, the Jobs the JobSet controller makes of a JobSet that
 * is not a Pathways one, and which flag set a field the API server rejected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "submit/submit_checks.h"

#include <stdlib.h>
#include <string.h>

static json_t *parse(const char *text)
{
    json_error_t error;
    json_t *v = json_loads(text, 0, &error);
    if (!v)
        fail_msg("bad test JSON at %d:%d (%s)", error.line, error.column, error.text);
    return v;
}

/* A JobSet of two replicated jobs, no coordinator and no DNS hostnames: "main" (2 Jobs of 1 pod,
 * a container asking for 2 cpu, a sidecar for 1 and an init container for 8) and "aux" (1 Job,
 * grouped). */
static json_t *plain_jobset(void)
{
    return parse(
        "{\"metadata\": {\"name\": \"js\"}, \"spec\": {\"replicatedJobs\": ["
        "{\"name\": \"main\", \"replicas\": 2, \"template\": {\"spec\": {\"parallelism\": 1,"
        " \"template\": {\"spec\": {"
        "  \"initContainers\": [{\"name\": \"side\", \"restartPolicy\": \"Always\","
        "    \"resources\": {\"limits\": {\"cpu\": \"1\"}}},"
        "   {\"name\": \"init\", \"resources\": {\"requests\": {\"cpu\": \"8\"}}}],"
        "  \"containers\": [{\"name\": \"c\", \"resources\": {\"requests\": {\"cpu\": \"2\"},"
        "    \"limits\": {\"cpu\": \"4\"}}}]}}}}},"
        "{\"name\": \"aux\", \"groupName\": \"extra\", \"template\": {\"spec\": {"
        " \"template\": {\"spec\": {\"containers\": [{\"name\": \"c\"}]}}}}}]}}");
}

static const char *label(const json_t *object, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(object, "metadata"), "labels"), key));
}

static void child_jobs_of_a_plain_jobset(void **state)
{
    (void)state;
    json_t *jobset = plain_jobset();
    json_t *jobs = submit_child_jobs(jobset, "team");
    assert_int_equal(json_array_size(jobs), 2);
    const json_t *main_job = json_array_get(jobs, 0), *aux = json_array_get(jobs, 1);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(main_job, "metadata"), "name")),
        "js-main-0");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(aux, "metadata"), "namespace")), "team");
    assert_null(label(main_job, "jobset.sigs.k8s.io/coordinator"));
    assert_string_equal(label(main_job, "jobset.sigs.k8s.io/global-replicas"), "3");
    assert_string_equal(label(main_job, "jobset.sigs.k8s.io/group-name"), "default");
    assert_string_equal(label(main_job, "jobset.sigs.k8s.io/group-replicas"), "2");
    assert_string_equal(label(aux, "jobset.sigs.k8s.io/job-global-index"), "2");
    assert_string_equal(label(aux, "jobset.sigs.k8s.io/group-name"), "extra");
    assert_string_equal(label(aux, "jobset.sigs.k8s.io/group-replicas"), "1");
    assert_string_equal(label(aux, "jobset.sigs.k8s.io/job-group-index"), "0");
    const json_t *pod = json_object_get(json_object_get(main_job, "spec"), "template");
    assert_null(json_object_get(json_object_get(pod, "spec"), "subdomain"));
    assert_string_equal(label(pod, "jobset.sigs.k8s.io/replicatedjob-name"), "main");
    json_decref(jobs);
    json_decref(jobset);
}

/* Facts of a ClusterQueue "cq" with one flavor "f" (no node labels) covering cpu with `quota`. */
static void queue_facts(cluster_facts *f, const char *quota)
{
    memset(f, 0, sizeof(*f));
    snprintf(f->cluster_queue, sizeof(f->cluster_queue), "cq");
    char *cq = NULL;
    if (asprintf(&cq,
                 "{\"metadata\": {\"name\": \"cq\"}, \"spec\": {\"resourceGroups\": ["
                 "{\"coveredResources\": [\"cpu\"], \"flavors\": [{\"name\": \"f\", "
                 "\"resources\": [{\"name\": \"cpu\", \"nominalQuota\": \"%s\"}]}]}]}}",
                 quota) < 0)
        fail_msg("out of memory");
    f->cluster_queue_object = parse(cq);
    free(cq);
    f->flavors = parse("[{\"metadata\": {\"name\": \"f\"}, \"spec\": {}}]");
}

/* A pod asks for its containers and sidecars together, or for an init container and the
 * sidecars before it, whichever is more: here 8 + 1 = 9 cpu (a request wins over a limit). */
static void pod_requests_count_as_kueue_counts_them(void **state)
{
    (void)state;
    json_t *jobset = plain_jobset();
    gc_workload w = {0};
    cluster_facts f;
    gc_error err = {0};
    queue_facts(&f, "18");
    assert_int_equal(submit_queue_fit(&f, jobset, &w, &err), 0);
    submit_cluster_facts_free(&f);
    queue_facts(&f, "17");
    assert_int_equal(submit_queue_fit(&f, jobset, &w, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message,
                        "main needs 18 cpu (2 pods x 9), and ClusterQueue cq has at most 17 in f, "
                        "so Kueue would never admit this job; raise that quota (gcluster deploy "
                        "BLUEPRINT sets it)");
    submit_cluster_facts_free(&f);
    json_decref(jobset);
}

/* Error causes name the flags that set their fields: a user variable by where it was given,
 * gcluster's own fields by nothing; volumes and mounts by --mount only when it was given. */
static void rejected_fields_name_their_flags(void **state)
{
    (void)state;
    json_t *job = parse("{\"spec\": {\"template\": {\"spec\": {"
                        "\"initContainers\": [{\"name\": \"side\", \"env\": [{\"name\": \"A\"}]}],"
                        "\"containers\": [{\"name\": \"c\", \"env\": [{\"name\": \"JAX\"}, "
                        "{\"name\": \"TEAM\"}]}]}}}}");
    gc_env_var env[] = {{.name = "TEAM", .source = "--env-file team.env:3"},
                        {.name = "A", .source = "--env"}};
    gc_mount mount = {.kind = GC_MOUNT_HOST_PATH, .source = "/data", .target = "/data"};
    gc_workload w = {.env = env, .env_count = 2, .mounts = &mount, .mount_count = 1};
    const struct {
        const char *message;
        const char *flags;
    } cases[] = {
        {"Job.batch \"x\" is invalid: spec.template.spec.containers[0].env[1].name: Invalid "
         "value",
         "--env-file team.env:3"},
        {"spec.template.spec.initContainers[0].env[0].name: Invalid value", "--env"},
        {"spec.template.spec.containers[0].env[0].name: Invalid value", ""},
        {"[spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [42,7]: must be "
         "ordered, spec.template.spec.volumes[1].hostPath.path: Invalid value]",
         "--restart-on-exit-codes, --mount"},
        {"spec.template.spec.containers[0].volumeMounts[1].name: Not found, "
         "spec.template.spec.volumes[1].hostPath.path: Invalid value",
         "--mount"},
        {"spec.template.spec.hostNetwork: Invalid value", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gc_buf out;
        gc_buf_init(&out);
        submit_rejected_flags(cases[i].message, job, &w, &out);
        assert_string_equal(out.len ? out.data : "", cases[i].flags);
        gc_buf_free(&out);
    }
    /* Without --mount a volume or mount the server refuses came from an overlay: no flag. */
    w.mount_count = 0;
    gc_buf out;
    gc_buf_init(&out);
    submit_rejected_flags("spec.template.spec.containers[0].volumeMounts[1].subPath: Invalid value",
                          job, &w, &out);
    assert_int_equal(out.len, 0);
    gc_buf_free(&out);
    json_decref(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(child_jobs_of_a_plain_jobset),
        cmocka_unit_test(pod_requests_count_as_kueue_counts_them),
        cmocka_unit_test(rejected_fields_name_their_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
