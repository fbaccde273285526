/*
 * gc_job_logs against the scripted API server: which pods and containers it reads for each
 * flag, the lines it delivers with their pod and container, waiting for a job to start, and
 * flags it refuses before sending anything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/job.h"
#include "job_test.h"

#include <string.h>

#define HEAD     "pw-pathways-head-0-0-x0"
#define WORKER00 "pw-worker-0-0-x0"
#define WORKER10 "pw-worker-1-0-x10"

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

/* Every line as "pod/container: text", in arrival order; stops after `stop_after` if set. */
typedef struct collected {
    gc_buf lines;
    int count;
    int stop_after;
    int flushes;
} collected;

static int collect_line(void *ctx, const gc_log_line *line)
{
    collected *c = ctx;
    gc_buf_printf(&c->lines, "%s/%s: %.*s\n", line->pod, line->container, (int)line->len,
                  line->text);
    return ++c->count == c->stop_after;
}

static void count_flush(void *ctx)
{
    ((collected *)ctx)->flushes++;
}

/* Runs gc_job_logs into `c` (zeroed or used before: earlier lines are dropped). */
static int run_logs(const gc_logs_request *r, collected *c, gc_error *err)
{
    gc_buf_free(&c->lines);
    gc_buf_init(&c->lines);
    gc_log_sink sink = {.line = collect_line, .flush = count_flush, .ctx = c};
    return gc_job_logs(jt_kube(), r, &sink, jt_events(), err);
}

static const char *text(const collected *c)
{
    return c->lines.len ? c->lines.data : "";
}

/* A two-slice job with every pod running (`headless`: only the Pathways servers). */
static void script_running_job(bool headless)
{
    json_t *js = jt_jobset("pw", 2);
    if (headless)
        json_object_set_new(json_object_get(json_object_get(js, "metadata"), "annotations"),
                            "gcluster.google.com/pathways", json_string("headless"));
    jt_get(JT_JOBSETS "/pw", js);
    jt_list(JT_PODS, "PodList",
            json_pack("[o, o, o]", jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu-1"),
                      jt_pod("pw", "worker", 0, 0, "Running", "tpu-a"),
                      jt_pod("pw", "worker", 1, 0, "Running", "tpu-b")));
}

/* The log of one container: `data` in one chunk. */
static void script_log(const char *pod, const char *container, const char *data)
{
    char *key = gc_xasprintf("GET " JT_PODS "/%s/log", pod);
    jt_answer(key, json_pack("{s:{s:s}, s:[{s:s}]}", "when", "container", container, "chunks",
                             "data", data));
    free(key);
}

static void test_default_is_the_users_program(void **state)
{
    (void)state;
    script_running_job(false);
    script_log(HEAD, "workload-container", "step 1\nstep 2\nlast without newline");
    gc_logs_request r = {.name = "pw", .slice = -1, .host = -1, .tail = 20};
    collected c = {0};
    gc_error err;
    assert_int_equal(run_logs(&r, &c, &err), 0);
    assert_string_equal(text(&c), HEAD "/workload-container: step 1\n" HEAD
                                       "/workload-container: step 2\n" HEAD
                                       "/workload-container: last without newline\n");
    assert_true(c.flushes >= 1);
    json_t *req = jt_requests();
    assert_int_equal(json_array_size(req), 3); /* JobSet and pods together, then the log */
    assert_string_equal(jt_param(req, 2, "tailLines"), "20");
    assert_null(jt_param(req, 2, "follow"));
    json_decref(req);
    gc_buf_free(&c.lines);
}

static void test_headless_default_is_the_proxy(void **state)
{
    (void)state;
    script_running_job(true);
    script_log(HEAD, "pathways-proxy", "proxy up\n");
    gc_logs_request r = {.name = "pw", .slice = -1, .host = -1, .tail = -1};
    collected c = {0};
    gc_error err;
    assert_int_equal(run_logs(&r, &c, &err), 0);
    assert_string_equal(text(&c), HEAD "/pathways-proxy: proxy up\n");
    gc_buf_free(&c.lines);
}

static void test_worker_by_slice_and_host(void **state)
{
    (void)state;
    script_running_job(false);
    script_log(WORKER10, "pathways-worker", "slice one\n");
    gc_logs_request r = {.name = "pw", .role = "worker", .slice = 1, .host = 0, .tail = -1};
    collected c = {0};
    gc_error err;
    assert_int_equal(run_logs(&r, &c, &err), 0);
    assert_string_equal(text(&c), WORKER10 "/pathways-worker: slice one\n");
    gc_buf_free(&c.lines);

    /* A slice or host the job does not have is a mistake in the flags, not a wait. */
    script_running_job(false);
    gc_logs_request slice = {.name = "pw", .role = "worker", .slice = 2, .host = -1, .tail = -1};
    assert_int_equal(run_logs(&slice, &c, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message, "--slice 2: worker of job pw has slices 0 to 1");
    script_running_job(false);
    gc_logs_request host = {.name = "pw", .role = "worker", .slice = 1, .host = 4, .tail = -1};
    assert_int_equal(run_logs(&host, &c, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message, "--host 4: each slice of worker of job pw has hosts 0 to 3");

    /* A container the pods do not have names the flags to check. */
    script_running_job(false);
    gc_logs_request container = {
        .name = "pw", .role = "worker", .container = "tpu", .slice = -1, .host = -1, .tail = -1};
    assert_int_equal(run_logs(&container, &c, &err), GC_EXIT_USAGE);
    assert_true(strstr(err.message, "no tpu container in worker matches in job pw") != NULL);
    gc_buf_free(&c.lines);
}

/* Sorted lines, since streams of several containers interleave. */
static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *sorted_lines(const char *text_in)
{
    char *copy = gc_xstrdup(text_in);
    char *lines[32];
    size_t n = 0;
    for (char *save, *l = strtok_r(copy, "\n", &save); l && n < 32; l = strtok_r(NULL, "\n", &save))
        lines[n++] = l;
    qsort(lines, n, sizeof(*lines), compare_strings);
    gc_buf out;
    gc_buf_init(&out);
    for (size_t i = 0; i < n; i++)
        gc_buf_printf(&out, "%s\n", lines[i]);
    free(copy);
    return gc_buf_detach(&out);
}

static void test_all_pods_and_containers(void **state)
{
    (void)state;
    script_running_job(false);
    script_log(HEAD, "pathways-proxy", "p1\np2\n");
    script_log(HEAD, "pathways-rm", "rm\n");
    script_log(HEAD, "workload-container", "train\n");
    script_log(WORKER00, "pathways-worker", "w0\n");
    script_log(WORKER10, "pathways-worker", "w1\n");
    gc_logs_request r = {.name = "pw", .all = true, .slice = -1, .host = -1, .tail = -1};
    collected c = {0};
    gc_error err;
    assert_int_equal(run_logs(&r, &c, &err), 0);
    char *sorted = sorted_lines(text(&c));
    assert_string_equal(sorted,
                        HEAD "/pathways-proxy: p1\n" HEAD "/pathways-proxy: p2\n" HEAD
                             "/pathways-rm: rm\n" HEAD "/workload-container: train\n" WORKER00
                             "/pathways-worker: w0\n" WORKER10 "/pathways-worker: w1\n");
    free(sorted);
    assert_int_equal(jt_request_count(), 2 + 5);
    gc_buf_free(&c.lines);
}

/* Google's --main-only: the first pod (slice 0, host 0) of every replicated job, every container
 * of it; worker slice 1 is left out. */
static void test_main_only(void **state)
{
    (void)state;
    script_running_job(false);
    script_log(HEAD, "pathways-proxy", "p1\n");
    script_log(HEAD, "pathways-rm", "rm\n");
    script_log(HEAD, "workload-container", "train\n");
    script_log(WORKER00, "pathways-worker", "w0\n");
    gc_logs_request r = {.name = "pw", .main_only = true, .slice = -1, .host = -1, .tail = -1};
    collected c = {0};
    gc_error err;
    assert_int_equal(run_logs(&r, &c, &err), 0);
    char *sorted = sorted_lines(text(&c));
    assert_string_equal(sorted,
                        HEAD "/pathways-proxy: p1\n" HEAD "/pathways-rm: rm\n" HEAD
                             "/workload-container: train\n" WORKER00 "/pathways-worker: w0\n");
    free(sorted);
    assert_int_equal(jt_request_count(), 2 + 4);
    gc_buf_free(&c.lines);
    /* It picks its own pods and containers: with --role (or --all, --container, ...) it is a
     * contradiction, said before anything is sent. */
    gc_logs_request role = {
        .name = "pw", .main_only = true, .role = "worker", .slice = -1, .host = -1, .tail = -1};
    assert_int_equal(gc_job_logs_check(&role, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--main-only"));
}

static void test_sink_can_stop_the_streams(void **state)
{
    (void)state;
    script_running_job(false);
    script_log(HEAD, "workload-container", "one\ntwo\nthree\n");
    gc_logs_request r = {.name = "pw", .slice = -1, .host = -1, .tail = -1};
    collected c = {.stop_after = 1};
    gc_error err;
    assert_int_equal(run_logs(&r, &c, &err), 0);
    assert_string_equal(text(&c), HEAD "/workload-container: one\n");
    gc_buf_free(&c.lines);
}

/* A queued job, its pods not created yet. */
static void script_queued_job(void)
{
    json_t *js = jt_jobset("pw", 1);
    json_object_set_new(json_object_get(js, "spec"), "suspend", json_true());
    jt_get(JT_JOBSETS "/pw", js);
    jt_list(JT_PODS, "PodList", json_array());
    jt_list(JT_WORKLOADS, "WorkloadList",
            json_pack("[o]", jt_workload("pw", false, "Pending", "waiting for quota")));
}

static void test_job_not_started(void **state)
{
    (void)state;
    script_queued_job();
    gc_logs_request r = {.name = "pw", .slice = -1, .host = -1, .tail = -1};
    collected c = {0};
    gc_error err;
    assert_int_equal(run_logs(&r, &c, &err), GC_EXIT_RUNTIME);
    assert_string_equal(err.message, "job pw has not started yet (Queued: Pending: waiting for "
                                     "quota); add -f to wait for it");
    gc_buf_free(&c.lines);
}

static void test_follow_waits_for_the_job_to_start(void **state)
{
    (void)state;
    script_queued_job();
    jt_list(JT_PODS, "PodList", json_array());
    jt_watch(JT_PODS, json_pack("[[s, o], [s, o]]", "ADDED",
                                jt_pod("pw", "pathways-head", 0, 0, "Pending", NULL), "MODIFIED",
                                jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu-1")));
    jt_list(JT_PODS, "PodList",
            json_pack("[o]", jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu-1")));
    script_log(HEAD, "workload-container", "started\n");
    gc_logs_request r = {.name = "pw", .follow = true, .slice = -1, .host = -1, .tail = -1};
    collected c = {0};
    gc_error err;
    assert_int_equal(run_logs(&r, &c, &err), 0);
    assert_string_equal(jt_recorded(),
                        "notice: waiting for job pw to start (Queued: Pending: waiting for "
                        "quota)\n");
    assert_string_equal(text(&c), HEAD "/workload-container: started\n");
    json_t *req = jt_requests();
    size_t n = json_array_size(req);
    assert_string_equal(jt_param(req, n - 1, "follow"), "true");
    json_decref(req);
    gc_buf_free(&c.lines);
}

/* Following ends once every followed pod has ended. The check asks only for the job's ended
 * pods (Succeeded, Failed: empty while it runs), never again for every pod. */
static void test_follow_ends_when_the_pods_have_ended(void **state)
{
    (void)state;
    script_running_job(false);
    jt_answer("GET " JT_PODS "/" HEAD "/log",
              jt_json("{'when': {'container': 'workload-container'},"
                      " 'chunks': [{'data': 'step 1\\n'}], 'hold': 20}"));
    json_t *ended = jt_pod("pw", "pathways-head", 0, 0, "Succeeded", "cpu-1");
    jt_answer("GET " JT_PODS, json_pack("{s:{s:s}, s:{s:s, s:s, s:{}, s:[o]}}", "when",
                                        "fieldSelector", "status.phase=Succeeded", "json", "kind",
                                        "PodList", "apiVersion", "v1", "metadata", "items", ended));
    jt_answer("GET " JT_PODS,
              jt_json("{'when': {'fieldSelector': 'status.phase=Failed'},"
                      " 'json': {'kind': 'PodList', 'apiVersion': 'v1', 'metadata': {},"
                      " 'items': []}}"));
    gc_logs_request r = {.name = "pw", .follow = true, .slice = -1, .host = -1, .tail = -1};
    collected c = {0};
    gc_error err;
    assert_int_equal(run_logs(&r, &c, &err), 0);
    assert_string_equal(text(&c), HEAD "/workload-container: step 1\n");
    json_t *req = jt_requests();
    size_t lists = 0, checks = 0;
    for (size_t i = 0; i < json_array_size(req); i++) {
        const char *path = json_string_value(json_object_get(json_array_get(req, i), "path"));
        if (strcmp(path, JT_PODS))
            continue;
        const char *selector = jt_param(req, i, "fieldSelector");
        if (!selector)
            lists++;
        else
            checks += !strcmp(selector, "status.phase=Succeeded") ||
                      !strcmp(selector, "status.phase=Failed");
    }
    assert_int_equal(lists, 1); /* the first look, to choose the pods */
    assert_int_equal(checks, 2);
    json_decref(req);
    gc_buf_free(&c.lines);
}

static void test_bad_flags_send_nothing(void **state)
{
    (void)state;
    gc_error err;
    gc_logs_request role = {.name = "pw", .role = "chief", .slice = -1, .host = -1, .tail = -1};
    assert_int_equal(gc_job_logs_check(&role, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message, "--role chief: use head or worker");
    gc_logs_request both = {
        .name = "pw", .all = true, .container = "x", .slice = -1, .host = -1, .tail = -1};
    assert_int_equal(gc_job_logs_check(&both, &err), GC_EXIT_USAGE);
    assert_true(strstr(err.message, "drop --container or --all") != NULL);
    gc_logs_request tail = {.name = "pw", .slice = -1, .host = -1, .tail = -2};
    assert_int_equal(gc_job_logs_check(&tail, &err), GC_EXIT_USAGE);
    gc_logs_request since = {
        .name = "pw", .since = "5 minutes", .slice = -1, .host = -1, .tail = -1};
    assert_int_equal(gc_job_logs_check(&since, &err), GC_EXIT_USAGE);
    assert_true(strstr(err.message, "--since") != NULL);
    gc_logs_request name = {.name = "../secrets", .slice = -1, .host = -1, .tail = -1};
    assert_int_equal(gc_job_logs_check(&name, &err), GC_EXIT_USAGE);

    /* gc_job_logs itself refuses them the same way. */
    collected c = {0};
    assert_int_equal(run_logs(&role, &c, &err), GC_EXIT_USAGE);
    assert_int_equal(run_logs(&since, &c, &err), GC_EXIT_USAGE);
    assert_int_equal(jt_request_count(), 0);
    gc_buf_free(&c.lines);
}

static void test_missing_job(void **state)
{
    (void)state;
    gc_logs_request r = {.name = "nope", .slice = -1, .host = -1, .tail = -1};
    collected c = {0};
    gc_error err;
    assert_int_equal(run_logs(&r, &c, &err), GC_EXIT_RUNTIME);
    assert_string_equal(err.message,
                        "no job named nope in namespace ns1 (gcluster job list shows the jobs)");
    gc_buf_free(&c.lines);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_default_is_the_users_program, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_headless_default_is_the_proxy, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_worker_by_slice_and_host, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_main_only, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_all_pods_and_containers, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_sink_can_stop_the_streams, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_job_not_started, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_follow_waits_for_the_job_to_start, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_follow_ends_when_the_pods_have_ended, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(test_bad_flags_send_nothing, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_missing_job, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
