/*
 * Every flag of Google's `gcluster job` and `gcluster cluster` (tests/fixtures/google-gcluster-
 * flags.txt, taken from Cluster Toolkit's source at the commit it names) is accepted by our
 * option tables with the same long name, short name and kind, and parses. A flag marked
 * unsupported must really be refused and be named in README.md's differences.
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

#include <cmocka.h>

typedef struct flag_line {
    int line;
    char command[64]; /* "job", "job.submit", ... */
    char flag[64];    /* without "--" */
    char short_name;  /* 0 for none */
    char kind[160];   /* bool, string, int, list, value:TEXT */
    char status[64];  /* "" or unsupported */
} flag_line;

static flag_line *lines;
static size_t line_count;
static gc_buf readme;

static int load(void **state)
{
    (void)state;
    gc_buf text;
    gc_buf_init(&text);
    gc_buf_init(&readme);
    if (read_file(GCLUSTER_SOURCE_DIR "/tests/fixtures/google-gcluster-flags.txt", &text) ||
        read_file(GCLUSTER_SOURCE_DIR "/README.md", &readme))
        return -1;
    lines = gc_xcalloc(256, sizeof(*lines));
    int n = 0;
    for (char *save = NULL, *l = strtok_r(text.data, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
        n++;
        if (l[0] == '#' || !l[0])
            continue;
        if (line_count == 256)
            return -1;
        flag_line *f = &lines[line_count++];
        char flag[64], shortn[8], source[128];
        int got = sscanf(l, "%63s %63s %7s %159s %127s %63s", f->command, flag, shortn, f->kind,
                         source, f->status);
        if (got < 5 || strncmp(flag, "--", 2) != 0)
            return -1;
        f->line = n;
        snprintf(f->flag, sizeof(f->flag), "%s", flag + 2);
        f->short_name = strcmp(shortn, "-") ? shortn[1] : 0;
    }
    gc_buf_free(&text);
    return line_count ? 0 : -1;
}

static int unload(void **state)
{
    (void)state;
    free(lines);
    gc_buf_free(&readme);
    return 0;
}

/* Google's commands that a fixture COMMAND stands for (ours of the same words). */
static size_t commands_of(const char *command, const char *paths[8])
{
    static const char *const job[] = {"job submit", "job inspect",    "job list",        "job logs",
                                      "job cancel", "job config set", "job config list", NULL};
    static const char *const cluster[] = {"cluster list", "cluster describe", "cluster info", NULL};
    const char *const *group = !strcmp(command, "job")       ? job
                               : !strcmp(command, "cluster") ? cluster
                                                             : NULL;
    size_t n = 0;
    for (; group && group[n]; n++)
        paths[n] = group[n];
    if (group)
        return n;
    static char one[64];
    snprintf(one, sizeof(one), "%s", command);
    for (char *c = one; *c; c++)
        if (*c == '.')
            *c = ' ';
    paths[0] = one;
    return 1;
}

static const cli_command *find(const char *path)
{
    char copy[64];
    snprintf(copy, sizeof(copy), "%s", path);
    const char *words[4];
    size_t count = 0;
    for (char *save = NULL, *w = strtok_r(copy, " ", &save); w && count < 4;
         w = strtok_r(NULL, " ", &save))
        words[count++] = w;
    size_t used;
    const cli_command *cmd = cli_command_find(words, count, &used);
    return used == count && !cmd->subcommands ? cmd : NULL;
}

/* A value the option takes: the first of a closed set, a number, else a word. */
static const char *sample_value(const cli_option *o)
{
    if (o->values && o->values->names && !o->values->open)
        return o->values->names[0];
    return o->kind == CLI_OPT_INT ? "1" : "x";
}

/* Parses `--flag [VALUE]` (or `-s [VALUE]`) with the command's own table; returns 0 or why not. */
static int parse_one(const cli_command *cmd, const cli_option *o, bool use_short, gc_error *err)
{
    char name[80];
    if (use_short)
        snprintf(name, sizeof(name), "-%c", o->short_name);
    else
        snprintf(name, sizeof(name), "--%s", o->long_name);
    char *argv[] = {name, (char *)sample_value(o), NULL};
    int argc = cli_option_takes_value(o) ? 2 : 1;
    void *args = gc_xcalloc(1, cmd->args_size);
    if (cmd->init_args)
        cmd->init_args(args);
    cli_parsed parsed;
    int rc = cli_parse(cmd->options, args, argc, argv, &parsed, err);
    free(args);
    return rc;
}

/* What is wrong with our `path` for this line, or "" (into `why`). */
static void check_flag(const flag_line *f, const char *path, gc_buf *why)
{
    const cli_command *cmd = find(path);
    if (!cmd) {
        gc_buf_printf(why, "no command \"%s\"", path);
        return;
    }
    const cli_option *o = cli_find_option(cmd->options, f->flag, strlen(f->flag), 0);
    if (!o) {
        gc_buf_printf(why, "%s has no --%s", path, f->flag);
        return;
    }
    if (f->short_name && cli_find_option(cmd->options, NULL, 0, f->short_name) != o)
        gc_buf_printf(why, "%s: -%c is not --%s", path, f->short_name, f->flag);
    bool google_bool = !strcmp(f->kind, "bool");
    if (google_bool != (o->kind == CLI_OPT_BOOL))
        gc_buf_printf(why, "%s: --%s is %s here, %s in Google's", path, f->flag,
                      o->kind == CLI_OPT_BOOL ? "a switch" : "a flag with a value", f->kind);
    gc_error err = {0};
    if (!why->len && parse_one(cmd, o, false, &err))
        gc_buf_printf(why, "%s --%s does not parse: %s", path, f->flag, err.message);
    if (!why->len && f->short_name && parse_one(cmd, o, true, &err))
        gc_buf_printf(why, "%s -%c does not parse: %s", path, f->short_name, err.message);
}

/* An offline submit with the value form: 0 when it is accepted. */
static int submit_with_value(const flag_line *f, cli_result *r)
{
    const char *value = f->kind + strlen("value:");
    bool compute = !strcmp(f->flag, "compute-type");
    char flag[80];
    snprintf(flag, sizeof(flag), "--%s", f->flag);
    const char *args[] = {"job",
                          "submit",
                          "--name",
                          "flag-test",
                          "--image",
                          "registry.example/img:1",
                          "--command",
                          "true",
                          "--dry-run-out",
                          "-",
                          "--topology",
                          compute ? "2x2x1" : "4x4",
                          "--compute-type",
                          compute ? value : "v6e-16",
                          compute ? NULL : flag,
                          value,
                          NULL};
    const char *env[] = {"HOME=/nonexistent-home-for-tests", NULL};
    run_cli(r, args, env);
    return r->exit_code;
}

static void every_google_flag_is_accepted(void **state)
{
    (void)state;
    gc_buf problems;
    gc_buf_init(&problems);
    size_t checked = 0;
    for (size_t i = 0; i < line_count; i++) {
        const flag_line *f = &lines[i];
        if (f->status[0] || !strncmp(f->kind, "value:", 6))
            continue;
        const char *paths[8];
        size_t n = commands_of(f->command, paths);
        for (size_t p = 0; p < n; p++, checked++) {
            gc_buf why;
            gc_buf_init(&why);
            check_flag(f, paths[p], &why);
            if (why.len)
                gc_buf_printf(&problems, "fixture line %d: %s\n", f->line, why.data);
            gc_buf_free(&why);
        }
    }
    if (problems.len)
        fail_msg("%s", problems.data);
    assert_true(checked > 70); /* the fixture was read whole: 60 flags, persistent ones x7 */
    gc_buf_free(&problems);
}

/* The value forms of a flag (the `;` form of --mount, --compute-type tpu-v7x-slice) give a
 * manifest in an offline submit. */
static void every_google_value_form_is_accepted(void **state)
{
    (void)state;
    size_t checked = 0;
    for (size_t i = 0; i < line_count; i++) {
        const flag_line *f = &lines[i];
        if (f->status[0] || strncmp(f->kind, "value:", 6) != 0)
            continue;
        cli_result r;
        int rc = submit_with_value(f, &r);
        if (rc != 0)
            fail_msg("fixture line %d: --%s %s exits %d: %s", f->line, f->flag, f->kind + 6, rc,
                     r.err.data);
        assert_non_null(strstr(r.out.data, "kind: JobSet"));
        cli_result_free(&r);
        checked++;
    }
    assert_true(checked >= 2);
}

/* What we leave out on purpose is refused (not half-accepted) and explained in the README. */
static void unsupported_flags_are_refused_and_documented(void **state)
{
    (void)state;
    const char *section = strstr(readme.data, "## Differences from Google's gcluster");
    assert_non_null(section);
    const char *end = strstr(section + 3, "\n## ");
    size_t len = end ? (size_t)(end - section) : strlen(section);
    for (size_t i = 0; i < line_count; i++) {
        const flag_line *f = &lines[i];
        if (strcmp(f->status, "unsupported") != 0)
            continue;
        char needle[96];
        snprintf(needle, sizeof(needle), "--%s", f->flag);
        bool documented = false;
        for (const char *at = section; (at = strstr(at, needle)) && at < section + len; at++)
            documented = true;
        /* A flag of a command we do not have is documented by the command's name. */
        char command[64];
        snprintf(command, sizeof(command), "%s", f->command);
        for (char *c = command; *c; c++)
            if (*c == '.')
                *c = ' ';
        const char *by_command = strstr(section, command);
        if (!documented && !(by_command && by_command < section + len))
            fail_msg("fixture line %d: --%s is unsupported but README's differences do not say "
                     "why",
                     f->line, f->flag);
        const char *paths[8];
        size_t n = commands_of(f->command, paths);
        for (size_t p = 0; p < n; p++) {
            const cli_command *cmd = find(paths[p]);
            if (cmd && cli_find_option(cmd->options, f->flag, strlen(f->flag), 0))
                fail_msg("fixture line %d: %s now accepts --%s: remove \"unsupported\"", f->line,
                         paths[p], f->flag);
        }
    }
}

/* The test's own checks can fail: a flag we lack, a short name on another flag, a kind. */
static void the_checks_find_planted_differences(void **state)
{
    (void)state;
    flag_line missing = {.command = "job.list", .flag = "no-such-flag", .kind = "string"};
    flag_line wrong_short = {
        .command = "job.logs", .flag = "follow", .short_name = 'x', .kind = "bool"};
    flag_line wrong_kind = {.command = "job.list", .flag = "name-contains", .kind = "bool"};
    const flag_line *planted[] = {&missing, &wrong_short, &wrong_kind};
    for (size_t i = 0; i < 3; i++) {
        gc_buf why;
        gc_buf_init(&why);
        const char *paths[8];
        commands_of(planted[i]->command, paths);
        check_flag(planted[i], paths[0], &why);
        if (!why.len)
            fail_msg("planted difference %zu was not found", i);
        gc_buf_free(&why);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_google_flag_is_accepted),
        cmocka_unit_test(every_google_value_form_is_accepted),
        cmocka_unit_test(unsupported_flags_are_refused_and_documented),
        cmocka_unit_test(the_checks_find_planted_differences),
    };
    return cmocka_run_group_tests(tests, load, unload);
}
