/*
 * The GKE clusters of a project, as gcloud lists them with the user's own credentials: the
 * project is --project, else gcloud's configured one (`gcloud config get-value project`, as
 * Google's gcluster falls back to it).
 */
#include "gcluster/buf.h"
#include "gcluster/cluster.h"
#include "gcluster/process.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define GCLOUD_TIMEOUT_MS (120 * 1000)
#define GCLOUD_OUTPUT_MAX (16u << 20)

static int run_gcloud(const gc_cluster_list_request *r, char **argv, gc_process_result *out,
                      gc_error *err)
{
    gc_process p = {.program = r->gcloud,
                    .argv = argv,
                    .timeout_ms = GCLOUD_TIMEOUT_MS,
                    .max_stdout = GCLOUD_OUTPUT_MAX};
    int rc = gc_process_run(&p, out, err);
    if (rc)
        return rc;
    if (out->exec_errno == ENOENT)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "gcloud is not installed (or not on $PATH): cluster list asks gcloud for "
                       "the project's clusters; install the Google Cloud CLI");
    if (gc_process_succeeded(out))
        return 0;
    char how[768];
    gc_process_explain(out, &p, how, sizeof(how));
    return gc_fail(err, GC_EXIT_RUNTIME, "%s %s %s failed: %s", argv[0], argv[1], argv[2], how);
}

/* gcloud's configured project, or an error that says how to name one. */
static int configured_project(const gc_cluster_list_request *r, char **project, gc_error *err)
{
    char *argv[] = {"gcloud", "config", "get-value", "project", NULL};
    gc_process_result res;
    int rc = run_gcloud(r, argv, &res, err);
    if (!rc) {
        char *text = gc_xstrndup(res.out.data, res.out.len);
        text[strcspn(text, "\r\n")] = '\0';
        if (text[0] && strcmp(text, "(unset)") != 0)
            *project = text;
        else {
            free(text);
            rc = gc_fail(err, GC_EXIT_USAGE,
                         "no Google Cloud project: give --project PROJECT, or set one with "
                         "gcloud config set project PROJECT");
        }
    }
    gc_process_result_free(&res);
    return rc;
}

static const char *str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

static int parse_clusters(const gc_buf *text, gc_cluster_list *out, gc_error *err)
{
    json_error_t jerr;
    json_t *doc = json_loadb(text->data, text->len, 0, &jerr);
    if (!json_is_array(doc)) {
        json_decref(doc);
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "gcloud container clusters list --format=json did not print a JSON list "
                       "(%s)",
                       jerr.text[0] ? jerr.text : "another JSON value");
    }
    out->items = gc_xcalloc(json_array_size(doc) + 1, sizeof(*out->items));
    size_t i;
    const json_t *c;
    json_array_foreach(doc, i, c)
    {
        const char *name = str(c, "name");
        if (!name)
            continue;
        gc_cluster_summary *s = &out->items[out->count++];
        s->name = gc_xstrdup(name);
        s->location = gc_xstrdup(str(c, "location") ? str(c, "location") : "");
        s->status = gc_xstrdup(str(c, "status") ? str(c, "status") : "");
        s->version =
            str(c, "currentMasterVersion") ? gc_xstrdup(str(c, "currentMasterVersion")) : NULL;
        json_int_t nodes = json_integer_value(json_object_get(c, "currentNodeCount"));
        s->nodes = nodes > 0 ? (unsigned)nodes : 0;
    }
    json_decref(doc);
    return 0;
}

int gc_cluster_list_clusters(const gc_cluster_list_request *r, gc_cluster_list *out, gc_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = 0;
    if (r->project)
        out->project = gc_xstrdup(r->project);
    else
        rc = configured_project(r, &out->project, err);
    if (rc)
        return rc;
    char *argv[] = {"gcloud",    "container",  "clusters",      "list",
                    "--project", out->project, "--format=json", NULL};
    gc_process_result res;
    rc = run_gcloud(r, argv, &res, err);
    if (!rc)
        rc = parse_clusters(&res.out, out, err);
    gc_process_result_free(&res);
    if (rc)
        gc_cluster_list_free(out);
    return rc;
}

void gc_cluster_list_free(gc_cluster_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        gc_cluster_summary *s = &list->items[i];
        free(s->name), free(s->location), free(s->status), free(s->version);
    }
    free(list->items);
    free(list->project);
    memset(list, 0, sizeof(*list));
}
