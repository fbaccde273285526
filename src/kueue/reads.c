/*
 * Kueue's objects at the API version the cluster serves, and the releases its controllers run.
 *
 * Kueue's objects: Kueue 0.15 and later serve
 * kueue.x-k8s.io/v1beta2, earlier releases only v1beta1, and nothing says which without asking.
 * The preferred version is asked in the same batch as whatever else the caller reads, so a
 * current Kueue costs no round trip of its own; a 404 from the first Kueue read sends Kueue's
 * reads again, alone, at the older version. Every command that reads Kueue's objects asks
 * through here, so they cannot disagree on which versions exist or when to fall back.
 */
#include "gcluster/kueue.h"

#include "gcluster/buf.h"
#include "gcluster/kube.h"

#include <stdlib.h>
#include <string.h>

const char *const gc_kueue_versions[] = {GC_KUEUE_VERSION, "v1beta1", NULL};

const char *gc_kueue_older_version(const char *version)
{
    for (size_t i = 0; version && gc_kueue_versions[i]; i++)
        if (!strcmp(gc_kueue_versions[i], version))
            return gc_kueue_versions[i + 1];
    return NULL;
}

char *gc_kueue_path(const char *version, const char *ns, const char *resource, const char *name)
{
    return gc_kube_path(GC_KUEUE_GROUP, version, ns, resource, name);
}

bool gc_kueue_not_served(const gc_kube_read *read)
{
    return read->rc && read->err.http_status == 404;
}

/* Points each Kueue read of the batch at `version`. */
static void aim(gc_kube_read *reads, gc_kueue_read *kueue, size_t n, const char *version)
{
    for (size_t i = 0; i < n; i++) {
        free(kueue[i].path);
        kueue[i].path = gc_kueue_path(version, kueue[i].ns, kueue[i].resource, kueue[i].name);
        reads[kueue[i].index].path = kueue[i].path;
    }
}

const char *gc_kueue_read_all(gc_kube *kube, gc_kube_read *reads, size_t count,
                              gc_kueue_read *kueue, size_t kueue_count, const size_t *group)
{
    aim(reads, kueue, kueue_count, gc_kueue_versions[0]);
    gc_kube_read_all(kube, reads, count);
    if (!kueue_count)
        return NULL;
    const gc_kube_read *first = &reads[kueue[0].index];
    if (group && reads[*group].rc)
        return gc_kueue_not_served(first) ? NULL : gc_kueue_versions[0];
    gc_kube_read *again = gc_xcalloc(kueue_count, sizeof(*again));
    const char *version = gc_kueue_versions[0];
    for (size_t v = 1; version && gc_kueue_not_served(first); v++) {
        version = gc_kueue_versions[v];
        if (!version)
            break;
        aim(reads, kueue, kueue_count, version);
        for (size_t i = 0; i < kueue_count; i++) {
            gc_kube_read *r = &reads[kueue[i].index];
            if (kueue[i].forget)
                kueue[i].forget(r->ctx);
            again[i] = *r;
            again[i].rc = 0;
            memset(&again[i].err, 0, sizeof(again[i].err));
        }
        gc_kube_read_all(kube, again, kueue_count);
        for (size_t i = 0; i < kueue_count; i++) {
            reads[kueue[i].index].rc = again[i].rc;
            reads[kueue[i].index].err = again[i].err;
        }
    }
    free(again);
    return version;
}

void gc_kueue_reads_free(gc_kueue_read *kueue, size_t kueue_count)
{
    for (size_t i = 0; i < kueue_count; i++) {
        free(kueue[i].path);
        kueue[i].path = NULL;
    }
}

char *gc_kueue_controller_release(const json_t *deployment)
{
    const json_t *containers = json_object_get(
        json_object_get(json_object_get(json_object_get(deployment, "spec"), "template"), "spec"),
        "containers");
    size_t i;
    const json_t *c;
    json_array_foreach(containers, i, c)
    {
        const char *image = gc_kube_string(c, "image");
        if (!image)
            continue;
        char *copy = gc_xstrdup(image);
        char *at = strchr(copy, '@');
        if (at)
            *at = '\0';
        char *slash = strrchr(copy, '/');
        char *colon = strrchr(slash ? slash : copy, ':');
        char *tag = colon && colon[1] ? gc_xstrdup(colon + 1) : NULL;
        free(copy);
        if (tag)
            return tag;
    }
    return NULL;
}
