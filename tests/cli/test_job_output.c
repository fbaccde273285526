/*
 * What ./gcluster job inspect, list, logs and cancel print, run as a subprocess against the
 * scripted API server: the JSON and YAML documents (their fields are the schemas README.md
 * documents, so a change here is a change of a published interface), the text, and flags
 * refused with exit 2 before any request.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/emit.h"
#include "job_test.h"
#include "run_cli.h"

#include <string.h>

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

/* Runs `gcluster job ARGS... --kubeconfig K` (at most 8 arguments, NULL-terminated). */
static void gcluster_argv(cli_result *res, const char *const *given)
{
    const char *args[12];
    size_t n = 0;
    args[n++] = "job";
    for (size_t i = 0; i < 8 && given[i]; i++)
        args[n++] = given[i];
    args[n++] = "--kubeconfig";
    args[n++] = jt_kubeconfig();
    args[n] = NULL;
    run_cli(res, args, NULL);
}

#define gcluster(res, ...) gcluster_argv(res, (const char *const[]){__VA_ARGS__, NULL})

static json_t *parse_json(const cli_result *res)
{
    json_error_t jerr;
    json_t *doc = json_loads(res->out.len ? res->out.data : "", 0, &jerr);
    if (!doc)
        fail_msg("not JSON (%s): %s\nstderr: %s", jerr.text, res->out.data, res->err.data);
    return doc;
}

/* The object has exactly these keys (NULL-terminated), in this order. */
static void assert_keys(const json_t *object, const char *const *keys)
{
    size_t n = 0;
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)object, key, value)
    {
        if (!keys[n] || strcmp(key, keys[n]) != 0)
            fail_msg("key %zu is %s, want %s", n, key, keys[n] ? keys[n] : "(none)");
        n++;
    }
    if (keys[n])
        fail_msg("key %s is missing", keys[n]);
}

static const char *str(const json_t *object, const char *key)
{
    return json_string_value(json_object_get(object, key));
}

/* A running job whose warnings are a container's BackOff (with `backoff`) and a pod's first
 * failed scheduling, superseded since: the pod is bound. */
static void script_job_warned(bool backoff)
{
    json_t *js = jt_jobset("pw", 1);
    json_object_set_new(json_object_get(js, "status"), "replicatedJobsStatus",
                        jt_json("[{'name': 'pathways-head', 'ready': 1, 'active': 1},"
                                " {'name': 'worker', 'ready': 1, 'active': 1}]"));
    jt_get(JT_JOBSETS "/pw", js);
    jt_list(JT_PODS, "PodList",
            json_pack("[o, o]", jt_pod("pw", "worker", 0, 0, "Running", "tpu-a"),
                      jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu-1")));
    jt_list(JT_JOBS, "JobList", json_array());
    json_t *events = json_pack("[o]", jt_warning("Pod", "pw-worker-0-0-x0", "FailedScheduling",
                                                 "0/2 nodes are available", 3));
    if (backoff)
        json_array_append_new(events,
                              jt_warning("Pod", "pw-worker-0-0-x0", "BackOff", "restarting", 2));
    jt_list(JT_EVENTS, "EventList", events);
    jt_list(JT_WORKLOADS, "WorkloadList",
            json_pack("[o]", jt_workload("pw", true, "Admitted", "ok")));
}

static void script_running_job(void)
{
    script_job_warned(true);
}

static void test_inspect_json(void **state)
{
    (void)state;
    script_running_job();
    cli_result res;
    gcluster(&res, "inspect", "pw", "--format", "json");
    assert_int_equal(res.exit_code, 0);
    json_t *doc = parse_json(&res);
    static const char *const top[] = {"name",
                                      "namespace",
                                      "phase",
                                      "status",
                                      "detail",
                                      "compute",
                                      "topology",
                                      "pathways",
                                      "queue",
                                      "created",
                                      "finished",
                                      "restarts",
                                      "max_restarts",
                                      "diagnosis",
                                      "kueue",
                                      "replicated_jobs",
                                      "pods",
                                      "warnings",
                                      "resolved_warnings",
                                      "slices",
                                      NULL};
    assert_keys(doc, top);
    /* The diagnosis, as `job why -o json` gives it. */
    json_t *why = json_object_get(doc, "diagnosis");
    static const char *const why_keys[] = {"state", "reason", "cause", "fix", "evidence", NULL};
    assert_keys(why, why_keys);
    assert_string_equal(str(why, "state"), "Running");
    assert_string_equal(str(why, "reason"), "Starting");
    assert_string_equal(str(why, "cause"), "starting: 2/5 pods running (head 1/1, workers 1/4), 2 "
                                           "created; no restarts so far (at most 2)");
    assert_string_equal(str(why, "fix"), "nothing to do yet; gcluster job inspect pw shows each "
                                         "pod");
    assert_true(json_is_array(json_object_get(why, "evidence")));
    assert_string_equal(str(doc, "phase"), "Running");
    assert_string_equal(str(doc, "status"), "Running 2/5");
    assert_true(json_is_null(json_object_get(doc, "detail")));
    assert_string_equal(str(doc, "compute"), "v6e-16 x1");
    assert_string_equal(str(doc, "pathways"), "yes");
    assert_true(json_is_null(json_object_get(doc, "finished")));
    assert_int_equal(json_integer_value(json_object_get(doc, "max_restarts")), 2);

    json_t *kueue = json_object_get(doc, "kueue");
    static const char *const kueue_keys[] = {
        "workload", "admitted", "cluster_queue", "pod_sets", "reason", "message", NULL};
    assert_keys(kueue, kueue_keys);
    assert_true(json_is_true(json_object_get(kueue, "admitted")));
    json_t *pod_set = json_array_get(json_object_get(kueue, "pod_sets"), 0);
    assert_string_equal(str(pod_set, "name"), "pathways-head");
    assert_string_equal(str(json_object_get(pod_set, "flavors"), "cpu"), "pathways-flavor");

    json_t *rjob = json_array_get(json_object_get(doc, "replicated_jobs"), 1);
    static const char *const rjob_keys[] = {"name",      "replicas", "ready", "active",
                                            "succeeded", "failed",   NULL};
    assert_keys(rjob, rjob_keys);
    assert_int_equal(json_integer_value(json_object_get(rjob, "replicas")), 1);

    json_t *head = json_array_get(json_object_get(doc, "pods"), 0);
    static const char *const pod_keys[] = {"name",     "role", "slice",  "host", "phase",
                                           "restarts", "node", "reason", NULL};
    assert_keys(head, pod_keys);
    assert_string_equal(str(head, "role"), "pathways-head");
    assert_int_equal(json_integer_value(json_object_get(head, "slice")), 0);
    assert_string_equal(str(head, "node"), "cpu-1");
    assert_true(json_is_null(json_object_get(head, "reason")));

    /* Slice by slice: the worker's one slice runs (its one host of a v6e-16 slice of 4 does
     * not fill it), so it is a slice with problems. */
    json_t *workers = json_array_get(json_object_get(doc, "slices"), 1);
    static const char *const slice_keys[] = {
        "role", "slices", "hosts", "running", "succeeded", "without_pods", "with_problems", NULL};
    assert_keys(workers, slice_keys);
    assert_string_equal(str(workers, "role"), "worker");
    assert_int_equal(json_integer_value(json_object_get(workers, "hosts")), 4);
    assert_int_equal(json_integer_value(json_object_get(workers, "running")), 0);
    assert_int_equal(
        json_integer_value(json_array_get(json_object_get(workers, "with_problems"), 0)), 0);

    json_t *warning = json_array_get(json_object_get(doc, "warnings"), 0);
    static const char *const warning_keys[] = {"kind",      "object",  "reason", "count",
                                               "last_seen", "message", NULL};
    assert_keys(warning, warning_keys);
    assert_int_equal(json_integer_value(json_object_get(warning, "count")), 2);
    assert_int_equal(json_array_size(json_object_get(doc, "warnings")), 1);
    assert_int_equal(json_integer_value(json_object_get(doc, "resolved_warnings")), 1);
    json_decref(doc);
    cli_result_free(&res);
}

/* --format yaml is the same document; --manifest adds the manifest. */
static void test_inspect_yaml_with_manifest(void **state)
{
    (void)state;
    script_running_job();
    cli_result json_res;
    gcluster(&json_res, "inspect", "pw", "--format", "json", "--manifest");
    script_running_job();
    cli_result yaml_res;
    gcluster(&yaml_res, "inspect", "--name", "pw", "--format", "yaml", "--manifest");
    assert_int_equal(yaml_res.exit_code, 0);
    json_t *doc = parse_json(&json_res);
    json_t *manifest = json_object_get(doc, "manifest");
    assert_string_equal(str(manifest, "kind"), "JobSet");
    assert_null(json_object_get(manifest, "status"));
    gc_yaml_doc yaml;
    gc_error err;
    assert_int_equal(gc_yaml_load(yaml_res.out.data, yaml_res.out.len, "stdout", &yaml, &err), 0);
    assert_true(json_equal(gc_yaml_root(&yaml), doc));
    gc_yaml_doc_free(&yaml);
    json_decref(doc);
    cli_result_free(&json_res);
    cli_result_free(&yaml_res);
}

static void test_inspect_text(void **state)
{
    (void)state;
    script_running_job();
    cli_result res;
    gcluster(&res, "inspect", "pw");
    assert_int_equal(res.exit_code, 0);
    const char *out = res.out.data;
    assert_non_null(strstr(out, "Name:       pw\nNamespace:  ns1\nStatus:     Running 2/5\n"
                                "Cause:      starting: 2/5 pods running (head 1/1, workers 1/4), "
                                "2 created; no restarts so far (at most 2)\n"
                                "Fix:        nothing to do yet; gcluster job inspect pw shows "
                                "each pod\n"
                                "Compute:    v6e-16 x1, topology 4x4\nPathways:   yes\n"
                                "Queue:      user-queue\n"));
    assert_non_null(strstr(out, "Kueue workload jobset-pw-1a2b3:\n"
                                "  Admitted to ClusterQueue cluster-queue; flavors per pod set:\n"
                                "  pathways-head  cpu=pathways-flavor, memory=pathways-flavor\n"
                                "  worker         google.com/tpu=tpu-flavor\n"));
    assert_non_null(strstr(out, "Slices:\n"
                                "  pathways-head    1 slice of 1 pod: 1 fully running\n"
                                "  worker           1 slice of 4 pods: 0 fully running, "
                                "1 with problems\n"));
    assert_non_null(strstr(out, "  worker slice 0: 1 of 4 pods running\n"));
    assert_null(strstr(out, "ROLE"));
    assert_non_null(strstr(out, "Pod/pw-worker-0-0-x0: BackOff (x2): restarting\n"
                                "  (and 1 since resolved: retries that later succeeded)\n"));
    assert_null(strstr(out, "FailedScheduling"));
    cli_result_free(&res);

    /* Only warnings a later success superseded: no list of them, one line that says so. */
    script_job_warned(false);
    gcluster(&res, "inspect", "pw");
    assert_int_equal(res.exit_code, 0);
    assert_non_null(strstr(res.out.data, "\nRecent warnings: none unresolved (1 since resolved: "
                                         "retries that later succeeded)\n"));
    assert_null(strstr(res.out.data, "FailedScheduling"));
    cli_result_free(&res);

    /* --pods: a row for every pod. */
    script_running_job();
    gcluster(&res, "inspect", "pw", "--pods");
    assert_int_equal(res.exit_code, 0);
    assert_non_null(
        strstr(res.out.data, "  pathways-head  0      0     Running    0         cpu-1"));
    cli_result_free(&res);

    /* --manifest: the summary becomes YAML comments above the manifest. */
    script_running_job();
    gcluster(&res, "inspect", "pw", "--manifest");
    assert_int_equal(res.exit_code, 0);
    assert_non_null(strstr(res.out.data, "# Status:     Running 2/5\n"));
    assert_non_null(strstr(res.out.data, "\nkind: JobSet\n"));
    cli_result_free(&res);
}

static size_t count_lines(const char *text, const char *containing)
{
    size_t n = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line += !!line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *copy = gc_xasprintf("%.*s", (int)len, line);
        n += strstr(copy, containing) != NULL;
        free(copy);
    }
    return n;
}

/* A job of 1,025 pods reads in a screen; --pods and -o json carry every pod. */
static void test_inspect_big_job(void **state)
{
    (void)state;
    jt_script_big_job("big", 64, 16, 5, 40);
    cli_result res;
    gcluster(&res, "inspect", "big");
    assert_int_equal(res.exit_code, 0);
    const char *out = res.out.data;
    assert_non_null(strstr(out, "Slices:\n"
                                "  pathways-head    1 slice of 1 pod: 1 fully running\n"
                                "  worker           64 slices of 16 pods: 62 fully running, "
                                "2 with problems\n"
                                "Head pod:   big-pathways-head-0-0-x0 (Running, on cpu-np-0)\n"));
    assert_non_null(strstr(out, "  worker slice 5: 15 of 16 pods running\n"
                                "    Pending    Unschedulable          (unscheduled)              "
                                "big-worker-5-3-x53\n"
                                "  worker slice 40: 15 of 16 pods running\n"
                                "    Running    CrashLoopBackOff       tpu-40-0                   "
                                "big-worker-40-0-x400\n"));
    assert_true(count_lines(out, "") < 40);
    cli_result_free(&res);

    jt_script_big_job("big", 64, 16, 5, 40);
    gcluster(&res, "inspect", "big", "--pods");
    assert_int_equal(res.exit_code, 0);
    /* A row per pod, besides the problem slices above the table and the diagnosis. */
    assert_in_range(count_lines(res.out.data, " big-worker-"), 1024, 1024 + 4);
    assert_non_null(strstr(res.out.data, "  worker         63     15    Running    0         "
                                         "tpu-63-15                  big-worker-63-15-x645"));
    cli_result_free(&res);

    jt_script_big_job("big", 64, 16, 5, 40);
    gcluster(&res, "inspect", "big", "--format", "json");
    assert_int_equal(res.exit_code, 0);
    json_t *doc = parse_json(&res);
    assert_int_equal(json_array_size(json_object_get(doc, "pods")), 1025);
    json_decref(doc);
    cli_result_free(&res);
}

static void test_list_json_and_table(void **state)
{
    (void)state;
    json_t *queued = jt_jobset("wait", 1);
    json_object_set_new(json_object_get(queued, "spec"), "suspend", json_true());
    jt_list(JT_JOBSETS, "JobSetList", json_pack("[o, o]", jt_jobset("pw", 2), queued));
    jt_list(JT_WORKLOADS, "WorkloadList",
            json_pack("[o]", jt_workload("wait", false, "Pending", "no quota")));
    cli_result res;
    gcluster(&res, "list", "-o", "json");
    assert_int_equal(res.exit_code, 0);
    json_t *rows = parse_json(&res);
    assert_int_equal(json_array_size(rows), 2);
    static const char *const row_keys[] = {"name",    "namespace", "uid",     "phase",    "status",
                                           "detail",  "reason",    "compute", "pathways", "queue",
                                           "created", "completed", NULL};
    json_t *row = json_array_get(rows, 0);
    assert_keys(row, row_keys);
    assert_string_equal(str(row, "phase"), "Admitted");
    assert_string_equal(str(row, "reason"), "Starting");
    assert_string_equal(str(row, "compute"), "v6e-16 x2");
    assert_true(json_is_null(json_object_get(row, "completed")));
    /* JSON says why a queued job waits. */
    assert_string_equal(str(json_array_get(rows, 1), "detail"), "Pending: no quota");
    assert_string_equal(str(json_array_get(rows, 1), "reason"), "Pending");
    json_decref(rows);
    cli_result_free(&res);

    /* Wide: the queue and the diagnosis' short reason, from the JobSets and Workloads only. */
    json_t *running = jt_jobset("run", 1);
    json_object_set_new(json_object_get(running, "status"), "replicatedJobsStatus",
                        jt_json("[{'name': 'pathways-head', 'ready': 1},"
                                " {'name': 'worker', 'ready': 1}]"));
    json_t *missing = jt_jobset("lost", 1);
    json_object_set_new(json_object_get(missing, "spec"), "suspend", json_true());
    jt_list(JT_JOBSETS, "JobSetList", json_pack("[o, o]", running, missing));
    jt_list(JT_WORKLOADS, "WorkloadList",
            json_pack("[o]", jt_workload("lost", false, "Inadmissible",
                                         "LocalQueue user-queue doesn't exist")));
    gcluster(&res, "list", "-o", "wide");
    assert_int_equal(res.exit_code, 0);
    assert_non_null(strstr(res.out.data, "   QUEUE        REASON\n"));
    assert_non_null(strstr(res.out.data, "   user-queue   Running\n"));
    assert_non_null(strstr(res.out.data, "   user-queue   QueueMissing\n"));
    json_t *req = jt_requests();
    size_t n = json_array_size(req);
    /* The JobSets with the JobSet-less jobs' Jobs (one round trip, in either order), then the
     * Workloads: no read per job. */
    const char *first = json_string_value(json_object_get(json_array_get(req, n - 3), "path"));
    const char *second = json_string_value(json_object_get(json_array_get(req, n - 2), "path"));
    assert_true((!strcmp(first, JT_JOBSETS) && !strcmp(second, JT_JOBS)) ||
                (!strcmp(first, JT_JOBS) && !strcmp(second, JT_JOBSETS)));
    assert_string_equal(json_string_value(json_object_get(json_array_get(req, n - 1), "path")),
                        JT_WORKLOADS);
    json_decref(req);
    cli_result_free(&res);

    jt_list(JT_JOBSETS, "JobSetList", json_pack("[o]", jt_jobset("pw", 2)));
    gcluster(&res, "list");
    assert_int_equal(res.exit_code, 0);
    assert_non_null(strstr(res.out.data, "NAME   STATUS     COMPUTE     PATHWAYS   AGE"));
    assert_non_null(strstr(res.out.data, "\npw     Admitted   v6e-16 x2   yes        "));
    cli_result_free(&res);

    jt_list(JT_JOBSETS, "JobSetList", json_array());
    gcluster(&res, "list");
    assert_int_equal(res.exit_code, 0);
    assert_int_equal(res.out.len, 0);
    assert_string_equal(res.err.data, "No jobs found in ns1.\n");
    cli_result_free(&res);
}

static void test_cancel_json_and_text(void **state)
{
    (void)state;
    jt_answer("DELETE " JT_JOBSETS "/pw", json_pack("{s:o}", "json", jt_jobset("pw", 1)));
    jt_list("/api/v1/namespaces/ns1/persistentvolumeclaims", "PersistentVolumeClaimList",
            json_array());
    cli_result res;
    gcluster(&res, "cancel", "pw", "-o", "json");
    assert_int_equal(res.exit_code, 0);
    assert_string_equal(res.err.data, "");
    json_t *doc = parse_json(&res);
    static const char *const keys[] = {"name",         "namespace",        "uid", "gone",
                                       "pods_deleted", "gateways_removed", NULL};
    assert_keys(doc, keys);
    assert_string_equal(str(doc, "uid"), "uid-pw");
    assert_true(json_is_false(json_object_get(doc, "gone")));
    json_decref(doc);
    cli_result_free(&res);

    jt_answer("DELETE " JT_JOBSETS "/pw", json_pack("{s:o}", "json", jt_jobset("pw", 1)));
    gcluster(&res, "cancel", "pw");
    assert_string_equal(res.out.data, "Cancelled job pw: its Jobs and pods are being deleted (add "
                                      "--wait to wait for them).\n");
    cli_result_free(&res);
}

static void test_logs_all_prefixes_lines(void **state)
{
    (void)state;
    jt_get(JT_JOBSETS "/pw", jt_jobset("pw", 1));
    jt_list(JT_PODS, "PodList", json_pack("[o]", jt_pod("pw", "worker", 0, 0, "Running", "tpu-a")));
    jt_answer("GET " JT_PODS "/pw-worker-0-0-x0/log",
              jt_json("{'chunks': [{'data': 'hello\\nworld\\n'}]}"));
    cli_result res;
    gcluster(&res, "logs", "pw", "--all");
    assert_int_equal(res.exit_code, 0);
    assert_string_equal(res.out.data, "[pw-worker-0-0-x0/pathways-worker] hello\n"
                                      "[pw-worker-0-0-x0/pathways-worker] world\n");
    cli_result_free(&res);
}

static void test_missing_job(void **state)
{
    (void)state;
    cli_result res;
    gcluster(&res, "inspect", "nope");
    assert_int_equal(res.exit_code, 1);
    assert_string_equal(res.err.data, "gcluster: error: no job named nope in namespace ns1 "
                                      "(gcluster job list shows the jobs)\n");
    cli_result_free(&res);
}

/* Bad flags: exit 2, and the server hears nothing. */
static void test_bad_flags_send_nothing(void **state)
{
    (void)state;
    cli_result res;
    const char *bad[][6] = {
        {"list", "-o", "wide2"},
        {"list", "--status", "Sleeping"},
        {"inspect", "pw", "--format", "wide"},
        {"inspect", "pw", "-o", "json"},
        {"inspect", "Not_A_Name"},
        {"cancel", "pw", "--timeout", "5m"},
        {"cancel", "pw", "--wait", "--timeout", "soon"},
        {"logs", "pw", "--role", "chief"},
        {"logs", "pw", "--tail", "-3"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        gcluster_argv(&res, bad[i]);
        if (res.exit_code != 2)
            fail_msg("job %s %s: exit %d, want 2: %s", bad[i][0], bad[i][1], res.exit_code,
                     res.err.data);
        cli_result_free(&res);
    }
    assert_int_equal(jt_request_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_inspect_json, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_inspect_yaml_with_manifest, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_inspect_text, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_inspect_big_job, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_list_json_and_table, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_cancel_json_and_text, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_logs_all_prefixes_lines, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_missing_job, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_bad_flags_send_nothing, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
