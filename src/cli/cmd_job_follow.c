/*
 * The commands that follow a job: inspect, list, logs and cancel. Each resolves its arguments,
 * opens the cluster and hands over to job/.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs `fn` with a client for the selected cluster, reporting the request count with -v. */
static int with_kube(cli_globals *g, int (*fn)(gc_kube *, void *, const gc_output *, gc_error *),
                     void *args, gc_error *err)
{
    cli_apply_stored_defaults(g);
    gc_kube *kube;
    int rc = cli_open_kube(g, &kube, err);
    if (rc)
        return rc;
    gc_output o = cli_output();
    rc = fn(kube, args, &o, err);
    if (g->verbose)
        fprintf(stderr, "gcluster: %u API requests\n", gc_kube_request_count(kube));
    gc_kube_close(kube);
    return rc;
}

/* The job name: --name NAME (the seed's form) or one positional argument. */
static int job_name(const char *flag_value, const cli_parsed *parsed, const char *command,
                    const char **name, gc_error *err)
{
    if (flag_value && parsed->positional_count)
        return gc_fail(err, GC_EXIT_USAGE,
                       "give the job name once: either --name %s or %s, not both", flag_value,
                       parsed->positional[0]);
    if (parsed->positional_count > 1)
        return gc_fail(err, GC_EXIT_USAGE, "job %s takes one job name, got %zu arguments", command,
                       parsed->positional_count);
    *name = flag_value ? flag_value : parsed->positional_count ? parsed->positional[0] : NULL;
    if (!*name || !**name)
        return gc_fail(err, GC_EXIT_USAGE,
                       "job %s needs the job name: gcluster job %s NAME (or --name NAME)", command,
                       command);
    return 0;
}

/* inspect */

typedef struct inspect_args {
    cli_globals g;
    const char *name;
    bool show;
} inspect_args;

static const cli_option inspect_options[] = {
    CLI_STRING('n', "name", inspect_args, name, "NAME", "the job (or give it as an argument)"),
    CLI_BOOL(0, "show", inspect_args, show,
             "also print the stored manifest as YAML (status lines become comments)"),
    CLI_END,
};

static int inspect_with(gc_kube *kube, void *args, const gc_output *o, gc_error *err)
{
    inspect_args *a = args;
    return gc_job_inspect(kube, a->name, a->show, o, err);
}

static int inspect_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    inspect_args *a = args;
    int rc = job_name(a->name, parsed, "inspect", &a->name, err);
    return rc ? rc : with_kube(&a->g, inspect_with, a, err);
}

const cli_command cmd_job_inspect = {
    .name = "inspect",
    .summary = "status of one job: admission, replicated jobs, pods and nodes, warnings",
    .usage = "job inspect NAME [--show]",
    .options = inspect_options,
    .args_size = sizeof(inspect_args),
    .run = inspect_run,
};

/* list */

typedef struct list_args {
    cli_globals g;
    gc_list_request r;
} list_args;

static const cli_option list_options[] = {
    CLI_STRING(0, "status", list_args, r.status, "STATUS",
               "only jobs in this state: Queued, Admitted, Running, Succeeded, Failed, ..."),
    CLI_STRING(0, "name-contains", list_args, r.name_contains, "TEXT",
               "only jobs whose name contains TEXT"),
    CLI_BOOL('A', "all-namespaces", list_args, r.all_namespaces, "jobs of every namespace"),
    CLI_STRING('o', "output", list_args, r.output, "FORMAT", "table (default), wide, json or yaml"),
    CLI_END,
};

static int list_with(gc_kube *kube, void *args, const gc_output *o, gc_error *err)
{
    return gc_job_list(kube, &((list_args *)args)->r, o, err);
}

static int list_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    if (parsed->positional_count)
        return gc_fail(err, GC_EXIT_USAGE,
                       "job list takes no arguments; filter with --name-contains %s",
                       parsed->positional[0]);
    return with_kube(&((list_args *)args)->g, list_with, args, err);
}

const cli_command cmd_job_list = {
    .name = "list",
    .summary = "table of jobs: name, status, compute, Pathways mode, age, completion",
    .usage = "job list [--status STATUS] [--name-contains TEXT] [-A] [-o table|wide|json|yaml]",
    .options = list_options,
    .args_size = sizeof(list_args),
    .run = list_run,
};

/* logs */

typedef struct logs_args {
    cli_globals g;
    const char *name;
    gc_logs_request r;
} logs_args;

static const cli_option logs_options[] = {
    CLI_STRING('n', "name", logs_args, name, "NAME", "the job (or give it as an argument)"),
    CLI_STRING(0, "role", logs_args, r.role, "head|worker",
               "which pods: the head (default) or the TPU workers"),
    CLI_INT(0, "slice", logs_args, r.slice, "N", "worker slice (default 0)"),
    CLI_INT(0, "host", logs_args, r.host, "N", "host within the slice (default 0)"),
    CLI_STRING('c', "container", logs_args, r.container, "NAME",
               "container (default: your program; headless: pathways-proxy)"),
    CLI_BOOL(0, "all", logs_args, r.all, "every pod and container, lines prefixed [pod/container]"),
    CLI_BOOL('f', "follow", logs_args, r.follow, "keep streaming until the pods end"),
    CLI_INT(0, "tail", logs_args, r.tail, "N", "only the last N lines of each container"),
    CLI_STRING(0, "since", logs_args, r.since, "DURATION", "only lines newer than 5m, 1h, ..."),
    CLI_BOOL(0, "timestamps", logs_args, r.timestamps, "prefix lines with their time stamps"),
    CLI_END,
};

static void logs_defaults(void *args)
{
    logs_args *a = args;
    a->r.slice = -1;
    a->r.host = -1;
    a->r.tail = -1;
}

static int logs_with(gc_kube *kube, void *args, const gc_output *o, gc_error *err)
{
    return gc_job_logs(kube, &((logs_args *)args)->r, o, err);
}

static int logs_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    logs_args *a = args;
    int rc = job_name(a->name, parsed, "logs", &a->r.name, err);
    return rc ? rc : with_kube(&a->g, logs_with, a, err);
}

const cli_command cmd_job_logs = {
    .name = "logs",
    .summary = "logs of a job (default: your program in the head pod)",
    .usage = "job logs NAME [--role head|worker] [--slice N] [--host N] [--container C] [--all] "
             "[-f] [--tail N] [--since D] [--timestamps]",
    .options = logs_options,
    .args_size = sizeof(logs_args),
    .init_args = logs_defaults,
    .run = logs_run,
};

/* cancel */

typedef struct cancel_args {
    cli_globals g;
    const char *name;
    bool wait;
    const char *timeout;
} cancel_args;

static const cli_option cancel_options[] = {
    CLI_STRING('n', "name", cancel_args, name, "NAME", "the job (or give it as an argument)"),
    CLI_BOOL(0, "wait", cancel_args, wait, "wait until every pod and the JobSet are gone"),
    CLI_STRING(0, "timeout", cancel_args, timeout, "DURATION", "give up waiting after this long"),
    CLI_END,
};

static int cancel_with(gc_kube *kube, void *args, const gc_output *o, gc_error *err)
{
    cancel_args *a = args;
    return gc_job_cancel(kube, a->name, a->wait, a->timeout, o, err);
}

static int cancel_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    cancel_args *a = args;
    int rc = job_name(a->name, parsed, "cancel", &a->name, err);
    if (!rc && a->timeout && !a->wait)
        rc = gc_fail(err, GC_EXIT_USAGE, "--timeout only applies with --wait");
    return rc ? rc : with_kube(&a->g, cancel_with, a, err);
}

const cli_command cmd_job_cancel = {
    .name = "cancel",
    .summary = "delete a job with its Jobs and pods (foreground deletion)",
    .usage = "job cancel NAME [--wait [--timeout D]]",
    .options = cancel_options,
    .args_size = sizeof(cancel_args),
    .run = cancel_run,
};
