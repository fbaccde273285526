/*
 * deploy: from a Cluster Toolkit blueprint to a Pathways-ready cluster.
 *
 *   1. gc_blueprint_open: the YAML file evaluated as Cluster Toolkit does, the modules that
 *      matter read into a gc_blueprint; every other module is kept by name so it can be listed
 *      as not handled.
 *   2. gc_deploy_objects: every Kubernetes object deploy applies, in apply order (what
 *      --dry-run-out writes).
 *   3. gc_deploy_run: the whole pipeline in the order decided here (gc_deploy_stage_kind), each
 *      stage resumable; what was found and done comes back as data for cli/ to render.
 */
#ifndef GCLUSTER_DEPLOY_H
#define GCLUSTER_DEPLOY_H

#include "gcluster/buf.h"
#include "gcluster/error.h"
#include "gcluster/events.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"

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

/* The kinds of module deploy acts on; every other module is GC_BP_MODULE_OTHER. */
typedef enum gc_bp_module_kind {
    GC_BP_MODULE_OTHER,
    GC_BP_MODULE_CLUSTER,      /* modules/scheduler/gke-cluster */
    GC_BP_MODULE_NODE_POOL,    /* modules/compute/gke-node-pool */
    GC_BP_MODULE_KUBECTL_APPLY /* modules/management/kubectl-apply */
} gc_bp_module_kind;

/* One module of the blueprint with its settings evaluated (expressions over vars and the module
 * outputs deploy models; ghpc_stage paths relative to the blueprint's folder). A value that only
 * Terraform can know (another module's output) is kept as an opaque marker: test any value with
 * deploy_blueprint_unknown before using it. Settings the module leaves out are not filled in here;
 * deploy_blueprint_setting applies the toolkit's fallbacks. */
typedef struct gc_bp_module {
    char *id;
    char *source;
    char *group; /* its deployment group's name */
    gc_bp_module_kind kind;
    json_t *settings; /* an object, possibly empty */
    json_t *raw;      /* the settings as written (to name the variable behind an empty value) */
    char **use;       /* the module ids in `use:` */
    size_t use_count;
} gc_bp_module;

/* Google's -l/--validation-level: what a failed validator (a check the toolkit runs as a
 * validator, not a parse error) does. */
typedef enum gc_validation_level {
    GC_VALIDATION_ERROR,   /* exit 2 (the default, as Google's) */
    GC_VALIDATION_WARNING, /* a warning in gc_blueprint.warnings, deploy goes on */
    GC_VALIDATION_IGNORE,  /* skipped */
} gc_validation_level;

typedef struct gc_blueprint_options {
    const char *deployment_file; /* -d: a YAML file whose vars: replace the blueprint's */
    const char *const *vars;     /* --vars "NAME=VALUE", after the deployment file */
    size_t var_count;
    gc_validation_level validation;
} gc_blueprint_options;

typedef struct gc_blueprint {
    char *path;            /* as given, for messages */
    char *deployment_file; /* -d, or NULL */
    gc_validation_level validation;
    gc_strings warnings; /* validators that failed under -l WARNING */
    char *dir;           /* where relative paths ($(ghpc_stage(...)), config_path) are resolved */
    char *name;          /* blueprint_name */
    json_t *vars;        /* every variable, evaluated */

    /* Every module in blueprint order, settings evaluated (see gc_bp_module). */
    gc_bp_module *modules;
    size_t module_count;

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
    bool cert_manager_install;
    char *kueue_version;     /* kueue.version, or NULL */
    char *kueue_config_path; /* resolved against dir, or NULL for the built-in configuration */
    char *kueue_config_var;  /* the variable config_path is exactly $(vars.NAME) of, or NULL */
    json_t *kueue_vars;      /* kueue.config_template_vars (an object, possibly empty) */
    bool kueue_user_vars;    /* some module set config_template_vars (a non-.tftpl config_path
                                is then rendered as a template too, as the module does) */
    bool kueue_pathways;     /* kubectl-apply's enable_pathways_for_tpus (its own, kueue's, the
                                cluster's through use, or the variable): built-in Pathways objects */
    bool dynamic_slicing;    /* kueue.enable_dynamic_slicing_for_tpus */

    gc_module_ref *unhandled;
    size_t unhandled_count;

} gc_blueprint;

void gc_blueprint_free(gc_blueprint *bp);
/* The same with a deployment file and a validation level. */
int gc_blueprint_open(const char *path, const gc_blueprint_options *o, gc_blueprint *bp,
                      gc_error *err);
/* "ERROR", "WARNING" or "IGNORE". */
int gc_validation_level_parse(const char *text, gc_validation_level *out, gc_error *err);

/* Every check of the Kueue configuration that needs no cluster (the template, its variables and
 * quotas): GC_EXIT_USAGE as building the objects would fail once connected. For callers that want
 * bad input refused before anything is sent. */
int gc_kueue_check(const gc_blueprint *bp, const char *head_pool, gc_error *err);

/* The Google Cloud half of deploy: everything the blueprint's handled modules create in a
 * project, in the order they depend on each other (networks, service accounts, the cluster,
 * resource policies, node pools), each as gcloud argvs built as data. A step is present when
 * its `check` argv exits 0 (a describe); `create` runs only when it is not, so a rerun after a
 * failure resumes where it stopped and leaves what exists alone. */
typedef enum gc_cloud_step_kind {
    GC_CLOUD_NETWORK,
    GC_CLOUD_SUBNETWORK,
    GC_CLOUD_FIREWALL,
    GC_CLOUD_ROUTER,
    GC_CLOUD_NAT,
    GC_CLOUD_SERVICE_ACCOUNT,
    GC_CLOUD_ROLE_BINDING,
    GC_CLOUD_CLUSTER,
    GC_CLOUD_WORKLOAD_POLICY,
    GC_CLOUD_NODE_POOL,
    GC_CLOUD_REMOVE_DEFAULT_POOL,
    GC_CLOUD_CLUSTER_ADDON,
    GC_CLOUD_ACCOUNT_BINDING, /* a role on a service account (Workload Identity) */
    GC_CLOUD_BUCKET,          /* a Cloud Storage bucket (cloud-storage-bucket) */
    GC_CLOUD_BUCKET_SETTINGS, /* what gcloud sets on a bucket only after create (its labels) */
    GC_CLOUD_FILESTORE,       /* a Filestore instance (filestore) */
} gc_cloud_step_kind;

typedef struct gc_cloud_step {
    gc_cloud_step_kind kind;
    char *name;      /* the resource's name */
    char *module_id; /* the module that declares it */
    char **check;    /* exit 0: present (or, for GC_CLOUD_REMOVE_DEFAULT_POOL, still to remove);
                      * NULL: the create is idempotent and always runs */
    char *present_output; /* non-NULL: present only when `check` also printed this */
    char **create;        /* what makes the step done */
    char *input;          /* what `create` reads on its stdin (a file gcloud takes), or NULL */
    bool removes;         /* `create` deletes: done when `check` no longer finds it (destroy) */
    /* Settings: what `check` prints for the resource as the blueprint makes it; other output
     * is drift (GC_CLOUD_DIFFERS), which `update` repairs where gcloud can (NULL: reported). */
    char *expect;
    char **update;
} gc_cloud_step;

typedef struct gc_cloud_plan {
    gc_cloud_step *steps;
    size_t count;
    /* What the handled modules set that the plan cannot do with gcloud, one line each. */
    gc_strings notes;
} gc_cloud_plan;

/* Where the cloud plan points: NULL fields take the blueprint's. */
typedef struct gc_cloud_target {
    const char *project;
    const char *cluster;
    const char *location;
    const char *head_pool; /* NULL: cpu-np */
} gc_cloud_target;

const char *gc_cloud_step_kind_name(gc_cloud_step_kind kind);

typedef enum gc_cloud_state {
    GC_CLOUD_NOT_CHECKED, /* gcloud could not tell (see `detail`) */
    GC_CLOUD_PRESENT,
    GC_CLOUD_MISSING,
    GC_CLOUD_CREATED,
    GC_CLOUD_FAILED,
    GC_CLOUD_DIFFERS, /* present with other settings (see `detail`) */
    GC_CLOUD_UPDATED, /* was GC_CLOUD_DIFFERS, and `update` ran */
} gc_cloud_state;

typedef struct gc_cloud_outcome {
    gc_cloud_state state;
    char *command; /* the create argv as one shell line */
    char *detail;  /* why not checked, or what gcloud printed when it ran */
} gc_cloud_outcome;

typedef struct gc_cloud_report {
    bool checked;               /* gcloud was found and the checks ran */
    bool applied;               /* missing steps were created (not --plan) */
    gc_cloud_outcome *outcomes; /* one per plan step */
    size_t count;
} gc_cloud_report;

/* What destroy deletes on the cluster before the Google Cloud steps: the gke-persistent-volume
 * claims and volumes deploy applied, in the reverse of deploy's order (everything else deploy
 * applied goes with the cluster). `state` in destroy's words (as for its Google Cloud steps):
 * PRESENT gone, MISSING still there (not `apply`), CREATED deleted, FAILED, NOT_CHECKED (kube
 * NULL: named without asking the cluster). `label`: kubectl's "persistentvolumeclaim/NAME". */
typedef struct gc_destroy_object {
    char *label;
    gc_cloud_state state;
} gc_destroy_object;

typedef struct gc_deploy_request {
    const char *head_pool; /* --pathways-head-np, or NULL for cpu-np */
    bool plan;             /* --plan: change nothing */
    /* Where the gcloud commands point; NULL takes the blueprint's. */
    const char *project;
    const char *cluster;
    const char *location;
    /* Where the release manifests of what the blueprint installs (Kueue, JobSet, cert-manager)
     * come from: files named <name>-<version>.yaml ("kueue-v0.17.1.yaml", "jobset-v0.10.1.yaml",
     * "cert-manager-v1.17.2.yaml") in this folder,
     * else this base URL in place of https://github.com, else GitHub's release downloads. */
    const char *manifests_dir;
    const char *manifests_mirror;
    bool upgrade; /* replace an older installed release with the blueprint's */
} gc_deploy_request;

typedef enum gc_install_state {
    GC_INSTALL_NOT_CHECKED,  /* --plan without the cluster */
    GC_INSTALL_PRESENT,      /* this release or a newer one runs (or the API is served by
                                something deploy did not install: then `installed` is NULL) */
    GC_INSTALL_OLDER,        /* an older release runs and stays (no --upgrade) */
    GC_INSTALL_MISSING,      /* to install (with --plan: would be installed) */
    GC_INSTALL_UNVERIFIABLE, /* to install, but no digest of that release is kept */
    GC_INSTALL_INSTALLED,
    GC_INSTALL_UPGRADED,
} gc_install_state;

/* A component the blueprint installs on the cluster. */
typedef struct gc_deploy_install {
    char *name;      /* "Kueue", "JobSet", "cert-manager" */
    char *version;   /* the release the blueprint asks for: "v0.17.1" */
    char *installed; /* the running controller's image tag, or NULL */
    char *source;    /* the release file's URL or path */
    gc_install_state state;
    size_t objects; /* objects applied */
} gc_deploy_install;

/* What `job submit` installs when the cluster lacks it (Google's gcluster does the same): JobSet
 * and Kueue at the kubectl-apply module's default releases, by deploy's installer (kept
 * digests, the module's Helm values, the wait for controllers and webhooks). */
typedef struct gc_prereq_request {
    bool skip; /* --skip-prereqs: nothing is checked or installed */
    bool plan; /* a dry run: say what would be installed; change nothing */
    /* What the submit's first round trip found missing (gc_submit_result): only those are
     * installed, and nothing is read again to find them. */
    bool jobset_missing;
    bool kueue_missing;
    const char *manifests_dir;    /* as gc_deploy_request's */
    const char *manifests_mirror; /* as gc_deploy_request's */
} gc_prereq_request;

typedef struct gc_prereq_report {
    gc_deploy_install installs[2]; /* JobSet, Kueue: what the cluster had and what was done */
    size_t install_count;          /* 0 when skipped */
    /* The PriorityClasses applied (with plan: that would be): deploy's five, when Kueue was
     * missing and the cluster has no classes of its own. */
    gc_strings priority_classes;
    /* Kueue was missing, but the user may not list PriorityClasses: whether the cluster has
     * classes of its own is unknown, so none were applied. */
    bool priority_classes_unknown;
    /* Kueue was installed here (with plan: would be), so it has no ClusterQueue or LocalQueue:
     * no job is admitted until one is made (deploy BLUEPRINT applies the blueprint's). */
    bool needs_queue;
} gc_prereq_report;

/* The request's flags, before anything is sent: GC_EXIT_USAGE naming the flag. */
int gc_prereq_check(const gc_prereq_request *r, gc_error *err);
/* The files a --manifests-dir holds, appended to `out` in install order: each release deploy
 * installs (gc_deploy_release_files: cert-manager, JobSet, Kueue) or job submit installs
 * (gc_prereq_release_files: JobSet, Kueue), at the kubectl-apply module's default version, its
 * release file named <name>-<version>.yaml in lower case ("kueue-v0.17.1.yaml"). */
void gc_deploy_release_files(gc_strings *out);
void gc_prereq_release_files(gc_strings *out);

/* Installs those of JobSet and Kueue the request names missing (with Kueue, deploy's five
 * PriorityClasses when the cluster has none of its own). `report` says what was done, also
 * after a failure (free it in every case). */
int gc_prereq_install(gc_kube *kube, const gc_prereq_request *r, const gc_events *ev,
                      gc_prereq_report *report, gc_error *err);
void gc_prereq_report_free(gc_prereq_report *report);

/* One node pool the cluster needs. */
typedef struct gc_deploy_pool {
    char *name;
    char *machine_type;
    char *size;           /* "tpu-v6e-slice 4x4, 4 hosts", "3 nodes", "autoscaling 0-100" */
    long nodes;           /* the nodes the cluster has in it; -1 when the pool is missing */
    char *create_command; /* missing: the gcloud command that creates it, as one shell line */
} gc_deploy_pool;

typedef enum gc_apply_outcome {
    GC_APPLY_CREATED,
    GC_APPLY_CONFIGURED,
    GC_APPLY_UNCHANGED,
    GC_APPLY_NOT_CHECKED, /* --plan without the cluster: it would be applied */
} gc_apply_outcome;

/* One object of the Kueue configuration, applied (with plan: dry-run applied). */
typedef struct gc_deploy_object {
    char *api_version;
    char *kind;
    char *name;
    char *ns;    /* NULL for cluster-scoped kinds */
    char *label; /* kubectl's name for it: "clusterqueue.kueue.x-k8s.io/cluster-queue" */
    gc_apply_outcome outcome; /* with plan: what applying it would do */
    /* A ClusterQueue really applied: whether Kueue made it Active within a few seconds, and
     * the reason and message of its Active condition. */
    bool queue_checked;
    bool queue_active;
    char *queue_reason;
    char *queue_message;
} gc_deploy_object;

/* What deploy found and did, as far as it got. Strings are owned by the report. */
typedef struct gc_deploy_report {
    bool started;    /* the blueprint summary below is filled */
    char *blueprint; /* blueprint_name */
    char *cluster;   /* where the gcloud commands point */
    char *project;
    char *location;
    bool pathways;
    char *head_pool;          /* with pathways */
    gc_module_ref *unhandled; /* the blueprint's modules deploy does not act on */
    size_t unhandled_count;
    gc_deploy_install *installs; /* what the blueprint installs, in install order */
    size_t install_count;
    bool pools_listed; /* the cluster's node pools were read: `pools` is complete */
    gc_deploy_pool *pools;
    size_t pool_count;
    bool plan;            /* --plan: nothing was changed */
    char *not_connected;  /* --plan without a kubeconfig context: why the cluster was not read */
    char *kueue_version;  /* the installed Kueue controller's image tag, or NULL */
    char *jobset_version; /* the installed JobSet controller's image tag, or NULL */
    char *kueue_api;      /* "kueue.x-k8s.io/v1beta2" once applying began, else NULL */
    gc_deploy_object *objects; /* in apply order, as far as applying got */
    size_t object_count;
    gc_strings warnings; /* also reported on the events as they came */
} gc_deploy_report;

/* Every Kubernetes object deploy applies, in the order it applies them: the Kueue configuration
 * (for Kueue API `kueue_api`, "v1beta2" or "v1beta1"), then the gke-cluster module's objects
 * (network objects, the Workload Identity service account, the checkpointing configuration),
 * then the gke-persistent-volume modules' PersistentVolumes and PersistentVolumeClaims.
 * Warnings (a user template without a flavor for the head pool) are appended to `warnings`,
 * one per line. `--dry-run-out` writes exactly this list, so it shows deploy's order. */
int gc_deploy_objects(const gc_blueprint *bp, const char *head_pool, const char *kueue_api,
                      json_t **objects, gc_buf *warnings, gc_error *err);

/* deploy's pipeline. Its order is decided here, once, and comes back as data: the Google
 * Cloud steps first (the cluster must exist), then the cluster's credentials (the kubeconfig
 * context), then what the blueprint installs (its webhooks must answer before objects of its
 * kinds are sent), then the objects, then the waits on what the objects start. Every stage
 * finds what already exists before it changes anything, so a rerun after a failure resumes. */
typedef enum gc_deploy_stage_kind {
    GC_STAGE_CLOUD,       /* the gc_cloud_plan steps: describe each, create what is missing */
    GC_STAGE_CREDENTIALS, /* the cluster's kubeconfig context (gcloud writes it, not --plan) */
    GC_STAGE_INSTALLS,    /* Kueue, JobSet, cert-manager, then their controllers and webhooks */
    GC_STAGE_OBJECTS,     /* gc_deploy_objects by server-side apply, and the node pools read */
    GC_STAGE_WAIT,        /* each ClusterQueue applied made Active by Kueue */
} gc_deploy_stage_kind;

typedef enum gc_deploy_stage_state {
    GC_STAGE_NOT_RUN, /* a stage before it failed */
    GC_STAGE_DONE,    /* ran (with --plan: looked, changed nothing) */
    GC_STAGE_SKIPPED, /* had nothing to do, or could not be done without changing something
                         under --plan: `detail` says which */
    GC_STAGE_FAILED,  /* the error returned says why */
} gc_deploy_stage_state;

/* A stage of deploy's pipeline or of destroy's (one type, so one walk fills both). */
typedef struct gc_deploy_stage {
    int kind; /* a gc_deploy_stage_kind in a gc_deploy_result, a gc_destroy_stage_kind in a
                 gc_destroy_result */
    const char *description; /* static text: what the stage does */
    gc_deploy_stage_state state;
    char *detail;
} gc_deploy_stage;

/* How the pipeline reaches the cluster once the cloud stage is done: cli/ opens it from its
 * flags. `may_write_kubeconfig` is false under --plan (gcloud get-credentials would write the
 * kubeconfig): then a missing context is an error, and the pipeline goes on without the
 * cluster, saying why. */
typedef struct gc_deploy_connect {
    int (*open)(void *ctx, bool may_write_kubeconfig, gc_kube **kube, gc_error *err);
    void *ctx;
} gc_deploy_connect;

typedef struct gc_deploy_result {
    gc_deploy_stage stages[GC_STAGE_WAIT + 1]; /* in the order they run */
    size_t stage_count; /* 0: bad input, nothing was run (the error says why) */
    bool plan;          /* --plan: nothing was changed */
    gc_cloud_plan cloud;
    gc_cloud_report cloud_report;
    gc_deploy_report report; /* the Kubernetes stages' findings (report.started once reached) */
    gc_kube *kube;           /* what the credentials stage opened, closed by the free */
} gc_deploy_result;

/* Runs the pipeline for `bp`: with r->plan every stage only looks; `apply` (--auto-approve)
 * lets the cloud stage create what is missing. `gcloud` is the program (NULL: on $PATH).
 * `result` says what each stage found and did, also after a failure; free it with
 * gc_deploy_result_free in every case. Progress and warnings go to `ev` as they happen. */
int gc_deploy_run(const gc_blueprint *bp, const gc_deploy_request *r, bool apply,
                  const char *gcloud, const gc_deploy_connect *connect, const gc_events *ev,
                  gc_deploy_result *result, gc_error *err);
void gc_deploy_result_free(gc_deploy_result *result);
const char *gc_deploy_stage_kind_name(gc_deploy_stage_kind kind);

/* destroy's pipeline, its order decided here as deploy's is: every Google Cloud step described
 * first (nothing is deleted before the whole plan is known), then, while the cluster is there,
 * the check for running JobSets (deleting a cluster under a job loses the job), then the gcsfuse
 * volumes on the cluster (before the cloud steps delete their buckets), then the deletes, node
 * pools first and networks last. Each stage finds what is already gone, so a rerun resumes. */
typedef enum gc_destroy_stage_kind {
    GC_DESTROY_CHECK,   /* a describe of each Google Cloud step: what is still there */
    GC_DESTROY_JOBS,    /* the JobSets not finished on the cluster: any stops destroy */
    GC_DESTROY_OBJECTS, /* the gcsfuse claims and volumes (gc_destroy_object) */
    GC_DESTROY_DELETE,  /* the Google Cloud steps still there deleted, in order */
} gc_destroy_stage_kind;

typedef struct gc_destroy_request {
    /* Where the gcloud commands point; NULL takes the blueprint's. */
    const char *project;
    const char *cluster;
    const char *location;
    /* The cluster `connect` opens, for messages (NULL: the kubeconfig context's). */
    const char *kube_cluster;
    bool apply;              /* --auto-approve: without it nothing is deleted, nor asked */
    bool allow_running_jobs; /* --allow-running-jobs */
} gc_destroy_request;

typedef struct gc_destroy_result {
    gc_deploy_stage stages[GC_DESTROY_DELETE + 1]; /* in the order they run */
    size_t stage_count; /* 0: bad input, nothing was run (the error says why) */
    bool applied;       /* deletes were allowed: `apply` and every step was described */
    gc_cloud_plan cloud;
    /* The deletes' report once they ran, else the describes', in destroy's words: PRESENT gone,
     * MISSING still to delete, CREATED deleted. */
    gc_cloud_report cloud_report;
    gc_strings jobs; /* the running JobSets that stopped it */
    gc_destroy_object *objects;
    size_t object_count;
    gc_kube *kube; /* the cluster, when it was opened; closed by the free */
} gc_destroy_result;

/* Runs destroy for `bp`. `connect` opens the cluster (it may write the kubeconfig: only with
 * r->apply is it called). `result` says what each stage found and did, also after a failure;
 * free it with gc_destroy_result_free in every case. Warnings go to `ev` as they happen. */
int gc_destroy_run(const gc_blueprint *bp, const gc_destroy_request *r, const char *gcloud,
                   const gc_deploy_connect *connect, const gc_events *ev, gc_destroy_result *result,
                   gc_error *err);
void gc_destroy_result_free(gc_destroy_result *result);
const char *gc_destroy_stage_kind_name(gc_destroy_stage_kind kind);

#endif
