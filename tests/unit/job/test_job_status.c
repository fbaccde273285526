/*
 * One status per job from the JobSet, its Kueue Workload and its pods, including the
 * moment after Kueue resumes a job when JobSet's Suspended condition still trails spec.suspend.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/job.h"

#include <string.h>

/* A two-slice Pathways JobSet: 1 head pod and 2 x 4 workers. */
static json_t *jobset(bool suspend, const char *condition_type, const char *condition_status)
{
    json_t *js = json_pack(
        "{s:{s:s, s:{s:s}}, s:{s:b, s:[{s:s, s:i, s:{s:{s:i}}}, {s:s, s:i, s:{s:{s:i}}}]}, s:{}}",
        "metadata", "name", "pw", "labels", "kueue.x-k8s.io/queue-name", "user-queue", "spec",
        "suspend", suspend, "replicatedJobs", "name", "pathways-head", "replicas", 1, "template",
        "spec", "parallelism", 1, "name", "worker", "replicas", 2, "template", "spec",
        "parallelism", 4, "status");
    if (condition_type)
        json_object_set_new(
            json_object_get(js, "status"), "conditions",
            json_pack("[{s:s, s:s}]", "type", condition_type, "status", condition_status));
    return js;
}

static json_t *workload(const char *quota_reserved, const char *admitted, const char *message)
{
    return json_pack("{s:{s:[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}]}}", "status", "conditions",
                     "type", "QuotaReserved", "status", quota_reserved, "reason", "Pending",
                     "message", message, "type", "Admitted", "status", admitted, "reason",
                     "Pending", "message", message);
}

static json_t *pod(const char *name, const char *phase, int exit_code)
{
    json_t *p = json_pack("{s:{s:s}, s:{s:s}}", "metadata", "name", name, "status", "phase", phase);
    if (exit_code >= 0)
        json_object_set_new(json_object_get(p, "status"), "containerStatuses",
                            json_pack("[{s:s, s:{s:{s:i}}}]", "name", "jax", "state", "terminated",
                                      "exitCode", exit_code));
    return p;
}

static void derive(json_t *js, json_t *wl, json_t **pods, size_t pod_count, gc_job_status *s)
{
    gc_job_facts f;
    gc_job_facts_from_jobset(js, &f);
    if (wl)
        gc_job_facts_add_workload(&f, wl);
    for (size_t i = 0; i < pod_count; i++)
        gc_job_facts_add_pod(&f, pods[i]);
    gc_job_status_derive(&f, s);
    json_decref(js);
    json_decref(wl);
    for (size_t i = 0; i < pod_count; i++)
        json_decref(pods[i]);
}

static void queued_shows_kueues_reason(void **state)
{
    (void)state;
    gc_job_status s;
    derive(jobset(true, "Suspended", "True"),
           workload("False", "False", "insufficient quota for google.com/tpu"), NULL, 0, &s);
    assert_int_equal(s.phase, GC_JOB_QUEUED);
    assert_string_equal(s.text, "Queued");
    assert_string_equal(s.detail, "Pending: insufficient quota for google.com/tpu");
}

static void resumed_job_is_running_while_the_condition_trails(void **state)
{
    (void)state;
    json_t *pods[] = {pod("head", "Running", -1), pod("w0", "Running", -1),
                      pod("w1", "Pending", -1)};
    gc_job_status s;
    derive(jobset(false, "Suspended", "True"), workload("True", "True", "admitted"), pods, 3, &s);
    assert_int_equal(s.phase, GC_JOB_RUNNING);
    assert_string_equal(s.text, "Running 2/9");
}

static void admitted_before_pods_run(void **state)
{
    (void)state;
    gc_job_status s;
    derive(jobset(false, NULL, NULL), workload("True", "True", "admitted"), NULL, 0, &s);
    assert_int_equal(s.phase, GC_JOB_ADMITTED);
    assert_string_equal(s.detail, "0 of 9 pods created, none running yet");
}

static void failed_names_the_pod_and_exit_code(void **state)
{
    (void)state;
    json_t *pods[] = {pod("pw-head-0", "Failed", 3)};
    gc_job_status s;
    derive(jobset(false, "Failed", "True"), workload("True", "True", "admitted"), pods, 1, &s);
    assert_int_equal(s.phase, GC_JOB_FAILED);
    assert_string_equal(s.detail, "pod pw-head-0: container jax exited with code 3");
}

static void succeeded(void **state)
{
    (void)state;
    gc_job_status s;
    derive(jobset(false, "Completed", "True"), NULL, NULL, 0, &s);
    assert_int_equal(s.phase, GC_JOB_SUCCEEDED);
}

static void suspended_without_kueue(void **state)
{
    (void)state;
    json_t *js = jobset(true, NULL, NULL);
    json_object_del(json_object_get(json_object_get(js, "metadata"), "labels"),
                    "kueue.x-k8s.io/queue-name");
    gc_job_status s;
    derive(js, NULL, NULL, 0, &s);
    assert_int_equal(s.phase, GC_JOB_SUSPENDED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(queued_shows_kueues_reason),
        cmocka_unit_test(resumed_job_is_running_while_the_condition_trails),
        cmocka_unit_test(admitted_before_pods_run),
        cmocka_unit_test(failed_names_the_pod_and_exit_code),
        cmocka_unit_test(succeeded),
        cmocka_unit_test(suspended_without_kueue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
