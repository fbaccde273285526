/*
 * --await-job-completion: a watch on the one JobSet. Each change of the JobSet (Kueue
 * unsuspending it, JobSet counting ready Jobs, a terminal condition) triggers one look at the
 * Workload or the pods for the details, so the cost follows the job's changes, not the clock.
 *
 * The watch rides out broken connections and API server restarts by itself (gc_kube_list_watch);
 * a look at the details that fails meanwhile does not end it either: the JobSet alone says
 * whether the job has ended, and the details of a running job come with its next change.
 */
#include "job/watch_job.h"
#include "job/internal.h"

#include "gcluster/kueue.h"
#include "gcluster/sys.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FACT_ATTEMPTS 3
#define FACT_PAUSE_MS 2000

typedef struct watch_state {
    gc_kube *kube;
    const char *name;
    const gc_events *ev;
    char last_text[900];
    gc_job_status last; /* the latest status derived */
    bool seen;
    bool deleted;
} watch_state;

static int collect_pods_and_workload(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    const char *kind = json_string_value(json_object_get(item, "kind"));
    if (kind && !strcmp(kind, "Workload"))
        gc_job_facts_add_workload(ctx, item);
    else
        gc_job_facts_add_pod(ctx, item);
    return 0;
}

/* What a pod's share of the facts needs (gc_job_facts_add_pod): a job of a thousand pods is
 * looked at on every change of its JobSet, so each look decodes these few fields of each pod,
 * in pages, and never the pods whole. */
static const char POD_FIELDS[] =
    "{\"metadata\": {\"name\": true},"
    " \"status\": {\"phase\": true,"
    "            \"containerStatuses\": [{\"name\": true, \"state\": true, \"lastState\": true}],"
    "            \"initContainerStatuses\": [{\"name\": true, \"state\": true,"
    "                                       \"lastState\": true}]}}";
#define POD_PAGE 500

static int list_pods(gc_kube *kube, const char *selector, gc_job_facts *f, gc_error *err)
{
    json_t *fields = json_loads(POD_FIELDS, 0, NULL);
    char *path = gc_kube_path(NULL, "v1", gc_kube_namespace(kube), "pods", NULL);
    gc_kube_list_options opts = {
        .label_selector = selector, .fields = fields, .page_size = POD_PAGE};
    int rc = gc_kube_list(kube, path, &opts, collect_pods_and_workload, f, NULL, err);
    free(path);
    json_decref(fields);
    return rc;
}

int job_facts_fetch(gc_kube *kube, const json_t *jobset, gc_job_facts *f, gc_error *err)
{
    gc_job_facts_from_jobset(jobset, f);
    const json_t *metadata = json_object_get(jobset, "metadata");
    const char *uid = json_string_value(json_object_get(metadata, "uid"));
    const char *name = json_string_value(json_object_get(metadata, "name"));
    char selector[320];
    int rc = 0;
    /* A failed job's pods say which container failed, a running one's how many run; only a
     * job Kueue holds back needs its Workload. */
    if (name && (f->failed || (!f->suspended && !f->completed))) {
        job_pods_selector(jobset, name, selector, sizeof(selector));
        rc = list_pods(kube, selector, f, err);
    } else if (f->suspended && f->queued_by_kueue && uid) {
        snprintf(selector, sizeof(selector), "kueue.x-k8s.io/job-uid=%s", uid);
        /* At the Kueue version the cluster serves; none: no Kueue, no Workload. */
        gc_kube_list_options opts = {.label_selector = selector};
        gc_kube_read read = {.opts = &opts, .on_item = collect_pods_and_workload, .ctx = f};
        gc_kueue_read workloads = {
            .index = 0, .ns = gc_kube_namespace(kube), .resource = "workloads"};
        gc_kueue_read_all(kube, &read, 1, &workloads, 1, NULL);
        gc_kueue_reads_free(&workloads, 1);
        if (read.rc && !gc_kueue_not_served(&read)) {
            *err = read.err;
            rc = read.rc;
        }
    }
    return rc;
}

/* The facts of a changed JobSet. When its pods or Workload cannot be read, an ended job is
 * judged by the JobSet alone (after a few tries, as its pods name the failing container), and
 * for a running one false says to wait for the next change. */
static bool fetch_facts(watch_state *s, const json_t *jobset, gc_job_facts *f)
{
    for (int attempt = 1;; attempt++) {
        gc_error ignored = {0};
        if (!job_facts_fetch(s->kube, jobset, f, &ignored))
            return true;
        gc_job_facts_from_jobset(jobset, f);
        bool ended = f->completed || f->failed;
        if (!ended || attempt == FACT_ATTEMPTS)
            return ended;
        gc_clock_sleep_ms(FACT_PAUSE_MS);
    }
}

static void show_progress(watch_state *s, const gc_job_status *st)
{
    char line[sizeof(st->text) + sizeof(st->detail) + 8];
    snprintf(line, sizeof(line), "%s%s%s", st->text, st->detail[0] ? " - " : "", st->detail);
    if (!strcmp(line, s->last_text))
        return;
    snprintf(s->last_text, sizeof(s->last_text), "%s", line);
    gc_progress(s->ev, "%s: %s", s->name, line);
}

static int on_jobset_event(enum gc_kube_event_type type, json_t *jobset, void *ctx, gc_error *err)
{
    (void)err;
    watch_state *s = ctx;
    if (type == GC_KUBE_SYNCED) {
        /* Listed and not there: deleted (cancelled, or removed by its TTL) before we looked. */
        s->deleted = !s->seen;
        return s->deleted ? GC_KUBE_STOP : 0;
    }
    s->seen = true;
    if (type == GC_KUBE_DELETED) {
        s->deleted = true;
        return GC_KUBE_STOP;
    }
    gc_job_facts f;
    if (!fetch_facts(s, jobset, &f))
        return 0;
    gc_job_status st;
    gc_job_status_derive(&f, &st);
    show_progress(s, &st);
    s->last = st;
    return st.phase == GC_JOB_SUCCEEDED || st.phase == GC_JOB_FAILED ? GC_KUBE_STOP : 0;
}

typedef struct look_once {
    gc_kube_event_fn on_event;
    void *ctx;
    bool stopped;
} look_once;

static int look_at_item(json_t *item, void *ctx, gc_error *err)
{
    look_once *l = ctx;
    int rc = l->on_event(GC_KUBE_ADDED, item, l->ctx, err);
    if (rc == GC_KUBE_STOP)
        l->stopped = true;
    return rc;
}

int job_list_watch(gc_kube *kube, const char *path, const gc_kube_list_options *opts, long timeout,
                   gc_kube_event_fn on_event, void *ctx, gc_error *err)
{
    if (timeout != 0)
        return gc_kube_list_watch(kube, path, opts,
                                  timeout < 0         ? 0
                                  : timeout > INT_MAX ? INT_MAX
                                                      : (int)timeout,
                                  on_event, ctx, err);
    look_once l = {.on_event = on_event, .ctx = ctx};
    int rc = gc_kube_list(kube, path, opts, look_at_item, &l, NULL, err);
    if (rc || l.stopped)
        return rc;
    rc = on_event(GC_KUBE_SYNCED, NULL, ctx, err);
    if (rc == GC_KUBE_STOP)
        return 0;
    if (rc)
        return rc;
    gc_fail(err, GC_EXIT_RUNTIME, "not there at the one look (--timeout 0)");
    snprintf(err->reason, sizeof(err->reason), "Timeout");
    return GC_EXIT_RUNTIME;
}

const char *job_timeout_words(long timeout, char *buf, size_t size)
{
    if (timeout == 0)
        snprintf(buf, size, "at the one look (--timeout 0)");
    else
        snprintf(buf, size, "after %lds", timeout);
    return buf;
}

int gc_job_watch_to_end(gc_kube *kube, const char *name, long timeout_seconds, const gc_events *ev,
                        gc_job_status *final, gc_error *err)
{
    watch_state s = {.kube = kube, .name = name, .ev = ev};
    char *path =
        gc_kube_path("jobset.x-k8s.io", "v1alpha2", gc_kube_namespace(kube), "jobsets", NULL);
    char selector[300];
    snprintf(selector, sizeof(selector), "metadata.name=%s", name);
    gc_kube_list_options opts = {.field_selector = selector};
    int rc = job_list_watch(kube, path, &opts, timeout_seconds, on_jobset_event, &s, err);
    free(path);
    gc_event(ev, GC_EVENT_PROGRESS_END, "%s", "");
    *final = s.last;
    char when[64];
    if (rc && !strcmp(err->reason, "Timeout"))
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "timed out %s waiting for job %s (%s); it keeps running: follow it with "
                       "gcluster job inspect %s",
                       job_timeout_words(timeout_seconds, when, sizeof(when)), name,
                       s.last_text[0] ? s.last_text : "not seen yet", name);
    if (rc)
        return rc;
    if (s.deleted)
        return gc_fail(err, GC_EXIT_RUNTIME, "job %s was deleted before it finished", name);
    if (s.last.phase == GC_JOB_FAILED)
        return gc_fail(err, GC_EXIT_JOB_FAILED, "job %s failed: %s", name,
                       s.last.detail[0] ? s.last.detail : "no reason given");
    return 0;
}
