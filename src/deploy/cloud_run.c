/*
 * Running the cloud plan: each step is checked with its describe (read-only) in order and, when
 * applying, created if it is missing. A rerun after a failure finds what the first run made and
 * goes on from the step that failed; nothing that exists is changed.
 */
#include "deploy/internal.h"

#include "gcluster/process.h"

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

int gc_cloud_run(const gc_cloud_plan *plan, const char *gcloud, bool apply, const gc_events *ev,
                 gc_cloud_report *report, gc_error *err)
{
    memset(report, 0, sizeof(*report));
    report->applied = apply;
    report->outcomes = gc_xcalloc(plan->count ? plan->count : 1, sizeof(*report->outcomes));
    report->count = plan->count;
    for (size_t i = 0; i < plan->count; i++)
        report->outcomes[i].command = gc_cloud_step_line(&plan->steps[i]);
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
        bool in_cluster = s->kind == GC_CLOUD_NODE_POOL ||
                          s->kind == GC_CLOUD_REMOVE_DEFAULT_POOL ||
                          s->kind == GC_CLOUD_CLUSTER_ADDON;
        if (!s->check || (cluster_missing && in_cluster && !apply)) {
            /* idempotent, or inside a cluster that does not exist yet */
            o->state = GC_CLOUD_MISSING;
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
        if (apply && o->state == GC_CLOUD_MISSING)
            rc = create(found, s, o, ev, err);
    }
    free(found);
    return rc;
}

void gc_cloud_report_free(gc_cloud_report *report)
{
    for (size_t i = 0; i < report->count; i++) {
        free(report->outcomes[i].command);
        free(report->outcomes[i].detail);
    }
    free(report->outcomes);
    memset(report, 0, sizeof(*report));
}
