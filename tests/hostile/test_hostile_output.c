/*
 * The files gcluster writes, against someone who shares the directory: a symbolic link planted
 * at the name of the temporary file (the old predictable PATH.tmp.<pid>, or names guessed at
 * random) is never followed, so the file it points to keeps its bytes and the link stays a
 * link. And every message about an output path names the flag it came with, refusing an empty
 * path or a directory before anything is sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/process.h"
#include "gcluster/sys.h"
#include "job_test.h"
#include "kube_test.h"
#include "run_cli.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define VICTIM_TEXT "the victim's own bytes\n"

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

/* The number of entries of `dir` besides . and .. */
static size_t entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void assert_victim_untouched(const char *dir)
{
    char *victim = gc_xasprintf("%s/victim.txt", dir);
    char *text = kube_test_read(victim);
    assert_non_null(text);
    assert_string_equal(text, VICTIM_TEXT);
    free(text);
    free(victim);
}

/* The issue's own reproduction: the shell plants out.yaml.tmp.$$ -> victim.txt and execs
 * gcluster with its pid, so the old predictable name is exactly that link. */
static void planted_link_at_the_old_predictable_name(void **state)
{
    (void)state;
    char *dir = kube_test_tmpdir();
    kube_test_put(dir, "victim.txt", VICTIM_TEXT, 0644);
    char *script = gc_xasprintf(
        "cd '%s' && ln -s victim.txt out.yaml.tmp.$$ && exec '%s' job submit --name a "
        "--compute-type v6e-16 --command true --image us-docker.pkg.dev/p/r/i:1 --dry-run-out "
        "out.yaml",
        dir, GCLUSTER_CLI);
    char *argv[] = {"/bin/sh", "-c", script, NULL};
    gc_process p = {.program = "/bin/sh", .argv = argv, .timeout_ms = 60000};
    gc_process_result r;
    gc_error err = {0};
    assert_int_equal(gc_process_run(&p, &r, &err), 0);
    assert_int_equal(r.exit_status, 0);
    gc_buf_free(&r.out);
    gc_buf_free(&r.err);
    assert_victim_untouched(dir);
    char *out = gc_xasprintf("%s/out.yaml", dir);
    struct stat st;
    assert_int_equal(lstat(out, &st), 0);
    assert_true(S_ISREG(st.st_mode)); /* the link was not renamed onto it */
    char *text = kube_test_read(out);
    assert_non_null(strstr(text, "kind: JobSet"));
    free(text);
    /* The victim, the planted link and the output: no temporary file is left behind. */
    assert_int_equal(entries(dir), 3);
    free(out);
    free(script);
    kube_test_rmtree(dir);
}

/* The stored defaults (~/.gcluster/context.json) are written the same way. */
static void stored_defaults_ignore_a_planted_link(void **state)
{
    (void)state;
    char *dir = kube_test_tmpdir();
    kube_test_put(dir, "victim.txt", VICTIM_TEXT, 0644);
    kube_test_put(dir, ".gcluster/keep", "", 0644);
    char *script = gc_xasprintf("cd '%s' && ln -s ../victim.txt .gcluster/context.json.tmp.$$ && "
                                "HOME='%s' exec '%s' job config set project my-proj-1",
                                dir, dir, GCLUSTER_CLI);
    char *argv[] = {"/bin/sh", "-c", script, NULL};
    gc_process p = {.program = "/bin/sh", .argv = argv, .timeout_ms = 60000};
    gc_process_result r;
    gc_error err = {0};
    assert_int_equal(gc_process_run(&p, &r, &err), 0);
    if (r.exit_status != 0)
        fail_msg("job config set: exit %d: %s", r.exit_status, r.err.data);
    gc_buf_free(&r.out);
    gc_buf_free(&r.err);
    assert_victim_untouched(dir);
    char *context = gc_xasprintf("%s/.gcluster/context.json", dir);
    struct stat st;
    assert_int_equal(lstat(context, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    char *text = kube_test_read(context);
    assert_non_null(strstr(text, "my-proj-1"));
    free(text);
    free(context);
    free(script);
    kube_test_rmtree(dir);
}

/* Links at names an attacker could guess: the pid-shaped ones around ours and a thousand of the
 * new shape with random suffixes. Whatever the writer picks, it never opens one of them. */
static void planted_links_at_guessed_names(void **state)
{
    (void)state;
    char *dir = kube_test_tmpdir();
    kube_test_put(dir, "victim.txt", VICTIM_TEXT, 0644);
    size_t planted = 0;
    for (long pid = (long)getpid() - 50; pid <= (long)getpid() + 50; pid++) {
        char *link = gc_xasprintf("%s/out.txt.tmp.%ld", dir, pid);
        assert_int_equal(symlink("victim.txt", link), 0);
        planted++;
        free(link);
    }
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int i = 0; i < 1000; i++) {
        unsigned char bytes[12];
        assert_int_equal(getrandom(bytes, sizeof(bytes), 0), (ssize_t)sizeof(bytes));
        char suffix[13] = {0};
        for (size_t k = 0; k < sizeof(bytes); k++)
            suffix[k] = letters[bytes[k] % (sizeof(letters) - 1)];
        char *link = gc_xasprintf("%s/.out.txt.%s.tmp", dir, suffix);
        assert_int_equal(symlink("victim.txt", link), 0);
        planted++;
        free(link);
    }
    char *out = gc_xasprintf("%s/out.txt", dir);
    gc_error err = {0};
    for (int round = 0; round < 20; round++)
        assert_int_equal(gc_file_write(out, "report\n", 7, &err), 0);
    assert_victim_untouched(dir);
    char *text = kube_test_read(out);
    assert_string_equal(text, "report\n");
    free(text);
    struct stat st;
    assert_int_equal(lstat(out, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(entries(dir), planted + 2);
    free(out);
    kube_test_rmtree(dir);
}

/* A link the user made at the output path itself still works as before: the file it points to
 * gets the output, and the link stays. */
static void a_users_own_link_is_kept(void **state)
{
    (void)state;
    char *dir = kube_test_tmpdir();
    kube_test_put(dir, "real/report.txt", "old\n", 0644);
    char *link = gc_xasprintf("%s/report.txt", dir);
    assert_int_equal(symlink("real/report.txt", link), 0);
    gc_error err = {0};
    assert_int_equal(gc_file_write(link, "new\n", 4, &err), 0);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    char *real = gc_xasprintf("%s/real/report.txt", dir);
    char *text = kube_test_read(real);
    assert_string_equal(text, "new\n");
    free(text);
    free(real);
    free(link);
    kube_test_rmtree(dir);
}

static void run(cli_result *res, const char *const *args)
{
    char kubeconfig[600];
    snprintf(kubeconfig, sizeof(kubeconfig), "KUBECONFIG=%s", jt_kubeconfig());
    const char *env[] = {"HOME=/nonexistent-home-for-tests", kubeconfig, NULL};
    run_cli(res, args, env);
}

/* job inspect -o names -o (not submit's --dry-run-out), and "" or a directory is bad input
 * refused before the server is asked anything. */
static void inspect_output_names_its_flag(void **state)
{
    (void)state;
    char *dir = kube_test_tmpdir();
    cli_result res;
    run(&res, (const char *const[]){"job", "inspect", "-o", dir, NULL});
    assert_int_equal(res.exit_code, 2);
    assert_non_null(strstr(res.err.data, "-o \""));
    assert_non_null(strstr(res.err.data, "is a directory"));
    assert_null(strstr(res.err.data, "--dry-run-out"));
    cli_result_free(&res);
    run(&res, (const char *const[]){"job", "inspect", "train", "-o", "", NULL});
    assert_int_equal(res.exit_code, 2);
    assert_non_null(strstr(res.err.data, "-o \"\" is empty"));
    cli_result_free(&res);
    run(&res, (const char *const[]){"job", "inspect", "--output=", NULL});
    assert_int_equal(res.exit_code, 2);
    cli_result_free(&res);
    assert_int_equal(jt_request_count(), 0);
    kube_test_rmtree(dir);
}

/* The flags that write manifests name themselves for the same mistakes. */
static void dry_run_out_names_its_flag(void **state)
{
    (void)state;
    cli_result res;
    run(&res, (const char *const[]){"job", "submit", "--name", "a", "--compute-type", "v6e-16",
                                    "--command", "true", "--image", "us-docker.pkg.dev/p/r/i:1",
                                    "--dry-run-out", "", NULL});
    assert_int_equal(res.exit_code, 2);
    assert_non_null(strstr(res.err.data, "--dry-run-out \"\" is empty"));
    cli_result_free(&res);
    run(&res,
        (const char *const[]){"deploy", GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml",
                              "--dry-run-out", "/", NULL});
    assert_int_equal(res.exit_code, 2);
    assert_non_null(strstr(res.err.data, "--dry-run-out \"/\" is a directory"));
    cli_result_free(&res);
    assert_int_equal(jt_request_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(planted_link_at_the_old_predictable_name),
        cmocka_unit_test(stored_defaults_ignore_a_planted_link),
        cmocka_unit_test(planted_links_at_guessed_names),
        cmocka_unit_test(a_users_own_link_is_kept),
        cmocka_unit_test_setup_teardown(inspect_output_names_its_flag, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(dry_run_out_names_its_flag, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
