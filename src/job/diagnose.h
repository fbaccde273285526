/*
 * The parts of the diagnosis engine (gcluster/diagnose.h) shared by its files. Internal to job/.
 *
 * diagnose.c picks the state and hands the job to the reader that knows it: diagnose_kueue.c
 * for a job Kueue has not admitted (queues, quota, the line of jobs ahead, preemption),
 * diagnose_pods.c for one whose pods should run (scheduling, images, running),
 * diagnose_failed.c for one that failed or whose hosts stopped it.
 */
#ifndef GCLUSTER_JOB_DIAGNOSE_H
#define GCLUSTER_JOB_DIAGNOSE_H

#include "gcluster/diagnose.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Writing the answer. Each line is cut to GC_DIAGNOSIS_LINE; evidence past the last slot is
 * dropped (the first lines are the ones that decided). */
void job_diag_set(gc_diagnosis *d, gc_job_phase state, const char *reason);
void job_diag_cause(gc_diagnosis *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void job_diag_fix(gc_diagnosis *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void job_diag_evidence(gc_diagnosis *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Reading objects. */
bool job_same(const char *a, const char *b); /* both set and equal */
const json_t *job_condition(const json_t *object, const char *type);
bool job_condition_true(const json_t *object, const char *type);
const char *job_field(const json_t *object, const char *section, const char *key);
const char *job_string(const json_t *object, const char *key);
/* The same, or `fallback` when the key is missing or not a string. */
const char *job_string_or(const json_t *object, const char *key, const char *fallback);
/* The JobSet a Workload or pod belongs to (owner or label), else the object's own name. */
const char *job_owner_name(const json_t *object);
/* "5m" for the time since `timestamp` (RFC 3339) at `now`; "" when either is unknown. */
void job_age(const char *timestamp, long long now, char *out, size_t size);

/* Kubernetes quantities ("16", "132Gi", "500m", "1.5e3") as numbers; -1 if not one. */
double job_quantity(const json_t *value);
/* A number back in the style of `like` ("2880Gi" style for memory, plain for counts). */
void job_format_quantity(double value, const char *resource, char *out, size_t size);

/* Kueue's view of a pod: its requests after the API server's defaulting (a limit stands in for
 * a missing request), containers and native sidecars together, an ordinary init container
 * counted only where it alone (beside the sidecars) asks for more. A new object: resource ->
 * amount. Submit's admission check and the why engine both count with it. */
json_t *job_pod_requests(const json_t *pod_spec);
/* Whether a ClusterQueue resource group covers `resource`. */
bool job_group_covers(const json_t *group, const char *resource);

/* A pod's replicated job (label jobset.sigs.k8s.io/replicatedjob-name). */
const char *job_pod_role(const json_t *pod);
/* The JobSet's restarts so far and its failurePolicy.maxRestarts. */
long job_restarts(const json_t *jobset);
long job_max_restarts(const json_t *jobset);

/* One container's state, as found by job_each_container. */
typedef struct container_state {
    const json_t *pod;
    const json_t *status; /* the container's status */
    const char *name;
    const char *reason; /* waiting or terminated reason */
    const char *message;
    int exit_code;
} container_state;

/* A container status's termination: the current one, else the last one (it restarted). */
const json_t *job_last_termination(const json_t *cs);
/* The first container (init containers first) for which `match` is true. */
bool job_each_container(const json_t *pod, bool (*match)(const json_t *cs, void *ctx), void *ctx,
                        container_state *out);
/* The `gcluster job logs` flags that pick this pod and container (" --role worker ..."). */
void job_logs_flags(const json_t *pod, const char *container, char *out, size_t size);

/* The job's roles in words: "the head", "the workers" (Pathways), else the replicated job. */
const char *job_role_words(const char *replicated_job);
/* The verb ending that agrees with those words: "" after "the workers", "s" otherwise. */
const char *job_role_s(const char *replicated_job);

/* Queued by Kueue and not admitted: fills the diagnosis. */
void job_diagnose_queued(const gc_diagnose_input *in, gc_diagnosis *d);
/* Evicted or preempted by Kueue: true (and the diagnosis filled) when it was. */
bool job_diagnose_evicted(const gc_diagnose_input *in, gc_diagnosis *d);

/* Admitted: a pod that cannot be placed, pulled or started. True when one was found. */
bool job_diagnose_pod_problem(const gc_diagnose_input *in, gc_diagnosis *d);
/* Failed: which replicated job, pod, container and exit code, and why the JobSet gave up. */
void job_diagnose_failed(const gc_diagnose_input *in, gc_diagnosis *d);
/* A pod the node stopped (maintenance, shutdown, DisruptionTarget, exit 143): true if found. */
bool job_diagnose_disrupted(const gc_diagnose_input *in, gc_diagnosis *d);
/* Running or restarting normally: n/m pods, restarts so far. */
void job_diagnose_running(const gc_diagnose_input *in, gc_diagnosis *d);

#endif
