/*
 * gcluster cluster describe [-c CLUSTER -l LOCATION | --context C] [-o text|json|yaml]
 */
#include "cli/cli.h"
#include "cli/render.h"
#include "cli/render_cluster.h"

#include <stdio.h>

typedef struct describe_args {
    cli_globals g;
    const char *output;
    cli_format format;
} describe_args;

static const cli_option describe_options[] = {
    CLI_VALUES('o', "output", describe_args, output, NULL, &cli_text_formats,
               "output format (default text; README.md describes the fields)"),
    CLI_END,
};

static int describe_with(gc_kube *kube, void *ctx, gc_error *err)
{
    describe_args *a = ctx;
    gc_cluster_request req = {.pools = true};
    gc_cluster_report report;
    int rc = gc_cluster_describe(kube, &req, &report, err);
    if (rc)
        return rc;
    if (a->format == CLI_FORMAT_TEXT)
        cli_render_cluster(stdout, &report, false);
    else
        rc = cli_print_document(cli_cluster_json(&report, true, false), a->format, err);
    gc_cluster_report_free(&report);
    return rc;
}

static int describe_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    describe_args *a = args;
    if (parsed->positional_count)
        return gc_fail(err, GC_EXIT_USAGE,
                       "cluster describe takes no arguments (got \"%s\"); name the cluster with "
                       "--cluster and --location",
                       parsed->positional[0]);
    int rc = cli_format_parse(a->output, false, &a->format, err);
    return rc ? rc : cli_with_kube(&a->g, describe_with, a, err);
}

const cli_command cmd_cluster_describe = {
    .name = "describe",
    .summary = "node pools, accelerators, Kueue queues and their usage, JobSet and Kueue versions",
    .usage = "cluster describe [-c CLUSTER -l LOCATION] [-o text|json|yaml]",
    .options = describe_options,
    .args_size = sizeof(describe_args),
    .run = describe_run,
};
