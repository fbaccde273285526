/*
 * A JobSet-less job (`job submit` without the JobSet API, or with GCLUSTER_DISABLE_JOBSET=1) is
 * one batch/v1 Indexed Job, labelled with its workload, and a headless Service. The job commands
 * read it as the JobSet it stands for: one replicated job (GC_MAIN_JOB, one replica) whose Job
 * spec is the Job's, with the Job's conditions as the JobSet's (Complete is Completed) and its
 * ready pods counted. The view carries the marker annotation GC_ANNOTATION_INDEXED_JOB (never
 * stored on the cluster) and the Job itself, so that what only the Job can say stays the Job's.
 */
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"
#include "job/internal.h"

#include <stdio.h>
#include <string.h>

#define JOB_NAME_LABEL  "batch.kubernetes.io/job-name"
#define JOBSET_LABEL    "jobset.sigs.k8s.io/jobset-name"
#define VIEW_SOURCE_KEY "gclusterIndexedJob"
#define VIEW_READY_PODS "readyPods"

bool job_is_indexed_job(const json_t *job)
{
    const char *name = gc_kube_field(job, NULL, "name");
    /* A Shared Pathways Service client's proxy Job carries its workload label too; it is the
     * service's client, followed as one (job/sps.c), not a JobSet-less job. */
    if (!name || !gc_kube_same(gc_kube_field(job, "labels", GC_LABEL_WORKLOAD), name) ||
        gc_kube_field(job, "labels", JOBSET_LABEL) ||
        gc_kube_field(job, "labels", GC_LABEL_SPS_SERVICE))
        return false;
    size_t i;
    const json_t *owner;
    json_array_foreach(json_object_get(json_object_get(job, "metadata"), "ownerReferences"), i,
                       owner)
    {
        if (gc_kube_same(gc_kube_string(owner, "kind"), "JobSet"))
            return false;
    }
    return true;
}

static json_t *jobset_conditions(const json_t *job)
{
    static const char *const types[][2] = {
        {"Complete", "Completed"}, {"Failed", "Failed"}, {"Suspended", "Suspended"}};
    json_t *out = json_array();
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(json_object_get(job, "status"), "conditions"), i, c)
    {
        const char *type = gc_kube_string(c, "type");
        for (size_t t = 0; type && t < sizeof(types) / sizeof(*types); t++) {
            if (strcmp(type, types[t][0]) != 0)
                continue;
            json_t *copy = json_deep_copy(c);
            json_object_set_new(copy, "type", json_string(types[t][1]));
            json_array_append_new(out, copy);
        }
    }
    return out;
}

json_t *gc_job_indexed_view(const json_t *job)
{
    if (!job_is_indexed_job(job))
        return NULL;
    const json_t *spec = json_object_get(job, "spec");
    const json_t *status = json_object_get(job, "status");
    json_t *metadata = json_deep_copy(json_object_get(job, "metadata"));
    if (!metadata)
        metadata = json_object();
    json_t *annotations = json_object_get(metadata, "annotations");
    if (!json_is_object(annotations)) {
        annotations = json_object();
        json_object_set_new(metadata, "annotations", annotations);
    }
    json_object_set_new(annotations, GC_ANNOTATION_INDEXED_JOB, json_string("batch/v1 Job"));
    json_int_t parallelism = json_integer_value(json_object_get(spec, "parallelism"));
    json_int_t ready = json_integer_value(json_object_get(status, "ready"));
    bool complete = gc_kube_condition_true(job, "Complete");
    bool failed = gc_kube_condition_true(job, "Failed");
    json_t *replicated_status = json_pack(
        "{s:s, s:i, s:i, s:i, s:i, s:I}", "name", GC_MAIN_JOB, "ready",
        parallelism > 0 && ready >= parallelism, "succeeded", complete, "failed", failed, "active",
        json_integer_value(json_object_get(status, "active")) > 0, VIEW_READY_PODS, ready);
    json_t *replicated = json_pack("{s:s, s:i, s:{s:{}, s:O}}", "name", GC_MAIN_JOB, "replicas", 1,
                                   "template", "metadata", "spec", spec ? spec : json_null());
    /* The JobSet's restarts are the Job's pod retries (its backoffLimit). */
    json_t *view_spec =
        json_pack("{s:[o], s:{s:I}}", "replicatedJobs", replicated, "failurePolicy", "maxRestarts",
                  json_integer_value(json_object_get(spec, "backoffLimit")));
    if (json_object_get(spec, "suspend"))
        json_object_set(view_spec, "suspend", json_object_get(spec, "suspend"));
    return json_pack("{s:s, s:s, s:o, s:o, s:{s:o, s:[o], s:i}, s:O}", "apiVersion", "batch/v1",
                     "kind", "Job", "metadata", metadata, "spec", view_spec, "status", "conditions",
                     jobset_conditions(job), "replicatedJobsStatus", replicated_status, "restarts",
                     (int)json_integer_value(json_object_get(status, "failed")), VIEW_SOURCE_KEY,
                     job);
}

bool gc_job_is_indexed(const json_t *jobset)
{
    return gc_kube_field(jobset, "annotations", GC_ANNOTATION_INDEXED_JOB) != NULL;
}

const json_t *gc_job_indexed_source(const json_t *jobset)
{
    return json_object_get(jobset, VIEW_SOURCE_KEY);
}

long job_indexed_ready_pods(const json_t *replicated_status)
{
    const json_t *pods = json_object_get(replicated_status, VIEW_READY_PODS);
    return pods ? (long)json_integer_value(pods) : -1;
}

void job_pods_selector(const json_t *jobset, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s=%s", gc_job_is_indexed(jobset) ? JOB_NAME_LABEL : JOBSET_LABEL, name);
}

char *job_indexed_path(gc_kube *kube, const char *name)
{
    return gc_kube_path("batch", "v1", gc_kube_namespace(kube), "jobs", name);
}
