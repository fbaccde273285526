/*
 * job connect without a tunnel: how it judges a job from its JobSet, head pods and Workload
 * (waiting, ready, over, and why), what it does against the scripted API server before a head
 * pod is ready (a missing job, one that failed, one that stays queued past --wait, Ctrl-C, a
 * local port in use), and the flags it refuses before anything is sent. The tunnel itself is
 * tested by test_portforward_open (unit), the peer tier and tests/cluster/test_job_connect.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "connect/connect_status.h"
#include "gcluster/connect.h"
#include "gcluster/job.h"
#include "job_test.h"
#include "run_cli.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEAD "pw-pathways-head-0-0-x0"

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

/* --- judging the job --------------------------------------------------------------------- */

static json_t *list_of(json_t *item)
{
    json_t *items = json_array();
    if (item)
        json_array_append_new(items, item);
    return json_pack("{s:s, s:o}", "kind", "List", "items", items);
}

static json_t *running_head(const char *name, const char *uid, bool proxy_ready,
                            const char *created)
{
    json_t *pod = jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu-node-0");
    json_t *meta = json_object_get(pod, "metadata");
    json_object_set_new(meta, "name", json_string(name));
    json_object_set_new(meta, "uid", json_string(uid));
    json_object_set_new(meta, "creationTimestamp", json_string(created));
    /* A full Pathways job: the proxy is a native sidecar, so its status is an init one. */
    json_object_set_new(json_object_get(pod, "status"), "initContainerStatuses",
                        json_pack("[{s:s, s:b, s:{s:{}}}]", "name", "pathways-proxy", "ready",
                                  proxy_ready, "state", "running"));
    return pod;
}

static void judge(json_t *jobset, json_t *pods, json_t *workloads, connect_view *v)
{
    connect_judge("pw", jobset, pods, workloads, v);
    json_decref(jobset);
    json_decref(pods);
    json_decref(workloads);
}

static void test_judge_queued_says_why(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 1);
    json_object_set_new(json_object_get(js, "spec"), "suspend", json_true());
    connect_view v;
    judge(js, list_of(NULL),
          list_of(jt_workload("pw", false, "Pending", "couldn't assign flavors to pod set worker")),
          &v);
    assert_int_equal(v.state, JOB_CONNECT_WAIT);
    assert_true(v.queued);
    assert_string_equal(v.text, "queued: Pending: couldn't assign flavors to pod set worker");
}

static void test_judge_waits_for_scheduling(void **state)
{
    (void)state;
    json_t *pod = jt_pod("pw", "pathways-head", 0, 0, "Pending", NULL);
    json_object_set_new(json_object_get(pod, "status"), "conditions",
                        jt_json("[{'type': 'PodScheduled', 'status': 'False', 'message': "
                                "'0/3 nodes are available: 3 Insufficient cpu.'}]"));
    connect_view v;
    judge(jt_jobset("pw", 1), list_of(pod), NULL, &v);
    assert_int_equal(v.state, JOB_CONNECT_WAIT);
    assert_string_equal(v.text, "waiting for head pod " HEAD
                                " to be scheduled: 0/3 nodes are available: 3 Insufficient cpu.");
}

static void test_judge_waits_for_the_proxy(void **state)
{
    (void)state;
    json_t *pod = running_head(HEAD, "u1", false, "2026-01-01T00:00:00Z");
    json_t *proxy =
        json_array_get(json_object_get(json_object_get(pod, "status"), "initContainerStatuses"), 0);
    json_object_set_new(proxy, "state",
                        jt_json("{'waiting': {'reason': 'CrashLoopBackOff', 'message': "
                                "'back-off 10s'}}"));
    json_object_set_new(proxy, "lastState", jt_json("{'terminated': {'exitCode': 1}}"));
    connect_view v;
    judge(jt_jobset("pw", 1), list_of(pod), NULL, &v);
    assert_int_equal(v.state, JOB_CONNECT_WAIT);
    assert_string_equal(v.text, "head pod " HEAD " is running; waiting for its IFRT proxy to be "
                                "ready (CrashLoopBackOff: back-off 10s (last exit code 1))");
}

static void test_judge_ready(void **state)
{
    (void)state;
    connect_view v;
    judge(jt_jobset("pw", 1), list_of(running_head(HEAD, "u1", true, "2026-01-01T00:00:00Z")), NULL,
          &v);
    assert_int_equal(v.state, JOB_CONNECT_READY);
    assert_string_equal(v.pod, HEAD);
    assert_string_equal(v.uid, "u1");
}

/* A head pod whose proxy container (`list`: containers in a headless job, initContainers in a
 * full one) has `env` (JSON, or NULL for none) and `env_from`. */
static json_t *head_with_env(const char *list, const char *env, bool env_from)
{
    json_t *pod = running_head(HEAD, "u1", true, "2026-01-01T00:00:00Z");
    json_t *proxy = json_pack("{s:s}", "name", "pathways-proxy");
    if (env)
        json_object_set_new(proxy, "env", jt_json(env));
    if (env_from)
        json_object_set_new(proxy, "envFrom", jt_json("[{'configMapRef': {'name': 'proxy'}}]"));
    json_object_set_new(pod, "spec", json_pack("{s:[]}", "containers"));
    json_t *spec = json_object_get(pod, "spec");
    json_t *containers = json_object_get(spec, list);
    if (!containers) {
        containers = json_array();
        json_object_set_new(spec, list, containers);
    }
    json_array_append_new(containers, proxy);
    return pod;
}

static connect_proxy_credentials judged_credentials(json_t *pod)
{
    connect_view v;
    judge(jt_jobset("pw", 1), list_of(pod), NULL, &v);
    assert_int_equal(v.state, JOB_CONNECT_READY);
    return v.credentials;
}

/* The proxy serves plaintext gRPC only with IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS exactly
 * "true" (the last entry of that name wins, as in Kubernetes); one from a ConfigMap or Secret
 * cannot be known. */
static void test_judge_proxy_credentials(void **state)
{
    (void)state;
    const char *plain = "[{'name': 'IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS', 'value': 'true'}]";
    assert_int_equal(judged_credentials(head_with_env("containers", plain, false)),
                     JOB_PROXY_PLAINTEXT);
    assert_int_equal(judged_credentials(head_with_env("initContainers", plain, false)),
                     JOB_PROXY_PLAINTEXT);
    /* envFrom does not matter when env has it: env wins. */
    assert_int_equal(judged_credentials(head_with_env("containers", plain, true)),
                     JOB_PROXY_PLAINTEXT);
    assert_int_equal(judged_credentials(head_with_env("containers", NULL, false)), JOB_PROXY_ALTS);
    assert_int_equal(judged_credentials(head_with_env("containers",
                                                      "[{'name': 'XLA_FLAGS', "
                                                      "'value': 'true'}]",
                                                      false)),
                     JOB_PROXY_ALTS);
    /* An older XLA revision took "yes"; jaxlib's client and the proxy take only "true". */
    assert_int_equal(
        judged_credentials(head_with_env(
            "containers", "[{'name': 'IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS', 'value': 'yes'}]",
            false)),
        JOB_PROXY_ALTS);
    assert_int_equal(judged_credentials(head_with_env(
                         "containers",
                         "[{'name': 'IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS', 'value': 'true'}, "
                         "{'name': 'IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS', 'value': 'false'}]",
                         false)),
                     JOB_PROXY_ALTS);
    assert_int_equal(
        judged_credentials(head_with_env("containers",
                                         "[{'name': 'IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS', "
                                         "'valueFrom': {'configMapKeyRef': {'name': 'p', 'key': "
                                         "'k'}}}]",
                                         false)),
        JOB_PROXY_UNKNOWN);
    assert_int_equal(judged_credentials(head_with_env("containers", NULL, true)),
                     JOB_PROXY_UNKNOWN);
    /* Another container's variable is not the proxy's. */
    json_t *pod = head_with_env("containers", NULL, false);
    json_array_insert_new(json_object_get(json_object_get(pod, "spec"), "containers"), 0,
                          jt_json("{'name': 'jax', 'env': [{'name': "
                                  "'IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS', 'value': "
                                  "'true'}]}"));
    assert_int_equal(judged_credentials(pod), JOB_PROXY_ALTS);
}

/* A restart's old head pod is terminating while its successor runs: the successor counts. */
static void test_judge_picks_the_replacement(void **state)
{
    (void)state;
    json_t *old = running_head("pw-pathways-head-0-0-old", "u-old", true, "2026-01-01T00:00:00Z");
    json_object_set_new(json_object_get(old, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:05:00Z"));
    json_t *pods = list_of(old);
    json_array_append_new(
        json_object_get(pods, "items"),
        running_head("pw-pathways-head-0-0-new", "u-new", true, "2026-01-01T00:05:01Z"));
    connect_view v;
    judge(jt_jobset("pw", 1), pods, NULL, &v);
    assert_int_equal(v.state, JOB_CONNECT_READY);
    assert_string_equal(v.pod, "pw-pathways-head-0-0-new");

    json_t *restarting = jt_jobset("pw", 1);
    jt_condition(restarting, "RestartingJobSet", "Restarting", "");
    json_object_set_new(json_object_get(restarting, "status"), "restarts", json_integer(1));
    judge(restarting, list_of(NULL), NULL, &v);
    assert_int_equal(v.state, JOB_CONNECT_WAIT);
    assert_string_equal(v.text, "restarting (restart 1); waiting for the new head pod");
}

static void test_judge_over(void **state)
{
    (void)state;
    connect_view v;
    connect_judge("pw", NULL, NULL, NULL, &v);
    assert_int_equal(v.state, JOB_CONNECT_ENDED);
    assert_string_equal(v.text, "job pw no longer exists: it was cancelled (deleted)");

    json_t *deleting = jt_jobset("pw", 1);
    json_object_set_new(json_object_get(deleting, "metadata"), "deletionTimestamp",
                        json_string("2026-01-01T00:00:00Z"));
    judge(deleting, list_of(NULL), NULL, &v);
    assert_string_equal(v.text, "job pw is being deleted (it was cancelled)");

    json_t *failed = jt_jobset("pw", 1);
    jt_condition(failed, "Failed", "FailedJobs", "jobset failed because a job failed");
    judge(failed, list_of(NULL), NULL, &v);
    assert_int_equal(v.state, JOB_CONNECT_ENDED);
    assert_string_equal(v.text, "job pw failed: FailedJobs: jobset failed because a job failed");

    json_t *done = jt_jobset("pw", 1);
    jt_condition(done, "Completed", "AllJobsCompleted", "");
    judge(done, list_of(NULL), NULL, &v);
    assert_string_equal(v.text, "job pw succeeded; its Pathways servers have stopped");

    json_t *plain = jt_json("{'metadata': {'name': 'pw'}, 'spec': {'replicatedJobs': "
                            "[{'name': 'main-job', 'replicas': 1}]}}");
    judge(plain, list_of(NULL), NULL, &v);
    assert_int_equal(v.state, JOB_CONNECT_ENDED);
    assert_string_equal(v.text, "job pw is not a Pathways job: it has no pathways-head pod with an "
                                "IFRT proxy to connect to");
}

/* --- the loop, before any tunnel ------------------------------------------------------------ */

static int connect_to(const char *name, const char *wait, int stop_fd, gc_error *err)
{
    gc_connect_request r = {.name = name, .local_port = 0, .wait = wait, .stop_fd = stop_fd};
    gc_connect_result result;
    return gc_job_connect(jt_kube(), &r, NULL, jt_events(), &result, err);
}

static void test_missing_job(void **state)
{
    (void)state;
    gc_error err;
    assert_int_equal(connect_to("nope", "1m", -1, &err), GC_EXIT_RUNTIME);
    assert_string_equal(err.message,
                        "no job named nope in namespace ns1 (gcluster job list shows the jobs)");
}

static void test_failed_job_ends_it(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 1);
    jt_condition(js, "Failed", "FailedJobs", "jobset failed because a job failed");
    jt_get(JT_JOBSETS "/pw", js);
    jt_list(JT_PODS, "PodList", json_array());
    gc_error err;
    assert_int_equal(connect_to("pw", "1m", -1, &err), GC_EXIT_RUNTIME);
    assert_string_equal(err.message, "job pw failed: FailedJobs: jobset failed because a job "
                                     "failed; nothing left to connect to");
    /* Its head pods are asked for by the JobSet's labels. */
    json_t *requests = jt_requests();
    bool asked = false;
    for (size_t i = 0; i < json_array_size(requests); i++) {
        const char *selector = jt_param(requests, i, "labelSelector");
        asked = asked || (selector && !strcmp(selector, "jobset.sigs.k8s.io/jobset-name=pw,"
                                                        "jobset.sigs.k8s.io/replicatedjob-name="
                                                        "pathways-head"));
    }
    json_decref(requests);
    assert_true(asked);
}

/* A job Kueue holds back: the progress says why, and --wait bounds the wait. */
static void test_queued_job_past_wait(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 1);
    json_object_set_new(json_object_get(js, "spec"), "suspend", json_true());
    json_object_set_new(json_object_get(js, "metadata"), "uid", json_string("uid-pw"));
    jt_answer("GET " JT_JOBSETS "/pw", json_pack("{s:b, s:o}", "repeat", true, "json", js));
    jt_answer("GET " JT_PODS,
              jt_json("{'repeat': true, 'json': {'kind': 'PodList', 'items': []}}"));
    jt_answer("GET " JT_WORKLOADS,
              json_pack("{s:b, s:{s:s, s:[o]}}", "repeat", true, "json", "kind", "WorkloadList",
                        "items", jt_workload("pw", false, "Pending", "quota of cluster-queue")));
    gc_error err;
    assert_int_equal(connect_to("pw", "3s", -1, &err), GC_EXIT_RUNTIME);
    assert_string_equal(err.message,
                        "job pw has no head pod to forward to after --wait 3s (queued: Pending: "
                        "quota of cluster-queue); see `gcluster job inspect pw`, or wait longer "
                        "with --wait");
    assert_non_null(strstr(jt_recorded(), "progress: pw: queued: Pending: quota of cluster-queue"));
}

/* The caller's stop (Ctrl-C) ends a connect that waits, cleanly. */
static void test_stop_while_waiting(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 1);
    jt_answer("GET " JT_JOBSETS "/pw", json_pack("{s:b, s:o}", "repeat", true, "json", js));
    jt_answer("GET " JT_PODS,
              jt_json("{'repeat': true, 'json': {'kind': 'PodList', 'items': []}}"));
    int fds[2];
    assert_int_equal(pipe2(fds, O_NONBLOCK), 0);
    unsigned char sig = SIGINT;
    assert_int_equal(write(fds[1], &sig, 1), 1);
    gc_error err = {0};
    assert_int_equal(connect_to("pw", "1m", fds[0], &err), 0);
    close(fds[0]);
    close(fds[1]);
}

/* A port in use fails before anything is sent or waited for. */
static void test_port_in_use(void **state)
{
    (void)state;
    int busy = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(busy, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(busy, 1), 0);
    socklen_t len = sizeof(a);
    getsockname(busy, (struct sockaddr *)&a, &len);
    gc_connect_request r = {.name = "pw", .local_port = ntohs(a.sin_port), .stop_fd = -1};
    gc_connect_result result;
    gc_error err;
    assert_int_equal(gc_job_connect(jt_kube(), &r, NULL, jt_events(), &result, &err),
                     GC_EXIT_RUNTIME);
    char want[200];
    snprintf(want, sizeof(want),
             "cannot listen on 127.0.0.1 port %ld: it is in use (another job connect or kubectl "
             "port-forward?); pick a free one with --local-port",
             r.local_port);
    assert_string_equal(err.message, want);
    assert_int_equal(jt_request_count(), 0);
    close(busy);
}

/* --- flags ---------------------------------------------------------------------------------- */

static void refused(const gc_connect_request *r, const char *message)
{
    gc_error err;
    assert_int_equal(gc_job_connect_check(r, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message, message);
}

static void test_bad_requests(void **state)
{
    (void)state;
    refused(&(gc_connect_request){.name = "pw", .local_port = 70000},
            "--local-port 70000: a TCP port is 1 to 65535 (0: any free port)");
    refused(&(gc_connect_request){.name = "pw", .local_port = 1, .wait = "soon"},
            "--wait \"soon\" is not a duration; use a number of seconds (3600) or units h, m, s "
            "in that order (90s, 5m, 1h, 1h30m)");
    char *none[] = {"no-such-program-here", NULL};
    refused(&(gc_connect_request){.name = "pw", .local_port = 1, .command = none},
            "-- no-such-program-here: no such program on PATH; give the command's path or put "
            "it on PATH");
    gc_error err;
    assert_int_equal(gc_job_connect_check(&(gc_connect_request){.name = "pw",
                                                                .address = "no such "
                                                                           "host!"},
                                          &err),
                     GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--address no such host!: "));
    assert_int_equal(gc_job_connect_check(&(gc_connect_request){.name = "Bad_Name"}, &err),
                     GC_EXIT_USAGE);
}

/* --port takes kubectl port-forward's forms; a bad one, a local port given twice or the proxy's
 * own local port is refused, naming the flag. */
static void port_refused(const char *const *ports, size_t count, const char *message)
{
    refused(
        &(gc_connect_request){
            .name = "pw", .local_port = GC_CONNECT_PROXY_PORT, .ports = ports, .port_count = count},
        message);
}

static void test_port_flags(void **state)
{
    (void)state;
    gc_error err;
    const char *good[] = {"8888", "8080:8889", ":8890", "0:8891", "0:8891"};
    assert_int_equal(gc_job_connect_check(
                         &(gc_connect_request){
                             .name = "pw", .local_port = 29000, .ports = good, .port_count = 5},
                         &err),
                     0);
    const char *form = ": give REMOTE or LOCAL:REMOTE, ports 1 to 65535 (LOCAL 0, or :REMOTE: any "
                       "free local port), as in --port 8888 or --port 8080:8888";
    const char *bad[] = {"jupyter", "8888:", "70000", "0", "1:2:3", "-1:80", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        char want[256];
        snprintf(want, sizeof(want), "--port %s%s", bad[i], form);
        port_refused(&bad[i], 1, want);
    }
    port_refused((const char *[]){"8888", "8888:9999"}, 2,
                 "--port 8888:9999: local port 8888 is given twice; each --port needs its own "
                 "local port");
    port_refused((const char *[]){"29000"}, 1,
                 "--port 29000: local port 29000 is the proxy's (--local-port); pick another local "
                 "port, as in --port 29001:29000");
}

static void expect_usage(const char *const *args, const char *message)
{
    cli_result res;
    run_cli(&res, args, (const char *const[]){"KUBECONFIG=/nonexistent", NULL});
    assert_int_equal(res.exit_code, GC_EXIT_USAGE);
    if (!strstr(res.err.data, message))
        fail_msg("stderr lacks \"%s\":\n%s", message, res.err.data);
    cli_result_free(&res);
}

static void test_cli_refuses_before_sending(void **state)
{
    (void)state;
    expect_usage((const char *const[]){"job", "connect", NULL},
                 "job connect needs the job name: gcluster job connect NAME (or --name NAME)");
    expect_usage((const char *const[]){"job", "connect", "pw", "--env", "--", "true", NULL},
                 "--env prints the variables for a shell; with -- CMD they are set for CMD "
                 "itself");
    expect_usage((const char *const[]){"job", "connect", "pw", "extra", NULL},
                 "job connect takes one job name, got 2 arguments");
    expect_usage((const char *const[]){"job", "submit", "--name", "pw", "--compute-type", "v6e-16",
                                       "--pathways", "--pathways-gcs-location", "gs://bucket/p",
                                       "--command", "python3 train.py", "--image",
                                       "us-docker.pkg.dev/p/r/jax:1", "--connect", NULL},
                 "--connect reaches the IFRT proxy of a headless job: add --pathways-headless");
    expect_usage((const char *const[]){"job", "submit", "--name", "pw", "--compute-type", "v6e-16",
                                       "--pathways", "--pathways-gcs-location", "gs://bucket/p",
                                       "--pathways-headless", "--", "true", NULL},
                 "-- true: a command after -- runs with --connect only");
    expect_usage((const char *const[]){"job", "submit", "--name", "pw", "--compute-type", "v6e-16",
                                       "--pathways", "--pathways-gcs-location", "gs://bucket/p",
                                       "--pathways-headless", "--connect", "--dry-run-out", "-",
                                       NULL},
                 "--connect stays connected to the job it created: it does not go with "
                 "--dry-run-out");
    expect_usage(
        (const char *const[]){"job", "connect", "pw", "--port", "8888", "--port", "8888", NULL},
        "--port 8888: local port 8888 is given twice");
    expect_usage((const char *const[]){"job", "connect", "pw", "--port", "lab", NULL},
                 "--port lab: give REMOTE or LOCAL:REMOTE");
}

/* --help says what a JAX program needs that connect cannot give it, and what connect decides. */
static void test_help_names_what_a_jax_program_needs(void **state)
{
    (void)state;
    cli_result res;
    run_cli(&res, (const char *const[]){"job", "connect", "--help", NULL}, NULL);
    assert_int_equal(res.exit_code, 0);
    const char *want[] = {"must call\npathwaysutils.initialize()",
                          "jaxlib's client speaks ALTS gRPC unless "
                          "IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS=true",
                          "connect sets\nit for CMD too"};
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
        if (!strstr(res.out.data, want[i]))
            fail_msg("--help lacks \"%s\":\n%s", want[i], res.out.data);
    cli_result_free(&res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_judge_queued_says_why),
        cmocka_unit_test(test_judge_waits_for_scheduling),
        cmocka_unit_test(test_judge_waits_for_the_proxy),
        cmocka_unit_test(test_judge_ready),
        cmocka_unit_test(test_judge_proxy_credentials),
        cmocka_unit_test(test_judge_picks_the_replacement),
        cmocka_unit_test(test_judge_over),
        cmocka_unit_test_setup_teardown(test_missing_job, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_failed_job_ends_it, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_queued_job_past_wait, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_stop_while_waiting, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_port_in_use, jt_open, jt_close),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_port_flags),
        cmocka_unit_test(test_cli_refuses_before_sending),
        cmocka_unit_test(test_help_names_what_a_jax_program_needs),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
