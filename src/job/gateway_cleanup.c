/*
 * Removing the storage-profile gateways nobody mounts (gateway_cleanup.h). A claim in use by a
 * pod that is still ending is held by Kubernetes' claim protection until the pod is gone, and
 * its volume by volume protection until the claim is, so both are deleted at once.
 */
#include "job/gateway_cleanup.h"

#include "gcluster/buf.h"
#include "gcluster/sys.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_MIN_AGE_SECONDS 120
#define GATEWAY_SELECTOR                                                                           \
    GC_LABEL_MANAGED_BY "=" GC_MANAGED_BY_TOOLKIT "," GC_LABEL_STORAGE_TYPE "=" GC_STORAGE_GCSFUSE

/* object[section][key] as a string, or NULL. */
static const char *field(const json_t *object, const char *section, const char *key)
{
    return gc_kube_string(json_object_get(object, section), key);
}

static int collect(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    json_array_append(ctx, item);
    return 0;
}

/* Every claimName a pod template of `object` mounts, wherever it is nested. */
static void add_claims(const json_t *node, gc_strings *claims)
{
    if (json_is_array(node)) {
        size_t i;
        const json_t *v;
        json_array_foreach(node, i, v) add_claims(v, claims);
        return;
    }
    if (!json_is_object(node))
        return;
    const char *claim = gc_kube_string(json_object_get(node, "persistentVolumeClaim"), "claimName");
    if (claim)
        gc_strings_push(claims, claim);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)node, key, v) add_claims(v, claims);
}

static bool contains(const gc_strings *list, const char *s)
{
    for (size_t i = 0; i < list->count; i++)
        if (!strcmp(list->items[i], s))
            return true;
    return false;
}

static long min_age_seconds(void)
{
    const char *text = getenv("GCLUSTER_GATEWAY_MIN_AGE");
    char *end = NULL;
    long v = text && *text ? strtol(text, &end, 10) : -1;
    return end && !*end && v >= 0 ? v : DEFAULT_MIN_AGE_SECONDS;
}

/* The claims the namespace's jobs other than `cancelled` mount: JobSets, and the Indexed Jobs of
 * jobs that run without JobSet (labelled with their workload). */
static int claims_in_use(gc_kube *kube, const char *ns, const char *cancelled, gc_strings *claims,
                         gc_error *err)
{
    json_t *jobs = json_array();
    char *jobsets = gc_kube_path("jobset.x-k8s.io", "v1alpha2", ns, "jobsets", NULL);
    char *batch = gc_kube_path("batch", "v1", ns, "jobs", NULL);
    gc_kube_list_options all = {0};
    gc_kube_list_options workloads = {.label_selector = GC_LABEL_WORKLOAD};
    int rc = gc_kube_list(kube, jobsets, &all, collect, jobs, NULL, err);
    /* A cluster without JobSet has no JobSets to mount anything. */
    if (rc && err->http_status == 404)
        rc = 0;
    if (!rc)
        rc = gc_kube_list(kube, batch, &workloads, collect, jobs, NULL, err);
    size_t i;
    const json_t *job;
    json_array_foreach(jobs, i, job)
    {
        const char *name = field(job, "metadata", "name");
        if (name && strcmp(name, cancelled) != 0 && !field(job, "metadata", "deletionTimestamp"))
            add_claims(json_object_get(job, "spec"), claims);
    }
    json_decref(jobs);
    free(jobsets);
    free(batch);
    return rc;
}

static void remove_gateway(gc_kube *kube, const char *ns, const json_t *claim, const gc_events *ev,
                           gc_strings *removed)
{
    const char *name = field(claim, "metadata", "name");
    const char *volume = field(claim, "spec", "volumeName");
    char *path = gc_kube_path(NULL, "v1", ns, "persistentvolumeclaims", name);
    gc_error err = {0};
    int rc = gc_kube_delete(kube, path, NULL, NULL, &err);
    free(path);
    if (!rc && volume) {
        path = gc_kube_path(NULL, "v1", NULL, "persistentvolumes", volume);
        rc = gc_kube_delete(kube, path, NULL, NULL, &err);
        free(path);
    }
    if (rc && err.http_status != 404)
        gc_warn(ev, "gateway claim %s was not removed: %s", name, err.message);
    else
        gc_strings_push(removed, name);
}

void job_gateways_cleanup(gc_kube *kube, const char *cancelled, const gc_events *ev,
                          gc_strings *removed)
{
    const char *ns = gc_kube_namespace(kube);
    json_t *gateways = json_array();
    char *path = gc_kube_path(NULL, "v1", ns, "persistentvolumeclaims", NULL);
    gc_kube_list_options opts = {.label_selector = GATEWAY_SELECTOR};
    gc_error err = {0};
    int rc = gc_kube_list(kube, path, &opts, collect, gateways, NULL, &err);
    free(path);
    gc_strings in_use = {0};
    if (!rc && json_array_size(gateways))
        rc = claims_in_use(kube, ns, cancelled, &in_use, &err);
    if (rc && err.http_status != 403)
        gc_warn(ev, "storage-profile gateways were not cleaned up: %s", err.message);
    long min_age = min_age_seconds();
    time_t now = gc_clock_wall();
    size_t i;
    const json_t *claim;
    json_array_foreach(rc ? NULL : gateways, i, claim)
    {
        const char *name = field(claim, "metadata", "name");
        const char *stamp = field(claim, "metadata", "creationTimestamp");
        time_t created = 0;
        bool young = !stamp || !gc_clock_parse_rfc3339(stamp, &created) || now - created < min_age;
        if (name && !young && !contains(&in_use, name) &&
            !field(claim, "metadata", "deletionTimestamp"))
            remove_gateway(kube, ns, claim, ev, removed);
    }
    gc_strings_free(&in_use);
    json_decref(gateways);
}
