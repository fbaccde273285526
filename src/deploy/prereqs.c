/*
 * What `job submit` installs when the cluster lacks it, as Google's gcluster does before a
 * submit: JobSet and Kueue, through deploy's installer (install.c: the kubectl-apply module's
 * default releases, checked against the same kept digests, with the module's Helm values, then
 * the same bounded wait for the controllers and webhooks), so a later `deploy` finds them
 * present and changes nothing. When Kueue was just installed, or the job names a
 * PriorityClass, the five PriorityClasses deploy applies (very-low ... very-high) are applied
 * too, unless the cluster has PriorityClasses of its own (names other than system-* and gke-*).
 *
 * Left out on purpose: Google's gcluster also creates a ClusterQueue sized from the node pools
 * and a LocalQueue for it. What a queue admits (flavors, quotas, the Pathways head pool's
 * share) is the blueprint's to say, and deploy applies it; a guessed queue would be one deploy
 * then has to fight. So a Kueue installed here has no queue yet: the report says so
 * (`needs_queue`), and the submit that follows stops, naming how to make one. A release that
 * runs is left as it is, whatever its version (Google's reinstalls an older Kueue after asking,
 * deleting every queued workload): whether it can run the job is the submit's own check, and
 * `deploy --upgrade` replaces it. So every submit pays one round trip for this: the two API
 * groups, read together.
 */
#include "deploy/internal.h"

#include "gcluster/kube.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* In install order: JobSet before Kueue, whose JobSet integration needs JobSet's CRD. */
static const struct {
    const char *name, *group, *ns, *controller;
} prerequisites[] = {
    {"JobSet", "jobset.x-k8s.io", "jobset-system", "jobset-controller-manager"},
    {"Kueue", "kueue.x-k8s.io", "kueue-system", "kueue-controller-manager"},
};

/* Whether the list of PriorityClasses holds one that neither Kubernetes (system-*) nor GKE
 * (gke-*) made: then its owner chose the classes, and none are added. */
static bool has_own_priority_classes(const json_t *list)
{
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(list, "items"), i, item)
    {
        const char *name = gc_kube_field(item, NULL, "name");
        if (name && strncmp(name, "system-", 7) && strncmp(name, "gke-", 4))
            return true;
    }
    return false;
}

/* What every submit pays for the check: the two API groups (and, with `priority`, the
 * PriorityClasses) read together, one round trip. A group's 404 means it is not served. The
 * answers go into `cache` as deploy_install_check_one reads it; the controllers' versions are
 * not read (an older release is left as it is, so its version changes nothing here). */
static int discover(gc_kube *kube, bool priority, json_t *cache, json_t **classes, gc_error *err)
{
    json_t *groups[2] = {NULL, NULL};
    gc_kube_read reads[3] = {
        {.path = "/apis/jobset.x-k8s.io", .object = &groups[0]},
        {.path = "/apis/kueue.x-k8s.io", .object = &groups[1]},
        {.path = "/apis/scheduling.k8s.io/v1/priorityclasses", .object = classes},
    };
    int rc = gc_kube_read_all(kube, reads, priority ? 3 : 2);
    for (size_t i = 0; i < 2; i++) {
        if (reads[i].rc == 0 || reads[i].err.http_status == 404) {
            const char *version = "";
            size_t j;
            json_t *v;
            json_array_foreach(json_object_get(groups[i], "versions"), j, v)
            {
                if (json_string_value(json_object_get(v, "version")))
                    version = json_string_value(json_object_get(v, "version"));
            }
            json_object_set_new(cache, prerequisites[i].group, json_string(version));
            char key[256];
            snprintf(key, sizeof(key), "deployments/%s/%s", prerequisites[i].ns,
                     prerequisites[i].controller);
            json_object_set_new(cache, key, json_null());
        }
        json_decref(groups[i]);
    }
    /* A 404 of a group is an answer, not a failure. */
    rc = 0;
    for (size_t i = 0; i < (priority ? 3u : 2u) && !rc; i++)
        if (reads[i].rc && !(i < 2 && reads[i].err.http_status == 404))
            rc = gc_fail(err, reads[i].rc, "reading %s: %s", reads[i].path, reads[i].err.message);
    for (size_t i = 0; i < 3; i++)
        gc_error_clear(&reads[i].err);
    return rc;
}

static int apply_priority_classes(gc_kube *kube, const json_t *objects, gc_error *err)
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
    }
    json_decref(cache);
    return rc;
}

int gc_prereq_check(const gc_prereq_request *r, gc_error *err)
{
    if (r->manifests_mirror && strncmp(r->manifests_mirror, "https://", 8))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--manifests-mirror %s: give an https:// URL (release files are fetched "
                       "over HTTPS only)",
                       r->manifests_mirror);
    if (r->manifests_dir && r->manifests_mirror)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--manifests-dir and --manifests-mirror both say where the release files "
                       "come from; give one");
    struct stat st;
    if (r->manifests_dir && (stat(r->manifests_dir, &st) || !S_ISDIR(st.st_mode)))
        return gc_fail(err, GC_EXIT_USAGE, "--manifests-dir %s: not a folder", r->manifests_dir);
    if (r->skip && (r->manifests_dir || r->manifests_mirror))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--%s says where JobSet and Kueue are installed from, but "
                       "--skip-prereqs installs nothing; drop one of them",
                       r->manifests_dir ? "manifests-dir" : "manifests-mirror");
    return 0;
}

int gc_prereq_install(gc_kube *kube, const gc_prereq_request *r, const gc_events *ev,
                      gc_prereq_report *report, gc_error *err)
{
    memset(report, 0, sizeof(*report));
    int rc = gc_prereq_check(r, err);
    if (rc || r->skip)
        return rc;
    deploy_release_source src = {.dir = r->manifests_dir, .mirror = r->manifests_mirror};
    json_t *cache = json_object();
    json_t *listed = NULL;
    rc = discover(kube, r->priority, cache, &listed, err);
    for (size_t i = 0; i < 2 && !rc; i++) {
        rc = deploy_install_check_one(kube, cache, prerequisites[i].name, NULL, &src,
                                      &report->installs[i], err);
        report->install_count = i + 1;
    }
    json_decref(cache);
    bool kueue_missing = !rc && report->installs[1].state == GC_INSTALL_MISSING;
    if (!rc && kueue_missing && !listed)
        rc = gc_kube_get(kube, "/apis/scheduling.k8s.io/v1/priorityclasses", NULL, &listed, err);
    bool own = !listed || has_own_priority_classes(listed);
    json_decref(listed);
    if (rc)
        return rc;
    json_t *classes = json_array();
    if (!own && (kueue_missing || r->priority))
        deploy_priority_classes(classes);
    size_t i;
    json_t *obj;
    json_array_foreach(classes, i, obj)
    {
        gc_strings_push(&report->priority_classes, gc_kube_field(obj, NULL, "name"));
    }
    report->needs_queue = !rc && kueue_missing;
    if (!rc && !r->plan)
        rc = deploy_install_apply(kube, &src, ev, report->installs, report->install_count, err);
    if (!rc && !r->plan && json_array_size(classes))
        rc = apply_priority_classes(kube, classes, err);
    json_decref(classes);
    return rc;
}

void gc_prereq_report_free(gc_prereq_report *report)
{
    for (size_t i = 0; i < report->install_count; i++)
        deploy_install_free(&report->installs[i]);
    gc_strings_free(&report->priority_classes);
    memset(report, 0, sizeof(*report));
}
