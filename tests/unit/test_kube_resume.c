/*
 * Streams that outlive their connections, against the scripted loopback HTTPS server: log
 * streams resumed from their last line's time stamp with the repeated lines dropped (after a
 * cut, a stall, a container restart), a resume that cannot be made, and watches that reconnect
 * with backoff, re-list through failures and give up only at the caller's timeout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/kube.h"
#include "kube_test.h"
#include "test_events.h"

#include <stdlib.h>
#include <string.h>

#define LOG      "GET /api/v1/namespaces/ns1/pods/p/log"
#define POD      "GET /api/v1/namespaces/ns1/pods/p"
#define WATCHED  "/api/v1/namespaces/ns1/configmaps"
#define T0       "2026-01-01T00:00:00.500000000Z "
#define T1       "2026-01-01T00:00:01.100000000Z "
#define T2       "2026-01-01T00:00:01.500000000Z "
#define T3       "2026-01-01T00:00:02.000000000Z "
#define U1       "2026-01-01T00:00:06.000000000Z "
#define SECOND_1 "2026-01-01T00:00:01Z"

/* A pod whose container c runs since `since`, after an instance that started at `before`. */
#define RUNNING_POD(since)                                                                         \
    "{'json': {'kind': 'Pod', 'metadata': {'name': 'p'}, 'status': {'phase': 'Running', "          \
    "'containerStatuses': [{'name': 'c', 'restartCount': 0, 'state': {'running': {'startedAt': "   \
    "'" since "'}}}]}}}"
#define RESTARTED_POD(since, before)                                                               \
    "{'json': {'kind': 'Pod', 'metadata': {'name': 'p'}, 'status': {'phase': 'Running', "          \
    "'containerStatuses': [{'name': 'c', 'restartCount': 1, 'state': {'running': {'startedAt': "   \
    "'" since "'}}, 'lastState': {'terminated': {'startedAt': '" before "', 'exitCode': 1}}}]}}}"

static gc_kube *kube;
static test_events notices;

static int open_client(void **state)
{
    kube_test_env *env = *state;
    if (kube_test_env_reset(state))
        return -1;
    char *path = gc_xasprintf("%s/kubeconfig", env->tmp);
    kube_test_write_kubeconfig(path, &env->server, env->pki.ca, "ns1");
    test_events_init(&notices);
    gc_kube_options opts = {.kubeconfig = path, .events = &notices.events, .verbose = 1};
    gc_error err;
    int rc = gc_kube_open(&opts, &kube, &err);
    free(path);
    return rc;
}

static int close_client(void **state)
{
    (void)state;
    gc_kube_close(kube);
    test_events_free(&notices);
    return 0;
}

static const char *param(json_t *log, size_t i, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_array_get(log, i), "params"), key));
}

static const char *path_of(json_t *log, size_t i)
{
    return json_string_value(json_object_get(json_array_get(log, i), "path"));
}

#define MAX_POLLS 20

typedef struct lines {
    gc_buf text;
    int count;
    int want; /* following: keep_going says stop once this many lines came (or after MAX_POLLS) */
    int polls;
} lines;

static int on_line(size_t index, const char *line, size_t len, void *ctx)
{
    (void)index;
    lines *l = ctx;
    gc_buf_append(&l->text, line, len);
    gc_buf_putc(&l->text, '|');
    l->count++;
    return 0;
}

static bool keep_going(void *ctx)
{
    lines *l = ctx;
    return l->count < l->want && ++l->polls < MAX_POLLS;
}

static int read_logs(const gc_kube_log_options *opts, lines *l, gc_error *err)
{
    gc_kube_log_source source = {.pod = "p", .container = "c"};
    return gc_kube_logs(kube, &source, 1, opts, on_line, opts->follow ? keep_going : NULL, l, err);
}

/* A cut mid-line: the second request asks from the last line's second, and of what comes
 * again only what was not delivered is kept (three lines share one time stamp, two of them
 * were delivered). */
static void resume_after_cut(void **state, bool timestamps, const char *want)
{
    kube_test_env_script(*state, "{'" LOG "': ["
                                 "{'when': {'sinceTime': null}, 'chunks': [{'data': '" T0
                                 "zero\\n" T1 "one\\n" T2 "two-a\\n" T2 "two-b\\n" T2 "two-"
                                 "'}], 'abort': true},"
                                 "{'when': {'sinceTime': '" SECOND_1 "'}, 'chunks': [{'data': '" T1
                                 "one\\n" T2 "two-a\\n" T2 "two-b\\n'}, {'data': '" T2 "two-c\\n" T3
                                 "three\\n'}]}],"
                                 "'" POD "': [" RUNNING_POD("2026-01-01T00:00:00Z") "]}");
    gc_kube_log_options opts = {.tail_lines = 100, .timestamps = timestamps};
    lines l = {0};
    gc_buf_init(&l.text);
    gc_error err = {0};
    assert_int_equal(read_logs(&opts, &l, &err), 0);
    assert_string_equal(l.text.data, want);
    json_t *log = kube_test_server_log(&((kube_test_env *)*state)->server);
    assert_int_equal(json_array_size(log), 3);
    assert_string_equal(param(log, 0, "tailLines"), "100");
    assert_string_equal(param(log, 0, "timestamps"), "true");
    assert_null(param(log, 0, "sinceTime"));
    assert_string_equal(path_of(log, 1), "/api/v1/namespaces/ns1/pods/p");
    assert_string_equal(param(log, 2, "sinceTime"), SECOND_1);
    assert_string_equal(param(log, 2, "timestamps"), "true");
    assert_string_equal(param(log, 2, "container"), "c");
    assert_null(param(log, 2, "tailLines"));
    assert_null(param(log, 2, "follow"));
    json_decref(log);
    gc_buf_free(&l.text);
}

static void test_resume_drops_repeated_lines(void **state)
{
    resume_after_cut(state, false, "zero|one|two-a|two-b|two-c|three|");
}

static void test_resume_keeps_asked_for_timestamps(void **state)
{
    resume_after_cut(state, true,
                     T0 "zero|" T1 "one|" T2 "two-a|" T2 "two-b|" T2 "two-c|" T3 "three|");
}

/* A stream that stops sending mid-answer (without follow) is taken as broken and resumed. */
static void test_stalled_stream_is_resumed(void **state)
{
    kube_test_env_script(*state, "{'" LOG "': ["
                                 "{'when': {'sinceTime': null}, 'chunks': [{'data': '" T1
                                 "one\\n'}], 'hold': 30},"
                                 "{'when': {'sinceTime': '" SECOND_1 "'}, 'chunks': [{'data': '" T1
                                 "one\\n" T2 "two\\n'}]}],"
                                 "'" POD "': [" RUNNING_POD("2026-01-01T00:00:00Z") "]}");
    gc_kube_log_options opts = {.tail_lines = -1, .stall_seconds = 1};
    lines l = {0};
    gc_buf_init(&l.text);
    gc_error err = {0};
    assert_int_equal(read_logs(&opts, &l, &err), 0);
    assert_string_equal(l.text.data, "one|two|");
    assert_int_equal(test_events_count(&notices, "log stream p/c broke"), 1);
    gc_buf_free(&l.text);
}

/* The pod is gone when the stream is to be resumed: lines after the last one may be missing,
 * and the error says which. */
static void test_unresumable_stream_is_incomplete(void **state)
{
    kube_test_env_script(
        *state, "{'" LOG "': [{'chunks': [{'data': '" T1 "one\\n" T2 "two\\n'}], 'abort': true}],"
                "'" POD "': [{'status': 404, 'json': {'kind': 'Status', 'code': "
                "404, 'reason': 'NotFound', 'message': 'pods \\'p\\' not found'}}]}");
    gc_kube_log_options opts = {.tail_lines = -1};
    lines l = {0};
    gc_buf_init(&l.text);
    gc_error err = {0};
    assert_int_equal(read_logs(&opts, &l, &err), GC_EXIT_INCOMPLETE);
    assert_string_equal(l.text.data, "one|two|");
    if (!kube_test_contains(err.message, "p/c: reading the pod after the stream broke failed") ||
        !kube_test_contains(err.message, "not found") ||
        !kube_test_contains(err.message,
                            "lines after 2026-01-01T00:00:01.500000000Z may be missing"))
        fail_msg("%s", err.message);
    gc_buf_free(&l.text);
}

/* Following, the container restarts: its previous instance is read to its end, then the new
 * one from its first line, with a notice. */
static void test_follow_across_a_container_restart(void **state)
{
    kube_test_env_script(
        *state,
        "{'" LOG "': ["
        "{'when': {'sinceTime': null, 'previous': null}, 'chunks': [{'data': '" T1 "old-1\\n" T2
        "old-2\\n'}]},"
        "{'when': {'previous': 'true', 'sinceTime': '" SECOND_1 "'}, 'chunks': [{'data': '" T1
        "old-1\\n" T2 "old-2\\n" T3 "old-3\\n'}]},"
        "{'when': {'sinceTime': null, 'previous': null, 'follow': 'true'}, 'chunks': [{'data': '" U1
        "new-1\\n'}], 'hold': 30}],"
        "'" POD "': [" RESTARTED_POD("2026-01-01T00:00:05Z", "2026-01-01T00:00:00Z") "]}");
    gc_kube_log_options opts = {.follow = true, .tail_lines = -1};
    lines l = {.want = 4};
    gc_buf_init(&l.text);
    gc_error err = {0};
    assert_int_equal(read_logs(&opts, &l, &err), 0);
    assert_string_equal(l.text.data, "old-1|old-2|old-3|new-1|");
    assert_int_equal(test_events_count(&notices, "p/c: the container restarted"), 1);
    json_t *log = kube_test_server_log(&((kube_test_env *)*state)->server);
    assert_int_equal(json_array_size(log), 4);
    assert_string_equal(param(log, 0, "follow"), "true");
    assert_string_equal(param(log, 2, "previous"), "true");
    assert_null(param(log, 2, "follow"));
    assert_string_equal(param(log, 3, "follow"), "true");
    assert_null(param(log, 3, "sinceTime"));
    json_decref(log);
    gc_buf_free(&l.text);
}

/* Following through an API server that answers 503 for a while: reconnecting, said as a
 * notice, then every line once. */
static void test_follow_reconnects_through_errors(void **state)
{
    kube_test_env_script(
        *state,
        "{'" LOG "': ["
        "{'when': {'sinceTime': null}, 'chunks': [{'data': '" T1 "one\\n'}], 'abort': true},"
        "{'when': {'sinceTime': '" SECOND_1 "'}, 'chunks': [{'data': '" T1 "one\\n" T2
        "two\\n'}], 'hold': 30}],"
        "'" POD "': [{'status': 503, 'body': 'restarting'}, {'status': 503, 'body': "
        "'restarting'}, " RUNNING_POD("2026-01-01T00:00:00Z") "]}");
    gc_kube_log_options opts = {.follow = true, .tail_lines = -1};
    lines l = {.want = 2};
    gc_buf_init(&l.text);
    gc_error err = {0};
    assert_int_equal(read_logs(&opts, &l, &err), 0);
    assert_string_equal(l.text.data, "one|two|");
    if (test_events_count(&notices, "notice: log stream p/c: connection lost (HTTP 503 Service "
                                    "Unavailable); reconnecting in") < 1 ||
        test_events_count(&notices, "notice: log stream p/c: reconnected") != 1)
        fail_msg("%s", notices.lines.data);
    gc_buf_free(&l.text);
}

/* --- watches ---------------------------------------------------------------------------- */

#define LIST_ANSWER(rv)                                                                            \
    "{'when': {'watch': null}, 'json': {'kind': 'ConfigMapList', 'metadata': {'resourceVersion': " \
    "'" rv "'}, 'items': []}}"
#define ADDED_X                                                                                    \
    "{'when': {'watch': '1'}, 'chunks': [{'data': '{\\'type\\': \\'ADDED\\', \\'object\\': "       \
    "{\\'kind\\': \\'ConfigMap\\', \\'metadata\\': {\\'name\\': \\'x\\', \\'namespace\\': "        \
    "\\'ns1\\', \\'resourceVersion\\': \\'9\\'}}}\\n'}], 'hold': 30}"

static int until_added(enum gc_kube_event_type type, json_t *obj, void *ctx, gc_error *err)
{
    (void)obj, (void)ctx, (void)err;
    return type == GC_KUBE_ADDED ? GC_KUBE_STOP : 0;
}

/* Reset connections and 503s: the watch says it is reconnecting and carries on. (libcurl
 * itself sends a request again, unseen, when a reused connection is reset before answering, so
 * not every reset is an attempt.) */
static void test_watch_reconnects_with_backoff(void **state)
{
    kube_test_env_script(*state, "{'GET " WATCHED "': [" LIST_ANSWER(
                                     "5") ","
                                          "{'when': {'watch': '1'}, 'action': 'reset'},"
                                          "{'when': {'watch': '1'}, 'action': 'reset'},"
                                          "{'when': {'watch': '1'}, 'status': 503, 'body': 'busy'},"
                                          "{'when': {'watch': '1'}, 'status': 503, 'body': 'busy'},"
                                          " " ADDED_X "]}");
    gc_error err = {0};
    assert_int_equal(gc_kube_list_watch(kube, WATCHED, NULL, 60, until_added, NULL, &err), 0);
    size_t lost = test_events_count(&notices, "notice: connection to the API server lost");
    if (lost < 3 || test_events_count(&notices, "(attempt 1)") != 1 ||
        test_events_count(&notices, "(attempt 3)") != 1 ||
        test_events_count(&notices, "HTTP 503 Service Unavailable); reconnecting in") != 2 ||
        test_events_count(&notices, "notice: reconnected to the API server") != 1)
        fail_msg("%s", notices.lines.data);
    json_t *log = kube_test_server_log(&((kube_test_env *)*state)->server);
    assert_true(json_array_size(log) >= lost + 2);
    for (size_t i = 1; i < json_array_size(log); i++) {
        assert_string_equal(param(log, i, "resourceVersion"), "5");
        /* short server-side timeouts: a silent connection is noticed in half a minute */
        assert_in_range(atol(param(log, i, "timeoutSeconds")), 1, 20);
    }
    json_decref(log);
}

/* The list after a 410 fails more often than a single request retries: the watch lists again
 * after a pause instead of giving up. */
static void test_watch_relists_through_failures(void **state)
{
    kube_test_env_script(
        *state, "{'GET " WATCHED "': [" LIST_ANSWER(
                    "5") ","
                         "{'when': {'watch': '1'}, 'status': 410, 'json': {'kind': 'Status', "
                         "'code': 410, 'reason': 'Gone'}},"
                         "{'when': {'watch': null}, 'status': 503, 'body': 'busy'},"
                         "{'when': {'watch': null}, 'status': 503, 'body': 'busy'},"
                         "{'when': {'watch': null}, 'status': 503, 'body': 'busy'},"
                         "{'when': {'watch': null}, 'status': 503, 'body': 'busy'},"
                         "{'when': {'watch': null}, 'status': 503, 'body': 'busy'}," LIST_ANSWER(
                             "7") ", " ADDED_X "]}");
    gc_error err = {0};
    int rc = gc_kube_list_watch(kube, WATCHED, NULL, 60, until_added, NULL, &err);
    if (rc)
        fail_msg("%s\n%s", err.message, notices.lines.data);
    assert_int_equal(test_events_count(&notices, "notice: connection to the API server lost"), 1);
    json_t *log = kube_test_server_log(&((kube_test_env *)*state)->server);
    assert_string_equal(param(log, json_array_size(log) - 1, "resourceVersion"), "7");
    json_decref(log);
}

/* A server that never lets the watch through: the watch ends at the caller's timeout, as a
 * timeout, not as a connection error. */
static void test_watch_gives_up_only_at_the_timeout(void **state)
{
    kube_test_env_script(*state,
                         "{'GET " WATCHED "': [" LIST_ANSWER("5") ","
                                                                  "{'when': {'watch': '1'}, "
                                                                  "'action': 'reset', 'repeat': "
                                                                  "true}]}");
    gc_error err = {0};
    assert_int_equal(gc_kube_list_watch(kube, WATCHED, NULL, 2, until_added, NULL, &err),
                     GC_EXIT_RUNTIME);
    assert_string_equal(err.reason, "Timeout");
    assert_true(kube_test_contains(err.message, "gave up after 2 s"));
    assert_true(test_events_count(&notices, "reconnecting in") >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_resume_drops_repeated_lines, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_resume_keeps_asked_for_timestamps, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_stalled_stream_is_resumed, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_unresumable_stream_is_incomplete, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_follow_across_a_container_restart, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_follow_reconnects_through_errors, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_watch_reconnects_with_backoff, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_watch_relists_through_failures, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_watch_gives_up_only_at_the_timeout, open_client,
                                        close_client),
    };
    return cmocka_run_group_tests(tests, kube_test_env_setup, kube_test_env_teardown);
}
