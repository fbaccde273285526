/*
 * gc_job_list against the scripted API server: the rows it derives from JobSets in every state,
 * the --status and --name-contains filters, Kueue's reasons for queued jobs, and its errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/diagnose.h"
#include "gcluster/job.h"
#include "job_test.h"

#include <stdlib.h>
#include <string.h>

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

/* One JobSet in each state, in the order the server lists them. */
static json_t *jobsets(void)
{
    json_t *running = jt_jobset("run", 2);
    json_object_set_new(json_object_get(running, "status"), "replicatedJobsStatus",
                        jt_json("[{'name': 'pathways-head', 'ready': 1},"
                                " {'name': 'worker', 'ready': 1}]"));
    json_t *queued = jt_jobset("wait", 1);
    json_object_set_new(json_object_get(queued, "spec"), "suspend", json_true());
    json_t *queued_new = jt_jobset("wait-new", 1);
    json_object_set_new(json_object_get(queued_new, "spec"), "suspend", json_true());
    json_t *done = jt_jobset("done", 1);
    jt_condition(done, "Completed", "AllJobsCompleted", "ok");
    json_t *failed = jt_jobset("broke", 1);
    jt_condition(failed, "Failed", "FailedJobs", "jobset failed: job broke-worker-0 failed");
    json_t *going = jt_jobset("going", 1);
    json_object_set_new(json_object_get(going, "metadata"), "deletionTimestamp",
                        json_string("2026-01-02T06:00:00Z"));
    /* Made by hand: no annotations, no queue; an ordinary GPU JobSet. */
    json_t *plain = jt_json(
        "{'metadata': {'name': 'plain', 'namespace': 'ns1', 'uid': 'uid-plain',"
        " 'creationTimestamp': '2026-01-02T03:04:05Z', 'labels': {'gcluster.google.com/workload':"
        " 'plain'}}, 'spec': {'replicatedJobs': [{'name': 'main-job', 'replicas': 1, 'template':"
        " {'spec': {'parallelism': 2, 'template': {'spec': {'nodeSelector':"
        " {'cloud.google.com/gke-accelerator': 'nvidia-l4'}}}}}}]}, 'status': {}}");
    return json_pack("[o, o, o, o, o, o, o]", running, queued, queued_new, done, failed, going,
                     plain);
}

/* The index of the request for `path` (it must be there). */
static size_t request_at(json_t *req, const char *path)
{
    for (size_t i = 0; i < json_array_size(req); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(req, i), "path")), path))
            return i;
    fail_msg("no request for %s", path);
    return 0;
}

static const gc_job_row *row(const gc_job_list_result *l, const char *name)
{
    for (size_t i = 0; i < l->count; i++)
        if (!strcmp(l->rows[i].name, name))
            return &l->rows[i];
    fail_msg("no row %s", name);
    return NULL;
}

static void test_rows_of_every_state(void **state)
{
    (void)state;
    jt_list(JT_JOBSETS, "JobSetList", jobsets());
    gc_list_request r = {0};
    gc_job_list_result l;
    gc_error err;
    assert_int_equal(gc_job_list(jt_kube(), &r, &l, &err), 0);
    assert_int_equal(l.count, 7);
    assert_string_equal(l.rows[0].name, "run");

    const gc_job_row *run = row(&l, "run");
    assert_int_equal(run->phase, GC_JOB_RUNNING);
    assert_string_equal(run->status, "Running 5/9"); /* ready Jobs times their pods */
    assert_string_equal(run->compute, "v6e-16 x2");
    assert_int_equal(run->pathways, GC_PATHWAYS_FULL);
    assert_string_equal(run->queue, "user-queue");
    assert_string_equal(run->ns, "ns1");
    assert_string_equal(run->created, "2026-01-02T03:04:05Z");
    assert_null(run->completed);
    assert_null(run->detail);

    const gc_job_row *wait = row(&l, "wait");
    assert_int_equal(wait->phase, GC_JOB_QUEUED);
    assert_string_equal(wait->status, "Queued");
    assert_null(wait->detail); /* why it waits is the Workload's to say, not read here */

    const gc_job_row *done = row(&l, "done");
    assert_int_equal(done->phase, GC_JOB_SUCCEEDED);
    assert_string_equal(done->completed, "2026-01-02T04:00:00Z");

    const gc_job_row *broke = row(&l, "broke");
    assert_int_equal(broke->phase, GC_JOB_FAILED);
    assert_string_equal(broke->detail, "FailedJobs: jobset failed: job broke-worker-0 failed");

    assert_int_equal(row(&l, "going")->phase, GC_JOB_TERMINATING);

    const gc_job_row *plain = row(&l, "plain");
    assert_int_equal(plain->pathways, GC_PATHWAYS_NONE);
    assert_string_equal(plain->compute, "nvidia-l4 x1");
    assert_null(plain->queue);
    assert_int_equal(plain->phase, GC_JOB_ADMITTED);
    assert_null(plain->detail); /* list reads no pods, so it cannot say how many run */
    gc_job_list_result_free(&l);

    /* One round trip: our JobSets, and the Jobs of JobSet-less jobs, in large pages. */
    json_t *req = jt_requests();
    assert_int_equal(json_array_size(req), 2);
    size_t js = request_at(req, JT_JOBSETS), jobs = request_at(req, JT_JOBS);
    assert_string_equal(jt_param(req, js, "labelSelector"), "gcluster.google.com/workload");
    assert_string_equal(jt_param(req, js, "limit"), "10000");
    assert_string_equal(jt_param(req, jobs, "labelSelector"),
                        "gcluster.google.com/workload,!jobset.sigs.k8s.io/jobset-name");
    json_decref(req);
}

/* A JobSet-less job's Indexed Job (labelled with its workload, not made by a JobSet) is a row,
 * after the JobSets'; a JobSet's own Job is not. */
static void test_jobset_less_jobs_are_rows(void **state)
{
    (void)state;
    jt_list(JT_JOBSETS, "JobSetList", json_pack("[o]", jt_jobset("run", 1)));
    jt_list(JT_JOBS, "JobList",
            jt_json("[{'metadata': {'name': 'fb', 'namespace': 'ns1', 'uid': 'uid-fb',"
                    " 'creationTimestamp': '2026-01-02T03:04:05Z', 'labels':"
                    " {'gcluster.google.com/workload': 'fb', 'kueue.x-k8s.io/queue-name': 'q'},"
                    " 'annotations': {'gcluster.google.com/compute-type': 'v6e-16',"
                    " 'gcluster.google.com/num-slices': '1'}},"
                    " 'spec': {'parallelism': 4, 'completions': 4, 'suspend': false},"
                    " 'status': {'active': 4, 'ready': 3}},"
                    " {'metadata': {'name': 'done', 'namespace': 'ns1', 'uid': 'uid-done',"
                    " 'labels': {'gcluster.google.com/workload': 'done'}},"
                    " 'spec': {'parallelism': 2},"
                    " 'status': {'conditions': [{'type': 'Complete', 'status': 'True',"
                    " 'lastTransitionTime': '2026-01-02T04:00:00Z'}]}},"
                    " {'metadata': {'name': 'other', 'namespace': 'ns1',"
                    " 'labels': {'gcluster.google.com/workload': 'someone-else'}}}]"));
    gc_list_request r = {0};
    gc_job_list_result l;
    gc_error err;
    assert_int_equal(gc_job_list(jt_kube(), &r, &l, &err), 0);
    assert_int_equal(l.count, 3);
    assert_string_equal(l.rows[0].name, "run");
    const gc_job_row *fb = row(&l, "fb");
    assert_int_equal(fb->phase, GC_JOB_RUNNING);
    assert_string_equal(fb->status, "Running 3/4");
    assert_string_equal(fb->queue, "q");
    assert_string_equal(fb->uid, "uid-fb");
    const gc_job_row *done = row(&l, "done");
    assert_int_equal(done->phase, GC_JOB_SUCCEEDED);
    assert_string_equal(done->completed, "2026-01-02T04:00:00Z");
    gc_job_list_result_free(&l);
}

static void test_filters(void **state)
{
    (void)state;
    gc_job_list_result l;
    gc_error err;

    jt_list(JT_JOBSETS, "JobSetList", jobsets());
    gc_list_request running = {.status = "running"};
    assert_int_equal(gc_job_list(jt_kube(), &running, &l, &err), 0);
    assert_int_equal(l.count, 1);
    assert_string_equal(l.rows[0].name, "run");
    gc_job_list_result_free(&l);

    /* Google's Pending: queued or admitted. */
    jt_list(JT_JOBSETS, "JobSetList", jobsets());
    gc_list_request pending = {.status = "Pending"};
    assert_int_equal(gc_job_list(jt_kube(), &pending, &l, &err), 0);
    assert_int_equal(l.count, 3);
    assert_string_equal(l.rows[0].name, "wait");
    assert_string_equal(l.rows[1].name, "wait-new");
    assert_string_equal(l.rows[2].name, "plain");
    gc_job_list_result_free(&l);

    jt_list(JT_JOBSETS, "JobSetList", jobsets());
    gc_list_request named = {.name_contains = "ai", .status = "queued"};
    assert_int_equal(gc_job_list(jt_kube(), &named, &l, &err), 0);
    assert_int_equal(l.count, 2);
    assert_string_equal(l.rows[1].name, "wait-new");
    gc_job_list_result_free(&l);

    jt_list(JT_JOBSETS, "JobSetList", jobsets());
    gc_list_request none = {.name_contains = "zzz"};
    assert_int_equal(gc_job_list(jt_kube(), &none, &l, &err), 0);
    assert_int_equal(l.count, 0);
    gc_job_list_result_free(&l);
}

static void test_queue_reasons_from_workloads(void **state)
{
    (void)state;
    jt_list(JT_JOBSETS, "JobSetList", jobsets());
    jt_list(JT_WORKLOADS, "WorkloadList",
            json_pack("[o, o]", jt_workload("run", true, "Admitted", "ok"),
                      jt_workload("wait", false, "Pending",
                                  "insufficient unused quota for google.com/tpu")));
    gc_list_request r = {.queue_reasons = true};
    gc_job_list_result l;
    gc_error err;
    assert_int_equal(gc_job_list(jt_kube(), &r, &l, &err), 0);
    assert_string_equal(row(&l, "wait")->detail,
                        "Pending: insufficient unused quota for google.com/tpu");
    assert_string_equal(row(&l, "wait-new")->detail, "no Kueue Workload yet");
    assert_null(row(&l, "run")->detail);
    gc_job_list_result_free(&l);
    json_t *req = jt_requests();
    assert_int_equal(json_array_size(req), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(req, 2), "path")),
                        JT_WORKLOADS);
    json_decref(req);

    /* Nothing queued: no Workloads read (the JobSets and the Jobs, after the 3 above). */
    jt_list(JT_JOBSETS, "JobSetList", json_pack("[o]", jt_jobset("run", 1)));
    assert_int_equal(gc_job_list(jt_kube(), &r, &l, &err), 0);
    assert_int_equal(l.count, 1);
    gc_job_list_result_free(&l);
    assert_int_equal(jt_request_count(), 5);
}

static void test_all_namespaces(void **state)
{
    (void)state;
    jt_list(JT_ALL_JOBSETS, "JobSetList",
            jt_json("[{'metadata': {'name': 'a', 'namespace': 'team-a'}},"
                    " {'metadata': {'name': 'b', 'namespace': 'team-b'}}]"));
    gc_list_request r = {.all_namespaces = true};
    gc_job_list_result l;
    gc_error err;
    assert_int_equal(gc_job_list(jt_kube(), &r, &l, &err), 0);
    assert_int_equal(l.count, 2);
    assert_string_equal(l.rows[1].ns, "team-b");
    assert_null(l.rows[1].compute);
    gc_job_list_result_free(&l);
}

/* The list's answer breaks after its first JobSet: nothing has been shown, so the list is read
 * again from the start and every job is a row once. */
static void test_cut_list_is_read_again(void **state)
{
    (void)state;
    json_t *a = jt_jobset("a", 1), *b = jt_jobset("b", 1);
    char *first = json_dumps(a, JSON_COMPACT);
    gc_buf cut;
    gc_buf_init(&cut);
    gc_buf_printf(&cut, "{\"items\":[%s,{\"metadata\":{\"na", first);
    jt_answer("GET " JT_JOBSETS,
              json_pack("{s:[{s:s}], s:b}", "chunks", "data", cut.data, "abort", 1));
    jt_list(JT_JOBSETS, "JobSetList", json_pack("[o, o]", a, b));
    gc_list_request r = {0};
    gc_job_list_result l;
    gc_error err;
    assert_int_equal(gc_job_list(jt_kube(), &r, &l, &err), 0);
    assert_int_equal(l.count, 2);
    assert_string_equal(l.rows[0].name, "a");
    assert_string_equal(l.rows[1].name, "b");
    assert_int_equal(jt_request_count(), 3); /* the JobSets twice, the Jobs once */
    gc_job_list_result_free(&l);
    gc_buf_free(&cut);
    free(first);
}

static void test_errors(void **state)
{
    (void)state;
    gc_job_list_result l;
    gc_error err;
    gc_list_request bad = {.status = "Sleeping"};
    assert_int_equal(gc_job_list(jt_kube(), &bad, &l, &err), GC_EXIT_USAGE);
    assert_true(strstr(err.message, "--status Sleeping is not a status") != NULL);
    assert_int_equal(gc_job_list_check(&bad, &err), GC_EXIT_USAGE);
    assert_int_equal(jt_request_count(), 0);

    /* The cluster has no JobSet API (unscripted paths answer 404). */
    gc_list_request r = {0};
    assert_int_equal(gc_job_list(jt_kube(), &r, &l, &err), GC_EXIT_RUNTIME);
    assert_true(strstr(err.message, "does not serve JobSets") != NULL);
    assert_int_equal(l.count, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rows_of_every_state, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_jobset_less_jobs_are_rows, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_filters, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_queue_reasons_from_workloads, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_all_namespaces, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_cut_list_is_read_again, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_errors, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
