/*
 * Running the cloud plan: each step is checked with its describe (read-only) in order and, when
 * applying, created if it is missing. A rerun after a failure finds what the first run made and
 * goes on from the step that failed; nothing that exists is changed.
 */
#include "deploy/internal.h"

#include "gcluster/process.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Creating a cluster or a multi-host TPU pool takes GKE minutes, sometimes tens of them. */
#define CREATE_TIMEOUT_MS (60 * 60 * 1000)
#define CHECK_TIMEOUT_MS  (3 * 60 * 1000)
#define OUTPUT_MAX        (1u << 20)

/* Whether gcloud's describe failed because the resource is not there (rather than for want of
 * credentials, permission or network): its errors say "not found" / "NOT_FOUND" / 404. */
static bool says_not_found(const gc_buf *err)
{
    const char *text = err->data ? err->data : "";
    return strstr(text, "not found") || strstr(text, "NOT_FOUND") || strstr(text, "Not found") ||
           strstr(text, "404") || strstr(text, "was not found");
}

/* The first line of what gcloud printed, for a report. */
static char *first_line(const gc_buf *err)
{
    const char *text = err->data ? err->data : "";
    return gc_xstrndup(text, strcspn(text, "\n"));
}

static int run(const char *gcloud, char **argv, int timeout_ms, gc_process_result *r, gc_error *err)
{
    gc_process p = {.program = gcloud,
                    .argv = argv,
                    .timeout_ms = timeout_ms,
                    .max_stdout = OUTPUT_MAX,
                    .max_stderr = OUTPUT_MAX};
    return gc_process_run(&p, r, err);
}

/* Checks one step: present, missing, or not known (why in `detail`). */
static int check(const char *gcloud, const gc_cloud_step *s, gc_cloud_outcome *o, gc_error *err)
{
    gc_process_result r;
    int rc = run(gcloud, s->check, CHECK_TIMEOUT_MS, &r, err);
    if (!rc) {
        bool found = gc_process_succeeded(&r);
        if (found && s->present_output) {
            /* a setting of something that exists: present when it has the value */
            const char *out = r.out.data ? r.out.data : "";
            size_t len = strcspn(out, "\r\n");
            bool same =
                len == strlen(s->present_output) && !strncasecmp(out, s->present_output, len);
            o->state = same != s->removes ? GC_CLOUD_PRESENT : GC_CLOUD_MISSING;
            gc_process_result_free(&r);
            return 0;
        }
        if (found && s->expect) {
            /* present: are its settings the blueprint's? */
            const char *out = r.out.data ? r.out.data : "";
            size_t len = strcspn(out, "\r\n");
            while (len && (out[len - 1] == ' ' || out[len - 1] == '\t'))
                len--;
            /* nothing printed: the setting cannot be read (an older gcloud), not drift */
            if (!len || (len == strlen(s->expect) && !strncmp(out, s->expect, len))) {
                o->state = GC_CLOUD_PRESENT;
            } else {
                o->state = GC_CLOUD_DIFFERS;
                o->detail = gc_xasprintf("it has %.*s where the blueprint gives %s%s", (int)len,
                                         out, s->expect,
                                         s->update ? "" : "; gcloud cannot change that in place");
            }
            gc_process_result_free(&r);
            return 0;
        }
        if (!found && !says_not_found(&r.err)) {
            o->state = GC_CLOUD_NOT_CHECKED;
            o->detail = first_line(&r.err);
        } else if (s->removes) {
            o->state = found ? GC_CLOUD_MISSING : GC_CLOUD_PRESENT; /* still to remove, or gone */
        } else {
            o->state = found ? GC_CLOUD_PRESENT : GC_CLOUD_MISSING;
        }
    }
    gc_process_result_free(&r);
    return rc;
}

static int create(const char *gcloud, const gc_cloud_step *s, gc_cloud_outcome *o,
                  const gc_events *ev, gc_error *err)
{
    gc_notice(ev, "running %s", o->command);
    gc_process_result r;
    gc_process p = {.program = gcloud,
                    .argv = s->create,
                    .timeout_ms = CREATE_TIMEOUT_MS,
                    .input = s->input,
                    .input_len = s->input ? strlen(s->input) : 0,
                    .max_stdout = OUTPUT_MAX,
                    .max_stderr = OUTPUT_MAX};
    int rc = gc_process_run(&p, &r, err);
    gc_buf output;
    gc_buf_init(&output);
    gc_buf_append(&output, r.err.data, r.err.len);
    gc_buf_append(&output, r.out.data, r.out.len);
    o->detail = gc_buf_detach(&output);
    if (!rc && !gc_process_succeeded(&r)) {
        char how[256];
        gc_process_describe(&r, &p, how, sizeof(how));
        o->state = GC_CLOUD_FAILED;
        if (s->removes && s->kind != GC_CLOUD_REMOVE_DEFAULT_POOL)
            rc = gc_fail(err, GC_EXIT_RUNTIME,
                         "gcloud %s deleting %s %s (module %s); its output is above. Fix the "
                         "cause and run gcluster destroy again: what is gone already is skipped",
                         how, gc_cloud_step_kind_name(s->kind), s->name,
                         s->module_id[0] ? s->module_id : "-");
        else
            rc = gc_fail(err, GC_EXIT_RUNTIME,
                         "gcloud %s creating %s %s (module %s); its output is above. Fix the "
                         "cause and run gcluster deploy again: what exists already is kept and "
                         "skipped",
                         how, gc_cloud_step_kind_name(s->kind), s->name,
                         s->module_id[0] ? s->module_id : "-");
    } else if (!rc) {
        o->state = GC_CLOUD_CREATED;
    }
    gc_process_result_free(&r);
    return rc;
}

/* Brings a step that differs back to the blueprint's settings. */
static int update(const char *gcloud, const gc_cloud_step *s, gc_cloud_outcome *o,
                  const gc_events *ev, gc_error *err)
{
    gc_notice(ev, "running %s", o->command);
    gc_process_result r;
    gc_process p = {.program = gcloud,
                    .argv = s->update,
                    .timeout_ms = CREATE_TIMEOUT_MS,
                    .max_stdout = OUTPUT_MAX,
                    .max_stderr = OUTPUT_MAX};
    int rc = gc_process_run(&p, &r, err);
    if (!rc && !gc_process_succeeded(&r)) {
        char how[256];
        gc_process_describe(&r, &p, how, sizeof(how));
        o->state = GC_CLOUD_FAILED;
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "gcloud %s updating %s %s (module %s): %s; fix the cause and run gcluster "
                     "deploy again",
                     how, gc_cloud_step_kind_name(s->kind), s->name,
                     s->module_id[0] ? s->module_id : "-", r.err.data ? r.err.data : "");
    } else if (!rc) {
        o->state = GC_CLOUD_UPDATED;
    }
    gc_process_result_free(&r);
    return rc;
}

/* The describes are independent reads: they run CHECK_WORKERS at a time, each through the
 * process runner, and their answers are used in plan order below as if asked one by one. */
#define CHECK_WORKERS 4

typedef struct prechecks {
    const char *gcloud;
    const gc_cloud_plan *plan;
    const bool *wanted;
    gc_cloud_outcome *results;
    int *rcs;
    gc_error *errs;
    size_t next;
    pthread_mutex_t lock;
} prechecks;

static void *check_worker(void *arg)
{
    prechecks *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        while (c->next < c->plan->count && !c->wanted[c->next])
            c->next++;
        size_t i = c->next++;
        pthread_mutex_unlock(&c->lock);
        if (i >= c->plan->count)
            return NULL;
        c->rcs[i] = check(c->gcloud, &c->plan->steps[i], &c->results[i], &c->errs[i]);
    }
}

/* Checks the steps marked in `wanted` concurrently; `done[i]` says which were asked. */
static void precheck(prechecks *c, bool *done)
{
    pthread_t threads[CHECK_WORKERS];
    size_t started = 0;
    c->next = 0;
    for (size_t t = 0; t < CHECK_WORKERS; t++)
        if (!pthread_create(&threads[t], NULL, check_worker, c))
            started++;
    if (!started)
        check_worker(c); /* no thread could be made: ask them here, one by one */
    for (size_t t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    for (size_t i = 0; i < c->plan->count; i++)
        done[i] = done[i] || c->wanted[i];
}

static bool inside_cluster(const gc_cloud_step *s)
{
    return s->kind == GC_CLOUD_NODE_POOL || s->kind == GC_CLOUD_REMOVE_DEFAULT_POOL ||
           s->kind == GC_CLOUD_CLUSTER_ADDON;
}

/* Asks every describe that needs no earlier step created: the first one alone (without
 * credentials it is the only one asked), then the rest outside the cluster, then, when the
 * cluster exists, those inside it. */
static void check_ahead(const char *gcloud, const gc_cloud_plan *plan, gc_cloud_outcome *results,
                        int *rcs, gc_error *errs, bool *done)
{
    size_t n = plan->count, first = n;
    for (size_t i = 0; i < n && first == n; i++)
        if (plan->steps[i].check)
            first = i;
    if (first == n)
        return;
    rcs[first] = check(gcloud, &plan->steps[first], &results[first], &errs[first]);
    done[first] = true;
    if (rcs[first] || results[first].state == GC_CLOUD_NOT_CHECKED)
        return;
    bool *wanted = gc_xcalloc(n, sizeof(*wanted));
    size_t cluster = n;
    for (size_t i = 0; i < n; i++)
        if (plan->steps[i].kind == GC_CLOUD_CLUSTER && !plan->steps[i].removes)
            cluster = i;
    /* a plan that creates the cluster asks about what is inside it only once it exists */
    for (size_t i = 0; i < n; i++)
        wanted[i] =
            plan->steps[i].check && !done[i] && (cluster == n || !inside_cluster(&plan->steps[i]));
    prechecks c = {.gcloud = gcloud,
                   .plan = plan,
                   .wanted = wanted,
                   .results = results,
                   .rcs = rcs,
                   .errs = errs};
    pthread_mutex_init(&c.lock, NULL);
    precheck(&c, done);
    if (cluster < n && done[cluster] && !rcs[cluster] &&
        results[cluster].state == GC_CLOUD_PRESENT) {
        for (size_t i = 0; i < n; i++)
            wanted[i] = plan->steps[i].check && !done[i];
        precheck(&c, done);
    }
    pthread_mutex_destroy(&c.lock);
    free(wanted);
}

int deploy_cloud_run(const gc_cloud_plan *plan, const char *gcloud, bool apply, const gc_events *ev,
                     gc_cloud_report *report, gc_error *err)
{
    memset(report, 0, sizeof(*report));
    report->applied = apply;
    report->outcomes = gc_xcalloc(plan->count ? plan->count : 1, sizeof(*report->outcomes));
    report->count = plan->count;
    for (size_t i = 0; i < plan->count; i++)
        report->outcomes[i].command = deploy_cloud_step_line(&plan->steps[i]);
    if (!plan->count)
        return 0; /* nothing in Google Cloud: gcloud is not needed */
    char *found = gcloud ? gc_xstrdup(gcloud) : gc_process_find_program("gcloud");
    if (!found) {
        for (size_t i = 0; i < plan->count; i++) {
            report->outcomes[i].state = GC_CLOUD_NOT_CHECKED;
            report->outcomes[i].detail = gc_xstrdup("gcloud is not on PATH");
        }
        if (apply)
            return gc_fail(err, GC_EXIT_USAGE,
                           "creating the blueprint's Google Cloud resources needs gcloud, and it "
                           "is not on PATH; install the Google Cloud CLI, or run the commands of "
                           "--plan yourself");
        return 0;
    }
    report->checked = true;
    int rc = 0;
    bool cluster_missing = false, blind = false;
    size_t n = plan->count;
    gc_cloud_outcome *ahead = gc_xcalloc(n, sizeof(*ahead));
    int *ahead_rc = gc_xcalloc(n, sizeof(*ahead_rc));
    gc_error *ahead_err = gc_xcalloc(n, sizeof(*ahead_err));
    bool *asked = gc_xcalloc(n, sizeof(*asked));
    gc_progress(ev, "checking %zu Google Cloud resources", n);
    check_ahead(found, plan, ahead, ahead_rc, ahead_err, asked);
    gc_event(ev, GC_EVENT_PROGRESS_END, "%s", "");
    for (size_t i = 0; i < plan->count && !rc; i++) {
        const gc_cloud_step *s = &plan->steps[i];
        gc_cloud_outcome *o = &report->outcomes[i];
        if (blind) {
            /* gcloud could not answer above (credentials, permission, network): asking again
             * for every step would only repeat that. */
            o->state = GC_CLOUD_NOT_CHECKED;
            o->detail = gc_xstrdup("not checked: gcloud could not check an earlier step");
            continue;
        }
        bool in_cluster = inside_cluster(s);
        if (!s->check || (cluster_missing && in_cluster && !apply)) {
            /* idempotent, or inside a cluster that does not exist yet */
            o->state = GC_CLOUD_MISSING;
        } else if (asked[i]) {
            o->state = ahead[i].state;
            o->detail = ahead[i].detail;
            ahead[i].detail = NULL;
            if ((rc = ahead_rc[i]) != 0) {
                *err = ahead_err[i];
                break;
            }
        } else {
            gc_progress(ev, "checking %s %s", gc_cloud_step_kind_name(s->kind), s->name);
            rc = check(found, s, o, err);
            gc_event(ev, GC_EVENT_PROGRESS_END, "%s", "");
            if (rc)
                break;
        }
        if (s->kind == GC_CLOUD_CLUSTER && !s->removes)
            cluster_missing = o->state == GC_CLOUD_MISSING;
        if (o->state == GC_CLOUD_NOT_CHECKED) {
            blind = true;
            if (apply)
                rc = gc_fail(err, GC_EXIT_RUNTIME,
                             "could not tell whether %s %s exists: `%s` said: %s; fix that "
                             "(gcloud auth login, the project, permissions) and run gcluster "
                             "deploy again",
                             gc_cloud_step_kind_name(s->kind), s->name, s->check[0], o->detail);
            continue;
        }
        if (o->state == GC_CLOUD_DIFFERS && s->update) {
            free(o->command);
            o->command = deploy_argv_shell_line(s->update);
        }
        if (apply && o->state == GC_CLOUD_MISSING)
            rc = create(found, s, o, ev, err);
        else if (apply && o->state == GC_CLOUD_DIFFERS && s->update)
            rc = update(found, s, o, ev, err);
    }
    for (size_t i = 0; i < n; i++)
        free(ahead[i].detail);
    free(ahead);
    free(ahead_rc);
    free(ahead_err);
    free(asked);
    free(found);
    return rc;
}

void deploy_cloud_report_free(gc_cloud_report *report)
{
    for (size_t i = 0; i < report->count; i++) {
        free(report->outcomes[i].command);
        free(report->outcomes[i].detail);
    }
    free(report->outcomes);
    memset(report, 0, sizeof(*report));
}
