/*
 * The opening every job command shares (in the spirit of tmux's cmd_entry): the job names from
 * the arguments or --name, each checked as a JobSet name before anything is sent, -o parsed from
 * the option's declared set of values, the command's own checks, then the cluster opened and the
 * command's work run with it. A command file holds only what is its own.
 */
#include "cli/cli.h"
#include "cli/render.h"

#include <string.h>

static void *at(void *args, size_t offset)
{
    return (char *)args + offset;
}

const cli_values *cli_command_operands(const cli_command *cmd)
{
    if (cmd->opening && cmd->opening->names != CLI_JOB_NONE)
        return &cli_job_names;
    return cmd->operands;
}

const cli_option *cli_command_option_at(const cli_command *cmd, size_t offset)
{
    for (const cli_option *o = cmd->options; o && o->kind != CLI_OPT_END; o++)
        if (o->kind != CLI_OPT_GROUP && o->offset == offset)
            return o;
    return NULL;
}

/* The arguments before `--` (after it comes a command line to run, for job connect). */
static cli_parsed names_only(const cli_parsed *parsed)
{
    cli_parsed before = *parsed;
    if (parsed->dashdash)
        before.positional_count = parsed->dashdash_at;
    return before;
}

static int take_one(const cli_command *cmd, void *args, const cli_parsed *parsed, gc_error *err)
{
    const cli_opening *op = cmd->opening;
    const char *flag = op->name_flag ? *(const char **)at(args, op->name_flag) : NULL;
    const char **name = at(args, op->name);
    cli_parsed before = names_only(parsed);
    if (op->names == CLI_JOB_ONE_OR_NONE && !flag && before.positional_count == 0) {
        *name = NULL;
        return 0;
    }
    int rc = cli_job_name(flag, &before, cmd->name, name, err);
    return rc ? rc : gc_job_name_check(*name, err);
}

static int take_many(const cli_command *cmd, void *args, const cli_parsed *parsed, gc_error *err)
{
    const cli_opening *op = cmd->opening;
    cli_parsed before = names_only(parsed);
    if (before.positional_count == 0)
        return gc_fail(err, GC_EXIT_USAGE, "job %s needs the jobs: gcluster job %s NAME...",
                       cmd->name, cmd->name);
    for (size_t i = 0; i < before.positional_count; i++)
        if (gc_job_name_check(before.positional[i], err))
            return GC_EXIT_USAGE;
    *(const char *const **)at(args, op->names_at) = parsed->positional; /* `before` is a copy */
    *(size_t *)at(args, op->count_at) = before.positional_count;
    return 0;
}

static int take_names(const cli_command *cmd, void *args, const cli_parsed *parsed, gc_error *err)
{
    switch (cmd->opening->names) {
    case CLI_JOB_ONE:
    case CLI_JOB_ONE_OR_NONE:
        return take_one(cmd, args, parsed, err);
    case CLI_JOB_MANY:
        return take_many(cmd, args, parsed, err);
    case CLI_JOB_NONE:
        break;
    }
    size_t count = names_only(parsed).positional_count;
    if (count)
        return gc_fail(err, GC_EXIT_USAGE,
                       "job %s takes no arguments (got \"%s\"); see gcluster job %s --help",
                       cmd->name, parsed->positional[0], cmd->name);
    return 0;
}

/* The format named by the option that fills `output`: its declared values say which formats the
 * command has (the table ones only where "wide" is one of them). */
static int take_format(const cli_command *cmd, void *args, gc_error *err)
{
    const cli_opening *op = cmd->opening;
    if (!op->output)
        return 0;
    const cli_option *o = cli_command_option_at(cmd, op->output);
    const char *text = *(const char **)at(args, op->output);
    bool wide = o && o->values && cli_value_allowed(o->values, "wide");
    return cli_format_parse(text, wide, at(args, op->format), err);
}

int cli_opening_run(const cli_command *cmd, void *args, const cli_parsed *parsed, gc_error *err)
{
    const cli_opening *op = cmd->opening;
    int rc = take_names(cmd, args, parsed, err);
    if (!rc)
        rc = take_format(cmd, args, err);
    if (!rc && op->check)
        rc = op->check(args, parsed, err);
    return rc ? rc : cli_with_kube(args, op->with, args, err);
}
