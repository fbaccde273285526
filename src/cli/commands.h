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
    /* Instead of run, for a command whose arguments are another command line (completion):
     * gets them unparsed. */
    int (*run_words)(int argc, char **argv, gc_error *err);
    const char *(*footer)(void); /* more help after the flags (the compute-type forms), or NULL */
    const cli_command *const *subcommands; /* NULL-terminated, for groups */
    const cli_values *operands; /* what its arguments are (job names, a file), or NULL for none */
    bool hidden; /* for the shell and the build, not for people: no help, page or completion */
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
extern const cli_command cmd_job_wait;
extern const cli_command cmd_deploy;
extern const cli_command cmd_completion;
extern const cli_command cmd_complete;
extern const cli_command cmd_man;

/* The command `words` name: the deepest group or leaf reached by matching them one by one from
 * the root; `used` receives how many words were command names. */
const cli_command *cli_command_find(const char *const *words, size_t count, size_t *used);

/* Calls `fn` for every command (not group) below `group` that is not hidden, in table order,
 * with its command words ("job config set"); `prefix` holds the words of `group`. */
void cli_for_each_command(const cli_command *group, const char *prefix,
                          void (*fn)(const cli_command *cmd, const char *path, void *ctx),
                          void *ctx);

/* Writes `gcluster --help` (or a command's) as the terminal shows it. */
void cli_print_help(FILE *out, const cli_command *cmd, const char *path);

/* Writes the version, the commit it was built from and the libcurl it loads. */
void cli_print_version(FILE *out);

/* Runs the command named by argv (without the program name). */
int cli_dispatch(int argc, char **argv, gc_error *err);

#endif
