/*
 * job gke-template-extract: the overlay files --gke-custom-templates-path reads, one per kind of
 * object submit generates. Each holds what gcluster generates for an example job, commented out
 * as a reference to copy fields from, and then an overlay that changes nothing, so that a
 * directory just extracted and passed back yields exactly the objects submit makes without it.
 */
#include "gcluster/emit.h"
#include "gcluster/manifest.h"
#include "gcluster/submit.h"
#include "gcluster/sys.h"
#include "submit/submit_checks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The example jobs the references are generated for. */
static int example_plan(bool pathways, gc_submit_plan *plan, gc_error *err)
{
    gc_submit_request r;
    memset(&r, 0, sizeof(r));
    gc_submit_request_defaults(&r);
    r.name = "example";
    r.image = "us-docker.pkg.dev/my-project/my-repo/my-image:tag";
    r.command = "python3 train.py";
    r.dry_run_out = "-";
    r.queue = "my-queue";
    if (pathways) {
        r.compute_type = "v6e-16";
        r.pathways = true;
        r.pathways_gcs_location = "gs://my-bucket/pathways";
    } else {
        r.compute_type = "n2-standard-8";
    }
    return gc_submit_prepare(&r, plan, err);
}

static void commented(const char *text, gc_buf *out)
{
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        gc_buf_printf(out, "#   %.*s\n", (int)len, line);
        line += len + (end ? 1 : 0);
    }
}

/* A literal (a macro, not a const pointer) so the compiler checks the format at every -O level. */
#define OVERLAY_INTRO                                                                              \
    "# An overlay for gcluster job submit --gke-custom-templates-path DIR (gcluster %s).\n"        \
    "# It changes %s,\n"                                                                           \
    "# every one that submit generates: the mapping at the end of this file is merged onto it "    \
    "as\n"                                                                                         \
    "# a JSON merge patch (RFC 7386): a mapping merges key by key, null removes the key, any "     \
    "other\n"                                                                                      \
    "# value replaces it (a list replaces the whole list). Keep only what you change.\n"           \
    "# gcluster keeps apiVersion, kind, metadata.name, metadata.namespace and the labels\n"        \
    "# " GC_LABEL_QUEUE " and " GC_LABEL_WORKLOAD "; an overlay that sets them\n"                  \
    "# is refused. The merged object is checked by the cluster (server dry runs) before "          \
    "anything\n"                                                                                   \
    "# is created. Delete this file to change nothing.\n"                                          \
    "#\n"                                                                                          \
    "# For reference, what gcluster generates for an example job\n"                                \
    "# (%s):\n"                                                                                    \
    "#\n"

/* One file's text: the introduction, the reference, and an overlay that changes nothing. */
static int file_text(const gc_template_kind *k, const json_t *object, const char *example,
                     gc_buf *out, gc_error *err)
{
    gc_buf yaml;
    gc_buf_init(&yaml);
    int rc = gc_emit_yaml(object, &yaml, err);
    if (!rc) {
        gc_buf_printf(out, OVERLAY_INTRO, GCLUSTER_VERSION, k->what, example);
        commented(yaml.data, out);
        gc_buf_puts(out, "#\n# The overlay. For example, to add a label to the object:\n"
                         "#   metadata:\n#     labels:\n#       team: research\n"
                         "metadata:\n  labels: {}\n");
    }
    gc_buf_free(&yaml);
    return rc;
}

/* The generated objects, in gc_template_kinds order. */
static int example_objects(json_t *objects[4], gc_error *err)
{
    gc_submit_plan plain, pathways;
    int rc = example_plan(false, &plain, err);
    if (!rc)
        rc = example_plan(true, &pathways, err);
    else
        memset(&pathways, 0, sizeof(pathways));
    json_t *indexed = NULL;
    if (!rc)
        rc = gc_workload_jobset(&plain.workload, &objects[0], err);
    if (!rc)
        rc = gc_workload_jobset(&pathways.workload, &objects[1], err);
    if (!rc)
        rc = gc_workload_indexed_job(&plain.workload, &indexed, err);
    for (size_t i = 0; !rc && i < json_array_size(indexed); i++) {
        json_t *o = json_array_get(indexed, i);
        bool service = !strcmp(json_string_value(json_object_get(o, "kind")), "Service");
        objects[service ? 3 : 2] = json_incref(o);
    }
    json_decref(indexed);
    gc_submit_plan_free(&plain);
    gc_submit_plan_free(&pathways);
    if (!rc && (!objects[2] || !objects[3]))
        rc = gc_fail(err, GC_EXIT_RUNTIME, "the Indexed Job fallback made no Job or no Service");
    return rc;
}

static const char *const examples[] = {
    "job submit --name example --compute-type n2-standard-8 --queue my-queue ...",
    "job submit --name example --compute-type v6e-16 --pathways ...",
    "the same job without JobSet",
    "the same job without JobSet",
};

static char *join(const char *dir, const char *file)
{
    size_t n = strlen(dir) + strlen(file) + 2;
    char *path = gc_xcalloc(n, 1);
    snprintf(path, n, "%s/%s", dir, file);
    return path;
}

int gc_submit_templates_extract(const char *dir, bool overwrite, gc_strings *written, gc_error *err)
{
    struct stat st;
    if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
        return gc_fail(err, GC_EXIT_USAGE, "--output-dir %s is not a directory", dir);
    /* Every file is checked before any is written: nothing half-extracted. */
    for (const gc_template_kind *k = gc_template_kinds; !overwrite && k->file; k++) {
        char *path = join(dir, k->file);
        bool exists = lstat(path, &st) == 0;
        int rc = exists ? gc_fail(err, GC_EXIT_USAGE,
                                  "%s exists; pass --overwrite to replace the files of %s, or "
                                  "choose another --output-dir",
                                  path, dir)
                        : 0;
        free(path);
        if (rc)
            return rc;
    }
    json_t *objects[4] = {0};
    int rc = example_objects(objects, err);
    if (!rc && mkdir(dir, 0755) != 0 && errno != EEXIST)
        rc = gc_fail(err, GC_EXIT_USAGE, "--output-dir %s: cannot make it: %s", dir,
                     strerror(errno));
    size_t i = 0;
    for (const gc_template_kind *k = gc_template_kinds; !rc && k->file; k++, i++) {
        gc_buf text;
        gc_buf_init(&text);
        rc = file_text(k, objects[i], examples[i], &text, err);
        char *path = join(dir, k->file);
        if (!rc)
            rc = gc_file_write(path, text.data, text.len, err);
        if (!rc)
            gc_strings_push(written, path);
        free(path);
        gc_buf_free(&text);
    }
    for (i = 0; i < 4; i++)
        json_decref(objects[i]);
    return rc;
}
