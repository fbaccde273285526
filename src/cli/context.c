/*
 * Stored defaults in ~/.gcluster/context.json, readable by Google's gcluster too (same keys).
 */
#include "cli/cli.h"

#include "gcluster/buf.h"
#include "gcluster/catalog.h"
#include "gcluster/gcp.h"
#include "gcluster/sys.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *key;  /* what `job config set` takes */
    const char *json; /* the key in context.json */
} context_keys[] = {
    {"project", "project_id"},
    {"cluster", "cluster_name"},
    {"location", "location"},
};

char *cli_context_path(void)
{
    const char *home = getenv("HOME");
    return gc_xasprintf("%s/.gcluster/context.json", home && *home ? home : ".");
}

/* The file holds three short names; anything larger is not what gcluster wrote. */
#define MAX_CONTEXT_FILE (64u << 10)
/* How much of a rejected value a message shows (a value may be any length). */
#define SHOWN_VALUE 64

static const char *const value_forms[] = {
    "a Google Cloud project ID: 6 to 30 lower-case letters, digits and hyphens, starting with a "
    "letter and not ending with a hyphen (or DOMAIN:ID); `gcloud projects list` shows yours",
    "a GKE cluster name: at most 40 lower-case letters, digits and hyphens, starting with a "
    "letter and ending with a letter or digit; `gcloud container clusters list` shows yours",
    "a Google Cloud region or zone, such as us-central1 or us-central1-a",
};

/* Whether `value` has the form of context_keys[key]; otherwise a message in `err` that starts
 * with `where` and ends with `fix`. */
static int check_value(size_t key, const char *value, const char *where, const char *fix,
                       gc_error *err)
{
    bool ok = key == 0   ? gc_gcp_is_project_id(value)
              : key == 1 ? gc_gcp_is_gke_name(value)
                         : gc_gcp_is_location(value);
    if (ok)
        return 0;
    size_t len = strlen(value);
    return gc_fail(err, GC_EXIT_USAGE, "%s%s \"%.*s%s\" is not %s; %s", where,
                   context_keys[key].key, SHOWN_VALUE, value, len > SHOWN_VALUE ? "..." : "",
                   value_forms[key], fix);
}

static int load_json(const char *path, json_t **out, gc_error *err)
{
    *out = NULL;
    gc_buf text;
    gc_buf_init(&text);
    gc_error why = {0};
    if (gc_file_read(path, MAX_CONTEXT_FILE, &text, &why) != 0) {
        int e = errno;
        gc_buf_free(&text);
        if (e == ENOENT) {
            *out = json_object();
            return 0;
        }
        if (e == EISDIR)
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s is a directory, where gcluster keeps its stored defaults in a "
                           "file; move the directory away (gcluster job config set then writes "
                           "the file)",
                           path);
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s; fix its permissions or delete it (gcluster job config set rewrites "
                       "it)",
                       why.message);
    }
    json_error_t jerr;
    *out = json_loadb(text.data, text.len, 0, &jerr);
    gc_buf_free(&text);
    if (*out && json_is_object(*out))
        return 0;
    json_decref(*out);
    *out = NULL;
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s:%d:%d: %s; fix or delete the file (gcluster job config set rewrites it)",
                   path, jerr.line, jerr.column, jerr.text[0] ? jerr.text : "not a JSON object");
}

int cli_context_load(cli_stored_context *ctx, gc_error *err)
{
    memset(ctx, 0, sizeof(*ctx));
    char *path = cli_context_path();
    json_t *root;
    int rc = load_json(path, &root, err);
    char **fields[] = {&ctx->project, &ctx->cluster, &ctx->location};
    for (size_t i = 0; i < 3 && !rc; i++) {
        const char *v = json_string_value(json_object_get(root, context_keys[i].json));
        if (!v || !*v)
            continue;
        /* A hand-edited (or older) file is checked as `job config set` checks: a value that is
         * not a name must not reach a kubeconfig context name or a message. */
        char *where = gc_xasprintf("%s: stored ", path);
        char *fix =
            gc_xasprintf("set it again with gcluster job config set %s VALUE", context_keys[i].key);
        rc = check_value(i, v, where, fix, err);
        free(where);
        free(fix);
        if (!rc)
            *fields[i] = gc_xstrdup(v);
    }
    json_decref(root);
    free(path);
    if (rc)
        cli_context_free(ctx);
    return rc;
}

static int save_json(const char *path, json_t *root, gc_error *err)
{
    char *dir = gc_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        int rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot create %s: %s", dir, strerror(errno));
        free(dir);
        return rc;
    }
    free(dir);
    char *text = json_dumps(root, JSON_INDENT(2));
    if (!text)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot write %s: out of memory", path);
    int rc = gc_file_write(path, text, strlen(text), err);
    free(text);
    return rc;
}

int cli_context_set(const char *key, const char *value, gc_error *err)
{
    size_t k = 0;
    while (k < 3 && strcasecmp(key, context_keys[k].key))
        k++;
    if (k == 3)
        return gc_fail(err, GC_EXIT_USAGE,
                       "unknown key \"%.*s%s\"; the keys are project, cluster and location",
                       SHOWN_VALUE, key, strlen(key) > SHOWN_VALUE ? "..." : "");
    const char *json_key = context_keys[k].json;
    int checked = check_value(k, value, "", "nothing was stored", err);
    if (checked)
        return checked;
    char *path = cli_context_path();
    json_t *root;
    int rc = load_json(path, &root, err);
    if (!rc) {
        json_object_set_new(root, json_key, json_string(value));
        rc = save_json(path, root, err);
        json_decref(root);
    }
    free(path);
    return rc;
}

void cli_context_free(cli_stored_context *ctx)
{
    free(ctx->project);
    free(ctx->cluster);
    free(ctx->location);
    memset(ctx, 0, sizeof(*ctx));
}
