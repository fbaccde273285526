/*
 * Command-line options as data (in the spirit of git's parse-options).
 *
 * Each command declares one static table of cli_option entries that point, by offset, into the
 * struct its options fill. The same table drives parsing and `--help`, so the help can never
 * drift from what is parsed. Global options live in a cli_globals struct that every command's
 * argument struct embeds as its first member, so one global table serves all commands.
 */
#ifndef GCLUSTER_CLI_OPTIONS_H
#define GCLUSTER_CLI_OPTIONS_H

#include "gcluster/error.h"
#include "gcluster/submit.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum cli_option_kind {
    CLI_OPT_END,
    CLI_OPT_GROUP,  /* a heading in --help */
    CLI_OPT_STRING, /* char * (points into argv) */
    CLI_OPT_INT,    /* long */
    CLI_OPT_BOOL,   /* bool; also accepts --flag=true|false */
    CLI_OPT_LIST,   /* cli_list: repeatable, every occurrence appended */
    CLI_OPT_COUNT,  /* int, incremented per occurrence (-v -v) */
};

/* Called once per value of a computed set. */
typedef void (*cli_value_fn)(void *ctx, const char *value);

/*
 * The values an option (or a command's arguments) takes, when they are a known set. Declared
 * once, next to the option, so that parsing, --help, shell completion and the man pages use the
 * same set and cannot drift apart.
 */
typedef struct cli_values {
    const char *const *names; /* NULL-terminated, or NULL */
    /* `names` are the usual values, not the only ones: cli_parse lets others through (to
     * gc_submit_prepare, say, which explains each choice in its own message). */
    bool open;
    /* A set computed from other tables (the catalog's compute types), for completion. */
    void (*generate)(cli_value_fn add, void *ctx);
    bool job_names; /* the jobs of the selected cluster (completion asks it) */
    bool files;     /* a path: the shell completes file names */
} cli_values;

typedef struct cli_option {
    enum cli_option_kind kind;
    char short_name;       /* 0 for none */
    const char *long_name; /* without the leading "--" */
    size_t offset;         /* where the value goes in the command's argument struct */
    const char *arg_name;  /* shown in help: "NAME" */
    const char *help;      /* one line */
    size_t seen_offset;    /* a bool set when the option appears; 0 for none */
    /* What the value may be. A closed set of names is enforced by cli_parse, and its names
     * stand in for arg_name in the help when arg_name is NULL ("head|worker"). */
    const cli_values *values;
} cli_option;

/* A repeatable option's values, in command-line order (pointers into argv). */
#define CLI_LIST_MAX 64
typedef struct cli_list {
    const char *items[CLI_LIST_MAX];
    size_t count;
} cli_list;

/* Options every `job`, `cluster` and `deploy` command accepts: cluster selection, namespace, -v. */
typedef struct cli_globals {
    const char *cluster;
    const char *location;
    const char *project;
    const char *context;
    const char *kubeconfig;
    const char *ns;
    int verbose;
    const char *request_timeout; /* --request-timeout: a duration */
    bool skip_prereqs;           /* job submit: no cluster prerequisite checks before the create */
    bool help;
    bool version;
} cli_globals;

#define CLI_GROUP(title)                                                                           \
    {                                                                                              \
        CLI_OPT_GROUP, 0, NULL, 0, NULL, title, 0, NULL                                            \
    }
#define CLI_END                                                                                    \
    {                                                                                              \
        CLI_OPT_END, 0, NULL, 0, NULL, NULL, 0, NULL                                               \
    }
#define CLI_STRING(s, l, type, field, arg, help)                                                   \
    {                                                                                              \
        CLI_OPT_STRING, s, l, offsetof(type, field), arg, help, 0, NULL                            \
    }
#define CLI_STRING_SEEN(s, l, type, field, seen, arg, help)                                        \
    {                                                                                              \
        CLI_OPT_STRING, s, l, offsetof(type, field), arg, help, offsetof(type, seen), NULL         \
    }
/* A string option whose value comes from `values` (a cli_values); arg NULL shows its names. */
#define CLI_VALUES(s, l, type, field, arg, values, help)                                           \
    {                                                                                              \
        CLI_OPT_STRING, s, l, offsetof(type, field), arg, help, 0, values                          \
    }
#define CLI_INT(s, l, type, field, arg, help)                                                      \
    {                                                                                              \
        CLI_OPT_INT, s, l, offsetof(type, field), arg, help, 0, NULL                               \
    }
#define CLI_INT_SEEN(s, l, type, field, seen, arg, help)                                           \
    {                                                                                              \
        CLI_OPT_INT, s, l, offsetof(type, field), arg, help, offsetof(type, seen), NULL            \
    }
#define CLI_BOOL(s, l, type, field, help)                                                          \
    {                                                                                              \
        CLI_OPT_BOOL, s, l, offsetof(type, field), NULL, help, 0, NULL                             \
    }
#define CLI_BOOL_SEEN(s, l, type, field, seen, help)                                               \
    {                                                                                              \
        CLI_OPT_BOOL, s, l, offsetof(type, field), NULL, help, offsetof(type, seen), NULL          \
    }
#define CLI_LIST(s, l, type, field, arg, help)                                                     \
    {                                                                                              \
        CLI_OPT_LIST, s, l, offsetof(type, field), arg, help, 0, NULL                              \
    }
#define CLI_COUNT(s, l, type, field, help)                                                         \
    {                                                                                              \
        CLI_OPT_COUNT, s, l, offsetof(type, field), NULL, help, 0, NULL                            \
    }

extern const cli_option cli_global_options[];

/* The global flags of Google's `gcluster job` group that ours spell otherwise or only job
 * commands have, in every job command's table (they fill cli_globals, the first member of every
 * argument struct): --gke-namespace is --namespace; --skip-prereqs skips job submit's cluster
 * prerequisite checks (the other commands make none, so there it changes nothing). */
#define CLI_JOB_GLOBALS                                                                            \
    CLI_GROUP("Google's gcluster job flags"),                                                      \
        CLI_STRING(0, "gke-namespace", cli_globals, ns, "NAMESPACE",                               \
                   "the same as --namespace (Google's gcluster's name for it)"),                   \
        CLI_BOOL(0, "skip-prereqs", cli_globals, skip_prereqs,                                     \
                 "job submit: skip the cluster prerequisite checks (Kueue queue fit, "             \
                 "PriorityClass, the Jobs' server dry run); other commands make none")

/* Value sets more than one command uses (values.c). */
extern const cli_values cli_job_names;     /* a job of the selected cluster */
extern const cli_values cli_paths;         /* a file or directory */
extern const cli_values cli_compute_types; /* the catalog's --compute-type names (and others) */
extern const cli_values cli_text_formats;  /* -o: text, json, yaml */
extern const cli_values cli_table_formats; /* -o: table, wide, json, yaml */

/* Whether `value` may be given where `values` is expected (always, for open sets). */
bool cli_value_allowed(const cli_values *values, const char *value);
/* The names of a set joined by `separator` ("|"), or with ", " and " or " when it is NULL. */
void cli_values_join(const cli_values *values, const char *separator, char *out, size_t size);

#define CLI_POSITIONAL_MAX 128

/* What parsing left over. */
typedef struct cli_parsed {
    const char *positional[CLI_POSITIONAL_MAX];
    size_t positional_count;
    /* `--` was given: the positional arguments from dashdash_at on came after it (a command
     * line to run, for job connect). */
    bool dashdash;
    size_t dashdash_at;
} cli_parsed;

/* Parses argv (after the command words) into `args` using `options` and the global options.
 * `--` ends option parsing. Unknown options and malformed values are usage errors that suggest
 * the nearest known option. */
int cli_parse(const cli_option *options, void *args, int argc, char **argv, cli_parsed *parsed,
              gc_error *err);

/* The option's value as shown in help: its arg_name, else its names ("head|worker"), else
 * "VALUE"; "" for options that take no value. */
const char *cli_option_arg(const cli_option *o, char *buf, size_t size);

/* The option of `options` (may be NULL: a group has none), else of the global options, named
 * --`name` (its first `len` bytes) or, when name is NULL, -`short_name`; NULL when there is
 * none. */
const cli_option *cli_find_option(const cli_option *options, const char *name, size_t len,
                                  char short_name);

/* Whether the option takes a value (strings, numbers, lists). */
bool cli_option_takes_value(const cli_option *o);

/* Writes the options of a table as help text: "  -n, --name NAME   one line". */
/* Prints `options` as --help does; a global option whose letter `command_options` takes for its
 * own flag is shown by its long name only (deploy's -l is Google's --validation-level). */
void cli_print_options(FILE *out, const cli_option *options, const cli_option *command_options);
/* The short name `o` is shown and parsed with in a command whose own table is `command_options`:
 * 0 when `o` is not in that table and the table gives its letter to another flag. */
char cli_shown_short(const cli_option *o, const cli_option *command_options);

#endif
