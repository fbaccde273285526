/*
 * A server that answers without end cannot hold a command: blanks dripped into a list answer do
 * not count as progress (JSON allows any number of them), and a list that keeps arriving has a
 * deadline of its own (five request timeouts); both are set with --request-timeout. Every drip
 * here is bounded (the server stops after 20 s), and each command must end well before that.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/sys.h"
#include "job_test.h"
#include "kube_test.h"
#include "run_cli.h"

#include <string.h>

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

static long long run_timed(cli_result *res, const char *const *args)
{
    char kubeconfig[600];
    snprintf(kubeconfig, sizeof(kubeconfig), "KUBECONFIG=%s", jt_kubeconfig());
    const char *env[] = {"HOME=/nonexistent-home-for-tests", kubeconfig, NULL};
    long long start = gc_clock_ms();
    run_cli(res, args, env);
    return gc_clock_ms() - start;
}

/* A 200 that starts a node list, then drips a blank every 0.2 s for 20 s (each attempt). */
static void script_blank_drip(void)
{
    jt_answer(
        "GET /api/v1/nodes",
        jt_json(
            "{'repeat': true, 'headers': {'Content-Type': 'application/json'},"
            " 'chunks': [{'data': '{\\\"kind\\\": \\\"NodeList\\\", \\\"items\\\": [', 'delay': 0},"
            "  {'data': ' ', 'delay': 0.2, 'times': 100}]}"));
}

static void blanks_are_not_progress(void **state)
{
    (void)state;
    script_blank_drip();
    cli_result res;
    long long ms = run_timed(
        &res, (const char *const[]){"cluster", "describe", "--request-timeout", "1s", NULL});
    assert_int_equal(res.exit_code, 1);
    if (!strstr(res.err.data, "blanks"))
        fail_msg("the message does not say why: %s", res.err.data);
    /* 1 s without content per attempt, a few attempts with backoff: far below the 20 s drip. */
    if (ms > 12000)
        fail_msg("ended after %lld ms: the blanks held it", ms);
    cli_result_free(&res);
}

/* Items that keep coming, one every 0.2 s, never closing the list: the list's deadline. */
static void a_list_without_end_has_a_deadline(void **state)
{
    (void)state;
    jt_answer(
        "GET /api/v1/nodes",
        jt_json(
            "{'repeat': true, 'headers': {'Content-Type': 'application/json'},"
            " 'chunks': [{'data': '{\\\"kind\\\": \\\"NodeList\\\", \\\"items\\\": [', 'delay': 0},"
            "  {'data': '{\\\"metadata\\\": {\\\"name\\\": \\\"n\\\"}},', 'delay': 0.2,"
            "   'times': 100}]}"));
    cli_result res;
    long long ms = run_timed(
        &res, (const char *const[]){"cluster", "describe", "--request-timeout", "1s", NULL});
    assert_int_equal(res.exit_code, 1);
    if (!strstr(res.err.data, "did not end within 5 s") ||
        !strstr(res.err.data, "--request-timeout"))
        fail_msg("the message does not name the limit and the flag: %s", res.err.data);
    if (ms > 12000)
        fail_msg("ended after %lld ms: the list held it", ms);
    cli_result_free(&res);
}

/* A bad value is bad input, refused before anything is sent. */
static void a_bad_timeout_is_refused_first(void **state)
{
    (void)state;
    static const char *const bad[] = {"0s", "soon", "-5s", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        cli_result res;
        run_timed(&res,
                  (const char *const[]){"cluster", "describe", "--request-timeout", bad[i], NULL});
        assert_int_equal(res.exit_code, 2);
        if (!strstr(res.err.data, "--request-timeout"))
            fail_msg("%s: the message does not name the flag: %s", bad[i], res.err.data);
        cli_result_free(&res);
    }
    assert_int_equal(jt_request_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(blanks_are_not_progress, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(a_list_without_end_has_a_deadline, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(a_bad_timeout_is_refused_first, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
