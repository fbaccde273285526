/*
 * Exec credential plugins, run for real: tests/unit/support/programs/fake_exec_plugin.c checks the
 * KUBERNETES_EXEC_INFO it receives, counts its runs in a file and prints an ExecCredential (or
 * fails in the ways real plugins fail).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/kube.h"
#include "kube/internal.h"
#include "kube_test.h"
#include "test_events.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PLUGIN      GCLUSTER_TEST_PROGRAMS_DIR "/fake_exec_plugin"
#define V1          "client.authentication.k8s.io/v1"
#define V1BETA1     "client.authentication.k8s.io/v1beta1"
#define LEAK_MARKER "SECRET-STDOUT-SHOULD-NOT-LEAK"
#define CA_TEXT     "-----BEGIN CERTIFICATE-----\nnot really\n-----END CERTIFICATE-----\n"

static char *tmp;

static int setup(void **state)
{
    (void)state;
    tmp = kube_test_tmpdir();
    setenv("HOME", tmp, 1);
    unsetenv("KUBECONFIG");
    /* interactiveMode IfAvailable must see "not a terminal", wherever the tests run. */
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    close(null);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kube_test_rmtree(tmp);
    return 0;
}

static char *path_in_tmp(const char *name)
{
    char *p = gc_xasprintf("%s/%s", tmp, name);
    unlink(p);
    return p;
}

/* A kubeconfig whose only user runs `exec` (YAML lines indented under "exec:"). */
static char *write_config(const char *name, const char *exec)
{
    char *ca_path = path_in_tmp("ca-for-info.pem");
    kube_test_write(ca_path, CA_TEXT);
    char *ca = kube_test_base64_file(ca_path);
    char *path = path_in_tmp(name);
    kube_test_write(path,
                    "current-context: ctx\n"
                    "clusters:\n"
                    "- name: c\n"
                    "  cluster:\n"
                    "    server: https://127.0.0.1:1\n"
                    "    certificate-authority-data: %s\n"
                    "    extensions:\n"
                    "    - name: client.authentication.k8s.io/exec\n"
                    "      extension: {audience: test-aud}\n"
                    "users:\n"
                    "- name: u\n"
                    "  user:\n"
                    "    exec:\n%s"
                    "contexts:\n"
                    "- {name: ctx, context: {cluster: c, user: u}}\n",
                    ca, exec);
    free(ca);
    free(ca_path);
    return path;
}

typedef struct run {
    gc_kube *k;
    gc_error err;
    test_events events;
} run;

/* The clients' wall clock: the real one moved on by `clock_ahead` seconds, so a test can let a
 * credential expire without waiting for it. */
static time_t clock_ahead;

static time_t test_wall_clock(void)
{
    return time(NULL) + clock_ahead;
}

static int open_config(run *r, const char *config, int verbose, int timeout)
{
    memset(r, 0, sizeof(*r));
    test_events_init(&r->events);
    clock_ahead = 0;
    gc_kube_options opts = {.kubeconfig = config,
                            .verbose = verbose,
                            .events = &r->events.events,
                            .exec_timeout_seconds = timeout,
                            .wall_clock = test_wall_clock};
    return gc_kube_open(&opts, &r->k, &r->err);
}

static int ensure(run *r)
{
    return kube_auth_ensure(r->k, &r->err);
}

static void finish(run *r)
{
    gc_kube_close(r->k);
    test_events_free(&r->events);
}

static void test_v1_token_and_exec_info(void **state)
{
    (void)state;
    char *count = path_in_tmp("count-v1");
    char *dump = path_in_tmp("dump-v1.json");
    char *exec =
        gc_xasprintf("      apiVersion: " V1 "\n"
                     "      command: " PLUGIN "\n"
                     "      args: [--expect-api-version=" V1 ", --expect-interactive=false,"
                     " --count-file=%s, --dump=%s, --expires-in=3600]\n"
                     "      env:\n"
                     "      - {name: FAKE_PLUGIN_ENV, value: from-kubeconfig}\n"
                     "      - {name: FAKE_SECOND, value: two words}\n"
                     "      provideClusterInfo: true\n"
                     "      interactiveMode: IfAvailable\n",
                     count, dump);
    char *config = write_config("v1.yaml", exec);
    run r;
    assert_int_equal(open_config(&r, config, 0, 0), 0);
    assert_int_equal(kube_test_count(count), 0); /* opening runs nothing */
    assert_int_equal(ensure(&r), 0);
    assert_string_equal(r.k->cred.authorization, "Bearer tok-1");
    assert_int_equal(kube_test_count(count), 1);

    json_t *seen = json_load_file(dump, 0, NULL);
    assert_non_null(seen);
    json_t *info = json_object_get(seen, "exec_info");
    assert_string_equal(json_string_value(json_object_get(info, "apiVersion")), V1);
    assert_string_equal(json_string_value(json_object_get(info, "kind")), "ExecCredential");
    json_t *spec = json_object_get(info, "spec");
    assert_true(json_is_false(json_object_get(spec, "interactive")));
    json_t *cluster = json_object_get(spec, "cluster");
    assert_string_equal(json_string_value(json_object_get(cluster, "server")),
                        "https://127.0.0.1:1");
    char *ca_path = path_in_tmp("ca-check.pem");
    kube_test_write(ca_path, CA_TEXT);
    char *ca = kube_test_base64_file(ca_path);
    assert_string_equal(json_string_value(json_object_get(cluster, "certificate-authority-data")),
                        ca);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(cluster, "config"), "audience")),
        "test-aud");
    json_t *env = json_object_get(seen, "env");
    assert_string_equal(json_string_value(json_object_get(env, "FAKE_PLUGIN_ENV")),
                        "from-kubeconfig");
    assert_string_equal(json_string_value(json_object_get(env, "FAKE_SECOND")), "two words");
    json_t *argv = json_object_get(seen, "argv");
    assert_int_equal(json_array_size(argv), 6);
    assert_string_equal(json_string_value(json_array_get(argv, 2)), "--expect-interactive=false");
    /* The env entries went to the plugin only. */
    assert_null(getenv("FAKE_PLUGIN_ENV"));

    /* Cached until it expires in an hour: no second run. */
    assert_int_equal(ensure(&r), 0);
    assert_int_equal(ensure(&r), 0);
    assert_string_equal(r.k->cred.authorization, "Bearer tok-1");
    assert_int_equal(kube_test_count(count), 1);
    assert_int_equal(r.k->exec_runs, 1);

    json_decref(seen);
    finish(&r);
    free(ca);
    free(ca_path);
    free(config);
    free(exec);
    free(dump);
    free(count);
}

static void test_v1beta1_defaults(void **state)
{
    (void)state;
    char *dump = path_in_tmp("dump-beta.json");
    char *exec = gc_xasprintf("      apiVersion: " V1BETA1 "\n"
                              "      command: " PLUGIN "\n"
                              "      args: [--expect-api-version=" V1BETA1 ", --dump=%s]\n",
                              dump);
    char *config = write_config("beta.yaml", exec);
    run r;
    assert_int_equal(open_config(&r, config, 0, 0), 0);
    assert_int_equal(ensure(&r), 0);
    assert_string_equal(r.k->cred.authorization, "Bearer tok-1");
    assert_int_equal(r.k->cred.expiry, 0);
    json_t *seen = json_load_file(dump, 0, NULL);
    json_t *spec = json_object_get(json_object_get(seen, "exec_info"), "spec");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(seen, "exec_info"), "apiVersion")),
        V1BETA1);
    assert_true(json_is_false(json_object_get(spec, "interactive")));
    /* provideClusterInfo is off: no cluster. */
    assert_null(json_object_get(spec, "cluster"));
    json_decref(seen);
    finish(&r);
    free(config);
    free(exec);
    free(dump);
}

static char *token_exec(const char *count, const char *extra)
{
    return gc_xasprintf("      apiVersion: " V1 "\n"
                        "      command: " PLUGIN "\n"
                        "      args: [--count-file=%s%s]\n"
                        "      interactiveMode: Never\n",
                        count, extra);
}

static void test_expired_credential_is_refreshed(void **state)
{
    (void)state;
    char *count = path_in_tmp("count-expired");
    char *exec = token_exec(count, ", --expires-in=-5");
    char *config = write_config("expired.yaml", exec);
    run r;
    assert_int_equal(open_config(&r, config, 0, 0), 0);
    assert_int_equal(ensure(&r), 0);
    assert_string_equal(r.k->cred.authorization, "Bearer tok-1");
    assert_int_equal(ensure(&r), 0);
    assert_string_equal(r.k->cred.authorization, "Bearer tok-2");
    assert_int_equal(kube_test_count(count), 2);
    finish(&r);
    free(config);
    free(exec);

    /* Valid for an hour: reused until the client's clock passes its expiry (moved on, not
     * waited for), then fetched again. */
    unlink(count);
    exec = token_exec(count, ", --expires-in=3600");
    config = write_config("expiring.yaml", exec);
    assert_int_equal(open_config(&r, config, 0, 0), 0);
    assert_int_equal(ensure(&r), 0);
    assert_int_equal(ensure(&r), 0);
    clock_ahead = 3540; /* a minute before it expires */
    assert_int_equal(ensure(&r), 0);
    assert_string_equal(r.k->cred.authorization, "Bearer tok-1");
    assert_int_equal(kube_test_count(count), 1);
    clock_ahead = 3601;
    assert_int_equal(ensure(&r), 0);
    assert_string_equal(r.k->cred.authorization, "Bearer tok-2");
    assert_int_equal(kube_test_count(count), 2);
    finish(&r);
    free(config);
    free(exec);
    free(count);
}

static void test_without_expiry_cached_until_rejected(void **state)
{
    (void)state;
    char *count = path_in_tmp("count-forever");
    char *exec = token_exec(count, "");
    char *config = write_config("forever.yaml", exec);
    run r;
    assert_int_equal(open_config(&r, config, 0, 0), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ensure(&r), 0);
    assert_int_equal(kube_test_count(count), 1);
    /* What a 401 does: drop it and ask again. */
    kube_auth_invalidate(r.k);
    assert_int_equal(ensure(&r), 0);
    assert_string_equal(r.k->cred.authorization, "Bearer tok-2");
    assert_int_equal(kube_test_count(count), 2);
    finish(&r);
    free(config);
    free(exec);
    free(count);
}

static void test_client_certificate_credential(void **state)
{
    (void)state;
    char *cert = path_in_tmp("exec-cert.pem");
    char *key = path_in_tmp("exec-key.pem");
    kube_test_write(cert, "-----BEGIN CERTIFICATE-----\ncert\n-----END CERTIFICATE-----\n");
    kube_test_write(key, "-----BEGIN PRIVATE KEY-----\nkey\n-----END PRIVATE KEY-----\n");
    char *exec = gc_xasprintf("      apiVersion: " V1 "\n"
                              "      command: " PLUGIN "\n"
                              "      args: [--mode=cert, --cert-file=%s, --key-file=%s]\n"
                              "      interactiveMode: Never\n",
                              cert, key);
    char *config = write_config("cert.yaml", exec);
    run r;
    assert_int_equal(open_config(&r, config, 0, 0), 0);
    assert_int_equal(ensure(&r), 0);
    assert_null(r.k->cred.authorization);
    char *want_cert = kube_test_read(cert), *want_key = kube_test_read(key);
    assert_string_equal((const char *)r.k->cred.cert.data, want_cert);
    assert_string_equal((const char *)r.k->cred.key.data, want_key);
    free(want_cert);
    free(want_key);
    finish(&r);
    free(config);
    free(exec);
    free(cert);
    free(key);
}

/* Runs a plugin that must fail; returns the run for the caller to inspect and finish. */
static void expect_failure(run *r, const char *args, const char *hint, int timeout, int verbose)
{
    char *exec = gc_xasprintf("      apiVersion: " V1 "\n"
                              "      command: " PLUGIN "\n"
                              "      args: [%s]\n"
                              "      interactiveMode: Never\n"
                              "%s",
                              args, hint);
    char *config = write_config("failing.yaml", exec);
    assert_int_equal(open_config(r, config, verbose, timeout), 0);
    assert_int_equal(ensure(r), GC_EXIT_RUNTIME);
    /* Whatever happened, the plugin's stdout never shows. */
    assert_false(kube_test_contains(r->err.message, LEAK_MARKER));
    assert_false(kube_test_contains(r->events.lines.data, LEAK_MARKER));
    assert_true(kube_test_contains(r->err.message, "exec plugin \"" PLUGIN "\" of user \"u\""));
    assert_null(r->k->cred.authorization);
    free(config);
    free(exec);
}

static void test_failing_plugin(void **state)
{
    (void)state;
    run r;
    expect_failure(&r, "--mode=fail",
                   "      installHint: Install the fake plugin from "
                   "example.com\n",
                   0, 2);
    assert_true(kube_test_contains(r.err.message, "exited with status 7"));
    /* Nothing the plugin printed is shown, not even stderr: it may echo a token there. */
    assert_false(kube_test_contains(r.err.message, "plugin failed on purpose"));
    assert_true(kube_test_contains(r.err.message, "run it yourself to see its message"));
    assert_true(kube_test_contains(r.err.message, "Install the fake plugin from example.com"));
    finish(&r);
}

static void test_garbage_output(void **state)
{
    (void)state;
    run r;
    expect_failure(&r, "--mode=garbage", "", 0, 2);
    assert_true(kube_test_contains(r.err.message, "not an ExecCredential"));
    assert_true(kube_test_contains(r.err.message, "line 1, column"));
    assert_true(kube_test_contains(r.err.message, "not shown because it may hold credentials"));
    finish(&r);
}

/* A plugin that hangs is stopped at the time limit: killed (it never got to finish on its own),
 * and reaped (when the call returns, no process or zombie is left). */
static void test_plugin_timeout(void **state)
{
    (void)state;
    char *pid_path = path_in_tmp("sleeping.pid");
    char *args = gc_xasprintf("--mode=sleep, --pid-file=%s", pid_path);
    run r;
    expect_failure(&r, args, "", 1, 0);
    assert_true(kube_test_contains(r.err.message, "did not finish within 1 s"));
    char *pid_text = kube_test_read(pid_path);
    assert_non_null(pid_text);
    pid_t pid = (pid_t)atoi(pid_text);
    assert_true(pid > 0);
    assert_false(kube_test_contains(pid_text, "finished"));
    errno = 0;
    assert_int_equal(kill(pid, 0), -1);
    assert_int_equal(errno, ESRCH);
    finish(&r);
    free(pid_text);
    free(args);
    free(pid_path);
}

static void test_huge_output(void **state)
{
    (void)state;
    run r;
    expect_failure(&r, "--mode=huge", "", 0, 0);
    assert_true(kube_test_contains(r.err.message, "wrote more output than expected"));
    finish(&r);
}

static void test_wrong_api_version_answer(void **state)
{
    (void)state;
    run r;
    expect_failure(&r, "--mode=wrong-version", "", 0, 0);
    assert_true(kube_test_contains(r.err.message, "different apiVersion"));
    finish(&r);
}

/* The plugin itself rejects an ExecCredential input that is not what it expects. */
static void test_plugin_checks_exec_info(void **state)
{
    (void)state;
    run r;
    expect_failure(&r, "--expect-api-version=" V1BETA1, "", 0, 0);
    assert_true(kube_test_contains(r.err.message, "exited with status 3"));
    assert_false(kube_test_contains(r.err.message, "unexpected apiVersion")); /* its stderr */
    finish(&r);
}

static void test_plugin_not_found(void **state)
{
    (void)state;
    char *config = write_config("missing.yaml", "      apiVersion: " V1BETA1 "\n"
                                                "      command: no-such-plugin-for-gcluster\n"
                                                "      installHint: get it from the store\n");
    run r;
    assert_int_equal(open_config(&r, config, 0, 0), 0);
    assert_int_equal(ensure(&r), GC_EXIT_RUNTIME);
    assert_true(kube_test_contains(r.err.message, "\"no-such-plugin-for-gcluster\""));
    assert_true(kube_test_contains(r.err.message, "was not found on PATH"));
    assert_true(kube_test_contains(r.err.message, "get it from the store"));
    finish(&r);
    free(config);
}

/* "./bin/plugin" is next to the kubeconfig, not in the current directory. */
static void test_relative_command(void **state)
{
    (void)state;
    char *dir = gc_xasprintf("%s/kc", tmp);
    char *bin = gc_xasprintf("%s/kc/bin", tmp);
    char *link = gc_xasprintf("%s/kc/bin/plugin", tmp);
    mkdir(dir, 0700);
    mkdir(bin, 0700);
    unlink(link);
    assert_int_equal(symlink(PLUGIN, link), 0);
    char *count = path_in_tmp("count-relative");
    char *exec = gc_xasprintf("      apiVersion: " V1 "\n"
                              "      command: ./bin/plugin\n"
                              "      args: [--count-file=%s]\n"
                              "      interactiveMode: Never\n",
                              count);
    char *config = write_config("kc/relative.yaml", exec);
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof(cwd)));
    assert_int_equal(chdir("/"), 0);
    run r;
    assert_int_equal(open_config(&r, config, 0, 0), 0);
    int rc = ensure(&r);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, 0);
    assert_int_equal(kube_test_count(count), 1);
    finish(&r);
    free(config);
    free(exec);
    free(count);
    free(link);
    free(bin);
    free(dir);
}

static void test_always_needs_a_terminal(void **state)
{
    (void)state;
    char *config = write_config("always.yaml", "      apiVersion: " V1 "\n"
                                               "      command: " PLUGIN "\n"
                                               "      interactiveMode: Always\n");
    run r;
    assert_int_equal(open_config(&r, config, 0, 0), 0);
    assert_int_equal(ensure(&r), GC_EXIT_RUNTIME);
    assert_true(kube_test_contains(r.err.message, "needs a terminal"));
    finish(&r);
    free(config);
}

static void test_token_never_traced(void **state)
{
    (void)state;
    char *count = path_in_tmp("count-trace");
    char *exec = token_exec(count, ", --token-prefix=TRACE-SECRET");
    char *config = write_config("trace.yaml", exec);
    run r;
    assert_int_equal(open_config(&r, config, 2, 0), 0);
    assert_int_equal(ensure(&r), 0);
    assert_int_equal(
        test_events_count(&r.events, "trace: exec plugin " PLUGIN ": credential obtained"), 1);
    assert_false(kube_test_contains(r.events.lines.data, "TRACE-SECRET"));
    finish(&r);
    free(config);
    free(exec);
    free(count);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v1_token_and_exec_info),
        cmocka_unit_test(test_v1beta1_defaults),
        cmocka_unit_test(test_expired_credential_is_refreshed),
        cmocka_unit_test(test_without_expiry_cached_until_rejected),
        cmocka_unit_test(test_client_certificate_credential),
        cmocka_unit_test(test_failing_plugin),
        cmocka_unit_test(test_garbage_output),
        cmocka_unit_test(test_plugin_timeout),
        cmocka_unit_test(test_huge_output),
        cmocka_unit_test(test_wrong_api_version_answer),
        cmocka_unit_test(test_plugin_checks_exec_info),
        cmocka_unit_test(test_plugin_not_found),
        cmocka_unit_test(test_relative_command),
        cmocka_unit_test(test_always_needs_a_terminal),
        cmocka_unit_test(test_token_never_traced),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
