/*
 * Shell completion's engine, `gcluster __complete`: commands, flags and flag values from the
 * option tables, and job names from the scripted API server (silently nothing when it does not
 * answer in time). The shells' own scripts are tested in real shells by
 * tests/completion/test_completion.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/buf.h"
#include "job_test.h"
#include "run_cli.h"

#include <stdlib.h>
#include <string.h>

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

/* The candidates `gcluster __complete WORDS...` prints, without descriptions, one per line. */
static char *complete(const char *const *words)
{
    const char *args[32] = {"__complete"};
    size_t n = 1;
    while (words[n - 1])
        args[n] = words[n - 1], n++;
    args[n] = NULL;
    char *kubeconfig = gc_xasprintf("KUBECONFIG=%s", jt_kubeconfig());
    const char *env[] = {kubeconfig, "HOME=/nonexistent-home-for-tests", NULL};
    cli_result r;
    run_cli(&r, args, env);
    free(kubeconfig);
    if (r.exit_code != 0 || r.err.len)
        fail_msg("__complete: exit %d, stderr: %s", r.exit_code, r.err.data);
    gc_buf names;
    gc_buf_init(&names);
    for (char *line = r.out.data; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char *tab = memchr(line, '\t', len);
        gc_buf_append(&names, line, tab ? (size_t)(tab - line) : len);
        gc_buf_putc(&names, '\n');
        line += len + (end != NULL);
    }
    cli_result_free(&r);
    return gc_buf_detach(&names);
}

#define assert_completes(want, ...)                                                                \
    do {                                                                                           \
        char *got = complete((const char *const[]){__VA_ARGS__, NULL});                            \
        assert_string_equal(got, want);                                                            \
        free(got);                                                                                 \
    } while (0)

static void test_commands(void **state)
{
    (void)state;
    assert_completes("job\ncluster\ndeploy\ndestroy\ncompletion\n", "");
    assert_completes("submit\n", "job", "sub");
    assert_completes("config\n", "job", "conf");
    assert_completes("set\nlist\n", "job", "config", "");
    assert_completes("--help\n--version\n", "job", "--");
    assert_completes("", "nope", "");
    /* Flags before a command word: groups take only the global ones. */
    assert_completes("set\nlist\n", "job", "config", "-v", "");
    assert_completes("submit\n", "job", "--help", "su");
    assert_completes("wait\n", "job", "-x", "--bogus=1", "wa");
    assert_completes("bash\nzsh\nfish\n", "completion", "");
}

static void test_flags(void **state)
{
    (void)state;
    assert_completes("--status\n", "job", "list", "--st");
    assert_completes("--command\n--compute-type\n--connect\n--context\n", "job", "submit", "--name",
                     "pw", "--co");
    /* A flag given once is not offered again; repeatable ones are. */
    assert_completes("", "job", "list", "-o", "json", "--out");
    assert_completes("--mount\n", "job", "submit", "--mount", "/a:/b", "--mou");
    /* A command that takes no arguments offers its flags. */
    char *got = complete((const char *const[]){"job", "list", "", NULL});
    assert_non_null(strstr(got, "--name-contains\n"));
    assert_non_null(strstr(got, "--kubeconfig\n"));
    free(got);
}

static void test_flag_values(void **state)
{
    (void)state;
    assert_completes("v6e-1\nv6e-4\nv6e-8\nv6e-16\nv6e-32\nv6e-64\nv6e-128\nv6e-256\n", "job",
                     "submit", "--compute-type", "v6e-");
    assert_completes("--compute-type=v5litepod-1\n--compute-type=v5litepod-16\n"
                     "--compute-type=v5litepod-128\n",
                     "job", "submit", "--compute-type=v5litepod-1");
    assert_completes("ct6e-standard-1t\nct6e-standard-4t\nct6e-standard-8t\n", "job", "submit",
                     "--compute-type", "ct6e");
    assert_completes("table\nwide\njson\nyaml\n", "job", "list", "-o", "");
    assert_completes("json\n", "job", "list", "-Ao", "j");
    assert_completes("text\njson\nyaml\n", "job", "wait", "pw", "--output", "");
    assert_completes("head\nworker\n", "job", "logs", "pw", "--role", "");
    assert_completes("server\nclient\n", "job", "submit", "--dry-run", "");
    assert_completes("succeeded\nfinished\nrunning\nadmitted\n", "job", "wait", "--for", "");
    assert_completes("Queued\nAdmitted\nRunning\nRestarting\nSucceeded\nFailed\nSuspended\n"
                     "Terminating\nPending\n",
                     "job", "list", "--status", "");
    /* A path, or a value that is no known set: the shell completes file names. */
    assert_completes(":files\n", "job", "submit", "--kubeconfig", "");
    assert_completes(":files\n", "job", "submit", "--dry-run-out", "");
    assert_completes(":files\n", "deploy", "");
    /* Numbers have no candidates. */
    assert_completes("", "job", "submit", "--num-slices", "");
}

static json_t *metadata(const char *name)
{
    return json_pack("{s:{s:s, s:s}}", "metadata", "name", name, "namespace", "ns1");
}

static void script_jobsets(const char *path)
{
    jt_list(path, "PartialObjectMetadataList",
            json_pack("[o, o, o]", metadata("pw-a"), metadata("pw-b"), metadata("other")));
}

static void test_job_names_from_the_cluster(void **state)
{
    (void)state;
    script_jobsets(JT_JOBSETS);
    /* A JobSet-less job's Job is a job too; another Job is not. */
    jt_list(JT_JOBS, "PartialObjectMetadataList",
            jt_json("[{'metadata': {'name': 'pw-fb', 'namespace': 'ns1', 'labels':"
                    " {'gcluster.google.com/workload': 'pw-fb'}}},"
                    " {'metadata': {'name': 'pw-x', 'namespace': 'ns1'}}]"));
    assert_completes("pw-a\npw-b\npw-fb\n", "job", "inspect", "pw");
    /* One round trip: the JobSets and the Jobs, for object metadata only. */
    json_t *req = jt_requests();
    assert_int_equal(json_array_size(req), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *headers = json_object_get(json_array_get(req, i), "headers");
        assert_non_null(strstr(json_string_value(json_object_get(headers, "accept")),
                               "as=PartialObjectMetadataList"));
    }
    json_decref(req);

    /* Names already on the line are not offered again. */
    script_jobsets(JT_JOBSETS);
    assert_completes("pw-b\nother\n", "job", "wait", "pw-a", "");
    script_jobsets(JT_JOBSETS);
    assert_completes("pw-b\n", "job", "logs", "--name", "pw-b");
    /* job why takes a job name like the others (its operand comes from the shared opening). */
    script_jobsets(JT_JOBSETS);
    assert_completes("pw-a\npw-b\n", "job", "why", "pw");
    script_jobsets(JT_JOBSETS);
    assert_completes("pw-a\n", "job", "why", "--name", "pw-a");

    /* The cluster and namespace on the command line are the ones asked. */
    script_jobsets("/apis/jobset.x-k8s.io/v1alpha2/namespaces/team/jobsets");
    char *flag = gc_xasprintf("--kubeconfig=%s", jt_kubeconfig());
    assert_completes("other\n", "job", "cancel", flag, "--namespace", "team", "o");
    free(flag);
}

static void test_no_answer_means_no_names(void **state)
{
    (void)state;
    /* The server sends the list only after 15 s; completion gives up well before. */
    json_t *late = json_pack("{s:s, s:s, s:{}, s:[o]}", "kind", "PartialObjectMetadataList",
                             "apiVersion", "v1", "metadata", "items", metadata("late"));
    char *body = json_dumps(late, JSON_COMPACT);
    jt_answer("GET " JT_JOBSETS,
              json_pack("{s:{s:s}, s:[{s:f, s:s}]}", "headers", "Content-Type", "application/json",
                        "chunks", "delay", 15.0, "data", body));
    free(body);
    json_decref(late);
    assert_completes("", "job", "inspect", "");
    /* Refused and failing clusters are just as silent. */
    jt_answer("GET " JT_JOBSETS, jt_json("{'status': 403, 'json': {'kind': 'Status', "
                                         "'reason': 'Forbidden', 'code': 403}}"));
    assert_completes("", "job", "inspect", "");
    assert_completes("", "job", "inspect", "--context", "no-such-context", "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_commands, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_flags, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_flag_values, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_job_names_from_the_cluster, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_no_answer_means_no_names, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
