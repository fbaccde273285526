/*
 * .dockerignore matching: Docker's pattern rules, gcluster's defaults, and bad patterns.
 */
#include "image/ignore.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static image_ignore *from_text(const char *text)
{
    image_ignore *ig = image_ignore_new();
    gc_error err = {0};
    if (image_ignore_add_text(ig, text, ".dockerignore", &err) != 0)
        fail_msg("patterns rejected: %s", err.message);
    return ig;
}

static void assert_excluded(const image_ignore *ig, const char *path, bool want)
{
    if (image_ignore_excludes(ig, path) != want)
        fail_msg("%s should be %s", path, want ? "excluded" : "included");
}

static void globs_stay_within_one_segment(void **state)
{
    (void)state;
    assert_true(image_ignore_glob_match("*.py", "train.py"));
    assert_false(image_ignore_glob_match("*.py", "src/train.py"));
    assert_true(image_ignore_glob_match("src/*.py", "src/train.py"));
    assert_true(image_ignore_glob_match("data?.csv", "data1.csv"));
    assert_false(image_ignore_glob_match("data?.csv", "data10.csv"));
    assert_false(image_ignore_glob_match("a?b", "a/b"));
    assert_true(image_ignore_glob_match("file[0-9].txt", "file7.txt"));
    assert_false(image_ignore_glob_match("file[0-9].txt", "filex.txt"));
    assert_true(image_ignore_glob_match("file[^0-9].txt", "filex.txt"));
    assert_true(image_ignore_glob_match("file[!0-9].txt", "filex.txt"));
    assert_true(image_ignore_glob_match("\\*literal", "*literal"));
    assert_false(image_ignore_glob_match("\\*literal", "xliteral"));
}

static void double_star_spans_directories(void **state)
{
    (void)state;
    assert_true(image_ignore_glob_match("**/*.log", "a.log"));
    assert_true(image_ignore_glob_match("**/*.log", "x/y/a.log"));
    assert_true(image_ignore_glob_match("docs/**/*.md", "docs/a.md"));
    assert_true(image_ignore_glob_match("docs/**/*.md", "docs/x/y/a.md"));
    assert_false(image_ignore_glob_match("docs/**/*.md", "src/a.md"));
    assert_true(image_ignore_glob_match("build/**", "build/x/y"));
    assert_true(image_ignore_glob_match("**", "anything/at/all"));
}

static void a_directory_pattern_covers_its_contents(void **state)
{
    (void)state;
    image_ignore *ig = from_text("build\n/data/\n./cache//tmp\n");
    assert_excluded(ig, "build", true);
    assert_excluded(ig, "build/out/model.bin", true);
    assert_excluded(ig, "data/train.csv", true);
    assert_excluded(ig, "cache/tmp/x", true);
    assert_excluded(ig, "src/build", false);
    assert_excluded(ig, "builds", false);
    image_ignore_free(ig);
}

static void exceptions_reinclude_and_the_last_match_wins(void **state)
{
    (void)state;
    image_ignore *ig = from_text("# comment line\n"
                                 "*.md\n"
                                 "!README.md\n"
                                 "\n"
                                 "   \n"
                                 "logs\n"
                                 "!logs/keep.txt\n"
                                 "secret*\n"
                                 "!secret-ok\n"
                                 "secret-ok\n");
    assert_true(image_ignore_has_exceptions(ig));
    assert_excluded(ig, "NOTES.md", true);
    assert_excluded(ig, "README.md", false);
    assert_excluded(ig, "logs/a.txt", true);
    assert_excluded(ig, "logs/keep.txt", false);
    assert_excluded(ig, "secret-ok", true);
    assert_excluded(ig, "# comment line", false);
    image_ignore_free(ig);
}

static void whitespace_and_crlf_are_trimmed(void **state)
{
    (void)state;
    image_ignore *ig = from_text("\xEF\xBB\xBF"
                                 "first.txt\r\n  spaced.txt  \r\n! negated.txt\r\n");
    assert_excluded(ig, "first.txt", true);
    assert_excluded(ig, "spaced.txt", true);
    assert_false(image_ignore_excludes(ig, "negated.txt"));
    assert_true(image_ignore_has_exceptions(ig));
    image_ignore_free(ig);
}

static void bad_patterns_are_reported_with_their_line(void **state)
{
    (void)state;
    image_ignore *ig = image_ignore_new();
    gc_error err = {0};
    assert_int_equal(image_ignore_add_text(ig, "ok\n[unclosed\n", "ctx/.dockerignore", &err),
                     GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "ctx/.dockerignore:2"));
    assert_non_null(strstr(err.message, "[unclosed"));
    image_ignore_free(ig);
}

static char *make_context(void)
{
    char tmpl[] = "/tmp/gcluster-ignore-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    return strdup(tmpl);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void defaults_apply_and_dockerignore_can_override_them(void **state)
{
    (void)state;
    char *dir = make_context();
    image_ignore *ig = NULL;
    gc_error err = {0};
    assert_int_equal(image_ignore_load(dir, &ig, &err), 0);
    assert_excluded(ig, ".git/config", true);
    assert_excluded(ig, "sub/.git", true);
    assert_excluded(ig, "pkg1/__pycache__/m.pyc", true);
    assert_excluded(ig, "deep/node_modules/x/index.js", true);
    assert_excluded(ig, "run.log", true);
    assert_excluded(ig, "out/run.log", true);
    assert_excluded(ig, "tmp/scratch", true);
    assert_excluded(ig, "vendor/lib.go", true);
    assert_excluded(ig, "bin/tool", true);
    assert_excluded(ig, ".DS_Store", true);
    assert_excluded(ig, ".terraform/x", true);
    assert_excluded(ig, ".ghpc/x", true);
    assert_excluded(ig, ".ansible/x", true);
    /* Root-only defaults leave nested source directories alone. */
    assert_excluded(ig, "src/pkg/module.py", false);
    assert_excluded(ig, "tools/bin/run.sh", false);
    assert_excluded(ig, "train.py", false);
    image_ignore_free(ig);

    write_file(dir, ".dockerignore", "*.ckpt\n!bin\n");
    assert_int_equal(image_ignore_load(dir, &ig, &err), 0);
    assert_excluded(ig, "model.ckpt", true);
    assert_excluded(ig, "bin/tool", false);
    image_ignore_free(ig);

    write_file(dir, ".dockerignore", "[oops\n");
    assert_int_equal(image_ignore_load(dir, &ig, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "failed to read .dockerignore patterns"));

    char path[4096];
    snprintf(path, sizeof(path), "%s/.dockerignore", dir);
    unlink(path);
    rmdir(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(globs_stay_within_one_segment),
        cmocka_unit_test(double_star_spans_directories),
        cmocka_unit_test(a_directory_pattern_covers_its_contents),
        cmocka_unit_test(exceptions_reinclude_and_the_last_match_wins),
        cmocka_unit_test(whitespace_and_crlf_are_trimmed),
        cmocka_unit_test(bad_patterns_are_reported_with_their_line),
        cmocka_unit_test(defaults_apply_and_dockerignore_can_override_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
