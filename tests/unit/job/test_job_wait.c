/*
 * gc_job_wait against the scripted API server: one watch covering several jobs, the outcome of
 * each, the exit status (0 all there, 3 one failed or was cancelled, 1 timeout or missing), the
 * progress lines, and `gcluster job wait`'s output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/job.h"
#include "job_test.h"
#include "run_cli.h"

#include <poll.h>
#include <pty.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

/* Pathways JobSets of one slice: 5 pods, Running 5/5 when all run. */
static json_t *jobset(const char *name, const char *condition)
{
    json_t *js = jt_jobset(name, 1);
    if (condition)
        jt_condition(js, condition, condition, "jobset says so");
    return js;
}

static json_t *queued(const char *name)
{
    json_t *js = jobset(name, NULL);
    json_object_set_new(json_object_get(js, "spec"), "suspend", json_true());
    return js;
}

/* The pods of `job` (running unless `exit_code` >= 0: then the head ended with it), answered to
 * the list with that job's selector only, once. */
static void script_pods(const char *job, int running, int exit_code)
{
    json_t *items = json_array();
    json_t *head =
        jt_pod(job, "pathways-head", 0, 0, exit_code >= 0 ? "Failed" : "Running", "cpu-1");
    if (exit_code >= 0)
        jt_pod_exit(head, "workload-container", exit_code);
    json_array_append_new(items, head);
    for (int i = 0; i < running - 1; i++)
        json_array_append_new(items, jt_pod(job, "worker", 0, i, "Running", "tpu-1"));
    char *selector = gc_xasprintf("jobset.sigs.k8s.io/jobset-name=%s", job);
    jt_answer("GET " JT_PODS,
              json_pack("{s:{s:n, s:s}, s:{s:s, s:s, s:{s:s}, s:o}}", "when", "watch",
                        "labelSelector", selector, "json", "kind", "PodList", "apiVersion", "v1",
                        "metadata", "resourceVersion", "10", "items", items));
    free(selector);
}

static void script_watch(json_t *listed, json_t *events)
{
    jt_list(JT_JOBSETS, "JobSetList", listed);
    jt_watch(JT_JOBSETS, events);
}

static int wait_for(const char *const *names, size_t count, const char *state, const char *timeout,
                    gc_wait_result *out, gc_error *err)
{
    gc_wait_request r = {.names = names, .count = count, .state = state, .timeout = timeout};
    return gc_job_wait(jt_kube(), &r, jt_events(), out, err);
}

static void test_two_jobs_succeed(void **state)
{
    (void)state;
    script_watch(json_pack("[o, o]", jobset("a", NULL), jobset("b", "Completed")),
                 json_pack("[[s, o]]", "MODIFIED", jobset("a", "Completed")));
    script_pods("a", 5, -1);
    const char *names[] = {"a", "b"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(wait_for(names, 2, NULL, "30s", &res, &err), 0);
    assert_int_equal(res.count, 2);
    assert_string_equal(res.ns, "ns1");
    assert_int_equal(res.state, GC_WAIT_FOR_SUCCEEDED);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(res.jobs[i].outcome, GC_WAIT_REACHED);
        assert_int_equal(res.jobs[i].status.phase, GC_JOB_SUCCEEDED);
    }
    assert_false(res.timed_out);
    gc_wait_result_free(&res);
    /* One line per job, redrawn as a block on every change. */
    assert_string_equal(jt_recorded(), "progress: a: Running 5/5\nb: waiting for its JobSet\n"
                                       "progress: a: Running 5/5\nb: Succeeded\n"
                                       "progress: a: Succeeded\nb: Succeeded\n"
                                       "end\n");
    /* One list and one watch cover both jobs, by the label gcluster puts on its JobSets. */
    json_t *req = jt_requests();
    assert_int_equal(json_array_size(req), 3);
    assert_string_equal(jt_param(req, 0, "labelSelector"), "gcluster.google.com/workload in (a,b)");
    assert_string_equal(jt_param(req, 2, "watch"), "1");
    assert_string_equal(jt_param(req, 2, "labelSelector"), "gcluster.google.com/workload in (a,b)");
    json_decref(req);
}

static void test_one_failure_ends_the_wait_with_its_reason(void **state)
{
    (void)state;
    script_watch(json_pack("[o, o]", queued("a"), jobset("b", NULL)),
                 json_pack("[[s, o]]", "MODIFIED", jobset("b", "Failed")));
    script_pods("b", 5, -1);
    script_pods("b", 1, 3);
    const char *names[] = {"a", "b"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(wait_for(names, 2, NULL, NULL, &res, &err), GC_EXIT_JOB_FAILED);
    assert_string_equal(err.message, "job b failed: pod b-pathways-head-0-0-x0: container "
                                     "workload-container exited with code 3; jobset says so");
    assert_int_equal(res.jobs[0].outcome, GC_WAIT_PENDING);
    assert_int_equal(res.jobs[0].status.phase, GC_JOB_QUEUED);
    assert_int_equal(res.jobs[1].outcome, GC_WAIT_FAILED);
    gc_wait_result_free(&res);
}

static void test_finished_waits_for_every_job_and_still_says_which_failed(void **state)
{
    (void)state;
    script_watch(json_pack("[o, o]", jobset("a", NULL), jobset("b", "Failed")),
                 json_pack("[[s, o]]", "MODIFIED", jobset("a", "Completed")));
    script_pods("a", 5, -1);
    script_pods("b", 1, 7);
    const char *names[] = {"a", "b"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(wait_for(names, 2, "finished", NULL, &res, &err), GC_EXIT_JOB_FAILED);
    assert_string_equal(err.message, "job b failed: pod b-pathways-head-0-0-x0: container "
                                     "workload-container exited with code 7; jobset says so");
    assert_int_equal(res.jobs[0].outcome, GC_WAIT_REACHED);
    assert_int_equal(res.jobs[1].outcome, GC_WAIT_FAILED);
    gc_wait_result_free(&res);
}

static void test_timeout_names_the_jobs_not_there(void **state)
{
    (void)state;
    script_watch(json_pack("[o, o]", jobset("a", "Completed"), queued("b")), json_array());
    jt_list(JT_WORKLOADS, "WorkloadList",
            json_pack("[o]", jt_workload("b", false, "Pending", "waiting for quota")));
    const char *names[] = {"a", "b"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(wait_for(names, 2, NULL, "1s", &res, &err), GC_EXIT_RUNTIME);
    assert_string_equal(err.reason, "Timeout");
    assert_string_equal(err.message,
                        "timed out after 1s; not succeeded yet: b Queued (Pending: waiting for "
                        "quota); the jobs keep going (gcluster job inspect NAME follows one)");
    assert_true(res.timed_out);
    assert_int_equal(res.jobs[0].outcome, GC_WAIT_REACHED);
    assert_int_equal(res.jobs[1].outcome, GC_WAIT_PENDING);
    gc_wait_result_free(&res);
}

static void test_a_job_cancelled_while_waited_on(void **state)
{
    (void)state;
    json_t *terminating = jobset("a", NULL);
    json_object_set_new(json_object_get(terminating, "metadata"), "deletionTimestamp",
                        json_string("2026-01-02T06:00:00Z"));
    script_watch(json_pack("[o]", queued("a")), json_pack("[[s, o]]", "MODIFIED", terminating));
    const char *names[] = {"a"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(wait_for(names, 1, "running", NULL, &res, &err), GC_EXIT_JOB_FAILED);
    assert_string_equal(err.message,
                        "job a was cancelled (its JobSet was deleted) before it was running");
    assert_int_equal(res.jobs[0].outcome, GC_WAIT_CANCELLED);
    gc_wait_result_free(&res);
    /* One job is selected by its name. */
    json_t *req = jt_requests();
    assert_string_equal(jt_param(req, 0, "fieldSelector"), "metadata.name=a");
    json_decref(req);
}

static void test_a_deleted_job_is_cancelled_too(void **state)
{
    (void)state;
    script_watch(json_pack("[o, o]", jobset("a", "Completed"), queued("b")),
                 json_pack("[[s, o]]", "DELETED", queued("b")));
    const char *names[] = {"a", "b"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(wait_for(names, 2, "admitted", NULL, &res, &err), GC_EXIT_JOB_FAILED);
    assert_string_equal(err.message,
                        "job b was cancelled (its JobSet was deleted) before it was admitted");
    assert_string_equal(jt_recorded(), "progress: a: Succeeded\nb: waiting for its JobSet\n"
                                       "progress: a: Succeeded\nb: Queued - no Kueue Workload yet\n"
                                       "progress: a: Succeeded\nb: Cancelled\n"
                                       "end\n");
    gc_wait_result_free(&res);
}

static void test_running_and_admitted(void **state)
{
    (void)state;
    script_watch(json_pack("[o]", jobset("a", NULL)), json_array());
    script_pods("a", 5, -1);
    const char *names[] = {"a"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(wait_for(names, 1, "Running", "30s", &res, &err), 0);
    assert_int_equal(res.state, GC_WAIT_FOR_RUNNING);
    assert_string_equal(res.jobs[0].status.text, "Running 5/5");
    gc_wait_result_free(&res);

    script_watch(json_pack("[o]", jobset("a", NULL)), json_array());
    script_pods("a", 3, -1);
    assert_int_equal(wait_for(names, 1, "admitted", "30s", &res, &err), 0);
    assert_int_equal(res.jobs[0].outcome, GC_WAIT_REACHED);
    assert_string_equal(res.jobs[0].status.text, "Running 3/5");
    gc_wait_result_free(&res);
}

static void test_a_missing_job_is_one_clear_line(void **state)
{
    (void)state;
    script_watch(json_pack("[o]", jobset("a", NULL)), json_array());
    script_pods("a", 5, -1);
    const char *names[] = {"a", "nope"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(wait_for(names, 2, NULL, "30s", &res, &err), GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 404);
    assert_string_equal(err.message,
                        "no job named nope in namespace ns1 (gcluster job list shows the jobs)");
    gc_wait_result_free(&res);
}

/* A JobSet made without gcluster's label is not in the labelled list, but exists: the wait
 * then watches the namespace and picks the jobs out. */
static void test_a_jobset_without_the_label(void **state)
{
    (void)state;
    script_watch(json_pack("[o]", jobset("a", "Completed")), json_array());
    jt_get(JT_JOBSETS "/other", jobset("other", NULL));
    script_watch(json_pack("[o, o, o]", jobset("a", "Completed"), jobset("other", "Completed"),
                           jobset("unrelated", NULL)),
                 json_array());
    const char *names[] = {"a", "other"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(wait_for(names, 2, NULL, "30s", &res, &err), 0);
    assert_int_equal(res.jobs[1].outcome, GC_WAIT_REACHED);
    gc_wait_result_free(&res);
    json_t *req = jt_requests();
    assert_int_equal(json_array_size(req), 3);
    assert_string_equal(jt_param(req, 0, "labelSelector"),
                        "gcluster.google.com/workload in (a,other)");
    assert_null(jt_param(req, 2, "labelSelector"));
    assert_null(jt_param(req, 2, "fieldSelector"));
    json_decref(req);
}

static void test_bad_requests_send_nothing(void **state)
{
    (void)state;
    const char *dup[] = {"a", "a"};
    const char *bad_name[] = {"Not_A_Name"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(wait_for(dup, 2, NULL, NULL, &res, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message, "job a is named twice; name each job once");
    assert_int_equal(wait_for(dup, 1, "done", NULL, &res, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message, "--for done: use succeeded, finished, running or admitted");
    assert_int_equal(wait_for(dup, 1, NULL, "soon", &res, &err), GC_EXIT_USAGE);
    assert_int_equal(wait_for(bad_name, 1, NULL, NULL, &res, &err), GC_EXIT_USAGE);
    assert_int_equal(wait_for(dup, 0, NULL, NULL, &res, &err), GC_EXIT_USAGE);
    assert_int_equal(res.count, 0);
    assert_int_equal(jt_request_count(), 0);
}

static void run_wait(cli_result *res, const char *const *args)
{
    char *kubeconfig = gc_xasprintf("KUBECONFIG=%s", jt_kubeconfig());
    const char *env[] = {kubeconfig, "HOME=/nonexistent-home-for-tests", NULL};
    run_cli(res, args, env);
    free(kubeconfig);
}

/* The command prints every job's outcome (text or JSON) and exits 3 naming the failed one;
 * progress stays off a stderr that is not a terminal. */
static void test_cli_output_and_exit_status(void **state)
{
    (void)state;
    script_watch(json_pack("[o, o]", jobset("a", "Completed"), jobset("b", "Failed")),
                 json_array());
    script_pods("b", 1, 3);
    const char *args[] = {"job", "wait", "a", "b", "--for", "finished", "-o", "json", NULL};
    cli_result res;
    run_wait(&res, args);
    assert_int_equal(res.exit_code, 3);
    assert_string_equal(res.err.data,
                        "gcluster: error: job b failed: pod b-pathways-head-0-0-x0: container "
                        "workload-container exited with code 3; jobset says so\n");
    json_t *doc = json_loads(res.out.data, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_array_size(doc), 2);
    json_t *b = json_array_get(doc, 1);
    assert_string_equal(json_string_value(json_object_get(b, "name")), "b");
    assert_string_equal(json_string_value(json_object_get(b, "namespace")), "ns1");
    assert_string_equal(json_string_value(json_object_get(b, "for")), "finished");
    assert_string_equal(json_string_value(json_object_get(b, "outcome")), "failed");
    assert_string_equal(json_string_value(json_object_get(b, "phase")), "Failed");
    assert_string_equal(json_string_value(json_object_get(b, "status")), "Failed");
    assert_non_null(strstr(json_string_value(json_object_get(b, "detail")), "exited with code 3"));
    json_t *a = json_array_get(doc, 0);
    assert_string_equal(json_string_value(json_object_get(a, "outcome")), "reached");
    assert_true(json_is_null(json_object_get(a, "detail")));
    json_decref(doc);
    cli_result_free(&res);

    script_watch(json_pack("[o, o]", jobset("a", "Completed"), jobset("b", "Completed")),
                 json_array());
    const char *text_args[] = {"job", "wait", "a", "b", NULL};
    run_wait(&res, text_args);
    assert_int_equal(res.exit_code, 0);
    assert_string_equal(res.out.data, "a: Succeeded\nb: Succeeded\n");
    assert_string_equal(res.err.data, "");
    cli_result_free(&res);
}

/* Everything `gcluster ARGS` writes to a terminal (stdout and stderr), read until it exits. */
static char *run_on_terminal(const char *const *args)
{
    char *argv[16] = {GCLUSTER_CLI};
    for (size_t i = 0; args[i] && i < 14; i++)
        argv[i + 1] = (char *)args[i];
    char *kubeconfig = gc_xasprintf("KUBECONFIG=%s", jt_kubeconfig());
    char *envp[] = {kubeconfig, "HOME=/nonexistent-home-for-tests", "TERM=xterm", NULL};
    int terminal;
    struct winsize size = {.ws_row = 24, .ws_col = 100};
    pid_t pid = forkpty(&terminal, NULL, NULL, &size);
    assert_true(pid >= 0);
    if (pid == 0) {
        execve(GCLUSTER_CLI, argv, envp);
        _exit(127);
    }
    free(kubeconfig);
    gc_buf shown;
    gc_buf_init(&shown);
    /* At most a minute; the reads end when the program has exited and the terminal closes. */
    for (int waited_ms = 0; waited_ms < 60000;) {
        struct pollfd p = {.fd = terminal, .events = POLLIN};
        int ready = poll(&p, 1, 500);
        waited_ms += ready == 0 ? 500 : 0;
        if (ready == 0)
            continue;
        char chunk[4096];
        ssize_t n = read(terminal, chunk, sizeof(chunk));
        if (n <= 0)
            break;
        gc_buf_append(&shown, chunk, (size_t)n);
    }
    close(terminal);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return gc_buf_detach(&shown);
}

/* On a terminal each job has its own progress line, and the block is redrawn in place. */
static void test_cli_progress_lines_on_a_terminal(void **state)
{
    (void)state;
    script_watch(json_pack("[o, o]", jobset("a", "Completed"), queued("b")),
                 json_pack("[[s, o]]", "MODIFIED", jobset("b", "Completed")));
    jt_list(JT_WORKLOADS, "WorkloadList",
            json_pack("[o]", jt_workload("b", false, "Pending", "waiting for quota")));
    char *shown = run_on_terminal((const char *const[]){"job", "wait", "a", "b", NULL});
    /* Both lines at once, then the cursor back up one line, the lines cleared and redrawn. */
    const char *block = strstr(shown, "a: Succeeded\r\nb: Queued - Pending: waiting for quota");
    if (!block)
        fail_msg("no progress block in:\n%s", shown);
    assert_non_null(strstr(block, "\r\033[K\033[A\r\033[Ka: Succeeded\r\nb: Succeeded"));
    /* Then the result on stdout. */
    assert_non_null(strstr(block, "\r\na: Succeeded\r\nb: Succeeded\r\n"));
    free(shown);
}

static void test_cli_bad_flags(void **state)
{
    (void)state;
    static const char *const bad[][6] = {
        {"job", "wait", NULL},
        {"job", "wait", "a", "--for", "done", NULL},
        {"job", "wait", "a", "-o", "wide", NULL},
        {"job", "wait", "a", "--timeout", "soon", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        cli_result res;
        run_wait(&res, bad[i]);
        if (res.exit_code != 2)
            fail_msg("case %zu: exit %d, want 2: %s", i, res.exit_code, res.err.data);
        cli_result_free(&res);
    }
    assert_int_equal(jt_request_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_jobs_succeed, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_one_failure_ends_the_wait_with_its_reason, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(
            test_finished_waits_for_every_job_and_still_says_which_failed, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_timeout_names_the_jobs_not_there, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_a_job_cancelled_while_waited_on, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_a_deleted_job_is_cancelled_too, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_running_and_admitted, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_a_missing_job_is_one_clear_line, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_a_jobset_without_the_label, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_bad_requests_send_nothing, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_cli_output_and_exit_status, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_cli_progress_lines_on_a_terminal, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_cli_bad_flags, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
