/*
 * deploy: from a Cluster Toolkit blueprint to a Pathways-ready cluster (SPEC §6).
 *
 * Three steps, each usable alone (the tests drive them one by one):
 *   1. gc_blueprint_load: the YAML file, $(vars.NAME) expanded, the modules that matter read
 *      into a gc_blueprint (the cluster, its node pools, the Kueue settings); every other module
 *      is kept by name so it can be listed as not handled.
 *   2. gc_kueue_objects: the Kueue configuration as objects (built in, or the user's template).
 *   3. gc_deploy_run: against a cluster, the node pools it lacks (and the gcloud commands that
 *      create them) and a server-side apply of the objects, or with --plan only what would change.
 */
#ifndef GCLUSTER_DEPLOY_H
#define GCLUSTER_DEPLOY_H

#include "gcluster/error.h"
#include "gcluster/job.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The head pool Cluster Toolkit creates for Pathways and the machine it uses. */
#define GC_PATHWAYS_HEAD_POOL    "cpu-np"
#define GC_PATHWAYS_HEAD_MACHINE "n4-standard-64"
#define GC_PATHWAYS_HEAD_MAX     100

/* One GKE node pool the blueprint asks for. */
typedef struct gc_pool_spec {
    char *name;         /* GKE node pool name */
    char *module_id;    /* the module that declared it ("" for the Pathways head pool) */
    char *machine_type; /* "ct6e-standard-4t", "n4-standard-64" */
    char *accelerator;  /* cloud.google.com/gke-tpu-accelerator for TPU pools, else NULL */
    char *topology;     /* TPU slice shape ("4x4"), else NULL */
    char *zones;        /* comma-separated --node-locations, or NULL for the blueprint's zone */
    long static_nodes;  /* fixed size, or -1 when autoscaled */
    long min_nodes;     /* autoscaling total bounds (when static_nodes < 0) */
    long max_nodes;
    bool spot;
} gc_pool_spec;

/* A module the blueprint declares that deploy does not act on. */
typedef struct gc_module_ref {
    char *id;
    char *source;
} gc_module_ref;

typedef struct gc_blueprint {
    char *path; /* as given, for messages */
    char *dir;  /* where relative paths ($(ghpc_stage(...)), config_path) are resolved */
    char *name; /* blueprint_name */
    json_t *vars;

    /* modules/scheduler/gke-cluster */
    char *project;
    char *cluster;
    char *region; /* the cluster's location (region, or zone for a zonal cluster) */
    char *zone;   /* default --node-locations */
    bool pathways;

    /* modules/compute/gke-node-pool (the Pathways head pool is not among them) */
    gc_pool_spec *pools;
    size_t pool_count;

    /* modules/management/kubectl-apply */
    bool has_kubectl_apply;
    bool kueue_install;
    bool jobset_install;
    char *kueue_version;     /* kueue.version, or NULL */
    char *kueue_config_path; /* resolved against dir, or NULL for the built-in configuration */
    json_t *kueue_vars;      /* kueue.config_template_vars (an object, possibly empty) */

    gc_module_ref *unhandled;
    size_t unhandled_count;
} gc_blueprint;

/* Loads `path`; `overrides` ("NAME=VALUE" strings from --vars, `count` of them) replace entries
 * of `vars` before expansion (values are read as YAML scalars: 2 is a number, true a boolean).
 * Errors name the file, line and column. */
int gc_blueprint_load(const char *path, const char *const *overrides, size_t count,
                      gc_blueprint *bp, gc_error *err);
void gc_blueprint_free(gc_blueprint *bp);

/* Every node pool the cluster needs: the blueprint's, plus the Pathways head pool (named
 * `head_pool`) first when the blueprint enables Pathways. Borrowed strings; free the array. */
gc_pool_spec *gc_blueprint_all_pools(const gc_blueprint *bp, const char *head_pool, size_t *count);

/* The Kueue configuration of the blueprint, as an array of API objects in apply order
 * (ResourceFlavors, ClusterQueues, LocalQueues, PriorityClasses, anything else of a user
 * template). `kueue_api` is the Kueue API version the cluster serves ("v1beta2" or "v1beta1").
 * Warnings (e.g. a user template without a flavor for the head pool) are appended to
 * `warnings` one per line. An empty array when the blueprint installs no Kueue configuration. */
int gc_kueue_objects(const gc_blueprint *bp, const char *head_pool, const char *kueue_api,
                     json_t **objects, gc_buf *warnings, gc_error *err);

/* Renders a Terraform-style template: ${name} from `vars` (strings and numbers), $${ for a
 * literal ${ and %%{ for a literal %{; %{...} directives and unknown names are errors that
 * name `label`, line and column. */
int gc_template_render(const char *text, size_t len, const json_t *vars, const char *label,
                       gc_buf *out, gc_error *err);

/* The gcloud argv (NULL-terminated; free with gc_argv_free) that creates `pool`. */
char **gc_pool_create_argv(const gc_pool_spec *pool, const char *project, const char *cluster,
                           const char *location, const char *default_zone);
void gc_argv_free(char **argv);
/* The argv as one line a shell reads back the same (arguments quoted where needed). */
char *gc_argv_shell_line(char *const *argv);

typedef struct gc_deploy_request {
    const char *head_pool; /* --pathways-head-np, or NULL for cpu-np */
    bool plan;             /* --plan: change nothing */
    bool create_node_pools;
    /* Where the gcloud commands point; NULL takes the blueprint's. */
    const char *project;
    const char *cluster;
    const char *location;
} gc_deploy_request;

/* The command against a cluster: node pools first (reported, created with create_node_pools),
 * then the Kueue objects by server-side apply, each reported created, configured or unchanged
 * (with plan: what would happen, and nothing is changed). */
int gc_deploy(gc_kube *kube, const gc_blueprint *bp, const gc_deploy_request *r, const gc_output *o,
              gc_error *err);

#endif
