/*
 * The JobSet-less shape of a single-slice job: the one Job a JobSet would have made, as a
 * batch/v1 Indexed Job, and the headless Service that gives its pods the stable host names a
 * JobSet's Service would (Google's gcluster falls back to this when the cluster has no JobSet
 * API, or when GCLUSTER_DISABLE_JOBSET=1).
 */
#include "manifest/pod.h"

#include <stdlib.h>
#include <string.h>

bool gc_workload_fits_indexed_job(const gc_workload *w)
{
    return !w->pathways && w->num_slices == 1;
}

/* The Job's pods carry this label (Kubernetes 1.27 and later); the Service selects on it. */
#define JOB_NAME_LABEL "batch.kubernetes.io/job-name"

static json_t *headless_service(const gc_workload *w)
{
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:{s:s, s:b, s:{s:s}}}", "apiVersion", "v1",
                     "kind", "Service", "metadata", "name", w->name, "labels", GC_LABEL_WORKLOAD,
                     w->name, "spec", "clusterIP", "None", "publishNotReadyAddresses", 1,
                     "selector", JOB_NAME_LABEL, w->name);
}

/* The JobSet's one replicated Job, moved to the top: the JobSet's labels and annotations, the
 * job's spec, suspended for Kueue to admit, the JobSet's restarts as pod retries and its TTL. */
static json_t *job_from_jobset(const gc_workload *w, json_t *jobset)
{
    json_t *replicated =
        json_array_get(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), 0);
    json_t *spec = json_deep_copy(json_object_get(json_object_get(replicated, "template"), "spec"));
    json_t *pod_spec = json_object_get(json_object_get(spec, "template"), "spec");
    if (!spec || !pod_spec) {
        json_decref(spec);
        return NULL;
    }
    if (json_object_set_new(pod_spec, "subdomain", json_string(w->name)) != 0) {
        json_decref(spec);
        return NULL;
    }
    spec = manifest_jset(spec, "backoffLimit", json_integer(w->restarts));
    spec = manifest_jset(spec, "ttlSecondsAfterFinished", json_integer(w->ttl_seconds));
    spec = manifest_jset(spec, "suspend", json_true());
    json_t *metadata = json_deep_copy(json_object_get(jobset, "metadata"));
    return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "batch/v1", "kind", "Job", "metadata",
                     metadata, "spec", spec);
}

int gc_workload_indexed_job(const gc_workload *w, json_t **objects, gc_error *err)
{
    *objects = NULL;
    if (!gc_workload_fits_indexed_job(w))
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s needs the JobSet API: without it only a single-slice job without "
                       "--pathways can run (as a batch/v1 Indexed Job); install JobSet on the "
                       "cluster, or submit with --num-slices 1 and no --pathways",
                       w->pathways ? "--pathways" : "--num-slices above 1");
    json_t *jobset = NULL;
    int rc = gc_workload_jobset(w, &jobset, err);
    if (rc)
        return rc;
    json_t *job = job_from_jobset(w, jobset);
    json_decref(jobset);
    *objects = json_pack("[o, o]", headless_service(w), job);
    if (!*objects)
        return gc_fail(err, GC_EXIT_USAGE, "the Indexed Job for %s cannot be built", w->name);
    return 0;
}
