/*
 * What deploy and destroy share around their pipelines: the blueprint a command names, read
 * with its --vars and --deployment-file; the cluster flags aimed at the blueprint's cluster; the
 * pipeline's way to that cluster; and the end of a run (the report as a document, -v's counts).
 */
#include "cli/blueprint.h"

#include <stdlib.h>

int cli_blueprint_open(const char *path, const cli_list *vars, gc_blueprint_options *o,
                       gc_blueprint *bp, gc_error *err)
{
    char *storage[CLI_LIST_MAX] = {NULL};
    const char **split = cli_split_vars(vars, storage, &o->var_count);
    o->vars = split;
    int rc = gc_blueprint_open(path, o, bp, err);
    for (size_t i = 0; i < vars->count; i++)
        free(storage[i]);
    free(split);
    o->vars = NULL;
    o->var_count = 0;
    return rc;
}

cli_globals cli_blueprint_globals(const cli_globals *given, const gc_blueprint *bp)
{
    cli_globals g = *given;
    if (!g.cluster && !g.context) {
        g.cluster = bp->cluster;
        g.location = g.location ? g.location : bp->region;
        g.project = g.project ? g.project : bp->project;
    }
    cli_apply_stored_defaults(&g);
    return g;
}

/* `gcloud container clusters get-credentials` writes the kubeconfig, so without `may_write`
 * (deploy --plan) only a context already there is used. */
int cli_blueprint_connect(void *globals, bool may_write, gc_kube **kube, gc_error *err)
{
    return cli_open_kube_as(globals, may_write, kube, err);
}

int cli_pipeline_end(const cli_globals *g, gc_kube *kube, json_t *doc, cli_format format, int rc,
                     gc_error *err)
{
    if (doc) {
        gc_error print_err = {0};
        if (cli_print_document(doc, format, &print_err) && !rc)
            rc = gc_fail(err, print_err.code, "%s", print_err.message);
    }
    if (g->verbose && kube)
        gc_notice(cli_events(), "%u API requests in %u round trips", gc_kube_request_count(kube),
                  gc_kube_round_trip_count(kube));
    return rc;
}
