/*
 * Stored defaults in ~/.gcluster/context.json, readable by Google's gcluster too (same keys).
 */
#include "gcluster/buf.h"
#include "gcluster/job.h"

#include <errno.h>
#include <jansson.h>
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

char *gc_context_path(void)
{
    const char *home = getenv("HOME");
    return gc_xasprintf("%s/.gcluster/context.json", home && *home ? home : ".");
}

static int load_json(const char *path, json_t **out, gc_error *err)
{
    json_error_t jerr;
    *out = json_load_file(path, 0, &jerr);
    if (*out && json_is_object(*out))
        return 0;
    if (!*out && access(path, F_OK) != 0) {
        *out = json_object();
        return 0;
    }
    json_decref(*out);
    *out = NULL;
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s:%d:%d: %s; fix or delete the file (gcluster job config set rewrites it)",
                   path, jerr.line, jerr.column, jerr.text[0] ? jerr.text : "not a JSON object");
}

int gc_context_load(gc_stored_context *ctx, gc_error *err)
{
    memset(ctx, 0, sizeof(*ctx));
    char *path = gc_context_path();
    json_t *root;
    int rc = load_json(path, &root, err);
    free(path);
    if (rc)
        return rc;
    char **fields[] = {&ctx->project, &ctx->cluster, &ctx->location};
    for (size_t i = 0; i < 3; i++) {
        const char *v = json_string_value(json_object_get(root, context_keys[i].json));
        if (v && *v)
            *fields[i] = gc_xstrdup(v);
    }
    json_decref(root);
    return 0;
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
    char *tmp = gc_xasprintf("%s.tmp.%ld", path, (long)getpid());
    int rc = 0;
    if (json_dump_file(root, tmp, JSON_INDENT(2)) != 0 || rename(tmp, path) != 0) {
        rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

int gc_context_set(const char *key, const char *value, gc_error *err)
{
    const char *json_key = NULL;
    for (size_t i = 0; i < 3; i++)
        if (!strcasecmp(key, context_keys[i].key))
            json_key = context_keys[i].json;
    if (!json_key)
        return gc_fail(err, GC_EXIT_USAGE,
                       "unknown key \"%s\"; the keys are project, cluster and location", key);
    char *path = gc_context_path();
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

void gc_context_free(gc_stored_context *ctx)
{
    free(ctx->project);
    free(ctx->cluster);
    free(ctx->location);
    memset(ctx, 0, sizeof(*ctx));
}
