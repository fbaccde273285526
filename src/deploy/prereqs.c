/*
 * What `job submit` installs when the cluster lacks it, as Google's gcluster does before a
 * submit: JobSet and Kueue, through deploy's installer (install.c: the kubectl-apply module's
 * default releases, checked against the same kept digests, with the module's Helm values, then
 * the same bounded wait for the controllers and webhooks), so a later `deploy` finds them
 * present and changes nothing. When Kueue was just installed, the five PriorityClasses deploy
 * applies (very-low ... very-high) are applied too, unless the cluster has PriorityClasses of
 * its own (names other than system-* and gke-*) or the user may not list them.
 *
 * Left out on purpose: Google's gcluster also creates a ClusterQueue sized from the node pools
 * and a LocalQueue for it. What a queue admits (flavors, quotas, the Pathways head pool's
 * share) is the blueprint's to say, and deploy applies it; a guessed queue would be one deploy
 * then has to fight. So a Kueue installed here has no queue yet: the report says so
 * (`needs_queue`), and the submit that follows stops, naming how to make one. A release that
 * runs is left as it is, whatever its version (Google's reinstalls an older Kueue after asking,
 * deleting every queued workload): whether it can run the job is the submit's own check, and
 * `deploy --upgrade` replaces it. What is missing is found by the submit itself, in the reads
 * of its first round trip (JobSet's API group; Kueue's LocalQueues at every version it serves),
 * so a cluster that has both pays nothing for this.
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

void gc_prereq_release_files(gc_strings *out)
{
    for (size_t i = 0; i < sizeof(prerequisites) / sizeof(*prerequisites); i++)
        deploy_release_file(prerequisites[i].name, out);
}

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
    /* What the submit found, as deploy_install_check_one reads it: the group not served, so no
     * controller version is read either. */
    json_t *cache = json_object();
    const bool missing[2] = {r->jobset_missing, r->kueue_missing};
    for (size_t i = 0; i < 2 && !rc; i++) {
        if (!missing[i])
            continue;
        char key[256];
        snprintf(key, sizeof(key), "deployments/%s/%s", prerequisites[i].ns,
                 prerequisites[i].controller);
        json_object_set_new(cache, prerequisites[i].group, json_string(""));
        json_object_set_new(cache, key, json_null());
        rc = deploy_install_check_one(kube, cache, prerequisites[i].name, NULL, &src,
                                      &report->installs[report->install_count++], err);
    }
    json_decref(cache);
    /* A Kueue installed here comes with deploy's PriorityClasses, unless the cluster has its
     * own; a user who may not list them cannot tell, and none are applied. */
    json_t *listed = NULL;
    json_t *classes = json_array();
    if (!rc && r->kueue_missing) {
        gc_error list_err = {0};
        int list_rc = gc_kube_get(kube, "/apis/scheduling.k8s.io/v1/priorityclasses", NULL, &listed,
                                  &list_err);
        if (list_rc && list_err.http_status == 403)
            report->priority_classes_unknown = true;
        else if (list_rc)
            rc = gc_fail(err, list_rc, "reading the PriorityClasses: %s", list_err.message);
        else if (!has_own_priority_classes(listed))
            deploy_priority_classes(classes);
        gc_error_clear(&list_err);
    }
    json_decref(listed);
    size_t i;
    json_t *obj;
    json_array_foreach(classes, i, obj)
    {
        gc_strings_push(&report->priority_classes, gc_kube_field(obj, NULL, "name"));
    }
    report->needs_queue = !rc && r->kueue_missing;
    if (!rc && !r->plan)
        rc = deploy_install_apply(kube, &src, ev, report->installs, report->install_count, err);
    if (!rc && !r->plan && json_array_size(classes))
        rc = deploy_apply_objects(kube, classes, NULL, err);
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
