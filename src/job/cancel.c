/*
 * `job cancel`: one DELETE with propagationPolicy=Foreground, so the JobSet stays visible (with
 * a deletion time stamp) until its Jobs and pods are gone; a JobSet deleted with the default
 * policy can leave pods behind when a Job orphans them. With --wait, a watch on the pods ends
 * when the last one is gone, then one on the JobSet when it is.
 */
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "job/lookup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gone_state {
    size_t remaining;
} gone_state;

/* Counts objects seen (ADDED) and gone (DELETED); done when none are left. */
static int on_event(enum gc_kube_event_type type, json_t *object, void *ctx, gc_error *err)
{
    (void)object;
    (void)err;
    gone_state *s = ctx;
    if (type == GC_KUBE_ADDED)
        s->remaining++;
    else if (type == GC_KUBE_DELETED && s->remaining > 0)
        s->remaining--;
    else if (type == GC_KUBE_SYNCED && s->remaining == 0)
        return GC_KUBE_STOP;
    return type == GC_KUBE_DELETED && s->remaining == 0 ? GC_KUBE_STOP : 0;
}

/* Waits until no object of the collection matches `opts`. */
static int wait_for_none(gc_kube *kube, const char *path, const gc_kube_list_options *opts,
                         long timeout, gc_error *err)
{
    gone_state s = {0};
    return gc_kube_list_watch(kube, path, opts, (int)timeout, on_event, &s, err);
}

static int wait_until_gone(gc_kube *kube, const char *name, long timeout, gc_error *err)
{
    char selector[300];
    snprintf(selector, sizeof(selector), "jobset.sigs.k8s.io/jobset-name=%s", name);
    gc_kube_list_options pods = {.label_selector = selector, .accept = GC_KUBE_ACCEPT_METADATA};
    char *pod_path = gc_kube_path(NULL, "v1", gc_kube_namespace(kube), "pods", NULL);
    int rc = wait_for_none(kube, pod_path, &pods, timeout, err);
    free(pod_path);

    char field[300];
    snprintf(field, sizeof(field), "metadata.name=%s", name);
    gc_kube_list_options jobsets = {.field_selector = field, .accept = GC_KUBE_ACCEPT_METADATA};
    char *path = jobset_path(kube, NULL);
    if (!rc)
        rc = wait_for_none(kube, path, &jobsets, timeout, err);
    free(path);
    if (rc && !strcmp(err->reason, "Timeout"))
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "job %s is still being deleted after %lds (gcluster job inspect %s shows "
                       "what is left)",
                       name, timeout, name);
    return rc;
}

int gc_job_cancel(gc_kube *kube, const char *name, bool wait, const char *timeout,
                  const gc_output *o, gc_error *err)
{
    long seconds = 0;
    if (timeout && gc_parse_duration("--timeout", timeout, &seconds, err))
        return err->code;
    char *path = jobset_path(kube, name);
    json_t *deleted = NULL;
    int rc = gc_kube_delete(kube, path, "Foreground", &deleted, err);
    free(path);
    json_decref(deleted);
    if (rc && err->http_status == 404)
        return job_not_found(kube, name, err);
    if (rc)
        return rc;
    if (!wait) {
        fprintf(o->out,
                "Cancelled job %s: its Jobs and pods are being deleted (add --wait to "
                "wait for them).\n",
                name);
        return 0;
    }
    rc = wait_until_gone(kube, name, seconds, err);
    if (!rc)
        fprintf(o->out, "Cancelled job %s: its JobSet, Jobs and pods are gone.\n", name);
    return rc;
}
