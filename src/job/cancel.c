/*
 * `job cancel`: one DELETE with propagationPolicy=Foreground, so the JobSet stays visible (with
 * a deletion time stamp) until its Jobs and pods are gone; a JobSet deleted with the default
 * policy can leave pods behind when a Job orphans them. With --wait, a watch on the pods ends
 * when the last one is gone, then one on the JobSet when it is.
 */
#include "gcluster/buf.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"
#include "gcluster/sps.h"
#include "gcluster/sys.h"
#include "job/gateway_cleanup.h"
#include "job/watch_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gone_state {
    const char *name;
    const char *what; /* "pod", "JobSet" */
    const gc_events *ev;
    json_t *present; /* name -> true, of every object not yet gone */
    size_t deleted;
    bool synced;
} gone_state;

/* "812/1025 pods gone": a count a thousand pods can be followed by, on one line. */
static void show_remaining(const gone_state *s)
{
    size_t remaining = json_object_size(s->present), total = remaining + s->deleted;
    if (s->synced && remaining)
        gc_progress(s->ev, "cancelling %s: %zu/%zu %s%s gone", s->name, s->deleted, total, s->what,
                    total == 1 ? "" : "s");
}

/* Follows objects by name, so that a re-list (after 410 Gone), which announces every object
 * again as ADDED, counts none twice; done when none are left. */
static int on_event(enum gc_kube_event_type type, json_t *object, void *ctx, gc_error *err)
{
    (void)err;
    gone_state *s = ctx;
    const char *name = gc_kube_field(object, NULL, "name");
    if (type == GC_KUBE_ADDED && name) {
        json_object_set_new(s->present, name, json_true());
    } else if (type == GC_KUBE_DELETED && name && json_object_get(s->present, name)) {
        json_object_del(s->present, name);
        s->deleted++;
    } else if (type == GC_KUBE_SYNCED) {
        s->synced = true;
    }
    if ((type == GC_KUBE_SYNCED || type == GC_KUBE_DELETED) && !json_object_size(s->present))
        return GC_KUBE_STOP;
    show_remaining(s);
    return 0;
}

/* Waits until no pod of the job is left, then until the JobSet is gone (each for at most
 * `timeout` seconds, job_list_watch's meaning: 0 looks once). */
static int wait_until_gone(gc_kube *kube, const char *name, long timeout, const gc_events *ev,
                           gc_cancel_result *out, gc_error *err)
{
    char selector[300];
    snprintf(selector, sizeof(selector), "jobset.sigs.k8s.io/jobset-name=%s", name);
    gc_kube_list_options pods = {.label_selector = selector, .accept = GC_KUBE_ACCEPT_METADATA};
    char *pod_path = gc_kube_path(NULL, "v1", gc_kube_namespace(kube), "pods", NULL);
    gone_state pod_state = {.name = name, .what = "pod", .ev = ev, .present = json_object()};
    int rc = job_list_watch(kube, pod_path, &pods, timeout, on_event, &pod_state, err);
    free(pod_path);
    json_decref(pod_state.present);
    out->pods_deleted = pod_state.deleted;

    char field[300];
    snprintf(field, sizeof(field), "metadata.name=%s", name);
    gc_kube_list_options jobsets = {.field_selector = field, .accept = GC_KUBE_ACCEPT_METADATA};
    char *path = gc_job_jobset_path(kube, NULL);
    gone_state jobset_state = {.name = name, .what = "JobSet", .ev = ev, .present = json_object()};
    if (!rc)
        rc = job_list_watch(kube, path, &jobsets, timeout, on_event, &jobset_state, err);
    free(path);
    json_decref(jobset_state.present);
    gc_event(ev, GC_EVENT_PROGRESS_END, "%s", "");
    char when[64];
    if (rc && !strcmp(err->reason, "Timeout"))
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "job %s is still being deleted %s (gcluster job inspect %s shows what is "
                       "left)",
                       name, job_timeout_words(timeout, when, sizeof(when)), name);
    out->gone = rc == 0;
    return rc;
}

static int check_request(const gc_cancel_request *r, long *timeout, gc_error *err)
{
    *timeout = JOB_NO_TIMEOUT;
    if (gc_job_name_check(r->name, err))
        return err->code;
    if (r->timeout && !r->wait)
        return gc_fail(err, GC_EXIT_USAGE, "--timeout only applies with --wait");
    if (r->timeout)
        return gc_clock_parse_duration("--timeout", r->timeout, timeout, err);
    return 0;
}

/* A Shared Pathways Service's clients lose it when it goes: they are named, and the cancel goes
 * ahead only with force, their proxy Jobs deleted first (a proxy without its resource manager
 * only holds a node). Anything that is not a service passes. */
static int check_sps_clients(gc_kube *kube, const gc_cancel_request *r, const gc_events *ev,
                             gc_error *err)
{
    /* One list: the proxy Jobs labelled with this name (no service, no such Jobs). */
    char *jobs_path = gc_kube_path("batch", "v1", gc_kube_namespace(kube), "jobs", NULL);
    char selector[128];
    snprintf(selector, sizeof(selector), "%s=%s", GC_LABEL_SPS_SERVICE, r->name);
    const char *query[] = {"labelSelector", selector, NULL};
    json_t *jobs = NULL;
    gc_error ignored = {0};
    gc_sps_usage u = {0};
    if (gc_kube_get(kube, jobs_path, query, &jobs, &ignored) == 0)
        gc_sps_clients_of(r->name, jobs, &u);
    json_decref(jobs);
    free(jobs_path);
    if (u.count == 0) {
        gc_sps_usage_free(&u);
        return 0;
    }
    gc_buf list;
    gc_buf_init(&list);
    for (size_t i = 0; i < u.count; i++)
        gc_buf_printf(&list, "%s%s (%s, %d slice%s, %s)", i ? ", " : "", u.clients[i].job,
                      u.clients[i].user, u.clients[i].slices, u.clients[i].slices == 1 ? "" : "s",
                      u.clients[i].waiting ? "waiting" : "holding");
    int rc = 0;
    if (!r->force) {
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "service %s has %zu client%s attached: %s; their programs lose the service "
                     "when it goes: let them finish, or cancel it anyway with --force",
                     r->name, u.count, u.count == 1 ? "" : "s", list.data);
    } else {
        for (size_t i = 0; i < u.count; i++) {
            char *path =
                gc_kube_path("batch", "v1", gc_kube_namespace(kube), "jobs", u.clients[i].job);
            gc_error e = {0};
            if (gc_kube_delete(kube, path, "Background", NULL, &e) != 0 && e.http_status != 404)
                gc_warn(ev, "cannot delete proxy job %s: %s", u.clients[i].job, e.message);
            free(path);
        }
        gc_notice(ev, "--force: deleted the proxy jobs of service %s's clients: %s", r->name,
                  list.data);
    }
    gc_buf_free(&list);
    gc_sps_usage_free(&u);
    return rc;
}

int gc_job_cancel_check(const gc_cancel_request *r, gc_error *err)
{
    long timeout;
    return check_request(r, &timeout, err);
}

/* A job submitted without JobSet (GCLUSTER_DISABLE_JOBSET=1, or a cluster without the JobSet
 * API): its Indexed Job, labelled with its workload, and its headless Service. *found says
 * whether there was one. */
static int cancel_indexed_job(gc_kube *kube, const char *name, json_t **deleted, bool *found,
                              gc_error *err)
{
    const char *ns = gc_kube_namespace(kube);
    char *path = gc_kube_path("batch", "v1", ns, "jobs", name);
    json_t *job = NULL;
    gc_error get_err = {0};
    *found = gc_kube_get(kube, path, NULL, &job, &get_err) == 0 &&
             gc_kube_same(gc_kube_field(job, "labels", GC_LABEL_WORKLOAD), name);
    json_decref(job);
    int rc = *found ? gc_kube_delete(kube, path, "Foreground", deleted, err) : 0;
    free(path);
    if (!rc && *found) {
        path = gc_kube_path(NULL, "v1", ns, "services", name);
        gc_error svc_err = {0};
        if (gc_kube_delete(kube, path, NULL, NULL, &svc_err) && svc_err.http_status != 404)
            rc = gc_fail(err, svc_err.code, "%s", svc_err.message);
        free(path);
    }
    return rc;
}

int gc_job_cancel(gc_kube *kube, const gc_cancel_request *r, const gc_events *ev,
                  gc_cancel_result *out, gc_error *err)
{
    memset(out, 0, sizeof(*out));
    long timeout;
    int rc = check_request(r, &timeout, err);
    if (rc)
        return rc;
    rc = check_sps_clients(kube, r, ev, err);
    if (rc)
        return rc;
    char *path = gc_job_jobset_path(kube, r->name);
    json_t *deleted = NULL;
    rc = gc_kube_delete(kube, path, "Foreground", &deleted, err);
    free(path);
    bool indexed = false;
    if (rc && err->http_status == 404) {
        gc_error not_found = *err;
        rc = cancel_indexed_job(kube, r->name, &deleted, &indexed, err);
        if (!rc && !indexed) {
            *err = not_found;
            rc = gc_job_not_found(kube, r->name, err);
        }
    }
    if (!rc) {
        out->name = gc_xstrdup(r->name);
        out->ns = gc_xstrdup(gc_kube_namespace(kube));
        out->uid = gc_job_strdup_or_null(gc_kube_field(deleted, NULL, "uid"));
    }
    json_decref(deleted);
    /* --wait follows a JobSet's pods; a JobSet-less job's go with its Job in the background. */
    if (!rc && r->wait && !indexed)
        rc = wait_until_gone(kube, r->name, timeout, ev, out, err);
    if (!rc)
        job_gateways_cleanup(kube, r->name, ev, &out->gateways_removed);
    if (rc)
        gc_cancel_result_free(out);
    return rc;
}

void gc_cancel_result_free(gc_cancel_result *result)
{
    free(result->name);
    free(result->ns);
    free(result->uid);
    gc_strings_free(&result->gateways_removed);
    memset(result, 0, sizeof(*result));
}
