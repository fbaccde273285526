/*
 * Opening the cluster a command talks to, from the global flags, and running a command with it.
 */
#include "cli/cli.h"

#include "gcluster/kube.h"
#include "gcluster/sys.h"

#include <limits.h>
#include <stdio.h>

int cli_open_kube(const cli_globals *g, gc_kube **kube, gc_error *err)
{
    return cli_open_kube_as(g, true, kube, err);
}

int cli_open_kube_as(const cli_globals *g, bool allow_gcloud, gc_kube **kube, gc_error *err)
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
        .allow_gcloud = allow_gcloud,
    };
    long timeout = 0;
    if (g->request_timeout) {
        int rc = gc_clock_parse_duration("--request-timeout", g->request_timeout, &timeout, err);
        if (rc)
            return rc;
        if (timeout <= 0 || timeout > INT_MAX)
            return gc_fail(err, GC_EXIT_USAGE,
                           "--request-timeout %s: give a time longer than zero, as 30s or 2m",
                           g->request_timeout);
        opts.request_timeout_seconds = (int)timeout;
    }
    if (g->location && !g->cluster && !g->context)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--location needs --cluster (or pick a kubeconfig context with --context)");
    /* Checked before the kubeconfig is read or gcloud asked for credentials. */
    if (g->ns && g->ns[0] && !gc_kube_is_dns_label(g->ns))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--namespace \"%s\" is not a namespace name: lower-case letters, digits "
                       "and '-', at most 63, starting and ending with a letter or digit",
                       g->ns);
    return gc_kube_open(&opts, kube, err);
}

int cli_with_kube(cli_globals *g, cli_kube_fn fn, void *ctx, gc_error *err)
{
    cli_apply_stored_defaults(g);
    gc_kube *kube;
    int rc = cli_open_kube(g, &kube, err);
    if (rc)
        return rc;
    rc = fn(kube, ctx, err);
    if (g->verbose)
        gc_notice(cli_events(), "%u API requests in %u round trips", gc_kube_request_count(kube),
                  gc_kube_round_trip_count(kube));
    gc_kube_close(kube);
    return rc;
}
