/*
 * Opening the cluster a command talks to, from the global flags.
 */
#include "cli/cli.h"

#include <stdio.h>
#include <unistd.h>

int cli_open_kube(const cli_globals *g, gc_kube **kube, gc_error *err)
{
    gc_kube_options opts = {
        .kubeconfig = g->kubeconfig,
        .context = g->context,
        .cluster = g->cluster,
        .location = g->location,
        .project = g->project,
        .ns = g->ns,
        .verbose = g->verbose,
        .events = cli_events(),
        .allow_gcloud = true,
    };
    if (g->location && !g->cluster && !g->context)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--location needs --cluster (or pick a kubeconfig context with --context)");
    return gc_kube_open(&opts, kube, err);
}

gc_output cli_output(void)
{
    gc_output o = {
        .out = stdout, .log = stderr, .tty = isatty(fileno(stderr)) != 0, .events = cli_events()};
    return o;
}
