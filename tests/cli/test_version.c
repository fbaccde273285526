/*
 * --version: the version, the commit the binary was built from (or "unknown" outside a git
 * checkout) and the libcurl it loads, or why it cannot load one.
 */
#include "kube_test.h"
#include "run_cli.h"

#include "gcluster/buf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <zlib.h>

static void run(cli_result *r, const char *const *args, const char *library_path)
{
    const char *env[] = {"HOME=/nonexistent-home-for-tests", library_path, NULL};
    run_cli(r, args, env);
    assert_int_equal(r->exit_code, 0);
    assert_string_equal(r->err.data, "");
}

/* The commit the build wrote into its generated header. */
static char *built_commit(void)
{
    char *header = kube_test_read(GCLUSTER_BINARY_DIR "/generated/gcluster_commit.h");
    assert_non_null(header);
    char commit[128];
    assert_int_equal(sscanf(header, "#define GCLUSTER_COMMIT \"%127[^\"]\"", commit), 1);
    free(header);
    return gc_xstrdup(commit);
}

static void version_commit_and_libcurl(void **state)
{
    (void)state;
    const char *args[] = {"--version", NULL};
    cli_result r;
    run(&r, args, NULL);
    char *commit = built_commit();
    char *head =
        gc_xasprintf("gcluster " GCLUSTER_VERSION "\ncommit: %s\nlibcurl: libcurl/", commit);
    if (strncmp(r.out.data, head, strlen(head)) != 0)
        fail_msg("gcluster --version printed:\n%s\nwant it to start with:\n%s", r.out.data, head);
    /* The file libcurl was loaded from, at the end of its line. */
    assert_non_null(strstr(r.out.data, "libcurl.so.4)\n"));
    free(head);
    free(commit);

    /* Every command takes --version the same way. */
    const char *leaf[] = {"job", "list", "--version", NULL};
    cli_result again;
    run(&again, leaf, NULL);
    assert_string_equal(again.out.data, r.out.data);
    cli_result_free(&again);
    cli_result_free(&r);
}

/* A libcurl that cannot serve gcluster is named with the reason; --version still succeeds. zlib
 * stands in for such a library. */
static void version_without_a_usable_libcurl(void **state)
{
    (void)state;
    Dl_info zlib;
    assert_true(dladdr((void *)zlibVersion, &zlib) && zlib.dli_fname);
    char *dir = kube_test_tmpdir();
    char *fake = gc_xasprintf("%s/libcurl.so.4", dir);
    assert_int_equal(symlink(zlib.dli_fname, fake), 0);
    char *library_path = gc_xasprintf("LD_LIBRARY_PATH=%s", dir);
    const char *args[] = {"--version", NULL};
    cli_result r;
    run(&r, args, library_path);
    const char *line = strstr(r.out.data, "\nlibcurl: ");
    assert_non_null(line);
    assert_string_equal(line, "\nlibcurl: cannot be loaded: libcurl.so.4 has no curl_global_init; "
                              "libcurl 7.80 or newer is needed (install Debian's libcurl4 "
                              "package)\n");
    cli_result_free(&r);
    free(library_path);
    free(fake);
    kube_test_rmtree(dir);
}

/* Runs scripts/commit-header.cmake for `source` and returns the commit it wrote. */
static char *commit_of(const char *source, const char *dir)
{
    char *out = gc_xasprintf("%s/commit.h", dir);
    char *script = gc_xasprintf("cmake -DGIT=\"$(command -v git)\" -DSOURCE_DIR='%s' -DOUT='%s' "
                                "-P '%s/scripts/commit-header.cmake'",
                                source, out, GCLUSTER_SOURCE_DIR);
    char *argv[] = {"sh", "-c", script, NULL};
    assert_int_equal(kube_test_run(argv, 60000), 0);
    char *header = kube_test_read(out);
    assert_non_null(header);
    char commit[128];
    assert_int_equal(sscanf(header, "#define GCLUSTER_COMMIT \"%127[^\"]\"", commit), 1);
    free(header);
    free(script);
    free(out);
    return gc_xstrdup(commit);
}

/* In the checkout: its commit. From an unpacked tarball (no .git), even one that sits inside
 * another git work tree: "unknown". */
static void commit_header_says_the_commit_or_unknown(void **state)
{
    (void)state;
    char *dir = kube_test_tmpdir();
    struct stat st;
    char *git_dir = gc_xasprintf("%s/.git", GCLUSTER_SOURCE_DIR);
    if (stat(git_dir, &st) == 0) {
        char *commit = commit_of(GCLUSTER_SOURCE_DIR, dir);
        char *head_file = gc_xasprintf("%s/head", dir);
        char *script = gc_xasprintf("git -C '%s' rev-parse --short=12 HEAD > '%s'",
                                    GCLUSTER_SOURCE_DIR, head_file);
        char *argv[] = {"sh", "-c", script, NULL};
        assert_int_equal(kube_test_run(argv, 30000), 0);
        char *head = kube_test_read(head_file);
        head[strcspn(head, "\n")] = '\0';
        if (!strstr(commit, head))
            fail_msg("commit-header.cmake wrote %s for HEAD %s", commit, head);
        free(head);
        free(script);
        free(head_file);
        free(commit);
    }
    free(git_dir);
    char *unpacked = gc_xasprintf("%s/unpacked", dir);
    assert_int_equal(mkdir(unpacked, 0700), 0);
    char *commit = commit_of(unpacked, dir);
    assert_string_equal(commit, "unknown");
    free(commit);
    char *inside = gc_xasprintf("%s/tests/unit", GCLUSTER_SOURCE_DIR);
    commit = commit_of(inside, dir);
    assert_string_equal(commit, "unknown");
    free(commit);
    free(inside);
    free(unpacked);
    kube_test_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_commit_and_libcurl),
        cmocka_unit_test(version_without_a_usable_libcurl),
        cmocka_unit_test(commit_header_says_the_commit_or_unknown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
