/*
 * A JobSet-less job's Indexed Job read as the JobSet it stands for (gc_job_indexed_view): only
 * a Job labelled with its own workload and not made by a JobSet is one; its state follows the
 * Job's conditions and ready pods as a JobSet's would; its pods are main-job's, slice 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/buf.h"
#include "gcluster/job.h"

#include <stdlib.h>
#include <string.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fail_msg("%s", e.text);
    return v;
}

static json_t *job(const char *status)
{
    char *text = gc_xasprintf(
        "{\"apiVersion\": \"batch/v1\", \"kind\": \"Job\", \"metadata\": {\"name\": \"fb\","
        " \"uid\": \"u1\", \"labels\": {\"gcluster.google.com/workload\": \"fb\","
        " \"kueue.x-k8s.io/queue-name\": \"q\"}}, \"spec\": {\"parallelism\": 4,"
        " \"completions\": 4, \"backoffLimit\": 3, \"suspend\": %s}, \"status\": %s}",
        strstr(status, "SUSPENDED") ? "true" : "false",
        strstr(status, "SUSPENDED") ? "{}" : status);
    json_t *j = parse(text);
    free(text);
    return j;
}

static gc_job_status status_of(const json_t *view)
{
    gc_job_facts f;
    gc_job_facts_from_jobset(view, &f);
    gc_job_facts_add_ready_jobs(&f, view);
    gc_job_status st;
    gc_job_status_derive(&f, &st);
    return st;
}

static void only_a_jobset_less_jobs_job_has_a_view(void **state)
{
    (void)state;
    json_t *mine = job("{}");
    json_t *view = gc_job_indexed_view(mine);
    assert_non_null(view);
    assert_true(gc_job_is_indexed(view));
    assert_ptr_equal(gc_job_indexed_source(view), mine);
    assert_non_null(gc_job_replicated_job(view, GC_MAIN_JOB));
    assert_int_equal(gc_job_max_restarts(view), 3);
    json_decref(view);

    static const char *const others[] = {
        /* a JobSet's child Job: the JobSet's label */
        "{\"metadata\": {\"name\": \"fb\", \"labels\": {\"gcluster.google.com/workload\": \"fb\","
        " \"jobset.sigs.k8s.io/jobset-name\": \"fb\"}}}",
        /* owned by a JobSet */
        "{\"metadata\": {\"name\": \"fb\", \"labels\": {\"gcluster.google.com/workload\": \"fb\"},"
        " \"ownerReferences\": [{\"kind\": \"JobSet\", \"name\": \"fb\"}]}}",
        /* another workload's Job, and a Job of nobody's */
        "{\"metadata\": {\"name\": \"fb\", \"labels\": {\"gcluster.google.com/workload\": \"x\"}}}",
        "{\"metadata\": {\"name\": \"fb\"}}",
        /* a Shared Pathways Service client's proxy Job: followed as the service's client */
        "{\"metadata\": {\"name\": \"fb\", \"labels\": {\"gcluster.google.com/workload\": \"fb\","
        " \"gcluster.google.com/sps-service\": \"svc\"}}}",
    };
    for (size_t i = 0; i < sizeof(others) / sizeof(*others); i++) {
        json_t *j = parse(others[i]);
        assert_null(gc_job_indexed_view(j));
        json_decref(j);
    }
    json_t *plain = parse("{\"metadata\": {\"name\": \"js\"}}");
    assert_false(gc_job_is_indexed(plain));
    assert_null(gc_job_indexed_source(plain));
    json_decref(plain);
    json_decref(mine);
}

static void its_state_follows_the_job(void **state)
{
    (void)state;
    static const struct {
        const char *status;
        gc_job_phase phase;
        const char *text;
    } cases[] = {
        {"SUSPENDED", GC_JOB_QUEUED, "Queued"},
        {"{\"active\": 4}", GC_JOB_ADMITTED, "Admitted"},
        {"{\"active\": 4, \"ready\": 3}", GC_JOB_RUNNING, "Running 3/4"},
        {"{\"active\": 4, \"ready\": 4}", GC_JOB_RUNNING, "Running 4/4"},
        {"{\"succeeded\": 4, \"conditions\": [{\"type\": \"Complete\", \"status\": \"True\","
         " \"lastTransitionTime\": \"2026-01-02T04:00:00Z\"}]}",
         GC_JOB_SUCCEEDED, "Succeeded"},
        {"{\"failed\": 4, \"conditions\": [{\"type\": \"Failed\", \"status\": \"True\","
         " \"reason\": \"BackoffLimitExceeded\", \"message\": \"Job has reached the specified "
         "backoff limit\"}]}",
         GC_JOB_FAILED, "Failed"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        json_t *j = job(cases[i].status);
        json_t *view = gc_job_indexed_view(j);
        gc_job_status st = status_of(view);
        if (st.phase != cases[i].phase || strcmp(st.text, cases[i].text) != 0)
            fail_msg("%s: %s, want %s", cases[i].status, st.text, cases[i].text);
        json_decref(view);
        json_decref(j);
    }
    json_t *j = job("{\"failed\": 2, \"conditions\": [{\"type\": \"Failed\", \"status\": \"True\","
                    " \"reason\": \"BackoffLimitExceeded\", \"message\": \"limit\"}]}");
    json_t *view = gc_job_indexed_view(j);
    gc_job_status st = status_of(view);
    assert_string_equal(st.detail, "BackoffLimitExceeded: limit");
    assert_int_equal(gc_job_restarts(view), 2);
    json_decref(view);
    json_decref(j);
}

static void its_pods_are_main_jobs_slice_0(void **state)
{
    (void)state;
    json_t *mine = parse("{\"metadata\": {\"labels\": {\"batch.kubernetes.io/job-name\": \"fb\","
                         " \"gcluster.google.com/workload\": \"fb\","
                         " \"batch.kubernetes.io/job-completion-index\": \"2\"}}}");
    assert_string_equal(gc_job_pod_role(mine), GC_MAIN_JOB);
    assert_int_equal(gc_job_pod_slice(mine), 0);
    json_t *jobsets = parse("{\"metadata\": {\"labels\": {\"batch.kubernetes.io/job-name\": "
                            "\"js-worker-1\", \"gcluster.google.com/workload\": \"js\","
                            " \"jobset.sigs.k8s.io/jobset-name\": \"js\","
                            " \"jobset.sigs.k8s.io/replicatedjob-name\": \"worker\","
                            " \"jobset.sigs.k8s.io/job-index\": \"1\"}}}");
    assert_string_equal(gc_job_pod_role(jobsets), "worker");
    assert_int_equal(gc_job_pod_slice(jobsets), 1);
    json_t *other = parse("{\"metadata\": {\"labels\": {\"app\": \"x\"}}}");
    assert_null(gc_job_pod_role(other));
    assert_int_equal(gc_job_pod_slice(other), -1);
    json_decref(mine);
    json_decref(jobsets);
    json_decref(other);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(only_a_jobset_less_jobs_job_has_a_view),
        cmocka_unit_test(its_state_follows_the_job),
        cmocka_unit_test(its_pods_are_main_jobs_slice_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
