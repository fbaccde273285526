/*
 * What the files of the Google Cloud plan share (gcp_*.c): the planner over the evaluated
 * blueprint (gc_bp_module), the settings as the toolkit wires them, and the one builder every
 * gcloud argv of the plan comes from.
 */
#ifndef GCLUSTER_DEPLOY_GCP_H
#define GCLUSTER_DEPLOY_GCP_H

#include "deploy/internal.h"

#include <stdbool.h>

#define SOURCE_VPC               "modules/network/vpc"
#define SOURCE_MULTIVPC          "modules/network/multivpc"
#define SOURCE_RDMA_VPC          "modules/network/gpu-rdma-vpc"
#define SOURCE_SERVICE_ACCOUNT   "modules/project/service-account"
#define SOURCE_CLUSTER           "modules/scheduler/gke-cluster"
#define SOURCE_RESOURCE_POLICY   "modules/compute/resource-policy"
#define SOURCE_NODE_POOL         "modules/compute/gke-node-pool"
#define SOURCE_BUCKET            "modules/file-system/cloud-storage-bucket"
#define SOURCE_FILESTORE         "modules/file-system/filestore"
#define SOURCE_PERSISTENT_VOLUME "modules/file-system/gke-persistent-volume"

#define SCOPE_CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"

typedef struct planner {
    const gc_blueprint *bp;
    gc_cloud_plan *plan;
    const char *project, *cluster, *location, *region, *head_pool;
    const gc_bp_module *cluster_module;
    const char *deployment;
    gc_error *err;
} planner;

/* Fills the fields every planner has from `bp` and `t` (NULL: the blueprint's own). */
void deploy_gcp_planner_init(planner *p, const gc_blueprint *bp, const gc_cloud_target *t);

/* Modules and their settings */
bool deploy_gcp_source_is(const gc_bp_module *m, const char *path);
/* The first module `m` uses whose source is `path`. */
const gc_bp_module *deploy_gcp_used(const gc_blueprint *bp, const gc_bp_module *m,
                                    const char *path);
/* A module's setting; absent, the variable of the same name (as the toolkit wires variables
 * into every module that declares them). NULL when neither has a value or it is not known
 * before Terraform runs. */
const json_t *deploy_gcp_setting(const planner *p, const gc_bp_module *m, const char *key);
const char *deploy_gcp_string(const planner *p, const gc_bp_module *m, const char *key,
                              const char *dflt);
bool deploy_gcp_bool(const planner *p, const gc_bp_module *m, const char *key, bool dflt);
long deploy_gcp_long(const planner *p, const gc_bp_module *m, const char *key, long dflt);
/* Whether the module sets `key` to a value only Terraform knows. */
bool deploy_gcp_unknown(const gc_bp_module *m, const char *key);

/* Errors that say the fix */
int deploy_gcp_missing(planner *p, const gc_bp_module *m, const char *key, const char *example);
/* An empty value: when the setting as written was "$(vars.NAME)", the fix is --vars NAME. */
int deploy_gcp_empty(planner *p, const json_t *raw, const gc_bp_module *m, const char *what,
                     const char *example);

/* Lists as gcloud takes them */
char *deploy_gcp_key_values(const json_t *object);
/* Cluster Toolkit's labels of a module's resources (the blueprint's labels, its name and
 * deployment, the module's ghpc_module and ghpc_role): as gcloud's KEY=VALUE list, and as an
 * object for the Kubernetes objects a module makes. */
char *deploy_gcp_labels(const planner *p, const gc_bp_module *m, const char *ghpc_module,
                        const char *ghpc_role);
json_t *deploy_gcp_labels_json(const planner *p, const gc_bp_module *m, const char *ghpc_module,
                               const char *ghpc_role);
char *deploy_gcp_join(const json_t *list, const char *field);
/* A gke-persistent-volume module `m`'s Namespace (when not default), PersistentVolume and
 * PersistentVolumeClaim over volume `base`, appended to `objects`; `source` (taken) holds the
 * PV spec's fields of that kind of volume, `claim_ref` adds the PV's claimRef (see
 * gcp_common.c). */
void deploy_gcp_volume_objects(const planner *p, const gc_bp_module *m, const char *base, long gib,
                               const char *storage_class, json_t *source, bool claim_ref,
                               json_t *objects);

/* Steps */
gc_cloud_step *deploy_gcp_step(planner *p, gc_cloud_step_kind kind, const char *name,
                               const gc_bp_module *m);
void deploy_gcp_note(planner *p, const gc_bp_module *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The one builder: `gcloud <the kind's group words> VERB [the kind's create word] NAME
 * --project=P <the kind's scope flags>`. Each step adds only its own flags after this. */
typedef struct gcp_ref {
    gc_cloud_step_kind kind;
    const char *name;   /* as the verb takes it (an account's email, a pool's name) */
    const char *region; /* regional kinds; a Filestore instance's location (zone or region) */
    const char *router; /* NAT */
} gcp_ref;

deploy_argv deploy_gcp_command(const planner *p, const gcp_ref *r, const char *verb);
/* The describe that exits 0 when the resource exists. */
char **deploy_gcp_describe(const planner *p, const gcp_ref *r);

/* An IAM binding's check: `gcloud projects get-iam-policy` prints the role when the policy
 * lists the member under it (present_output = the role). */
char **deploy_gcp_binding_check(const planner *p, const gcp_ref *on, const char *member,
                                const char *role);

/* gcp_network.c */
/* The cluster module `m`'s GKENetworkParamSet and Network objects, appended to `objects`. */
void deploy_gcp_network_objects(const planner *p, const gc_bp_module *m, json_t *objects);
char *deploy_gcp_network_name(const planner *p, const gc_bp_module *m);
char *deploy_gcp_subnetwork_name(const planner *p, const gc_bp_module *m);
/* Every network module's resources (vpc, multivpc, gpu-rdma-vpc), in blueprint order. */
int deploy_gcp_plan_networks(planner *p);
/* The additional networks a gke-cluster or gke-node-pool module gets: its setting, else the
 * additional_networks output of a network module it uses (multivpc), as the toolkit wires an
 * output to the input of the same name. NULL when there are none; *unknown then names a value
 * that cannot be known before Terraform runs, if there is one. */
json_t *deploy_gcp_additional_networks(const planner *p, const gc_bp_module *m,
                                       const char **unknown);

/* gcp_storage.c */
/* The cloud-storage-bucket module `m`'s bucket name (see gcp_storage.c for the suffix). */
char *deploy_gcp_bucket_name(const planner *p, const gc_bp_module *m);
/* The 8 hexadecimal digits that stand for Terraform's random 4 bytes of module `m` (stable:
 * from the project, deployment and module id). */
void deploy_gcp_suffix(const planner *p, const gc_bp_module *m, char out[9]);
/* Every bucket's step; a gcsfuse gke-persistent-volume without capacity_gib is refused. */
int deploy_gcp_plan_buckets(planner *p);

/* gcp_filestore.c */
/* Every filestore module's instance, in blueprint order. */
int deploy_gcp_plan_filestores(planner *p);
/* A gke-persistent-volume module `m` over a Filestore instance: its Namespace (when not
 * default), PersistentVolume and PersistentVolumeClaim, appended to `objects` (nothing when it
 * uses no filestore module). */
void deploy_gcp_filestore_volume(const planner *p, const gc_bp_module *m, json_t *objects);

/* gcp_cluster.c */
int deploy_gcp_plan_cluster(planner *p, const gc_bp_module *m);
/* configure_workload_identity_sa: the Kubernetes service account's name and namespace, and the
 * Google one it acts as (free it); false when the module does not configure one. */
bool deploy_gcp_workload_identity(const planner *p, const gc_bp_module *m, const char **ksa,
                                  const char **ns, char **gsa);
int deploy_gcp_plan_workload_policy(planner *p, const gc_bp_module *m);

/* gcp_pool.c */
char *deploy_gcp_account_email(const planner *p, const gc_bp_module *sa);
char *deploy_gcp_node_service_account(const planner *p, const gc_bp_module *m);
void deploy_gcp_node_basics(deploy_argv *b, const char *image_type, bool secure_boot,
                            const char *service_account, const char *scopes);
char *deploy_gcp_taints(const json_t *taints);
int deploy_gcp_plan_pools(planner *p);
/* The Pathways head pool "cpu-np" exactly as the gke-cluster module `m` makes it. */
char **deploy_gcp_head_pool_argv(const planner *p, const gc_bp_module *m);
/* --max-surge-upgrade and --max-unavailable-upgrade from upgrade_settings (0 and 1 unless set:
 * an upgrade replaces one node at a time and never adds one, so a TPU slice is not recreated
 * under a running job). */
void deploy_gcp_upgrade_settings(const planner *p, const gc_bp_module *m, deploy_argv *b);

#endif
