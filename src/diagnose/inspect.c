/*
 * `job inspect`: everything about one job, as a report: what `job why` reads first (the
 * JobSet, its pods, child Jobs and Warning events in one round trip, then its Kueue Workload;
 * see why.c), laid out, with the job's diagnosis on top.
 */
#include "diagnose/why.h"
#include "gcluster/buf.h"
#include "gcluster/checked.h"
#include "gcluster/diagnose.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *string_at(const json_t *object, const char *key)
{
    return json_string_value(json_object_get(object, key));
}

static long long_at(const json_t *object, const char *key)
{
    return (long)json_integer_value(json_object_get(object, key));
}

static void report_overview(gc_inspect_report *r, const diagnose_why_inputs *d,
                            const gc_job_facts *f)
{
    char compute[96];
    const json_t *policy = json_object_get(json_object_get(d->jobset, "spec"), "failurePolicy");
    r->name = gc_job_strdup_or_null(gc_kube_field(d->jobset, NULL, "name"));
    r->ns = gc_job_strdup_or_null(gc_kube_field(d->jobset, NULL, "namespace"));
    r->compute = gc_job_compute(d->jobset, compute, sizeof(compute)) ? gc_xstrdup(compute) : NULL;
    r->topology =
        gc_job_strdup_or_null(gc_kube_field(d->jobset, "annotations", GC_ANNOTATION_TOPOLOGY));
    r->pathways = gc_job_pathways_mode(d->jobset);
    r->indexed_job = gc_job_is_indexed(d->jobset);
    r->queue = gc_job_strdup_or_null(gc_kube_field(d->jobset, "labels", GC_LABEL_QUEUE));
    r->created = gc_job_strdup_or_null(gc_kube_field(d->jobset, NULL, "creationTimestamp"));
    r->finished = gc_job_strdup_or_null(f->completed_at);
    r->restarts = f->restarts;
    r->max_restarts = long_at(policy, "maxRestarts");
}

static void report_pod_sets(gc_kueue_state *k, const json_t *admission)
{
    const json_t *assignments = json_object_get(admission, "podSetAssignments");
    k->pod_set_count = json_array_size(assignments);
    k->pod_sets = gc_xcalloc(k->pod_set_count ? k->pod_set_count : 1, sizeof(*k->pod_sets));
    size_t i;
    const json_t *ps;
    json_array_foreach(assignments, i, ps)
    {
        gc_pod_set_admission *out = &k->pod_sets[i];
        const json_t *flavors = json_object_get(ps, "flavors");
        out->name = gc_job_strdup_or_null(string_at(ps, "name"));
        out->flavors = gc_xcalloc(json_object_size(flavors) + 1, sizeof(*out->flavors));
        const char *resource;
        const json_t *flavor;
        json_object_foreach((json_t *)flavors, resource, flavor)
        {
            out->flavors[out->flavor_count].resource = gc_xstrdup(resource);
            out->flavors[out->flavor_count].flavor =
                gc_job_strdup_or_null(json_string_value(flavor));
            out->flavor_count++;
        }
    }
}

static void report_kueue(gc_kueue_state *k, const json_t *workload, const gc_job_facts *f)
{
    if (!workload)
        return;
    k->workload = gc_job_strdup_or_null(gc_kube_field(workload, NULL, "name"));
    k->admitted = f->admitted;
    if (f->admitted) {
        const json_t *admission = json_object_get(json_object_get(workload, "status"), "admission");
        k->cluster_queue = gc_job_strdup_or_null(string_at(admission, "clusterQueue"));
        report_pod_sets(k, admission);
    } else {
        k->reason = gc_job_strdup_or_null(f->workload_reason);
        k->message = gc_job_strdup_or_null(f->workload_message);
    }
}

static void report_replicated_jobs(gc_inspect_report *r, const json_t *jobset)
{
    const json_t *specs = json_object_get(json_object_get(jobset, "spec"), "replicatedJobs");
    const json_t *statuses =
        json_object_get(json_object_get(jobset, "status"), "replicatedJobsStatus");
    r->replicated_job_count = json_array_size(specs);
    r->replicated_jobs = gc_xcalloc(r->replicated_job_count ? r->replicated_job_count : 1,
                                    sizeof(*r->replicated_jobs));
    size_t i;
    const json_t *rjob;
    json_array_foreach(specs, i, rjob)
    {
        const char *name = string_at(rjob, "name");
        const json_t *st = NULL;
        size_t j;
        const json_t *s;
        json_array_foreach(statuses, j, s)
        {
            const char *n = string_at(s, "name");
            if (n && name && !strcmp(n, name))
                st = s;
        }
        r->replicated_jobs[i] = (gc_replicated_job_counts){
            .name = gc_job_strdup_or_null(name),
            .replicas = long_at(rjob, "replicas"),
            .ready = long_at(st, "ready"),
            .active = long_at(st, "active"),
            .succeeded = long_at(st, "succeeded"),
            .failed = long_at(st, "failed"),
        };
    }
}

static long restarts_of(const json_t *pod)
{
    long n = 0;
    static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *cs;
        json_array_foreach(json_object_get(json_object_get(pod, "status"), lists[l]), i, cs) n =
            gc_saturating_add(n, long_at(cs, "restartCount"));
    }
    return n;
}

/* A numeric label (the Job and completion indexes), or -1. */
static long index_label(const json_t *pod, const char *key)
{
    const char *value = gc_kube_field(pod, "labels", key);
    if (!value || !*value)
        return -1;
    char *end;
    long n = strtol(value, &end, 10);
    return *end || n < 0 ? -1 : n;
}

static int compare_strings(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

static int compare_pods(const void *a, const void *b)
{
    const gc_job_pod *x = a, *y = b;
    bool x_head = x->role && !strcmp(x->role, GC_PATHWAYS_HEAD);
    bool y_head = y->role && !strcmp(y->role, GC_PATHWAYS_HEAD);
    if (x_head != y_head)
        return x_head ? -1 : 1;
    int role = compare_strings(x->role, y->role);
    if (role)
        return role;
    if (x->slice != y->slice)
        return x->slice < y->slice ? -1 : 1;
    if (x->host != y->host)
        return x->host < y->host ? -1 : 1;
    return compare_strings(x->name, y->name);
}

/* A container waiting, or one that exited with an error. */
static bool troubled(const json_t *cs, void *ctx)
{
    (void)ctx;
    const json_t *state = json_object_get(cs, "state");
    const json_t *terminated = json_object_get(state, "terminated");
    return json_object_get(state, "waiting") ||
           (terminated && json_integer_value(json_object_get(terminated, "exitCode")) != 0);
}

static const char *pod_reason(const json_t *pod)
{
    if (gc_kube_field(pod, NULL, "deletionTimestamp"))
        return "Terminating";
    const char *own = string_at(json_object_get(pod, "status"), "reason");
    if (own)
        return own;
    gc_kube_container_state c;
    if (gc_kube_each_container(pod, troubled, NULL, &c) && c.reason)
        return c.reason;
    const json_t *scheduled = gc_kube_condition(pod, "PodScheduled");
    if (scheduled && !gc_kube_condition_true(pod, "PodScheduled"))
        return string_at(scheduled, "reason");
    return NULL;
}

static void report_pods(gc_inspect_report *r, const json_t *pods)
{
    r->pod_count = json_array_size(pods);
    r->pods = gc_xcalloc(r->pod_count ? r->pod_count : 1, sizeof(*r->pods));
    size_t i;
    const json_t *pod;
    json_array_foreach(pods, i, pod)
    {
        r->pods[i] = (gc_job_pod){
            .name = gc_job_strdup_or_null(gc_kube_field(pod, NULL, "name")),
            .role = gc_job_strdup_or_null(gc_job_pod_role(pod)),
            .slice = gc_job_pod_slice(pod),
            .host = index_label(pod, "batch.kubernetes.io/job-completion-index"),
            .phase = gc_job_strdup_or_null(string_at(json_object_get(pod, "status"), "phase")),
            .restarts = restarts_of(pod),
            .node = gc_job_strdup_or_null(string_at(json_object_get(pod, "spec"), "nodeName")),
            .reason = gc_job_strdup_or_null(pod_reason(pod)),
        };
    }
    qsort(r->pods, r->pod_count, sizeof(*r->pods), compare_pods);
}

static bool phase_is(const gc_job_pod *pod, const char *phase)
{
    return pod->phase && !strcmp(pod->phase, phase);
}

/* Puts one slice, whose pods are pods[0..n) sorted by host, in its group. */
static void count_slice(gc_slice_counts *c, long slice, const gc_job_pod *pods, size_t n)
{
    long running = 0, succeeded = 0;
    long last_running = -1, last_succeeded = -1;
    for (size_t i = 0; i < n; i++) {
        const gc_job_pod *p = &pods[i];
        if (phase_is(p, "Running") && !p->reason && p->host > last_running) {
            running++;
            last_running = p->host;
        }
        if (phase_is(p, "Succeeded") && p->host > last_succeeded) {
            succeeded++;
            last_succeeded = p->host;
        }
    }
    if (n && running >= c->hosts)
        c->running++;
    else if (n && succeeded >= c->hosts)
        c->succeeded++;
    else if (!n)
        c->without_pods++;
    else
        c->problems[c->problem_count++] = slice;
}

/* The role's pods are a run of the sorted pods (-1 slices first); each slice in 0..replicas is
 * counted, with or without pods. */
static void count_role(gc_slice_counts *c, const gc_inspect_report *r)
{
    size_t at = 0;
    while (at < r->pod_count && compare_strings(r->pods[at].role, c->role))
        at++;
    for (long slice = 0; slice < c->slices; slice++) {
        while (at < r->pod_count && !compare_strings(r->pods[at].role, c->role) &&
               r->pods[at].slice < slice)
            at++;
        size_t end = at;
        while (end < r->pod_count && !compare_strings(r->pods[end].role, c->role) &&
               r->pods[end].slice == slice)
            end++;
        count_slice(c, slice, r->pods + at, end - at);
        at = end;
    }
}

static void report_slices(gc_inspect_report *r, const json_t *jobset)
{
    const json_t *specs = json_object_get(json_object_get(jobset, "spec"), "replicatedJobs");
    r->slice_count = json_array_size(specs);
    r->slices = gc_xcalloc(r->slice_count ? r->slice_count : 1, sizeof(*r->slices));
    size_t i;
    const json_t *rjob;
    json_array_foreach(specs, i, rjob)
    {
        gc_slice_counts *c = &r->slices[i];
        const json_t *job_spec = json_object_get(json_object_get(rjob, "template"), "spec");
        long replicas = long_at(rjob, "replicas");
        long parallelism = long_at(job_spec, "parallelism");
        c->role = gc_job_strdup_or_null(string_at(rjob, "name"));
        /* The API defaults both to 1 when left out. */
        c->slices = json_object_get(rjob, "replicas") ? replicas : 1;
        c->hosts = json_object_get(job_spec, "parallelism") ? parallelism : 1;
        c->problems = gc_xcalloc(c->slices > 0 ? (size_t)c->slices : 1, sizeof(*c->problems));
        count_role(c, r);
    }
}

static void free_warning(gc_job_warning *g)
{
    free(g->kind);
    free(g->object);
    free(g->reason);
    free(g->last_seen);
    free(g->message);
}

static gc_job_warning *find_group(gc_job_warning *groups, size_t count, const json_t *involved,
                                  const char *reason)
{
    const char *kind = string_at(involved, "kind"), *name = string_at(involved, "name");
    for (size_t i = 0; i < count; i++) {
        gc_job_warning *g = &groups[i];
        if (!strcmp(g->kind, kind ? kind : "") && !strcmp(g->object, name ? name : "") &&
            !strcmp(g->reason, reason ? reason : ""))
            return g;
    }
    return NULL;
}

/* The Job a pod belongs to: its job-name label, else the name the JobSet controller gives its
 * Jobs (JOBSET-REPLICATEDJOB-INDEX). */
static void pod_job_name(const json_t *pod, char *out, size_t size)
{
    const char *job = gc_kube_field(pod, "labels", "batch.kubernetes.io/job-name");
    if (!job)
        job = gc_kube_field(pod, "labels", "job-name");
    if (job) {
        snprintf(out, size, "%s", job);
        return;
    }
    snprintf(out, size, "%s-%s-%s", gc_job_owner_name(pod),
             gc_job_pod_role(pod) ? gc_job_pod_role(pod) : "?",
             gc_kube_field(pod, "labels", "jobset.sigs.k8s.io/job-index")
                 ? gc_kube_field(pod, "labels", "jobset.sigs.k8s.io/job-index")
                 : "?");
}

/* Whether Job `name` has all its pods now: as many (not being deleted) as its replicated job's
 * parallelism. */
static bool job_has_its_pods(const diagnose_why_inputs *d, const char *name)
{
    long have = 0, want = 1;
    size_t i;
    const json_t *pod;
    json_array_foreach(d->pods, i, pod)
    {
        char job[300];
        pod_job_name(pod, job, sizeof(job));
        if (strcmp(job, name) != 0 || gc_kube_field(pod, NULL, "deletionTimestamp"))
            continue;
        const json_t *rjob = gc_job_replicated_job(d->jobset, gc_job_pod_role(pod));
        const json_t *parallelism = json_object_get(
            json_object_get(json_object_get(rjob, "template"), "spec"), "parallelism");
        want = parallelism ? (long)json_integer_value(parallelism) : 1;
        have++;
    }
    return have > 0 && have >= want;
}

static bool pod_bound(const diagnose_why_inputs *d, const char *name)
{
    size_t i;
    const json_t *pod;
    json_array_foreach(d->pods, i, pod)
    {
        if (gc_kube_same(gc_kube_field(pod, NULL, "name"), name))
            return gc_kube_string(json_object_get(pod, "spec"), "nodeName") != NULL;
    }
    return false;
}

/* A warning superseded by a later success says nothing about the job any more, and a newcomer
 * reads a healthy job as broken by it (JobSet's exclusive placement makes the Job controller's
 * first pod creations fail on its webhook until the leader pod is scheduled: "FailedCreate ...
 * admission webhook denied" on every healthy multi-slice job). The rule: a controller that
 * failed retries until it succeeds, so a failure whose success is visible now is history:
 * - FailedCreate of a Job that now has all its pods (the Job controller creates up to
 *   parallelism pods; every creation that failed has since succeeded);
 * - FailedScheduling of a pod that is now bound to a node (the scheduler retried and placed it);
 * - Pending of a Workload Kueue has since admitted.
 * Such groups are counted, not listed. A pod that is gone, or a Job still short of pods, keeps
 * its warnings. */
static bool superseded(const diagnose_why_inputs *d, const gc_job_warning *g)
{
    if (!strcmp(g->kind, "Job") && !strcmp(g->reason, "FailedCreate"))
        return job_has_its_pods(d, g->object);
    if (!strcmp(g->kind, "Pod") && !strcmp(g->reason, "FailedScheduling"))
        return pod_bound(d, g->object);
    if (!strcmp(g->kind, "Workload") && !strcmp(g->reason, "Pending"))
        return gc_kube_same(gc_kube_field(d->workload, NULL, "name"), g->object) &&
               gc_kube_condition_true(d->workload, "Admitted");
    return false;
}

/* Warnings repeat (a controller retrying): one group per object and reason, in the order each
 * first appeared, counting every event and keeping the latest message; groups superseded by a
 * later success are counted apart; the most recent other groups are kept. */
static void report_warnings(gc_inspect_report *r, const diagnose_why_inputs *d)
{
    const json_t *warnings = d->warnings;
    size_t n = json_array_size(warnings);
    gc_job_warning *groups = gc_xcalloc(n ? n : 1, sizeof(*groups));
    size_t count = 0;
    size_t i;
    const json_t *e;
    json_array_foreach(warnings, i, e)
    {
        const json_t *involved = json_object_get(e, "involvedObject");
        const char *reason = string_at(e, "reason");
        gc_job_warning *g = find_group(groups, count, involved, reason);
        if (!g) {
            g = &groups[count++];
            g->kind = gc_xstrdup(string_at(involved, "kind") ? string_at(involved, "kind") : "");
            g->object = gc_xstrdup(string_at(involved, "name") ? string_at(involved, "name") : "");
            g->reason = gc_xstrdup(reason ? reason : "");
        }
        long times = long_at(e, "count");
        g->count = gc_saturating_add(g->count, times > 0 ? times : 1);
        const char *when = string_at(e, "lastTimestamp");
        free(g->last_seen);
        g->last_seen = gc_job_strdup_or_null(when ? when : string_at(e, "eventTime"));
        free(g->message);
        g->message = gc_xstrdup(string_at(e, "message") ? string_at(e, "message") : "");
    }
    size_t kept = 0;
    for (i = 0; i < count; i++) {
        if (superseded(d, &groups[i])) {
            r->resolved_warning_count++;
            free_warning(&groups[i]);
        } else
            groups[kept++] = groups[i];
    }
    size_t first = kept > GC_INSPECT_MAX_WARNINGS ? kept - GC_INSPECT_MAX_WARNINGS : 0;
    r->warning_count = kept - first;
    r->warnings = gc_xcalloc(r->warning_count ? r->warning_count : 1, sizeof(*r->warnings));
    memcpy(r->warnings, groups + first, r->warning_count * sizeof(*groups));
    for (i = 0; i < first; i++)
        free_warning(&groups[i]);
    free(groups);
}

static json_t *stored_manifest(const json_t *jobset)
{
    /* A JobSet-less job's manifest is its Job's. */
    const json_t *job = gc_job_indexed_source(jobset);
    json_t *manifest = json_deep_copy(job ? job : jobset);
    json_object_del(json_object_get(manifest, "metadata"), "managedFields");
    json_object_del(manifest, "status");
    return manifest;
}

static void build_report(const diagnose_why_inputs *d, bool show, gc_inspect_report *r)
{
    gc_job_facts f;
    gc_job_facts_from_jobset(d->jobset, &f);
    if (d->workload)
        gc_job_facts_add_workload(&f, d->workload);
    size_t i;
    json_t *pod;
    json_array_foreach(d->pods, i, pod)
    {
        gc_job_facts_add_pod(&f, pod);
    }
    gc_job_status_derive(&f, &r->status);
    report_overview(r, d, &f);
    report_kueue(&r->kueue, d->workload, &f);
    report_replicated_jobs(r, d->jobset);
    report_pods(r, d->pods);
    report_slices(r, d->jobset);
    report_warnings(r, d);
    if (show)
        r->manifest = stored_manifest(d->jobset);
}

int gc_job_inspect(gc_kube *kube, const char *name, bool show, gc_inspect_report *report,
                   gc_error *err)
{
    memset(report, 0, sizeof(*report));
    int rc = gc_job_name_check(name, err);
    if (rc)
        return rc;
    diagnose_why_inputs in;
    rc = diagnose_why_read_job(kube, name, &in, err);
    if (!rc) {
        build_report(&in, show, report);
        report->diagnosis = gc_xcalloc(1, sizeof(*report->diagnosis));
        rc = diagnose_why_diagnose(kube, &in, (long long)time(NULL), report->diagnosis, err);
    }
    diagnose_why_inputs_free(&in);
    if (!rc && report->pathways == GC_PATHWAYS_SPS) {
        /* One more round trip, for services only: who is attached. */
        report->sps = gc_xcalloc(1, sizeof(*report->sps));
        rc = gc_sps_read_service(kube, name, report->sps, err);
    }
    if (rc)
        gc_inspect_report_free(report);
    return rc;
}

static void free_kueue(gc_kueue_state *k)
{
    for (size_t i = 0; i < k->pod_set_count; i++) {
        for (size_t j = 0; j < k->pod_sets[i].flavor_count; j++) {
            free(k->pod_sets[i].flavors[j].resource);
            free(k->pod_sets[i].flavors[j].flavor);
        }
        free(k->pod_sets[i].flavors);
        free(k->pod_sets[i].name);
    }
    free(k->pod_sets);
    free(k->workload);
    free(k->cluster_queue);
    free(k->reason);
    free(k->message);
}

void gc_inspect_report_free(gc_inspect_report *r)
{
    if (r->sps) {
        gc_sps_usage_free(r->sps);
        free(r->sps);
    }
    char *strings[] = {r->name, r->ns, r->compute, r->topology, r->queue, r->created, r->finished};
    for (size_t i = 0; i < sizeof(strings) / sizeof(*strings); i++)
        free(strings[i]);
    free_kueue(&r->kueue);
    for (size_t i = 0; i < r->replicated_job_count; i++)
        free(r->replicated_jobs[i].name);
    free(r->replicated_jobs);
    for (size_t i = 0; i < r->slice_count; i++) {
        free(r->slices[i].role);
        free(r->slices[i].problems);
    }
    free(r->slices);
    for (size_t i = 0; i < r->pod_count; i++) {
        free(r->pods[i].name);
        free(r->pods[i].role);
        free(r->pods[i].phase);
        free(r->pods[i].node);
        free(r->pods[i].reason);
    }
    free(r->pods);
    for (size_t i = 0; i < r->warning_count; i++)
        free_warning(&r->warnings[i]);
    free(r->warnings);
    json_decref(r->manifest);
    free(r->diagnosis);
    memset(r, 0, sizeof(*r));
}
