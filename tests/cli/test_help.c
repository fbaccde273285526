/*
 * --help at every level lists every command and flag with a one-line description, and every
 * flag of Google's `gcluster job submit` exists here with the same name and short form.
 */
#include "run_cli.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static void run(cli_result *r, const char *const *args, int want_exit)
{
    const char *env[] = {"HOME=/nonexistent-home-for-tests", NULL};
    run_cli(r, args, env);
    if (r->exit_code != want_exit)
        fail_msg("exit %d, want %d: %s", r->exit_code, want_exit, r->err.data);
}

/* The line of the help that documents `--flag`, with a description after it. */
static void assert_documented(const char *help, const char *flag)
{
    char needle[96];
    snprintf(needle, sizeof(needle), "--%s", flag);
    const char *at = help;
    while ((at = strstr(at, needle)) != NULL) {
        char next = at[strlen(needle)];
        if (next == ' ' || next == '\n')
            break;
        at += strlen(needle);
    }
    if (!at)
        fail_msg("--%s is not in the help", flag);
    const char *eol = strchr(at, '\n');
    const char *desc = at + strlen(needle);
    /* Either a description on the same line or on the next one (long flags wrap). */
    bool same_line =
        eol && strspn(desc, " ABCDEFGHIJKLMNOPQRSTUVWXYZ[]|/=:,.-12") < (size_t)(eol - desc);
    bool next_line = eol && strncmp(eol + 1, "                                    ", 36) == 0;
    if (!same_line && !next_line)
        fail_msg("--%s has no description", flag);
}

static void root_help_lists_every_command(void **state)
{
    (void)state;
    cli_result r;
    const char *args[] = {"--help", NULL};
    run(&r, args, 0);
    static const char *const commands[] = {"job submit",      "job inspect", "job list",
                                           "job logs",        "job cancel",  "job config set",
                                           "job config list", "deploy",      "destroy"};
    for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++) {
        char entry[64];
        snprintf(entry, sizeof(entry), "\n  %s ", commands[i]);
        if (!strstr(r.out.data, entry))
            fail_msg("\"%s\" missing from gcluster --help:\n%s", commands[i], r.out.data);
    }
    cli_result_free(&r);
}

static void job_help_lists_its_commands_and_the_global_flags(void **state)
{
    (void)state;
    cli_result r;
    const char *args[] = {"job", "--help", NULL};
    run(&r, args, 0);
    static const char *const globals[] = {"cluster", "location",   "project",
                                          "context", "kubeconfig", "namespace",
                                          "verbose", "help",       "version"};
    for (size_t i = 0; i < sizeof(globals) / sizeof(*globals); i++)
        assert_documented(r.out.data, globals[i]);
    assert_non_null(strstr(r.out.data, "-c, --cluster"));
    assert_non_null(strstr(r.out.data, "-l, --location"));
    assert_non_null(strstr(r.out.data, "-p, --project"));
    assert_non_null(strstr(r.out.data, "job logs"));
    cli_result_free(&r);
}

static void submit_help_lists_every_flag_of_googles_gcluster(void **state)
{
    (void)state;
    cli_result r;
    const char *args[] = {"job", "submit", "--help", NULL};
    run(&r, args, 0);
    /* Google's gcluster `job submit` flags in its order, then ours. */
    static const char *const flags[] = {"image",
                                        "base-image",
                                        "build-context",
                                        "command",
                                        "compute-type",
                                        "dry-run-out",
                                        "platform",
                                        "mount",
                                        "name",
                                        "queue",
                                        "num-nodes",
                                        "num-slices",
                                        "restarts",
                                        "gke-ttl-after-finished",
                                        "grace-period",
                                        "gke-disable-parallel-containers",
                                        "placement-policy",
                                        "node-constraint",
                                        "cpu-affinity",
                                        "restart-on-exit-codes",
                                        "image-pull-secret",
                                        "service-account",
                                        "topology",
                                        "gke-scheduler",
                                        "await-job-completion",
                                        "timeout",
                                        "priority",
                                        "verbose",
                                        "gke-nap-provisioning",
                                        "gke-nap-reservation",
                                        "pathways",
                                        "pathways-proxy-server-image",
                                        "pathways-server-image",
                                        "pathways-worker-image",
                                        "pathways-headless",
                                        "pathways-gcs-location",
                                        "pathways-elastic-slices",
                                        "pathways-max-slice-restarts",
                                        "pathways-proxy-args",
                                        "pathways-server-args",
                                        "pathways-worker-args",
                                        "pathways-colocated-python-sidecar-image",
                                        "pathways-head-np",
                                        "dry-run"};
    for (size_t i = 0; i < sizeof(flags) / sizeof(*flags); i++)
        assert_documented(r.out.data, flags[i]);
    static const char *const short_forms[] = {
        "-i, --image",       "-B, --base-image", "-b, --build-context", "-e, --command",
        "-o, --dry-run-out", "-f, --platform",   "-n, --name",          "-q, --queue"};
    for (size_t i = 0; i < sizeof(short_forms) / sizeof(*short_forms); i++)
        if (!strstr(r.out.data, short_forms[i]))
            fail_msg("\"%s\" missing from job submit --help", short_forms[i]);
    assert_non_null(strstr(r.out.data, "Compute types"));
    cli_result_free(&r);
}

/* deploy gives -l to Google's --validation-level: its help and man page show the global
 * --location by its long name only, and -l parses as the level. */
static void a_commands_own_letter_hides_the_globals(void **state)
{
    (void)state;
    cli_result r;
    const char *args[] = {"deploy", "--help", NULL};
    run(&r, args, 0);
    assert_non_null(strstr(r.out.data, "-l, --validation-level LEVEL"));
    assert_null(strstr(r.out.data, "-l, --location"));
    assert_non_null(strstr(r.out.data, "    --location LOCATION"));
    cli_result_free(&r);
    /* The man page the build wrote from the same tables. */
    FILE *f = fopen(GCLUSTER_BINARY_DIR "/man/gcluster-deploy.1", "r");
    assert_non_null(f);
    char page[65536];
    size_t n = fread(page, 1, sizeof(page) - 1, f);
    page[n] = '\0';
    fclose(f);
    assert_non_null(strstr(page, "\\fB\\-l\\fR, \\fB\\-\\-validation\\-level\\fR"));
    assert_null(strstr(page, "\\fB\\-l\\fR, \\fB\\-\\-location\\fR"));
    assert_non_null(strstr(page, "\n\\fB\\-\\-location\\fR"));
    const char *list[] = {"job", "list", "--help", NULL};
    run(&r, list, 0);
    assert_non_null(strstr(r.out.data, "-l, --location"));
    cli_result_free(&r);
    const char *bad[] = {"deploy", "x.yaml", "-l", "us-east5", NULL};
    run(&r, bad, 2);
    assert_non_null(strstr(r.err.data, "validation-level"));
    cli_result_free(&r);
}

static void unknown_commands_suggest_the_nearest(void **state)
{
    (void)state;
    cli_result r;
    const char *args[] = {"job", "sumbit", NULL};
    run(&r, args, 2);
    assert_non_null(strstr(r.err.data, "unknown command \"job sumbit\"; did you mean \"submit\"?"));
    cli_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(root_help_lists_every_command),
        cmocka_unit_test(job_help_lists_its_commands_and_the_global_flags),
        cmocka_unit_test(submit_help_lists_every_flag_of_googles_gcluster),
        cmocka_unit_test(a_commands_own_letter_hides_the_globals),
        cmocka_unit_test(unknown_commands_suggest_the_nearest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
