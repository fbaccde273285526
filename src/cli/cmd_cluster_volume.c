/*
 * gcluster cluster volume [-c CLUSTER -l LOCATION] [-o text|json|yaml]
 */
#include "cli/cli.h"
#include "cli/render.h"
#include "cli/render_cluster.h"

#include <stdio.h>

typedef struct volume_args {
    cli_globals g;
    const char *output;
    cli_format format;
} volume_args;

static const cli_option volume_options[] = {
    CLI_VALUES('o', "output", volume_args, output, NULL, &cli_text_formats,
               "output format (default text; README.md describes the fields)"),
    CLI_END,
};

static int volume_with(gc_kube *kube, void *ctx, gc_error *err)
{
    volume_args *a = ctx;
    gc_cluster_volume_list list;
    int rc = gc_cluster_volumes(kube, &list, err);
    if (rc)
        return rc;
    if (a->format == CLI_FORMAT_TEXT)
        cli_render_cluster_volumes(stdout, &list, a->g.cluster);
    else
        rc = cli_print_document(cli_cluster_volumes_json(&list), a->format, err);
    gc_cluster_volume_list_free(&list);
    return rc;
}

static int volume_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    volume_args *a = args;
    if (parsed->positional_count)
        return gc_fail(err, GC_EXIT_USAGE,
                       "cluster volume takes no arguments (got \"%s\"); name the cluster with "
                       "--cluster and --location",
                       parsed->positional[0]);
    int rc = cli_format_parse(a->output, false, &a->format, err);
    return rc ? rc : cli_with_kube(&a->g, volume_with, a, err);
}

const cli_command cmd_cluster_volume = {
    .name = "volume",
    .summary = "the storage jobs can mount: Cluster Toolkit's file systems, storage-profile "
               "gateways",
    .usage = "cluster volume [-c CLUSTER -l LOCATION] [-o text|json|yaml]",
    .description =
        "The PersistentVolumeClaims of every namespace that Cluster Toolkit's file-system modules "
        "made\n(label ghpc_role=file-system), typed by the module (label ghpc_module), else by "
        "their StorageClass,\nas Google's gcluster lists them; then the storage-profile gateways "
        "that job submit made for\nprofile= mounts. A job mounts either by its claim name.",
    .options = volume_options,
    .args_size = sizeof(volume_args),
    .run = volume_run,
};
