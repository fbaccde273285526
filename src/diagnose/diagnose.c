/*
 * The diagnosis engine's entry: the job's state (the same derivation as `job list`), then the
 * part that knows that state: diagnose_kueue.c for a job Kueue has not admitted (queues, quota,
 * the line of jobs ahead, preemption), diagnose_pods.c for one whose pods should run
 * (scheduling, images, running), diagnose_failed.c for one that failed or whose hosts stopped
 * it. The parts write with diagnosis.h and read with object.h; none of them calls back here.
 */
#include "diagnose/diagnose_failed.h"
#include "diagnose/diagnose_kueue.h"
#include "diagnose/diagnose_pods.h"
#include "diagnose/diagnosis.h"
#include "gcluster/kube.h"
#include "gcluster/sys.h"

#include <stdio.h>
#include <string.h>

static void deleting(const gc_diagnose_input *in, gc_diagnosis *d)
{
    size_t left = json_array_size(in->pods);
    const char *name = gc_kube_field(in->jobset, NULL, "name");
    char age[16];
    gc_job_age(gc_kube_field(in->jobset, NULL, "deletionTimestamp"), in->now, age, sizeof(age));
    diagnose_set(d, GC_JOB_TERMINATING, "Deleting");
    diagnose_cause(d, "being deleted%s%s%s: %zu pod%s still stopping", age[0] ? " (since " : "",
                   age, age[0] ? " ago)" : "", left, left == 1 ? "" : "s");
    diagnose_fix(d, "nothing to do; gcluster job cancel %s --wait returns once every pod is gone",
                 name);
    diagnose_evidence(d, "JobSet %s: metadata.deletionTimestamp %s", name,
                      gc_kube_field(in->jobset, NULL, "deletionTimestamp"));
}

static void succeeded(const gc_diagnose_input *in, const gc_job_facts *f, gc_diagnosis *d)
{
    const char *name = gc_kube_field(in->jobset, NULL, "name");
    const json_t *done = gc_kube_condition(in->jobset, "Completed");
    char age[16];
    gc_job_age(f->completed_at, in->now, age, sizeof(age));
    diagnose_set(d, GC_JOB_SUCCEEDED, "Succeeded");
    char restarts[48] = "";
    if (f->restarts)
        snprintf(restarts, sizeof(restarts), ", after %ld restart%s", f->restarts,
                 f->restarts == 1 ? "" : "s");
    diagnose_cause(d, "finished successfully at %s%s%s%s%s",
                   f->completed_at[0] ? f->completed_at : "?", age[0] ? " (" : "", age,
                   age[0] ? " ago)" : "", restarts);
    json_int_t ttl = json_integer_value(
        json_object_get(json_object_get(in->jobset, "spec"), "ttlSecondsAfterFinished"));
    if (ttl > 0) {
        char after[16];
        gc_clock_format_duration((long long)ttl, after, sizeof(after));
        diagnose_fix(d,
                     "nothing to do; its output: gcluster job logs %s (the job is deleted %s "
                     "after it finished)",
                     name, after);
    } else
        diagnose_fix(d, "nothing to do; its output: gcluster job logs %s", name);
    diagnose_evidence(d, "JobSet %s: Completed=True (%s) at %s", name,
                      gc_kube_string_or(done, "reason", "terminalState"), f->completed_at);
}

/* Suspended and in no queue: nothing will ever start it. */
static void unqueued(const gc_diagnose_input *in, gc_diagnosis *d)
{
    const char *name = gc_kube_field(in->jobset, NULL, "name");
    const char *ns = gc_kube_field(in->jobset, NULL, "namespace");
    diagnose_set(d, GC_JOB_SUSPENDED, "QueueLabelMissing");
    diagnose_cause(d, "suspended and in no queue, so nothing will start it: it has no "
                      "kueue.x-k8s.io/queue-name label");
    const char *queue = NULL;
    size_t i;
    const json_t *lq;
    json_array_foreach(in->local_queues, i, lq)
    {
        const char *lq_ns = gc_kube_field(lq, NULL, "namespace");
        if (!lq_ns || !ns || strcmp(lq_ns, ns))
            continue;
        const char *lq_name = gc_kube_field(lq, NULL, "name");
        if (!queue || (lq_name && !strcmp(lq_name, "user-queue")))
            queue = lq_name;
    }
    if (queue)
        diagnose_fix(d, "gcluster job cancel %s, then submit it again with --queue %s", name,
                     queue);
    else if (in->queues_read)
        diagnose_fix(d,
                     "gcluster job cancel %s; create a queue (gcluster deploy BLUEPRINT makes "
                     "user-queue), then submit it again with --queue user-queue",
                     name);
    else {
        diagnose_fix(d, "gcluster job cancel %s, then submit it again with --queue QUEUE", name);
        d->wants |= GC_DIAGNOSE_WANT_QUEUES;
    }
    diagnose_evidence(d, "JobSet %s: spec.suspend=true, no label kueue.x-k8s.io/queue-name", name);
}

void diagnose_job(const gc_diagnose_input *in, gc_diagnosis *d)
{
    memset(d, 0, sizeof(*d));
    gc_job_facts f;
    gc_job_facts_from_jobset(in->jobset, &f);
    if (in->workload)
        gc_job_facts_add_workload(&f, in->workload);
    size_t i;
    const json_t *pod;
    json_array_foreach(in->pods, i, pod) gc_job_facts_add_pod(&f, pod);
    if (!in->pods)
        gc_job_facts_add_ready_jobs(&f, in->jobset);
    gc_job_status st;
    gc_job_status_derive(&f, &st);
    d->state = st.phase;

    switch (st.phase) {
    case GC_JOB_TERMINATING:
        deleting(in, d);
        break;
    case GC_JOB_SUCCEEDED:
        succeeded(in, &f, d);
        break;
    case GC_JOB_FAILED:
        diagnose_failed(in, d);
        break;
    case GC_JOB_QUEUED:
        if (!diagnose_evicted(in, d))
            diagnose_queued(in, d);
        break;
    case GC_JOB_SUSPENDED:
        unqueued(in, d);
        break;
    case GC_JOB_ADMITTED:
    case GC_JOB_RUNNING:
    case GC_JOB_RESTARTING:
        if (!diagnose_disrupted(in, d) && !diagnose_pod_problem(in, d))
            diagnose_running(in, d);
        break;
    }
    /* The parts speak of JobSets; a JobSet-less job is told as what it is. */
    if (gc_job_is_indexed(in->jobset)) {
        char cause[GC_DIAGNOSIS_LINE];
        snprintf(cause, sizeof(cause), "%s", d->cause);
        diagnose_cause(d,
                       "%s (a JobSet-less job: batch/v1 Indexed Job %s and its headless "
                       "Service)",
                       cause, gc_kube_field(in->jobset, NULL, "name"));
        diagnose_evidence(d, "no JobSet: the job was submitted as a batch/v1 Indexed Job (the "
                             "cluster had no JobSet API, or GCLUSTER_DISABLE_JOBSET=1)");
    }
}
