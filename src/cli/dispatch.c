/*
 * Walks the command tree, parses options into the command's argument struct and runs it; prints
 * help generated from the same tables.
 */
#include "cli/commands.h"

#include "gcluster/buf.h"
#include "gcluster/sys.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cli_command *const job_config_commands[] = {&cmd_job_config_set, &cmd_job_config_list,
                                                         NULL};

static const cli_command cmd_job_config = {
    .name = "config",
    .summary = "store default --cluster, --location and --project values",
    .usage = "job config (set KEY VALUE | list)",
    .description = "Defaults live in ~/.gcluster/context.json (keys: cluster, location, project) "
                   "and fill in flags that are not given.",
    .subcommands = job_config_commands,
};

static const cli_command *const job_commands[] = {
    &cmd_job_submit, &cmd_job_inspect,          &cmd_job_why,  &cmd_job_list,
    &cmd_job_logs,   &cmd_job_cancel,           &cmd_job_wait, &cmd_job_connect,
    &cmd_job_config, &cmd_job_template_extract, NULL};

static const cli_command cmd_job = {
    .name = "job",
    .summary = "submit, follow and cancel workloads (Pathways and ordinary JobSets)",
    .usage = "job <command> [flags]",
    .subcommands = job_commands,
};

static const cli_command *const cluster_commands[] = {&cmd_cluster_list, &cmd_cluster_describe,
                                                      &cmd_cluster_info, &cmd_cluster_volume, NULL};

static const cli_command cmd_cluster = {
    .name = "cluster",
    .summary = "the GKE clusters of a project, and what one has: pools, queues, usage",
    .usage = "cluster <command> [flags]",
    .subcommands = cluster_commands,
};

static const cli_command *const root_commands[] = {
    &cmd_job,        &cmd_cluster,  &cmd_deploy, &cmd_destroy,
    &cmd_completion, &cmd_complete, &cmd_man,    NULL};

const cli_command cli_root = {
    .name = "gcluster",
    .summary = "run Pathways workloads on GKE TPU clusters",
    .usage = "<command> [flags]",
    .description = "A native client for Pathways and JobSet workloads on GKE: it builds the "
                   "manifests as data,\ntalks to the Kubernetes API directly and queues jobs "
                   "through Kueue.",
    .subcommands = root_commands,
};

void cli_for_each_command(const cli_command *group, const char *prefix,
                          void (*fn)(const cli_command *cmd, const char *path, void *ctx),
                          void *ctx)
{
    for (const cli_command *const *c = group->subcommands; *c; c++) {
        if ((*c)->hidden)
            continue;
        char path[128];
        int n = snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? " " : "", (*c)->name);
        if (n < 0 || (size_t)n >= sizeof(path))
            continue; /* command paths are a few words; one this long is a table mistake */
        if ((*c)->subcommands)
            cli_for_each_command(*c, path, fn, ctx);
        else
            fn(*c, path, ctx);
    }
}

static void print_command_line(const cli_command *cmd, const char *path, void *ctx)
{
    FILE *out = ctx;
    if (strlen(path) > 22)
        fprintf(out, "  %s\n  %22s  %s\n", path, "", cmd->summary);
    else
        fprintf(out, "  %-22s  %s\n", path, cmd->summary);
}

void cli_print_help(FILE *out, const cli_command *cmd, const char *path)
{
    fprintf(out, "Usage: gcluster %s\n\n%c%s.\n", cmd->usage,
            toupper((unsigned char)cmd->summary[0]), cmd->summary + 1);
    if (cmd->description)
        fprintf(out, "\n%s\n", cmd->description);
    if (cmd->subcommands) {
        fprintf(out, "\nCommands:\n");
        cli_for_each_command(cmd, path, print_command_line, out);
    }
    if (cmd->options && cmd->options[0].kind != CLI_OPT_END) {
        if (cmd->options[0].kind != CLI_OPT_GROUP)
            fprintf(out, "\nFlags:\n");
        cli_print_options(out, cmd->options, NULL);
    }
    cli_print_options(out, cli_global_options, cmd->options);
    if (cmd->footer)
        fprintf(out, "\n%s", cmd->footer());
    if (cmd->subcommands)
        fprintf(out, "\nRun 'gcluster %s%s<command> --help' for a command's flags.\n", path,
                *path ? " " : "");
}

static const cli_command *find_subcommand(const cli_command *group, const char *name)
{
    for (const cli_command *const *c = group->subcommands; *c; c++)
        if (!strcmp((*c)->name, name))
            return *c;
    return NULL;
}

const cli_command *cli_command_find(const char *const *words, size_t count, size_t *used)
{
    const cli_command *cmd = &cli_root;
    size_t i = 0;
    for (const cli_command *next; i < count && cmd->subcommands; cmd = next, i++)
        if (!(next = find_subcommand(cmd, words[i])))
            break;
    *used = i;
    return cmd;
}

static int unknown_command(const cli_command *group, const char *path, const char *name,
                           gc_error *err)
{
    const char *best = NULL;
    size_t best_distance = 3;
    for (const cli_command *const *c = group->subcommands; *c; c++) {
        if ((*c)->hidden)
            continue;
        size_t d = gc_text_edit_distance(name, (*c)->name);
        if (d < best_distance) {
            best = (*c)->name;
            best_distance = d;
        }
    }
    gc_buf names;
    gc_buf_init(&names);
    for (const cli_command *const *c = group->subcommands; *c; c++)
        if (!(*c)->hidden)
            gc_buf_printf(&names, "%s%s", names.len ? ", " : "", (*c)->name);
    int rc = gc_fail(err, GC_EXIT_USAGE, "unknown command \"%s%s%s\"%s%s%s; commands: %s", path,
                     *path ? " " : "", name, best ? "; did you mean \"" : "", best ? best : "",
                     best ? "\"?" : "", names.data);
    gc_buf_free(&names);
    return rc;
}

static int run_leaf(const cli_command *cmd, const char *path, int argc, char **argv, gc_error *err)
{
    if (cmd->run_words)
        return cmd->run_words(argc, argv, err);
    void *args = gc_xcalloc(1, cmd->args_size);
    if (cmd->init_args)
        cmd->init_args(args);
    cli_parsed parsed;
    int rc = cli_parse(cmd->options, args, argc, argv, &parsed, err);
    if (!rc && ((cli_globals *)args)->help)
        cli_print_help(stdout, cmd, path);
    else if (!rc && ((cli_globals *)args)->version)
        cli_print_version(stdout);
    else if (!rc && cmd->opening)
        rc = cli_opening_run(cmd, args, &parsed, err);
    else if (!rc)
        rc = cmd->run(args, &parsed, err);
    free(args);
    return rc;
}

static bool is_help(const char *arg)
{
    return !strcmp(arg, "--help") || !strcmp(arg, "-h") || !strcmp(arg, "help");
}

int cli_dispatch(int argc, char **argv, gc_error *err)
{
    const cli_command *cmd = &cli_root;
    char path[128] = "";
    int i = 0;
    while (cmd->subcommands) {
        if (i >= argc || is_help(argv[i])) {
            cli_print_help(i >= argc ? stderr : stdout, cmd, path);
            return i >= argc ? GC_EXIT_USAGE : 0;
        }
        if (!strcmp(argv[i], "--version")) {
            cli_print_version(stdout);
            return 0;
        }
        const cli_command *next = find_subcommand(cmd, argv[i]);
        if (!next)
            return unknown_command(cmd, path, argv[i], err);
        size_t used = strlen(path);
        snprintf(path + used, sizeof(path) - used, "%s%s", used ? " " : "", next->name);
        cmd = next;
        i++;
    }
    return run_leaf(cmd, path, argc - i, argv + i, err);
}
