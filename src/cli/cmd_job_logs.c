/*
 * gcluster job logs NAME [--role R] [--slice N] [--host N] [--container C] [--all] [-f] ...
 */
#include "cli/cli.h"
#include "cli/render.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef struct logs_args {
    cli_globals g;
    const char *name;
    gc_logs_request r;
    bool slice_given; /* -1 means "any" to gc_job_logs, so a typed -1 must be caught here */
    bool host_given;
    bool main_only;
    bool main_only_given; /* Google's --main-only=false: every pod, as --all */
} logs_args;

static const char *const role_names[] = {"head", "worker", NULL};
static const cli_values roles = {.names = role_names};

static const cli_option logs_options[] = {
    CLI_VALUES('n', "name", logs_args, name, "NAME", &cli_job_names,
               "the job (or give it as an argument)"),
    CLI_VALUES(0, "role", logs_args, r.role, NULL, &roles,
               "which pods: the head (default) or the TPU workers"),
    CLI_INT_SEEN(0, "slice", logs_args, r.slice, slice_given, "N", "worker slice (default 0)"),
    CLI_INT_SEEN(0, "host", logs_args, r.host, host_given, "N",
                 "host within the slice (default 0)"),
    /* No -c: in Google's gcluster -c is --cluster on every job command, logs included. */
    CLI_STRING(0, "container", logs_args, r.container, "NAME",
               "container (default: your program; headless: pathways-proxy)"),
    CLI_BOOL(0, "all", logs_args, r.all, "every pod and container, lines prefixed [pod/container]"),
    CLI_BOOL_SEEN(0, "main-only", logs_args, main_only, main_only_given,
                  "the first pod of every replicated job, all its containers (Google's); "
                  "=false: as --all"),
    CLI_BOOL('f', "follow", logs_args, r.follow, "keep streaming until the pods end"),
    CLI_INT(0, "tail", logs_args, r.tail, "N", "only the last N lines of each container"),
    CLI_STRING(0, "since", logs_args, r.since, "DURATION", "only lines newer than 5m, 1h, ..."),
    CLI_BOOL(0, "timestamps", logs_args, r.timestamps, "prefix lines with their time stamps"),
    CLI_JOB_GLOBALS,
    CLI_END,
};

static void logs_defaults(void *args)
{
    logs_args *a = args;
    a->r.slice = -1;
    a->r.host = -1;
    a->r.tail = -1;
}

/* Lines go to stdout as they come; with --all each says where it is from. */
typedef struct terminal_sink {
    bool prefix;
    int write_errno; /* why stdout stopped taking lines, or 0 */
} terminal_sink;

static int write_line(void *ctx, const gc_log_line *line)
{
    terminal_sink *t = ctx;
    if (t->prefix)
        cli_text(stdout, "[%s/%s] ", line->pod, line->container);
    fwrite(line->text, 1, line->len, stdout);
    fputc('\n', stdout);
    if (!ferror(stdout))
        return 0;
    t->write_errno = errno ? errno : EIO;
    return 1;
}

static void flush_lines(void *ctx)
{
    (void)ctx;
    fflush(stdout);
}

static int logs_with(gc_kube *kube, void *ctx, gc_error *err)
{
    logs_args *a = ctx;
    terminal_sink t = {.prefix = a->r.all || a->r.main_only};
    gc_log_sink sink = {.line = write_line, .flush = flush_lines, .ctx = &t};
    int rc = gc_job_logs(kube, &a->r, &sink, cli_events(), err);
    if (!rc && (t.write_errno || fflush(stdout) != 0))
        rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot write the logs to stdout: %s",
                     strerror(t.write_errno ? t.write_errno : errno));
    return rc;
}

/* What only the command line can tell: indexes typed as negative numbers. */
static int check_flags(const logs_args *a, gc_error *err)
{
    if (a->slice_given && a->r.slice < 0)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--slice must be 0 or more, not %ld: the index of a worker slice (job "
                       "inspect lists them)",
                       a->r.slice);
    if (a->host_given && a->r.host < 0)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--host must be 0 or more, not %ld: the index of a host within the slice",
                       a->r.host);
    /* Container names are DNS labels; anything else names no container of any pod. */
    if (a->r.container && !gc_kube_is_dns_label(a->r.container))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--container \"%s\" is not a container name (lower-case letters, digits "
                       "and '-'); job inspect shows each pod's containers",
                       a->r.container);
    return 0;
}

static int logs_check(void *args, const cli_parsed *parsed, gc_error *err)
{
    (void)parsed;
    logs_args *a = args;
    int rc = check_flags(a, err);
    if (rc)
        return rc;
    /* Google's --main-only=false is every pod and container: our --all. */
    a->r.main_only = a->main_only_given && a->main_only;
    if (a->main_only_given && !a->main_only)
        a->r.all = true;
    return gc_job_logs_check(&a->r, err);
}

static const cli_opening logs_opening = {
    .names = CLI_JOB_ONE,
    .name_flag = offsetof(logs_args, name),
    .name = offsetof(logs_args, r.name),
    .check = logs_check,
    .with = logs_with,
};

const cli_command cmd_job_logs = {
    .name = "logs",
    .summary = "logs of a job (default: your program in the head pod)",
    .usage = "job logs NAME [--role head|worker] [--slice N] [--host N] [--container C] [--all] "
             "[--main-only[=false]] [-f] [--tail N] [--since D] [--timestamps]",
    .options = logs_options,
    .args_size = sizeof(logs_args),
    .init_args = logs_defaults,
    .opening = &logs_opening,
};
