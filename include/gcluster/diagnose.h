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
 * and calls gc_diagnose again with them. A healthy running job wants nothing more.
 */
#ifndef GCLUSTER_DIAGNOSE_H
#define GCLUSTER_DIAGNOSE_H

#include "gcluster/job.h"

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

/* Diagnoses one job; never fails (an input of the wrong shape counts as missing). */
void gc_diagnose(const gc_diagnose_input *in, gc_diagnosis *out);

/* The `-o json` shape: {"state", "reason", "cause", "fix", "evidence": [...]}. */
json_t *gc_diagnosis_json(const gc_diagnosis *d);

#endif
