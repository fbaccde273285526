/*
 * A Shared Pathways Service and its clients, read from the service JobSet and its proxy Jobs
 * (gcluster/sps.h). Pure: callers read the objects, this judges them.
 */
#include "gcluster/sps.h"
#include "job/internal.h"

#include "gcluster/buf.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool job_sps_is_service(const json_t *jobset)
{
    return gc_kube_same(gc_kube_field(jobset, "annotations", GC_ANNOTATION_PATHWAYS), "sps");
}

static const json_t *replicated_job(const json_t *jobset, const char *name)
{
    size_t i;
    const json_t *rjob;
    json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i, rjob)
    {
        if (gc_kube_same(gc_kube_string(rjob, "name"), name))
            return rjob;
    }
    return NULL;
}

static const json_t *pod_spec_of(const json_t *rjob)
{
    return json_object_get(
        json_object_get(json_object_get(json_object_get(rjob, "template"), "spec"), "template"),
        "spec");
}

/* The value of "--flag=value" among a container's args, or "". */
static const char *arg_value(const json_t *container, const char *flag)
{
    size_t n = strlen(flag), i;
    const json_t *a;
    json_array_foreach(json_object_get(container, "args"), i, a)
    {
        const char *s = json_string_value(a);
        if (s && !strncmp(s, flag, n) && s[n] == '=')
            return s + n + 1;
    }
    return "";
}

static bool ended(const json_t *job)
{
    return json_object_get(json_object_get(job, "metadata"), "deletionTimestamp") ||
           gc_kube_condition_true(job, "Complete") || gc_kube_condition_true(job, "Failed");
}

static int by_age(const void *a, const void *b)
{
    const gc_sps_client *x = a, *y = b;
    int c = strcmp(x->created, y->created);
    return c ? c : strcmp(x->job, y->job);
}

void gc_sps_clients_of(const char *service, const json_t *proxy_jobs, gc_sps_usage *u)
{
    size_t i;
    const json_t *job;
    json_array_foreach(json_object_get(proxy_jobs, "items"), i, job)
    {
        if (!gc_kube_same(gc_kube_field(job, "labels", GC_LABEL_SPS_SERVICE), service) ||
            ended(job))
            continue;
        u->clients = gc_xrealloc(u->clients, (u->count + 1) * sizeof(*u->clients));
        gc_sps_client *cl = &u->clients[u->count++];
        memset(cl, 0, sizeof(*cl));
        const char *s = gc_kube_field(job, NULL, "name");
        snprintf(cl->job, sizeof(cl->job), "%s", s ? s : "");
        s = gc_kube_field(job, "labels", GC_LABEL_SPS_USER);
        snprintf(cl->user, sizeof(cl->user), "%s", s ? s : "");
        s = gc_kube_field(job, NULL, "creationTimestamp");
        snprintf(cl->created, sizeof(cl->created), "%s", s ? s : "");
        s = gc_kube_field(job, "annotations", GC_ANNOTATION_SPS_SIZE);
        cl->slices = s ? atoi(s) : 0;
        cl->waiting =
            !gc_kube_same(gc_kube_field(job, "annotations", GC_ANNOTATION_SPS_STATE), "holding");
    }
    if (u->count)
        qsort(u->clients, u->count, sizeof(*u->clients), by_age);
    for (i = 0; i < u->count; i++)
        if (!u->clients[i].waiting)
            u->held += u->clients[i].slices;
}

int gc_sps_usage_read(const json_t *jobset, const json_t *proxy_jobs, gc_sps_usage *u,
                      gc_error *err)
{
    memset(u, 0, sizeof(*u));
    const char *name = gc_kube_field(jobset, NULL, "name");
    if (!job_sps_is_service(jobset))
        return gc_fail(err, GC_EXIT_USAGE,
                       "job %s is not a Shared Pathways Service (deploy one with job submit "
                       "--pathways-deploy-sps)",
                       name ? name : "(unnamed)");
    snprintf(u->service, sizeof(u->service), "%s", name);
    const json_t *workers = replicated_job(jobset, GC_PATHWAYS_WORKER);
    u->slices = (int)json_integer_value(json_object_get(workers, "replicas"));
    const json_t *head = pod_spec_of(replicated_job(jobset, GC_PATHWAYS_HEAD));
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(head, "containers"), i, c)
    {
        if (!gc_kube_same(gc_kube_string(c, "name"), "pathways-rm"))
            continue;
        snprintf(u->instance_type, sizeof(u->instance_type), "%s", arg_value(c, "--instance_type"));
        snprintf(u->gcs_location, sizeof(u->gcs_location), "%s",
                 arg_value(c, "--gcs_scratch_location"));
        snprintf(u->server_image, sizeof(u->server_image), "%s", gc_kube_string_or(c, "image", ""));
    }
    snprintf(u->head_pool, sizeof(u->head_pool), "%s",
             gc_kube_string_or(json_object_get(head, "nodeSelector"),
                               "cloud.google.com/gke-nodepool", ""));
    char *address = gc_sps_resource_manager_address(u->service);
    snprintf(u->address, sizeof(u->address), "%s", address);
    free(address);

    gc_sps_clients_of(u->service, proxy_jobs, u);
    return 0;
}

void gc_sps_usage_free(gc_sps_usage *u)
{
    free(u->clients);
    memset(u, 0, sizeof(*u));
}

const gc_sps_client *gc_sps_find(const gc_sps_usage *u, const char *job)
{
    for (size_t i = 0; i < u->count; i++)
        if (!strcmp(u->clients[i].job, job))
            return &u->clients[i];
    return NULL;
}

size_t job_sps_position(const gc_sps_usage *u, const char *job)
{
    size_t place = 0;
    for (size_t i = 0; i < u->count; i++) {
        if (!u->clients[i].waiting)
            continue;
        place++;
        if (!strcmp(u->clients[i].job, job))
            return place;
    }
    return 0;
}

bool gc_sps_may_start(const gc_sps_usage *u, const char *job)
{
    const gc_sps_client *me = gc_sps_find(u, job);
    return me && me->waiting && job_sps_position(u, job) == 1 && u->held + me->slices <= u->slices;
}

static const char *plural(int n)
{
    return n == 1 ? "" : "s";
}

void gc_sps_wait_reason(const gc_sps_usage *u, const char *job, char *out, size_t size)
{
    const gc_sps_client *me = gc_sps_find(u, job);
    if (!me) {
        snprintf(out, size, "%s is not a client of service %s", job, u->service);
        return;
    }
    if (!me->waiting) {
        snprintf(out, size, "%s holds %d of service %s's %d slice%s", job, me->slices, u->service,
                 u->slices, plural(u->slices));
        return;
    }
    gc_buf b;
    gc_buf_init(&b);
    int free_slices = u->slices - u->held;
    gc_buf_printf(&b, "waiting for %d %s slice%s of service %s: %d of its %d free", me->slices,
                  u->instance_type, plural(me->slices), u->service,
                  free_slices < 0 ? 0 : free_slices, u->slices);
    const char *sep = "; held by ";
    for (size_t i = 0; i < u->count; i++) {
        const gc_sps_client *c = &u->clients[i];
        if (c->waiting)
            continue;
        gc_buf_printf(&b, "%s%s (%s, %d slice%s)", sep, c->job, c->user[0] ? c->user : "?",
                      c->slices, plural(c->slices));
        sep = ", ";
    }
    size_t place = job_sps_position(u, job), waiting = 0;
    const char *first = NULL;
    for (size_t i = 0; i < u->count; i++) {
        if (u->clients[i].waiting && !first)
            first = u->clients[i].job;
        waiting += u->clients[i].waiting;
    }
    if (place == 1)
        gc_buf_printf(&b, "; first in line");
    else
        gc_buf_printf(&b, "; %zu of %zu in line, behind %s", place, waiting, first);
    snprintf(out, size, "%s", b.data ? b.data : "");
    gc_buf_free(&b);
}
