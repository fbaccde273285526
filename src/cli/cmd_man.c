/*
 * gcluster __man DIR: writes one man page per command and group (gcluster(1), gcluster-job(1),
 * gcluster-job-submit(1), ...) from the command and option tables, the same ones --help and
 * parsing use. The build runs it; `make install` installs the pages.
 */
#include "cli/cli.h"

#include "gcluster/buf.h"
#include "gcluster/sys.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct man_args {
    cli_globals g;
} man_args;

static const cli_option man_options[] = {CLI_END};

/* Text as roff reads it literally: backslashes and hyphens escaped, and no line starting with a
 * control character. */
static void roff_text(gc_buf *b, const char *text)
{
    bool line_start = true;
    for (const char *p = text; *p; p++) {
        if (line_start && (*p == '.' || *p == '\''))
            gc_buf_puts(b, "\\&");
        if (*p == '\\')
            gc_buf_puts(b, "\\e");
        else if (*p == '-')
            gc_buf_puts(b, "\\-");
        else
            gc_buf_putc(b, *p);
        line_start = *p == '\n';
    }
}

static void roff_line(gc_buf *b, const char *macro, const char *text)
{
    gc_buf_printf(b, "%s", macro);
    roff_text(b, text);
    gc_buf_putc(b, '\n');
}

static void page_name(const char *path, char *out, size_t size)
{
    snprintf(out, size, "gcluster%s%s", *path ? "-" : "", path);
    for (char *c = out; *c; c++)
        if (*c == ' ')
            *c = '-';
}

static void write_option(gc_buf *b, const cli_option *o, const cli_option *command_options)
{
    gc_buf_puts(b, ".TP\n");
    char short_name = cli_shown_short(o, command_options);
    if (short_name)
        gc_buf_printf(b, "\\fB\\-%c\\fR, ", short_name);
    gc_buf_puts(b, "\\fB\\-\\-");
    roff_text(b, o->long_name);
    gc_buf_puts(b, "\\fR");
    if (cli_option_takes_value(o)) {
        char arg[256];
        gc_buf_puts(b, " \\fI");
        roff_text(b, cli_option_arg(o, arg, sizeof(arg)));
        gc_buf_puts(b, "\\fR");
    }
    gc_buf_putc(b, '\n');
    roff_text(b, o->help);
    gc_buf_putc(b, '\n');
}

static void write_options(gc_buf *b, const cli_option *options, const char *first_heading,
                          const cli_option *command_options)
{
    const char *heading = first_heading;
    for (const cli_option *o = options; o && o->kind != CLI_OPT_END; o++) {
        if (o->kind == CLI_OPT_GROUP) {
            heading = o->help;
            continue;
        }
        if (heading) {
            roff_line(b, ".SS ", heading);
            heading = NULL;
        }
        write_option(b, o, command_options);
    }
}

static void write_command_entry(const cli_command *cmd, const char *path, void *ctx)
{
    gc_buf *b = ctx;
    char page[160];
    page_name(path, page, sizeof(page));
    gc_buf_puts(b, ".TP\n");
    roff_line(b, ".B ", path);
    roff_text(b, cmd->summary);
    gc_buf_puts(b, " (");
    roff_text(b, page);
    gc_buf_puts(b, "(1))\n");
}

static void write_see_also(gc_buf *b, const cli_command *cmd, const char *path)
{
    gc_buf_puts(b, ".SH SEE ALSO\n");
    char parent[128];
    snprintf(parent, sizeof(parent), "%s", path);
    char *space = strrchr(parent, ' ');
    *(space ? space : parent) = '\0';
    char page[160];
    bool first = true;
    if (*path) {
        page_name(parent, page, sizeof(page));
        roff_text(b, page);
        gc_buf_puts(b, "(1)");
        first = false;
    }
    for (const cli_command *const *c = cmd->subcommands; c && *c; c++) {
        if ((*c)->hidden)
            continue;
        char child[128];
        snprintf(child, sizeof(child), "%s%s%s", path, *path ? " " : "", (*c)->name);
        page_name(child, page, sizeof(page));
        gc_buf_puts(b, first ? "" : ", ");
        roff_text(b, page);
        gc_buf_puts(b, "(1)");
        first = false;
    }
    gc_buf_putc(b, '\n');
}

static void write_page(gc_buf *b, const cli_command *cmd, const char *path)
{
    char name[160];
    page_name(path, name, sizeof(name));
    char upper[160];
    for (size_t i = 0; i < sizeof(upper); i++)
        if (!(upper[i] = (char)toupper((unsigned char)name[i])))
            break;
    gc_buf_puts(b, ".TH ");
    roff_text(b, upper);
    gc_buf_printf(b, " 1 \"\" \"gcluster %s\" \"gcluster manual\"\n", GCLUSTER_VERSION);
    gc_buf_puts(b, ".SH NAME\n");
    roff_text(b, name);
    gc_buf_puts(b, " \\- ");
    roff_text(b, cmd->summary);
    gc_buf_puts(b, "\n.SH SYNOPSIS\n.B gcluster\n");
    roff_text(b, cmd->usage);
    gc_buf_puts(b, "\n.SH DESCRIPTION\n");
    gc_buf_putc(b, (char)toupper((unsigned char)cmd->summary[0]));
    roff_text(b, cmd->summary + 1);
    gc_buf_puts(b, ".\n");
    if (cmd->description) {
        gc_buf_puts(b, ".PP\n");
        roff_text(b, cmd->description);
        gc_buf_putc(b, '\n');
    }
    if (cmd->subcommands) {
        gc_buf_puts(b, ".SH COMMANDS\n");
        cli_for_each_command(cmd, path, write_command_entry, b);
    }
    gc_buf_puts(b, ".SH OPTIONS\n");
    write_options(b, cmd->options, NULL, NULL);
    write_options(b, cli_global_options, NULL, cmd->options);
    if (cmd->footer) {
        gc_buf_puts(b, ".SH NOTES\n.nf\n");
        roff_text(b, cmd->footer());
        gc_buf_puts(b, ".fi\n");
    }
    gc_buf_puts(b, ".SH EXIT STATUS\n0 success; 1 an API or runtime failure; 2 bad input "
                   "(nothing was sent to a cluster); 3 the job itself failed.\n");
    write_see_also(b, cmd, path);
}

static int write_pages(const char *dir, const cli_command *cmd, const char *path, gc_error *err)
{
    if (cmd->hidden)
        return 0;
    gc_buf page;
    gc_buf_init(&page);
    write_page(&page, cmd, path);
    char name[160];
    page_name(path, name, sizeof(name));
    char *file = gc_xasprintf("%s/%s.1", dir, name);
    int rc = gc_file_write(file, page.data, page.len, err);
    free(file);
    gc_buf_free(&page);
    for (const cli_command *const *c = cmd->subcommands; !rc && c && *c; c++) {
        char child[128];
        snprintf(child, sizeof(child), "%s%s%s", path, *path ? " " : "", (*c)->name);
        rc = write_pages(dir, *c, child, err);
    }
    return rc;
}

static int man_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    (void)args;
    if (parsed->positional_count != 1)
        return gc_fail(err, GC_EXIT_USAGE, "usage: gcluster __man DIR (an existing directory)");
    return write_pages(parsed->positional[0], &cli_root, "", err);
}

const cli_command cmd_man = {
    .name = "__man",
    .summary = "write the man pages into a directory",
    .usage = "__man DIR",
    .options = man_options,
    .args_size = sizeof(man_args),
    .run = man_run,
    .hidden = true,
};
