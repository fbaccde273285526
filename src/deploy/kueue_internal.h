/*
 * What the files of the Kueue configuration share: kueue.c builds it (the module's built-in
 * objects, or a user template through kueue_template.c, which never calls back).
 */
#ifndef GCLUSTER_DEPLOY_KUEUE_INTERNAL_H
#define GCLUSTER_DEPLOY_KUEUE_INTERNAL_H

#include "gcluster/deploy.h"

#include <jansson.h>

#define LABEL_NODEPOOL    "cloud.google.com/gke-nodepool"
#define LABEL_ACCELERATOR "cloud.google.com/gke-tpu-accelerator"
#define LABEL_TOPOLOGY    "cloud.google.com/gke-tpu-topology"
/* The Helm release of the Kueue configuration lives here. */
#define CONFIG_NAMESPACE "kueue-system"

/* What to say when a builder yields NULL: a string jansson refused (not UTF-8). */
int deploy_kueue_cannot_build(const gc_blueprint *bp, const char *what, gc_error *err);
/* A quantity written as a JSON number or string, in canonical spelling as a new JSON string
 * (see kube/quantity.c for why); NULL when it is not a quantity. */
json_t *deploy_kueue_quantity(const json_t *v);
/* The objects of the blueprint's kueue.config_path, rendered with `vars`, appended in apply
 * order. */
int deploy_kueue_user_objects(const gc_blueprint *bp, const json_t *vars, json_t *objects,
                              gc_error *err);
/* Quotas of a user template's ClusterQueues in canonical form; false when out of memory. */
bool deploy_kueue_canonical_quotas(json_t *objects);
/* A warning when a Pathways blueprint's own template leaves the head pool without a flavor. */
void deploy_kueue_warn_head_pool(const gc_blueprint *bp, const char *head_pool,
                                 const json_t *objects, gc_buf *warnings);

#endif
