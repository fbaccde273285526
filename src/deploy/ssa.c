/*
 * Server-side apply of any object the cluster serves: its REST path and scope from API discovery
 * (not a table, so a user template or a release manifest may hold any kind), the apply with our
 * field manager, and whether it changed anything.
 */
#include "deploy/internal.h"

#include "gcluster/kube.h"
#include "gcluster/kueue.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Whether the API group is served, and its version to use (preferring `want`). */
int deploy_group_version(gc_kube *kube, const char *group, const char *want, char *version,
                         size_t size, gc_error *err)
{
    char path[128];
    snprintf(path, sizeof(path), "/apis/%s", group);
    json_t *body;
    int rc = gc_kube_get(kube, path, NULL, &body, err);
    version[0] = '\0';
    if (rc)
        return err->http_status == 404 ? (gc_error_clear(err), 0) : rc;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(body, "versions"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "version"));
        if (name && (!version[0] || !strcmp(name, want)))
            snprintf(version, size, "%s", name);
    }
    json_decref(body);
    return 0;
}

/* The REST name and scope of `kind` in `api_version` ("group/version" or "v1"). */
static int resource_of(gc_kube *kube, json_t *cache, const char *api_version, const char *kind,
                       const char **resource, bool *namespaced, gc_error *err)
{
    json_t *list = json_object_get(cache, api_version);
    if (!list) {
        char *path = strchr(api_version, '/') ? gc_xasprintf("/apis/%s", api_version)
                                              : gc_xasprintf("/api/%s", api_version);
        int rc = gc_kube_get(kube, path, NULL, &list, err);
        free(path);
        if (rc && err->http_status == 404)
            return gc_fail(err, GC_EXIT_RUNTIME,
                           "the cluster does not serve %s (needed for %s); install what "
                           "provides it first",
                           api_version, kind);
        if (rc)
            return rc;
        json_object_set_new(cache, api_version, list);
    }
    size_t i;
    json_t *res;
    json_array_foreach(json_object_get(list, "resources"), i, res)
    {
        const char *name = json_string_value(json_object_get(res, "name"));
        if (name && !strchr(name, '/') &&
            !strcmp(json_string_value(json_object_get(res, "kind")), kind)) {
            *resource = name;
            *namespaced = json_is_true(json_object_get(res, "namespaced"));
            return 0;
        }
    }
    return gc_fail(err, GC_EXIT_RUNTIME, "the cluster's %s API has no kind %s", api_version, kind);
}

int deploy_locate(gc_kube *kube, json_t *cache, json_t *obj, deploy_object_ref *ref, gc_error *err)
{
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *resource = NULL;
    bool namespaced = false;
    int rc = resource_of(kube, cache, api, kind, &resource, &namespaced, err);
    if (rc)
        return rc;
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    if (namespaced && !ns) {
        ns = gc_kube_namespace(kube);
        json_object_set_new(meta, "namespace", json_string(ns));
    }
    const char *slash = strchr(api, '/');
    char group[128] = "";
    if (slash)
        snprintf(group, sizeof(group), "%.*s", (int)(slash - api), api);
    ref->path =
        gc_kube_path(group, slash ? slash + 1 : api, namespaced ? ns : NULL, resource, name);
    /* kubectl's way of naming it: the lower-case kind, then the group */
    size_t n = 0;
    for (const char *k = kind; *k && n < 63; k++)
        ref->label[n++] = (char)tolower((unsigned char)*k);
    snprintf(ref->label + n, sizeof(ref->label) - n, "%s%s/%s", group[0] ? "." : "", group, name);
    return 0;
}

/* What an object holds that apply can change: everything but status and server metadata. */
static json_t *comparable(const json_t *obj)
{
    json_t *copy = json_deep_copy(obj);
    json_object_del(copy, "status");
    json_t *meta = json_object_get(copy, "metadata");
    static const char *const server_fields[] = {"managedFields", "resourceVersion", "generation",
                                                "uid", "creationTimestamp"};
    for (size_t i = 0; i < sizeof(server_fields) / sizeof(*server_fields); i++)
        json_object_del(meta, server_fields[i]);
    return copy;
}

/* Applies one object (with dry_run: only as a dry run) and says whether it was created, changed
 * or left as it was. */
int deploy_apply_object(gc_kube *kube, json_t *obj, const deploy_object_ref *ref, bool dry_run,
                        gc_apply_outcome *outcome, gc_error *err)
{
    json_t *before = NULL, *after = NULL;
    int rc = gc_kube_get(kube, ref->path, NULL, &before, err);
    if (rc && err->http_status != 404)
        return rc;
    gc_error_clear(err);
    rc = gc_kube_apply(kube, ref->path, obj, DEPLOY_FIELD_MANAGER,
                       GC_KUBE_FORCE | GC_KUBE_STRICT | (dry_run ? GC_KUBE_DRY_RUN : 0), &after,
                       err);
    if (rc) {
        json_decref(before);
        gc_error_prefix(err, "applying %s: ", ref->label);
        return rc;
    }
    if (!before) {
        *outcome = GC_APPLY_CREATED;
    } else {
        json_t *a = comparable(before), *b = comparable(after);
        *outcome = json_equal(a, b) ? GC_APPLY_UNCHANGED : GC_APPLY_CONFIGURED;
        json_decref(a);
        json_decref(b);
    }
    json_decref(before);
    json_decref(after);
    return 0;
}

int deploy_apply_objects(gc_kube *kube, const json_t *objects, size_t *applied, gc_error *err)
{
    json_t *cache = json_object();
    int rc = 0;
    size_t i;
    json_t *obj;
    json_array_foreach(objects, i, obj)
    {
        deploy_object_ref ref = {0};
        gc_apply_outcome outcome;
        rc = deploy_locate(kube, cache, obj, &ref, err);
        if (!rc)
            rc = deploy_apply_object(kube, obj, &ref, false, &outcome, err);
        free(ref.path);
        if (rc)
            break;
        if (applied)
            ++*applied;
    }
    json_decref(cache);
    return rc;
}

void deploy_sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

/* The release a controller Deployment runs (gc_kueue_controller_release); NULL when it is not
 * there or has no tag. */
char *deploy_controller_version(gc_kube *kube, const char *ns, const char *name)
{
    char *path = gc_kube_path("apps", "v1", ns, "deployments", name);
    json_t *deployment = NULL;
    gc_error ignored = {0};
    int rc = gc_kube_get(kube, path, NULL, &deployment, &ignored);
    free(path);
    char *version = rc ? NULL : gc_kueue_controller_release(deployment);
    json_decref(deployment);
    return version;
}

/* vX.Y.Z as a number to compare; -1 when it is not a version. */
long deploy_version_number(const char *v)
{
    unsigned major, minor, patch;
    if (!v || sscanf(v[0] == 'v' ? v + 1 : v, "%u.%u.%u", &major, &minor, &patch) != 3)
        return -1;
    return (long)major * 1000000 + minor * 1000 + patch;
}

int deploy_served(gc_kube *kube, json_t *cache, const char *group, const char *want, char *version,
                  size_t size, gc_error *err)
{
    const json_t *known = json_object_get(cache, group);
    if (known) {
        snprintf(version, size, "%s", json_string_value(known));
        return 0;
    }
    int rc = deploy_group_version(kube, group, want, version, size, err);
    if (!rc)
        json_object_set_new(cache, group, json_string(version));
    return rc;
}

char *deploy_running_version(gc_kube *kube, json_t *cache, const char *ns, const char *name)
{
    char key[256];
    snprintf(key, sizeof(key), "deployments/%s/%s", ns, name);
    const json_t *known = json_object_get(cache, key);
    if (known)
        return json_is_string(known) ? gc_xstrdup(json_string_value(known)) : NULL;
    char *version = deploy_controller_version(kube, ns, name);
    json_object_set_new(cache, key, version ? json_string(version) : json_null());
    return version;
}
