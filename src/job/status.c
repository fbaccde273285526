/*
 * One status per job, from the JobSet's conditions, its Kueue Workload and its pods.
 *
 * Conditions are looked up by type, never by position ("the last condition" is what
 * pathways-job does, and it breaks as soon as a controller appends another one). A suspended
 * JobSet with a queue label is Kueue's business: its Workload says whether it waits for quota
 * (and why) or was evicted.
 */
#include "gcluster/checked.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "job/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static void copy_field(char *dst, size_t size, const json_t *object, const char *key)
{
    const char *s = json_string_value(json_object_get(object, key));
    snprintf(dst, size, "%s", s ? s : "");
}

static int replicated_job_pods(const json_t *rjob)
{
    const json_t *job_spec = json_object_get(json_object_get(rjob, "template"), "spec");
    json_int_t replicas = json_integer_value(json_object_get(rjob, "replicas"));
    json_int_t parallelism = json_integer_value(json_object_get(job_spec, "parallelism"));
    return gc_saturating_int(
        gc_saturating_mul(replicas ? replicas : 1, parallelism ? parallelism : 1));
}

void gc_job_facts_from_jobset(const json_t *jobset, gc_job_facts *f)
{
    memset(f, 0, sizeof(*f));
    const json_t *metadata = json_object_get(jobset, "metadata");
    const json_t *spec = json_object_get(jobset, "spec");
    const json_t *status = json_object_get(jobset, "status");
    f->deleting = json_object_get(metadata, "deletionTimestamp") != NULL;
    f->queued_by_kueue =
        json_object_get(json_object_get(metadata, "labels"), "kueue.x-k8s.io/queue-name") != NULL;

    const char *terminal = json_string_value(json_object_get(status, "terminalState"));
    f->completed =
        gc_kube_condition_true(jobset, "Completed") || (terminal && !strcmp(terminal, "Completed"));
    f->failed =
        gc_kube_condition_true(jobset, "Failed") || (terminal && !strcmp(terminal, "Failed"));
    const json_t *finish = gc_kube_condition(jobset, f->failed ? "Failed" : "Completed");
    if (f->failed) {
        copy_field(f->failed_reason, sizeof(f->failed_reason), finish, "reason");
        copy_field(f->failed_message, sizeof(f->failed_message), finish, "message");
    }
    if (f->failed || f->completed)
        copy_field(f->completed_at, sizeof(f->completed_at), finish, "lastTransitionTime");

    /* spec.suspend is what the controllers act on; the Suspended condition trails it (JobSet
     * updates it after the pods of a resumed job already run), so it only counts without one. */
    const json_t *suspend = json_object_get(spec, "suspend");
    f->suspended = suspend ? json_is_true(suspend) : gc_kube_condition_true(jobset, "Suspended");
    f->restarting = gc_kube_condition_true(jobset, "RestartingJobSet");
    f->restarts = (long)json_integer_value(json_object_get(status, "restarts"));

    size_t i;
    const json_t *rjob;
    json_array_foreach(json_object_get(spec, "replicatedJobs"), i, rjob) f->pods_expected =
        gc_saturating_int(gc_saturating_add(f->pods_expected, replicated_job_pods(rjob)));
}

void gc_job_facts_add_ready_jobs(gc_job_facts *f, const json_t *jobset)
{
    const json_t *spec = json_object_get(jobset, "spec");
    size_t i;
    const json_t *rs;
    json_array_foreach(json_object_get(json_object_get(jobset, "status"), "replicatedJobsStatus"),
                       i, rs)
    {
        const char *name = json_string_value(json_object_get(rs, "name"));
        size_t j;
        const json_t *rjob;
        json_array_foreach(json_object_get(spec, "replicatedJobs"), j, rjob)
        {
            const char *n = json_string_value(json_object_get(rjob, "name"));
            if (!name || !n || strcmp(n, name))
                continue;
            const json_t *job_spec = json_object_get(json_object_get(rjob, "template"), "spec");
            json_int_t parallelism = json_integer_value(json_object_get(job_spec, "parallelism"));
            /* A JobSet-less job's view counts its Job's ready pods, not whole ready Jobs. */
            long pods = job_indexed_ready_pods(rs);
            long long ready =
                pods >= 0 ? pods
                          : gc_saturating_mul(json_integer_value(json_object_get(rs, "ready")),
                                              parallelism ? parallelism : 1);
            f->pods_running = gc_saturating_int(gc_saturating_add(f->pods_running, ready));
        }
    }
}

void gc_job_facts_add_workload(gc_job_facts *f, const json_t *workload)
{
    f->workload_found = true;
    f->quota_reserved = gc_kube_condition_true(workload, "QuotaReserved");
    f->admitted = gc_kube_condition_true(workload, "Admitted");
    f->evicted = gc_kube_condition_true(workload, "Evicted");
    const json_t *why = NULL;
    if (f->evicted)
        why = gc_kube_condition(workload, "Evicted");
    else if (!f->quota_reserved)
        why = gc_kube_condition(workload, "QuotaReserved");
    else if (!f->admitted)
        why = gc_kube_condition(workload, "Admitted");
    copy_field(f->workload_reason, sizeof(f->workload_reason), why, "reason");
    copy_field(f->workload_message, sizeof(f->workload_message), why, "message");
}

/* The first container (regular or init) that terminated with a non-zero code. */
static bool failed_container(const json_t *pod, char name[64], int *exit_code)
{
    static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
    const json_t *status = json_object_get(pod, "status");
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *cs;
        json_array_foreach(json_object_get(status, lists[l]), i, cs)
        {
            const json_t *terminated = json_object_get(json_object_get(cs, "state"), "terminated");
            if (!terminated)
                terminated = json_object_get(json_object_get(cs, "lastState"), "terminated");
            json_int_t code = json_integer_value(json_object_get(terminated, "exitCode"));
            if (terminated && code != 0) {
                copy_field(name, 64, cs, "name");
                *exit_code = (int)code;
                return true;
            }
        }
    }
    return false;
}

void gc_job_facts_add_pod(gc_job_facts *f, const json_t *pod)
{
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    f->pods_seen++;
    if (!phase)
        return;
    if (!strcmp(phase, "Running"))
        f->pods_running++;
    else if (!strcmp(phase, "Succeeded"))
        f->pods_succeeded++;
    else if (!strcmp(phase, "Failed"))
        f->pods_failed++;

    char container[64];
    int code;
    if (!f->failed_pod[0] && failed_container(pod, container, &code)) {
        copy_field(f->failed_pod, sizeof(f->failed_pod), json_object_get(pod, "metadata"), "name");
        snprintf(f->failed_container, sizeof(f->failed_container), "%s", container);
        f->failed_exit_code = code;
    }
}

static void describe_failure(const gc_job_facts *f, gc_job_status *s)
{
    if (f->failed_pod[0])
        snprintf(s->detail, sizeof(s->detail), "pod %s: container %s exited with code %d%s%s",
                 f->failed_pod, f->failed_container, f->failed_exit_code,
                 f->failed_message[0] ? "; " : "", f->failed_message);
    else
        snprintf(s->detail, sizeof(s->detail), "%s%s%s", f->failed_reason,
                 f->failed_message[0] ? ": " : "", f->failed_message);
}

static void set(gc_job_status *s, gc_job_phase phase, const char *text)
{
    s->phase = phase;
    snprintf(s->text, sizeof(s->text), "%s", text);
}

void gc_job_status_derive(const gc_job_facts *f, gc_job_status *s)
{
    memset(s, 0, sizeof(*s));
    if (f->deleting) {
        set(s, GC_JOB_TERMINATING, "Terminating");
    } else if (f->failed) {
        set(s, GC_JOB_FAILED, "Failed");
        describe_failure(f, s);
    } else if (f->completed) {
        set(s, GC_JOB_SUCCEEDED, "Succeeded");
    } else if (f->suspended && f->queued_by_kueue) {
        set(s, GC_JOB_QUEUED, f->evicted ? "Queued (evicted)" : "Queued");
        snprintf(s->detail, sizeof(s->detail), "%s%s%s",
                 f->workload_found ? f->workload_reason : "no Kueue Workload yet",
                 f->workload_message[0] ? ": " : "", f->workload_message);
    } else if (f->suspended) {
        set(s, GC_JOB_SUSPENDED, "Suspended");
    } else if (f->restarting) {
        set(s, GC_JOB_RESTARTING, "Restarting");
        snprintf(s->detail, sizeof(s->detail), "restart %ld", f->restarts);
    } else if (f->pods_running > 0) {
        s->phase = GC_JOB_RUNNING;
        snprintf(s->text, sizeof(s->text), "Running %d/%d", f->pods_running,
                 f->pods_expected ? f->pods_expected : f->pods_seen);
    } else {
        set(s, GC_JOB_ADMITTED, "Admitted");
        snprintf(s->detail, sizeof(s->detail), "%d of %d pods created, none running yet",
                 f->pods_seen, f->pods_expected);
    }
}

const char *gc_job_phase_name(gc_job_phase phase)
{
    static const char *const names[] = {"Queued",    "Admitted", "Running",   "Restarting",
                                        "Succeeded", "Failed",   "Suspended", "Terminating"};
    return names[phase];
}

bool gc_job_phase_matches(const char *filter, gc_job_phase phase, bool *valid)
{
    *valid = true;
    if (!strcasecmp(filter, "Pending"))
        return phase == GC_JOB_QUEUED || phase == GC_JOB_ADMITTED;
    for (int p = GC_JOB_QUEUED; p <= GC_JOB_TERMINATING; p++)
        if (!strcasecmp(filter, gc_job_phase_name((gc_job_phase)p)))
            return p == (int)phase;
    *valid = false;
    return false;
}
