/*
 * `job inspect`: everything about one job on one screen. Four requests in two round trips: the
 * JobSet, its pods and the namespace's Warning events (filtered to this job's objects) together,
 * then its Kueue Workload.
 */
#include "gcluster/buf.h"
#include "gcluster/emit.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"
#include "job/lookup.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WARNINGS 10

typedef struct inspect_data {
    json_t *jobset;
    json_t *workload; /* NULL when Kueue has none */
    json_t *pods;
    json_t *warnings;
} inspect_data;

static int append_item(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    json_array_append(ctx, item);
    return 0;
}

static int list_items(gc_kube *kube, const char *group, const char *version, const char *resource,
                      const gc_kube_list_options *opts, json_t *items, gc_error *err)
{
    char *path = gc_kube_path(group, version, gc_kube_namespace(kube), resource, NULL);
    int rc = gc_kube_list(kube, path, opts, append_item, items, NULL, err);
    free(path);
    return rc;
}

static int fetch_workload(gc_kube *kube, inspect_data *d, gc_error *err)
{
    const char *uid = meta_string(d->jobset, NULL, "uid");
    char selector[128];
    snprintf(selector, sizeof(selector), "kueue.x-k8s.io/job-uid=%s", uid ? uid : "");
    gc_kube_list_options opts = {.label_selector = selector};
    json_t *items = json_array();
    int rc = list_items(kube, "kueue.x-k8s.io", "v1beta2", "workloads", &opts, items, err);
    if (rc && err->http_status == 404) { /* no Kueue (or an old one): nothing to show */
        gc_error_clear(err);
        rc = 0;
    }
    if (json_array_size(items))
        d->workload = json_incref(json_array_get(items, json_array_size(items) - 1));
    json_decref(items);
    return rc;
}

static bool belongs_to_job(const json_t *event, const char *name, const char *workload)
{
    const char *object =
        json_string_value(json_object_get(json_object_get(event, "involvedObject"), "name"));
    if (!object)
        return false;
    size_t n = strlen(name);
    return !strcmp(object, name) || (!strncmp(object, name, n) && object[n] == '-') ||
           (workload && !strcmp(object, workload));
}

static void keep_job_warnings(const json_t *events, const char *name, inspect_data *d)
{
    const char *workload = d->workload ? meta_string(d->workload, NULL, "name") : NULL;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        if (belongs_to_job(e, name, workload))
            json_array_append(d->warnings, e);
    }
}

/* The JobSet, its pods and the namespace's Warning events do not depend on each other, so they
 * are asked for together (one round trip); the Workload is found by the JobSet's UID, after. */
static int fetch(gc_kube *kube, const char *name, inspect_data *d, gc_error *err)
{
    const char *ns = gc_kube_namespace(kube);
    char *pods = gc_kube_path(NULL, "v1", ns, "pods", NULL);
    char *events_path = gc_kube_path(NULL, "v1", ns, "events", NULL);
    char selector[300];
    snprintf(selector, sizeof(selector), "jobset.sigs.k8s.io/jobset-name=%s", name);
    gc_kube_list_options of_job = {.label_selector = selector};
    gc_kube_list_options warnings = {.field_selector = "type=Warning"};
    json_t *events = json_array();
    gc_kube_read reads[] = {
        {.path = pods, .opts = &of_job, .on_item = append_item, .ctx = d->pods},
        {.path = events_path, .opts = &warnings, .on_item = append_item, .ctx = events},
    };
    int rc = find_jobset_with(kube, name, &d->jobset, reads, 2, err);
    if (!rc)
        rc = fetch_workload(kube, d, err);
    if (!rc)
        keep_job_warnings(events, name, d);
    json_decref(events);
    free(pods);
    free(events_path);
    return rc;
}

/* Lines of the summary; with --show they become YAML comments above the manifest. */
typedef struct printer {
    FILE *out;
    const char *prefix;
} printer;

static void line(const printer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void line(const printer *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs(p->prefix, p->out);
    vfprintf(p->out, fmt, ap);
    fputc('\n', p->out);
    va_end(ap);
}

static void print_overview(const printer *p, const inspect_data *d, const gc_job_status *st,
                           const gc_job_facts *f)
{
    char compute[96], age[16];
    jobset_compute(d->jobset, compute, sizeof(compute));
    const char *created = meta_string(d->jobset, NULL, "creationTimestamp");
    gc_format_age(created, age, sizeof(age));
    const char *topology = meta_string(d->jobset, "annotations", GC_ANNOTATION_TOPOLOGY);
    const json_t *policy = json_object_get(json_object_get(d->jobset, "spec"), "failurePolicy");

    line(p, "Name:       %s", meta_string(d->jobset, NULL, "name"));
    line(p, "Namespace:  %s", meta_string(d->jobset, NULL, "namespace"));
    line(p, "Status:     %s", st->text);
    if (st->detail[0])
        line(p, "            %s", st->detail);
    line(p, "Compute:    %s%s%s", compute, topology ? ", topology " : "", topology ? topology : "");
    line(p, "Pathways:   %s", jobset_pathways_mode(d->jobset));
    line(p, "Queue:      %s",
         meta_string(d->jobset, "labels", GC_LABEL_QUEUE)
             ? meta_string(d->jobset, "labels", GC_LABEL_QUEUE)
             : "- (not queued by Kueue)");
    line(p, "Created:    %s (%s ago)", created ? created : "?", age);
    if (f->completed_at[0])
        line(p, "Finished:   %s", f->completed_at);
    line(p, "Restarts:   %ld of at most %lld", f->restarts,
         (long long)json_integer_value(json_object_get(policy, "maxRestarts")));
}

static void print_flavors(const printer *p, const json_t *admission)
{
    size_t i;
    const json_t *ps;
    json_array_foreach(json_object_get(admission, "podSetAssignments"), i, ps)
    {
        gc_buf b;
        gc_buf_init(&b);
        const char *resource;
        const json_t *flavor;
        json_object_foreach((json_t *)json_object_get(ps, "flavors"), resource, flavor)
            gc_buf_printf(&b, "%s%s=%s", b.len ? ", " : "", resource, json_string_value(flavor));
        line(p, "  %-14s %s", json_string_value(json_object_get(ps, "name")), b.data);
        gc_buf_free(&b);
    }
}

static void print_kueue(const printer *p, const inspect_data *d, const gc_job_facts *f)
{
    if (!d->workload) {
        if (f->queued_by_kueue)
            line(p, "Kueue:      no Workload yet (is Kueue running and managing JobSets?)");
        return;
    }
    const json_t *admission = json_object_get(json_object_get(d->workload, "status"), "admission");
    line(p, "%s", "");
    line(p, "Kueue workload %s:", meta_string(d->workload, NULL, "name"));
    if (f->admitted) {
        line(p, "  Admitted to ClusterQueue %s; flavors per pod set:",
             json_string_value(json_object_get(admission, "clusterQueue")));
        print_flavors(p, admission);
    } else {
        line(p, "  Not admitted: %s%s%s", f->workload_reason[0] ? f->workload_reason : "pending",
             f->workload_message[0] ? ": " : "", f->workload_message);
    }
}

static void print_replicated_jobs(const printer *p, const json_t *jobset)
{
    line(p, "%s", "");
    line(p, "Replicated jobs:");
    line(p, "  %-16s %-9s %-6s %-7s %-10s %s", "NAME", "REPLICAS", "READY", "ACTIVE", "SUCCEEDED",
         "FAILED");
    const json_t *statuses =
        json_object_get(json_object_get(jobset, "status"), "replicatedJobsStatus");
    size_t i;
    const json_t *rjob;
    json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i, rjob)
    {
        const char *name = json_string_value(json_object_get(rjob, "name"));
        const json_t *st = NULL;
        size_t j;
        const json_t *s;
        json_array_foreach(statuses, j, s)
        {
            const char *n = json_string_value(json_object_get(s, "name"));
            if (n && name && !strcmp(n, name))
                st = s;
        }
        line(p, "  %-16s %-9lld %-6lld %-7lld %-10lld %lld", name ? name : "?",
             (long long)json_integer_value(json_object_get(rjob, "replicas")),
             (long long)json_integer_value(json_object_get(st, "ready")),
             (long long)json_integer_value(json_object_get(st, "active")),
             (long long)json_integer_value(json_object_get(st, "succeeded")),
             (long long)json_integer_value(json_object_get(st, "failed")));
    }
}

static long restarts_of(const json_t *pod)
{
    long n = 0;
    static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *cs;
        json_array_foreach(json_object_get(json_object_get(pod, "status"), lists[l]), i, cs) n +=
            (long)json_integer_value(json_object_get(cs, "restartCount"));
    }
    return n;
}

static long pod_order(const json_t *pod)
{
    const char *rjob = meta_string(pod, "labels", "jobset.sigs.k8s.io/replicatedjob-name");
    const char *job = meta_string(pod, "labels", "jobset.sigs.k8s.io/job-index");
    const char *host = meta_string(pod, "labels", "batch.kubernetes.io/job-completion-index");
    long head_first = rjob && !strcmp(rjob, GC_PATHWAYS_HEAD) ? 0 : 1;
    return head_first * 100000000L + (job ? atol(job) : 0) * 10000L + (host ? atol(host) : 0);
}

static int compare_pods(const void *a, const void *b)
{
    long x = pod_order(*(json_t *const *)a), y = pod_order(*(json_t *const *)b);
    return (x > y) - (x < y);
}

static void print_pods(const printer *p, const json_t *pods)
{
    size_t n = json_array_size(pods);
    line(p, "%s", "");
    if (!n) {
        line(p, "Pods:       none yet");
        return;
    }
    json_t **sorted = gc_xcalloc(n, sizeof(*sorted));
    for (size_t i = 0; i < n; i++)
        sorted[i] = json_array_get(pods, i);
    qsort(sorted, n, sizeof(*sorted), compare_pods);
    line(p, "Pods:");
    line(p, "  %-14s %-6s %-5s %-10s %-9s %-26s %s", "ROLE", "SLICE", "HOST", "PHASE", "RESTARTS",
         "NODE", "POD");
    for (size_t i = 0; i < n; i++) {
        const json_t *pod = sorted[i];
        const char *node =
            json_string_value(json_object_get(json_object_get(pod, "spec"), "nodeName"));
        const char *phase =
            json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
        const char *role = meta_string(pod, "labels", "jobset.sigs.k8s.io/replicatedjob-name");
        const char *slice = meta_string(pod, "labels", "jobset.sigs.k8s.io/job-index");
        const char *host = meta_string(pod, "labels", "batch.kubernetes.io/job-completion-index");
        line(p, "  %-14s %-6s %-5s %-10s %-9ld %-26s %s", role ? role : "?", slice ? slice : "-",
             host ? host : "-", phase ? phase : "?", restarts_of(pod),
             node ? node : "(unscheduled)", meta_string(pod, NULL, "name"));
    }
    free(sorted);
}

/* Warnings repeat (a controller retrying); show each object and reason once, with how often
 * and the latest message cut to one line. */
static void print_warnings(const printer *p, const json_t *warnings)
{
    json_t *groups = json_object(); /* "kind/name reason" -> {count, last event} */
    json_t *order = json_array();
    size_t i;
    const json_t *e;
    json_array_foreach(warnings, i, e)
    {
        const json_t *involved = json_object_get(e, "involvedObject");
        char *key = gc_xasprintf("%s/%s: %s", json_string_value(json_object_get(involved, "kind")),
                                 json_string_value(json_object_get(involved, "name")),
                                 json_string_value(json_object_get(e, "reason")));
        json_t *g = json_object_get(groups, key);
        json_int_t count = json_integer_value(json_object_get(e, "count"));
        if (!g) {
            g = json_pack("{s:I, s:O}", "count", (json_int_t)0, "event", e);
            json_object_set_new(groups, key, g);
            json_array_append_new(order, json_string(key));
        }
        json_object_set_new(g, "count",
                            json_integer(json_integer_value(json_object_get(g, "count")) +
                                         (count > 0 ? count : 1)));
        json_object_set(g, "event", (json_t *)e);
        free(key);
    }
    size_t n = json_array_size(order);
    if (n) {
        line(p, "%s", "");
        line(p, "Recent warnings:");
    }
    for (i = n > MAX_WARNINGS ? n - MAX_WARNINGS : 0; i < n; i++) {
        const char *key = json_string_value(json_array_get(order, i));
        json_t *g = json_object_get(groups, key);
        json_t *event = json_object_get(g, "event");
        const char *when = json_string_value(json_object_get(event, "lastTimestamp"));
        if (!when)
            when = json_string_value(json_object_get(event, "eventTime"));
        char age[16];
        gc_format_age(when, age, sizeof(age));
        const char *message = json_string_value(json_object_get(event, "message"));
        line(p, "  %-5s %s (x%lld): %.160s%s", age, key,
             (long long)json_integer_value(json_object_get(g, "count")), message ? message : "",
             message && strlen(message) > 160 ? "..." : "");
    }
    json_decref(order);
    json_decref(groups);
}

static int print_manifest(json_t *jobset, FILE *out, gc_error *err)
{
    json_t *manifest = json_deep_copy(jobset);
    json_object_del(json_object_get(manifest, "metadata"), "managedFields");
    json_object_del(manifest, "status");
    gc_buf yaml;
    gc_buf_init(&yaml);
    int rc = gc_emit_yaml(manifest, &yaml, err);
    if (!rc)
        fputs(yaml.data, out);
    gc_buf_free(&yaml);
    json_decref(manifest);
    return rc;
}

int gc_job_inspect(gc_kube *kube, const char *name, bool show, const gc_output *o, gc_error *err)
{
    inspect_data d = {.pods = json_array(), .warnings = json_array()};
    int rc = fetch(kube, name, &d, err);
    if (!rc) {
        gc_job_facts f;
        gc_job_facts_from_jobset(d.jobset, &f);
        if (d.workload)
            gc_job_facts_add_workload(&f, d.workload);
        size_t i;
        json_t *pod;
        json_array_foreach(d.pods, i, pod)
        {
            gc_job_facts_add_pod(&f, pod);
        }
        gc_job_status st;
        gc_job_status_derive(&f, &st);
        printer p = {.out = o->out, .prefix = show ? "# " : ""};
        print_overview(&p, &d, &st, &f);
        print_kueue(&p, &d, &f);
        print_replicated_jobs(&p, d.jobset);
        print_pods(&p, d.pods);
        print_warnings(&p, d.warnings);
        if (show)
            rc = print_manifest(d.jobset, o->out, err);
    }
    json_decref(d.jobset);
    json_decref(d.workload);
    json_decref(d.pods);
    json_decref(d.warnings);
    return rc;
}
