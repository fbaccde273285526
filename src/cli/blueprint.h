/*
 * What deploy and destroy share around their pipelines (blueprint.c).
 */
#ifndef GCLUSTER_CLI_BLUEPRINT_H
#define GCLUSTER_CLI_BLUEPRINT_H

#include "cli/cli.h"
#include "cli/render.h"
#include "gcluster/deploy.h"

/* Reads the blueprint at `path` with `o` (the caller's --deployment-file and validation level)
 * and the command's --vars, split as cli_split_vars does. */
int cli_blueprint_open(const char *path, const cli_list *vars, gc_blueprint_options *o,
                       gc_blueprint *bp, gc_error *err);

/* The cluster flags aimed at the blueprint's cluster, location and project unless --cluster or
 * --context names another, then the stored defaults filled in. */
cli_globals cli_blueprint_globals(const cli_globals *given, const gc_blueprint *bp);

/* The pipelines' way to the cluster (gc_deploy_connect.open), `globals` a cli_globals from
 * cli_blueprint_globals. */
int cli_blueprint_connect(void *globals, bool may_write, gc_kube **kube, gc_error *err);

/* The end of a pipeline's run, after the caller rendered text: `doc` (the report, NULL for
 * none) printed in `format`, a failure to print it becoming the error when the run (`rc`) did
 * not fail, and with -v the API requests the run's client `kube` sent. Returns the code. */
int cli_pipeline_end(const cli_globals *g, gc_kube *kube, json_t *doc, cli_format format, int rc,
                     gc_error *err);

#endif
