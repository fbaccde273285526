/*
 * The command tree (in the spirit of git's commands[] and tmux's cmd_entry): each command is a
 * static struct with its option table and one run function. Groups ("job", "job config") only
 * hold subcommands. Help is generated from these tables.
 */
#ifndef GCLUSTER_CLI_COMMANDS_H
#define GCLUSTER_CLI_COMMANDS_H

#include "cli/options.h"

typedef struct cli_command cli_command;

struct cli_command {
    const char *name;
    const char *summary;     /* one line, for lists */
    const char *usage;       /* after "gcluster ", e.g. "job submit --name NAME ..." */
    const char *description; /* a paragraph for --help, or NULL */
    const cli_option *options;
    size_t args_size;              /* the struct the options fill; starts with cli_globals */
    void (*init_args)(void *args); /* defaults, or NULL for all-zero */
    int (*run)(void *args, const cli_parsed *parsed, gc_error *err);
    const char *(*footer)(void); /* more help after the flags (the compute-type forms), or NULL */
    const cli_command *const *subcommands; /* NULL-terminated, for groups */
};

extern const cli_command cli_root;

extern const cli_command cmd_job_submit;
extern const cli_command cmd_job_inspect;
extern const cli_command cmd_job_why;
extern const cli_command cmd_job_list;
extern const cli_command cmd_job_logs;
extern const cli_command cmd_job_cancel;
extern const cli_command cmd_job_config_set;
extern const cli_command cmd_job_config_list;
extern const cli_command cmd_deploy;

/* Runs the command named by argv (without the program name). */
int cli_dispatch(int argc, char **argv, gc_error *err);

#endif
