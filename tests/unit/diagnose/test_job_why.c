/*
 * gc_job_why and `gcluster job why` against the scripted API server, serving the objects the
 * real controllers wrote (tests/fixtures/diagnose/, captured on testenv): which reads are made
 * and how many round trips they cost, that what was read reaches the diagnosis, and what the
 * command prints.
 *
 * The fixtures live in namespace default; the test client's namespace is ns1, which only
 * changes the paths the client asks for.
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
#include "run_cli.h"

#include <stdio.h>
#include <string.h>

#define FIXTURES GCLUSTER_SOURCE_DIR "/tests/fixtures/diagnose/"

#define KUEUE          "/apis/kueue.x-k8s.io/v1beta2/"
#define LOCAL_QUEUES   KUEUE "localqueues"
#define CLUSTER_QUEUES KUEUE "clusterqueues"
#define FLAVORS        KUEUE "resourceflavors"
#define ALL_WORKLOADS  KUEUE "workloads"
#define NODES          "/api/v1/nodes"
#define ALL_PODS       "/api/v1/pods"

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

static json_t *load(const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), FIXTURES "%s.json", name);
    json_error_t error;
    json_t *f = json_load_file(path, 0, &error);
    if (!f)
        fail_msg("%s: %s", path, error.text);
    return f;
}

static json_t *part(const json_t *f, const char *key)
{
    const json_t *v = json_object_get(f, key);
    return json_is_null(v) || !v ? json_array() : json_deep_copy(v);
}

static const char *job_name(const json_t *f)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(f, "jobset"), "metadata"), "name"));
}

/* What the first round trip reads (the JobSet, its pods, the Warning events), and the child
 * Jobs, which the second reads for a failed job. */
static void serve_first_round(const json_t *f)
{
    char *path = gc_xasprintf(JT_JOBSETS "/%s", job_name(f));
    jt_get(path, json_deep_copy(json_object_get(f, "jobset")));
    free(path);
    jt_list(JT_PODS, "PodList", part(f, "pods"));
    jt_list(JT_JOBS, "JobList", part(f, "jobs"));
    jt_list(JT_EVENTS, "EventList", part(f, "events"));
}

/* Its Workload at `path` (of the Kueue API version the test serves). */
static void serve_workload(const json_t *f, const char *path)
{
    const json_t *wl = json_object_get(f, "workload");
    jt_list(path, "WorkloadList", json_is_object(wl) ? json_pack("[O]", wl) : json_array());
}

/* What inspect reads too. */
static void serve_job(const json_t *f)
{
    serve_first_round(f);
    serve_workload(f, JT_WORKLOADS);
}

/* The queues, under `kueue` ("/apis/kueue.x-k8s.io/v1beta2/"); every Workload, the job's own
 * among them (the engine skips it). */
static void serve_queues(const json_t *f, const char *kueue)
{
    char *paths[4] = {gc_xasprintf("%slocalqueues", kueue), gc_xasprintf("%sclusterqueues", kueue),
                      gc_xasprintf("%sresourceflavors", kueue), gc_xasprintf("%sworkloads", kueue)};
    jt_list(paths[0], "LocalQueueList", part(f, "local_queues"));
    jt_list(paths[1], "ClusterQueueList", part(f, "cluster_queues"));
    jt_list(paths[2], "ResourceFlavorList", part(f, "flavors"));
    json_t *workloads = part(f, "workloads");
    if (json_is_object(json_object_get(f, "workload")))
        json_array_append(workloads, json_object_get(f, "workload"));
    jt_list(paths[3], "WorkloadList", workloads);
    for (size_t i = 0; i < 4; i++)
        free(paths[i]);
}

/* The nodes, and the pods holding them. Among those, the API server also lists the job's own
 * pods on a host; here one of its workers stands on a TPU host another job holds: it must not
 * count as another job's. */
static void serve_nodes(const json_t *f)
{
    jt_list(NODES, "NodeList", part(f, "nodes"));
    json_t *holders = part(f, "node_pods");
    const json_t *taken = NULL;
    size_t i;
    const json_t *pod;
    json_array_foreach(holders, i, pod)
    {
        const char *role = json_string_value(
            json_object_get(json_object_get(json_object_get(pod, "metadata"), "labels"),
                            "jobset.sigs.k8s.io/replicatedjob-name"));
        if (!taken && role && !strcmp(role, "worker"))
            taken = json_object_get(pod, "spec");
    }
    json_array_foreach(json_object_get(f, "pods"), i, pod)
    {
        json_t *own = json_deep_copy(pod);
        json_t *spec = json_object_get(own, "spec");
        if (!json_object_get(spec, "nodeName"))
            json_object_set(spec, "nodeName", json_object_get(taken, "nodeName"));
        json_array_append_new(holders, own);
    }
    jt_list(ALL_PODS, "PodList", holders);
}

/* The path of request `i` of the log. */
static const char *path_of(const json_t *log, size_t i)
{
    return json_string_value(json_object_get(json_array_get(log, i), "path"));
}

static bool has_evidence(const gc_diagnosis *d, const char *text)
{
    for (size_t i = 0; i < d->evidence_count; i++)
        if (strstr(d->evidence[i], text))
            return true;
    return false;
}

/* A healthy running job: two round trips, exactly what `job inspect` costs. */
static void test_running_costs_no_more_than_inspect(void **state)
{
    (void)state;
    json_t *f = load("running");
    serve_job(f);
    gc_diagnosis d;
    gc_error err;
    assert_int_equal(gc_job_why(jt_kube(), "pw-run", &d, &err), 0);
    assert_string_equal(d.reason, "Running");
    assert_string_equal(
        d.cause, "running: 9/9 pods (head 1/1, workers 8/8); no restarts so far (at most 1)");
    assert_string_equal(d.fix, "nothing to do; follow it with gcluster job logs pw-run -f");
    unsigned why_requests = gc_kube_request_count(jt_kube());
    unsigned why_trips = gc_kube_round_trip_count(jt_kube());
    assert_int_equal(why_requests, 4);
    assert_int_equal(why_trips, 2);

    serve_job(f);
    gc_inspect_report r;
    assert_int_equal(gc_job_inspect(jt_kube(), "pw-run", false, &r, &err), 0);
    assert_string_equal(r.diagnosis->cause, d.cause);
    gc_inspect_report_free(&r);
    assert_int_equal(gc_kube_request_count(jt_kube()) - why_requests, why_requests);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()) - why_trips, why_trips);

    /* The first three went out together (in any order), the pods scoped to the job; a running
     * job's child Jobs are not read. */
    json_t *log = jt_requests();
    size_t seen = 0;
    for (size_t i = 0; i < 3; i++) {
        const char *path = path_of(log, i);
        if (!strcmp(path, JT_JOBSETS "/pw-run"))
            seen |= 1;
        else if (!strcmp(path, JT_PODS)) {
            seen |= 2;
            assert_string_equal(jt_param(log, i, "labelSelector"),
                                "jobset.sigs.k8s.io/jobset-name=pw-run");
        } else if (!strcmp(path, JT_EVENTS)) {
            seen |= 4;
            assert_string_equal(jt_param(log, i, "fieldSelector"), "type=Warning");
        }
    }
    assert_int_equal(seen, 7);
    assert_string_equal(path_of(log, 3), JT_WORKLOADS);
    json_decref(log);
    json_decref(f);
}

/* A Warning event about `object` (of `kind`), copied from one of the fixture's. */
static json_t *warning_about(const json_t *like, const char *kind, const char *object)
{
    json_t *e = json_deep_copy(like);
    json_t *involved = json_object_get(e, "involvedObject");
    json_object_set_new(involved, "kind", json_string(kind));
    json_object_set_new(involved, "name", json_string(object));
    return e;
}

/* The namespace's Warning events are every job's; the report keeps only this job's: its own
 * objects and its Workload, not a neighbour whose name starts the same (pw-runner, pw-run-2) nor
 * another Workload. */
static void test_only_the_jobs_warnings_are_kept(void **state)
{
    (void)state;
    json_t *f = load("running");
    json_t *events = json_object_get(f, "events");
    json_t *like = json_deep_copy(json_array_get(events, 0));
    json_array_clear(events);
    const char *kinds[] = {"Pod", "Pod", "Workload", "Workload", "JobSet", "Job", "Pod", "Job"};
    const char *objects[] = {"pw-run-worker-0-0-x1",
                             "pw-runner-worker-0-0-x1",
                             "jobset-pw-run-3b0bc",
                             "jobset-pw-run-other",
                             "pw-run",
                             "pw-other-worker-0",
                             "pw-run-2-worker-0-0-x1",
                             "pw-run-2-worker-0"};
    for (size_t i = 0; i < 8; i++)
        json_array_append_new(events, warning_about(like, kinds[i], objects[i]));
    json_decref(like);
    serve_job(f);
    gc_inspect_report r;
    gc_error err;
    assert_int_equal(gc_job_inspect(jt_kube(), "pw-run", false, &r, &err), 0);
    const char *kept[] = {"pw-run-worker-0-0-x1", "jobset-pw-run-3b0bc", "pw-run"};
    assert_int_equal(r.warning_count, 3);
    for (size_t k = 0; k < 3; k++) {
        bool found = false;
        for (size_t i = 0; i < r.warning_count; i++)
            found |= !strcmp(r.warnings[i].object, kept[k]);
        assert_true(found);
    }
    gc_inspect_report_free(&r);
    json_decref(f);
}

/* A queued job: the four queue lists in one more round trip, every namespace's. */
static void test_quota_short_reads_the_queues_together(void **state)
{
    (void)state;
    json_t *f = load("quota_short");
    serve_job(f);
    serve_queues(f, KUEUE);
    gc_diagnosis d;
    gc_error err;
    assert_int_equal(gc_job_why(jt_kube(), "pw-b", &d, &err), 0);
    assert_string_equal(d.reason, "QuotaShort");
    assert_string_equal(
        d.cause, "the workers need 16 google.com/tpu in tpu-flavor; quota 32, 32 used by pw-a");
    assert_string_equal(d.fix, "wait for pw-a to finish, or free its quota: gcluster job cancel "
                               "pw-a; or submit with a --priority (such as high), which lets the "
                               "queue preempt it");
    assert_int_equal(d.wants, 0);
    assert_int_equal(gc_kube_request_count(jt_kube()), 8);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 3);
    json_t *log = jt_requests();
    const char *want[] = {LOCAL_QUEUES, CLUSTER_QUEUES, FLAVORS, ALL_WORKLOADS};
    for (size_t i = 0; i < 4; i++) {
        bool found = false;
        for (size_t j = 4; j < 8; j++)
            found |= !strcmp(path_of(log, j), want[i]);
        if (!found)
            fail_msg("no request for %s", want[i]);
    }
    json_decref(log);
    json_decref(f);
}

/* Pods that cannot be placed: the nodes and who holds them, the job's own pods not counted. */
static void test_unschedulable_reads_the_nodes(void **state)
{
    (void)state;
    json_t *f = load("unschedulable_busy");
    serve_job(f);
    serve_nodes(f);
    gc_diagnosis d;
    gc_error err;
    assert_int_equal(gc_job_why(jt_kube(), "pw-busy", &d, &err), 0);
    assert_string_equal(d.cause, "1 worker pod waits for free hosts: all 8 tpu-v6e-slice 4x4 hosts "
                                 "are busy, held by pw-outside (8 hosts)");
    assert_string_equal(d.fix, "wait for pw-outside to end, or free its hosts: gcluster job cancel "
                               "pw-outside");
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 3);
    json_t *log = jt_requests();
    size_t n = json_array_size(log);
    assert_int_equal(n, 6);
    for (size_t i = 4; i < 6; i++) {
        if (strcmp(path_of(log, i), ALL_PODS))
            continue;
        assert_string_equal(jt_param(log, i, "labelSelector"), "jobset.sigs.k8s.io/jobset-name");
        assert_string_equal(jt_param(log, i, "fieldSelector"),
                            "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed");
    }
    json_decref(log);
    json_decref(f);
}

/* A failed job: the failed container's last lines, read once the engine names it. */
static void test_failed_reads_the_log_tail(void **state)
{
    (void)state;
    json_t *f = load("failed_max_restarts");
    serve_job(f);
    const char *pod = "pw-fail-pathways-head-0-0-45fhb";
    char *path = gc_xasprintf(JT_PODS "/%s/log", pod);
    char *key = gc_xasprintf("GET %s", path);
    jt_answer(key,
              json_pack("{s:s}", "body",
                        "step 1\nTraceback (most recent call last):\nValueError: batch size 0\n"));
    gc_diagnosis d;
    gc_error err;
    assert_int_equal(gc_job_why(jt_kube(), "pw-fail", &d, &err), 0);
    assert_string_equal(d.reason, "Failed");
    assert_true(has_evidence(&d, "log pw-fail-pathways-head-0-0-45fhb/workload-container: "
                                 "ValueError: batch size 0"));
    assert_true(has_evidence(&d, "Job pw-fail-pathways-head-0: Failed=True"));
    /* The child Jobs went out beside the Workload, the log in a round trip of its own. */
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 3);
    json_t *log = jt_requests();
    size_t last = json_array_size(log) - 1;
    assert_int_equal(last, 5);
    assert_true(!strcmp(path_of(log, 3), JT_JOBS) || !strcmp(path_of(log, 4), JT_JOBS));
    assert_string_equal(path_of(log, last), path);
    assert_string_equal(jt_param(log, last, "container"), "workload-container");
    assert_string_equal(jt_param(log, last, "tailLines"), "5");
    json_decref(log);
    free(key);
    free(path);
    json_decref(f);
}

/* Lists this user may not read: the diagnosis says what it can, and that it could not read
 * them; the command still succeeds. A log that is gone, likewise. */
static void test_refused_reads_leave_what_is_known(void **state)
{
    (void)state;
    json_t *f = load("quota_short");
    serve_job(f);
    const char *paths[] = {LOCAL_QUEUES, CLUSTER_QUEUES, FLAVORS, ALL_WORKLOADS};
    for (size_t i = 0; i < 4; i++) {
        char *key = gc_xasprintf("GET %s", paths[i]);
        jt_answer(key, jt_json("{'status': 403, 'json': {'kind': 'Status', 'status': 'Failure',"
                               " 'reason': 'Forbidden', 'code': 403, 'message': 'clusterqueues is "
                               "forbidden: User cannot list resource'}}"));
        free(key);
    }
    gc_diagnosis d;
    gc_error err;
    assert_int_equal(gc_job_why(jt_kube(), "pw-b", &d, &err), 0);
    assert_string_equal(d.reason, "Pending");
    assert_non_null(strstr(d.cause, "waiting for Kueue to admit it: couldn't assign flavors"));
    assert_true(has_evidence(&d, "the queues could not be read: "));
    json_decref(f);

    f = load("failed_max_restarts");
    serve_job(f);
    assert_int_equal(gc_job_why(jt_kube(), "pw-fail", &d, &err), 0);
    assert_string_equal(d.reason, "Failed");
    assert_true(has_evidence(
        &d, "the log of pw-fail-pathways-head-0-0-45fhb/workload-container could not be read"));
    json_decref(f);
}

/* A Kueue that serves only v1beta1 (0.14 and older): the Workload and the queues from there. */
static void test_older_kueue(void **state)
{
    (void)state;
    json_t *f = load("queue_missing");
    serve_first_round(f);
    jt_answer("GET " JT_WORKLOADS,
              jt_json("{'status': 404, 'json': {'kind': 'Status', 'code': 404, 'reason': "
                      "'NotFound', 'message': 'the server could not find the requested "
                      "resource'}}"));
    serve_workload(f, "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns1/workloads");
    serve_queues(f, "/apis/kueue.x-k8s.io/v1beta1/");
    gc_diagnosis d;
    gc_error err;
    assert_int_equal(gc_job_why(jt_kube(), "pw-nq", &d, &err), 0);
    assert_string_equal(d.reason, "QueueMissing");
    assert_string_equal(d.cause,
                        "queue no-such-queue does not exist in namespace default (queues there: "
                        "user-queue)");
    assert_string_equal(d.fix, "gcluster job cancel pw-nq, then submit it again with --queue "
                               "user-queue");
    json_decref(f);
}

#define NOT_SERVED                                                                                 \
    "{'status': 404, 'json': {'kind': 'Status', 'code': 404, 'reason': 'NotFound', 'message': "    \
    "'the server could not find the requested resource'}}"

/* No Kueue at all (neither Workload API is served): there are no queues, and nothing more is
 * asked to learn that. */
static void test_without_kueue(void **state)
{
    (void)state;
    json_t *f = load("queue_label_missing");
    serve_first_round(f);
    jt_answer("GET " JT_WORKLOADS, jt_json(NOT_SERVED));
    jt_answer("GET /apis/kueue.x-k8s.io/v1beta1/namespaces/ns1/workloads", jt_json(NOT_SERVED));
    gc_diagnosis d;
    gc_error err;
    assert_int_equal(gc_job_why(jt_kube(), "pw-nolabel", &d, &err), 0);
    assert_string_equal(d.reason, "QueueLabelMissing");
    assert_string_equal(d.fix, "gcluster job cancel pw-nolabel; create a queue (gcluster deploy "
                               "BLUEPRINT makes user-queue), then submit it again with --queue "
                               "user-queue");
    assert_int_equal(jt_request_count(), 5);
    json_decref(f);
}

/* The server failing (not refusing) on a wanted read is an API failure, as on any other. */
static void test_server_failure_is_an_error(void **state)
{
    (void)state;
    json_t *f = load("quota_short");
    serve_job(f);
    jt_answer("GET " FLAVORS,
              jt_json("{'status': 400, 'json': {'kind': 'Status', 'code': 400, 'reason': "
                      "'BadRequest', 'message': 'bad request'}}"));
    serve_queues(f, KUEUE); /* the flavors' answer queued behind the failure stays unused */
    gc_diagnosis d;
    gc_error err;
    assert_int_equal(gc_job_why(jt_kube(), "pw-b", &d, &err), GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 400);
    json_decref(f);
}

static void test_missing_job_and_bad_name(void **state)
{
    (void)state;
    gc_diagnosis d;
    gc_error err;
    assert_int_equal(gc_job_why(jt_kube(), "nope", &d, &err), GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 404);
    assert_string_equal(err.message,
                        "no job named nope in namespace ns1 (gcluster job list shows the jobs)");
    size_t sent = jt_request_count();
    assert_int_equal(gc_job_why(jt_kube(), "Bad/Name", &d, &err), GC_EXIT_USAGE);
    assert_int_equal(jt_request_count(), sent);
}

/* Runs `gcluster job why ARGS... --kubeconfig K`. */
static void why_cli(cli_result *res, const char *const *given)
{
    const char *args[16] = {"job", "why"};
    size_t n = 2;
    for (size_t i = 0; given[i] && n < 13; i++)
        args[n++] = given[i];
    args[n++] = "--kubeconfig";
    args[n++] = jt_kubeconfig();
    args[n] = NULL;
    run_cli(res, args, NULL);
}

#define gcluster_why(res, ...) why_cli(res, (const char *const[]){__VA_ARGS__, NULL})

static void test_command_text_json_and_evidence(void **state)
{
    (void)state;
    json_t *f = load("quota_short");
    serve_job(f);
    serve_queues(f, KUEUE);
    cli_result res;
    gcluster_why(&res, "pw-b");
    assert_int_equal(res.exit_code, 0);
    assert_string_equal(res.out.data,
                        "Cause: the workers need 16 google.com/tpu in tpu-flavor; quota 32, 32 "
                        "used by pw-a\n"
                        "Fix:   wait for pw-a to finish, or free its quota: gcluster job cancel "
                        "pw-a; or submit with a --priority (such as high), which lets the queue "
                        "preempt it\n");
    cli_result_free(&res);

    serve_job(f);
    serve_queues(f, KUEUE);
    gcluster_why(&res, "--name", "pw-b", "-o", "json");
    assert_int_equal(res.exit_code, 0);
    json_error_t jerr;
    json_t *doc = json_loads(res.out.data, 0, &jerr);
    if (!doc)
        fail_msg("not JSON: %s", res.out.data);
    const char *keys[] = {"state", "reason", "cause", "fix", "evidence"};
    assert_int_equal(json_object_size(doc), 5);
    for (size_t i = 0; i < 5; i++)
        assert_non_null(json_object_get(doc, keys[i]));
    assert_string_equal(json_string_value(json_object_get(doc, "state")), "Queued");
    assert_string_equal(json_string_value(json_object_get(doc, "reason")), "QuotaShort");
    assert_true(json_array_size(json_object_get(doc, "evidence")) >= 2);
    json_decref(doc);
    cli_result_free(&res);

    /* --evidence (or -v): which object and field said so; -v also counts the round trips. */
    serve_job(f);
    serve_queues(f, KUEUE);
    gcluster_why(&res, "pw-b", "--evidence");
    assert_non_null(strstr(res.out.data, "\nEvidence:\n  Workload jobset-pw-b-e0c2a: "
                                         "QuotaReserved=False (Pending): "));
    cli_result_free(&res);
    serve_job(f);
    serve_queues(f, KUEUE);
    gcluster_why(&res, "pw-b", "-v");
    assert_non_null(strstr(res.out.data, "\nEvidence:\n"));
    assert_non_null(strstr(res.err.data, "8 API requests in 3 round trips"));
    cli_result_free(&res);
    json_decref(f);
}

static void test_command_errors(void **state)
{
    (void)state;
    cli_result res;
    gcluster_why(&res, "pw-a", "pw-b");
    assert_int_equal(res.exit_code, 2);
    assert_non_null(strstr(res.err.data, "job why takes one job name"));
    cli_result_free(&res);
    gcluster_why(&res, "pw-a", "-o", "wide");
    assert_int_equal(res.exit_code, 2);
    cli_result_free(&res);
    assert_int_equal(jt_request_count(), 0);
    gcluster_why(&res, "nope");
    assert_int_equal(res.exit_code, 1);
    assert_non_null(strstr(res.err.data, "no job named nope in namespace ns1"));
    cli_result_free(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_running_costs_no_more_than_inspect, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_only_the_jobs_warnings_are_kept, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_quota_short_reads_the_queues_together, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(test_unschedulable_reads_the_nodes, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_failed_reads_the_log_tail, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_refused_reads_leave_what_is_known, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_older_kueue, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_without_kueue, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_server_failure_is_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_missing_job_and_bad_name, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_command_text_json_and_evidence, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_command_errors, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
