/*
 * gcluster job config set KEY VALUE / gcluster job config list.
 */
#include "cli/cli.h"
#include "cli/render.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct config_args {
    cli_globals g;
    const char *gke_namespace;
    bool skip_prereqs;
} config_args;

/* Google's gcluster gives every job command its job flags, so they parse here too; but the stored
 * defaults are a file of this machine, not a cluster or a job, so each is refused by name rather
 * than accepted and ignored. */
static const cli_option config_options[] = {
    CLI_GROUP("Google's gcluster job flags (refused here: they select a cluster or a job)"),
    CLI_STRING(0, "gke-namespace", config_args, gke_namespace, "NAMESPACE",
               "refused: job config reads and writes only the stored defaults"),
    CLI_BOOL(0, "skip-prereqs", config_args, skip_prereqs,
             "refused: job config reads and writes only the stored defaults"),
    CLI_END,
};

static int refuse_flags(const config_args *a, const char *command, gc_error *err)
{
    return cli_refuse_cluster_flags(&a->g, a->gke_namespace, a->skip_prereqs, command,
                                    "it reads and writes the stored defaults of this machine, not "
                                    "a cluster or a job (to store a default: gcluster job config "
                                    "set KEY VALUE, KEY project, cluster or location)",
                                    err);
}

static int config_set_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    int rc = refuse_flags(args, "job config set", err);
    if (rc)
        return rc;
    if (parsed->positional_count != 2)
        return gc_fail(err, GC_EXIT_USAGE,
                       "usage: gcluster job config set KEY VALUE (KEY: project, cluster or "
                       "location)");
    rc = cli_context_set(parsed->positional[0], parsed->positional[1], err);
    if (!rc) {
        char *path = cli_context_path();
        cli_line(stdout, "Set %s to \"%s\" in %s.", parsed->positional[0], parsed->positional[1],
                 path);
        free(path);
    }
    return rc;
}

static int config_list_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    int rc = refuse_flags(args, "job config list", err);
    if (rc)
        return rc;
    if (parsed->positional_count)
        return gc_fail(err, GC_EXIT_USAGE, "job config list takes no arguments");
    cli_stored_context ctx;
    rc = cli_context_load(&ctx, err);
    if (rc)
        return rc;
    cli_line(stdout, "project:  %s", ctx.project ? ctx.project : "");
    cli_line(stdout, "cluster:  %s", ctx.cluster ? ctx.cluster : "");
    cli_line(stdout, "location: %s", ctx.location ? ctx.location : "");
    cli_context_free(&ctx);
    return 0;
}

const cli_command cmd_job_config_set = {
    .name = "set",
    .summary = "store a default: project, cluster or location",
    .usage = "job config set KEY VALUE",
    .options = config_options,
    .args_size = sizeof(config_args),
    .run = config_set_run,
};

const cli_command cmd_job_config_list = {
    .name = "list",
    .summary = "show the stored defaults",
    .usage = "job config list",
    .options = config_options,
    .args_size = sizeof(config_args),
    .run = config_list_run,
};
