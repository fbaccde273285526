/*
 * The command tree (in the spirit of git's commands[] and tmux's cmd_entry): each command is a
 * static struct with its option table and one run function. Groups ("job", "job config") only
 * hold subcommands. Help is generated from these tables.
 */
#ifndef GCLUSTER_CLI_COMMANDS_H
#define GCLUSTER_CLI_COMMANDS_H

#include "cli/options.h"

typedef struct cli_command cli_command;
struct gc_kube;

/* How many job names a command takes, as arguments (or --name). */
typedef enum cli_job_arity {
    CLI_JOB_NONE,        /* no job name (job list) */
    CLI_JOB_ONE,         /* exactly one: inspect NAME, logs NAME, ... */
    CLI_JOB_ONE_OR_NONE, /* one, or none for the whole cluster (job inspect) */
    CLI_JOB_MANY,        /* one or more (job wait NAME...) */
} cli_job_arity;

/*
 * What every job command does before its own work (opening.c), as data in its command entry:
 * take the job name(s) from the arguments or --name, check each is a JobSet name before any
 * request, parse -o into a format from the option's declared set of values, check the command's
 * own flags, then open the cluster and run `with`. The job-name operand (and so completion of
 * `gcluster job why <TAB>`) follows from `names`. Offsets point into the command's argument
 * struct; 0 means "none" (offset 0 is cli_globals.cluster, never a command's own field).
 */
typedef struct cli_opening {
    cli_job_arity names;
    size_t name_flag; /* const char *: the --name value */
    size_t name;      /* const char *: where the one name goes */
    size_t names_at;  /* const char *const *: where the names go (CLI_JOB_MANY) */
    size_t count_at;  /* size_t: how many */
    size_t output;    /* const char *: the -o/--format value, parsed by its option's set */
    size_t format;    /* cli_format: what it parsed to */
    /* The command's own checks, after the names and the format, before the cluster is opened;
     * NULL for none. */
    int (*check)(void *args, const cli_parsed *parsed, gc_error *err);
    /* Its work with the cluster (cli_kube_fn); `args` is its argument struct. */
    int (*with)(struct gc_kube *kube, void *args, gc_error *err);
} cli_opening;

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
    const cli_values *operands;            /* what its arguments are (a file), or NULL for none; job
                                            * commands get theirs from `opening` (cli_command_operands) */
    const cli_opening *opening; /* a job command's shared opening, run instead of `run` */
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
extern const cli_command cmd_job_connect;
extern const cli_command cmd_job_template_extract;
extern const cli_command cmd_deploy;
extern const cli_command cmd_destroy;
extern const cli_command cmd_completion;
extern const cli_command cmd_complete;
extern const cli_command cmd_man;

extern const cli_command cmd_cluster_list;
extern const cli_command cmd_cluster_describe;
extern const cli_command cmd_cluster_info;
extern const cli_command cmd_cluster_volume;

/* What a command's arguments are: its job names (from its opening), else its `operands`. */
const cli_values *cli_command_operands(const cli_command *cmd);

/* The option of `cmd`'s own table whose value goes to `offset` of its argument struct. */
const cli_option *cli_command_option_at(const cli_command *cmd, size_t offset);

/* Runs a job command through its opening (opening.c). */
int cli_opening_run(const cli_command *cmd, void *args, const cli_parsed *parsed, gc_error *err);

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
