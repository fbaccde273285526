/*
 * Stored defaults in ~/.gcluster/context.json, readable by Google's gcluster too (same keys).
 */
#include "gcluster/buf.h"
#include "gcluster/job.h"

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

char *gc_context_path(void)
{
    const char *home = getenv("HOME");
    return gc_xasprintf("%s/.gcluster/context.json", home && *home ? home : ".");
}

/* The file holds three short names; anything larger is not what gcluster wrote. */
#define MAX_CONTEXT_FILE (64u << 10)
/* How much of a rejected value a message shows (a value may be any length). */
#define SHOWN_VALUE 64

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Lower-case letters, digits and hyphens, starting with a letter and not ending with a hyphen,
 * `min` to `max` characters: the form of GCP project IDs and GKE cluster names. */
static bool is_lower_name(const char *s, size_t len, size_t min, size_t max)
{
    if (len < min || len > max || !(s[0] >= 'a' && s[0] <= 'z') || s[len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

/* A project ID is 6 to 30 characters of that form; projects created in a Google Workspace domain
 * before 2017 keep an ID scoped by it, "example.com:my-project". */
static bool is_project_id(const char *s)
{
    const char *colon = strchr(s, ':');
    if (colon) {
        size_t dlen = (size_t)(colon - s);
        if (dlen < 3 || dlen > 253 || !memchr(s, '.', dlen) || s[0] == '.' || s[dlen - 1] == '.')
            return false;
        for (size_t i = 0; i < dlen; i++)
            if (!is_lower_alnum(s[i]) && s[i] != '-' && s[i] != '.')
                return false;
        s = colon + 1;
    }
    return is_lower_name(s, strlen(s), 6, 30);
}

/* GKE cluster names: 1 to 40 characters, and they end with a letter or digit. */
static bool is_cluster_name(const char *s)
{
    return is_lower_name(s, strlen(s), 1, 40);
}

/* A region is words of lower-case letters joined by '-' and ending in a number
 * (us-central1, northamerica-northeast2); a zone is a region, '-' and one letter (us-east5-b). */
static bool is_location(const char *s)
{
    size_t len = strlen(s);
    if (len > 2 && s[len - 2] == '-' && s[len - 1] >= 'a' && s[len - 1] <= 'z')
        len -= 2;
    size_t digits = 0;
    while (digits < len && s[len - 1 - digits] >= '0' && s[len - 1 - digits] <= '9')
        digits++;
    size_t words = len - digits;
    if (!digits || digits > 3 || words < 2 || words > 40 || s[0] == '-' || s[words - 1] == '-' ||
        !memchr(s, '-', words))
        return false;
    for (size_t i = 0; i < words; i++) {
        if (s[i] == '-' ? s[i + 1] == '-' : !(s[i] >= 'a' && s[i] <= 'z'))
            return false;
    }
    return true;
}

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
    bool ok = key == 0   ? is_project_id(value)
              : key == 1 ? is_cluster_name(value)
                         : is_location(value);
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

int gc_context_load(gc_stored_context *ctx, gc_error *err)
{
    memset(ctx, 0, sizeof(*ctx));
    char *path = gc_context_path();
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
        gc_context_free(ctx);
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
