/*
 * What the command files share: stored defaults, opening the cluster and output helpers.
 */
#ifndef GCLUSTER_CLI_CLI_H
#define GCLUSTER_CLI_CLI_H

#include "cli/commands.h"
#include "gcluster/connect.h"
#include "gcluster/events.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"

/* Fills --cluster/--location/--project from ~/.gcluster/context.json where not given. A
 * missing or unreadable file changes nothing (with a warning for a corrupt one). */
void cli_apply_stored_defaults(cli_globals *g);

/* Opens a client for the selected cluster (--context, else --cluster/--location/--project, else
 * the kubeconfig's current context). */
int cli_open_kube(const cli_globals *g, gc_kube **kube, gc_error *err);
/* The same; without `allow_gcloud` a --cluster whose context is not in the kubeconfig is an error
 * rather than a `gcloud container clusters get-credentials`, which would write the kubeconfig. */
int cli_open_kube_as(const cli_globals *g, bool allow_gcloud, gc_kube **kube, gc_error *err);

/* What a command does with the cluster; `ctx` is its own. */
typedef int (*cli_kube_fn)(gc_kube *kube, void *ctx, gc_error *err);

/* Runs `fn` with a client for the selected cluster: the stored defaults filled in, the client
 * opened and closed, and with -v the number of API requests said at the end. Every command that
 * talks to a cluster goes through here. */
int cli_with_kube(cli_globals *g, cli_kube_fn fn, void *ctx, gc_error *err);

/* The job a command names: --name NAME (the seed's form) or one positional argument, not both;
 * `command` ("inspect") goes into the messages. */
int cli_job_name(const char *flag_value, const cli_parsed *parsed, const char *command,
                 const char **name, gc_error *err);

/* Where the library's warnings, notices, traces and progress go: stderr, progress redrawn on
 * one line when stderr is a terminal and left out when it is not. */
const gc_events *cli_events(void);

/* Runs job connect for `r` on the terminal: Ctrl-C ends it, the JAX variables go to stdout
 * (as `export` lines with `exports`) unless r->command runs with them. Returns connect's
 * answer, or the command's exit status. */
int cli_connect(gc_kube *kube, gc_connect_request *r, bool exports, gc_error *err);
/* `job submit --pathways-run-sps-workload`: gc_sps_run with the terminal's Ctrl-C and, without
 * a command, the JAX variables on stdout. Returns the command's status when it ran. */
int cli_sps_run(gc_kube *kube, gc_sps_run_request *r, gc_error *err);

/* -o is a file path where Google's gcluster makes it one (submit's --dry-run-out, inspect's
 * bundle), but the output format on our other commands: a bare format name there (json, yaml,
 * yml, text, table, wide) is refused with exit 2, naming `format_flag`; "./json" still writes a
 * file of that name. An empty path and a directory are refused too, naming `flag`; `format_flag`
 * NULL: the flag takes only a path (no format names to mistake). */
int cli_check_output_path(const char *flag, const char *path, const char *format_flag,
                          gc_error *err);

/* Writes `data` to `path` whole (gc_file_write: a new file under a random name renamed into
 * place); "-" is stdout. A failure names `flag` (the flag the path came with). */
int cli_write_output(const char *flag, const char *path, const char *data, size_t len,
                     gc_error *err);

/* A command that works on no cluster and no job still takes the cluster flags and Google's job
 * flags --gke-namespace and --skip-prereqs (Google's gcluster gives them to every job command),
 * but refuses each by name rather than accepting and ignoring it: the first one given is refused
 * with exit 2 as "COMMAND does not take FLAG: WHY". 0 when none is given. */
int cli_refuse_cluster_flags(const cli_globals *g, const char *gke_namespace, bool skip_prereqs,
                             const char *command, const char *why, gc_error *err);

/* A blueprint command's --vars: "a=1,b=2" and "--vars a=1 --vars b=2" both work; a comma
 * stays part of a value unless every piece is NAME=VALUE. `storage` (one per list item, freed
 * by the caller) keeps the split copies; the result (free it) holds *count pieces. */
const char **cli_split_vars(const cli_list *list, char **storage, size_t *count);

/* A --help footer (cli_command.footer): `before` (NULL: nothing), then the files a
 * --manifests-dir holds as `files` (gc_deploy_release_files, gc_prereq_release_files) lists
 * them from the installer's table, one a line. Built into `text` (static, zeroed) once. */
const char *cli_manifests_dir_help(gc_buf *text, const char *before, void (*files)(gc_strings *));

/* Stored defaults for --cluster, --location and --project (~/.gcluster/context.json, the file
 * and keys Google's gcluster uses). */
typedef struct cli_stored_context {
    char *project;
    char *cluster;
    char *location;
} cli_stored_context;

/* The path of the context file ($HOME/.gcluster/context.json). Caller frees. */
char *cli_context_path(void);
/* Loads the stored defaults; a missing file gives empty values. */
int cli_context_load(cli_stored_context *ctx, gc_error *err);
/* Sets one key (project, cluster or location; case-insensitive) and saves the file. */
int cli_context_set(const char *key, const char *value, gc_error *err);
void cli_context_free(cli_stored_context *ctx);

#endif
