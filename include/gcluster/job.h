/*
 * job: what every job command knows of a job (its state from its JobSet, Workload and pods,
 * finding it by name, its roles) and the commands that follow a job: list of names, logs,
 * cancel, wait. Submit (gcluster/submit.h), the diagnosis with why, inspect and list
 * (gcluster/diagnose.h) and connect (gcluster/connect.h) build on it.
 */
#ifndef GCLUSTER_JOB_H
#define GCLUSTER_JOB_H

#include "gcluster/buf.h"
#include "gcluster/catalog.h"
#include "gcluster/error.h"
#include "gcluster/events.h"
#include "gcluster/image.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

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
    GC_PATHWAYS_SPS,      /* a Shared Pathways Service: servers for many clients (gcluster/sps.h) */
} gc_pathways_mode;

/* "no", "yes", "headless" or "sps". */
const char *gc_pathways_mode_name(gc_pathways_mode mode);

/* Calls `on_name` with the name of every job (JobSet) in the client's namespace that starts with
 * `prefix`, for shell completion: one list of object metadata only. */
int gc_job_names(gc_kube *kube, const char *prefix, void (*on_name)(void *ctx, const char *name),
                 void *ctx, gc_error *err);

/* A job name the commands accept: a Kubernetes object name (lower-case letters, digits, '-' and
 * '.', at most 253 characters), so that it cannot reach into another API path. GC_EXIT_USAGE
 * otherwise. */
int gc_job_name_check(const char *name, gc_error *err);

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
    /* A Shared Pathways Service with clients attached is cancelled only with force (their
     * proxy Jobs are deleted with it); without, GC_EXIT_USAGE names them. */
    bool force;
} gc_cancel_request;

typedef struct gc_cancel_result {
    char *name;
    char *ns;
    char *uid;           /* of the deleted JobSet */
    bool gone;           /* wait: the JobSet, its Jobs and its pods no longer exist */
    size_t pods_deleted; /* wait: pods seen going away while waiting */
    /* storage-profile gateway claims of the namespace that no job mounts any more, removed with
     * their volumes */
    gc_strings gateways_removed;
} gc_cancel_result;

/* Every check of the flags (name, --timeout only with --wait, a valid duration):
 * GC_EXIT_USAGE, as gc_job_cancel would before sending anything. */
int gc_job_cancel_check(const gc_cancel_request *r, gc_error *err);
/* Deletes the JobSet with propagationPolicy=Foreground; with r->wait, watches until it and its
 * pods are gone, reporting how many pods are left as progress on `ev`. Then removes the
 * namespace's storage-profile gateways that no job mounts any more. */
int gc_job_cancel(gc_kube *kube, const gc_cancel_request *r, const gc_events *ev,
                  gc_cancel_result *out, gc_error *err);
void gc_cancel_result_free(gc_cancel_result *result);

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

/* What every job room (submit, diagnose, connect and job/'s own commands) reads of a job:
 * finding its JobSet, the JobSet's self-description and the pods' roles. */

/* The JobSet path in the client's namespace (name may be NULL for the collection). */
char *gc_job_jobset_path(gc_kube *kube, const char *name);

/* GETs the JobSet together with up to 4 other reads (one round trip; see gc_kube_read_all).
 * A missing JobSet becomes one clear line that also says in which other namespace a job of that
 * name exists, if any; otherwise it fails with the first failing read's error. Each read's own
 * outcome is in others[i].rc and .err. */
int gc_job_find_jobset_with(gc_kube *kube, const char *name, json_t **jobset, gc_kube_read *others,
                            size_t count, gc_error *err);
int gc_job_not_found(gc_kube *kube, const char *name, gc_error *err);

const json_t *gc_job_replicated_job(const json_t *jobset, const char *name);

/* From our annotation, else from the JobSet's shape. */
gc_pathways_mode gc_job_pathways_mode(const json_t *jobset);
/* "v6e-16 x2" (from our annotations, else from the worker node selectors); false when the
 * JobSet names no accelerator. */
bool gc_job_compute(const json_t *jobset, char *out, size_t size);

/* A JobSet-less job (job submit without the JobSet API, or GCLUSTER_DISABLE_JOBSET=1) is a
 * batch/v1 Indexed Job labelled with its workload, and a headless Service. Every job command
 * reads it through its JobSet view (job/indexed_view.c): one replicated job GC_MAIN_JOB of one
 * replica whose Job spec is the Job's, the Job's conditions as the JobSet's, its ready pods
 * counted, and the marker annotation GC_ANNOTATION_INDEXED_JOB. */
/* The view of `job` (new reference), or NULL when it is not a JobSet-less job's Job. */
json_t *gc_job_indexed_view(const json_t *job);
/* Whether a JobSet is such a view; and the Job it was made from (borrowed). */
bool gc_job_is_indexed(const json_t *jobset);
const json_t *gc_job_indexed_source(const json_t *jobset);
/* A pod's slice (label jobset.sigs.k8s.io/job-index; 0 for a JobSet-less job's pod, -1 when
 * unknown). */
long gc_job_pod_slice(const json_t *pod);

/* A copy of `s`, or NULL for NULL or "". */
char *gc_job_strdup_or_null(const char *s);

/* The JobSet a Workload or pod belongs to (owner or label), else the object's own name. */
const char *gc_job_owner_name(const json_t *object);
/* A pod's replicated job (label jobset.sigs.k8s.io/replicatedjob-name; GC_MAIN_JOB for a
 * JobSet-less job's pod). */
const char *gc_job_pod_role(const json_t *pod);
/* The JobSet's restarts so far and its failurePolicy.maxRestarts. */
long gc_job_restarts(const json_t *jobset);
long gc_job_max_restarts(const json_t *jobset);
/* "5m" for the time since `timestamp` (RFC 3339) at `now`; "" when either is unknown. */
void gc_job_age(const char *timestamp, long long now, char *out, size_t size);

/* The job's roles in words: "the head", "the workers" (Pathways), else the replicated job. */
const char *gc_job_role_words(const char *replicated_job);
/* The verb ending that agrees with those words: "" after "the workers", "s" otherwise. */
const char *gc_job_role_s(const char *replicated_job);

/* Watches JobSet `name` until it finishes, disappears or `timeout_seconds` (job_list_watch's
 * meaning) pass. Each change of state (queued → admitted → running n/m → finished) is reported
 * as progress on `ev` ("NAME: Running 3/9"), ended by GC_EVENT_PROGRESS_END. `final` receives the
 * last status seen (all zero when the job was never seen). Returns 0 when the job succeeded,
 * GC_EXIT_JOB_FAILED when it failed (the message names the failing pod, container and exit code),
 * GC_EXIT_RUNTIME when it was deleted first or the time ran out (err->reason "Timeout"). */
int gc_job_watch_to_end(gc_kube *kube, const char *name, long timeout_seconds, const gc_events *ev,
                        gc_job_status *final, gc_error *err);

#endif
