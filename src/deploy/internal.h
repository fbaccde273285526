/*
 * What the files of deploy/ share: gcloud argvs built as data.
 */
#ifndef GCLUSTER_DEPLOY_INTERNAL_H
#define GCLUSTER_DEPLOY_INTERNAL_H

#include "gcluster/deploy.h"

/* A NULL-terminated argv that grows; free with deploy_argv_free. */
typedef struct deploy_argv {
    char **items;
    size_t count;
} deploy_argv;

void deploy_argv_push(deploy_argv *b, char *owned);
/* Appends each word (copied) up to a NULL. */
void deploy_argv_words(deploy_argv *b, ...) __attribute__((sentinel));
/* --flag=value, when value is not NULL. */
void deploy_argv_flag(deploy_argv *b, const char *flag, const char *value);
void deploy_argv_count(deploy_argv *b, const char *flag, long value);

/* Server-side apply (ssa.c). */
#define DEPLOY_FIELD_MANAGER "gcluster"

/* Where an object lives and kubectl's name for it. */
typedef struct deploy_object_ref {
    char *path;
    char label[192]; /* "clusterqueue.kueue.x-k8s.io/cluster-queue" */
} deploy_object_ref;

/* Whether the API group is served (`version` "" when not) and its version to use, preferring
 * `want`. */
int deploy_group_version(gc_kube *kube, const char *group, const char *want, char *version,
                         size_t size, gc_error *err);
/* Fills `ref` for `obj` from API discovery (cached in `cache`, an object); a namespaced object
 * without a namespace gets the kubeconfig's. */
int deploy_locate(gc_kube *kube, json_t *cache, json_t *obj, deploy_object_ref *ref, gc_error *err);
int deploy_apply_object(gc_kube *kube, json_t *obj, const deploy_object_ref *ref, bool dry_run,
                        gc_apply_outcome *outcome, gc_error *err);
/* Applies `objects` (an array) in order, each located by discovery first, stopping at the first
 * error; `applied` (may be NULL) counts those that went in, so an error can say where to resume. */
int deploy_apply_objects(gc_kube *kube, const json_t *objects, size_t *applied, gc_error *err);
/* The image tag of a controller Deployment's first container ("v0.17.1"); NULL when there is
 * no such Deployment or its image has no tag. */
char *deploy_controller_version(gc_kube *kube, const char *ns, const char *name);
/* The same two, remembered in `cache` (an object) so one run asks the cluster once; a caller
 * that changed the cluster starts a new cache. */
int deploy_served(gc_kube *kube, json_t *cache, const char *group, const char *want, char *version,
                  size_t size, gc_error *err);
char *deploy_running_version(gc_kube *kube, json_t *cache, const char *ns, const char *name);
/* vX.Y.Z as a number to compare; -1 when it is not a version. */
long deploy_version_number(const char *v);
void deploy_sleep_ms(long ms);

/* Installing what the blueprint's kubectl-apply module installs (install.c). */
/* Where release files come from: `dir` (--manifests-dir), else `mirror` in place of
 * https://github.com, else GitHub; `upgrade` replaces an older running release. */
typedef struct deploy_release_source {
    const char *dir;
    const char *mirror;
    bool upgrade;
} deploy_release_source;
/* The file a --manifests-dir holds for the release of `name` ("JobSet") at the kubectl-apply
 * module's default version, appended to `out`. */
void deploy_release_file(const char *name, gc_strings *out);
/* Fills `in` for the release of `name` ("cert-manager", "JobSet", "Kueue") at `version` (NULL:
 * the kubectl-apply module's default) and, with `kube`, what the cluster runs of it. */
int deploy_install_check_one(gc_kube *kube, json_t *cache, const char *name, const char *version,
                             const deploy_release_source *src, gc_deploy_install *in,
                             gc_error *err);
/* Installs every one of `installs` found missing (each release file fetched and checked first,
 * all before the first object is sent), then waits until their controllers and webhooks are
 * ready. Sets the state of each it installed. */
int deploy_install_apply(gc_kube *kube, const deploy_release_source *src, const gc_events *ev,
                         gc_deploy_install *installs, size_t count, gc_error *err);
/* Fills report->installs: what the blueprint installs and, with `kube`, what the cluster has. */
int deploy_install_check(gc_kube *kube, json_t *cache, const gc_blueprint *bp,
                         const gc_deploy_request *r, gc_deploy_report *report, gc_error *err);
/* Installs every component the check found missing (each release file fetched and checked
 * first), then waits until their controllers and webhooks are ready. */
int deploy_install_run(gc_kube *kube, const gc_deploy_request *r, const gc_events *ev,
                       gc_deploy_report *report, gc_error *err);
/* Whether deploy_install_run installed or upgraded anything. */
bool deploy_install_changed(const gc_deploy_report *report);
/* deploy_apply_object, retried for up to a minute while a webhook just installed does not
 * answer yet (`wait_for_webhook`). */
int deploy_apply_after_install(gc_kube *kube, json_t *obj, const deploy_object_ref *ref,
                               bool wait_for_webhook, gc_apply_outcome *outcome, gc_error *err);
void deploy_install_free(gc_deploy_install *in);
/* The PriorityClasses the kubectl-apply module's Kueue configuration applies (very-low, low,
 * medium, high, very-high), appended to `objects` (kueue.c). */
void deploy_priority_classes(json_t *objects);

/* The blueprint, its pools and the cloud plan's lines, as deploy/'s files share them (the
 * public side, gcluster/deploy.h, is what cli/ calls). */
/* Loads `path`; `overrides` ("NAME=VALUE" strings from --vars, `count` of them) replace entries
 * of `vars` before expansion (values are read as YAML scalars: 2 is a number, true a boolean).
 * Errors name the file, line and column. */
int deploy_blueprint_load(const char *path, const char *const *overrides, size_t count,
                          gc_blueprint *bp, gc_error *err);

/* The module with that id, or NULL. */
const gc_bp_module *deploy_blueprint_module(const gc_blueprint *bp, const char *id);
/* What module `m` gets for input `key`, as the toolkit wires it: its setting, else (for
 * enable_pathways_for_tpus) the gke-cluster it uses, else the blueprint variable of the same
 * name. Borrowed; NULL when none or null. May be unknown (deploy_blueprint_unknown). */
const json_t *deploy_blueprint_setting(const gc_blueprint *bp, const gc_bp_module *m,
                                       const char *key);
/* NULL when `value` (and everything in it) is known; else the module output it waits for
 * ("gke-tpu-v6e-net-1.instance_additional_networks"). */
const char *deploy_blueprint_unknown(const json_t *value);

/* Every node pool the cluster needs: the blueprint's, plus the Pathways head pool (named
 * `head_pool`) first when the blueprint enables Pathways. Borrowed strings; free the array. */
gc_pool_spec *deploy_blueprint_all_pools(const gc_blueprint *bp, const char *head_pool,
                                         size_t *count);

/* Renders a Terraform-style template: ${name} from `vars` (strings and numbers), $${ for a
 * literal ${ and %%{ for a literal %{; %{...} directives and unknown names are errors that
 * name `label`, line and column. */
int deploy_kueue_template_render(const char *text, size_t len, const json_t *vars,
                                 const char *label, gc_buf *out, gc_error *err);

void deploy_argv_free(char **argv);
/* The argv as one line a shell reads back the same (arguments quoted where needed). */
char *deploy_argv_shell_line(char *const *argv);

/* The gcloud argv (free with deploy_argv_free) that creates one gke-node-pool pool of `bp` with the
 * module's settings. */
char **deploy_pool_create_argv(const gc_blueprint *bp, const gc_pool_spec *pool,
                               const gc_cloud_target *t);

/* The same as the one line a user pastes (with what it reads on stdin piped in). */
char *deploy_pool_create_command(const gc_blueprint *bp, const gc_pool_spec *pool,
                                 const gc_cloud_target *t);
/* A step's create as one shell line, its input piped in with printf. */
char *deploy_cloud_step_line(const gc_cloud_step *s);

/* Whether the cloud plan acts on modules with this source (vpc, service-account,
 * resource-policy, gke-cluster, gke-node-pool). */
bool deploy_cloud_handles(const char *source);

/* The Kueue configuration of the blueprint (kueue.c), as an array of API objects in apply order
 * (ResourceFlavors, ClusterQueues, LocalQueues, PriorityClasses, anything else of a user
 * template). `kueue_api` is the Kueue API version the cluster serves ("v1beta2" or "v1beta1").
 * Warnings (e.g. a user template without a flavor for the head pool) are appended to
 * `warnings` one per line. An empty array when the blueprint installs no Kueue configuration. */
int deploy_kueue_objects(const gc_blueprint *bp, const char *head_pool, const char *kueue_api,
                         json_t **objects, gc_buf *warnings, gc_error *err);
/* The gke-cluster module's Kubernetes objects besides Kueue's: per additional network a
 * GKENetworkParamSet and a Network; with configure_workload_identity_sa the Kubernetes service
 * account bound to the cluster's Google one (and its namespace when not default); with
 * enable_multi_tier_checkpointing and mtc_target_bucket, the CheckpointConfiguration "default".
 * Appended to `objects` (cluster_objects.c). */
void deploy_cluster_objects(const gc_blueprint *bp, json_t *objects);

/* The Google Cloud plan (gcp_plan.c): */
/* The plan for `bp`. GC_EXIT_USAGE with the fix (`pass --vars zone=...`) when a value the
 * steps need is missing. */
int deploy_cloud_plan_build(const gc_blueprint *bp, const gc_cloud_target *t, gc_cloud_plan *plan,
                            gc_error *err);
void deploy_report_free(gc_deploy_report *report);

/* The gke-persistent-volume modules' gcsfuse Namespace, PersistentVolume and
 * PersistentVolumeClaim, appended to `objects` (gcp_storage.c). */
void deploy_storage_objects(const gc_blueprint *bp, json_t *objects);
/* Whether deploy acts on the module: a bucket, a Filestore instance, or a
 * gke-persistent-volume over either. */
bool deploy_storage_handles(const gc_blueprint *bp, const char *module_id);
/* Fills the NFS server of each Filestore PersistentVolume in `objects` with its instance's IP
 * address, read with gcloud's describe (gcloud NULL: not read). An address that cannot be read
 * stays a placeholder, or with `must` (about to apply) is an error that says what to check. */
int deploy_filestore_addresses(const gc_blueprint *bp, const gc_cloud_target *t, const char *gcloud,
                               json_t *objects, bool must, gc_error *err);

/* A row of a pipeline's table of stages (pipeline.c's and destroy_pipeline.c's): its kind, what
 * it does, and the function that runs it, given the pipeline. */
typedef struct deploy_stage_row {
    int kind; /* a gc_deploy_stage_kind, or a gc_destroy_stage_kind in destroy's table */
    const char *description;
    int (*run)(void *pipe, gc_error *err);
} deploy_stage_row;

/* The walk over a pipeline's table, deploy's and destroy's alike (pipeline.c): every row goes
 * into `out` (*stage_count of them, state GC_STAGE_NOT_RUN), then each in order is made the
 * `running` one and run. Its state becomes GC_STAGE_FAILED when it fails and GC_STAGE_DONE when
 * it succeeds without marking itself GC_STAGE_SKIPPED. The first failure stops the walk (the
 * rows after it stay GC_STAGE_NOT_RUN) and is returned. */
int deploy_stages_walk(const deploy_stage_row *rows, size_t count, void *pipe, gc_deploy_stage *out,
                       size_t *stage_count, gc_deploy_stage **running, gc_error *err);

/* The Kubernetes stages of the pipeline against one cluster (kube NULL: --plan without it),
 * in apply.c; pipeline.c decides their order. */
typedef struct deploy_cluster {
    gc_kube *kube;
    const gc_blueprint *bp;
    const gc_deploy_request *r;
    const gc_events *ev;
    gc_deploy_report *report;
    const char *head_pool;
    json_t *cache;      /* what the cluster serves, asked once (again after an install) */
    json_t *located;    /* discovery of the objects' kinds (deploy_locate), asked once */
    char kueue_api[16]; /* the Kueue API version served, "" when none */
    json_t *objects;    /* gc_deploy_objects, once built */
    const char *gcloud; /* reads what exists only once created (a Filestore instance's IP) */
} deploy_cluster;

/* Fills the report's summary; `why` (kube NULL) says why the cluster was not read. */
void deploy_cluster_begin(deploy_cluster *c, const char *why);
int deploy_stage_installs(deploy_cluster *c, gc_error *err);
int deploy_stage_objects(deploy_cluster *c, gc_error *err);
int deploy_stage_wait(deploy_cluster *c, gc_error *err);
void deploy_cluster_end(deploy_cluster *c);

/* The Google Cloud steps run and destroy's parts (cloud_run.c, destroy.c), which the pipelines
 * (pipeline.c, destroy_pipeline.c) call in their order. */
void deploy_cloud_plan_free(gc_cloud_plan *plan);

/* destroy: what deploy creates, in the reverse of deploy's order, each step a describe of
 * what deploy's plan names and its delete (gc_cloud_step.removes); run with deploy_cloud_run,
 * whose states then mean PRESENT: gone, MISSING: still to delete, CREATED: deleted. The
 * cluster's add-ons and maintenance exclusions go with the cluster. */
int deploy_destroy_plan_build(const gc_blueprint *bp, const gc_cloud_target *t, gc_cloud_plan *plan,
                              gc_error *err);
/* The JobSets on the cluster that have not finished, as "NAMESPACE/NAME" (none without the
 * JobSet API). */
int deploy_destroy_running_jobs(gc_kube *kube, gc_strings *names, gc_error *err);

/* Checks each step of `plan` in order (read-only describes) and, with `apply`, creates the
 * missing ones, stopping at the first failure (its error says which step and how to resume).
 * `gcloud` is the program to run (NULL: gcloud on $PATH; not found: nothing is checked, and
 * with `apply` that is an error). Progress goes to `ev`. */
int deploy_cloud_run(const gc_cloud_plan *plan, const char *gcloud, bool apply, const gc_events *ev,
                     gc_cloud_report *report, gc_error *err);
void deploy_cloud_report_free(gc_cloud_report *report);

int deploy_destroy_objects(gc_kube *kube, const gc_blueprint *bp, bool apply,
                           gc_destroy_object **out, size_t *count, gc_error *err);
void deploy_destroy_objects_free(gc_destroy_object *objects, size_t count);

#endif
