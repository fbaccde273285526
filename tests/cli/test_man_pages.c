/*
 * The man pages the build generates (build/man): one per command and group that --help lists,
 * none for anything else, every flag --help shows documented in its page, and each page clean
 * for groff. --help is the reference because it is what the user sees; the pages must not lag
 * behind it.
 */
#include "kube_test.h"
#include "run_cli.h"

#include "gcluster/buf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>

#define MAN_DIR  GCLUSTER_BINARY_DIR "/man"
#define MAX_CMDS 64

typedef struct command_paths {
    char *paths[MAX_CMDS]; /* "" for gcluster itself, "job", "job submit", ... */
    size_t count;
} command_paths;

static void help_of(const char *path, cli_result *r)
{
    const char *args[16];
    size_t n = 0;
    char *words = gc_xstrdup(path);
    for (char *w = strtok(words, " "); w && n < 14; w = strtok(NULL, " "))
        args[n++] = w;
    args[n++] = "--help";
    args[n] = NULL;
    const char *env[] = {"HOME=/nonexistent-home-for-tests", NULL};
    run_cli(r, args, env);
    free(words);
    if (r->exit_code != 0)
        fail_msg("gcluster %s --help: exit %d: %s", path, r->exit_code, r->err.data);
}

static void add_path(command_paths *c, const char *path)
{
    for (size_t i = 0; i < c->count; i++)
        if (!strcmp(c->paths[i], path))
            return;
    assert_true(c->count < MAX_CMDS);
    c->paths[c->count++] = gc_xstrdup(path);
}

/* Every command of `gcluster --help`'s list ("  job submit   summary", long paths on a line of
 * their own), and each group above it. */
static void list_commands(command_paths *c)
{
    cli_result r;
    help_of("", &r);
    add_path(c, "");
    const char *list = strstr(r.out.data, "\nCommands:\n");
    assert_non_null(list);
    for (const char *line = list + strlen("\nCommands:\n"); strncmp(line, "  ", 2) == 0;) {
        const char *end = strchr(line, '\n');
        const char *text = line + 2;
        if (*text != ' ') {
            const char *stop = strstr(text, "  ");
            char *path = gc_xstrndup(text, (size_t)((stop && stop < end ? stop : end) - text));
            for (char *space = path; (space = strchr(space, ' ')) != NULL; space++) {
                *space = '\0';
                add_path(c, path);
                *space = ' ';
            }
            add_path(c, path);
            free(path);
        }
        line = end + 1;
    }
    cli_result_free(&r);
}

static char *page_path(const char *path)
{
    char *file = gc_xasprintf(MAN_DIR "/gcluster%s%s.1", *path ? "-" : "", path);
    for (char *p = file + strlen(MAN_DIR "/gcluster"); *p; p++)
        if (*p == ' ')
            *p = '-';
    return file;
}

static char *roff_flag(const char *flag)
{
    gc_buf b;
    gc_buf_init(&b);
    gc_buf_puts(&b, "\\fB");
    for (const char *p = flag; *p; p++)
        gc_buf_puts(&b, *p == '-' ? "\\-" : (char[]){*p, 0});
    gc_buf_puts(&b, "\\fR");
    return gc_buf_detach(&b);
}

/* Every "  -x, --flag" and "      --flag" line of a help text is in the page. */
static void assert_flags_documented(const char *path, const char *help, const char *page)
{
    size_t flags = 0;
    for (const char *line = help; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        char short_flag[3] = "", long_flag[96] = "";
        if (sscanf(line, "  -%c, --%95[a-z0-9-]", &short_flag[1], long_flag) == 2)
            short_flag[0] = '-';
        else if (sscanf(line, "      --%95[a-z0-9-]", long_flag) != 1)
            continue;
        char *dashed = gc_xasprintf("--%s", long_flag);
        char *entry = roff_flag(dashed);
        if (!strstr(page, entry))
            fail_msg("gcluster %s: %s is in --help but not in its man page", path, dashed);
        free(entry);
        free(dashed);
        if (short_flag[0]) {
            entry = roff_flag(short_flag);
            if (!strstr(page, entry))
                fail_msg("gcluster %s: %s is in --help but not in its man page", path, short_flag);
            free(entry);
        }
        flags++;
    }
    /* Every page has at least the global flags. */
    assert_true(flags >= 9);
}

static void every_command_has_a_page_with_every_flag(void **state)
{
    (void)state;
    command_paths c = {0};
    list_commands(&c);
    assert_true(c.count >= 12);
    for (size_t i = 0; i < c.count; i++) {
        char *file = page_path(c.paths[i]);
        gc_buf page;
        gc_buf_init(&page);
        if (read_file(file, &page) != 0)
            fail_msg("gcluster %s has no man page (%s)", c.paths[i], file);
        cli_result help;
        help_of(c.paths[i], &help);
        assert_flags_documented(c.paths[i], help.out.data, page.data);
        cli_result_free(&help);
        gc_buf_free(&page);
        free(file);
    }
    /* And no page for anything --help does not list (hidden or removed commands). */
    DIR *dir = opendir(MAN_DIR);
    assert_non_null(dir);
    size_t pages = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        bool known = false;
        for (size_t i = 0; i < c.count && !known; i++) {
            char *file = page_path(c.paths[i]);
            known = !strcmp(strrchr(file, '/') + 1, e->d_name);
            free(file);
        }
        if (!known)
            fail_msg("%s/%s documents no command --help lists", MAN_DIR, e->d_name);
        pages++;
    }
    closedir(dir);
    assert_int_equal(pages, c.count);
    for (size_t i = 0; i < c.count; i++)
        free(c.paths[i]);
}

/* The page `name` (gcluster-job-logs.1) contains every one of `texts` and, when `absent` is not
 * NULL, not that. */
static void assert_page_has(const char *name, const char *const *texts, const char *absent)
{
    char *file = gc_xasprintf(MAN_DIR "/%s", name);
    gc_buf page;
    gc_buf_init(&page);
    assert_int_equal(read_file(file, &page), 0);
    for (const char *const *t = texts; *t; t++)
        if (!strstr(page.data, *t))
            fail_msg("%s lacks %s", name, *t);
    if (absent && strstr(page.data, absent))
        fail_msg("%s has %s", name, absent);
    gc_buf_free(&page);
    free(file);
}

/* A page shows a closed set of values where its flag takes one, and the compute-type forms. */
static void pages_carry_values_and_notes(void **state)
{
    (void)state;
    assert_page_has("gcluster-job-logs.1",
                    (const char *const[]){"\\fB\\-\\-role\\fR \\fIhead|worker\\fR", NULL}, NULL);
    assert_page_has("gcluster-job-submit.1",
                    (const char *const[]){".SH NOTES",
                                          "\\fB\\-\\-dry\\-run\\fR \\fIserver|client\\fR",
                                          "ct6e\\-standard\\-{1t,4t,8t}", NULL},
                    NULL);
    assert_page_has("gcluster.1",
                    (const char *const[]){".B job wait\n", "gcluster\\-job\\-wait(1)", NULL},
                    "__complete");
}

/* groff reads every page without a warning (-ww: all of them). */
static void pages_are_clean_roff(void **state)
{
    (void)state;
    char *tmp = kube_test_tmpdir();
    char *log = gc_xasprintf("%s/groff.log", tmp);
    DIR *dir = opendir(MAN_DIR);
    assert_non_null(dir);
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        char *file = gc_xasprintf("%s/%s", MAN_DIR, e->d_name);
        char *script = gc_xasprintf("groff -man -Tutf8 -ww -z '%s' 2>'%s'", file, log);
        char *argv[] = {"sh", "-c", script, NULL};
        assert_int_equal(kube_test_run(argv, 30000), 0);
        char *warnings = kube_test_read(log);
        assert_non_null(warnings);
        if (*warnings)
            fail_msg("groff on %s: %s", e->d_name, warnings);
        free(warnings);
        free(script);
        free(file);
    }
    closedir(dir);
    free(log);
    kube_test_rmtree(tmp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_command_has_a_page_with_every_flag),
        cmocka_unit_test(pages_carry_values_and_notes),
        cmocka_unit_test(pages_are_clean_roff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
