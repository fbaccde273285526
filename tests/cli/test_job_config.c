/*
 * `job config set` and `job config list` through the real binary: Google's gcluster job flags
 * parse (every job command takes them), but each that selects a cluster or a job is refused by
 * name with exit 2 and nothing is stored, rather than accepted and ignored.
 */
#include "run_cli.h"

#include "gcluster/buf.h"
#include "gcluster/error.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char home[64];
static char home_env[96];

static int make_home(void **state)
{
    (void)state;
    snprintf(home, sizeof(home), "/tmp/gcluster-job-config-XXXXXX");
    if (!mkdtemp(home))
        return -1;
    snprintf(home_env, sizeof(home_env), "HOME=%s", home);
    return 0;
}

static int remove_home(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", home);
    return system(cmd) == 0 ? 0 : -1;
}

static void run(cli_result *r, const char *const *args)
{
    const char *env[] = {home_env, "XDG_CONFIG_HOME=", NULL};
    run_cli(r, args, env);
}

/* The stored defaults as `job config list` shows them. */
static void assert_list_is(const char *expected)
{
    cli_result r;
    run(&r, (const char *[]){"job", "config", "list", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.out.data, expected);
    cli_result_free(&r);
}

static void each_cluster_and_job_flag_is_refused_by_name(void **state)
{
    (void)state;
    static const struct {
        const char *flag;
        const char *value; /* NULL for a switch */
        const char *named;
    } flags[] = {
        {"--cluster", "c", "--cluster"},
        {"-c", "c", "--cluster"},
        {"--location", "us-east5", "--location"},
        {"-l", "us-east5", "--location"},
        {"--project", "p", "--project"},
        {"-p", "p", "--project"},
        {"--context", "ctx", "--context"},
        {"--kubeconfig", "/dev/null", "--kubeconfig"},
        {"--namespace", "team", "--namespace"},
        {"--gke-namespace", "team", "--gke-namespace"},
        {"--skip-prereqs", NULL, "--skip-prereqs"},
    };
    for (size_t i = 0; i < sizeof(flags) / sizeof(*flags); i++) {
        for (int list = 0; list < 2; list++) {
            const char *args[8] = {"job", "config"};
            size_t n = 2;
            if (list) {
                args[n++] = "list";
            } else {
                args[n++] = "set";
                args[n++] = "cluster";
                args[n++] = "stored";
            }
            args[n++] = flags[i].flag;
            if (flags[i].value)
                args[n++] = flags[i].value;
            cli_result r;
            run(&r, args);
            char want[160];
            snprintf(want, sizeof(want),
                     "gcluster: error: job config %s does not take %s: ", list ? "list" : "set",
                     flags[i].named);
            if (r.exit_code != GC_EXIT_USAGE || !strstr(r.err.data, want))
                fail_msg("job config %s %s: exit %d, stderr: %s (wanted exit 2 and \"%s\")",
                         list ? "list" : "set", flags[i].flag, r.exit_code, r.err.data, want);
            assert_string_equal(r.out.data, "");
            cli_result_free(&r);
        }
    }
    /* Nothing was stored by the refused sets. */
    assert_list_is("project:  \ncluster:  \nlocation: \n");
}

static void without_those_flags_it_stores_and_lists(void **state)
{
    (void)state;
    cli_result r;
    run(&r, (const char *[]){"job", "config", "set", "location", "us-east5", NULL});
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out.data, "Set location to \"us-east5\""));
    cli_result_free(&r);
    assert_list_is("project:  \ncluster:  \nlocation: us-east5\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_cluster_and_job_flag_is_refused_by_name),
        cmocka_unit_test(without_those_flags_it_stores_and_lists),
    };
    return cmocka_run_group_tests(tests, make_home, remove_home);
}
