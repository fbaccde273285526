/*
 * gc_job_inspect against the scripted API server: the report it returns for running, queued,
 * failed, finished and terminating jobs, the requests it sends, and its errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/diagnose.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "job_test.h"

#include <string.h>

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

/* The JobSet's pods, Warning events and Workload (NULL: Kueue has none) as inspect reads them;
 * it has no child Jobs. */
static void script_job(json_t *jobset, json_t *pods, json_t *events, json_t *workload)
{
    char *path = gc_xasprintf(JT_JOBSETS "/%s", json_string_value(json_object_get(
                                                    json_object_get(jobset, "metadata"), "name")));
    jt_get(path, jobset);
    free(path);
    jt_list(JT_PODS, "PodList", pods);
    jt_list(JT_JOBS, "JobList", json_array());
    jt_list(JT_EVENTS, "EventList", events ? events : json_array());
    jt_list(JT_WORKLOADS, "WorkloadList", workload ? json_pack("[o]", workload) : json_array());
}

static void test_running_job(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 2);
    json_object_set_new(json_object_get(js, "status"), "replicatedJobsStatus",
                        jt_json("[{'name': 'pathways-head', 'ready': 1, 'active': 1},"
                                " {'name': 'worker', 'ready': 0, 'active': 2, 'failed': 1}]"));
    json_t *pods = json_pack("[o, o, o, o]", jt_pod("pw", "worker", 1, 3, "Pending", NULL),
                             jt_pod("pw", "worker", 0, 1, "Running", "tpu-a-1"),
                             jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu-np-1"),
                             jt_pod("pw", "worker", 0, 0, "Running", "tpu-a-0"));
    json_t *events = json_pack(
        "[o, o, o, o, o]",
        jt_warning("Pod", "pw-worker-1-3-x13", "FailedScheduling", "0/8 nodes are available", 3),
        jt_warning("Pod", "other-worker-0-0", "FailedScheduling", "not ours", 1),
        jt_warning("Pod", "pwx-head", "BackOff", "not ours either: pwx is another job", 1),
        jt_warning("Pod", "pw-worker-1-3-x13", "FailedScheduling", "0/9 nodes are available", 2),
        jt_warning("Workload", "jobset-pw-1a2b3", "Pending", "waiting", 1));
    script_job(js, pods, events, jt_workload("pw", true, "Admitted", "admitted"));

    gc_inspect_report r;
    gc_error err;
    assert_int_equal(gc_job_inspect(jt_kube(), "pw", false, &r, &err), 0);
    assert_int_equal(r.status.phase, GC_JOB_RUNNING);
    assert_string_equal(r.status.text, "Running 3/9");
    assert_string_equal(r.name, "pw");
    assert_string_equal(r.ns, "ns1");
    assert_string_equal(r.compute, "v6e-16 x2");
    assert_string_equal(r.topology, "4x4");
    assert_int_equal(r.pathways, GC_PATHWAYS_FULL);
    assert_string_equal(r.queue, "user-queue");
    assert_string_equal(r.created, "2026-01-02T03:04:05Z");
    assert_null(r.finished);
    assert_int_equal(r.max_restarts, 2);
    assert_null(r.manifest);

    assert_string_equal(r.kueue.workload, "jobset-pw-1a2b3");
    assert_true(r.kueue.admitted);
    assert_string_equal(r.kueue.cluster_queue, "cluster-queue");
    assert_int_equal(r.kueue.pod_set_count, 2);
    assert_string_equal(r.kueue.pod_sets[1].name, "worker");
    assert_int_equal(r.kueue.pod_sets[1].flavor_count, 1);
    assert_string_equal(r.kueue.pod_sets[1].flavors[0].resource, "google.com/tpu");
    assert_string_equal(r.kueue.pod_sets[1].flavors[0].flavor, "tpu-flavor");

    assert_int_equal(r.replicated_job_count, 2);
    assert_string_equal(r.replicated_jobs[1].name, "worker");
    assert_int_equal(r.replicated_jobs[1].replicas, 2);
    assert_int_equal(r.replicated_jobs[1].active, 2);
    assert_int_equal(r.replicated_jobs[1].failed, 1);
    assert_int_equal(r.replicated_jobs[0].ready, 1);

    /* The head first, then by slice and host. */
    assert_int_equal(r.pod_count, 4);
    assert_string_equal(r.pods[0].role, "pathways-head");
    assert_string_equal(r.pods[0].node, "cpu-np-1");
    assert_int_equal(r.pods[1].slice, 0);
    assert_int_equal(r.pods[1].host, 0);
    assert_int_equal(r.pods[2].host, 1);
    assert_int_equal(r.pods[3].slice, 1);
    assert_int_equal(r.pods[3].host, 3);
    assert_string_equal(r.pods[3].phase, "Pending");
    assert_null(r.pods[3].node);

    /* Only this job's objects (and its Workload), one group per object and reason; the
     * Workload's Pending is history now that it is admitted. */
    assert_int_equal(r.warning_count, 1);
    assert_string_equal(r.warnings[0].kind, "Pod");
    assert_string_equal(r.warnings[0].object, "pw-worker-1-3-x13");
    assert_string_equal(r.warnings[0].reason, "FailedScheduling");
    assert_int_equal(r.warnings[0].count, 5);
    assert_string_equal(r.warnings[0].message, "0/9 nodes are available");
    assert_int_equal(r.resolved_warning_count, 1);

    /* The diagnosis on top, from what was read: nothing more was asked for. */
    assert_string_equal(r.diagnosis->reason, "Starting");
    assert_string_equal(r.diagnosis->cause, "starting: 3/9 pods running (head 1/1, workers 2/8), "
                                            "4 created; no restarts so far (at most 2)");
    gc_inspect_report_free(&r);

    /* The JobSet, pods and events together, then the Workload by the JobSet's UID; a job that
     * has not failed leaves its child Jobs unread. */
    json_t *req = jt_requests();
    assert_int_equal(json_array_size(req), 4);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 2);
    const char *last = json_string_value(json_object_get(json_array_get(req, 3), "path"));
    assert_string_equal(last, JT_WORKLOADS);
    assert_string_equal(jt_param(req, 3, "labelSelector"), "kueue.x-k8s.io/job-uid=uid-pw");
    json_decref(req);
}

/* A healthy job's warnings from retries that since succeeded are counted, not listed: JobSet's
 * exclusive placement webhook denies a Job's first pod creations (FailedCreate) until the leader
 * is scheduled, and the scheduler's first tries fail (FailedScheduling). A Job still short of
 * pods, a pod still unbound, another reason and an unadmitted Workload's Pending stay. */
static void test_warnings_superseded_by_success(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 2);
    json_t *pods =
        json_pack("[o, o, o, o]", jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu-np-1"),
                  jt_pod("pw", "worker", 0, 0, "Running", "tpu-a-0"),
                  jt_pod("pw", "worker", 0, 1, "Running", "tpu-a-1"),
                  jt_pod("pw", "worker", 1, 0, "Pending", NULL));
    /* Slice 0 has 2 of its 4 hosts here: make its replicated job's parallelism 2 so the Job
     * pw-worker-0 is complete, while pw-worker-1 (1 pod) is not. */
    json_t *rjobs = json_object_get(json_object_get(js, "spec"), "replicatedJobs");
    size_t i;
    json_t *rjob;
    json_array_foreach(rjobs, i, rjob)
    {
        json_t *job_spec = json_object_get(json_object_get(rjob, "template"), "spec");
        if (!strcmp(json_string_value(json_object_get(rjob, "name")), "worker"))
            json_object_set_new(job_spec, "parallelism", json_integer(2));
    }
    const char *denied = "Error creating: admission webhook \"mpod.kb.io\" denied the request: "
                         "leader pod not yet scheduled";
    json_t *events = json_pack(
        "[o, o, o, o, o, o]", jt_warning("Job", "pw-worker-0", "FailedCreate", denied, 4),
        jt_warning("Job", "pw-worker-1", "FailedCreate", denied, 2),
        jt_warning("Pod", "pw-worker-0-1-x1", "FailedScheduling", "0/8 nodes are available", 1),
        jt_warning("Pod", "pw-worker-1-0-x10", "FailedScheduling", "0/8 nodes are available", 1),
        jt_warning("Pod", "pw-worker-0-0-x0", "BackOff", "Back-off restarting failed container", 1),
        jt_warning("Workload", "jobset-pw-1a2b3", "Pending", "waiting", 1));
    script_job(js, pods, events, jt_workload("pw", false, "Pending", "waiting"));

    gc_inspect_report r;
    gc_error err;
    assert_int_equal(gc_job_inspect(jt_kube(), "pw", false, &r, &err), 0);
    assert_int_equal(r.resolved_warning_count, 2);
    assert_int_equal(r.warning_count, 4);
    assert_string_equal(r.warnings[0].object, "pw-worker-1");
    assert_string_equal(r.warnings[0].reason, "FailedCreate");
    assert_string_equal(r.warnings[1].object, "pw-worker-1-0-x10");
    assert_string_equal(r.warnings[1].reason, "FailedScheduling");
    assert_string_equal(r.warnings[2].reason, "BackOff");
    assert_string_equal(r.warnings[3].kind, "Workload");
    gc_inspect_report_free(&r);
}

static void test_queued_job_says_why(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 2);
    json_object_set_new(json_object_get(js, "spec"), "suspend", json_true());
    script_job(js, json_array(), NULL,
               jt_workload("pw", false, "Pending",
                           "couldn't assign flavors to pod set worker: insufficient unused quota "
                           "for google.com/tpu in flavor tpu-flavor, 16 more needed"));
    gc_inspect_report r;
    gc_error err;
    assert_int_equal(gc_job_inspect(jt_kube(), "pw", false, &r, &err), 0);
    assert_int_equal(r.status.phase, GC_JOB_QUEUED);
    assert_string_equal(r.status.text, "Queued");
    assert_string_equal(r.status.detail,
                        "Pending: couldn't assign flavors to pod set worker: insufficient unused "
                        "quota for google.com/tpu in flavor tpu-flavor, 16 more needed");
    assert_false(r.kueue.admitted);
    assert_string_equal(r.kueue.reason, "Pending");
    assert_true(strstr(r.kueue.message, "16 more needed") != NULL);
    assert_null(r.kueue.cluster_queue);
    assert_int_equal(r.pod_count, 0);
    gc_inspect_report_free(&r);
}

static void test_failed_job_names_pod_container_and_exit_code(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 1);
    jt_condition(js, "Failed", "FailedJobs", "jobset failed: job pw-pathways-head-0 failed");
    json_t *head = jt_pod("pw", "pathways-head", 0, 0, "Failed", "cpu-np-1");
    jt_pod_exit(head, "workload-container", 7);
    script_job(js, json_pack("[o]", head), NULL, jt_workload("pw", true, "Admitted", "ok"));
    gc_inspect_report r;
    gc_error err;
    assert_int_equal(gc_job_inspect(jt_kube(), "pw", false, &r, &err), 0);
    assert_int_equal(r.status.phase, GC_JOB_FAILED);
    assert_string_equal(r.status.detail,
                        "pod pw-pathways-head-0-0-x0: container workload-container exited with "
                        "code 7; jobset failed: job pw-pathways-head-0 failed");
    assert_string_equal(r.finished, "2026-01-02T04:00:00Z");
    assert_int_equal(r.pods[0].restarts, 1);
    gc_inspect_report_free(&r);
    /* A failed job's child Jobs go out beside its Workload: no round trip of their own. The
     * failed container's log follows (the scripted server has none: left out, said so). */
    json_t *req = jt_requests();
    bool jobs_read = false;
    for (size_t i = 3; i < 5; i++) {
        if (strcmp(json_string_value(json_object_get(json_array_get(req, i), "path")), JT_JOBS))
            continue;
        jobs_read = true;
        assert_string_equal(jt_param(req, i, "labelSelector"), "jobset.sigs.k8s.io/jobset-name=pw");
    }
    assert_true(jobs_read);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 3);
    json_decref(req);
}

static void test_succeeded_job_with_its_manifest(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 1);
    jt_condition(js, "Completed", "AllJobsCompleted", "jobset completed successfully");
    json_object_set_new(json_object_get(js, "metadata"), "managedFields",
                        jt_json("[{'manager': 'gcluster'}]"));
    script_job(js, json_array(), NULL, NULL);
    gc_inspect_report r;
    gc_error err;
    assert_int_equal(gc_job_inspect(jt_kube(), "pw", true, &r, &err), 0);
    assert_int_equal(r.status.phase, GC_JOB_SUCCEEDED);
    assert_string_equal(r.status.text, "Succeeded");
    assert_string_equal(r.finished, "2026-01-02T04:00:00Z");
    assert_non_null(r.manifest);
    assert_string_equal(json_string_value(json_object_get(r.manifest, "kind")), "JobSet");
    assert_null(json_object_get(r.manifest, "status"));
    assert_null(json_object_get(json_object_get(r.manifest, "metadata"), "managedFields"));
    assert_non_null(json_object_get(json_object_get(r.manifest, "metadata"), "labels"));
    /* No Workload: Kueue has none to show. */
    assert_null(r.kueue.workload);
    gc_inspect_report_free(&r);
}

/* Without Kueue (the Workload API answers 404) inspect still reports the job. */
static void test_terminating_job_without_kueue(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 1);
    json_object_set_new(json_object_get(js, "metadata"), "deletionTimestamp",
                        json_string("2026-01-02T06:00:00Z"));
    jt_get(JT_JOBSETS "/pw", js);
    jt_list(JT_PODS, "PodList",
            json_pack("[o]", jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu-np-1")));
    jt_list(JT_JOBS, "JobList", json_array());
    jt_list(JT_EVENTS, "EventList", json_array());
    gc_inspect_report r;
    gc_error err;
    assert_int_equal(gc_job_inspect(jt_kube(), "pw", false, &r, &err), 0);
    assert_int_equal(r.status.phase, GC_JOB_TERMINATING);
    assert_string_equal(r.status.text, "Terminating");
    assert_null(r.kueue.workload);
    assert_string_equal(r.diagnosis->reason, "Deleting");
    gc_inspect_report_free(&r);
    /* Both Workload API versions were asked for: an older Kueue serves only v1beta1. */
    json_t *req = jt_requests();
    assert_int_equal(json_array_size(req), 5);
    assert_string_equal(json_string_value(json_object_get(json_array_get(req, 4), "path")),
                        "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns1/workloads");
    json_decref(req);
}

/* 130 slices of 16 hosts: the pods arrive in pages of 2,000, every one is in the report, and
 * the slices are summed up with the two that have problems named. */
static void test_big_job_slice_by_slice(void **state)
{
    (void)state;
    jt_script_big_job("big", 130, 16, 5, 40);
    gc_inspect_report r;
    gc_error err;
    assert_int_equal(gc_job_inspect(jt_kube(), "big", false, &r, &err), 0);
    assert_int_equal(r.pod_count, 2081);
    assert_string_equal(r.pods[0].role, "pathways-head");
    assert_int_equal(r.pods[1].slice, 0);
    assert_int_equal(r.pods[1].host, 0);
    assert_int_equal(r.pods[2080].slice, 129);
    assert_int_equal(r.pods[2080].host, 15);
    const gc_job_pod *pending = &r.pods[1 + 5 * 16 + 3], *crashing = &r.pods[1 + 40 * 16];
    assert_string_equal(pending->phase, "Pending");
    assert_string_equal(pending->reason, "Unschedulable");
    assert_null(pending->node);
    assert_string_equal(crashing->phase, "Running");
    assert_string_equal(crashing->reason, "CrashLoopBackOff");
    assert_int_equal(crashing->restarts, 5);
    assert_null(r.pods[1].reason);

    assert_int_equal(r.slice_count, 2);
    const gc_slice_counts *head = &r.slices[0], *workers = &r.slices[1];
    assert_string_equal(head->role, "pathways-head");
    assert_int_equal(head->slices, 1);
    assert_int_equal(head->running, 1);
    assert_string_equal(workers->role, "worker");
    assert_int_equal(workers->slices, 130);
    assert_int_equal(workers->hosts, 16);
    assert_int_equal(workers->running, 128);
    assert_int_equal(workers->succeeded, 0);
    assert_int_equal(workers->without_pods, 0);
    assert_int_equal(workers->problem_count, 2);
    assert_int_equal(workers->problems[0], 5);
    assert_int_equal(workers->problems[1], 40);
    gc_inspect_report_free(&r);

    /* Two pages of at most 2,000, the second asked for with the token the first gave. */
    json_t *req = jt_requests();
    size_t pages = 0;
    for (size_t i = 0; i < json_array_size(req); i++) {
        const char *path = json_string_value(json_object_get(json_array_get(req, i), "path"));
        if (strcmp(path, JT_PODS))
            continue;
        assert_string_equal(jt_param(req, i, "limit"), "2000");
        const char *token = jt_param(req, i, "continue");
        if (pages)
            assert_int_equal(token[1] - '0', (int)pages);
        else
            assert_null(token);
        pages++;
    }
    assert_int_equal(pages, 2);
    json_decref(req);
}

/* Slices without pods (queued) and finished ones are counted apart from those with problems. */
static void test_slices_waiting_and_finished(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 3);
    json_t *pods = json_pack("[o, o, o, o, o, o]", jt_pod("pw", "worker", 0, 0, "Succeeded", "a"),
                             jt_pod("pw", "worker", 0, 1, "Succeeded", "b"),
                             jt_pod("pw", "worker", 0, 2, "Succeeded", "c"),
                             jt_pod("pw", "worker", 0, 3, "Succeeded", "d"),
                             jt_pod("pw", "worker", 2, 0, "Failed", "e"),
                             jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu"));
    jt_pod_exit(json_array_get(pods, 4), "pathways-worker", 1);
    json_t *statuses =
        json_object_get(json_object_get(json_array_get(pods, 4), "status"), "containerStatuses");
    json_object_set_new(
        json_object_get(json_object_get(json_array_get(statuses, 0), "state"), "terminated"),
        "reason", json_string("Error"));
    script_job(js, pods, NULL, NULL);
    gc_inspect_report r;
    gc_error err;
    assert_int_equal(gc_job_inspect(jt_kube(), "pw", false, &r, &err), 0);
    const gc_slice_counts *workers = &r.slices[1];
    assert_int_equal(workers->slices, 3);
    assert_int_equal(workers->succeeded, 1);
    assert_int_equal(workers->without_pods, 1);
    assert_int_equal(workers->running, 0);
    assert_int_equal(workers->problem_count, 1);
    assert_int_equal(workers->problems[0], 2);
    assert_string_equal(r.pods[5].reason, "Error");
    gc_inspect_report_free(&r);
}

static void test_missing_job(void **state)
{
    (void)state;
    gc_inspect_report r;
    gc_error err;
    assert_int_equal(gc_job_inspect(jt_kube(), "nope", false, &r, &err), GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 404);
    assert_string_equal(err.message,
                        "no job named nope in namespace ns1 (gcluster job list shows the jobs)");

    /* When another namespace has it, the message says which. */
    jt_list(JT_ALL_JOBSETS, "JobSetList",
            jt_json("[{'metadata': {'name': 'nope', 'namespace': 'team-b'}}]"));
    assert_int_equal(gc_job_inspect(jt_kube(), "nope", false, &r, &err), GC_EXIT_RUNTIME);
    assert_string_equal(err.message, "no job named nope in namespace ns1; it exists in namespace "
                                     "team-b: add --namespace");
    json_t *req = jt_requests();
    size_t n = json_array_size(req);
    assert_string_equal(jt_param(req, n - 1, "fieldSelector"), "metadata.name=nope");
    json_decref(req);
}

static void test_bad_name_sends_nothing(void **state)
{
    (void)state;
    gc_inspect_report r;
    gc_error err;
    const char *bad[] = {"", "Upper", "a/b", "x?watch=1", "-dash"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        assert_int_equal(gc_job_inspect(jt_kube(), bad[i], false, &r, &err), GC_EXIT_USAGE);
        assert_true(strstr(err.message, "is not a job name") != NULL);
    }
    assert_int_equal(jt_request_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_running_job, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_warnings_superseded_by_success, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_queued_job_says_why, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_failed_job_names_pod_container_and_exit_code, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(test_succeeded_job_with_its_manifest, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_terminating_job_without_kueue, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_big_job_slice_by_slice, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_slices_waiting_and_finished, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_missing_job, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_bad_name_sends_nothing, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
