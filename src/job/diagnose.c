/*
 * The diagnosis engine's entry: the job's state (the same derivation as `job list`), then the
 * reader that knows that state, and the helpers its parts share.
 *
 * Words: cause and fix lines speak of jobs, queues, quota, hosts and node pools, and name our
 * own flags and commands; the Kubernetes objects and fields that said so go to the evidence.
 */
#include "job/diagnose.h"

#include "gcluster/kube.h"
#include "gcluster/manifest.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void vline(char *out, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void vline(char *out, const char *fmt, va_list ap)
{
    int n = vsnprintf(out, GC_DIAGNOSIS_LINE, fmt, ap);
    /* One line each: a server message with a newline (or another control character) must not
     * break the two-line answer or the terminal it is printed on. */
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    /* Cut to fit, the line may end inside a UTF-8 character: drop the partial one, or the
     * line is no longer valid text (and JSON refuses it). */
    if (n >= GC_DIAGNOSIS_LINE) {
        size_t len = strlen(out), start = len;
        while (start > 0 && ((unsigned char)out[start - 1] & 0xC0) == 0x80)
            start--;
        if (start > 0 && (unsigned char)out[start - 1] >= 0xC0) {
            unsigned char lead = (unsigned char)out[start - 1];
            size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
            if (len - (start - 1) < need)
                out[start - 1] = '\0';
        }
    }
}

void job_diag_set(gc_diagnosis *d, gc_job_phase state, const char *reason)
{
    d->state = state;
    snprintf(d->reason, sizeof(d->reason), "%s", reason);
}

void job_diag_cause(gc_diagnosis *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(d->cause, fmt, ap);
    va_end(ap);
}

void job_diag_fix(gc_diagnosis *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(d->fix, fmt, ap);
    va_end(ap);
}

void job_diag_evidence(gc_diagnosis *d, const char *fmt, ...)
{
    if (d->evidence_count == GC_DIAGNOSIS_EVIDENCE)
        return;
    va_list ap;
    va_start(ap, fmt);
    vline(d->evidence[d->evidence_count++], fmt, ap);
    va_end(ap);
}

const json_t *job_condition(const json_t *object, const char *type)
{
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(object, "status"), "conditions"), i, c)
    {
        const char *t = job_string(c, "type");
        if (t && !strcmp(t, type))
            return c;
    }
    return NULL;
}

bool job_condition_true(const json_t *object, const char *type)
{
    const char *s = job_string(job_condition(object, type), "status");
    return s && !strcmp(s, "True");
}

bool job_same(const char *a, const char *b)
{
    return a && b && !strcmp(a, b);
}

const char *job_pod_role(const json_t *pod)
{
    return job_field(pod, "labels", "jobset.sigs.k8s.io/replicatedjob-name");
}

const char *job_string(const json_t *object, const char *key)
{
    return json_string_value(json_object_get(object, key));
}

const char *job_string_or(const json_t *object, const char *key, const char *fallback)
{
    const char *s = job_string(object, key);
    return s ? s : fallback;
}

const char *job_field(const json_t *object, const char *section, const char *key)
{
    const json_t *metadata = json_object_get(object, "metadata");
    if (section)
        metadata = json_object_get(metadata, section);
    return job_string(metadata, key);
}

const char *job_owner_name(const json_t *object)
{
    const char *jobset = job_field(object, "labels", "jobset.sigs.k8s.io/jobset-name");
    if (jobset)
        return jobset;
    size_t i;
    const json_t *owner;
    json_array_foreach(json_object_get(json_object_get(object, "metadata"), "ownerReferences"), i,
                       owner)
    {
        const char *kind = job_string(owner, "kind");
        if (kind && !strcmp(kind, "JobSet"))
            return job_string(owner, "name");
    }
    const char *name = job_field(object, NULL, "name");
    return name ? name : "?";
}

void job_age(const char *timestamp, long long now, char *out, size_t size)
{
    if (!gc_format_age(timestamp, now, out, size))
        out[0] = '\0';
}

double job_quantity(const json_t *value)
{
    if (json_is_number(value))
        return json_number_value(value);
    return gc_quantity_value(json_string_value(value));
}

void job_format_quantity(double value, const char *resource, char *out, size_t size)
{
    bool bytes = resource && (!strcmp(resource, "memory") || strstr(resource, "storage"));
    if (bytes && value >= 1073741824.0)
        snprintf(out, size, "%gGi", round(value / 1073741824.0 * 100) / 100);
    else if (bytes && value >= 1048576.0)
        snprintf(out, size, "%gMi", round(value / 1048576.0 * 100) / 100);
    else
        snprintf(out, size, "%g", round(value * 1000) / 1000);
}

/* A container's requests after the API server's defaulting: a resource with a limit and no
 * request is requested at its limit. Added to `into`. */
static void add_container(json_t *into, const json_t *container)
{
    const json_t *resources = json_object_get(container, "resources");
    const json_t *requests = json_object_get(resources, "requests");
    const json_t *limits = json_object_get(resources, "limits");
    const json_t *sources[] = {requests, limits};
    for (size_t s = 0; s < 2; s++) {
        const char *resource;
        const json_t *value;
        json_object_foreach((json_t *)sources[s], resource, value)
        {
            if (s == 1 && json_object_get(requests, resource))
                continue;
            double amount = job_quantity(value);
            if (amount <= 0)
                continue;
            double before = json_real_value(json_object_get(into, resource));
            json_object_set_new(into, resource, json_real(before + amount));
        }
    }
}

/* An ordinary init container runs alone (beside the sidecars started before it: here all of
 * them, which can only overstate), so it raises a resource only where it alone asks for more. */
json_t *job_pod_requests(const json_t *spec)
{
    json_t *total = json_object();
    json_t *sidecars = json_object();
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        if (job_same(job_string(c, "restartPolicy"), "Always"))
            add_container(sidecars, c);
    }
    json_array_foreach(json_object_get(spec, "containers"), i, c) add_container(total, c);
    const char *resource;
    json_t *value;
    json_object_foreach(sidecars, resource, value)
    {
        double before = json_real_value(json_object_get(total, resource));
        json_object_set_new(total, resource, json_real(before + json_real_value(value)));
    }
    json_array_foreach(json_object_get(spec, "initContainers"), i, c)
    {
        if (job_string(c, "restartPolicy"))
            continue;
        json_t *alone = json_deep_copy(sidecars);
        add_container(alone, c);
        json_object_foreach(alone, resource, value)
        {
            if (json_real_value(value) > json_real_value(json_object_get(total, resource)))
                json_object_set_new(total, resource, json_real(json_real_value(value)));
        }
        json_decref(alone);
    }
    json_decref(sidecars);
    return total;
}

bool job_group_covers(const json_t *group, const char *resource)
{
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(group, "coveredResources"), i, r)
    {
        if (job_same(json_string_value(r), resource))
            return true;
    }
    return false;
}

const char *job_role_words(const char *replicated_job)
{
    if (!replicated_job)
        return "the job";
    if (!strcmp(replicated_job, GC_PATHWAYS_HEAD))
        return "the head";
    if (!strcmp(replicated_job, GC_PATHWAYS_WORKER))
        return "the workers";
    return replicated_job;
}

const char *job_role_s(const char *replicated_job)
{
    return job_same(replicated_job, GC_PATHWAYS_WORKER) ? "" : "s";
}

static void deleting(const gc_diagnose_input *in, gc_diagnosis *d)
{
    size_t left = json_array_size(in->pods);
    const char *name = job_field(in->jobset, NULL, "name");
    char age[16];
    job_age(job_field(in->jobset, NULL, "deletionTimestamp"), in->now, age, sizeof(age));
    job_diag_set(d, GC_JOB_TERMINATING, "Deleting");
    job_diag_cause(d, "being deleted%s%s%s: %zu pod%s still stopping", age[0] ? " (since " : "",
                   age, age[0] ? " ago)" : "", left, left == 1 ? "" : "s");
    job_diag_fix(d, "nothing to do; gcluster job cancel %s --wait returns once every pod is gone",
                 name);
    job_diag_evidence(d, "JobSet %s: metadata.deletionTimestamp %s", name,
                      job_field(in->jobset, NULL, "deletionTimestamp"));
}

static void succeeded(const gc_diagnose_input *in, const gc_job_facts *f, gc_diagnosis *d)
{
    const char *name = job_field(in->jobset, NULL, "name");
    const json_t *done = job_condition(in->jobset, "Completed");
    char age[16];
    job_age(f->completed_at, in->now, age, sizeof(age));
    job_diag_set(d, GC_JOB_SUCCEEDED, "Succeeded");
    char restarts[48] = "";
    if (f->restarts)
        snprintf(restarts, sizeof(restarts), ", after %ld restart%s", f->restarts,
                 f->restarts == 1 ? "" : "s");
    job_diag_cause(d, "finished successfully at %s%s%s%s%s",
                   f->completed_at[0] ? f->completed_at : "?", age[0] ? " (" : "", age,
                   age[0] ? " ago)" : "", restarts);
    json_int_t ttl = json_integer_value(
        json_object_get(json_object_get(in->jobset, "spec"), "ttlSecondsAfterFinished"));
    if (ttl > 0) {
        char after[16];
        gc_format_duration((long long)ttl, after, sizeof(after));
        job_diag_fix(d,
                     "nothing to do; its output: gcluster job logs %s (the job is deleted %s "
                     "after it finished)",
                     name, after);
    } else
        job_diag_fix(d, "nothing to do; its output: gcluster job logs %s", name);
    job_diag_evidence(d, "JobSet %s: Completed=True (%s) at %s", name,
                      job_string_or(done, "reason", "terminalState"), f->completed_at);
}

/* Suspended and in no queue: nothing will ever start it. */
static void unqueued(const gc_diagnose_input *in, gc_diagnosis *d)
{
    const char *name = job_field(in->jobset, NULL, "name");
    const char *ns = job_field(in->jobset, NULL, "namespace");
    job_diag_set(d, GC_JOB_SUSPENDED, "QueueLabelMissing");
    job_diag_cause(d, "suspended and in no queue, so nothing will start it: it has no "
                      "kueue.x-k8s.io/queue-name label");
    const char *queue = NULL;
    size_t i;
    const json_t *lq;
    json_array_foreach(in->local_queues, i, lq)
    {
        const char *lq_ns = job_field(lq, NULL, "namespace");
        if (!lq_ns || !ns || strcmp(lq_ns, ns))
            continue;
        const char *lq_name = job_field(lq, NULL, "name");
        if (!queue || (lq_name && !strcmp(lq_name, "user-queue")))
            queue = lq_name;
    }
    if (queue)
        job_diag_fix(d, "gcluster job cancel %s, then submit it again with --queue %s", name,
                     queue);
    else if (in->queues_read)
        job_diag_fix(d,
                     "gcluster job cancel %s; create a queue (gcluster deploy BLUEPRINT makes "
                     "user-queue), then submit it again with --queue user-queue",
                     name);
    else {
        job_diag_fix(d, "gcluster job cancel %s, then submit it again with --queue QUEUE", name);
        d->wants |= GC_DIAGNOSE_WANT_QUEUES;
    }
    job_diag_evidence(d, "JobSet %s: spec.suspend=true, no label kueue.x-k8s.io/queue-name", name);
}

void gc_diagnose(const gc_diagnose_input *in, gc_diagnosis *d)
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
        job_diagnose_failed(in, d);
        break;
    case GC_JOB_QUEUED:
        if (!job_diagnose_evicted(in, d))
            job_diagnose_queued(in, d);
        break;
    case GC_JOB_SUSPENDED:
        unqueued(in, d);
        break;
    case GC_JOB_ADMITTED:
    case GC_JOB_RUNNING:
    case GC_JOB_RESTARTING:
        if (!job_diagnose_disrupted(in, d) && !job_diagnose_pod_problem(in, d))
            job_diagnose_running(in, d);
        break;
    }
}

json_t *gc_diagnosis_json(const gc_diagnosis *d)
{
    json_t *evidence = json_array();
    for (size_t i = 0; i < d->evidence_count; i++)
        json_array_append_new(evidence, json_string(d->evidence[i]));
    return json_pack("{s:s, s:s, s:s, s:s, s:o}", "state", gc_job_phase_name(d->state), "reason",
                     d->reason, "cause", d->cause, "fix", d->fix, "evidence", evidence);
}
