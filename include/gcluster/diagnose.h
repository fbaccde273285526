/*
 * diagnose: why a job is not running, or why it ended, in two lines.
 *
 * A pure function over the objects the API server already returns (as jansson values): it
 * sends nothing, prints nothing and keeps no state. It answers with a state, a short machine
 * reason, one line of cause with the numbers, one line of fix naming the command or flag to
 * use, and the evidence lines (which object and field said so).
 *
 * Every input but the JobSet may be missing, and the engine says what it can. What it could
 * not tell for lack of an input it asks for in `wants`, so a caller reads cheaply in stages:
 *   1. what `job inspect` reads anyway: the JobSet, its pods, the Warning events (one round
 *      trip), then its Workload;
 *   2. only when `wants` asks: a failed job's child Jobs (GC_DIAGNOSE_WANT_JOBS: which Job
 *      failed and why, when its pods may be gone), the queues (GC_DIAGNOSE_WANT_QUEUES:
 *      LocalQueues, ClusterQueues, ResourceFlavors and Workloads, four lists in one round trip),
 *      the nodes (GC_DIAGNOSE_WANT_NODES: Nodes and the other jobs' pods, one round trip), or
 *      the last lines of `log_pod`/`log_container` (GC_DIAGNOSE_WANT_LOG, asked for once the
 *      Jobs are known, since the failed Job's pods come first);
 * and diagnose/ runs the engine (diagnose_job) again with them. A healthy running job wants
 * nothing more.
 */
#ifndef GCLUSTER_DIAGNOSE_H
#define GCLUSTER_DIAGNOSE_H

#include "gcluster/job.h"
#include "gcluster/sps.h"

#include <jansson.h>
#include <stdbool.h>

/* What the caller gives; every pointer may be NULL. Arrays are JSON arrays of API objects (a
 * list's "items"), trimmed or not. */
typedef struct gc_diagnose_input {
    const json_t *jobset;   /* required */
    const json_t *workload; /* its Kueue Workload (v1beta2 or v1beta1); NULL: none */
    const json_t *pods;     /* the job's pods (label jobset.sigs.k8s.io/jobset-name) */
    const json_t *jobs;     /* its child Jobs (same label): why a Job failed, after its pods went;
                               NULL: not read (GC_DIAGNOSE_WANT_JOBS asks for them) */
    const json_t *events;   /* the Warning events of the job's objects */

    /* GC_DIAGNOSE_WANT_QUEUES. With queues_read, a queue missing from these lists does not
     * exist; without it, the lists are not known and nothing is concluded from an absence. */
    bool queues_read;
    const json_t *local_queues;   /* LocalQueues of every namespace */
    const json_t *cluster_queues; /* every ClusterQueue */
    const json_t *flavors;        /* every ResourceFlavor */
    const json_t *workloads;      /* every Workload (this job's own is skipped) */

    /* GC_DIAGNOSE_WANT_NODES: labels, taints, spec.unschedulable and status.allocatable of
     * every Node are enough; and the other jobs' pods (label jobset.sigs.k8s.io/jobset-name)
     * with their metadata and spec.nodeName, to say who holds a host. */
    const json_t *nodes;
    const json_t *node_pods;

    const char *log_tail; /* GC_DIAGNOSE_WANT_LOG: the last lines of log_pod/log_container */
    long long now;        /* seconds since the epoch, for "5m ago"; 0 leaves ages out */
} gc_diagnose_input;

enum {
    GC_DIAGNOSE_WANT_QUEUES = 1 << 0,
    GC_DIAGNOSE_WANT_NODES = 1 << 1,
    GC_DIAGNOSE_WANT_LOG = 1 << 2,
    GC_DIAGNOSE_WANT_JOBS = 1 << 3,
};

#define GC_DIAGNOSIS_LINE      640
#define GC_DIAGNOSIS_EVIDENCE  16
#define GC_DIAGNOSIS_LOG_LINES 5

typedef struct gc_diagnosis {
    gc_job_phase state;
    char reason[32];               /* QuotaShort, QueueMissing, ...; the list's REASON column */
    char cause[GC_DIAGNOSIS_LINE]; /* one line, with the numbers */
    char fix[GC_DIAGNOSIS_LINE];   /* one line: the command or flag; "" when nothing to do */
    char evidence[GC_DIAGNOSIS_EVIDENCE][GC_DIAGNOSIS_LINE];
    size_t evidence_count;
    int wants;         /* GC_DIAGNOSE_WANT_*: inputs that would say more */
    char log_pod[254]; /* the failed container whose log tells why ("" if none) */
    char log_container[64];
} gc_diagnosis;

/* The `-o json` shape: {"state", "reason", "cause", "fix", "evidence": [...]}. */
json_t *gc_diagnosis_json(const gc_diagnosis *d);

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
    /* A Shared Pathways Service: its clients and the slices they hold (sps_clients -1: not
     * known); its resource manager is NAME-pathways-head-0-0.NAME:29001. */
    int sps_clients;
    int sps_held;
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
    bool indexed_job; /* a JobSet-less job: a batch/v1 Indexed Job and a headless Service */
    char *queue;      /* the LocalQueue; NULL when not queued through Kueue */
    char *created;    /* RFC 3339 */
    char *finished;   /* RFC 3339, or NULL while the job has not finished */
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
    /* A Shared Pathways Service: its resource manager's address, slices and the clients
     * attached (gcluster/sps.h); NULL for other jobs. */
    gc_sps_usage *sps;
} gc_inspect_report;

/* Reads the JobSet, its pods, its child Jobs and its Warning events (one round trip), then its
 * Kueue Workload, and reports them with the job's diagnosis (which may read more, as gc_job_why
 * does: a healthy running job costs the two round trips and no more). A missing job is
 * GC_EXIT_RUNTIME with err->http_status 404, and the message says in which other namespace a job of
 * that name exists. */
int gc_job_inspect(gc_kube *kube, const char *name, bool show, gc_inspect_report *report,
                   gc_error *err);
void gc_inspect_report_free(gc_inspect_report *report);

#endif
