/*
 * gcluster __complete WORD... CURRENT: what the shell may put in place of CURRENT, the last
 * word of a partly typed command line (the words before it are complete). The scripts of
 * `gcluster completion` call it at every <TAB>, so the answer comes from the same command and
 * option tables as --help and parsing.
 *
 * Output: one candidate per line, optionally followed by a tab and a description (zsh and fish
 * show it); a line ":files" asks the shell to complete file names as well. The exit status is 0
 * whatever the words are, errors are not reported, and the scripts discard stderr: completion
 * must never disturb the command line being typed.
 */
#include "cli/cli.h"

#include "gcluster/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Job names come from one list request; a cluster that does not answer quickly is skipped
 * rather than making the shell wait. */
#define COMPLETE_REQUEST_SECONDS 2
#define COMPLETE_EXEC_SECONDS    5

/* What the words before the current one say. */
typedef struct typed {
    const cli_command *cmd;
    const cli_option *pending; /* the last word is an option still waiting for its value */
    bool options_ended;        /* "--" was typed */
    cli_globals globals;       /* where the job names come from */
    const char *const *operands;
    size_t operand_count;
    const cli_option *given[64]; /* options already typed, not offered again */
    size_t given_count;
} typed;

static void remember(typed *t, const cli_option *o, const char *value)
{
    if (t->given_count < sizeof(t->given) / sizeof(*t->given))
        t->given[t->given_count++] = o;
    /* The global string options fill cli_globals, so a job list goes to the cluster they name. */
    for (const cli_option *g = cli_global_options; g->kind != CLI_OPT_END; g++)
        if (g == o && o->kind == CLI_OPT_STRING && value)
            *(const char **)((char *)&t->globals + o->offset) = value;
}

/* "--name", "--name=value", "-n", "-nvalue" or bundled flags "-vA". Returns the option that still
 * needs the next word as its value, or NULL. */
static const cli_option *read_option(typed *t, const char *word)
{
    if (word[1] == '-') {
        const char *eq = strchr(word + 2, '=');
        size_t len = eq ? (size_t)(eq - word - 2) : strlen(word + 2);
        const cli_option *o = cli_find_option(t->cmd->options, word + 2, len, 0);
        if (!o)
            return NULL;
        remember(t, o, eq ? eq + 1 : NULL);
        return cli_option_takes_value(o) && !eq ? o : NULL;
    }
    for (const char *p = word + 1; *p; p++) {
        const cli_option *o = cli_find_option(t->cmd->options, NULL, 0, *p);
        if (!o)
            return NULL;
        if (!cli_option_takes_value(o)) {
            remember(t, o, NULL);
            continue;
        }
        remember(t, o, p[1] ? p + 1 : NULL);
        return p[1] ? NULL : o;
    }
    return NULL;
}

static void read_words(typed *t, char **words, size_t count)
{
    size_t used;
    t->cmd = cli_command_find((const char *const *)words, count, &used);
    t->operands = (const char *const *)words + count;
    for (size_t i = used; i < count; i++) {
        const char *w = words[i];
        if (t->pending) {
            remember(t, t->pending, w);
            t->pending = NULL;
        } else if (!t->options_ended && !strcmp(w, "--")) {
            t->options_ended = true;
        } else if (!t->options_ended && w[0] == '-' && w[1]) {
            t->pending = read_option(t, w);
        } else {
            if (!t->operand_count)
                t->operands = (const char *const *)words + i;
            t->operand_count++;
        }
    }
}

static bool starts_with(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

typedef struct offer {
    const char *prefix;  /* printed before each value ("--output=") */
    const char *current; /* what the value typed so far is */
    const typed *t;      /* job names already typed are not offered again */
} offer;

/* Candidates go to the shell as they are (an escaped name would not be the name), so a value
 * holding a byte a terminal acts on (a job name read from the cluster) is not offered at all. */
static bool printable(const char *s)
{
    for (size_t i = 0, len = strlen(s), n; i < len; i += n)
        if (!(n = gc_text_printable_char(s + i, len - i)))
            return false;
    return true;
}

static void offer_value(void *ctx, const char *value)
{
    const offer *o = ctx;
    if (!starts_with(value, o->current) || !printable(value))
        return;
    for (size_t i = 0; o->t && i < o->t->operand_count; i++)
        if (!strcmp(o->t->operands[i], value))
            return;
    printf("%s%s\n", o->prefix, value);
}

static void offer_job_names(typed *t, offer *o)
{
    cli_apply_stored_defaults(&t->globals);
    gc_kube_options opts = {
        .kubeconfig = t->globals.kubeconfig,
        .context = t->globals.context,
        .cluster = t->globals.cluster,
        .location = t->globals.location,
        .project = t->globals.project,
        .ns = t->globals.ns,
        .exec_timeout_seconds = COMPLETE_EXEC_SECONDS,
        .request_timeout_seconds = COMPLETE_REQUEST_SECONDS,
    };
    gc_kube *kube;
    gc_error err = {0};
    if (gc_kube_open(&opts, &kube, &err))
        return;
    gc_job_names(kube, o->current, offer_value, o, &err);
    gc_kube_close(kube);
}

static void offer_values(typed *t, const cli_values *values, offer *o)
{
    if (!values || values->files) {
        puts(":files");
        return;
    }
    for (const char *const *n = values->names; n && *n; n++)
        offer_value(o, *n);
    if (values->generate)
        values->generate(offer_value, o);
    if (values->job_names)
        offer_job_names(t, o);
}

/* The values of an option: numbers have none to offer. */
static void offer_option_values(typed *t, const cli_option *opt, offer *o)
{
    if (opt->kind != CLI_OPT_INT)
        offer_values(t, opt->values, o);
}

static bool already_given(const typed *t, const cli_option *o)
{
    if (o->kind == CLI_OPT_LIST || o->kind == CLI_OPT_COUNT)
        return false;
    for (size_t i = 0; i < t->given_count; i++)
        if (t->given[i] == o)
            return true;
    return false;
}

static void offer_options(const typed *t, const cli_option *table, const char *current)
{
    for (const cli_option *o = table; o && o->kind != CLI_OPT_END; o++) {
        if (o->kind == CLI_OPT_GROUP || already_given(t, o))
            continue;
        char flag[128];
        snprintf(flag, sizeof(flag), "--%s", o->long_name);
        if (starts_with(flag, current))
            printf("%s\t%s\n", flag, o->help);
    }
}

static void offer_subcommands(const cli_command *group, const char *current)
{
    for (const cli_command *const *c = group->subcommands; *c; c++)
        if (!(*c)->hidden && starts_with((*c)->name, current))
            printf("%s\t%s\n", (*c)->name, (*c)->summary);
    if (current[0] == '-')
        for (const char *const *f = (const char *const[]){"--help", "--version", NULL}; *f; f++)
            if (starts_with(*f, current))
                printf("%s\n", *f);
}

static void complete(typed *t, const char *current)
{
    offer o = {.prefix = "", .current = current, .t = t};
    if (t->cmd->hidden)
        return;
    if (t->cmd->subcommands) {
        if (!t->operand_count && !t->pending)
            offer_subcommands(t->cmd, current);
        return;
    }
    if (t->pending) {
        offer_option_values(t, t->pending, &o);
        return;
    }
    if (!t->options_ended && starts_with(current, "--") && strchr(current, '=')) {
        const char *eq = strchr(current, '=');
        const cli_option *opt =
            cli_find_option(t->cmd->options, current + 2, (size_t)(eq - current - 2), 0);
        char prefix[128];
        snprintf(prefix, sizeof(prefix), "%.*s", (int)(eq + 1 - current), current);
        o.prefix = prefix;
        o.current = eq + 1;
        if (opt && cli_option_takes_value(opt))
            offer_option_values(t, opt, &o);
        return;
    }
    const cli_values *operands = cli_command_operands(t->cmd);
    if (!t->options_ended && (current[0] == '-' || !operands)) {
        offer_options(t, t->cmd->options, current);
        offer_options(t, cli_global_options, current);
        return;
    }
    offer_values(t, operands, &o);
}

static int complete_run(int argc, char **argv, gc_error *err)
{
    (void)err;
    typed t = {0};
    size_t count = argc > 0 ? (size_t)argc - 1 : 0;
    read_words(&t, argv, count);
    complete(&t, argc > 0 ? argv[argc - 1] : "");
    fflush(stdout);
    return 0;
}

const cli_command cmd_complete = {
    .name = "__complete",
    .summary = "candidates for the last word of a partly typed command line",
    .usage = "__complete WORD... CURRENT",
    .run_words = complete_run,
    .hidden = true,
};
