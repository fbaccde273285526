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
 * (`needs_queue`), and the submit that follows stops, naming how to make one. An older release
 * is reported in the data and left alone (Google's reinstalls Kueue after asking, deleting every
 * queued workload); whether it can run the job is the submit's own check, and `deploy
 * --upgrade` replaces it.
 */
#include "deploy/internal.h"

#include "gcluster/kube.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* In install order: JobSet before Kueue, whose JobSet integration needs JobSet's CRD. */
static const char *const prerequisites[] = {"JobSet", "Kueue"};

/* Whether the cluster has a PriorityClass that neither Kubernetes (system-*) nor GKE (gke-*)
 * made: then its owner chose the classes, and none are added. */
static int has_own_priority_classes(gc_kube *kube, bool *own, gc_error *err)
{
    char *path = gc_kube_path("scheduling.k8s.io", "v1", NULL, "priorityclasses", NULL);
    json_t *list = NULL;
    int rc = gc_kube_get(kube, path, NULL, &list, err);
    free(path);
    if (rc)
        return rc;
    *own = false;
    size_t i;
    json_t *item;
    json_array_foreach(json_object_get(list, "items"), i, item)
    {
        const char *name = gc_kube_field(item, NULL, "name");
        if (name && strncmp(name, "system-", 7) && strncmp(name, "gke-", 4))
            *own = true;
    }
    json_decref(list);
    return 0;
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
    for (size_t i = 0; i < 2 && !rc; i++) {
        rc = deploy_install_check_one(kube, cache, prerequisites[i], NULL, &src,
                                      &report->installs[i], err);
        report->install_count = i + 1;
    }
    json_decref(cache);
    if (rc)
        return rc;
    bool kueue_missing = report->installs[1].state == GC_INSTALL_MISSING;
    bool own = true;
    if (kueue_missing || r->priority)
        rc = has_own_priority_classes(kube, &own, err);
    json_t *classes = json_array();
    if (!rc && !own)
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
