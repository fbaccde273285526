/*
 * submit: `job submit`, a pipeline of types. The flags fill a gc_submit_request (what the user
 * typed); gc_submit_prepare() validates it completely without a cluster and resolves it, every
 * value parsed once, into a gc_submit_plan (the workload, what to do with it, how long to wait).
 * Nothing is sent to a cluster before that succeeds. gc_submit_live() then refines the plan once
 * by the cluster's facts (its LocalQueues, node pools and TPU nodes), creates the JobSet and
 * returns a gc_submit_result; gc_submit_await() follows the job to its end.
 */
#ifndef GCLUSTER_SUBMIT_H
#define GCLUSTER_SUBMIT_H

#include "gcluster/buf.h"
#include "gcluster/catalog.h"
#include "gcluster/error.h"
#include "gcluster/events.h"
#include "gcluster/image.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define GC_REQUEST_LIST_MAX 64

/* `job submit` flags, as typed (Google's gcluster names and short forms). */
typedef struct gc_submit_request {
    const char *name;
    const char *image;
    const char *base_image;
    const char *build_context;
    const char *platform;
    /* --project and --location name the registry a build pushes to; --project is also where a
     * filestore://INSTANCE/SHARE mount's instance is looked for (NULL: gcloud's project) */
    const char *project;
    const char *location;
    const char *command;
    const char *compute_type;
    const char *topology;
    const char *dry_run_out; /* file or "-" */
    const char *dry_run;     /* "server" or "client" */
    const char *mounts[GC_REQUEST_LIST_MAX];
    size_t mount_count;
    /* The gcloud that finds a Filestore instance given by name (tests); NULL: gcloud on $PATH */
    const char *gcloud;
    /* The namespace the job goes to (--gke-namespace), which names a profile= mount's gateway;
     * NULL: "default" offline, the context's namespace when connected. */
    const char *ns;
    /* KEY=VALUE for every container (--env), and files of such lines (--env-file) */
    const char *env[GC_REQUEST_LIST_MAX];
    size_t env_count;
    const char *env_files[GC_REQUEST_LIST_MAX];
    size_t env_file_count;
    const char *queue;
    long num_nodes;
    bool num_nodes_set;
    long num_slices;
    long restarts;
    const char *ttl_after_finished;
    const char *grace_period;
    bool disable_parallel_containers;
    const char *placement_policy;
    const char *node_constraints[GC_REQUEST_LIST_MAX];
    size_t node_constraint_count;
    const char *cpu_affinity;
    const char *restart_on_exit_codes[GC_REQUEST_LIST_MAX];
    size_t restart_on_exit_code_count;
    const char *image_pull_secret;
    const char *service_account;
    const char *scheduler;
    bool await_completion;
    const char *timeout;
    const char *priority;
    bool verbose;
    const char *nap_provisioning;
    const char *nap_reservation;
    bool mtc_enabled;            /* --gke-mtc-enabled */
    const char *mtc_ramdisk_dir; /* --gke-mtc-ramdisk-dir */
    /* Skip the connected checks of what the cluster must have for the features asked for (the
     * multi-tier checkpointing CRD, object and CSI driver; dynamic slicing's Topology and
     * AdmissionCheck): Google's global --skip-prereqs, set by whoever parses it. */
    bool skip_prereqs;

    bool pathways;
    const char *pathways_proxy_image;
    const char *pathways_server_image;
    const char *pathways_worker_image;
    bool pathways_headless;
    /* --pathways-deploy-sps: a Shared Pathways Service (headless, its head the resource manager
     * alone; gcluster/sps.h) */
    bool pathways_deploy_sps;
    bool restarts_set; /* --restarts given (an SPS service defaults to 30, as pathways-utils) */
    const char *pathways_gcs_location;
    long pathways_elastic_slices;
    bool pathways_elastic_slices_set;
    long pathways_max_slice_restarts;
    bool pathways_max_slice_restarts_set;
    const char *pathways_proxy_args;
    const char *pathways_server_args;
    const char *pathways_worker_args;
    const char *pathways_sidecar_image;
    const char *pathways_head_np;
    /* KEY=VALUE for one Pathways role's container */
    const char *pathways_proxy_env[GC_REQUEST_LIST_MAX];
    size_t pathways_proxy_env_count;
    const char *pathways_server_env[GC_REQUEST_LIST_MAX];
    size_t pathways_server_env_count;
    const char *pathways_worker_env[GC_REQUEST_LIST_MAX];
    size_t pathways_worker_env_count;
} gc_submit_request;

/* Google's defaults for the numeric and duration flags. */
void gc_submit_request_defaults(gc_submit_request *r);

/* What a submit does with its workload. */
typedef enum gc_submit_mode {
    GC_SUBMIT_CREATE,         /* create the JobSet */
    GC_SUBMIT_SERVER_DRY_RUN, /* --dry-run=server: the cluster validates it, nothing is stored */
    GC_SUBMIT_OFFLINE,        /* --dry-run-out, --dry-run=client: the manifest, no cluster */
} gc_submit_mode;

/* The compute flags, kept for the one thing only the cluster can finish: resolving the compute
 * type against the TPU nodes it really has. */
typedef struct gc_submit_compute {
    const char *type;     /* --compute-type */
    const char *topology; /* --topology, or NULL */
    long num_nodes;
    bool num_nodes_set;
    bool numa_affinity; /* --cpu-affinity numa */
    bool disable_parallel_containers;
    /* The slice shape is for the cluster's nodes to tell (bare tpu7x, a machine type without
     * --topology): workload.compute is unset until submit_refine. */
    bool pending;
} gc_submit_compute;

/* A request validated and resolved. Nothing after gc_submit_prepare reads the request; the plan
 * borrows its strings, which must outlive it. */
typedef struct gc_submit_plan {
    gc_workload workload; /* the JobSet to create */
    gc_submit_mode mode;
    const char *output_path; /* offline: the file to write, "-" for stdout */
    bool await_completion;   /* follow the job to its end (--await-job-completion, --timeout) */
    long timeout_seconds;    /* of that wait; -1: none; 0: look once */
    /* --base-image with --build-context: workload.image is the reference this build produces
     * (named by content), built and pushed before the JobSet is created. */
    bool build_image;
    gc_image_build image_build; /* its repository is owned by the plan */
    gc_submit_compute compute;
    /* --skip-prereqs (Google's global job flag): the cluster is still read for what the JobSet
     * needs (the queue, the head pool, the real TPU shapes), but the prerequisite checks before
     * the create are skipped: the PriorityClass's existence, whether the ClusterQueue can ever
     * admit the job, the capacity warnings and the server dry runs of the Jobs the JobSet
     * controller will create. The API server still validates the JobSet itself. Copied from the
     * request by gc_submit_prepare; the multi-tier checkpointing and dynamic-slicing checks
     * (submit_needs.c) are skipped too, with a warning. */
    bool skip_prereqs;
    /* What the caller should tell the user about flags taken but not used (Google's gcluster
     * accepts and ignores them too), one line each. */
    gc_strings notices;
    /* The gateways of the workload's profile= mounts (gcluster/manifest.h): PersistentVolume and
     * PersistentVolumeClaim pairs, created before the job; an empty array when there are none. */
    json_t *gateways;
    /* --gke-custom-templates-path: the overlays read from it, an object from file name
     * (GC_TEMPLATE_*) to the merge patch in it; NULL without the flag. */
    json_t *overlays;
} gc_submit_plan;

/* Every check that needs no cluster, then the plan (free it with gc_submit_plan_free, also after
 * a failure). Returns GC_EXIT_USAGE with one clear message on bad input. Offline, a compute type
 * whose slice shape only the cluster's nodes can tell is an error; otherwise it is left pending
 * for submit_refine. */
int gc_submit_prepare(const gc_submit_request *r, gc_submit_plan *plan, gc_error *err);
void gc_submit_plan_free(gc_submit_plan *plan);

/* The YAML a dry run writes: a comment saying which values were defaulted rather than
 * discovered, then the gateways of profile= mounts and the JobSet, one document each.
 * Byte-for-byte stable for a given request. */
int gc_submit_render_offline(const gc_submit_plan *plan, gc_buf *out, gc_error *err);

/*
 * Overlays (job submit --gke-custom-templates-path DIR, job gke-template-extract): each file of
 * DIR is a YAML mapping merged onto every object of its kind that submit generates, as a JSON
 * merge patch (RFC 7386), before the checks and dry runs that every object goes through.
 */
#define GC_TEMPLATE_JOBSET          "jobset.yaml"
#define GC_TEMPLATE_PATHWAYS_JOBSET "pathways_jobset.yaml"
#define GC_TEMPLATE_INDEXED_JOB     "indexed_job.yaml"
#define GC_TEMPLATE_INDEXED_SERVICE "indexed_job_service.yaml"

typedef struct gc_template_kind {
    const char *file; /* GC_TEMPLATE_* */
    const char *what; /* "the JobSet of a job without Pathways" */
} gc_template_kind;

/* Every file an overlay directory may hold, ended by a {NULL, NULL} entry. */
extern const gc_template_kind gc_template_kinds[];

/* Reads the overlays of DIR into plan->overlays. GC_EXIT_USAGE naming the file (and line and
 * column) for a file that is not one of gc_template_kinds, YAML that does not parse, a file that
 * is not one mapping, and an overlay that sets what gcluster owns (apiVersion, kind, status,
 * metadata.name, .namespace, .generateName, the Kueue queue and workload labels), naming the
 * field. A file of comments only changes nothing. */
int gc_submit_overlays_load(gc_submit_plan *plan, const char *dir, gc_error *err);

/* The JobSet of the plan's workload with its overlay merged on: what every submit path emits,
 * checks and creates (caller owns *jobset). */
int gc_submit_plan_jobset(const gc_submit_plan *plan, json_t **jobset, gc_error *err);

/* job gke-template-extract: writes one file per gc_template_kinds entry into `dir` (made when
 * missing, its parent must exist): the object gcluster generates for an example job, as a
 * commented reference, then an overlay that changes nothing, to be edited. Existing files are
 * refused (nothing written) unless `overwrite`. The paths written are pushed to `written`. */
int gc_submit_templates_extract(const char *dir, bool overwrite, gc_strings *written,
                                gc_error *err);

/* A command the user may run next, with a short note on what it is for (or NULL). */
typedef struct gc_next_step {
    char *command;
    char *note;
} gc_next_step;

/* What a live submit did. Strings are owned by the result. */
typedef struct gc_submit_result {
    char *name;
    char *ns;
    char *queue;   /* the LocalQueue it was queued on */
    char *compute; /* the compute type's canonical name: "v6e-16" */
    int num_slices;
    gc_pathways_mode pathways;
    char *head_pool; /* Pathways: the node pool of the head pod; else NULL */
    char *image;     /* the user's image (built and pushed with --base-image); NULL headless */
    bool dry_run;    /* --dry-run=server: the cluster accepted it and stored nothing */
    /* Why the TPU workers request only google.com/tpu (the ClusterQueue keeps cpu and memory in
     * a resource group of their own), also reported as a notice; NULL when they request
     * google.com/tpu, cpu and memory. */
    char *tpu_requests_note;
    gc_strings warnings; /* what the checks found, also reported on the events as they came */
    gc_next_step *next;  /* what to run next (none after a dry run) */
    size_t next_count;
    /* The cluster lacks JobSet or Kueue (found in the first round trip; never with
     * --skip-prereqs, nor JobSet for a job run without it): gc_submit_live stopped before
     * creating or checking anything else and returned 0 with only these set; the caller
     * installs them (deploy's gc_prereq_install) and submits again. */
    bool jobset_missing;
    bool kueue_missing;
    bool awaited;        /* gc_submit_await ran: `final` says how the job ended */
    gc_job_status final; /* the last state seen (all zero when the job was never seen) */
} gc_submit_result;

/* `job submit` against a cluster, for a plan that is not offline. One round trip gathers the
 * cluster's facts (LocalQueues, ClusterQueues, node labels, the PriorityClass and whether
 * JobSet's API is served: a cluster without JobSet or Kueue stops the submit there, with
 * result->jobset_missing / kueue_missing set and 0 returned); the plan is
 * refined by them and checked: errors (GC_EXIT_USAGE, nothing created) for what could never run
 * (no such queue or PriorityClass, no head pool), warnings on `ev` for what may wait or needs a
 * fix (capacity, quota). With --base-image the image is pushed; then the JobSet is POSTed once
 * with fieldValidation=Strict (and dryRun=All for a server dry run). `result` holds what was
 * done; free it with gc_submit_result_free in every case. */
int gc_submit_live(gc_kube *kube, gc_submit_plan *plan, const gc_events *ev,
                   gc_submit_result *result, gc_error *err);

/* After gc_submit_live created the job, when plan->await_completion: watches it (progress on
 * `ev`) until it finishes (0), fails (GC_EXIT_JOB_FAILED) or plan->timeout_seconds pass
 * (GC_EXIT_RUNTIME); result->final says how it ended. */
int gc_submit_await(gc_kube *kube, const gc_submit_plan *plan, const gc_events *ev,
                    gc_submit_result *result, gc_error *err);

void gc_submit_result_free(gc_submit_result *result);

#endif
