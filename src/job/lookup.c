/*
 * Finding one job by name, and reading what a JobSet says about itself (for jobs made by this
 * tool, by Google's gcluster, or by hand).
 */
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "job/internal.h"

#include "gcluster/buf.h"
#include "gcluster/manifest.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A JobSet's name is a DNS-1035 label (JobSet's webhook checks it so, as its Jobs' and pods'
 * names and labels are built from it): at most 63 characters, so a longer name can never be a
 * job and is refused before any request. */
int gc_job_name_check(const char *name, gc_error *err)
{
    if (name && gc_kube_is_dns1035_label(name))
        return 0;
    size_t n = name ? strlen(name) : 0;
    if (n > 63)
        return gc_fail(err, GC_EXIT_USAGE,
                       "the job name is %zu characters long: a JobSet's name has at most 63 "
                       "(gcluster job list shows the jobs)",
                       n);
    return gc_fail(err, GC_EXIT_USAGE,
                   "\"%s\" is not a job name: names are lower-case letters, digits and '-', "
                   "starting with a letter and ending with a letter or digit (gcluster job list "
                   "shows the jobs)",
                   name ? name : "");
}

char *gc_job_jobset_path(gc_kube *kube, const char *name)
{
    return gc_kube_path("jobset.x-k8s.io", "v1alpha2", gc_kube_namespace(kube), "jobsets", name);
}

static int note_namespace(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    const char *ns = gc_kube_field(item, NULL, "namespace");
    gc_buf *namespaces = ctx;
    if (ns)
        gc_buf_printf(namespaces, "%s%s", namespaces->len ? ", " : "", ns);
    return 0;
}

/* Where else a job of this name lives, for the "not found" message. */
static void other_namespaces(gc_kube *kube, const char *name, gc_buf *namespaces)
{
    char selector[300];
    snprintf(selector, sizeof(selector), "metadata.name=%s", name);
    gc_kube_list_options opts = {.field_selector = selector, .accept = GC_KUBE_ACCEPT_METADATA};
    char *path = gc_kube_path("jobset.x-k8s.io", "v1alpha2", NULL, "jobsets", NULL);
    gc_error ignored = {0};
    gc_kube_list(kube, path, &opts, note_namespace, namespaces, NULL, &ignored);
    free(path);
}

int gc_job_not_found(gc_kube *kube, const char *name, gc_error *err)
{
    gc_buf elsewhere;
    gc_buf_init(&elsewhere);
    other_namespaces(kube, name, &elsewhere);
    int rc;
    if (elsewhere.len)
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "no job named %s in namespace %s; it exists in namespace %s: add "
                     "--namespace",
                     name, gc_kube_namespace(kube), elsewhere.data);
    else
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "no job named %s in namespace %s (gcluster job list shows the jobs)", name,
                     gc_kube_namespace(kube));
    err->http_status = 404;
    snprintf(err->reason, sizeof(err->reason), "NotFound");
    gc_buf_free(&elsewhere);
    return rc;
}

/* No JobSet of that name (or no JobSet API): a JobSet-less job's Job, seen as its JobSet. The
 * other reads that selected the JobSet's pods by its label are made again with the Job's. */
static int find_indexed_job(gc_kube *kube, const char *name, json_t **jobset, gc_kube_read *others,
                            size_t count, gc_error *err)
{
    char *path = job_indexed_path(kube, name);
    json_t *job = NULL;
    gc_error job_err = {0};
    int rc = gc_kube_get(kube, path, NULL, &job, &job_err);
    free(path);
    json_t *view = rc ? NULL : gc_job_indexed_view(job);
    json_decref(job);
    if (!view)
        return gc_job_not_found(kube, name, err);
    *jobset = view;
    char jobset_selector[300], job_selector[300];
    snprintf(jobset_selector, sizeof(jobset_selector), "jobset.sigs.k8s.io/jobset-name=%s", name);
    job_pods_selector(view, name, job_selector, sizeof(job_selector));
    gc_kube_read again[4];
    size_t n = 0;
    gc_kube_list_options opts[4];
    for (size_t i = 0; i < count; i++) {
        const gc_kube_list_options *o = others[i].opts;
        if (!o || !gc_kube_same(o->label_selector, jobset_selector))
            continue;
        opts[n] = *o;
        opts[n].label_selector = job_selector;
        again[n] = others[i];
        again[n].opts = &opts[n];
        again[n].rc = 0;
        n++;
    }
    if (n)
        gc_kube_read_all(kube, again, n);
    for (size_t i = 0, j = 0; i < count && j < n; i++) {
        const gc_kube_list_options *o = others[i].opts;
        if (!o || !gc_kube_same(o->label_selector, jobset_selector))
            continue;
        others[i].rc = again[j].rc;
        others[i].err = again[j].err;
        if (again[j].rc && !rc) {
            *err = again[j].err;
            rc = again[j].rc;
        }
        j++;
    }
    if (rc) {
        json_decref(view);
        *jobset = NULL;
    }
    return rc;
}

int gc_job_find_jobset_with(gc_kube *kube, const char *name, json_t **jobset, gc_kube_read *others,
                            size_t count, gc_error *err)
{
    gc_kube_read reads[5];
    if (count > 4)
        return gc_fail(err, GC_EXIT_RUNTIME, "gc_job_find_jobset_with: %zu reads, at most 4",
                       count);
    char *path = gc_job_jobset_path(kube, name);
    reads[0] = (gc_kube_read){.path = path, .object = jobset};
    memcpy(reads + 1, others, count * sizeof(*others));
    gc_kube_read_all(kube, reads, count + 1);
    memcpy(others, reads + 1, count * sizeof(*others));
    free(path);
    int rc = 0;
    for (size_t i = 0; i <= count && !rc; i++) {
        rc = reads[i].rc;
        if (rc)
            *err = reads[i].err;
    }
    if (reads[0].rc && err->http_status == 404)
        return find_indexed_job(kube, name, jobset, others, count, err);
    return rc;
}

const json_t *gc_job_replicated_job(const json_t *jobset, const char *name)
{
    size_t i;
    const json_t *rjob;
    json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i, rjob)
    {
        const char *n = json_string_value(json_object_get(rjob, "name"));
        if (n && !strcmp(n, name))
            return rjob;
    }
    return NULL;
}

const char *gc_pathways_mode_name(gc_pathways_mode mode)
{
    return mode == GC_PATHWAYS_FULL       ? "yes"
           : mode == GC_PATHWAYS_HEADLESS ? "headless"
           : mode == GC_PATHWAYS_SPS      ? "sps"
                                          : "no";
}

gc_pathways_mode gc_job_pathways_mode(const json_t *jobset)
{
    const char *mode = gc_kube_field(jobset, "annotations", GC_ANNOTATION_PATHWAYS);
    if (mode)
        return !strcmp(mode, "headless") ? GC_PATHWAYS_HEADLESS
               : !strcmp(mode, "sps")    ? GC_PATHWAYS_SPS
               : !strcmp(mode, "yes")    ? GC_PATHWAYS_FULL
                                         : GC_PATHWAYS_NONE;
    if (!gc_job_replicated_job(jobset, GC_PATHWAYS_HEAD))
        return GC_PATHWAYS_NONE;
    /* Made elsewhere: only a job with a user program ends when the head does (headless ones
     * get JobSet's default policy, "all jobs", which servers that never exit never reach). */
    const json_t *targets = json_object_get(
        json_object_get(json_object_get(jobset, "spec"), "successPolicy"), "targetReplicatedJobs");
    size_t i;
    const json_t *t;
    json_array_foreach(targets, i, t)
    {
        if (json_string_value(t) && !strcmp(json_string_value(t), GC_PATHWAYS_HEAD))
            return GC_PATHWAYS_FULL;
    }
    return GC_PATHWAYS_HEADLESS;
}

/* The first pod template of a replicated job that carries accelerator node selectors. */
static const json_t *worker_node_selector(const json_t *jobset)
{
    size_t i;
    const json_t *rjob;
    json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i, rjob)
    {
        const json_t *pod_spec = json_object_get(
            json_object_get(json_object_get(json_object_get(rjob, "template"), "spec"), "template"),
            "spec");
        const json_t *selector = json_object_get(pod_spec, "nodeSelector");
        if (json_object_get(selector, "cloud.google.com/gke-tpu-accelerator") ||
            json_object_get(selector, "cloud.google.com/gke-accelerator"))
            return selector;
    }
    return NULL;
}

bool gc_job_compute(const json_t *jobset, char *out, size_t size)
{
    const char *compute = gc_kube_field(jobset, "annotations", GC_ANNOTATION_COMPUTE);
    const char *slices = gc_kube_field(jobset, "annotations", GC_ANNOTATION_SLICES);
    if (compute) {
        snprintf(out, size, "%s x%s", compute, slices ? slices : "1");
        return true;
    }
    const json_t *selector = worker_node_selector(jobset);
    const char *accelerator =
        json_string_value(json_object_get(selector, "cloud.google.com/gke-tpu-accelerator"));
    const char *topology =
        json_string_value(json_object_get(selector, "cloud.google.com/gke-tpu-topology"));
    if (!accelerator)
        accelerator =
            json_string_value(json_object_get(selector, "cloud.google.com/gke-accelerator"));
    if (!accelerator)
        return false;
    const json_t *worker = gc_job_replicated_job(jobset, GC_PATHWAYS_WORKER);
    if (!worker)
        worker = gc_job_replicated_job(jobset, GC_MAIN_JOB);
    json_int_t replicas = json_integer_value(json_object_get(worker, "replicas"));
    snprintf(out, size, "%s%s%s x%lld", accelerator, topology ? " " : "", topology ? topology : "",
             (long long)(replicas ? replicas : 1));
    return true;
}

char *gc_job_strdup_or_null(const char *s)
{
    return s && *s ? gc_xstrdup(s) : NULL;
}
