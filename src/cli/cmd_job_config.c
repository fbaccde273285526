/*
 * gcluster job config set KEY VALUE / gcluster job config list.
 */
#include "cli/cli.h"
#include "cli/render.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct config_args {
    cli_globals g;
} config_args;

static const cli_option config_options[] = {CLI_JOB_GLOBALS, CLI_END};

static int config_set_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    (void)args;
    if (parsed->positional_count != 2)
        return gc_fail(err, GC_EXIT_USAGE,
                       "usage: gcluster job config set KEY VALUE (KEY: project, cluster or "
                       "location)");
    int rc = gc_context_set(parsed->positional[0], parsed->positional[1], err);
    if (!rc) {
        char *path = gc_context_path();
        cli_line(stdout, "Set %s to \"%s\" in %s.", parsed->positional[0], parsed->positional[1],
                 path);
        free(path);
    }
    return rc;
}

static int config_list_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    (void)args;
    if (parsed->positional_count)
        return gc_fail(err, GC_EXIT_USAGE, "job config list takes no arguments");
    gc_stored_context ctx;
    int rc = gc_context_load(&ctx, err);
    if (rc)
        return rc;
    cli_line(stdout, "project:  %s", ctx.project ? ctx.project : "");
    cli_line(stdout, "cluster:  %s", ctx.cluster ? ctx.cluster : "");
    cli_line(stdout, "location: %s", ctx.location ? ctx.location : "");
    gc_context_free(&ctx);
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
