/*
 * job: the workload commands, joining the catalog, the manifest builders and the kube client.
 *
 * A submit is a pipeline of types. The flags fill a gc_submit_request (what the user typed);
 * gc_submit_prepare() validates it completely without a cluster and resolves it, every value
 * parsed once, into a gc_submit_plan (the workload, what to do with it, how long to wait).
 * Nothing is sent to a cluster before that succeeds. gc_submit_live() then refines the plan
 * once by the cluster's facts (its LocalQueues, node pools and TPU nodes), creates the JobSet
 * and returns a gc_submit_result; gc_submit_await() follows the job to its end.
 */
#ifndef GCLUSTER_JOB_H
#define GCLUSTER_JOB_H

#include "gcluster/buf.h"
#include "gcluster/catalog.h"
#include "gcluster/error.h"
#include "gcluster/events.h"
#include "gcluster/image.h"
#include "gcluster/manifest.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define GC_REQUEST_LIST_MAX 64

/* `job submit` flags, as typed (Google's gcluster names and short forms). */
typedef struct gc_submit_request {
    const char *name;
    const char *image;
    const char *base_image;
    const char *build_context;
    const char *platform;
    const char *project; /* --project and --location name the registry a build pushes to */
    const char *location;
    const char *command;
    const char *compute_type;
    const char *topology;
    const char *dry_run_out; /* file or "-" */
    const char *dry_run;     /* "server" or "client" */
    const char *mounts[GC_REQUEST_LIST_MAX];
    size_t mount_count;
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
     * --topology): workload.compute is unset until gc_submit_refine. */
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
} gc_submit_plan;

/* Every check that needs no cluster, then the plan (free it with gc_submit_plan_free, also after
 * a failure). Returns GC_EXIT_USAGE with one clear message on bad input. Offline, a compute type
 * whose slice shape only the cluster's nodes can tell is an error; otherwise it is left pending
 * for gc_submit_refine. */
int gc_submit_prepare(const gc_submit_request *r, gc_submit_plan *plan, gc_error *err);
void gc_submit_plan_free(gc_submit_plan *plan);

/* Resolves the compute type once more, against the cluster's TPU and GPU nodes, when the offline
 * answer was pending or assumed a TPU host type; when that changes the answer, everything that
 * follows from it (hosts per slice, the Pathways instance type, the checks that depend on it) is
 * derived again. Otherwise the plan stays as it is. */
int gc_submit_refine(gc_submit_plan *plan, const gc_cluster_shapes *cluster, gc_error *err);

/* Parses "90s", "5m", "1h", "1h30m", "2h0m5s" or plain seconds ("3600"). */
int gc_parse_duration(const char *flag, const char *text, long *seconds, gc_error *err);

/* DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a
 * letter or digit. */
bool gc_is_dns1035_label(const char *s);
/* DNS-1123 label, what namespaces and container names are: the same, but may start with a
 * digit. */
bool gc_is_dns1123_label(const char *s);

/* The YAML a dry run writes: a comment saying which values were defaulted rather than
 * discovered, then the JobSet. Byte-for-byte stable for a given request. */
int gc_submit_render_offline(const gc_submit_plan *plan, gc_buf *out, gc_error *err);

typedef struct gc_kube gc_kube;

/* One job's state, derived from its JobSet, its Kueue Workload and its pods. */
typedef enum gc_job_phase {
    GC_JOB_QUEUED,     /* waiting for Kueue to admit it (reason says why) */
    GC_JOB_ADMITTED,   /* admitted, pods not running yet */
    GC_JOB_RUNNING,    /* pods running (n of m) */
    GC_JOB_RESTARTING, /* the JobSet is being recreated after a failure */
    GC_JOB_SUCCEEDED,
    GC_JOB_FAILED,      /* with the failing pod and exit code when known */
    GC_JOB_SUSPENDED,   /* suspended outside Kueue */
    GC_JOB_TERMINATING, /* being deleted */
} gc_job_phase;

/* The facts a status is derived from, gathered from up to three objects. */
typedef struct gc_job_facts {
    bool deleting;
    bool completed;
    bool failed;
    char failed_reason[64];
    char failed_message[512];
    bool suspended;
    bool restarting;
    long restarts;
    bool queued_by_kueue; /* has a kueue.x-k8s.io/queue-name label */
    char completed_at[32];

    bool workload_found;
    bool quota_reserved;
    bool admitted;
    bool evicted;
    char workload_reason[64];
    char workload_message[512];

    int pods_expected; /* from the spec: replicas x parallelism */
    int pods_seen;
    int pods_running;
    int pods_succeeded;
    int pods_failed;
    char failed_pod[128];
    char failed_container[64];
    int failed_exit_code;
} gc_job_facts;

typedef struct gc_job_status {
    gc_job_phase phase;
    char text[64];    /* for tables: "Running 9/9", "Queued", "Failed" */
    char detail[768]; /* the reason: Kueue's message, the failing pod and its exit code */
} gc_job_status;

void gc_job_facts_from_jobset(const json_t *jobset, gc_job_facts *facts);
void gc_job_facts_add_workload(gc_job_facts *facts, const json_t *workload);
void gc_job_facts_add_pod(gc_job_facts *facts, const json_t *pod);
/* Instead of the pods, when they are not read: the pods of the JobSet's ready Jobs count as
 * running (a Job is ready when all its pods are). */
void gc_job_facts_add_ready_jobs(gc_job_facts *facts, const json_t *jobset);
void gc_job_status_derive(const gc_job_facts *facts, gc_job_status *status);
const char *gc_job_phase_name(gc_job_phase phase);
/* Parses a --status filter (case-insensitive; Google's Pending means queued or admitted). */
bool gc_job_phase_matches(const char *filter, gc_job_phase phase, bool *valid);

/* Whether a JobSet is a Pathways job, and which kind. */
typedef enum gc_pathways_mode {
    GC_PATHWAYS_NONE,     /* an ordinary JobSet */
    GC_PATHWAYS_FULL,     /* the user's program runs in the head pod */
    GC_PATHWAYS_HEADLESS, /* only the Pathways servers, for a client outside the cluster */
} gc_pathways_mode;

/* "no", "yes" or "headless". */
const char *gc_pathways_mode_name(gc_pathways_mode mode);

/* `job list`: jobs with their state, filtered as the user asked. */
typedef struct gc_list_request {
    const char *status;        /* --status filter, or NULL */
    const char *name_contains; /* --name-contains, or NULL */
    bool all_namespaces;       /* -A */
    /* Also read the Kueue Workloads (one more list, only when a job is queued) so that a queued
     * row's detail says why it waits, and give every row the diagnosis' reason. */
    bool queue_reasons;
} gc_list_request;

/* One job of a list. Strings are owned by the row; NULL means "not known" or "not set". */
typedef struct gc_job_row {
    char *ns;
    char *name;
    char *uid;
    gc_job_phase phase;
    char *status;  /* "Running 9/9", "Queued", "Failed" */
    char *detail;  /* why: Kueue's reason (with queue_reasons), the failing pod; or NULL */
    char *reason;  /* with queue_reasons: the diagnosis' short reason ("Running", "QuotaShort")
                      from the JobSet and, for a queued job, its Workload; else NULL */
    char *compute; /* "v6e-16 x2"; NULL when the JobSet does not say */
    gc_pathways_mode pathways;
    char *queue;     /* the LocalQueue; NULL when the job is not queued through Kueue */
    char *created;   /* RFC 3339 */
    char *completed; /* RFC 3339, or NULL while the job has not finished */
} gc_job_row;

typedef struct gc_job_list_result {
    gc_job_row *rows; /* in the API server's order (by namespace, then name) */
    size_t count;
} gc_job_list_result;

/* A --status that names no state is GC_EXIT_USAGE. gc_job_list checks too; call it to refuse
 * bad flags before opening a cluster. */
int gc_job_list_check(const gc_list_request *r, gc_error *err);
/* The most rows a list holds: about 0.5 GB of memory. A cluster has far fewer JobSets; a server
 * that sends more (or never ends its list) gets an error that says how to narrow the list. */
#define GC_JOB_LIST_MAX_ROWS 1000000

/* Lists the JobSets of the client's namespace (or every namespace) as rows. A list whose answer
 * breaks midway is read again from the start (nothing has been shown yet). */
int gc_job_list(gc_kube *kube, const gc_list_request *r, gc_job_list_result *out, gc_error *err);
void gc_job_list_result_free(gc_job_list_result *result);

/* Calls `on_name` with the name of every job (JobSet) in the client's namespace that starts with
 * `prefix`, for shell completion: one list of object metadata only. */
int gc_job_names(gc_kube *kube, const char *prefix, void (*on_name)(void *ctx, const char *name),
                 void *ctx, gc_error *err);

/* A job's diagnosis: why it is not running or why it ended (gcluster/diagnose.h). */
typedef struct gc_diagnosis gc_diagnosis;

/* `job why`: reads what the diagnosis needs, in as few round trips as it needs: the JobSet, its
 * pods, child Jobs and Warning events together, then its Workload (what `job inspect` reads,
 * and all a healthy running job costs), then only the reads the engine asks for (the queues and
 * the nodes together, the failed container's log). Reads the cluster refuses to this user leave
 * the diagnosis with what was known and say so in its evidence. A missing job is
 * GC_EXIT_RUNTIME with err->http_status 404; a bad name GC_EXIT_USAGE with nothing sent. */
int gc_job_why(gc_kube *kube, const char *name, gc_diagnosis *out, gc_error *err);

/* `job inspect`: everything about one job. */

/* How Kueue placed one pod set: resource -> ResourceFlavor. */
typedef struct gc_flavor_assignment {
    char *resource;
    char *flavor;
} gc_flavor_assignment;

typedef struct gc_pod_set_admission {
    char *name;
    gc_flavor_assignment *flavors;
    size_t flavor_count;
} gc_pod_set_admission;

/* The job's Kueue Workload. */
typedef struct gc_kueue_state {
    char *workload; /* its name; NULL when Kueue has no Workload for the job */
    bool admitted;
    char *cluster_queue; /* admitted: the ClusterQueue that admitted it */
    gc_pod_set_admission *pod_sets;
    size_t pod_set_count;
    char *reason;  /* not admitted: Kueue's reason ("Pending"), or NULL */
    char *message; /* not admitted: Kueue's message (quota, flavors), or NULL */
} gc_kueue_state;

/* A replicated job of the JobSet: its replica count and the JobSet controller's counts of its
 * Jobs. */
typedef struct gc_replicated_job_counts {
    char *name;
    long replicas;
    long ready;
    long active;
    long succeeded;
    long failed;
} gc_replicated_job_counts;

typedef struct gc_job_pod {
    char *name;
    char *role;    /* the replicated job: "pathways-head", "worker" */
    long slice;    /* the Job index within the replicated job, or -1 */
    long host;     /* the completion index within the Job, or -1 */
    char *phase;   /* Pending, Running, Succeeded, Failed, Unknown; NULL before the first status */
    long restarts; /* of all its containers */
    char *node;    /* NULL while unscheduled */
    /* Why it is not simply running or done: Terminating, the pod's own reason (Evicted), a
     * container's waiting reason (CrashLoopBackOff, ImagePullBackOff) or failed exit (Error,
     * OOMKilled), or why it is not scheduled (Unschedulable, SchedulingGated); else NULL. */
    char *reason;
} gc_job_pod;

/* One replicated job slice by slice (a slice is one of its Jobs: a TPU slice for the workers),
 * so that a job of a thousand pods reads in a few lines. Every slice is in exactly one of the
 * four groups. */
typedef struct gc_slice_counts {
    char *role;        /* the replicated job */
    long slices;       /* its replicas */
    long hosts;        /* pods per slice (its Jobs' parallelism) */
    long running;      /* slices where every host has a Running pod with no reason */
    long succeeded;    /* slices where every host's pod Succeeded */
    long without_pods; /* slices with no pod at all (not admitted yet, or being recreated) */
    long *problems;    /* the other slices' indexes, ascending */
    size_t problem_count;
} gc_slice_counts;

/* Warning events of one object and reason, grouped (controllers repeat them). */
typedef struct gc_job_warning {
    char *kind;   /* of the object: Pod, Job, JobSet, Workload */
    char *object; /* its name */
    char *reason;
    long count;      /* how often, over every event of the group */
    char *last_seen; /* RFC 3339 of the latest, or NULL */
    char *message;   /* the latest event's message */
} gc_job_warning;

/* The most recent groups of Warning events an inspect report keeps. */
#define GC_INSPECT_MAX_WARNINGS 10

typedef struct gc_inspect_report {
    char *name;
    char *ns;
    gc_job_status status;
    char *compute;  /* "v6e-16 x2"; NULL when the JobSet does not say */
    char *topology; /* from our annotation, or NULL */
    gc_pathways_mode pathways;
    char *queue;    /* the LocalQueue; NULL when not queued through Kueue */
    char *created;  /* RFC 3339 */
    char *finished; /* RFC 3339, or NULL while the job has not finished */
    long restarts;
    long max_restarts;
    gc_kueue_state kueue;
    gc_replicated_job_counts *replicated_jobs; /* in the order of the spec */
    size_t replicated_job_count;
    gc_slice_counts *slices; /* per replicated job, in the order of the spec */
    size_t slice_count;
    gc_job_pod *pods; /* every pod: the head first, then by role, slice and host */
    size_t pod_count;
    gc_job_warning *warnings; /* oldest first, at most GC_INSPECT_MAX_WARNINGS */
    size_t warning_count;
    /* Groups of warnings left out because a later success superseded them (a Job's failed pod
     * creations once it has all its pods, a pod's failed scheduling once it is bound, a
     * Workload's Pending once it is admitted). */
    size_t resolved_warning_count;
    json_t *manifest;        /* with `show`: the stored JobSet without managedFields and status */
    gc_diagnosis *diagnosis; /* as `job why` says it */
} gc_inspect_report;

/* A job name the commands accept: a Kubernetes object name (lower-case letters, digits, '-' and
 * '.', at most 253 characters), so that it cannot reach into another API path. GC_EXIT_USAGE
 * otherwise. */
int gc_job_name_check(const char *name, gc_error *err);

/* Reads the JobSet, its pods, its child Jobs and its Warning events (one round trip), then its
 * Kueue Workload, and reports them with the job's diagnosis (which may read more, as gc_job_why
 * does: a healthy running job costs the two round trips and no more). A missing job is
 * GC_EXIT_RUNTIME with err->http_status 404, and the message says in which other namespace a job of
 * that name exists. */
int gc_job_inspect(gc_kube *kube, const char *name, bool show, gc_inspect_report *report,
                   gc_error *err);
void gc_inspect_report_free(gc_inspect_report *report);

/* `job logs`. */
typedef struct gc_logs_request {
    const char *name;
    const char *role;      /* "head" or "worker"; NULL: the head (or slice 0 host 0) */
    long slice;            /* worker Job index, -1 for any */
    long host;             /* pod index within the slice, -1 for any */
    const char *container; /* NULL: the user's container (headless: the proxy) */
    bool all;              /* every pod and container */
    /* Google's --main-only: the first pod (slice 0, host 0) of every replicated job, every
     * container of it; goes with none of role, slice, host, container and all. */
    bool main_only;
    bool follow;
    long tail;         /* lines, -1 for all */
    const char *since; /* duration, or NULL */
    bool timestamps;
} gc_logs_request;

/* One line of a container's log, without its newline. Borrowed for the call only. */
typedef struct gc_log_line {
    const char *pod;
    const char *container;
    const char *text; /* not NUL-terminated */
    size_t len;
} gc_log_line;

/* Where gc_job_logs delivers lines. */
typedef struct gc_log_sink {
    int (*line)(void *ctx, const gc_log_line *line); /* non-zero ends every stream */
    /* While following, about once a second, and when the streams end: a moment to flush what
     * was written. May be NULL. */
    void (*flush)(void *ctx);
    void *ctx;
} gc_log_sink;

/* Every check of the flags (name, --role, --all with --container, --tail, --since):
 * GC_EXIT_USAGE, as gc_job_logs would before sending anything. */
int gc_job_logs_check(const gc_logs_request *r, gc_error *err);
/* Picks the pods and containers the request names and streams their logs at once. With
 * `follow`, waits for a job that has not started (saying why on `ev`) and ends shortly after
 * every followed pod has. Bad flags are GC_EXIT_USAGE before anything is sent. */
int gc_job_logs(gc_kube *kube, const gc_logs_request *r, const gc_log_sink *sink,
                const gc_events *ev, gc_error *err);

/* `job cancel`. */
typedef struct gc_cancel_request {
    const char *name;
    bool wait;           /* until the JobSet, its Jobs and its pods are gone */
    const char *timeout; /* with wait: a duration, or NULL for no limit */
} gc_cancel_request;

typedef struct gc_cancel_result {
    char *name;
    char *ns;
    char *uid;           /* of the deleted JobSet */
    bool gone;           /* wait: the JobSet, its Jobs and its pods no longer exist */
    size_t pods_deleted; /* wait: pods seen going away while waiting */
} gc_cancel_result;

/* Every check of the flags (name, --timeout only with --wait, a valid duration):
 * GC_EXIT_USAGE, as gc_job_cancel would before sending anything. */
int gc_job_cancel_check(const gc_cancel_request *r, gc_error *err);
/* Deletes the JobSet with propagationPolicy=Foreground; with r->wait, watches until it and its
 * pods are gone, reporting how many pods are left as progress on `ev`. */
int gc_job_cancel(gc_kube *kube, const gc_cancel_request *r, const gc_events *ev,
                  gc_cancel_result *out, gc_error *err);
void gc_cancel_result_free(gc_cancel_result *result);

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
    bool awaited;        /* gc_submit_await ran: `final` says how the job ended */
    gc_job_status final; /* the last state seen (all zero when the job was never seen) */
} gc_submit_result;

/* `job submit` against a cluster, for a plan that is not offline. One round trip gathers the
 * cluster's facts (LocalQueues, ClusterQueues, node labels and the PriorityClass); the plan is
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

/* `job wait`: several jobs followed at once until each reaches a state. */
typedef enum gc_wait_for {
    GC_WAIT_FOR_SUCCEEDED, /* every job succeeded; ends at the first one that cannot */
    GC_WAIT_FOR_FINISHED,  /* every job ended, successfully or not */
    GC_WAIT_FOR_RUNNING,   /* every pod of every job running (a job that succeeded has run) */
    GC_WAIT_FOR_ADMITTED,  /* every job admitted by Kueue (or never queued through it) */
} gc_wait_for;

typedef struct gc_wait_request {
    const char *const *names;
    size_t count;
    const char *state;   /* "succeeded" (NULL), "finished", "running" or "admitted" */
    const char *timeout; /* a duration, or NULL for no limit */
} gc_wait_request;

typedef enum gc_wait_outcome {
    GC_WAIT_PENDING,   /* not there (yet): the time ran out, or another job ended the wait */
    GC_WAIT_REACHED,   /* in the state asked for */
    GC_WAIT_FAILED,    /* the job failed (with --for finished: it ended, but failed) */
    GC_WAIT_CANCELLED, /* deleted while waited on */
} gc_wait_outcome;

typedef struct gc_wait_job {
    char *name;
    gc_wait_outcome outcome;
    gc_job_status status; /* the last one seen */
} gc_wait_job;

typedef struct gc_wait_result {
    char *ns;
    gc_wait_for state;
    gc_wait_job *jobs; /* in the order of the request */
    size_t count;
    bool timed_out;
} gc_wait_result;

/* The states by name, in gc_wait_for's order, NULL-terminated: "succeeded", "finished",
 * "running", "admitted". */
extern const char *const gc_wait_states[];
/* A state's name; and an outcome's: "pending", "reached", "failed", "cancelled". */
const char *gc_wait_for_name(gc_wait_for state);
const char *gc_wait_outcome_name(gc_wait_outcome outcome);

/* Every check of the request (names, state, duration): GC_EXIT_USAGE before anything is sent. */
int gc_job_wait_check(const gc_wait_request *r, gc_error *err);
/* Watches the jobs' JobSets (one watch for all of them) until every job is in the state, and
 * reports each job's status as one progress line per job (lines separated by '\n'). Returns 0
 * when all got there; GC_EXIT_JOB_FAILED when a job failed or was cancelled, since it can then
 * never get there (the message names it and says why); GC_EXIT_RUNTIME when the time ran out
 * (err->reason "Timeout"), a job does not exist, or the API failed. `out` holds every job's
 * outcome whatever is returned, except for GC_EXIT_USAGE (then it is empty). */
int gc_job_wait(gc_kube *kube, const gc_wait_request *r, const gc_events *ev, gc_wait_result *out,
                gc_error *err);
void gc_wait_result_free(gc_wait_result *result);

/* A duration as kubectl shows ages: "45s", "12m", "3h", "5d" (whole hours under two days as
 * hours: "1h", not "60m"). */
void gc_format_duration(long long seconds, char *out, size_t size);
/* The age at `now` (seconds since the epoch) of an RFC 3339 time stamp, as gc_format_duration
 * writes it; "?" and false when the time stamp is unparsable or `now` is 0. */
bool gc_format_age(const char *timestamp, long long now, char *out, size_t size);
/* Seconds since the epoch of an RFC 3339 time stamp, or -1. */
long long gc_parse_timestamp(const char *timestamp);

/* Stored defaults for --cluster, --location and --project (~/.gcluster/context.json, the file
 * and keys Google's gcluster uses). */
typedef struct gc_stored_context {
    char *project;
    char *cluster;
    char *location;
} gc_stored_context;

/* The path of the context file ($HOME/.gcluster/context.json). Caller frees. */
char *gc_context_path(void);
/* Loads the stored defaults; a missing file gives empty values. */
int gc_context_load(gc_stored_context *ctx, gc_error *err);
/* Sets one key (project, cluster or location; case-insensitive) and saves the file. */
int gc_context_set(const char *key, const char *value, gc_error *err);
void gc_context_free(gc_stored_context *ctx);

#endif
