/*
 * The opening every job command shares lives in the command table: a walk over the table fails
 * when a command that takes a job NAME lacks its job-name operand (so `gcluster job why <TAB>`
 * would complete nothing), when -o is not a declared set of values, or when a job command lacks
 * Google's global job flags. Then what the opening does, through the real binary: a name no
 * JobSet can have (64 characters) exits 2 on every verb before any request, and a bare format
 * name given to a -o that takes a path (submit, inspect) exits 2 naming the right flag.
 */
#include "cli/commands.h"
#include "run_cli.h"

#include "gcluster/buf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

/* What is wrong with one command's entry, appended to `problems` (empty: nothing). */
static void check_command(const cli_command *cmd, const char *path, gc_buf *problems)
{
    /* "job why NAME ..." or "job inspect [NAME] ...": the usage says it takes a job name. */
    size_t n = strlen(path);
    bool takes_name = !strncmp(cmd->usage, path, n) && (!strncmp(cmd->usage + n, " NAME", 5) ||
                                                        !strncmp(cmd->usage + n, " [NAME]", 7));
    const cli_opening *op = cmd->opening;
    if (takes_name && (!op || op->names == CLI_JOB_NONE))
        gc_buf_printf(problems, "%s: takes NAME but its opening takes no job name\n", path);
    if (takes_name && cli_command_operands(cmd) != &cli_job_names)
        gc_buf_printf(problems, "%s: takes NAME but has no job-name operand\n", path);
    if (op && op->name_flag) {
        const cli_option *flag = cli_command_option_at(cmd, op->name_flag);
        if (!flag || flag->values != &cli_job_names)
            gc_buf_printf(problems, "%s: --name does not complete job names\n", path);
    }
    if (op && op->output) {
        const cli_option *o = cli_command_option_at(cmd, op->output);
        if (!o || !o->values || !o->values->names || o->values->open)
            gc_buf_printf(problems, "%s: its format option is not a closed set of values\n", path);
    }
    for (const cli_option *o = cmd->options; o && o->kind != CLI_OPT_END; o++) {
        bool is_o = o->kind != CLI_OPT_GROUP &&
                    (o->short_name == 'o' || (o->long_name && !strcmp(o->long_name, "output")));
        if (!is_o)
            continue;
        const cli_values *v = o->values;
        bool declared = v && ((v->names && !v->open) || v->files);
        if (!declared)
            gc_buf_printf(problems, "%s: -o/--output is not a declared set of values\n", path);
    }
    /* submit names the job it creates with --name: it has no job operand and no opening.
     * config and gke-template-extract work offline, on no job and no cluster. */
    bool offline = !strncmp(path, "job config", 10) || !strcmp(path, "job gke-template-extract");
    if (!strncmp(path, "job ", 4) && !offline) {
        if (!op && strcmp(path, "job submit") != 0)
            gc_buf_printf(problems, "%s: a job command without the shared opening\n", path);
        if (!cli_find_option(cmd->options, "gke-namespace", 13, 0) ||
            !cli_find_option(cmd->options, "skip-prereqs", 12, 0))
            gc_buf_printf(problems, "%s: lacks --gke-namespace or --skip-prereqs\n", path);
    }
}

static void check_each(const cli_command *cmd, const char *path, void *ctx)
{
    check_command(cmd, path, ctx);
}

static void every_command_carries_its_opening(void **state)
{
    (void)state;
    gc_buf problems;
    gc_buf_init(&problems);
    cli_for_each_command(&cli_root, "", check_each, &problems);
    if (problems.len)
        fail_msg("%s", problems.data);
    gc_buf_free(&problems);
}

static void job_why_completes_job_names(void **state)
{
    (void)state;
    size_t used;
    const char *words[] = {"job", "why"};
    const cli_command *why = cli_command_find(words, 2, &used);
    assert_int_equal(used, 2);
    assert_ptr_equal(cli_command_operands(why), &cli_job_names);
}

/* The walk's checks can fail: entries with each mistake are found. */
static void the_walk_finds_planted_mistakes(void **state)
{
    (void)state;
    typedef struct {
        cli_globals g;
        const char *name;
        const char *output;
    } fake_args;
    static const cli_option free_output[] = {
        CLI_STRING('o', "output", fake_args, output, "FORMAT", "a free string"),
        CLI_END,
    };
    static const cli_command no_operand = {
        .name = "fake",
        .summary = "x",
        .usage = "job fake NAME [-o FORMAT]",
        .options = free_output,
    };
    gc_buf problems;
    gc_buf_init(&problems);
    check_command(&no_operand, "job fake", &problems);
    assert_non_null(strstr(problems.data, "takes NAME but has no job-name operand"));
    assert_non_null(strstr(problems.data, "-o/--output is not a declared set of values"));
    assert_non_null(strstr(problems.data, "without the shared opening"));
    assert_non_null(strstr(problems.data, "lacks --gke-namespace"));
    gc_buf_free(&problems);
}

static char dir[] = "/tmp/gcluster-opening-XXXXXX";
static char kubeconfig[256];

/* A kubeconfig whose server is a loopback port nothing listens on: a command that sent a
 * request would fail with exit 1 ("cannot reach"), not exit 2. */
static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", dir);
    FILE *f = fopen(kubeconfig, "w");
    if (!f)
        return -1;
    fputs("apiVersion: v1\nkind: Config\ncurrent-context: t\n"
          "clusters: [{name: t, cluster: {server: 'https://127.0.0.1:9'}}]\n"
          "users: [{name: t, user: {token: x}}]\n"
          "contexts: [{name: t, context: {cluster: t, user: t}}]\n",
          f);
    return fclose(f);
}

static int teardown(void **state)
{
    (void)state;
    char *cmd = gc_xasprintf("rm -rf '%s'", dir);
    int rc = system(cmd);
    free(cmd);
    return rc == 0 ? 0 : -1;
}

static void run(cli_result *r, const char *const *args)
{
    char home[300], config[300];
    snprintf(home, sizeof(home), "HOME=%s", dir);
    snprintf(config, sizeof(config), "KUBECONFIG=%s", kubeconfig);
    const char *env[] = {home, config, NULL};
    run_cli(r, args, env);
}

static void a_64_character_name_is_refused_before_any_request(void **state)
{
    (void)state;
    char name[65];
    memset(name, 'a', 64);
    name[64] = '\0';
    static const char *const verbs[] = {"inspect", "why", "logs", "cancel", "connect", "wait"};
    for (size_t i = 0; i < sizeof(verbs) / sizeof(*verbs); i++) {
        cli_result r;
        const char *args[] = {"job", verbs[i], name, NULL};
        run(&r, args);
        if (r.exit_code != 2 || !strstr(r.err.data, "64 characters long"))
            fail_msg("job %s NAME64: exit %d, stderr %s", verbs[i], r.exit_code, r.err.data);
        cli_result_free(&r);
        /* One character less is a name: it goes on to the (absent) server, exit 1. */
        name[63] = '\0';
        /* wait and connect would wait for the cluster: bounded by their own flags. */
        const char *plain[] = {"job", verbs[i], name, NULL, NULL, NULL};
        if (!strcmp(verbs[i], "wait"))
            plain[3] = "--timeout", plain[4] = "1s";
        if (!strcmp(verbs[i], "connect"))
            plain[3] = "--wait", plain[4] = "1s";
        run(&r, plain);
        if (r.exit_code != 1 || strstr(r.err.data, "characters long"))
            fail_msg("job %s NAME63: exit %d: %s", verbs[i], r.exit_code, r.err.data);
        cli_result_free(&r);
        name[63] = 'a';
    }
}

static void the_name_flag_is_checked_too(void **state)
{
    (void)state;
    cli_result r;
    const char *args[] = {"job", "why", "--name", "Not_A_Name", NULL};
    run(&r, args);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err.data, "is not a job name"));
    cli_result_free(&r);
}

static void submit_o_with_a_format_name_says_output(void **state)
{
    (void)state;
    static const char *const formats[] = {"json", "yaml", "yml", "text", "table", "wide"};
    for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++) {
        cli_result r;
        const char *args[] = {"job",
                              "submit",
                              "--name",
                              "o-test",
                              "--compute-type",
                              "v6e-16",
                              "--image",
                              "registry.example/img:1",
                              "--command",
                              "true",
                              "-o",
                              formats[i],
                              NULL};
        run(&r, args);
        if (r.exit_code != 2 || !strstr(r.err.data, "--output"))
            fail_msg("submit -o %s: exit %d: %s", formats[i], r.exit_code, r.err.data);
        struct stat st;
        assert_int_not_equal(stat(formats[i], &st), 0); /* no file was written */
        cli_result_free(&r);
    }
}

static void submit_o_path_still_writes_the_manifest(void **state)
{
    (void)state;
    char path[300];
    snprintf(path, sizeof(path), "%s/json", dir);
    cli_result r;
    const char *args[] = {"job",
                          "submit",
                          "--name",
                          "o-test",
                          "--compute-type",
                          "v6e-16",
                          "--image",
                          "registry.example/img:1",
                          "--command",
                          "true",
                          "-o",
                          path,
                          NULL};
    run(&r, args);
    assert_int_equal(r.exit_code, 0);
    gc_buf manifest;
    gc_buf_init(&manifest);
    assert_int_equal(read_file(path, &manifest), 0);
    assert_non_null(strstr(manifest.data, "kind: JobSet"));
    gc_buf_free(&manifest);
    cli_result_free(&r);
}

static void inspect_o_with_a_format_name_says_format(void **state)
{
    (void)state;
    cli_result r;
    const char *args[] = {"job", "inspect", "some-job", "-o", "json", NULL};
    run(&r, args);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err.data, "--format json"));
    cli_result_free(&r);
}

static void logs_c_is_the_cluster(void **state)
{
    (void)state;
    cli_result r;
    /* Google's `gcluster job logs J -c CLUSTER -l LOCATION`: -c names the cluster, so the
     * cluster selection (not a container name) is what fails here without gcloud's context. */
    const char *args[] = {"job", "logs",     "some-job",  "-c", "Not_A_Container",
                          "-l",  "us-east5", "--context", "t",  NULL};
    run(&r, args);
    assert_null(strstr(r.err.data, "container"));
    assert_int_not_equal(r.exit_code, 0);
    cli_result_free(&r);
    const char *both[] = {"job", "logs", "some-job", "--main-only", "--all", NULL};
    run(&r, both);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err.data, "--main-only"));
    cli_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_command_carries_its_opening),
        cmocka_unit_test(job_why_completes_job_names),
        cmocka_unit_test(the_walk_finds_planted_mistakes),
        cmocka_unit_test(a_64_character_name_is_refused_before_any_request),
        cmocka_unit_test(the_name_flag_is_checked_too),
        cmocka_unit_test(submit_o_with_a_format_name_says_output),
        cmocka_unit_test(submit_o_path_still_writes_the_manifest),
        cmocka_unit_test(inspect_o_with_a_format_name_says_format),
        cmocka_unit_test(logs_c_is_the_cluster),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
