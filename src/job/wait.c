/*
 * `job wait`: one list+watch on the JobSets that covers every job waited for, so the cost
 * follows the jobs' changes, not the clock or the number of jobs. One job is selected by name
 * (metadata.name); several by the gcluster.google.com/workload label gcluster and Google's tool
 * put on their JobSets. A JobSet made by something else has no such label: when one of the
 * names is missing from the labelled list but exists, the wait watches the whole namespace and
 * picks the names out.
 *
 * The JobSet says when a job is admitted (Kueue unsuspends it), running, finished or deleted;
 * on each change the job's Workload (queued) or pods (running, failed) are read once for the
 * details a status line and a failure message need.
 */
#include "gcluster/buf.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"
#include "gcluster/sys.h"
#include "job/internal.h"
#include "job/watch_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const gc_wait_states[] = {"succeeded", "finished", "running", "admitted", NULL};

const char *gc_wait_for_name(gc_wait_for state)
{
    return gc_wait_states[state];
}

const char *gc_wait_outcome_name(gc_wait_outcome outcome)
{
    static const char *const names[] = {"pending", "reached", "failed", "cancelled"};
    return names[outcome];
}

static int parse_request(const gc_wait_request *r, gc_wait_for *state, long *timeout, gc_error *err)
{
    *state = GC_WAIT_FOR_SUCCEEDED;
    *timeout = JOB_NO_TIMEOUT;
    if (!r->count)
        return gc_fail(err, GC_EXIT_USAGE, "job wait needs the jobs: gcluster job wait NAME...");
    for (size_t i = 0; i < r->count; i++) {
        if (gc_job_name_check(r->names[i], err))
            return err->code;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(r->names[i], r->names[j]))
                return gc_fail(err, GC_EXIT_USAGE, "job %s is named twice; name each job once",
                               r->names[i]);
    }
    if (r->state) {
        size_t i = 0;
        while (gc_wait_states[i] && strcasecmp(r->state, gc_wait_states[i]) != 0)
            i++;
        if (!gc_wait_states[i])
            return gc_fail(err, GC_EXIT_USAGE,
                           "--for %s: use succeeded, finished, running or admitted", r->state);
        *state = (gc_wait_for)i;
    }
    return r->timeout ? gc_clock_parse_duration("--timeout", r->timeout, timeout, err) : 0;
}

int gc_job_wait_check(const gc_wait_request *r, gc_error *err)
{
    gc_wait_for state;
    long timeout;
    return parse_request(r, &state, &timeout, err);
}

typedef struct wait_state {
    gc_kube *kube;
    const gc_events *ev;
    gc_wait_result *out;
    bool *seen;         /* per job: announced by the current list+watch */
    bool missing;       /* the first list lacked some of the jobs */
    bool stop_on_first; /* a job that cannot get there ends the wait */
    bool indexed;       /* the jobs are JobSet-less: their Jobs are watched */
    gc_buf progress;    /* the lines last reported */
} wait_state;

static gc_wait_job *find_job(wait_state *s, const char *name, size_t *index)
{
    for (size_t i = 0; name && i < s->out->count; i++)
        if (!strcmp(s->out->jobs[i].name, name))
            return *index = i, &s->out->jobs[i];
    return NULL;
}

static bool settled(const gc_wait_job *job)
{
    return job->outcome != GC_WAIT_PENDING;
}

/* Whether the wait is over: every job settled, or one that can never get there. */
static bool done(const wait_state *s)
{
    bool all = true;
    for (size_t i = 0; i < s->out->count; i++) {
        gc_wait_outcome o = s->out->jobs[i].outcome;
        if (s->stop_on_first && (o == GC_WAIT_FAILED || o == GC_WAIT_CANCELLED))
            return true;
        all = all && o != GC_WAIT_PENDING;
    }
    return all;
}

static gc_wait_outcome judge(gc_wait_for state, const gc_job_facts *f, const gc_job_status *st)
{
    switch (st->phase) {
    case GC_JOB_SUCCEEDED:
        return GC_WAIT_REACHED;
    case GC_JOB_FAILED:
        return GC_WAIT_FAILED;
    case GC_JOB_ADMITTED:
    case GC_JOB_RESTARTING:
        return state == GC_WAIT_FOR_ADMITTED ? GC_WAIT_REACHED : GC_WAIT_PENDING;
    case GC_JOB_RUNNING:
        if (state == GC_WAIT_FOR_ADMITTED)
            return GC_WAIT_REACHED;
        return state == GC_WAIT_FOR_RUNNING && f->pods_running >= f->pods_expected
                   ? GC_WAIT_REACHED
                   : GC_WAIT_PENDING;
    default:
        return GC_WAIT_PENDING;
    }
}

static void report(wait_state *s)
{
    gc_buf lines;
    gc_buf_init(&lines);
    for (size_t i = 0; i < s->out->count; i++) {
        const gc_wait_job *job = &s->out->jobs[i];
        if (job->outcome == GC_WAIT_CANCELLED)
            gc_buf_printf(&lines, "%s%s: Cancelled", i ? "\n" : "", job->name);
        else
            gc_buf_printf(&lines, "%s%s: %s%s%s", i ? "\n" : "", job->name,
                          job->status.text[0] ? job->status.text : "waiting for its JobSet",
                          job->status.detail[0] ? " - " : "", job->status.detail);
    }
    if (strcmp(lines.data, s->progress.data) != 0) {
        gc_progress(s->ev, "%s", lines.data);
        gc_buf_reset(&s->progress);
        gc_buf_puts(&s->progress, lines.data);
    }
    gc_buf_free(&lines);
}

static int on_jobset(enum gc_kube_event_type type, json_t *jobset, void *ctx, gc_error *err)
{
    wait_state *s = ctx;
    if (type == GC_KUBE_SYNCED) {
        for (size_t i = 0; i < s->out->count; i++)
            s->missing = s->missing || !s->seen[i];
        return s->missing ? GC_KUBE_STOP : 0;
    }
    size_t i;
    gc_wait_job *job = find_job(s, gc_kube_field(jobset, NULL, "name"), &i);
    if (!job || settled(job))
        return 0;
    s->seen[i] = true;
    gc_job_facts f;
    gc_job_facts_from_jobset(jobset, &f);
    /* Deleted, or being deleted (a foreground deletion keeps the JobSet until its pods are
     * gone): its pods and Workload no longer matter. */
    if (type == GC_KUBE_DELETED || f.deleting) {
        job->outcome = GC_WAIT_CANCELLED;
    } else {
        int rc = job_facts_fetch(s->kube, jobset, &f, err);
        if (rc)
            return rc;
        gc_job_status_derive(&f, &job->status);
        job->outcome = judge(s->out->state, &f, &job->status);
    }
    report(s);
    return done(s) ? GC_KUBE_STOP : 0;
}

/* A JobSet-less job's Job, judged through its JobSet view. */
static int on_indexed_job(enum gc_kube_event_type type, json_t *job, void *ctx, gc_error *err)
{
    if (type == GC_KUBE_SYNCED)
        return on_jobset(type, job, ctx, err);
    json_t *view = gc_job_indexed_view(job);
    int rc = view ? on_jobset(type, view, ctx, err) : 0;
    json_decref(view);
    return rc;
}

/* The selector that covers the jobs: the name of one, the workload label of several, or
 * nothing (the whole namespace). */
static void selector(const gc_wait_result *out, bool by_label, gc_kube_list_options *opts,
                     gc_buf *text)
{
    if (out->count == 1) {
        gc_buf_printf(text, "metadata.name=%s", out->jobs[0].name);
        opts->field_selector = text->data;
    } else if (by_label) {
        gc_buf_puts(text, GC_LABEL_WORKLOAD " in (");
        for (size_t i = 0; i < out->count; i++)
            gc_buf_printf(text, "%s%s", i ? "," : "", out->jobs[i].name);
        gc_buf_putc(text, ')');
        opts->label_selector = text->data;
    }
}

static int watch(wait_state *s, bool by_label, long timeout_ms, gc_error *err)
{
    gc_kube_list_options opts = {0};
    gc_buf text;
    gc_buf_init(&text);
    selector(s->out, by_label, &opts, &text);
    char *path = s->indexed ? job_indexed_path(s->kube, NULL) : gc_job_jobset_path(s->kube, NULL);
    /* What is left of the time, in whole seconds (at least 1: the time ran out is decided by
     * the caller); 0 looks once; JOB_NO_TIMEOUT waits. */
    long seconds = timeout_ms > 0 ? (timeout_ms + 999) / 1000 : timeout_ms;
    int rc = job_list_watch(s->kube, path, &opts, seconds, s->indexed ? on_indexed_job : on_jobset,
                            s, err);
    free(path);
    gc_buf_free(&text);
    return rc;
}

/* Whether `name` is a JobSet-less job (its Indexed Job exists). */
static bool indexed_job_exists(gc_kube *kube, const char *name)
{
    char *path = job_indexed_path(kube, name);
    json_t *job = NULL;
    gc_error ignored = {0};
    bool found = gc_kube_get(kube, path, NULL, &job, &ignored) == 0 && job_is_indexed_job(job);
    json_decref(job);
    free(path);
    return found;
}

/* After a list that lacked some jobs: whether each exists at all. A missing one is an error;
 * one that exists was not in a labelled list, so the namespace must be watched; a JobSet-less
 * one is counted in *indexed. */
static int look_for_missing(wait_state *s, bool *unlabelled, size_t *indexed, gc_error *err)
{
    *unlabelled = false;
    *indexed = 0;
    for (size_t i = 0; i < s->out->count; i++) {
        if (s->seen[i])
            continue;
        char *path = gc_job_jobset_path(s->kube, s->out->jobs[i].name);
        int rc = gc_kube_get(s->kube, path, NULL, NULL, err);
        free(path);
        if (rc && err->http_status == 404 && indexed_job_exists(s->kube, s->out->jobs[i].name)) {
            (*indexed)++;
            continue;
        }
        if (rc && err->http_status == 404)
            return gc_job_not_found(s->kube, s->out->jobs[i].name, err);
        if (rc)
            return rc;
        *unlabelled = true;
    }
    return 0;
}

static void start_over(wait_state *s)
{
    s->missing = false;
    for (size_t i = 0; i < s->out->count; i++) {
        s->seen[i] = false;
        s->out->jobs[i].outcome = GC_WAIT_PENDING;
        memset(&s->out->jobs[i].status, 0, sizeof(s->out->jobs[i].status));
    }
}

static void describe_pending(const gc_wait_result *out, gc_buf *b)
{
    for (size_t i = 0; i < out->count; i++) {
        const gc_wait_job *job = &out->jobs[i];
        if (job->outcome != GC_WAIT_PENDING)
            continue;
        gc_buf_printf(b, "%s%s %s", b->len ? "; " : "", job->name,
                      job->status.text[0] ? job->status.text : "not seen yet");
        if (job->status.detail[0])
            gc_buf_printf(b, " (%s)", job->status.detail);
    }
}

/* The exit status and message once the watch is over: a job that cannot get there first, then
 * the time. */
static int conclude(const gc_wait_result *out, long timeout, bool indexed, gc_error *err)
{
    for (size_t i = 0; i < out->count; i++) {
        const gc_wait_job *job = &out->jobs[i];
        if (job->outcome == GC_WAIT_FAILED)
            return gc_fail(err, GC_EXIT_JOB_FAILED, "job %s failed: %s", job->name,
                           job->status.detail[0] ? job->status.detail : "no reason given");
        if (job->outcome == GC_WAIT_CANCELLED)
            return gc_fail(err, GC_EXIT_JOB_FAILED,
                           "job %s was cancelled (its %s was deleted) before it %s", job->name,
                           indexed ? "Job" : "JobSet",
                           out->state == GC_WAIT_FOR_RUNNING    ? "was running"
                           : out->state == GC_WAIT_FOR_ADMITTED ? "was admitted"
                           : out->state == GC_WAIT_FOR_FINISHED ? "finished"
                                                                : "succeeded");
    }
    if (!out->timed_out)
        return 0;
    gc_buf pending;
    gc_buf_init(&pending);
    describe_pending(out, &pending);
    char when[64];
    int rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "timed out %s; not %s yet: %s; the jobs keep going (gcluster job inspect NAME "
                     "follows one)",
                     job_timeout_words(timeout, when, sizeof(when)), gc_wait_for_name(out->state),
                     pending.data);
    snprintf(err->reason, sizeof(err->reason), "Timeout");
    gc_buf_free(&pending);
    return rc;
}

int gc_job_wait(gc_kube *kube, const gc_wait_request *r, const gc_events *ev, gc_wait_result *out,
                gc_error *err)
{
    memset(out, 0, sizeof(*out));
    long timeout;
    int rc = parse_request(r, &out->state, &timeout, err);
    if (rc)
        return rc;
    out->ns = gc_xstrdup(gc_kube_namespace(kube));
    out->count = r->count;
    out->jobs = gc_xcalloc(r->count, sizeof(*out->jobs));
    for (size_t i = 0; i < r->count; i++)
        out->jobs[i].name = gc_xstrdup(r->names[i]);
    wait_state s = {.kube = kube,
                    .ev = ev,
                    .out = out,
                    .seen = gc_xcalloc(r->count, sizeof(bool)),
                    .stop_on_first = out->state != GC_WAIT_FOR_FINISHED};
    gc_buf_init(&s.progress);
    long long deadline = timeout > 0 ? gc_clock_ms() + timeout * 1000 : 0;
    bool by_label = true;
    for (;;) {
        long long left = deadline ? deadline - gc_clock_ms() : timeout;
        out->timed_out = deadline && left <= 0;
        if (out->timed_out)
            break;
        rc = watch(&s, by_label, left, err);
        out->timed_out = rc && !strcmp(err->reason, "Timeout");
        if (out->timed_out)
            rc = 0;
        /* No JobSet API: every job may still be a JobSet-less one. */
        if (rc && err->http_status == 404 && !s.indexed) {
            rc = 0;
            s.missing = true;
        }
        if (rc || out->timed_out || !s.missing || s.indexed)
            break;
        bool unlabelled;
        size_t indexed;
        rc = look_for_missing(&s, &unlabelled, &indexed, err);
        if (!rc && indexed && indexed < out->count)
            rc = gc_fail(err, GC_EXIT_USAGE,
                         "job wait follows JobSets or JobSet-less jobs (batch/v1 Indexed Jobs), "
                         "not both at once: wait for each kind with a job wait of its own");
        if (!rc && indexed) {
            s.indexed = true;
            start_over(&s);
            continue;
        }
        if (rc || !unlabelled || !by_label)
            break;
        by_label = false;
        start_over(&s);
    }
    gc_event(ev, GC_EVENT_PROGRESS_END, "%s", "");
    if (!rc)
        rc = conclude(out, timeout, s.indexed, err);
    free(s.seen);
    gc_buf_free(&s.progress);
    return rc;
}

void gc_wait_result_free(gc_wait_result *result)
{
    for (size_t i = 0; i < result->count; i++)
        free(result->jobs[i].name);
    free(result->jobs);
    free(result->ns);
    memset(result, 0, sizeof(*result));
}
