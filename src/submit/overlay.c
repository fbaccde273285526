/*
 * Overlays (--gke-custom-templates-path DIR): a user's changes to the objects submit generates.
 *
 * Google's gcluster renders its manifests from Go text/template files and lets a user replace
 * them. Ours are built as data, so a user's change is data too: each file of DIR is a YAML
 * mapping, named after the kind of object it changes, merged onto every such object submit
 * generates as a JSON merge patch (RFC 7386: a mapping merges key by key, null removes a key,
 * any other value, lists included, replaces). The patched object then goes through the same
 * checks, dry runs and emitter as an unpatched one. What gcluster relies on to find, queue and
 * cancel the job (apiVersion, kind, name, namespace, the Kueue queue and workload labels) stays
 * gcluster's: an overlay that would change it is refused when it is read, before anything is
 * sent.
 */
#include "gcluster/emit.h"
#include "gcluster/manifest.h"
#include "gcluster/submit.h"
#include "submit/submit_checks.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The files an overlay directory may hold, each the kind of object it changes. */
const gc_template_kind gc_template_kinds[] = {
    {GC_TEMPLATE_JOBSET, "the JobSet of a job without Pathways"},
    {GC_TEMPLATE_PATHWAYS_JOBSET, "the JobSet of a Pathways job (full, headless or a Shared "
                                  "Pathways Service)"},
    {GC_TEMPLATE_INDEXED_JOB, "the batch/v1 Indexed Job of a job without JobSet"},
    {GC_TEMPLATE_INDEXED_SERVICE, "the headless Service of a job without JobSet"},
    {NULL, NULL},
};

static bool known_file(const char *name)
{
    for (const gc_template_kind *k = gc_template_kinds; k->file; k++)
        if (!strcmp(k->file, name))
            return true;
    return false;
}

void submit_merge_patch(json_t *target, const json_t *patch)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)patch, key, value)
    {
        if (json_is_null(value)) {
            json_object_del(target, key);
            continue;
        }
        json_t *old = json_object_get(target, key);
        if (json_is_object(value) && json_is_object(old)) {
            submit_merge_patch(old, value);
        } else if (json_is_object(value)) {
            json_t *fresh = json_object();
            submit_merge_patch(fresh, value);
            json_object_set_new(target, key, fresh);
        } else {
            json_object_set_new(target, key, json_deep_copy(value));
        }
    }
}

/* An error at the place in the file where `container[key]` was written. */
static int refuse_at(const gc_yaml_doc *doc, const json_t *container, const char *key,
                     gc_error *err, const char *what)
{
    int line = 0, column = 0;
    gc_yaml_mark_of(doc, container, key, 0, &line, &column);
    return gc_fail(err, GC_EXIT_USAGE,
                   "--gke-custom-templates-path: %s:%d:%d: %s; remove it from the overlay",
                   doc->name, line, column, what);
}

/* Labels gcluster finds, queues and cancels the job by. */
static int check_labels(const gc_yaml_doc *doc, const json_t *metadata, bool queued, gc_error *err)
{
    const json_t *labels = json_object_get(metadata, "labels");
    if (!labels)
        return 0;
    if (!json_is_object(labels))
        return refuse_at(doc, metadata, "labels", err,
                         "metadata.labels must be a mapping (null or another value would remove "
                         "the labels gcluster sets, kueue.x-k8s.io/queue-name among them)");
    if (queued && json_object_get(labels, GC_LABEL_QUEUE))
        return refuse_at(doc, labels, GC_LABEL_QUEUE, err,
                         "metadata.labels." GC_LABEL_QUEUE
                         " is gcluster's (the LocalQueue: set it with --queue)");
    if (json_object_get(labels, GC_LABEL_WORKLOAD))
        return refuse_at(doc, labels, GC_LABEL_WORKLOAD, err,
                         "metadata.labels." GC_LABEL_WORKLOAD
                         " is gcluster's (job list, inspect and cancel find the job by it)");
    return 0;
}

/* Refuses an overlay that would change what gcluster owns in the object. */
static int check_owned(const gc_yaml_doc *doc, const json_t *patch, bool queued, gc_error *err)
{
    static const char *const top[][2] = {
        {"apiVersion", "apiVersion is gcluster's (the object's API)"},
        {"kind", "kind is gcluster's (the file name says which kind the overlay changes)"},
        {"status", "status is the cluster's, not part of what is created"},
    };
    for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++)
        if (json_object_get(patch, top[i][0]))
            return refuse_at(doc, patch, top[i][0], err, top[i][1]);
    const json_t *metadata = json_object_get(patch, "metadata");
    if (!metadata)
        return 0;
    if (!json_is_object(metadata))
        return refuse_at(doc, patch, "metadata", err,
                         "metadata must be a mapping (null or another value would remove the "
                         "name gcluster gives the object)");
    if (json_object_get(metadata, "name"))
        return refuse_at(doc, metadata, "name", err,
                         "metadata.name is gcluster's (set it with --name)");
    if (json_object_get(metadata, "namespace"))
        return refuse_at(doc, metadata, "namespace", err,
                         "metadata.namespace is gcluster's (set it with --gke-namespace)");
    if (json_object_get(metadata, "generateName"))
        return refuse_at(doc, metadata, "generateName", err,
                         "metadata.generateName is gcluster's (the object is named by --name)");
    return check_labels(doc, metadata, queued, err);
}

static int load_file(const char *dir, const char *file, json_t *overlays, gc_error *err)
{
    size_t n = strlen(dir) + strlen(file) + 2;
    char *path = gc_xcalloc(n, 1);
    snprintf(path, n, "%s/%s", dir, file);
    gc_yaml_doc doc;
    int rc = gc_yaml_load_file(path, &doc, err);
    free(path);
    if (rc) {
        gc_error_prefix(err, "--gke-custom-templates-path: ");
        return rc;
    }
    size_t count = json_array_size(doc.documents);
    json_t *patch = gc_yaml_root(&doc);
    if (count > 1) {
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--gke-custom-templates-path: %s holds %zu YAML documents; an overlay is one "
                     "mapping (remove the \"---\" lines)",
                     doc.name, count);
    } else if (patch && !json_is_null(patch) && !json_is_object(patch)) {
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--gke-custom-templates-path: %s is %s; an overlay is a mapping of the fields "
                     "to change (gcluster job gke-template-extract writes one to start from)",
                     doc.name, gc_yaml_type_name(patch));
    } else if (json_is_object(patch)) {
        bool queued = strcmp(file, GC_TEMPLATE_INDEXED_SERVICE) != 0;
        rc = check_owned(&doc, patch, queued, err);
        if (!rc)
            json_object_set(overlays, file, patch);
    }
    gc_yaml_doc_free(&doc);
    return rc;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gc_submit_overlays_load(gc_submit_plan *plan, const char *dir, gc_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--gke-custom-templates-path %s: %s (write the files with gcluster job "
                       "gke-template-extract --output-dir %s)",
                       dir, strerror(errno), dir);
    gc_strings names = {0};
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') /* ".", "..", and an editor's hidden files */
            gc_strings_push(&names, e->d_name);
    closedir(d);
    qsort(names.items, names.count, sizeof(*names.items), compare_names);
    json_t *overlays = json_object();
    int rc = 0;
    for (size_t i = 0; !rc && i < names.count; i++)
        if (!known_file(names.items[i]))
            rc = gc_fail(err, GC_EXIT_USAGE,
                         "--gke-custom-templates-path %s: unknown file \"%s\"; an overlay "
                         "directory holds only %s, %s, %s and %s (gcluster job "
                         "gke-template-extract writes them)",
                         dir, names.items[i], GC_TEMPLATE_JOBSET, GC_TEMPLATE_PATHWAYS_JOBSET,
                         GC_TEMPLATE_INDEXED_JOB, GC_TEMPLATE_INDEXED_SERVICE);
    for (size_t i = 0; !rc && i < names.count; i++)
        rc = load_file(dir, names.items[i], overlays, err);
    gc_strings_free(&names);
    if (rc) {
        json_decref(overlays);
        return rc;
    }
    json_decref(plan->overlays);
    plan->overlays = overlays;
    return 0;
}

void submit_overlay_apply(const json_t *overlays, const char *file, json_t *object)
{
    const json_t *patch = json_object_get(overlays, file);
    if (patch)
        submit_merge_patch(object, patch);
}

int gc_submit_plan_jobset(const gc_submit_plan *plan, json_t **jobset, gc_error *err)
{
    const gc_workload *w = &plan->workload;
    int rc = gc_workload_jobset(w, jobset, err);
    if (!rc)
        submit_overlay_apply(plan->overlays,
                             w->pathways ? GC_TEMPLATE_PATHWAYS_JOBSET : GC_TEMPLATE_JOBSET,
                             *jobset);
    return rc;
}
