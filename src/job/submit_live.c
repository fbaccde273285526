/*
 * `job submit` against a cluster, from a plan gc_submit_prepare made:
 *
 * 1. Gather the cluster's facts in one round trip (LocalQueues, ClusterQueues, node labels,
 *    PriorityClass).
 * 2. Refine the plan by them: the compute type against the real nodes (only when that can change
 *    it), the queue and the head pool discovered; errors for what would never run, warnings for
 *    what will wait (capacity) or needs fixing (quota).
 * 3. POST the JobSet once (fieldValidation=Strict). JobSet and version problems surface here
 *    for free: a 404 means no JobSet CRD, an unknown field means an older JobSet.
 * A happy path costs two round trips. gc_submit_await then follows the job to its end.
 */
#include "gcluster/buf.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "job/cluster_facts.h"
#include "job/watch_job.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct submit_run {
    gc_kube *kube;
    gc_submit_plan *plan;
    const gc_events *ev;
    gc_submit_result *result;
} submit_run;

/* A warning goes to the caller now and stays in the result. */
static void warn(submit_run *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(submit_run *s, const char *fmt, ...)
{
    gc_buf text;
    gc_buf_init(&text);
    va_list ap;
    va_start(ap, fmt);
    gc_buf_vprintf(&text, fmt, ap);
    va_end(ap);
    gc_strings_push(&s->result->warnings, text.data);
    gc_warn(s->ev, "%s", text.data);
    gc_buf_free(&text);
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
static void check_cluster_queue(submit_run *s, const cluster_facts *f)
{
    const gc_workload *w = &s->plan->workload;
    if (!f->kueue_version) {
        warn(s, "Kueue is not installed: the JobSet will start at once, without queueing or "
                "quota (install it with gcluster deploy)");
        return;
    }
    if (!f->cluster_queue_object) {
        warn(s,
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
        warn(s,
             "ClusterQueue %s does not cover google.com/tpu, cpu and memory in one resource "
             "group: Pathways worker pods request all three, so Kueue cannot admit this job; "
             "run gcluster deploy BLUEPRINT to install the Pathways Kueue configuration",
             f->cluster_queue);
    else
        warn(s, "ClusterQueue %s has no quota for %s: Kueue cannot admit this job",
             f->cluster_queue, accelerator ? accelerator : "cpu and memory");
}

/* --pathways-head-np, else cpu-np, else pathways-np. */
static int choose_head_pool(submit_run *s, const cluster_facts *f, gc_error *err)
{
    gc_workload *w = &s->plan->workload;
    if (!w->pathways)
        return 0;
    if (!w->head_pool_defaulted) {
        if (!job_cluster_facts_pool_nodes(f, w->head_pool))
            warn(s,
                 "node pool %s has no nodes now: the head pod waits until the autoscaler "
                 "adds one",
                 w->head_pool);
        return 0;
    }
    const char *pools[] = {"cpu-np", "pathways-np"};
    for (size_t i = 0; i < 2; i++) {
        if (job_cluster_facts_pool_nodes(f, pools[i])) {
            free(w->head_pool);
            w->head_pool = gc_xstrdup(pools[i]);
            w->head_pool_defaulted = false;
            return 0;
        }
    }
    return gc_fail(err, GC_EXIT_USAGE,
                   "no node pool for the Pathways head: the cluster has no nodes in cpu-np or "
                   "pathways-np; create the pool with gcluster deploy BLUEPRINT, or name a CPU "
                   "pool (also one scaled to zero) with --pathways-head-np");
}

static void check_capacity(submit_run *s, const cluster_facts *f)
{
    const gc_workload *w = &s->plan->workload;
    if (w->compute.kind != GC_ACCEL_TPU)
        return;
    int hosts = 0, pools = 0;
    for (size_t i = 0; i < f->shape_count; i++) {
        const node_shape *shape = &f->shapes[i];
        if (!strcmp(shape->accelerator, w->compute.accelerator) &&
            !strcmp(shape->topology, w->compute.topology)) {
            hosts += shape->count;
            pools++;
        }
    }
    int needed = w->compute.vms_per_slice * w->num_slices;
    if (hosts < needed)
        warn(s,
             "the cluster has %d %s host%s with topology %s, and this job needs %d (%d "
             "slice%s x %d): it will wait for capacity",
             hosts, w->compute.accelerator, hosts == 1 ? "" : "s", w->compute.topology, needed,
             w->num_slices, w->num_slices == 1 ? "" : "s", w->compute.vms_per_slice);
    else if (pools < w->num_slices)
        warn(s,
             "%d slices need %d node pools of %s %s (one slice per pool), the cluster has %d: "
             "it will wait for capacity",
             w->num_slices, w->num_slices, w->compute.accelerator, w->compute.topology, pools);
}

/* The compute type against the nodes the cluster has, when they can change it. */
static int refine_compute(gc_submit_plan *plan, const cluster_facts *f, gc_error *err)
{
    gc_node_shape *shapes = gc_xcalloc(f->shape_count ? f->shape_count : 1, sizeof(*shapes));
    gc_cluster_shapes cluster;
    job_cluster_facts_shapes(f, shapes, &cluster);
    int rc = gc_submit_refine(plan, &cluster, err);
    free(shapes);
    return rc;
}

static int apply_cluster_facts(submit_run *s, const cluster_facts *f, gc_error *err)
{
    gc_workload *w = &s->plan->workload;
    int rc = refine_compute(s->plan, f, err);
    if (rc)
        return rc;
    if (f->kueue_version) {
        free(w->queue);
        w->queue = gc_xstrdup(f->queue);
        w->queue_defaulted = false;
    }
    if (w->priority && !f->priority_found)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--priority %s: no such PriorityClass in the cluster (gcluster deploy "
                       "installs very-low, low, medium, high and very-high)",
                       w->priority);
    rc = choose_head_pool(s, f, err);
    if (rc)
        return rc;
    check_cluster_queue(s, f);
    check_capacity(s, f);
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
                      (long long)time(NULL), age, sizeof(age));
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

static int create_jobset(gc_kube *kube, const gc_submit_plan *plan, gc_error *err)
{
    const gc_workload *w = &plan->workload;
    char *path =
        gc_kube_path("jobset.x-k8s.io", "v1alpha2", gc_kube_namespace(kube), "jobsets", NULL);
    json_t *jobset;
    unsigned flags =
        GC_KUBE_STRICT | (plan->mode == GC_SUBMIT_SERVER_DRY_RUN ? GC_KUBE_DRY_RUN : 0);
    int rc = gc_workload_jobset(w, &jobset, err);
    if (!rc && (rc = gc_kube_create(kube, path, jobset, flags, NULL, err)) != 0)
        rc = explain_create_failure(kube, path, w, err);
    json_decref(jobset);
    free(path);
    return rc;
}

/* --base-image: build and push before the JobSet names the image. The content tag makes this a
 * no-op when the same context was pushed before. */
static int push_image(const gc_submit_plan *plan, const gc_events *ev, gc_error *err)
{
    gc_image_build build = plan->image_build;
    build.events = ev;
    char *pushed = NULL;
    int rc = gc_image_build_push(&build, &pushed, err);
    if (!rc && strcmp(pushed, plan->workload.image) != 0)
        rc = gc_fail(err, GC_EXIT_RUNTIME, "pushed %s, but the manifest names %s", pushed,
                     plan->workload.image);
    free(pushed);
    return rc;
}

static void add_next(gc_submit_result *r, const char *note, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void add_next(gc_submit_result *r, const char *note, const char *fmt, ...)
{
    gc_buf command;
    gc_buf_init(&command);
    va_list ap;
    va_start(ap, fmt);
    gc_buf_vprintf(&command, fmt, ap);
    va_end(ap);
    r->next = gc_xrealloc(r->next, (r->next_count + 1) * sizeof(*r->next));
    r->next[r->next_count++] =
        (gc_next_step){.command = gc_buf_detach(&command), .note = note ? gc_xstrdup(note) : NULL};
}

/* The commands that follow a job; a headless job is reached through its head pod. */
static void add_next_steps(gc_submit_result *r, const gc_workload *w)
{
    add_next(r, NULL, "gcluster job inspect %s", w->name);
    if (!w->headless) {
        add_next(r, NULL, "gcluster job logs %s -f", w->name);
        return;
    }
    add_next(r, "the IFRT proxy", "gcluster job logs %s -f", w->name);
    add_next(r, NULL,
             "kubectl get pods -l jobset.sigs.k8s.io/jobset-name=%s,"
             "jobset.sigs.k8s.io/replicatedjob-name=pathways-head",
             w->name);
    add_next(r, "then JAX_BACKEND_TARGET=grpc://127.0.0.1:29000 JAX_PLATFORMS=proxy", "%s",
             "kubectl port-forward <that pod> 29000:29000");
    add_next(r, "when you are done", "gcluster job cancel %s", w->name);
}

static void fill_result(gc_kube *kube, const gc_submit_plan *plan, gc_submit_result *r)
{
    const gc_workload *w = &plan->workload;
    r->name = gc_xstrdup(w->name);
    r->ns = gc_xstrdup(gc_kube_namespace(kube));
    r->queue = gc_xstrdup(w->queue);
    r->compute = gc_xstrdup(w->compute.display);
    r->num_slices = w->num_slices;
    r->pathways = !w->pathways  ? GC_PATHWAYS_NONE
                  : w->headless ? GC_PATHWAYS_HEADLESS
                                : GC_PATHWAYS_FULL;
    r->head_pool = w->pathways ? gc_xstrdup(w->head_pool) : NULL;
    r->image = w->image ? gc_xstrdup(w->image) : NULL;
    r->dry_run = plan->mode == GC_SUBMIT_SERVER_DRY_RUN;
    if (!r->dry_run)
        add_next_steps(r, w);
}

int gc_submit_live(gc_kube *kube, gc_submit_plan *plan, const gc_events *ev,
                   gc_submit_result *result, gc_error *err)
{
    memset(result, 0, sizeof(*result));
    submit_run s = {.kube = kube, .plan = plan, .ev = ev, .result = result};
    cluster_facts f;
    int rc = job_cluster_facts_gather(kube, &plan->workload, &f, err);
    if (!rc)
        rc = apply_cluster_facts(&s, &f, err);
    job_cluster_facts_free(&f);
    if (!rc && plan->build_image && plan->mode == GC_SUBMIT_CREATE)
        rc = push_image(plan, ev, err);
    if (!rc)
        rc = create_jobset(kube, plan, err);
    if (!rc)
        fill_result(kube, plan, result);
    return rc;
}

int gc_submit_await(gc_kube *kube, const gc_submit_plan *plan, const gc_events *ev,
                    gc_submit_result *result, gc_error *err)
{
    result->awaited = true;
    return job_watch_to_end(kube, plan->workload.name, plan->timeout_seconds, ev, &result->final,
                            err);
}

void gc_submit_result_free(gc_submit_result *r)
{
    free(r->name);
    free(r->ns);
    free(r->queue);
    free(r->compute);
    free(r->head_pool);
    free(r->image);
    gc_strings_free(&r->warnings);
    for (size_t i = 0; i < r->next_count; i++) {
        free(r->next[i].command);
        free(r->next[i].note);
    }
    free(r->next);
    memset(r, 0, sizeof(*r));
}
