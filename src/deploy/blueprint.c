/*
 * Blueprints: Cluster Toolkit's YAML (blueprint_name, vars, deployment_groups[].modules[]) read
 * into a gc_blueprint.
 *
 * References are expanded where a value is read, not in one pass over the file: a module deploy
 * does not act on may use Terraform-only expressions ($(network.subnetwork_name)) that nothing
 * here could evaluate, and must not make the whole blueprint fail. Every $(vars.NAME) anywhere in
 * the modules is still checked up front, so a misspelt variable is always reported. As in Cluster
 * Toolkit, a module setting that is absent falls back to the variable of the same name.
 */
#include "gcluster/deploy.h"

#include "gcluster/catalog.h"
#include "gcluster/emit.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SOURCE_CLUSTER       "modules/scheduler/gke-cluster"
#define SOURCE_NODE_POOL     "modules/compute/gke-node-pool"
#define SOURCE_KUBECTL_APPLY "modules/management/kubectl-apply"

/* Cluster Toolkit's default for a gke-node-pool without machine_type. */
#define DEFAULT_POOL_MACHINE "c2-standard-60"
#define DEFAULT_POOL_MAX     1000

/* Which module set a kubectl-apply setting first, and where (container[key] in doc). */
typedef struct setting_owner {
    char *setting; /* "kueue.config_path", "kueue.config_template_vars.tpu_quota" */
    const char *module_id;
    const json_t *container;
    const char *key;
} setting_owner;

typedef struct bp_reader {
    gc_yaml_doc doc;
    gc_blueprint *bp;
    json_t *vars; /* borrowed from doc */
    setting_owner *owners;
    size_t owner_count;
    gc_error *err;
} bp_reader;

/* Fails with "<file>:<line>:<column>: <message>" for container[key] (or container[index]). */
static int fail_at(const bp_reader *r, const json_t *container, const char *key, size_t index,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int fail_at(const bp_reader *r, const json_t *container, const char *key, size_t index,
                   const char *fmt, ...)
{
    char message[GC_ERROR_MAX - 600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof(message), fmt, ap);
    va_end(ap);
    int line, column;
    if (container && gc_yaml_mark_of(&r->doc, container, key, index, &line, &column))
        return gc_fail(r->err, GC_EXIT_USAGE, "%s:%d:%d: %s", r->bp->path, line, column, message);
    return gc_fail(r->err, GC_EXIT_USAGE, "%s: %s", r->bp->path, message);
}

/* References */

/* The text of $( ... ) starting at `open` (which points at "$("): the expression and where the
 * reference ends, honouring nested parentheses and quoted strings. */
static bool reference_span(const char *open, const char **expr, size_t *expr_len,
                           const char **after)
{
    int depth = 0;
    bool quoted = false;
    for (const char *p = open + 1; *p; p++) {
        if (quoted) {
            if (*p == '\\' && p[1])
                p++;
            else if (*p == '"')
                quoted = false;
        } else if (*p == '"') {
            quoted = true;
        } else if (*p == '(') {
            depth++;
        } else if (*p == ')' && --depth == 0) {
            *expr = open + 2;
            *expr_len = (size_t)(p - open - 2);
            *after = p + 1;
            return true;
        }
    }
    return false;
}

static bool is_identifier(const char *s, size_t len)
{
    if (!len || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}

/* "vars.NAME" → NAME (into `name`), else false. */
static bool var_reference(const char *expr, size_t len, char *name, size_t size)
{
    if (len < 6 || strncmp(expr, "vars.", 5) || !is_identifier(expr + 5, len - 5) ||
        len - 5 >= size)
        return false;
    memcpy(name, expr + 5, len - 5);
    name[len - 5] = '\0';
    return true;
}

/* ghpc_stage("FILE") → FILE (into `file`), else false. */
static bool stage_reference(const char *expr, size_t len, char *file, size_t size)
{
    static const char prefix[] = "ghpc_stage(\"";
    size_t plen = sizeof(prefix) - 1;
    if (len < plen + 2 || strncmp(expr, prefix, plen) || strncmp(expr + len - 2, "\")", 2))
        return false;
    size_t flen = len - plen - 2;
    if (!flen || flen >= size || memchr(expr + plen, '"', flen))
        return false;
    memcpy(file, expr + plen, flen);
    file[flen] = '\0';
    return true;
}

static char *defined_var_names(const json_t *vars)
{
    gc_buf names;
    gc_buf_init(&names);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)vars, key, value)
    {
        (void)value;
        gc_buf_printf(&names, "%s%s", names.len ? ", " : "", key);
    }
    if (!names.len)
        gc_buf_puts(&names, "none");
    return gc_buf_detach(&names);
}

static int unknown_var(const bp_reader *r, const json_t *container, const char *key, size_t index,
                       const char *name)
{
    char *names = defined_var_names(r->vars);
    int rc = fail_at(r, container, key, index,
                     "$(vars.%s) refers to a variable the blueprint does not define (vars: %s); "
                     "add it under vars: or pass --vars %s=VALUE",
                     name, names, name);
    free(names);
    return rc;
}

/* Appends a scalar variable's text to `out`, for a reference inside a longer string. */
static int append_scalar(const bp_reader *r, const json_t *container, const char *key, size_t index,
                         const char *name, const json_t *value, gc_buf *out)
{
    if (json_is_string(value))
        gc_buf_puts(out, json_string_value(value));
    else if (json_is_integer(value))
        gc_buf_printf(out, "%lld", (long long)json_integer_value(value));
    else if (json_is_real(value))
        gc_buf_printf(out, "%g", json_real_value(value));
    else if (json_is_boolean(value))
        gc_buf_puts(out, json_is_true(value) ? "true" : "false");
    else
        return fail_at(r, container, key, index,
                       "$(vars.%s) is a list or mapping and cannot be part of a longer string; "
                       "use it as the whole value",
                       name);
    return 0;
}

/* The value of one string with its references expanded (a new reference). A string that is
 * exactly "$(vars.NAME)" takes the variable's own type. */
static int expand_string(const bp_reader *r, const json_t *container, const char *key, size_t index,
                         const char *text, json_t **out)
{
    const char *expr, *after;
    size_t len;
    char name[256];
    if (!strncmp(text, "$(", 2) && reference_span(text, &expr, &len, &after) && !*after &&
        var_reference(expr, len, name, sizeof(name))) {
        json_t *value = json_object_get(r->vars, name);
        if (!value)
            return unknown_var(r, container, key, index, name);
        *out = json_deep_copy(value);
        return 0;
    }
    gc_buf b;
    gc_buf_init(&b);
    int rc = 0;
    for (const char *p = text; *p && !rc;) {
        if (p[0] == '\\' && p[1] == '$' && p[2] == '(') { /* \$( is a literal $( */
            gc_buf_puts(&b, "$(");
            p += 3;
        } else if (p[0] == '$' && p[1] == '(') {
            if (!reference_span(p, &expr, &len, &after)) {
                rc = fail_at(r, container, key, index, "unclosed reference \"%s\"", p);
                break;
            }
            char file[1024];
            if (var_reference(expr, len, name, sizeof(name))) {
                json_t *value = json_object_get(r->vars, name);
                rc = value ? append_scalar(r, container, key, index, name, value, &b)
                           : unknown_var(r, container, key, index, name);
            } else if (stage_reference(expr, len, file, sizeof(file))) {
                /* Cluster Toolkit copies the file next to the deployment; here it stays where
                 * it is, and paths in settings are relative to the blueprint anyway. */
                gc_buf_puts(&b, file);
            } else {
                rc = fail_at(r, container, key, index,
                             "$(%.*s) cannot be evaluated by gcluster deploy: it understands "
                             "$(vars.NAME) and $(ghpc_stage(\"FILE\")); module outputs exist only "
                             "once Terraform has run",
                             (int)len, expr);
            }
            p = after;
        } else {
            gc_buf_putc(&b, *p++);
        }
    }
    if (!rc)
        *out = json_string(b.data);
    gc_buf_free(&b);
    return rc;
}

/* Expands every string inside `value` in place (container[key] or container[index]). */
static int expand_in_place(const bp_reader *r, json_t *container, const char *key, size_t index)
{
    json_t *value = key ? json_object_get(container, key) : json_array_get(container, index);
    if (json_is_string(value)) {
        json_t *expanded;
        int rc = expand_string(r, container, key, index, json_string_value(value), &expanded);
        if (rc)
            return rc;
        if (key)
            json_object_set_new(container, key, expanded);
        else
            json_array_set_new(container, index, expanded);
        return 0;
    }
    if (json_is_object(value)) {
        const char *k;
        json_t *v;
        json_object_foreach(value, k, v)
        {
            (void)v;
            int rc = expand_in_place(r, value, k, 0);
            if (rc)
                return rc;
        }
    } else if (json_is_array(value)) {
        for (size_t i = 0; i < json_array_size(value); i++) {
            int rc = expand_in_place(r, value, NULL, i);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Reports the first $(vars.NAME) under `value` that names no variable. */
static int check_var_references(const bp_reader *r, const json_t *container, const char *key,
                                size_t index)
{
    const json_t *value = key ? json_object_get(container, key) : json_array_get(container, index);
    if (json_is_string(value)) {
        const char *s = json_string_value(value), *expr, *after;
        size_t len;
        char name[256];
        for (const char *p = strstr(s, "$("); p; p = strstr(p + 2, "$(")) {
            if (p > s && p[-1] == '\\')
                continue;
            if (reference_span(p, &expr, &len, &after) &&
                var_reference(expr, len, name, sizeof(name)) && !json_object_get(r->vars, name))
                return unknown_var(r, container, key, index, name);
        }
    } else if (json_is_object(value)) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)value, k, v)
        {
            (void)v;
            int rc = check_var_references(r, value, k, 0);
            if (rc)
                return rc;
        }
    } else if (json_is_array(value)) {
        for (size_t i = 0; i < json_array_size(value); i++) {
            int rc = check_var_references(r, value, NULL, i);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Typed settings */

/* A module's setting, expanded; absent settings fall back to the variable of the same name.
 * *value is NULL when neither exists. */
static int setting(const bp_reader *r, json_t *settings, const char *key, json_t **value)
{
    *value = NULL;
    if (settings && json_object_get(settings, key)) {
        int rc = expand_in_place(r, settings, key, 0);
        if (rc)
            return rc;
        *value = json_object_get(settings, key);
    } else {
        *value = json_object_get(r->vars, key);
    }
    if (json_is_null(*value))
        *value = NULL;
    return 0;
}

/* Where a wrong-typed setting came from: the module's settings, or the variable. */
static int wrong_type(const bp_reader *r, json_t *settings, const char *module_id, const char *key,
                      const json_t *value, const char *expected)
{
    if (settings && json_object_get(settings, key))
        return fail_at(r, settings, key, 0, "module %s: setting %s must be %s, not %s", module_id,
                       key, expected, gc_yaml_type_name(value));
    return fail_at(r, r->vars, key, 0, "vars.%s (used by module %s) must be %s, not %s", key,
                   module_id, expected, gc_yaml_type_name(value));
}

static int string_setting(const bp_reader *r, json_t *settings, const char *module_id,
                          const char *key, char **out)
{
    json_t *v;
    int rc = setting(r, settings, key, &v);
    if (rc || !v)
        return rc;
    if (!json_is_string(v) || !*json_string_value(v))
        return wrong_type(r, settings, module_id, key, v, "a non-empty string");
    free(*out);
    *out = gc_xstrdup(json_string_value(v));
    return 0;
}

static int bool_setting(const bp_reader *r, json_t *settings, const char *module_id,
                        const char *key, bool *out)
{
    json_t *v;
    int rc = setting(r, settings, key, &v);
    if (rc || !v)
        return rc;
    if (!json_is_boolean(v))
        return wrong_type(r, settings, module_id, key, v, "true or false");
    *out = json_is_true(v);
    return 0;
}

static int count_setting(const bp_reader *r, json_t *settings, const char *module_id,
                         const char *key, long *out)
{
    json_t *v;
    int rc = setting(r, settings, key, &v);
    if (rc || !v)
        return rc;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 100000)
        return wrong_type(r, settings, module_id, key, v, "a whole number from 0 to 100000");
    *out = (long)json_integer_value(v);
    return 0;
}

/* Structure */

enum module_kind { MODULE_OTHER, MODULE_CLUSTER, MODULE_NODE_POOL, MODULE_KUBECTL_APPLY };

/* Sources may be local ("modules/x/y") or remote ("github.com/...//modules/x/y?ref=v1.50.0"). */
static enum module_kind module_kind(const char *source)
{
    static const struct {
        const char *path;
        enum module_kind kind;
    } known[] = {{SOURCE_CLUSTER, MODULE_CLUSTER},
                 {SOURCE_NODE_POOL, MODULE_NODE_POOL},
                 {SOURCE_KUBECTL_APPLY, MODULE_KUBECTL_APPLY}};
    size_t len = strcspn(source, "?");
    while (len && source[len - 1] == '/')
        len--;
    for (size_t i = 0; i < sizeof(known) / sizeof(*known); i++) {
        size_t klen = strlen(known[i].path);
        if (len >= klen && !strncmp(source + len - klen, known[i].path, klen) &&
            (len == klen || source[len - klen - 1] == '/'))
            return known[i].kind;
    }
    return MODULE_OTHER;
}

static int require_type(const bp_reader *r, const json_t *container, const char *key, size_t index,
                        const json_t *value, json_type type, const char *what)
{
    if (value && json_typeof(value) == type)
        return 0;
    if (!value)
        return fail_at(r, container, NULL, 0, "%s is missing", what);
    return fail_at(r, container, key, index, "%s must be %s, not %s", what,
                   type == JSON_OBJECT  ? "a mapping"
                   : type == JSON_ARRAY ? "a list"
                                        : "a string",
                   gc_yaml_type_name(value));
}

/* Checks the module list's shape: ids unique, sources strings, `use` naming modules. */
static int check_modules(const bp_reader *r, json_t *groups)
{
    json_t *seen = json_object();
    int rc = 0;
    size_t gi, mi;
    json_t *group, *module;
    json_array_foreach(groups, gi, group)
    {
        rc = require_type(r, groups, NULL, gi, group, JSON_OBJECT, "a deployment group");
        json_t *modules = rc ? NULL : json_object_get(group, "modules");
        if (!rc)
            rc = require_type(r, group, "modules", 0, modules, JSON_ARRAY,
                              "deployment_groups[].modules");
        json_array_foreach(rc ? NULL : modules, mi, module)
        {
            rc = require_type(r, modules, NULL, mi, module, JSON_OBJECT, "a module");
            json_t *id = rc ? NULL : json_object_get(module, "id");
            if (!rc)
                rc = require_type(r, module, "id", 0, id, JSON_STRING, "module id");
            if (!rc)
                rc = require_type(r, module, "source", 0, json_object_get(module, "source"),
                                  JSON_STRING, "module source");
            if (!rc && json_object_get(seen, json_string_value(id)))
                rc = fail_at(r, module, "id", 0, "module id %s is used twice; ids must be unique",
                             json_string_value(id));
            if (!rc) {
                json_object_set_new(seen, json_string_value(id), json_true());
                json_t *settings = json_object_get(module, "settings");
                if (settings)
                    rc = require_type(r, module, "settings", 0, settings, JSON_OBJECT,
                                      "module settings");
            }
            if (!rc)
                rc = check_var_references(r, module, "settings", 0);
            if (rc)
                break;
        }
        if (rc)
            break;
    }
    /* `use` may name modules declared later, so it is checked once all ids are known. */
    json_array_foreach(rc ? NULL : groups, gi, group)
    {
        json_t *modules = json_object_get(group, "modules");
        json_array_foreach(modules, mi, module)
        {
            json_t *use = json_object_get(module, "use"), *u;
            size_t ui;
            if (!use)
                continue;
            rc = require_type(r, module, "use", 0, use, JSON_ARRAY, "module use");
            json_array_foreach(rc ? NULL : use, ui, u)
            {
                if (!json_is_string(u) || !json_object_get(seen, json_string_value(u))) {
                    rc = fail_at(r, use, NULL, ui, "module %s uses %s, which no module declares",
                                 json_string_value(json_object_get(module, "id")),
                                 json_is_string(u) ? json_string_value(u) : "a non-string");
                    break;
                }
            }
            if (rc)
                break;
        }
        if (rc)
            break;
    }
    json_decref(seen);
    return rc;
}

/* Modules */

static int read_cluster(const bp_reader *r, json_t *module, json_t *settings, const char *id)
{
    gc_blueprint *bp = r->bp;
    if (bp->cluster)
        return fail_at(r, module, "id", 0,
                       "module %s is a second gke-cluster; a blueprint deploys one cluster", id);
    int rc = string_setting(r, settings, id, "name", &bp->cluster);
    if (!rc && !bp->cluster)
        rc = string_setting(r, settings, id, "deployment_name", &bp->cluster);
    if (!rc)
        rc = string_setting(r, settings, id, "project_id", &bp->project);
    if (!rc)
        rc = string_setting(r, settings, id, "region", &bp->region);
    if (!rc)
        rc = string_setting(r, settings, id, "zone", &bp->zone);
    if (!rc)
        rc = bool_setting(r, settings, id, "enable_pathways_for_tpus", &bp->pathways);
    if (!rc && !bp->cluster)
        rc = fail_at(r, module, "id", 0,
                     "module %s: the cluster has no name; set settings.name or "
                     "vars.deployment_name",
                     id);
    return rc;
}

/* TPU pools: the accelerator label and topology from the catalog, and one fixed size. */
/* The NAME of a value that is exactly "$(vars.NAME)", so that an empty one can be named in the
 * fix ("pass --vars NAME=..."). */
static bool whole_var_reference(const json_t *raw, char *name, size_t size)
{
    const char *text = json_string_value(raw), *expr, *after;
    size_t len;
    return text && !strncmp(text, "$(", 2) && reference_span(text, &expr, &len, &after) &&
           !*after && var_reference(expr, len, name, size);
}

static int read_tpu_shape(const bp_reader *r, json_t *settings, const char *id, gc_pool_spec *p,
                          const gc_tpu_machine *m)
{
    json_t *policy;
    char var[256];
    json_t *raw_policy = json_object_get(settings, "placement_policy");
    bool from_var =
        whole_var_reference(json_object_get(raw_policy, "tpu_topology"), var, sizeof(var)) ||
        whole_var_reference(json_object_get(settings, "tpu_topology"), var, sizeof(var));
    int rc = setting(r, settings, "placement_policy", &policy);
    if (rc)
        return rc;
    if (policy && !json_is_object(policy))
        return wrong_type(r, settings, id, "placement_policy", policy, "a mapping");
    rc = string_setting(r, policy, id, "tpu_topology", &p->topology);
    if (!rc && !p->topology)
        rc = string_setting(r, settings, id, "tpu_topology", &p->topology);
    if (rc)
        return rc;
    if (!p->topology && m->only_topology)
        p->topology = gc_xstrdup(m->only_topology);
    if (!p->topology && from_var)
        return fail_at(r, settings, NULL, 0,
                       "module %s: TPU machine type %s needs a topology and vars.%s is empty; "
                       "pass --vars %s=%s",
                       id, m->machine_type, var, var,
                       m->only_topology ? m->only_topology : "TOPOLOGY (e.g. 2x2x1 or 4x4)");
    if (!p->topology)
        return fail_at(r, settings, NULL, 0,
                       "module %s: TPU machine type %s needs placement_policy.tpu_topology "
                       "(e.g. 4x4)",
                       id, m->machine_type);
    gc_error why;
    if (gc_topology_validate(m, p->topology, &why))
        return fail_at(r, policy ? policy : settings, "tpu_topology", 0, "module %s: %s", id,
                       why.message);
    p->accelerator = gc_xstrdup(m->family->gke_accelerator);
    long hosts = gc_topology_chips(p->topology) / m->chips_per_vm;
    if (p->static_nodes >= 0 && p->static_nodes != hosts)
        return fail_at(r, settings, "static_node_count", 0,
                       "module %s: a %s slice of %s has %ld hosts, but static_node_count is %ld",
                       id, p->topology, m->machine_type, hosts, p->static_nodes);
    p->static_nodes = hosts;
    return 0;
}

static gc_pool_spec *add_pool(gc_blueprint *bp)
{
    bp->pools = gc_xrealloc(bp->pools, (bp->pool_count + 1) * sizeof(*bp->pools));
    gc_pool_spec *p = &bp->pools[bp->pool_count++];
    memset(p, 0, sizeof(*p));
    p->static_nodes = -1;
    return p;
}

static int read_zones(const bp_reader *r, json_t *settings, const char *id, gc_pool_spec *p)
{
    json_t *zones = settings ? json_object_get(settings, "zones") : NULL;
    if (!zones)
        return 0;
    json_t *raw = json_deep_copy(zones);
    int rc = expand_in_place(r, settings, "zones", 0);
    zones = json_object_get(settings, "zones");
    if (rc) {
        json_decref(raw);
        return rc;
    }
    gc_buf b;
    gc_buf_init(&b);
    json_t *z;
    size_t i;
    json_array_foreach(zones, i, z)
    {
        char var[256];
        if (json_is_null(z) && whole_var_reference(json_array_get(raw, i), var, sizeof(var))) {
            gc_buf_free(&b);
            json_decref(raw);
            return fail_at(r, settings, "zones", 0,
                           "module %s: zones[%zu] is vars.%s, which is empty; pass --vars %s=ZONE "
                           "(e.g. us-east5-b)",
                           id, i, var, var);
        }
        if (!json_is_string(z)) {
            gc_buf_free(&b);
            json_decref(raw);
            return wrong_type(r, settings, id, "zones", zones, "a list of zone names");
        }
        gc_buf_printf(&b, "%s%s", b.len ? "," : "", json_string_value(z));
    }
    json_decref(raw);
    if (!json_is_array(zones)) {
        gc_buf_free(&b);
        return wrong_type(r, settings, id, "zones", zones, "a list of zone names");
    }
    p->zones = b.len ? gc_buf_detach(&b) : NULL;
    gc_buf_free(&b);
    return 0;
}

/* One gke-node-pool module: one pool, or with num_slices one pool per slice (NAME-0, ...). */
static int read_node_pool(const bp_reader *r, json_t *settings, const char *id)
{
    gc_pool_spec pool = {.static_nodes = -1, .max_nodes = DEFAULT_POOL_MAX};
    long slices = -1;
    int rc = string_setting(r, settings, id, "name", &pool.name);
    if (!rc)
        rc = string_setting(r, settings, id, "machine_type", &pool.machine_type);
    if (!rc)
        rc = count_setting(r, settings, id, "static_node_count", &pool.static_nodes);
    if (!rc)
        rc = count_setting(r, settings, id, "autoscaling_total_min_nodes", &pool.min_nodes);
    if (!rc)
        rc = count_setting(r, settings, id, "autoscaling_total_max_nodes", &pool.max_nodes);
    if (!rc)
        rc = bool_setting(r, settings, id, "spot", &pool.spot);
    if (!rc && settings && json_object_get(settings, "num_slices"))
        rc = count_setting(r, settings, id, "num_slices", &slices);
    if (!rc)
        rc = read_zones(r, settings, id, &pool);
    if (!pool.name)
        pool.name = gc_xstrdup(id);
    if (!pool.machine_type)
        pool.machine_type = gc_xstrdup(DEFAULT_POOL_MACHINE);
    const gc_tpu_machine *m = gc_catalog_tpu_machine(pool.machine_type);
    if (!rc && m)
        rc = read_tpu_shape(r, settings, id, &pool, m);
    if (!rc && pool.static_nodes < 0 && pool.min_nodes > pool.max_nodes)
        rc = fail_at(r, settings, "autoscaling_total_min_nodes", 0,
                     "module %s: autoscaling_total_min_nodes %ld is above "
                     "autoscaling_total_max_nodes %ld",
                     id, pool.min_nodes, pool.max_nodes);
    if (!rc && slices == 0)
        rc = fail_at(r, settings, "num_slices", 0, "module %s: num_slices must be at least 1", id);
    for (long i = 0; !rc && i < (slices < 0 ? 1 : slices); i++) {
        gc_pool_spec *p = add_pool(r->bp);
        *p = pool;
        p->name = slices < 0 ? gc_xstrdup(pool.name) : gc_xasprintf("%s-%ld", pool.name, i);
        p->module_id = gc_xstrdup(id);
        p->machine_type = gc_xstrdup(pool.machine_type);
        p->accelerator = pool.accelerator ? gc_xstrdup(pool.accelerator) : NULL;
        p->topology = pool.topology ? gc_xstrdup(pool.topology) : NULL;
        p->zones = pool.zones ? gc_xstrdup(pool.zones) : NULL;
    }
    free(pool.name);
    free(pool.machine_type);
    free(pool.accelerator);
    free(pool.topology);
    free(pool.zones);
    return rc;
}

/* Deploy keeps one value of each kubectl-apply setting (one Kueue and one JobSet configuration
 * is applied), so a second module setting it would silently replace the first's: that is an
 * error naming both modules. Settings absent from the module claim nothing. */
static int claim_setting(bp_reader *r, const char *prefix, const json_t *container, const char *key,
                         const char *id)
{
    if (!json_object_get(container, key))
        return 0;
    char *setting = gc_xasprintf("%s.%s", prefix, key);
    for (size_t i = 0; i < r->owner_count; i++) {
        const setting_owner *o = &r->owners[i];
        if (strcmp(o->setting, setting) != 0)
            continue;
        char first[1024];
        int line, column;
        if (gc_yaml_mark_of(&r->doc, o->container, o->key, 0, &line, &column))
            snprintf(first, sizeof(first), "%s:%d:%d", r->bp->path, line, column);
        else
            snprintf(first, sizeof(first), "%s", r->bp->path);
        int rc = fail_at(r, container, key, 0,
                         "module %s sets %s, but module %s already sets it (%s); deploy applies "
                         "one Kueue and JobSet configuration, so set it in one module only",
                         id, setting, o->module_id, first);
        free(setting);
        return rc;
    }
    r->owners = gc_xrealloc(r->owners, (r->owner_count + 1) * sizeof(*r->owners));
    r->owners[r->owner_count++] =
        (setting_owner){.setting = setting, .module_id = id, .container = container, .key = key};
    return 0;
}

static int claim_settings(bp_reader *r, const char *prefix, const json_t *settings, const char *id)
{
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)settings, key, value)
    {
        /* Template variables are merged across modules; each one is claimed on its own. */
        if (!strcmp(key, "config_template_vars") && json_is_object(value))
            continue;
        int rc = claim_setting(r, prefix, settings, key, id);
        if (rc)
            return rc;
    }
    return 0;
}

static int read_kueue(bp_reader *r, json_t *kueue, const char *id)
{
    gc_blueprint *bp = r->bp;
    if (!json_is_object(kueue))
        return wrong_type(r, NULL, id, "kueue", kueue, "a mapping");
    int rc = claim_settings(r, "kueue", kueue, id);
    json_t *template_vars = json_object_get(kueue, "config_template_vars");
    if (!rc && json_is_object(template_vars))
        rc = claim_settings(r, "kueue.config_template_vars", template_vars, id);
    if (!rc)
        rc = bool_setting(r, kueue, id, "install", &bp->kueue_install);
    if (!rc)
        rc = string_setting(r, kueue, id, "version", &bp->kueue_version);
    bool pathways = false;
    if (!rc && json_object_get(kueue, "enable_pathways_for_tpus"))
        rc = bool_setting(r, kueue, id, "enable_pathways_for_tpus", &pathways);
    bp->pathways = bp->pathways || pathways;
    char *config_path = NULL;
    if (!rc && json_object_get(kueue, "config_path"))
        rc = string_setting(r, kueue, id, "config_path", &config_path);
    if (config_path) {
        free(bp->kueue_config_path);
        bp->kueue_config_path = config_path[0] == '/' ? gc_xstrdup(config_path)
                                                      : gc_xasprintf("%s/%s", bp->dir, config_path);
        free(config_path);
    }
    json_t *vars = json_object_get(kueue, "config_template_vars");
    if (!rc && vars) {
        rc = expand_in_place(r, kueue, "config_template_vars", 0);
        vars = json_object_get(kueue, "config_template_vars");
        if (!rc && !json_is_object(vars))
            rc = fail_at(r, kueue, "config_template_vars", 0,
                         "module %s: kueue.config_template_vars must be a mapping, not %s", id,
                         gc_yaml_type_name(vars));
        if (!rc)
            json_object_update(bp->kueue_vars, vars);
    }
    return rc;
}

static int read_kubectl_apply(bp_reader *r, json_t *settings, const char *id)
{
    r->bp->has_kubectl_apply = true;
    json_t *kueue = settings ? json_object_get(settings, "kueue") : NULL;
    json_t *jobset = settings ? json_object_get(settings, "jobset") : NULL;
    int rc = kueue ? read_kueue(r, kueue, id) : 0;
    if (!rc && jobset) {
        if (!json_is_object(jobset))
            return wrong_type(r, settings, id, "jobset", jobset, "a mapping");
        rc = claim_settings(r, "jobset", jobset, id);
        if (!rc)
            rc = bool_setting(r, jobset, id, "install", &r->bp->jobset_install);
    }
    return rc;
}

static void add_unhandled(gc_blueprint *bp, const char *id, const char *source)
{
    bp->unhandled = gc_xrealloc(bp->unhandled, (bp->unhandled_count + 1) * sizeof(*bp->unhandled));
    bp->unhandled[bp->unhandled_count].id = gc_xstrdup(id);
    bp->unhandled[bp->unhandled_count].source = gc_xstrdup(source);
    bp->unhandled_count++;
}

/* Reads the modules in order; the cluster's module first, so pools know its zone. */
static int read_modules(bp_reader *r, json_t *groups, enum module_kind only_kind)
{
    size_t gi, mi;
    json_t *group, *module;
    json_array_foreach(groups, gi, group)
    {
        json_array_foreach(json_object_get(group, "modules"), mi, module)
        {
            const char *id = json_string_value(json_object_get(module, "id"));
            const char *source = json_string_value(json_object_get(module, "source"));
            json_t *settings = json_object_get(module, "settings");
            enum module_kind kind = module_kind(source);
            int rc = 0;
            if (kind != only_kind)
                continue;
            if (kind == MODULE_OTHER)
                add_unhandled(r->bp, id, source);
            else if (kind == MODULE_CLUSTER)
                rc = read_cluster(r, module, settings, id);
            else if (kind == MODULE_NODE_POOL)
                rc = read_node_pool(r, settings, id);
            else
                rc = read_kubectl_apply(r, settings, id);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Every module with its settings expanded where they can be (bp->modules, for the cloud plan).
 * A setting that names a module output cannot be known before Terraform runs; its text is kept
 * under "unevaluated" so the plan can still follow references it understands. */
static void keep_modules(bp_reader *r, json_t *groups)
{
    json_t *modules = json_array();
    size_t gi, mi;
    json_t *group, *module;
    json_array_foreach(groups, gi, group)
    {
        json_array_foreach(json_object_get(group, "modules"), mi, module)
        {
            json_t *settings = json_deep_copy(json_object_get(module, "settings"));
            json_t *raw = settings ? json_deep_copy(settings) : json_object();
            json_t *unevaluated = json_object();
            if (!settings)
                settings = json_object();
            const char *key;
            json_t *value;
            void *tmp;
            json_object_foreach_safe(settings, tmp, key, value)
            {
                json_t *text = json_incref(value);
                if (expand_in_place(r, settings, key, 0)) {
                    gc_error_clear(r->err);
                    json_object_set(unevaluated, key, text);
                    json_object_del(settings, key);
                }
                json_decref(text);
            }
            json_t *use = json_object_get(module, "use");
            json_array_append_new(
                modules,
                json_pack("{s:O, s:O, s:o, s:o, s:o, s:o}", "id", json_object_get(module, "id"),
                          "source", json_object_get(module, "source"), "use",
                          json_is_array(use) ? json_deep_copy(use) : json_array(), "settings",
                          settings, "unevaluated", unevaluated, "raw", raw));
        }
    }
    r->bp->modules = modules;
}

/* Top level */

static int apply_overrides(bp_reader *r, const char *const *overrides, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const char *eq = strchr(overrides[i], '=');
        if (!eq || eq == overrides[i] || !is_identifier(overrides[i], (size_t)(eq - overrides[i])))
            return gc_fail(r->err, GC_EXIT_USAGE,
                           "--vars %s: expected NAME=VALUE (e.g. --vars num_slices=2)",
                           overrides[i]);
        gc_yaml_doc value;
        gc_error why;
        if (gc_yaml_load(eq + 1, strlen(eq + 1), "--vars", &value, &why))
            return gc_fail(r->err, GC_EXIT_USAGE, "--vars %s: %s", overrides[i], why.message);
        json_t *v = gc_yaml_root(&value);
        char *name = gc_xstrndup(overrides[i], (size_t)(eq - overrides[i]));
        json_object_set(r->vars, name, v ? v : json_string(""));
        free(name);
        gc_yaml_doc_free(&value);
    }
    return 0;
}

static int read_top_level(bp_reader *r, const char *const *overrides, size_t count)
{
    json_t *root = gc_yaml_root(&r->doc);
    if (!json_is_object(root))
        return fail_at(r, NULL, NULL, 0,
                       "a blueprint is a YAML mapping with blueprint_name, vars and "
                       "deployment_groups");
    json_t *name = json_object_get(root, "blueprint_name");
    int rc = require_type(r, root, "blueprint_name", 0, name, JSON_STRING, "blueprint_name");
    if (rc)
        return rc;
    r->bp->name = gc_xstrdup(json_string_value(name));
    json_t *vars = json_object_get(root, "vars");
    if (!vars) {
        vars = json_object();
        json_object_set_new(root, "vars", vars);
    }
    rc = require_type(r, root, "vars", 0, vars, JSON_OBJECT, "vars");
    if (rc)
        return rc;
    r->vars = vars;
    rc = apply_overrides(r, overrides, count);
    if (rc)
        return rc;
    json_t *groups = json_object_get(root, "deployment_groups");
    rc = require_type(r, root, "deployment_groups", 0, groups, JSON_ARRAY, "deployment_groups");
    if (!rc)
        rc = check_modules(r, groups);
    if (!rc)
        rc = read_modules(r, groups, MODULE_CLUSTER);
    if (!rc)
        rc = read_modules(r, groups, MODULE_NODE_POOL);
    if (!rc)
        rc = read_modules(r, groups, MODULE_KUBECTL_APPLY);
    if (!rc)
        rc = read_modules(r, groups, MODULE_OTHER);
    if (!rc)
        keep_modules(r, groups);
    return rc;
}

/* Without a gke-cluster module the target still comes from the usual variables. */
static int fill_from_vars(bp_reader *r)
{
    gc_blueprint *bp = r->bp;
    int rc = 0;
    if (!bp->cluster)
        rc = string_setting(r, NULL, "blueprint", "deployment_name", &bp->cluster);
    if (!rc && !bp->project)
        rc = string_setting(r, NULL, "blueprint", "project_id", &bp->project);
    if (!rc && !bp->region)
        rc = string_setting(r, NULL, "blueprint", "region", &bp->region);
    if (!rc && !bp->zone)
        rc = string_setting(r, NULL, "blueprint", "zone", &bp->zone);
    bp->vars = json_incref(r->vars);
    return rc;
}

static char *directory_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return gc_xstrdup(".");
    if (slash == path)
        return gc_xstrdup("/");
    return gc_xstrndup(path, (size_t)(slash - path));
}

int gc_blueprint_load(const char *path, const char *const *overrides, size_t count,
                      gc_blueprint *bp, gc_error *err)
{
    memset(bp, 0, sizeof(*bp));
    bp->path = gc_xstrdup(path);
    bp->dir = directory_of(path);
    bp->kueue_vars = json_object();
    bp_reader r = {.bp = bp, .err = err};
    int rc = gc_yaml_load_file(path, &r.doc, err);
    if (rc) {
        err->code = GC_EXIT_USAGE;
        gc_yaml_doc_free(&r.doc);
        gc_blueprint_free(bp);
        return GC_EXIT_USAGE;
    }
    rc = read_top_level(&r, overrides, count);
    if (!rc)
        rc = fill_from_vars(&r);
    for (size_t i = 0; i < r.owner_count; i++)
        free(r.owners[i].setting);
    free(r.owners);
    gc_yaml_doc_free(&r.doc);
    if (rc)
        gc_blueprint_free(bp);
    return rc;
}

static void free_pool(gc_pool_spec *p)
{
    free(p->name);
    free(p->module_id);
    free(p->machine_type);
    free(p->accelerator);
    free(p->topology);
    free(p->zones);
}

void gc_blueprint_free(gc_blueprint *bp)
{
    for (size_t i = 0; i < bp->pool_count; i++)
        free_pool(&bp->pools[i]);
    for (size_t i = 0; i < bp->unhandled_count; i++) {
        free(bp->unhandled[i].id);
        free(bp->unhandled[i].source);
    }
    free(bp->pools);
    free(bp->unhandled);
    free(bp->path);
    free(bp->dir);
    free(bp->name);
    free(bp->project);
    free(bp->cluster);
    free(bp->region);
    free(bp->zone);
    free(bp->kueue_version);
    free(bp->kueue_config_path);
    json_decref(bp->vars);
    json_decref(bp->kueue_vars);
    json_decref(bp->modules);
    memset(bp, 0, sizeof(*bp));
}

gc_pool_spec *gc_blueprint_all_pools(const gc_blueprint *bp, const char *head_pool, size_t *count)
{
    size_t n = bp->pool_count + (bp->pathways ? 1 : 0);
    gc_pool_spec *pools = gc_xcalloc(n ? n : 1, sizeof(*pools));
    size_t i = 0;
    if (bp->pathways) {
        pools[i++] = (gc_pool_spec){
            .name = (char *)(head_pool ? head_pool : GC_PATHWAYS_HEAD_POOL),
            .module_id = "",
            .machine_type = GC_PATHWAYS_HEAD_MACHINE,
            .static_nodes = -1,
            .min_nodes = 0,
            .max_nodes = GC_PATHWAYS_HEAD_MAX,
        };
    }
    for (size_t j = 0; j < bp->pool_count; j++)
        if (!bp->pathways || strcmp(bp->pools[j].name, pools[0].name))
            pools[i++] = bp->pools[j];
    *count = i;
    return pools;
}
