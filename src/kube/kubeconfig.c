/*
 * Reading kubeconfig files into a kube_config, merged the way client-go merges them.
 *
 * Files are parsed by the shared YAML loader (libyaml underneath), which keeps the line and
 * column of every value, so a wrong type is reported as "config:12:7: users[0].user.token must
 * be a string". Relative paths are resolved against the directory of the file that holds them,
 * as client-go does, because a kubeconfig is often moved around together with its certificates.
 */
#include "kube/kubeconfig.h"

#include "gcluster/buf.h"
#include "gcluster/emit.h"
#include "gcluster/sys.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXEC_EXTENSION "client.authentication.k8s.io/exec"

/* The file being read, for messages and for resolving relative paths. */
typedef struct reader {
    const gc_yaml_doc *doc;
    const char *file;
    char *dir;
    gc_error *err;
} reader;

static void where_of(const reader *r, const json_t *container, const char *key, size_t index,
                     char out[KUBE_WHERE_MAX])
{
    int line, column;
    if (container && gc_yaml_mark_of(r->doc, container, key, index, &line, &column))
        snprintf(out, KUBE_WHERE_MAX, "%s:%d:%d", r->file, line, column);
    else
        snprintf(out, KUBE_WHERE_MAX, "%s", r->file);
}

static int fail_at(const reader *r, const json_t *container, const char *key, size_t index,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail_at(const reader *r, const json_t *container, const char *key, size_t index,
                   const char *fmt, ...)
{
    char where[KUBE_WHERE_MAX], what[1024];
    where_of(r, container, key, index, where);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return gc_fail(r->err, GC_EXIT_USAGE, "%s: %s", where, what);
}

static int wrong_type(const reader *r, const json_t *obj, const char *key, const char *path,
                      const char *expected)
{
    return fail_at(r, obj, key, 0, "%s.%s must be %s, not %s", path, key, expected,
                   gc_yaml_type_name(json_object_get(obj, key)));
}

/* A string field; numbers are accepted as their text, as kubectl's YAML decoder does. */
static int opt_string(const reader *r, const json_t *obj, const char *key, const char *path,
                      char **out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (json_is_integer(v)) {
        *out = gc_xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return 0;
    }
    if (!json_is_string(v))
        return wrong_type(r, obj, key, path, "a string");
    if (strlen(json_string_value(v)) != json_string_length(v))
        return fail_at(r, obj, key, 0, "%s.%s contains a NUL byte", path, key);
    *out = gc_xstrdup(json_string_value(v));
    return 0;
}

static int opt_bool(const reader *r, const json_t *obj, const char *key, const char *path,
                    bool *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return wrong_type(r, obj, key, path, "true or false");
    *out = json_is_true(v);
    return 0;
}

static int opt_mapping(const reader *r, const json_t *obj, const char *key, const char *path,
                       json_t **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return wrong_type(r, obj, key, path, "a mapping");
    *out = v;
    return 0;
}

static int opt_list(const reader *r, const json_t *obj, const char *key, const char *path,
                    json_t **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v))
        return wrong_type(r, obj, key, path, "a list");
    *out = v;
    return 0;
}

/* Base64 *-data fields. The value is never quoted in messages: it may be a private key. */
static int opt_blob(const reader *r, const json_t *obj, const char *key, const char *path,
                    kube_blob *out)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return wrong_type(r, obj, key, path, "a base64 string");
    out->data = gc_base64_decode(json_string_value(v), json_string_length(v), &out->len);
    if (!out->data)
        return fail_at(r, obj, key, 0, "%s.%s is not valid base64", path, key);
    return 0;
}

static char *resolve_path(const reader *r, const char *p)
{
    if (!p[0] || p[0] == '/')
        return gc_xstrdup(p);
    return gc_xasprintf("%s/%s", r->dir, p);
}

static int opt_path(const reader *r, const json_t *obj, const char *key, const char *path,
                    char **out)
{
    char *raw = NULL;
    int rc = opt_string(r, obj, key, path, &raw);
    if (rc || !raw)
        return rc;
    *out = resolve_path(r, raw);
    free(raw);
    return 0;
}

static void free_exec(kube_exec_config *x)
{
    if (!x)
        return;
    free(x->api_version);
    free(x->command);
    for (size_t i = 0; i < x->arg_count; i++)
        free(x->args[i]);
    free(x->args);
    for (size_t i = 0; i < x->env_count; i++)
        free(x->env[i]);
    free(x->env);
    free(x->install_hint);
    free(x);
}

static int parse_exec_args(const reader *r, const json_t *exec, const char *path,
                           kube_exec_config *x)
{
    json_t *args;
    int rc = opt_list(r, exec, "args", path, &args);
    if (rc || !args)
        return rc;
    x->args = gc_xcalloc(json_array_size(args), sizeof(*x->args));
    for (size_t i = 0; i < json_array_size(args); i++) {
        const json_t *a = json_array_get(args, i);
        if (!json_is_string(a))
            return fail_at(r, args, NULL, i, "%s.args[%zu] must be a string, not %s", path, i,
                           gc_yaml_type_name(a));
        x->args[x->arg_count++] = gc_xstrdup(json_string_value(a));
    }
    return 0;
}

static int parse_exec_env(const reader *r, const json_t *exec, const char *path,
                          kube_exec_config *x)
{
    json_t *env;
    int rc = opt_list(r, exec, "env", path, &env);
    if (rc || !env)
        return rc;
    x->env = gc_xcalloc(json_array_size(env), sizeof(*x->env));
    for (size_t i = 0; i < json_array_size(env); i++) {
        const json_t *e = json_array_get(env, i);
        char epath[256];
        snprintf(epath, sizeof(epath), "%s.env[%zu]", path, i);
        if (!json_is_object(e))
            return fail_at(r, env, NULL, i, "%s must be a mapping with name and value", epath);
        char *name = NULL, *value = NULL;
        if (opt_string(r, e, "name", epath, &name) || opt_string(r, e, "value", epath, &value)) {
            free(name);
            free(value);
            return r->err->code;
        }
        if (!name || !name[0] || strchr(name, '=')) {
            free(name);
            free(value);
            return fail_at(r, env, NULL, i, "%s needs a name without '='", epath);
        }
        x->env[x->env_count++] = gc_xasprintf("%s=%s", name, value ? value : "");
        free(name);
        free(value);
    }
    return 0;
}

static enum kube_interactive interactive_mode(const char *s)
{
    if (!s)
        return KUBE_INTERACTIVE_UNSET;
    if (!strcmp(s, "Never"))
        return KUBE_INTERACTIVE_NEVER;
    if (!strcmp(s, "IfAvailable"))
        return KUBE_INTERACTIVE_IF_AVAILABLE;
    if (!strcmp(s, "Always"))
        return KUBE_INTERACTIVE_ALWAYS;
    return KUBE_INTERACTIVE_INVALID;
}

static int parse_exec(const reader *r, const json_t *user, const char *upath, kube_user *u)
{
    json_t *exec;
    int rc = opt_mapping(r, user, "exec", upath, &exec);
    if (rc || !exec)
        return rc;
    char path[192];
    snprintf(path, sizeof(path), "%s.exec", upath);
    kube_exec_config *x = u->exec = gc_xcalloc(1, sizeof(*x));
    where_of(r, user, "exec", 0, x->where);
    char *mode = NULL;
    if (opt_string(r, exec, "apiVersion", path, &x->api_version) ||
        opt_string(r, exec, "command", path, &x->command) ||
        opt_string(r, exec, "installHint", path, &x->install_hint) ||
        opt_bool(r, exec, "provideClusterInfo", path, &x->provide_cluster_info) ||
        opt_string(r, exec, "interactiveMode", path, &mode) || parse_exec_args(r, exec, path, x) ||
        parse_exec_env(r, exec, path, x)) {
        free(mode);
        return r->err->code;
    }
    x->interactive_mode = interactive_mode(mode);
    free(mode);
    /* client-go: a command with a path separator is a file next to the kubeconfig; a bare
     * name is looked up on PATH when the plugin runs. */
    if (x->command && strchr(x->command, '/') && x->command[0] != '/') {
        char *abs = resolve_path(r, x->command);
        free(x->command);
        x->command = abs;
    }
    return 0;
}

static int parse_auth_provider(const reader *r, const json_t *user, const char *upath, kube_user *u)
{
    json_t *ap;
    int rc = opt_mapping(r, user, "auth-provider", upath, &ap);
    if (rc || !ap)
        return rc;
    char path[192];
    snprintf(path, sizeof(path), "%s.auth-provider", upath);
    if (opt_string(r, ap, "name", path, &u->auth_provider))
        return r->err->code;
    if (!u->auth_provider)
        u->auth_provider = gc_xstrdup("(unnamed)");
    return 0;
}

static int parse_user(const reader *r, const json_t *user, const char *path, kube_user *u)
{
    if (opt_string(r, user, "token", path, &u->token) ||
        opt_path(r, user, "tokenFile", path, &u->token_file) ||
        opt_path(r, user, "client-certificate", path, &u->client_certificate) ||
        opt_path(r, user, "client-key", path, &u->client_key) ||
        opt_blob(r, user, "client-certificate-data", path, &u->client_certificate_data) ||
        opt_blob(r, user, "client-key-data", path, &u->client_key_data) ||
        opt_string(r, user, "username", path, &u->username) ||
        opt_string(r, user, "password", path, &u->password) || parse_exec(r, user, path, u) ||
        parse_auth_provider(r, user, path, u))
        return r->err->code;
    return 0;
}

static int parse_exec_extension(const reader *r, const json_t *cluster, const char *path,
                                kube_cluster *c)
{
    json_t *exts;
    int rc = opt_list(r, cluster, "extensions", path, &exts);
    if (rc || !exts)
        return rc;
    for (size_t i = 0; i < json_array_size(exts); i++) {
        const json_t *e = json_array_get(exts, i);
        if (!json_is_object(e))
            return fail_at(r, exts, NULL, i, "%s.extensions[%zu] must be a mapping", path, i);
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *value = json_object_get(e, "extension");
        if (name && !strcmp(name, EXEC_EXTENSION) && value && !c->exec_config)
            c->exec_config = json_incref(value);
    }
    return 0;
}

static int parse_cluster(const reader *r, const json_t *cluster, const char *path, kube_cluster *c)
{
    if (opt_string(r, cluster, "server", path, &c->server) ||
        opt_path(r, cluster, "certificate-authority", path, &c->ca_file) ||
        opt_blob(r, cluster, "certificate-authority-data", path, &c->ca_data) ||
        opt_bool(r, cluster, "insecure-skip-tls-verify", path, &c->insecure_skip_tls_verify) ||
        opt_string(r, cluster, "tls-server-name", path, &c->tls_server_name) ||
        opt_string(r, cluster, "proxy-url", path, &c->proxy_url) ||
        opt_bool(r, cluster, "disable-compression", path, &c->disable_compression) ||
        parse_exec_extension(r, cluster, path, c))
        return r->err->code;
    return 0;
}

static int parse_context(const reader *r, const json_t *context, const char *path, kube_context *c)
{
    if (opt_string(r, context, "cluster", path, &c->cluster) ||
        opt_string(r, context, "user", path, &c->user) ||
        opt_string(r, context, "namespace", path, &c->ns))
        return r->err->code;
    return 0;
}

static void free_cluster(kube_cluster *c)
{
    free(c->id.name);
    free(c->server);
    free(c->ca_file);
    kube_blob_free(&c->ca_data);
    free(c->tls_server_name);
    free(c->proxy_url);
    json_decref(c->exec_config);
}

static void free_secret(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

static void free_user(kube_user *u)
{
    free(u->id.name);
    free_secret(u->token);
    free(u->token_file);
    free(u->client_certificate);
    free(u->client_key);
    kube_blob_free(&u->client_certificate_data);
    kube_blob_free(&u->client_key_data);
    free(u->username);
    free_secret(u->password);
    free_exec(u->exec);
    free(u->auth_provider);
}

static void free_context(kube_context *c)
{
    free(c->id.name);
    free(c->cluster);
    free(c->user);
    free(c->ns);
}

/* One kind of named list ("clusters" of "cluster" entries, ...), described as data so that the
 * three lists share one reading loop. */
typedef struct entry_kind {
    const char *list;  /* "clusters" */
    const char *inner; /* "cluster" */
    size_t size;
    int (*parse)(const reader *r, const json_t *inner, const char *path, void *entry);
    void (*free_entry)(void *entry);
} entry_kind;

static int parse_cluster_entry(const reader *r, const json_t *v, const char *p, void *e)
{
    return parse_cluster(r, v, p, e);
}
static int parse_user_entry(const reader *r, const json_t *v, const char *p, void *e)
{
    return parse_user(r, v, p, e);
}
static int parse_context_entry(const reader *r, const json_t *v, const char *p, void *e)
{
    return parse_context(r, v, p, e);
}
static void free_cluster_entry(void *e)
{
    free_cluster(e);
}
static void free_user_entry(void *e)
{
    free_user(e);
}
static void free_context_entry(void *e)
{
    free_context(e);
}

static const entry_kind cluster_kind = {"clusters", "cluster", sizeof(kube_cluster),
                                        parse_cluster_entry, free_cluster_entry};
static const entry_kind user_kind = {"users", "user", sizeof(kube_user), parse_user_entry,
                                     free_user_entry};
static const entry_kind context_kind = {"contexts", "context", sizeof(kube_context),
                                        parse_context_entry, free_context_entry};

/* Every entry struct starts with a kube_entry, so a pointer to one is a pointer to its entry. */
static kube_entry *entry_at(void *array, const entry_kind *kind, size_t i)
{
    return (kube_entry *)((char *)array + i * kind->size);
}

static bool entry_defined(void *array, size_t count, const entry_kind *kind, const char *name)
{
    for (size_t i = 0; i < count; i++)
        if (!strcmp(entry_at(array, kind, i)->name, name))
            return true;
    return false;
}

static int check_duplicate(const reader *r, const json_t *list, size_t i, const entry_kind *kind,
                           const char *name)
{
    for (size_t j = 0; j < i; j++) {
        const json_t *other = json_array_get(list, j);
        const char *n = json_string_value(json_object_get(other, "name"));
        if (n && !strcmp(n, name))
            return fail_at(r, list, NULL, i, "%s[%zu]: %s \"%s\" is defined twice in this file",
                           kind->list, i, kind->inner, name);
    }
    return 0;
}

static int read_entry(const reader *r, const json_t *list, size_t i, const entry_kind *kind,
                      void **array, size_t *count)
{
    const json_t *item = json_array_get(list, i);
    char path[96];
    snprintf(path, sizeof(path), "%s[%zu]", kind->list, i);
    if (!json_is_object(item))
        return fail_at(r, list, NULL, i, "%s must be a mapping with name and %s, not %s", path,
                       kind->inner, gc_yaml_type_name(item));
    char *name = NULL;
    if (opt_string(r, item, "name", path, &name))
        return r->err->code;
    if (!name || !name[0]) {
        free(name);
        return fail_at(r, list, NULL, i, "%s has no name", path);
    }
    json_t *inner = NULL;
    int rc = check_duplicate(r, list, i, kind, name);
    if (!rc)
        rc = opt_mapping(r, item, kind->inner, path, &inner);
    /* The first file that defines a name wins; later definitions are still type-checked. */
    bool keep = !rc && !entry_defined(*array, *count, kind, name);
    char *buf = gc_xcalloc(1, kind->size);
    kube_entry *e = (kube_entry *)buf;
    e->name = name;
    where_of(r, list, NULL, i, e->where);
    if (!rc && inner) {
        char ipath[128];
        snprintf(ipath, sizeof(ipath), "%s.%s", path, kind->inner);
        rc = kind->parse(r, inner, ipath, e);
    }
    if (rc || !keep) {
        kind->free_entry(e);
        free(buf);
        return rc;
    }
    *array = gc_xrealloc(*array, (*count + 1) * kind->size);
    memcpy(entry_at(*array, kind, *count), buf, kind->size);
    (*count)++;
    free(buf);
    return 0;
}

static int read_entries(const reader *r, const json_t *root, const entry_kind *kind, void **array,
                        size_t *count)
{
    json_t *list;
    int rc = opt_list(r, root, kind->list, "kubeconfig", &list);
    if (rc || !list)
        return rc;
    for (size_t i = 0; i < json_array_size(list); i++) {
        rc = read_entry(r, list, i, kind, array, count);
        if (rc)
            return rc;
    }
    return 0;
}

static char *directory_of(const char *file)
{
    const char *slash = strrchr(file, '/');
    char *dir =
        slash ? gc_xstrndup(file, slash == file ? 1 : (size_t)(slash - file)) : gc_xstrdup(".");
    if (dir[0] == '/')
        return dir;
    char cwd[4096];
    char *abs = getcwd(cwd, sizeof(cwd)) ? gc_xasprintf("%s/%s", cwd, dir) : gc_xstrdup(dir);
    free(dir);
    return abs;
}

static int read_root(const reader *r, const json_t *root, kube_config *cfg)
{
    if (!json_is_object(root))
        return gc_fail(r->err, GC_EXIT_USAGE,
                       "%s: a kubeconfig must be a mapping (with clusters, "
                       "users and contexts), not %s",
                       r->file, gc_yaml_type_name(root));
    char *current = NULL;
    void *clusters = cfg->clusters, *users = cfg->users, *contexts = cfg->contexts;
    int rc = read_entries(r, root, &cluster_kind, &clusters, &cfg->cluster_count);
    if (!rc)
        rc = read_entries(r, root, &user_kind, &users, &cfg->user_count);
    if (!rc)
        rc = read_entries(r, root, &context_kind, &contexts, &cfg->context_count);
    cfg->clusters = clusters;
    cfg->users = users;
    cfg->contexts = contexts;
    if (rc || opt_string(r, root, "current-context", "kubeconfig", &current))
        return r->err->code;
    if (current && current[0] && !cfg->current_context)
        cfg->current_context = current;
    else
        free(current);
    return 0;
}

static int read_file(const char *file, bool must_exist, kube_config *cfg, gc_error *err)
{
    if (access(file, F_OK) != 0 && !must_exist)
        return 0;
    gc_yaml_doc doc;
    int rc = gc_yaml_load_file(file, &doc, err);
    if (rc)
        return rc;
    cfg->files = gc_xrealloc(cfg->files, (cfg->file_count + 1) * sizeof(*cfg->files));
    cfg->files[cfg->file_count++] = gc_xstrdup(file);
    reader r = {.doc = &doc, .file = file, .dir = directory_of(file), .err = err};
    const json_t *root = gc_yaml_root(&doc);
    if (root && !json_is_null(root))
        rc = read_root(&r, root, cfg);
    free(r.dir);
    gc_yaml_doc_free(&doc);
    return rc;
}

int kube_config_load_files(const char *const *paths, size_t count, bool must_exist,
                           kube_config *cfg, gc_error *err)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < count; i++) {
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen = seen || !strcmp(paths[i], paths[j]);
        int rc = seen ? 0 : read_file(paths[i], must_exist, cfg, err);
        if (rc) {
            gc_error_prefix(err, "reading kubeconfig: ");
            kube_config_free(cfg);
            return rc;
        }
    }
    return 0;
}

static char *default_file(void)
{
    const char *home = getenv("HOME");
    return home && home[0] ? gc_xasprintf("%s/.kube/config", home) : NULL;
}

int kube_config_load(const char *explicit_path, kube_config *cfg, gc_error *err)
{
    if (explicit_path && explicit_path[0])
        return kube_config_load_files(&explicit_path, 1, true, cfg, err);
    const char *env = getenv("KUBECONFIG");
    if (!env || !env[0]) {
        char *file = default_file();
        const char *paths[1] = {file};
        int rc = kube_config_load_files(paths, file ? 1 : 0, false, cfg, err);
        free(file);
        return rc;
    }
    char *copy = gc_xstrdup(env);
    size_t n = 0;
    const char **paths = gc_xcalloc(strlen(env) + 1, sizeof(*paths));
    for (char *save = NULL, *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save))
        paths[n++] = p;
    int rc = kube_config_load_files(paths, n, false, cfg, err);
    free(paths);
    free(copy);
    return rc;
}

char *kube_config_primary_file(const char *explicit_path)
{
    if (explicit_path && explicit_path[0])
        return gc_xstrdup(explicit_path);
    const char *env = getenv("KUBECONFIG");
    for (const char *p = env; p && *p; p += strcspn(p, ":")) {
        p += strspn(p, ":");
        size_t len = strcspn(p, ":");
        if (len)
            return gc_xstrndup(p, len);
    }
    return default_file();
}

void kube_config_free(kube_config *cfg)
{
    for (size_t i = 0; i < cfg->cluster_count; i++)
        free_cluster(&cfg->clusters[i]);
    for (size_t i = 0; i < cfg->user_count; i++)
        free_user(&cfg->users[i]);
    for (size_t i = 0; i < cfg->context_count; i++)
        free_context(&cfg->contexts[i]);
    free(cfg->clusters);
    free(cfg->users);
    free(cfg->contexts);
    free(cfg->current_context);
    for (size_t i = 0; i < cfg->file_count; i++)
        free(cfg->files[i]);
    free(cfg->files);
    memset(cfg, 0, sizeof(*cfg));
}

const kube_context *kube_config_context(const kube_config *cfg, const char *name)
{
    for (size_t i = 0; name && i < cfg->context_count; i++)
        if (!strcmp(cfg->contexts[i].id.name, name))
            return &cfg->contexts[i];
    return NULL;
}

const kube_cluster *kube_config_cluster(const kube_config *cfg, const char *name)
{
    for (size_t i = 0; name && i < cfg->cluster_count; i++)
        if (!strcmp(cfg->clusters[i].id.name, name))
            return &cfg->clusters[i];
    return NULL;
}

const kube_user *kube_config_user(const kube_config *cfg, const char *name)
{
    for (size_t i = 0; name && i < cfg->user_count; i++)
        if (!strcmp(cfg->users[i].id.name, name))
            return &cfg->users[i];
    return NULL;
}

char *kube_config_file_list(const kube_config *cfg)
{
    if (!cfg->file_count)
        return gc_xstrdup("(no kubeconfig file found)");
    gc_buf b;
    gc_buf_init(&b);
    for (size_t i = 0; i < cfg->file_count; i++) {
        if (i)
            gc_buf_puts(&b, i + 1 == cfg->file_count ? " and " : ", ");
        gc_buf_puts(&b, cfg->files[i]);
    }
    return gc_buf_detach(&b);
}
