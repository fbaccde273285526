/*
 * What every job room reads of a JobSet and its pods beyond Kubernetes' own vocabulary: which
 * JobSet an object belongs to, a pod's role, restarts, ages, and the job's roles in words.
 */
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/sys.h"

#include <stdlib.h>
#include <string.h>

const char *gc_job_owner_name(const json_t *object)
{
    const char *jobset = gc_kube_field(object, "labels", "jobset.sigs.k8s.io/jobset-name");
    if (jobset)
        return jobset;
    size_t i;
    const json_t *owner;
    json_array_foreach(json_object_get(json_object_get(object, "metadata"), "ownerReferences"), i,
                       owner)
    {
        const char *kind = gc_kube_string(owner, "kind");
        if (kind && !strcmp(kind, "JobSet"))
            return gc_kube_string(owner, "name");
    }
    const char *name = gc_kube_field(object, NULL, "name");
    return name ? name : "?";
}

/* A JobSet-less job's pod: made by its Indexed Job, with the workload label, without JobSet's. */
static bool indexed_job_pod(const json_t *pod)
{
    return !gc_kube_field(pod, "labels", "jobset.sigs.k8s.io/jobset-name") &&
           gc_kube_field(pod, "labels", "batch.kubernetes.io/job-name") &&
           gc_kube_field(pod, "labels", GC_LABEL_WORKLOAD);
}

const char *gc_job_pod_role(const json_t *pod)
{
    const char *role = gc_kube_field(pod, "labels", "jobset.sigs.k8s.io/replicatedjob-name");
    return role ? role : indexed_job_pod(pod) ? GC_MAIN_JOB : NULL;
}

long gc_job_pod_slice(const json_t *pod)
{
    const char *index = gc_kube_field(pod, "labels", "jobset.sigs.k8s.io/job-index");
    if (!index)
        return indexed_job_pod(pod) ? 0 : -1;
    char *end;
    long n = strtol(index, &end, 10);
    return !*index || *end || n < 0 ? -1 : n;
}

void gc_job_age(const char *timestamp, long long now, char *out, size_t size)
{
    if (!gc_clock_format_age(timestamp, now, out, size))
        out[0] = '\0';
}

long gc_job_restarts(const json_t *jobset)
{
    return (long)json_integer_value(json_object_get(json_object_get(jobset, "status"), "restarts"));
}

long gc_job_max_restarts(const json_t *jobset)
{
    return (long)json_integer_value(json_object_get(
        json_object_get(json_object_get(jobset, "spec"), "failurePolicy"), "maxRestarts"));
}

const char *gc_job_role_words(const char *replicated_job)
{
    if (!replicated_job)
        return "the job";
    if (!strcmp(replicated_job, GC_PATHWAYS_HEAD))
        return "the head";
    if (!strcmp(replicated_job, GC_PATHWAYS_WORKER))
        return "the workers";
    return replicated_job;
}

const char *gc_job_role_s(const char *replicated_job)
{
    return gc_kube_same(replicated_job, GC_PATHWAYS_WORKER) ? "" : "s";
}
