/*
 * `job submit` against a cluster.
 *
 * 1. Validate everything that needs no cluster (nothing is sent if that fails).
 * 2. Gather the cluster facts (LocalQueues, the ClusterQueue, node labels, PriorityClass).
 * 3. Resolve the compute type against the real nodes and check the SPEC §3 rules: errors for
 *    what would never work, warnings for what will wait (capacity) or needs fixing (quota).
 * 4. POST the JobSet once (fieldValidation=Strict). JobSet and version problems surface here
 *    for free: a 404 means no JobSet CRD, an unknown field means an older JobSet.
 * 5. Optionally watch it to the end.
 * A happy path costs four or five requests.
 */
#include "gcluster/buf.h"
#include "gcluster/emit.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "job/cluster_facts.h"
#include "job/watch_job.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void warn(const gc_output *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(const gc_output *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gcluster: warning: ", o->log);
    vfprintf(o->log, fmt, ap);
    fputc('\n', o->log);
    va_end(ap);
}

static bool covers(const json_t *group, const char *resource)
{
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(group, "coveredResources"), i, r)
    {
        if (json_string_value(r) && !strcmp(json_string_value(r), resource))
            return true;
    }
    return false;
}

/* Pathways worker pods request google.com/tpu, cpu and memory together; Kueue can only admit
 * such a pod when one resource group covers all three (one flavor for all of them). */
static void check_cluster_queue(const cluster_facts *f, const gc_workload *w, const gc_output *o)
{
    if (!f->kueue_version) {
        warn(o, "Kueue is not installed: the JobSet will start at once, without queueing or "
                "quota (install it with gcluster deploy)");
        return;
    }
    if (!f->cluster_queue_object) {
        warn(o,
             "LocalQueue %s points to ClusterQueue \"%s\", which does not exist: the job "
             "will stay queued until it does (gcluster deploy creates it)",
             f->queue, f->cluster_queue);
        return;
    }
    const char *accelerator = w->compute.kind == GC_ACCEL_TPU   ? "google.com/tpu"
                              : w->compute.kind == GC_ACCEL_GPU ? "nvidia.com/gpu"
                                                                : NULL;
    const json_t *groups =
        json_object_get(json_object_get(f->cluster_queue_object, "spec"), "resourceGroups");
    size_t i;
    const json_t *g;
    json_array_foreach(groups, i, g)
    {
        if ((!accelerator || covers(g, accelerator)) && covers(g, "cpu") && covers(g, "memory"))
            return;
        if (!w->pathways && accelerator && covers(g, accelerator))
            return;
    }
    if (w->pathways)
        warn(o,
             "ClusterQueue %s does not cover google.com/tpu, cpu and memory in one resource "
             "group: Pathways worker pods request all three, so Kueue cannot admit this job; "
             "run gcluster deploy BLUEPRINT to install the Pathways Kueue configuration",
             f->cluster_queue);
    else
        warn(o, "ClusterQueue %s has no quota for %s: Kueue cannot admit this job",
             f->cluster_queue, accelerator ? accelerator : "cpu and memory");
}

/* SPEC §3: --pathways-head-np, else cpu-np, else pathways-np. */
static int choose_head_pool(const cluster_facts *f, const gc_submit_request *r, gc_workload *w,
                            const gc_output *o, gc_error *err)
{
    if (!w->pathways)
        return 0;
    if (r->pathways_head_np) {
        if (!job_cluster_facts_pool_nodes(f, r->pathways_head_np))
            warn(o,
                 "node pool %s has no nodes now: the head pod waits until the autoscaler "
                 "adds one",
                 r->pathways_head_np);
        return 0;
    }
    const char *pools[] = {"cpu-np", "pathways-np"};
    for (size_t i = 0; i < 2; i++) {
        if (job_cluster_facts_pool_nodes(f, pools[i])) {
            free(w->head_pool);
            w->head_pool = strdup(pools[i]);
            w->head_pool_defaulted = false;
            return 0;
        }
    }
    return gc_fail(err, GC_EXIT_USAGE,
                   "no node pool for the Pathways head: the cluster has no nodes in cpu-np or "
                   "pathways-np; create the pool with gcluster deploy BLUEPRINT, or name a CPU "
                   "pool (also one scaled to zero) with --pathways-head-np");
}

static void check_capacity(const cluster_facts *f, const gc_workload *w, const gc_output *o)
{
    if (w->compute.kind != GC_ACCEL_TPU)
        return;
    int hosts = 0, pools = 0;
    for (size_t i = 0; i < f->shape_count; i++) {
        const node_shape *s = &f->shapes[i];
        if (!strcmp(s->accelerator, w->compute.accelerator) &&
            !strcmp(s->topology, w->compute.topology)) {
            hosts += s->count;
            pools++;
        }
    }
    int needed = w->compute.vms_per_slice * w->num_slices;
    if (hosts < needed)
        warn(o,
             "the cluster has %d %s host%s with topology %s, and this job needs %d (%d "
             "slice%s x %d): it will wait for capacity",
             hosts, w->compute.accelerator, hosts == 1 ? "" : "s", w->compute.topology, needed,
             w->num_slices, w->num_slices == 1 ? "" : "s", w->compute.vms_per_slice);
    else if (pools < w->num_slices)
        warn(o,
             "%d slices need %d node pools of %s %s (one slice per pool), the cluster has %d: "
             "it will wait for capacity",
             w->num_slices, w->num_slices, w->compute.accelerator, w->compute.topology, pools);
}

static int apply_cluster_facts(const cluster_facts *f, const gc_submit_request *r, gc_workload *w,
                               const gc_output *o, gc_error *err)
{
    if (f->kueue_version) {
        free(w->queue);
        w->queue = strdup(f->queue);
        w->queue_defaulted = false;
    }
    if (r->priority && !f->priority_found)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--priority %s: no such PriorityClass in the cluster (gcluster deploy "
                       "installs very-low, low, medium, high and very-high)",
                       w->priority);
    int rc = choose_head_pool(f, r, w, o, err);
    if (rc)
        return rc;
    check_cluster_queue(f, w, o);
    check_capacity(f, w, o);
    return 0;
}

/* The JobSet that already has this name: its age and status for the error message. */
static int name_taken(gc_kube *kube, const char *path, const gc_workload *w, gc_error *err)
{
    char *item = gc_xasprintf("%s/%s", path, w->name);
    json_t *existing = NULL;
    gc_error ignored = {0};
    char status[96] = "unknown status";
    char age[32] = "?";
    if (gc_kube_get(kube, item, NULL, &existing, &ignored) == 0) {
        gc_job_facts facts;
        gc_job_status st;
        gc_job_facts_from_jobset(existing, &facts);
        gc_job_status_derive(&facts, &st);
        snprintf(status, sizeof(status), "%s", st.text);
        gc_format_age(json_string_value(json_object_get(json_object_get(existing, "metadata"),
                                                        "creationTimestamp")),
                      age, sizeof(age));
    }
    json_decref(existing);
    free(item);
    return gc_fail(err, GC_EXIT_USAGE,
                   "a job named %s already exists in namespace %s (created %s ago, %s): cancel "
                   "it with gcluster job cancel %s, or choose another --name",
                   w->name, gc_kube_namespace(kube), age, status, w->name);
}

static int explain_create_failure(gc_kube *kube, const char *path, const gc_workload *w,
                                  gc_error *err)
{
    if (err->http_status == 409 && !strcmp(err->reason, "AlreadyExists"))
        return name_taken(kube, path, w, err);
    if (err->http_status == 404)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "the cluster does not serve JobSets (jobset.x-k8s.io/v1alpha2): install "
                       "JobSet >= 0.7 (gcluster deploy installs it with jobset.install: true)");
    if (strstr(err->message, "unknown field \"spec.coordinator\""))
        gc_error_prefix(err, "the cluster's JobSet is older than 0.6 (no spec.coordinator); "
                             "upgrade JobSet to >= 0.7: ");
    else if (strstr(err->message, "unknown field \"spec.failurePolicy.restartStrategy\""))
        gc_error_prefix(err, "the cluster's JobSet is older than 0.7 (no restartStrategy); "
                             "upgrade JobSet to >= 0.7: ");
    else
        gc_error_prefix(err, "the cluster rejected JobSet %s: ", w->name);
    return err->code;
}

static int create_jobset(gc_kube *kube, const gc_workload *w, bool dry_run, gc_error *err)
{
    char *path =
        gc_kube_path("jobset.x-k8s.io", "v1alpha2", gc_kube_namespace(kube), "jobsets", NULL);
    json_t *jobset = gc_workload_jobset(w);
    json_t *created = NULL;
    unsigned flags = GC_KUBE_STRICT | (dry_run ? GC_KUBE_DRY_RUN : 0);
    int rc = gc_kube_create(kube, path, jobset, flags, &created, err);
    if (rc)
        rc = explain_create_failure(kube, path, w, err);
    json_decref(created);
    json_decref(jobset);
    free(path);
    return rc;
}

static void print_created(gc_kube *kube, const gc_workload *w, bool dry_run, const gc_output *o)
{
    const char *ns = gc_kube_namespace(kube);
    const char *kind =
        w->pathways ? (w->headless ? "headless Pathways job" : "Pathways job") : "job";
    if (dry_run) {
        fprintf(o->out, "The cluster accepted %s %s (server dry run: nothing was created).\n", kind,
                w->name);
        return;
    }
    fprintf(o->out, "Created %s %s in namespace %s, queued on %s (%s x%d).\n", kind, w->name, ns,
            w->queue, w->compute.display, w->num_slices);
    fprintf(o->out, "  gcluster job inspect %s\n", w->name);
    if (w->headless) {
        fprintf(o->out, "  gcluster job logs %s -f                  # the IFRT proxy\n", w->name);
        fprintf(o->out,
                "  kubectl get pods -l jobset.sigs.k8s.io/jobset-name=%s,"
                "jobset.sigs.k8s.io/replicatedjob-name=pathways-head\n"
                "  kubectl port-forward <that pod> 29000:29000  # then "
                "JAX_BACKEND_TARGET=grpc://127.0.0.1:29000 JAX_PLATFORMS=proxy\n"
                "  gcluster job cancel %s                      # when you are done\n",
                w->name, w->name);
    } else {
        fprintf(o->out, "  gcluster job logs %s -f\n", w->name);
    }
}

/* --base-image: build and push before the JobSet names the image. The content tag makes this a
 * no-op when the same context was pushed before. */
static int push_image(const gc_submit_request *r, const gc_workload *w, const gc_output *o,
                      gc_error *err)
{
    gc_image_build build;
    int rc = gc_submit_image_build(r, &build, err);
    build.log = o->log;
    char *pushed = NULL;
    if (!rc)
        rc = gc_image_build_push(&build, &pushed, err);
    if (!rc && strcmp(pushed, w->image) != 0)
        rc =
            gc_fail(err, GC_EXIT_RUNTIME, "pushed %s, but the manifest names %s", pushed, w->image);
    free(pushed);
    free((char *)build.repository);
    return rc;
}

static int submit_prepared(gc_kube *kube, const gc_submit_request *r, const cluster_facts *f,
                           const gc_output *o, gc_error *err)
{
    gc_node_shape *shapes = gc_xcalloc(f->shape_count, sizeof(*shapes));
    gc_cluster_shapes cluster;
    job_cluster_facts_shapes(f, shapes, &cluster);
    gc_workload w;
    int rc = gc_submit_prepare(r, &cluster, &w, err);
    free(shapes);
    if (rc)
        return rc;
    rc = apply_cluster_facts(f, r, &w, o, err);
    bool dry_run = r->dry_run && !strcmp(r->dry_run, "server");
    if (!rc && r->base_image && !dry_run)
        rc = push_image(r, &w, o, err);
    if (!rc)
        rc = create_jobset(kube, &w, dry_run, err);
    if (!rc)
        print_created(kube, &w, dry_run, o);
    if (!rc && !dry_run && (r->await_completion || r->timeout))
        rc = gc_watch_job_to_end(kube, w.name, r->timeout, o, err);
    gc_workload_free(&w);
    return rc;
}

int gc_submit_check(const gc_submit_request *r, gc_error *err)
{
    gc_workload offline;
    int rc = gc_submit_prepare(r, NULL, &offline, err);
    if (!rc)
        gc_workload_free(&offline);
    else if (!strcmp(err->reason, GC_REASON_TOPOLOGY_REQUIRED))
        gc_error_clear(err), rc = 0;
    return rc;
}

int gc_submit_live(gc_kube *kube, const gc_submit_request *r, const gc_output *o, gc_error *err)
{
    int rc = gc_submit_check(r, err);
    if (rc)
        return rc;
    cluster_facts f;
    rc = job_cluster_facts_gather(kube, r, &f, err);
    if (!rc)
        rc = submit_prepared(kube, r, &f, o, err);
    job_cluster_facts_free(&f);
    return rc;
}
