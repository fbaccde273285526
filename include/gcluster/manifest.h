/*
 * manifest: the Kubernetes objects a workload becomes, built as jansson data.
 *
 * A gc_workload is a fully validated and resolved description of one job (nothing in it needs
 * checking any more); the builders turn it into a JobSet: the Pathways shape (head
 * pod with resource manager and IFRT proxy, TPU workers per slice, optional colocated Python
 * sidecars) or the ordinary one-replicated-job shape for TPU, GPU and CPU compute types.
 * Builders never print. One that cannot build (a string jansson refuses because it is not
 * UTF-8, a value missing) yields no JobSet at all, never one with a part left out, and
 * gc_workload_jobset says so as an error. The emitter (emit.h) turns JobSets into text.
 */
#ifndef GCLUSTER_MANIFEST_H
#define GCLUSTER_MANIFEST_H

#include "gcluster/buf.h"
#include "gcluster/catalog.h"
#include "gcluster/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Labels and annotations shared with Google's gcluster (so each tool lists the other's jobs). */
#define GC_LABEL_WORKLOAD      "gcluster.google.com/workload"
#define GC_LABEL_QUEUE         "kueue.x-k8s.io/queue-name"
#define GC_ANNOTATION_COMPUTE  "gcluster.google.com/compute-type"
#define GC_ANNOTATION_TOPOLOGY "gcluster.google.com/topology"
#define GC_ANNOTATION_SLICES   "gcluster.google.com/num-slices"
#define GC_ANNOTATION_PATHWAYS "gcluster.google.com/pathways"
/* Only on the JobSet view of a JobSet-less job (gc_job_indexed_view), never on the cluster. */
#define GC_ANNOTATION_INDEXED_JOB "gcluster.google.com/indexed-job"
#define GC_PATHWAYS_HEAD          "pathways-head"
#define GC_PATHWAYS_WORKER        "worker"
#define GC_MAIN_JOB               "main-job"

/* Worker restarts per TPU host a headless job allows (pathways-utils' reference headless
 * default): its workers must outlive every client that connects and goes away. */
#define GC_HEADLESS_SLICE_RESTARTS 1000000

/* Where --gke-mtc-enabled mounts the MTC volume unless --gke-mtc-ramdisk-dir says (Google's
 * gcluster's default). */
#define GC_MTC_DEFAULT_RAMDISK_DIR "/tmp/mtc_checkpoints"

#define GC_DEFAULT_PROXY_IMAGE  "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:latest"
#define GC_DEFAULT_SERVER_IMAGE "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:latest"

typedef enum gc_mount_kind {
    GC_MOUNT_GCS,       /* gs://bucket[/dir]: the GCS FUSE CSI driver (inline, or a gateway) */
    GC_MOUNT_HOST_PATH, /* /path on the node */
    GC_MOUNT_NFS,       /* filestore://INSTANCE/share: the Filestore instance over NFS */
    GC_MOUNT_PVC,       /* pvc://NAME or NAME: an existing PersistentVolumeClaim */
} gc_mount_kind;

typedef struct gc_mount {
    gc_mount_kind kind;
    char *source;     /* bucket, host path, PVC name or NFS server (an instance's name until
                       * submit finds its IP address) */
    char *source_dir; /* GCS: the directory in the bucket (the mount's subPath); NFS: the export
                       * path; or NULL */
    char *target;     /* mount path in the container */
    bool read_only;
    char *options;         /* GCS: gcsfuse mount options, comma-separated (options=), or NULL */
    gc_strings attributes; /* GCS: "KEY=VALUE" CSI volume attributes (attributes=) */
    char *profile;         /* GCS: the gcsfusecsi-* StorageClass of profile=, or NULL */
    char *gateway;         /* profile=: the gateway claim's name (gc_workload_gateways) */
} gc_mount;

/* Which container a user's environment variable goes to: the workload container(s) running the
 * user's command (--env, --env-file: as Google's gcluster, never the Pathways servers or the
 * colocated Python sidecar, which each have their own flag or none), or one Pathways role's
 * (--pathways-proxy-env, -server-env, -worker-env). */
typedef enum gc_env_scope {
    GC_ENV_WORKLOAD,
    GC_ENV_PROXY,  /* pathways-proxy */
    GC_ENV_SERVER, /* pathways-rm */
    GC_ENV_WORKER, /* pathways-worker */
    GC_ENV_NONE,   /* a container no user variable goes to (the colocated Python sidecar) */
} gc_env_scope;

typedef struct gc_env_var {
    char *name;
    char *value; /* as given: $(NAME) expands to an earlier variable, as Kubernetes does */
    gc_env_scope scope;
    char *source; /* where it was given, for messages: "--env", "--env-file team.env:3" */
} gc_env_var;

/* A key=value pair (node selectors) or key in (values) (node affinity). */
typedef struct gc_node_term {
    char *key;
    gc_strings values; /* one value → nodeSelector; several → a required affinity "In" term */
} gc_node_term;

typedef struct gc_workload {
    char *name;
    gc_compute compute;
    int num_slices;
    int nodes_per_slice; /* TPU: VMs per slice; GPU/CPU: --num-nodes */
    char *queue;
    bool queue_defaulted;
    char *priority;           /* PriorityClass or NULL */
    char *image;              /* the user's container image, NULL when headless */
    char *command;            /* run by /bin/bash -c, byte for byte; NULL when headless */
    long ttl_seconds;         /* ttlSecondsAfterFinished */
    long grace_seconds;       /* terminationGracePeriodSeconds of TPU/worker pods */
    int restarts;             /* failurePolicy.maxRestarts */
    char *service_account;    /* NULL for the namespace default */
    gc_strings pull_secrets;  /* imagePullSecrets */
    gc_node_term *node_terms; /* extra worker placement: constraints, placement policy, NAP */
    size_t node_term_count;
    gc_strings nap_tolerations; /* "key=value" tolerations NAP capacity needs */
    long *restart_exit_codes;   /* --restart-on-exit-codes → podFailurePolicy */
    size_t restart_exit_code_count;
    gc_mount *mounts;
    size_t mount_count;
    gc_env_var *env; /* the user's variables, after the ones gcluster sets in each container */
    size_t env_count;
    char *scheduler_name;     /* --gke-scheduler */
    bool verbose;             /* verbose TPU/GPU logging env */
    bool numa_affinity;       /* --cpu-affinity numa: Guaranteed QoS for the workload containers */
    bool parallel_containers; /* tpu7x non-Pathways: two containers per host, half the chips */
    /* Pathways workers request google.com/tpu alone, no cpu or memory: the cluster's ClusterQueue
     * keeps cpu and memory in a resource group of their own, whose flavor would pin the workers
     * to the head pool. Set by a connected submit; false offline (the unified configuration). */
    bool tpu_only_requests;

    /* Multi-tier checkpointing (--gke-mtc-enabled): GKE's MTC CSI volume on the TPU hosts, where
     * the job keeps its in-memory checkpoints (GKE replicates them and saves them to Cloud
     * Storage). */
    bool mtc;
    char *mtc_ramdisk_dir; /* its mount path (--gke-mtc-ramdisk-dir) */
    /* TPU7x dynamic slicing (--compute-type tpu-v7x-slice): GKE's slice controller forms each
     * slice from 4x4x4 blocks when Kueue admits it, so the pods ask Kueue's topology-aware
     * scheduling for a partition of the slice's shape instead of a node pool of that shape. */
    bool dynamic_slicing;

    /* Pathways */
    bool pathways;
    bool headless;
    bool sps; /* --pathways-deploy-sps: headless, and the head runs the resource manager alone */
    char *gcs_location;
    char *head_pool;
    bool head_pool_defaulted;
    char *proxy_image;
    char *server_image;
    char *worker_image;
    char *sidecar_image; /* colocated Python, or NULL */
    int elastic_slices;
    int max_slice_restarts;
    bool max_slice_restarts_set; /* given: it also sets a headless job's worker budget */
    gc_strings proxy_args;
    gc_strings server_args;
    gc_strings worker_args;
} gc_workload;

void gc_workload_free(gc_workload *w);

/* The JobSet for `w`, Pathways or ordinary depending on w->pathways (caller owns *jobset).
 * GC_EXIT_USAGE when it cannot be built, or when a user variable is set twice in one
 * container (by two flags, or by a flag and by gcluster itself), naming both. */
int gc_workload_jobset(const gc_workload *w, json_t **jobset, gc_error *err);

/*
 * Shared Pathways Service (SPS): one long-lived JobSet (the resource manager in the head pod, the
 * TPU workers per slice, no proxy and no user container: gc_workload with sps set) that many
 * JAX clients share, each through a proxy Job of its own that reaches the resource manager at
 * <service>-pathways-head-0-0.<service>:29001 and asks it for some of the service's slices.
 */
#define GC_LABEL_SPS_SERVICE   "gcluster.google.com/sps-service" /* on a proxy Job: its service */
#define GC_LABEL_SPS_USER      "gcluster.google.com/sps-user"    /* who runs the client */
#define GC_ANNOTATION_SPS_SIZE "gcluster.google.com/sps-slices"  /* slices the client asked for */
/* The scheduling gate a proxy pod waits behind while the service's slices are all held; the
 * client removes it when its turn comes. */
#define GC_SPS_WAIT_GATE "gcluster.google.com/sps-tpus"
#define GC_SPS_PROXY_APP "pathways-proxy"

typedef struct gc_sps_proxy {
    const char *name;          /* the Job's name (gc_sps_proxy_name) */
    const char *service;       /* the service JobSet's name */
    const char *user;          /* DNS-safe user name (gc_sps_user_name) */
    const char *image;         /* proxy_server image, the same release as the service's server */
    const char *gcs_location;  /* the service's --pathways-gcs-location */
    const char *instance_type; /* "tpuv6e:4x4": the shape of each slice asked for */
    int slices;                /* how many of the service's slices */
    const char *head_pool;     /* node pool of the proxy pod (the service's head pool) */
    long deadline_seconds;     /* activeDeadlineSeconds: the client extends it while it lives */
    bool waiting;              /* created behind GC_SPS_WAIT_GATE */
    const gc_env_var *env;     /* the proxy's variables (--pathways-proxy-env) */
    size_t env_count;
    const gc_strings *args; /* extra proxy arguments (--pathways-proxy-args), or NULL */
} gc_sps_proxy;

/* The client's proxy Job (caller owns it); NULL when a value is not valid UTF-8. */
json_t *gc_sps_proxy_job(const gc_sps_proxy *p);

/* "<service>-pathways-head-0-0.<service>:29001", the resource manager's address (caller frees). */
char *gc_sps_resource_manager_address(const char *service);

/* A DNS-label-safe form of a user name ($USER): lowercase letters, digits and '-', every other
 * byte ('_', '.', '@') a '-', at most `size` - 1 bytes and 20 at most, "user" when nothing is
 * left. */
void gc_sps_user_name(const char *user, char *out, size_t size);

/* The proxy_server image of a service whose server image is `server_image`: the same repository
 * with "server" in its last path element replaced by "proxy_server", the same tag or digest
 * (caller frees). */
char *gc_sps_proxy_image_for(const char *server_image);

/* The release of an image reference: its tag, or its "@digest", or "latest" with neither.
 * Writes at most size - 1 bytes. */
void gc_sps_image_release(const char *image, char *out, size_t size);

/* Whether `w` can run without the JobSet API: one slice, no Pathways. */
bool gc_workload_fits_indexed_job(const gc_workload *w);
/* The JobSet-less shape of `w`: a headless Service and a batch/v1 Indexed Job (the JobSet's one
 * Job, suspended for Kueue), as a new array in *objects; GC_EXIT_USAGE when `w` does not fit. */
int gc_workload_indexed_job(const gc_workload *w, json_t **objects, gc_error *err);

/* Storage-profile mounts (--mount "gs://B/DIR;/D;profile=serving"). GKE applies a Cloud Storage
 * FUSE profile only through its gcsfusecsi-* StorageClasses, so such a mount goes through a
 * "gateway": a PersistentVolume on the profile's class naming the bucket, and a claim bound to it
 * in the job's namespace. The names are derived from the bucket, the profile and a digest of the
 * volume's settings, so jobs of one namespace that mount one bucket alike share one gateway, and
 * any change of settings gets a gateway of its own (a PersistentVolume's spec cannot change). */
#define GC_LABEL_MANAGED_BY   "gcluster.google.com/managed-by"
#define GC_MANAGED_BY_TOOLKIT "cluster-toolkit"
#define GC_LABEL_STORAGE_TYPE "gcluster.google.com/storage-type"
#define GC_STORAGE_GCSFUSE    "gcsfuse"

/* The StorageClass of a profile= value (training, checkpointing, serving, or the class names
 * themselves, in any case), or NULL. */
const char *gc_storage_profile_class(const char *profile);

/* Names the gateway of every profile mount of `w` in namespace `ns` (sets mounts[i].gateway) and
 * returns the objects to create, PersistentVolume then PersistentVolumeClaim for each distinct
 * gateway, as a new array in *objects. */
int gc_workload_gateways(gc_workload *w, const char *ns, json_t **objects, gc_error *err);

/* The head pod's coordinator address, as JobSet labels every pod with it:
 * "<name>-pathways-head-0-0.<name>". It must fit a 63-character label value. */
size_t gc_pathways_coordinator_length(size_t name_length);

#endif
