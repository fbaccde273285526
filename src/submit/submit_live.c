/*
 * `job submit` against a cluster, from a plan gc_submit_prepare made:
 *
 * 1. Gather the cluster's facts in one round trip: every read the checks that apply declare in
 *    the table below (JobSet's API group, LocalQueues, ClusterQueues, ResourceFlavors,
 *    PriorityClass, the namespace, the labels of the nodes the job needs: of the workers' shape
 *    and of the head pool, by label selector, so the reads grow with the job, not with the
 *    cluster; and what multi-tier checkpointing or dynamic slicing need, for a job that uses
 *    them, and the StorageClasses of profile= mounts' gateways and the gateways themselves).
 * 2. Run the checks in the table's order. The first stops the submit when the cluster lacks
 *    JobSet or Kueue (the result says which; the caller installs them and submits again), so
 *    a cluster that has them pays no round trip of its own for that. Those before the JobSet
 *    refine the plan: the compute type against the real nodes (only when that can change it),
 *    the queue and the head pool discovered, and what the TPU workers request, which follows
 *    the ClusterQueue's resource groups. Those after check the JobSet as Kueue would admit it
 *    and what its features need: errors for what would never run, warnings for what will wait
 *    (capacity, pools scaling from zero).
 * 3. Have the API server validate the Jobs the JobSet controller will create and the gateways to
 *    create (one batch of server-side dry runs): it validates only the JobSet's own schema when
 *    the JobSet is created, and a bad Job or pod template would otherwise fail in the controller
 *    after submit.
 * 4. POST the JobSet once (fieldValidation=Strict), together with the gateways not there yet.
 *    JobSet and version problems surface here for free: a 404 means no JobSet CRD, an unknown
 *    field means an older JobSet. A server dry run sends the JobSet's dry run with the Jobs'
 *    instead (step 3), and ends there.
 * A happy path costs three round trips. gc_submit_await then follows the job to its end.
 */
#include "gcluster/buf.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/submit.h"
#include "gcluster/sys.h"
#include "submit/cluster_facts.h"
#include "submit/submit_checks.h"
#include "submit/submit_compute.h"

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
    json_t *jobset;      /* built between the table's two parts */
    json_t *gateways;    /* the gateway objects to create (not there yet) */
    bool jobs_unchecked; /* the user may not create Jobs: their dry runs were skipped */
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

/* A queue Kueue admits nothing from (missing, inactive) is an error: the job would wait
 * forever. A queue stopped by its stopPolicy is not: an administrator paused it and resumes it
 * by hand, and the job is admitted then, so that is a warning with the command that resumes it.
 * What cannot be read is said, and not checked. */
static int check_cluster_queue(submit_run *s, cluster_facts *f, gc_error *err)
{
    if (!f->kueue_version) {
        warn(s, "Kueue is not installed: the JobSet will start at once, without queueing or "
                "quota (install it with gcluster deploy)");
        return 0;
    }
    if (f->cluster_queue_forbidden || (f->cluster_queue_object && !f->flavors)) {
        warn(s,
             "you may not read ClusterQueue %s or the ResourceFlavors: whether Kueue can admit "
             "this job was not checked",
             f->cluster_queue);
        if (f->cluster_queue_forbidden)
            return 0;
    }
    if (!f->cluster_queue_object)
        return gc_fail(err, GC_EXIT_USAGE,
                       "LocalQueue %s points to ClusterQueue \"%s\", which does not exist, so "
                       "Kueue would never admit this job; create it with gcluster deploy "
                       "BLUEPRINT, or submit to another --queue",
                       f->queue, f->cluster_queue);
    const json_t *objects[] = {f->cluster_queue_object, f->local_queue};
    const char *kinds[] = {"ClusterQueue", "LocalQueue"};
    const char *names[] = {f->cluster_queue, f->queue};
    const char *patch_targets[] = {"clusterqueue", "localqueue"};
    for (size_t i = 0; i < 2; i++) {
        const json_t *active = gc_kube_condition(objects[i], "Active");
        const char *status = gc_kube_string(active, "status");
        if (!status || strcmp(status, "False") != 0)
            continue;
        const char *reason = gc_kube_string(active, "reason");
        /* A LocalQueue is inactive when its ClusterQueue is: the ClusterQueue said why. */
        if (i == 1 && reason && !strcmp(reason, "ClusterQueueIsInactive"))
            continue;
        if (reason && !strcmp(reason, "Stopped")) {
            const char *message = gc_kube_string(active, "message");
            warn(s,
                 "%s %s is stopped (%s): the job waits in its queue until the queue is resumed: "
                 "kubectl patch %s %s%s%s --type=merge -p '{\"spec\":{\"stopPolicy\":\"None\"}}'",
                 kinds[i], names[i], message ? message : "stopPolicy", patch_targets[i], names[i],
                 i == 1 ? " -n " : "", i == 1 ? gc_kube_namespace(s->kube) : "");
            continue;
        }
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s %s is inactive (%s: %s), so Kueue would never admit this job; fix it "
                       "(gcluster deploy BLUEPRINT configures a working queue), or submit to "
                       "another --queue",
                       kinds[i], names[i], gc_kube_string(active, "reason"),
                       gc_kube_string(active, "message"));
    }
    return 0;
}

/* With cpu and memory in a resource group apart from google.com/tpu, Kueue would charge the
 * workers' cpu and memory to that group's flavor, whose node labels (the head pool's) it adds
 * to the workers: they would never be scheduled. So they ask for google.com/tpu alone, as xpk's
 * workers do, and the result says why. */
static int adapt_tpu_requests(submit_run *s, cluster_facts *f, gc_error *err)
{
    gc_workload *w = &s->plan->workload;
    if (!f->cluster_queue_object)
        return 0;
    gc_buf why;
    gc_buf_init(&why);
    bool splits = submit_queue_splits_tpu(f, &why);
    int rc = 0;
    if (splits && w->numa_affinity)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--cpu-affinity numa makes the TPU pods request cpu and memory, but %s, "
                     "away from the TPU hosts; drop --cpu-affinity, or submit to a --queue whose "
                     "one resource group covers google.com/tpu, cpu and memory (gcluster deploy "
                     "BLUEPRINT configures one)",
                     why.data);
    else if (splits && w->pathways) {
        w->tpu_only_requests = true;
        s->result->tpu_requests_note =
            gc_xasprintf("the workers request only google.com/tpu: %s", why.data);
        gc_notice(s->ev, "%s", s->result->tpu_requests_note);
    }
    gc_buf_free(&why);
    return rc;
}

/* --pathways-head-np, else cpu-np, else pathways-np. */
static int choose_head_pool(submit_run *s, cluster_facts *f, gc_error *err)
{
    gc_workload *w = &s->plan->workload;
    if (!w->head_pool_defaulted) {
        if (!submit_cluster_facts_pool_nodes(f, w->head_pool))
            warn(s,
                 "node pool %s has no nodes now: the head pod waits until the autoscaler "
                 "adds one",
                 w->head_pool);
        return 0;
    }
    const char *pools[] = {"cpu-np", "pathways-np"};
    for (size_t i = 0; i < 2; i++) {
        if (submit_cluster_facts_pool_nodes(f, pools[i])) {
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

static int check_capacity(submit_run *s, cluster_facts *f, gc_error *err)
{
    (void)err;
    const gc_workload *w = &s->plan->workload;
    int hosts = 0, pools = 0;
    /* Dynamic slices are formed from any hosts of the accelerator, several in one pool. */
    for (size_t i = 0; i < f->shape_count; i++) {
        const node_shape *shape = &f->shapes[i];
        if (!strcmp(shape->accelerator, w->compute.accelerator) &&
            (w->dynamic_slicing || !strcmp(shape->topology, w->compute.topology))) {
            hosts += shape->count;
            pools++;
        }
    }
    int needed = w->compute.vms_per_slice * w->num_slices;
    if (hosts < needed)
        warn(s,
             "the cluster has %d %s host%s%s%s, and this job needs %d (%d slice%s x %d): it will "
             "wait for capacity",
             hosts, w->compute.accelerator, hosts == 1 ? "" : "s",
             w->dynamic_slicing ? "" : " with topology ",
             w->dynamic_slicing ? "" : w->compute.topology, needed, w->num_slices,
             w->num_slices == 1 ? "" : "s", w->compute.vms_per_slice);
    else if (pools < w->num_slices && !w->dynamic_slicing)
        warn(s,
             "%d slices need %d node pools of %s %s (one slice per pool), the cluster has %d: "
             "it will wait for capacity",
             w->num_slices, w->num_slices, w->compute.accelerator, w->compute.topology, pools);
    return 0;
}

/* The compute type against the nodes the cluster has, when they can change it. */
static int refine_compute(submit_run *s, cluster_facts *f, gc_error *err)
{
    gc_submit_plan *plan = s->plan;
    gc_node_shape *shapes = gc_xcalloc(f->shape_count ? f->shape_count : 1, sizeof(*shapes));
    gc_cluster_shapes cluster;
    submit_cluster_facts_shapes(f, shapes, &cluster);
    int rc = submit_refine(plan, &cluster, err);
    free(shapes);
    return rc;
}

/* The queue the facts found (the one asked for, or the namespace's default). */
static int take_queue(submit_run *s, cluster_facts *f, gc_error *err)
{
    (void)err;
    gc_workload *w = &s->plan->workload;
    if (f->kueue_version) {
        free(w->queue);
        w->queue = gc_xstrdup(f->queue);
        w->queue_defaulted = false;
    }
    return 0;
}

/* JobSet and Kueue, which the job needs (JobSet not for a job run without it): when the
 * cluster lacks one, the submit stops here, before anything is refined or created, and the
 * result says which; the caller installs them and submits again. A cluster whose Kueue serves
 * no LocalQueue list at any version has no Kueue. */
static int check_installed(submit_run *s, cluster_facts *f, gc_error *err)
{
    (void)err;
    s->result->jobset_missing = f->jobset_missing && !submit_jobset_disabled();
    s->result->kueue_missing = !f->kueue_version;
    return 0;
}

static bool stopped(const submit_run *s)
{
    return s->result->jobset_missing || s->result->kueue_missing;
}

static int check_priority(submit_run *s, cluster_facts *f, gc_error *err)
{
    const gc_workload *w = &s->plan->workload;
    if (!f->priority_found)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--priority %s: no such PriorityClass in the cluster (gcluster deploy "
                       "installs very-low, low, medium, high and very-high)",
                       w->priority);
    return 0;
}

/* The JobSet that already has this name, as the create found it (NULL: read it now): its age
 * and status for the error message. */
static int name_taken(gc_kube *kube, const char *path, const json_t *existing, const gc_workload *w,
                      gc_error *err)
{
    json_t *read = NULL;
    if (!existing) {
        char *item = gc_xasprintf("%s/%s", path, w->name);
        gc_error ignored = {0};
        if (gc_kube_get(kube, item, NULL, &read, &ignored) == 0)
            existing = read;
        free(item);
    }
    char status[96] = "unknown status";
    char age[32] = "?";
    if (existing) {
        gc_job_facts facts;
        gc_job_status st;
        gc_job_facts_from_jobset(existing, &facts);
        gc_job_status_derive(&facts, &st);
        snprintf(status, sizeof(status), "%s", st.text);
        gc_clock_format_age(gc_kube_field(existing, NULL, "creationTimestamp"),
                            (long long)time(NULL), age, sizeof(age));
    }
    json_decref(read);
    return gc_fail(err, GC_EXIT_USAGE,
                   "a job named %s already exists in namespace %s (created %s ago, %s): cancel "
                   "it with gcluster job cancel %s, or choose another --name",
                   w->name, gc_kube_namespace(kube), age, status, w->name);
}

static int explain_create_failure(gc_kube *kube, const char *path, const json_t *existing,
                                  const gc_workload *w, gc_error *err)
{
    if (err->http_status == 409 && !strcmp(err->reason, "AlreadyExists"))
        return name_taken(kube, path, existing, w, err);
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

static char *jobsets_path(gc_kube *kube)
{
    return gc_kube_path("jobset.x-k8s.io", "v1alpha2", gc_kube_namespace(kube), "jobsets", NULL);
}

/* A child Job the API server refused: an error naming the flags that set the rejected fields.
 * A user who may create JobSets but not Jobs (the controller creates them) gets a warning. */
static int explain_child_failure(submit_run *s, const json_t *job, gc_error *err)
{
    const gc_workload *w = &s->plan->workload;
    const char *role = gc_kube_string(json_object_get(json_object_get(job, "metadata"), "labels"),
                                      "jobset.sigs.k8s.io/replicatedjob-name");
    if (err->http_status == 409 && !strcmp(err->reason, "AlreadyExists")) {
        char *path = jobsets_path(s->kube);
        int rc = name_taken(s->kube, path, NULL, w, err);
        free(path);
        return rc;
    }
    if (err->http_status == 403 && strstr(err->message, "cannot create resource")) {
        if (!s->jobs_unchecked)
            warn(s,
                 "you may not create Jobs in namespace %s, so the Jobs of this JobSet were not "
                 "checked with a server-side dry run",
                 gc_kube_namespace(s->kube));
        s->jobs_unchecked = true;
        gc_error_clear(err);
        return 0;
    }
    if (err->http_status != 400 && err->http_status != 403 && err->http_status != 422)
        return err->code;
    gc_buf flags;
    gc_buf_init(&flags);
    submit_rejected_flags(err->message, job, w, &flags);
    gc_error rejected = *err;
    gc_fail(err, GC_EXIT_USAGE,
            "the JobSet controller could not create the Job of %s, so the job could never start "
            "(found by a server-side dry run; nothing was created): %s%s%s%s",
            gc_job_role_words(role), rejected.message, flags.len ? " (set by " : "", flags.data,
            flags.len ? ")" : "");
    gc_buf_free(&flags);
    return GC_EXIT_USAGE;
}

/* One batch of server-side dry runs: for --dry-run=server, the JobSet itself (first, so its own
 * errors are told first); the gateway objects to create; the Jobs the JobSet controller will
 * create. A bad gateway is refused here, before anything is created. */
static int dry_run(submit_run *s, json_t *jobset, gc_error *err)
{
    const char *ns = gc_kube_namespace(s->kube);
    size_t whole = s->plan->mode == GC_SUBMIT_SERVER_DRY_RUN;
    size_t gateways = json_array_size(s->gateways);
    json_t *jobs = submit_child_jobs(jobset, ns);
    size_t n = whole + gateways + json_array_size(jobs);
    gc_kube_read *reads = gc_xcalloc(n, sizeof(*reads));
    char **paths = gc_xcalloc(gateways + 1, sizeof(*paths));
    char *jobs_path = gc_kube_path("batch", "v1", ns, "jobs", NULL);
    char *jobsets = jobsets_path(s->kube);
    if (whole)
        reads[0] = (gc_kube_read){.path = jobsets, .dry_run = jobset};
    for (size_t i = 0; i < gateways; i++) {
        const json_t *gateway = json_array_get(s->gateways, i);
        paths[i] = submit_gateway_collection(gateway, ns);
        reads[whole + i] = (gc_kube_read){.path = paths[i], .dry_run = gateway};
    }
    for (size_t i = whole + gateways; i < n; i++)
        reads[i] = (gc_kube_read){.path = jobs_path,
                                  .dry_run = json_array_get(jobs, i - whole - gateways)};
    gc_kube_read_all(s->kube, reads, n);
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        if (!reads[i].rc)
            continue;
        *err = reads[i].err;
        if (i < whole)
            rc = explain_create_failure(s->kube, jobsets, NULL, &s->plan->workload, err);
        else if (i < whole + gateways)
            rc = submit_gateway_dry_run_failure(reads[i].dry_run, err);
        else
            rc = explain_child_failure(s, reads[i].dry_run, err);
    }
    for (size_t i = 0; i < gateways; i++)
        free(paths[i]);
    free(paths);
    free(jobsets);
    free(jobs_path);
    free(reads);
    json_decref(jobs);
    return rc;
}

/* The last round trip: the gateways not there yet and the JobSet, created together. A gateway
 * that fails is told first (the JobSet's pods would wait for it), with whether the JobSet was
 * created; a JobSet that fails leaves the gateways created with it, which the next submit
 * reuses (gateways.c says why that holds). Without JobSet (GCLUSTER_DISABLE_JOBSET, or a
 * cluster that serves none for a job that fits), the Indexed Job follows the gateways. */
static int create_all(submit_run *s, gc_error *err)
{
    const gc_workload *w = &s->plan->workload;
    const char *ns = gc_kube_namespace(s->kube);
    size_t gateways = json_array_size(s->gateways);
    bool with_jobset = !submit_jobset_disabled();
    size_t n = gateways + with_jobset;
    gc_kube_create_request *creates = gc_xcalloc(n + 1, sizeof(*creates));
    char **paths = gc_xcalloc(n + 1, sizeof(*paths));
    json_t *answer = NULL; /* the created JobSet, or the one that has the name already */
    for (size_t i = 0; i < gateways; i++) {
        const json_t *gateway = json_array_get(s->gateways, i);
        paths[i] = submit_gateway_collection(gateway, ns);
        creates[i] = (gc_kube_create_request){
            .collection = paths[i], .object = gateway, .flags = GC_KUBE_STRICT};
    }
    if (with_jobset) {
        paths[gateways] = jobsets_path(s->kube);
        creates[gateways] = (gc_kube_create_request){.collection = paths[gateways],
                                                     .object = s->jobset,
                                                     .flags = GC_KUBE_STRICT,
                                                     .out = &answer};
    }
    gc_kube_create_all(s->kube, creates, n);
    gc_kube_create_request *job = with_jobset ? &creates[gateways] : NULL;
    int rc = submit_gateways_created(s->gateways, creates, w->name, job && !job->rc, s->ev, err);
    /* No JobSet API: a job that fits runs without it. */
    bool indexed =
        !job || (job->rc && job->err.http_status == 404 && gc_workload_fits_indexed_job(w));
    if (!rc && indexed) {
        rc = submit_indexed_job(s->kube, s->plan, false, s->ev, err);
    } else if (!rc && job->rc) {
        *err = job->err;
        rc = explain_create_failure(s->kube, paths[gateways], answer, w, err);
    }
    json_decref(answer);
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    free(creates);
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
    if (w->sps) {
        add_next(r, "the resource manager", "gcluster job logs %s -f", w->name);
        add_next(r, "a client with its own proxy",
                 "gcluster job submit --pathways-run-sps-workload --pathways-service %s "
                 "--command CMD",
                 w->name);
        add_next(r, "when every client is done", "gcluster job cancel %s", w->name);
        return;
    }
    if (!w->headless) {
        add_next(r, NULL, "gcluster job logs %s -f", w->name);
        return;
    }
    add_next(r, "the IFRT proxy", "gcluster job logs %s -f", w->name);
    add_next(r,
             "JAX_PLATFORMS=proxy JAX_BACKEND_TARGET=grpc://127.0.0.1:29000 (or -- python3 "
             "your_program.py)",
             "gcluster job connect %s", w->name);
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
                  : w->sps      ? GC_PATHWAYS_SPS
                  : w->headless ? GC_PATHWAYS_HEADLESS
                                : GC_PATHWAYS_FULL;
    r->head_pool = w->pathways ? gc_xstrdup(w->head_pool) : NULL;
    r->image = w->image ? gc_xstrdup(w->image) : NULL;
    r->dry_run = plan->mode == GC_SUBMIT_SERVER_DRY_RUN;
    if (!r->dry_run)
        add_next_steps(r, w);
}

/* A check's warnings go to the caller now and stay in the result. */
static int warned(submit_run *s, gc_strings *warnings, int rc)
{
    for (size_t i = 0; i < warnings->count; i++)
        warn(s, "%s", warnings->items[i]);
    gc_strings_free(warnings);
    return rc;
}

/* Multi-tier checkpointing and dynamic slicing need more of the cluster than JobSet and Kueue. */
static int check_mtc(submit_run *s, cluster_facts *f, gc_error *err)
{
    gc_strings warnings = {0};
    return warned(s, &warnings, submit_check_mtc(s->plan, f, &warnings, err));
}

static int check_slicing(submit_run *s, cluster_facts *f, gc_error *err)
{
    gc_strings warnings = {0};
    return warned(s, &warnings, submit_check_slicing(s->plan, f, &warnings, err));
}

static int check_queue_fit(submit_run *s, cluster_facts *f, gc_error *err)
{
    return submit_queue_fit(f, s->jobset, &s->plan->workload, err);
}

static int check_gateways(submit_run *s, cluster_facts *f, gc_error *err)
{
    return submit_gateways_check(s->plan, f, err);
}

/* The gateways there already are reused, the others created in the last round. */
static int settle_gateways(submit_run *s, cluster_facts *f, gc_error *err)
{
    return submit_gateways_settle(s->kube, s->plan, f, s->plan->mode != GC_SUBMIT_CREATE, s->ev,
                                  s->gateways, err);
}

static bool is_pathways(const gc_submit_plan *p)
{
    return p->workload.pathways;
}

static bool is_tpu(const gc_submit_plan *p)
{
    return p->workload.compute.kind == GC_ACCEL_TPU;
}

static bool has_priority(const gc_submit_plan *p)
{
    return p->workload.priority != NULL;
}

/* profile= mounts, whose gateways submit_gateways_name named before the reads are declared. */
static bool has_gateways(const gc_submit_plan *p)
{
    return json_array_size(p->gateways) > 0;
}

static bool uses_mtc(const gc_submit_plan *p)
{
    return p->workload.mtc;
}

static bool uses_dynamic_slicing(const gc_submit_plan *p)
{
    return p->workload.dynamic_slicing;
}

/* How a check is run: PREREQ checks are skipped by --skip-prereqs (their reads are not made;
 * `skipped`, when set, is the warning that says so); AFTER_JOBSET checks look at the JobSet,
 * built once those before it have refined the plan. */
enum { PREREQ = 1 << 0, AFTER_JOBSET = 1 << 1 };

typedef struct submit_check {
    const char *name;
    unsigned reads; /* SUBMIT_READ_*: what it reads of the cluster, gathered in the first round */
    unsigned flags;
    bool (*applies)(const gc_submit_plan *plan); /* NULL: every submit */
    int (*run)(submit_run *s, cluster_facts *f, gc_error *err);
    const char *skipped;
} submit_check;

/* The checks of a connected submit, in the order they run (and their errors are told). */
static const submit_check checks[] = {
    {"JobSet and Kueue", SUBMIT_READ_JOBSET_API | SUBMIT_READ_QUEUES, PREREQ, NULL, check_installed,
     NULL},
    {"compute type", SUBMIT_READ_NODES, 0, NULL, refine_compute, NULL},
    {"queue", SUBMIT_READ_QUEUES | SUBMIT_READ_NAMESPACE, 0, NULL, take_queue, NULL},
    {"PriorityClass", SUBMIT_READ_PRIORITY, PREREQ, has_priority, check_priority, NULL},
    {"head pool", SUBMIT_READ_NODES, 0, is_pathways, choose_head_pool, NULL},
    {"ClusterQueue", SUBMIT_READ_QUEUES, PREREQ, NULL, check_cluster_queue, NULL},
    {"TPU requests", SUBMIT_READ_QUEUES, 0, is_tpu, adapt_tpu_requests, NULL},
    {"capacity", SUBMIT_READ_NODES, PREREQ, is_tpu, check_capacity, NULL},
    {"queue fit", SUBMIT_READ_QUEUES | SUBMIT_READ_NODES, PREREQ | AFTER_JOBSET, NULL,
     check_queue_fit, NULL},
    {"gateway StorageClasses", SUBMIT_READ_STORAGE_CLASSES, PREREQ | AFTER_JOBSET, has_gateways,
     check_gateways, NULL},
    {"multi-tier checkpointing", SUBMIT_READ_MTC, PREREQ | AFTER_JOBSET, uses_mtc, check_mtc,
     "--skip-prereqs: whether the cluster has multi-tier checkpointing was not checked"},
    {"dynamic slicing", SUBMIT_READ_SLICING, PREREQ | AFTER_JOBSET, uses_dynamic_slicing,
     check_slicing,
     "--skip-prereqs: whether the cluster has TPU7x dynamic slicing was not checked"},
    /* Not a prerequisite: what it finds says what the last round creates. Last, so a Released
     * volume is made anew only once every check has passed. */
    {"gateways", SUBMIT_READ_GATEWAYS, AFTER_JOBSET, has_gateways, settle_gateways, NULL},
};

static bool check_applies(const submit_check *c, const gc_submit_plan *plan)
{
    return !c->applies || c->applies(plan);
}

/* Every read the checks that will run declare: the first round trip. */
static unsigned declared_reads(const gc_submit_plan *plan)
{
    unsigned reads = 0;
    for (size_t i = 0; i < sizeof(checks) / sizeof(*checks); i++)
        if (check_applies(&checks[i], plan) && !(plan->skip_prereqs && (checks[i].flags & PREREQ)))
            reads |= checks[i].reads;
    return reads;
}

/* The checks of one side of the JobSet's building, in order; the first error ends them. */
static int run_checks(submit_run *s, cluster_facts *f, unsigned after_jobset, gc_error *err)
{
    for (size_t i = 0; i < sizeof(checks) / sizeof(*checks); i++) {
        const submit_check *c = &checks[i];
        if ((c->flags & AFTER_JOBSET) != after_jobset || !check_applies(c, s->plan))
            continue;
        if (s->plan->skip_prereqs && (c->flags & PREREQ)) {
            if (c->skipped)
                warn(s, "%s", c->skipped);
            continue;
        }
        int rc = c->run(s, f, err);
        if (rc || stopped(s))
            return rc;
    }
    return 0;
}

int gc_submit_live(gc_kube *kube, gc_submit_plan *plan, const gc_events *ev,
                   gc_submit_result *result, gc_error *err)
{
    memset(result, 0, sizeof(*result));
    submit_run s = {
        .kube = kube, .plan = plan, .ev = ev, .result = result, .gateways = json_array()};
    cluster_facts f;
    memset(&f, 0, sizeof(f));
    int rc = submit_gateways_name(kube, plan, err);
    if (!rc)
        rc = submit_cluster_facts_gather(kube, plan, declared_reads(plan), &f, err);
    if (!rc)
        rc = run_checks(&s, &f, 0, err);
    if (!rc && stopped(&s)) {
        submit_cluster_facts_free(&f);
        json_decref(s.gateways);
        return 0;
    }
    if (!rc)
        rc = gc_submit_plan_jobset(plan, &s.jobset, err);
    if (!rc)
        rc = run_checks(&s, &f, AFTER_JOBSET, err);
    submit_cluster_facts_free(&f);
    /* A server dry run is what was asked for, prerequisites or not; otherwise the Jobs' dry
     * runs are a prerequisite check. */
    if (!rc && (!plan->skip_prereqs || plan->mode == GC_SUBMIT_SERVER_DRY_RUN))
        rc = dry_run(&s, s.jobset, err);
    if (!rc && plan->build_image && plan->mode == GC_SUBMIT_CREATE)
        rc = push_image(plan, ev, err);
    if (!rc && plan->mode == GC_SUBMIT_CREATE)
        rc = create_all(&s, err);
    if (!rc)
        fill_result(kube, plan, result);
    json_decref(s.jobset);
    json_decref(s.gateways);
    return rc;
}

int gc_submit_await(gc_kube *kube, const gc_submit_plan *plan, const gc_events *ev,
                    gc_submit_result *result, gc_error *err)
{
    result->awaited = true;
    return gc_job_watch_to_end(kube, plan->workload.name, plan->timeout_seconds, ev, &result->final,
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
    free(r->tpu_requests_note);
    gc_strings_free(&r->warnings);
    for (size_t i = 0; i < r->next_count; i++) {
        free(r->next[i].command);
        free(r->next[i].note);
    }
    free(r->next);
    memset(r, 0, sizeof(*r));
}
