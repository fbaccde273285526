/*
 * The subprocess runner, with real children (sh, cat, yes, sleep): exit statuses and signals,
 * stdin, output caps, time limits that stop the child's whole process group, helpers left
 * behind, and output that goes nowhere but the result.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/process.h"
#include "gcluster/sys.h"
#include "kube_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs `sh -c script` and returns the result (the caller frees it). */
static gc_process_result run_sh(const char *script, gc_process p)
{
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    p.argv = argv;
    gc_process_result r;
    gc_error err = {0};
    if (gc_process_run(&p, &r, &err) != 0)
        fail_msg("gc_process_run: %s", err.message);
    return r;
}

/* Whether process `pid` is gone (or a zombie nobody reaped yet: dead all the same). Waits up to
 * five seconds for it. */
static bool process_gone(pid_t pid)
{
    for (int i = 0; i < 500; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        char *stat = kube_test_read(path);
        const char *paren = stat ? strrchr(stat, ')') : NULL;
        bool gone = !stat || (paren && paren[1] == ' ' && paren[2] == 'Z');
        free(stat);
        if (gone)
            return true;
        gc_clock_sleep_ms(10);
    }
    return false;
}

static pid_t pid_in(const char *path)
{
    char *text = kube_test_read(path);
    pid_t pid = text ? (pid_t)atoi(text) : 0;
    free(text);
    return pid;
}

static void exit_status_and_signal(void **state)
{
    (void)state;
    gc_process_result r = run_sh("exit 3", (gc_process){0});
    assert_int_equal(r.exit_status, 3);
    assert_int_equal(r.signal, 0);
    assert_false(gc_process_succeeded(&r));
    char how[128];
    char *argv[] = {"sh", NULL};
    gc_process p = {.argv = argv};
    gc_process_describe(&r, &p, how, sizeof(how));
    assert_string_equal(how, "exited with status 3");
    gc_process_result_free(&r);

    r = run_sh("kill -USR1 $$", (gc_process){0});
    assert_int_equal(r.exit_status, -1);
    assert_int_equal(r.signal, SIGUSR1);
    gc_process_describe(&r, &p, how, sizeof(how));
    assert_non_null(strstr(how, "was killed by signal 10"));
    gc_process_result_free(&r);

    r = run_sh("true", (gc_process){0});
    assert_true(gc_process_succeeded(&r));
    gc_process_result_free(&r);
}

static void programs_that_cannot_start(void **state)
{
    const kube_test_env *env = *state;
    char *argv[] = {"gcluster-no-such-program", NULL};
    gc_process p = {.argv = argv};
    gc_process_result r;
    gc_error err = {0};
    assert_int_equal(gc_process_run(&p, &r, &err), 0);
    assert_int_equal(r.exec_errno, ENOENT);
    char how[128];
    gc_process_describe(&r, &p, how, sizeof(how));
    assert_string_equal(how, "was not found on PATH");
    gc_process_result_free(&r);

    char *not_executable = gc_xasprintf("%s/plain-file", env->tmp);
    kube_test_write(not_executable, "#!/bin/sh\n");
    p = (gc_process){.program = not_executable, .argv = argv};
    assert_int_equal(gc_process_run(&p, &r, &err), 0);
    assert_int_equal(r.exec_errno, EACCES);
    gc_process_describe(&r, &p, how, sizeof(how));
    assert_string_equal(how, "could not be started: Permission denied");
    gc_process_result_free(&r);
    free(not_executable);
}

static void stdin_bytes_reach_the_child(void **state)
{
    (void)state;
    gc_process_result r =
        run_sh("cat; echo end", (gc_process){.input = "one\ntwo\n", .input_len = 8});
    assert_string_equal(r.out.data, "one\ntwo\nend\n");
    gc_process_result_free(&r);

    /* More than a pipe holds, echoed back while it is written: neither side may block. */
    size_t size = 3u << 20;
    char *big = malloc(size);
    for (size_t i = 0; i < size; i++)
        big[i] = (char)('a' + i % 26);
    r = run_sh("cat", (gc_process){.input = big, .input_len = size, .max_stdout = size});
    assert_true(gc_process_succeeded(&r));
    assert_int_equal(r.out.len, size);
    assert_memory_equal(r.out.data, big, size);
    gc_process_result_free(&r);

    /* A child that reads none of it: the unread rest is dropped, and no SIGPIPE kills us. */
    r = run_sh("exit 0", (gc_process){.input = big, .input_len = size});
    assert_true(gc_process_succeeded(&r));
    gc_process_result_free(&r);
    free(big);

    /* Without input the child reads end of file at once, never our stdin. */
    r = run_sh("cat; echo read-to-end", (gc_process){0});
    assert_string_equal(r.out.data, "read-to-end\n");
    gc_process_result_free(&r);
}

static void output_is_capped(void **state)
{
    (void)state;
    gc_process_result r = run_sh("yes", (gc_process){.max_stdout = 4096});
    assert_true(r.too_much_output);
    assert_true(r.out.len <= 4096);
    assert_int_equal(r.signal, SIGKILL);
    assert_false(gc_process_succeeded(&r));
    gc_process_result_free(&r);

    /* stderr keeps its end, where the reason for a failure usually is. */
    r = run_sh("i=0; while [ $i -lt 2000 ]; do i=$((i+1)); echo line$i >&2; done; exit 1",
               (gc_process){.max_stderr = 100});
    assert_int_equal(r.exit_status, 1);
    assert_true(r.err.len <= 100);
    assert_true(r.err.len >= 90);
    assert_memory_equal(r.err.data + r.err.len - 9, "line2000\n", 9);
    char why[48];
    char *argv[] = {"sh", NULL};
    gc_process p = {.argv = argv};
    gc_process_explain(&r, &p, why, sizeof(why));
    assert_memory_equal(why, "exited with status 1: ", 22);
    assert_string_equal(why + strlen(why) - 8, "line2000");
    assert_int_equal(strlen(why), sizeof(why) - 1);
    gc_process_result_free(&r);
}

/* gcloud runs Python, which runs helpers: a time limit must stop all of them. */
static void timeout_stops_the_whole_group(void **state)
{
    const kube_test_env *env = *state;
    char *pidfile = gc_xasprintf("%s/grandchild.pid", env->tmp);
    char *script = gc_xasprintf("sleep 60 & echo $! > %s; wait", pidfile);
    gc_process_result r = run_sh(script, (gc_process){.timeout_ms = 300});
    assert_true(r.timed_out);
    assert_int_equal(r.signal, SIGTERM);
    pid_t grandchild = pid_in(pidfile);
    assert_true(grandchild > 0);
    assert_true(process_gone(grandchild));
    char how[128];
    char *argv[] = {"sh", NULL};
    gc_process p = {.argv = argv, .timeout_ms = 300};
    gc_process_describe(&r, &p, how, sizeof(how));
    assert_string_equal(how, "did not finish within 300 ms and was stopped");
    gc_process_result_free(&r);
    free(script);
    free(pidfile);
}

static void sigkill_follows_an_ignored_sigterm(void **state)
{
    (void)state;
    gc_process_result r = run_sh("trap '' TERM; sleep 60; sleep 60",
                                 (gc_process){.timeout_ms = 200, .grace_ms = 200});
    assert_true(r.timed_out);
    assert_int_equal(r.signal, SIGKILL);
    gc_process_result_free(&r);
}

/* A child that exits but leaves a helper holding its output open: the run ends anyway (not at
 * the time limit), and the helper goes with the group. */
static void helpers_left_behind_are_stopped(void **state)
{
    const kube_test_env *env = *state;
    char *pidfile = gc_xasprintf("%s/helper.pid", env->tmp);
    char *script = gc_xasprintf("sleep 60 & echo $! > %s; echo started", pidfile);
    gc_process_result r = run_sh(script, (gc_process){.timeout_ms = 30000});
    assert_false(r.timed_out);
    assert_true(gc_process_succeeded(&r));
    assert_string_equal(r.out.data, "started\n");
    assert_true(process_gone(pid_in(pidfile)));
    gc_process_result_free(&r);
    free(script);
    free(pidfile);
}

static void environment_is_added_for_the_child_only(void **state)
{
    (void)state;
    setenv("GC_TEST_REPLACED", "parent", 1);
    char *env[] = {"GC_TEST_ADDED=added value", "GC_TEST_REPLACED=child"};
    gc_process_result r = run_sh("echo \"$GC_TEST_ADDED|$GC_TEST_REPLACED\"",
                                 (gc_process){.env_add = env, .env_add_count = 2});
    assert_string_equal(r.out.data, "added value|child\n");
    assert_null(getenv("GC_TEST_ADDED"));
    assert_string_equal(getenv("GC_TEST_REPLACED"), "parent");
    gc_process_result_free(&r);
    unsetenv("GC_TEST_REPLACED");
}

/* What a child writes is captured and shown nowhere: not on our stdout, not on our stderr. */
static void output_is_never_echoed(void **state)
{
    const kube_test_env *env = *state;
    char *capture = gc_xasprintf("%s/our-output", env->tmp);
    int fd = open(capture, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    gc_process_result r = run_sh("echo OUT-MARKER; echo ERR-MARKER >&2; exit 4", (gc_process){0});
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    assert_string_equal(r.out.data, "OUT-MARKER\n");
    assert_string_equal(r.err.data, "ERR-MARKER\n");
    char *ours = kube_test_read(capture);
    assert_non_null(ours);
    assert_string_equal(ours, "");
    free(ours);
    gc_process_result_free(&r);
    free(capture);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exit_status_and_signal),
        cmocka_unit_test(programs_that_cannot_start),
        cmocka_unit_test(stdin_bytes_reach_the_child),
        cmocka_unit_test(output_is_capped),
        cmocka_unit_test(timeout_stops_the_whole_group),
        cmocka_unit_test(sigkill_follows_an_ignored_sigterm),
        cmocka_unit_test(helpers_left_behind_are_stopped),
        cmocka_unit_test(environment_is_added_for_the_child_only),
        cmocka_unit_test(output_is_never_echoed),
    };
    return cmocka_run_group_tests(tests, kube_test_env_setup_dir, kube_test_env_teardown);
}
