/*
 * The modules deploy reads, typed: the module list's shape, then the gke-cluster, gke-node-pool
 * and kubectl-apply settings as fields of gc_blueprint, each wrong value named with its file,
 * line and column (or the variable it came from). See blueprint.c.
 */
#include "gcluster/deploy.h"

#include "blueprint_internal.h"
#include "expr.h"
#include "gcluster/catalog.h"
#include "gcluster/emit.h"
#include "gcluster/gcp.h"
#include "gcluster/text.h"
#include "network_outputs.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_POOL_MAX 1000

/* Module settings and outputs */

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

/* Typed settings of the modules deploy reads */

/* Where a module's value came from, for messages: the raw YAML container and a key prefix. */
typedef struct scope {
    const gc_bp_module *m;
    const json_t *raw;  /* the raw mapping holding the keys (settings, or settings.kueue...) */
    const json_t *val;  /* its evaluated twin */
    const char *prefix; /* "", "kueue.", "placement_policy." */
    bool fallback;      /* absent keys fall back to used modules and variables */
} scope;

static int get(bp_reader *r, const scope *s, const char *key, json_t **out)
{
    *out = NULL;
    if (s->fallback)
        return deploy_bp_module_setting(r, s->m, key, out);
    json_t *v = json_object_get(s->val, key);
    *out = v && !json_is_null(v) ? json_incref(v) : NULL;
    return 0;
}

/* The message for a value that is wrong: located at the setting, or at the variable. */
static int wrong(bp_reader *r, const scope *s, const char *key, const json_t *v,
                 const char *expected)
{
    const char *unknown = deploy_unknown_name(v);
    if (json_object_get(s->raw, key)) {
        if (unknown)
            return deploy_bp_fail_at(
                r, s->raw, key, 0,
                "module %s: setting %s%s uses %s, which is known only once Terraform "
                "has run; gcluster deploy needs %s here (use a variable or a literal)",
                s->m->id, s->prefix, key, unknown, expected);
        return deploy_bp_fail_at(r, s->raw, key, 0, "module %s: setting %s%s must be %s, not %s",
                                 s->m->id, s->prefix, key, expected, gc_yaml_type_name(v));
    }
    return deploy_bp_fail_at(r, r->raw_vars, key, 0,
                             "vars.%s (used by module %s) must be %s, not %s", key, s->m->id,
                             expected, unknown ? "a module output" : gc_yaml_type_name(v));
}

/* v1.2.3 (the v optional), with an optional -suffix of letters, digits, dots and hyphens. */
static bool is_release_version(const char *v)
{
    if (*v == 'v')
        v++;
    for (int part = 0; part < 3; part++) {
        if (part && *v++ != '.')
            return false;
        size_t digits = strspn(v, "0123456789");
        if (!digits || digits > 9)
            return false;
        v += digits;
    }
    if (*v == '-' && v[1])
        v += 1 + strspn(v + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");
    return *v == '\0';
}

/* Settings whose values end up as Kubernetes node labels (cloud.google.com/gke-nodepool,
 * node.kubernetes.io/instance-type, topology.kubernetes.io/region and zone) and in GKE and
 * kubeconfig names: their form is checked where they are read, naming the setting or variable,
 * so a value the API server or gcloud would refuse (or one with bytes a terminal acts on) ends
 * here with exit 2. Every other string setting must at least be text without control
 * characters. */
static const struct {
    const char *key;
    bool (*ok)(const char *value);
    const char *form;
} setting_forms[] = {
    {"name", gc_gcp_is_gke_name,
     "a GKE name: at most 40 lower-case letters, digits and hyphens, starting with a letter and "
     "ending with a letter or digit"},
    {"deployment_name", gc_gcp_is_gke_name,
     "a GKE cluster name: at most 40 lower-case letters, digits and hyphens, starting with a "
     "letter and ending with a letter or digit"},
    {"machine_type", gc_gcp_is_machine_type,
     "a machine type: lower-case letters, digits and hyphens, such as n2-standard-32"},
    {"region", gc_gcp_is_location, "a Google Cloud region, such as us-central1"},
    {"zone", gc_gcp_is_location, "a Google Cloud zone, such as us-central1-a"},
};

bool deploy_bp_is_printable(const char *s)
{
    size_t len = strlen(s);
    for (size_t i = 0, n; i < len; i += n)
        if (!(n = gc_text_printable_char(s + i, len - i)))
            return false;
    return true;
}

static int check_form(bp_reader *r, const scope *s, const char *key, const char *value)
{
    const char *form = NULL;
    for (size_t i = 0; i < sizeof(setting_forms) / sizeof(*setting_forms); i++)
        if (!strcmp(key, setting_forms[i].key) && !setting_forms[i].ok(value))
            form = setting_forms[i].form;
    if (!form && !deploy_bp_is_printable(value))
        form = "text without control characters";
    /* A release's version goes into a download URL and a --manifests-dir file name, so it is a
     * version and nothing else. */
    if (!form && !strcmp(key, "version") && !is_release_version(value))
        form = "a release version, such as v0.17.1";
    if (!form)
        return 0;
    const char *more = strlen(value) > 64 ? "..." : "";
    if (json_object_get(s->raw, key))
        return deploy_bp_fail_at(r, s->raw, key, 0, "module %s: setting %s%s \"%.64s%s\" is not %s",
                                 s->m->id, s->prefix, key, value, more, form);
    return deploy_bp_fail_at(r, r->raw_vars, key, 0,
                             "vars.%s \"%.64s%s\" (used by module %s) is not %s", key, value, more,
                             s->m->id, form);
}

static int get_string(bp_reader *r, const scope *s, const char *key, char **out)
{
    json_t *v;
    int rc = get(r, s, key, &v);
    if (rc || !v)
        return rc;
    if (!json_is_string(v) || !*json_string_value(v))
        rc = wrong(r, s, key, v, "a non-empty string");
    else
        rc = check_form(r, s, key, json_string_value(v));
    if (!rc) {
        free(*out);
        *out = gc_xstrdup(json_string_value(v));
    }
    json_decref(v);
    return rc;
}

static int get_bool(bp_reader *r, const scope *s, const char *key, bool *out)
{
    json_t *v;
    int rc = get(r, s, key, &v);
    if (rc || !v)
        return rc;
    if (!json_is_boolean(v))
        rc = wrong(r, s, key, v, "true or false");
    else
        *out = json_is_true(v);
    json_decref(v);
    return rc;
}

static int get_count(bp_reader *r, const scope *s, const char *key, long *out)
{
    json_t *v;
    int rc = get(r, s, key, &v);
    if (rc || !v)
        return rc;
    /* A whole number arithmetic produced as a real (6 / 2); the range check comes first, as
     * converting a real outside long's range is undefined. */
    if (json_is_real(v) && fabs(json_real_value(v)) <= 100000 &&
        json_real_value(v) == (double)(long)json_real_value(v)) {
        json_t *i = json_integer((json_int_t)json_real_value(v));
        json_decref(v);
        v = i;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 100000)
        rc = wrong(r, s, key, v, "a whole number from 0 to 100000");
    else
        *out = (long)json_integer_value(v);
    json_decref(v);
    return rc;
}

/* A nested mapping (settings.kueue, settings.placement_policy) as a scope of its own. */
static int sub_scope(bp_reader *r, const scope *s, const char *key, scope *out, bool *present)
{
    json_t *v;
    *present = false;
    int rc = get(r, s, key, &v);
    if (rc || !v)
        return rc;
    if (!json_is_object(v)) {
        rc = wrong(r, s, key, v, "a mapping");
        json_decref(v);
        return rc;
    }
    const json_t *raw = json_object_get(s->raw, key);
    *out = (scope){.m = s->m,
                   .raw = json_is_object(raw) ? raw : r->raw_vars,
                   .val = v,
                   .prefix = key,
                   .fallback = false};
    json_decref(v); /* still owned by s->val or the evaluated variables */
    *present = true;
    return 0;
}

/* Validators (-l/--validation-level) */

/* A check the toolkit makes as a deploy_bp_validator, not as a parse error: with -l WARNING it
 * becomes a warning and deploy goes on, with -l IGNORE it is skipped. */
int deploy_bp_validator(bp_reader *r, int rc)
{
    if (!rc || r->bp->validation == GC_VALIDATION_ERROR)
        return rc;
    if (r->bp->validation == GC_VALIDATION_WARNING)
        gc_strings_push(&r->bp->warnings, r->err->message);
    r->err->code = 0;
    r->err->message[0] = '\0';
    return 0;
}

/* Structure */

int deploy_bp_require_type(const bp_reader *r, const json_t *container, const char *key,
                           size_t index, const json_t *value, json_type type, const char *what)
{
    if (value && json_typeof(value) == type)
        return 0;
    if (!value)
        return deploy_bp_fail_at(r, container, NULL, 0, "%s is missing", what);
    return deploy_bp_fail_at(r, container, key, index, "%s must be %s, not %s", what,
                             type == JSON_OBJECT  ? "a mapping"
                             : type == JSON_ARRAY ? "a list"
                                                  : "a string",
                             gc_yaml_type_name(value));
}

static void add_module(gc_blueprint *bp, const char *group, const char *id, const char *source,
                       const json_t *use)
{
    bp->modules = gc_xrealloc(bp->modules, (bp->module_count + 1) * sizeof(*bp->modules));
    gc_bp_module *m = &bp->modules[bp->module_count++];
    memset(m, 0, sizeof(*m));
    m->id = gc_xstrdup(id);
    m->source = gc_xstrdup(source);
    m->group = gc_xstrdup(group ? group : "");
    m->kind = (gc_bp_module_kind)module_kind(source);
    m->use_count = json_array_size(use);
    m->use = gc_xcalloc(m->use_count ? m->use_count : 1, sizeof(*m->use));
    for (size_t i = 0; i < m->use_count; i++)
        m->use[i] = gc_xstrdup(json_string_value(json_array_get(use, i)));
}

/* Checks the module list's shape (ids unique, sources strings, `use` naming modules) and
 * records the modules in order. */
int deploy_bp_check_modules(bp_reader *r, json_t *groups)
{
    int rc = 0;
    size_t gi, mi;
    json_t *group, *module;
    json_array_foreach(groups, gi, group)
    {
        rc = deploy_bp_require_type(r, groups, NULL, gi, group, JSON_OBJECT, "a deployment group");
        json_t *modules = rc ? NULL : json_object_get(group, "modules");
        if (!rc)
            rc = deploy_bp_require_type(r, group, "modules", 0, modules, JSON_ARRAY,
                                        "deployment_groups[].modules");
        json_array_foreach(rc ? NULL : modules, mi, module)
        {
            rc = deploy_bp_require_type(r, modules, NULL, mi, module, JSON_OBJECT, "a module");
            json_t *id = rc ? NULL : json_object_get(module, "id");
            if (!rc)
                rc = deploy_bp_require_type(r, module, "id", 0, id, JSON_STRING, "module id");
            if (!rc)
                rc = deploy_bp_require_type(r, module, "source", 0,
                                            json_object_get(module, "source"), JSON_STRING,
                                            "module source");
            /* Ids and sources are printed in the plan: text only. */
            if (!rc && !deploy_bp_is_printable(json_string_value(id)))
                rc = deploy_bp_fail_at(r, module, "id", 0,
                                       "module id \"%.64s\" has control characters",
                                       json_string_value(id));
            if (!rc &&
                !deploy_bp_is_printable(json_string_value(json_object_get(module, "source"))))
                rc = deploy_bp_fail_at(r, module, "source", 0,
                                       "module %s: source has control characters",
                                       json_string_value(id));
            if (!rc && json_object_get(r->modules, json_string_value(id)))
                rc = deploy_bp_fail_at(r, module, "id", 0,
                                       "module id %s is used twice; ids must be unique",
                                       json_string_value(id));
            json_t *settings = rc ? NULL : json_object_get(module, "settings");
            if (!rc && settings && !json_is_null(settings))
                rc = deploy_bp_require_type(r, module, "settings", 0, settings, JSON_OBJECT,
                                            "module settings");
            json_t *use = rc ? NULL : json_object_get(module, "use");
            if (!rc && use)
                rc = deploy_bp_require_type(r, module, "use", 0, use, JSON_ARRAY, "module use");
            if (rc)
                return rc;
            json_object_set(r->modules, json_string_value(id), module);
            add_module(r->bp, json_string_value(json_object_get(group, "group")),
                       json_string_value(id), json_string_value(json_object_get(module, "source")),
                       use);
        }
        if (rc)
            return rc;
    }
    /* `use` may name modules declared later, so it is checked once all ids are known. */
    json_array_foreach(groups, gi, group)
    {
        json_array_foreach(json_object_get(group, "modules"), mi, module)
        {
            json_t *use = json_object_get(module, "use"), *u;
            size_t ui;
            json_array_foreach(use, ui, u)
            {
                if (!json_is_string(u) || !json_object_get(r->modules, json_string_value(u)))
                    return deploy_bp_fail_at(
                        r, use, NULL, ui, "module %s uses %s, which no module declares",
                        json_string_value(json_object_get(module, "id")),
                        json_is_string(u) ? json_string_value(u) : "a non-string");
            }
        }
    }
    return 0;
}

/* Modules */

static int read_cluster(bp_reader *r, const gc_bp_module *m, const json_t *module)
{
    gc_blueprint *bp = r->bp;
    if (bp->cluster)
        return deploy_bp_fail_at(
            r, module, "id", 0,
            "module %s is a second gke-cluster; a blueprint deploys one cluster", m->id);
    scope s = {.m = m,
               .raw = json_object_get(module, "settings"),
               .val = m->settings,
               .prefix = "",
               .fallback = true};
    int rc = get_string(r, &s, "name", &bp->cluster);
    if (!rc && !bp->cluster)
        rc = get_string(r, &s, "deployment_name", &bp->cluster);
    if (!rc)
        rc = get_string(r, &s, "project_id", &bp->project);
    if (!rc)
        rc = get_string(r, &s, "region", &bp->region);
    if (!rc)
        rc = get_string(r, &s, "zone", &bp->zone);
    if (!rc)
        rc = get_bool(r, &s, "enable_pathways_for_tpus", &bp->pathways);
    if (!rc && !bp->cluster)
        rc = deploy_bp_fail_at(
            r, module, "id", 0,
            "module %s: the cluster has no name; set settings.name or pass --vars "
            "deployment_name=NAME",
            m->id);
    return rc;
}

/* TPU pools: the accelerator label and topology from the catalog, and one fixed size (the
 * slice's hosts) unless the pool is flex-start, which autoscales. */
static int read_tpu_shape(bp_reader *r, const scope *s, gc_pool_spec *p, const gc_tpu_machine *m,
                          bool flex_start)
{
    scope policy = {0};
    bool has_policy;
    int rc = sub_scope(r, s, "placement_policy", &policy, &has_policy);
    if (!rc && has_policy) {
        policy.prefix = "placement_policy.";
        rc = get_string(r, &policy, "tpu_topology", &p->topology);
    }
    /* gke-node-pool has no tpu_topology input: only a setting written on the module counts,
     * never a blueprint variable of that name. */
    if (!rc && !p->topology && json_object_get(s->raw, "tpu_topology"))
        rc = get_string(r, s, "tpu_topology", &p->topology);
    if (rc)
        return rc;
    if (!p->topology)
        p->topology = deploy_bp_pool_topology(r, s->m);
    if (!p->topology && m->only_topology)
        p->topology = gc_xstrdup(m->only_topology);
    if (!p->topology) {
        const json_t *raw = has_policy ? policy.raw : NULL;
        const char *var = json_is_string(json_object_get(raw, "tpu_topology"))
                              ? json_string_value(json_object_get(raw, "tpu_topology"))
                              : NULL;
        if (var && !strncmp(var, "$(vars.", 7))
            return deploy_bp_fail_at(
                r, raw, "tpu_topology", 0,
                "module %s: placement_policy.tpu_topology is %s, which has no value; "
                "pass --vars %.*s=TOPOLOGY (e.g. 4x4) or set it in the deployment file",
                s->m->id, var, (int)(strlen(var) - 8), var + 7);
        return deploy_bp_fail_at(
            r, s->raw, NULL, 0,
            "module %s: TPU machine type %s needs placement_policy.tpu_topology "
            "(e.g. 4x4)",
            s->m->id, m->machine_type);
    }
    gc_error why;
    if (gc_topology_validate(m, p->topology, &why)) {
        const json_t *raw =
            has_policy && json_object_get(policy.raw, "tpu_topology") ? policy.raw : s->raw;
        rc = deploy_bp_validator(r, deploy_bp_fail_at(r, raw, "tpu_topology", 0, "module %s: %s",
                                                      s->m->id, why.message));
        if (rc)
            return rc;
    }
    p->accelerator = gc_xstrdup(m->family->gke_accelerator);
    long hosts = gc_topology_chips(p->topology) / m->chips_per_vm;
    if (p->static_nodes >= 0 && p->static_nodes != hosts)
        return deploy_bp_validator(
            r, deploy_bp_fail_at(
                   r, s->raw, "static_node_count", 0,
                   "module %s: a %s slice of %s has %ld hosts, but static_node_count is %ld",
                   s->m->id, p->topology, m->machine_type, hosts, p->static_nodes));
    if (!flex_start)
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

static int read_zones(bp_reader *r, const scope *s, gc_pool_spec *p)
{
    json_t *zones;
    int rc = get(r, s, "zones", &zones);
    if (rc || !zones)
        return rc;
    if (!json_is_array(zones)) {
        rc = wrong(r, s, "zones", zones, "a list of zone names");
        json_decref(zones);
        return rc;
    }
    gc_buf b;
    gc_buf_init(&b);
    json_t *z;
    size_t i;
    const json_t *raw = json_object_get(s->raw, "zones");
    json_array_foreach(zones, i, z)
    {
        const json_t *text = json_array_get(raw, i);
        if (json_is_null(z) && json_is_string(text) &&
            !strncmp(json_string_value(text), "$(vars.", 7)) {
            const char *t = json_string_value(text);
            rc = deploy_bp_fail_at(
                r, raw, NULL, i,
                "module %s: zones item %s has no value; pass --vars %.*s=ZONE (e.g. "
                "us-east5-b) or set it in the deployment file",
                s->m->id, t, (int)(strlen(t) - 8), t + 7);
            break;
        }
        if (!json_is_string(z) || !*json_string_value(z)) {
            rc = wrong(r, s, "zones", zones, "a list of zone names");
            break;
        }
        if (!gc_gcp_is_location(json_string_value(z))) {
            rc =
                deploy_bp_fail_at(r, json_is_array(raw) ? raw : s->raw,
                                  json_is_array(raw) ? NULL : "zones", json_is_array(raw) ? i : 0,
                                  "module %s: zones: \"%.64s\" is not a Google Cloud zone, such as "
                                  "us-central1-a",
                                  s->m->id, json_string_value(z));
            break;
        }
        gc_buf_printf(&b, "%s%s", b.len ? "," : "", json_string_value(z));
    }
    json_decref(zones);
    if (!rc)
        p->zones = b.len ? gc_buf_detach(&b) : NULL;
    gc_buf_free(&b);
    return rc;
}

/* The pool name gke-node-pool gives when `name` is unset: machine type and module id, the id
 * lower-cased with every character outside a-z, 0-9 and '-' removed. */
static char *default_pool_name(const char *machine, const char *id)
{
    gc_buf b;
    gc_buf_init(&b);
    gc_buf_printf(&b, "%s-", machine);
    for (const char *c = id; *c; c++) {
        char l = (char)tolower((unsigned char)*c);
        if ((l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') || l == '-')
            gc_buf_putc(&b, l);
    }
    return gc_buf_detach(&b);
}

/* One gke-node-pool module: max(num_node_pools, num_slices) pools; with more than one they are
 * NAME-0, NAME-1, ... as the module names them. */
static int read_node_pool(bp_reader *r, const gc_bp_module *m, const json_t *module)
{
    scope s = {.m = m,
               .raw = json_object_get(module, "settings"),
               .val = m->settings,
               .prefix = "",
               .fallback = true};
    gc_pool_spec pool = {.static_nodes = -1, .max_nodes = DEFAULT_POOL_MAX};
    long slices = 1, node_pools = 1;
    bool flex_start = false;
    int rc = get_string(r, &s, "name", &pool.name);
    if (!rc)
        rc = get_string(r, &s, "machine_type", &pool.machine_type);
    if (!rc)
        rc = get_count(r, &s, "static_node_count", &pool.static_nodes);
    if (!rc)
        rc = get_count(r, &s, "autoscaling_total_min_nodes", &pool.min_nodes);
    if (!rc)
        rc = get_count(r, &s, "autoscaling_total_max_nodes", &pool.max_nodes);
    if (!rc)
        rc = get_bool(r, &s, "spot", &pool.spot);
    if (!rc)
        rc = get_bool(r, &s, "enable_flex_start", &flex_start);
    if (!rc)
        rc = get_count(r, &s, "num_slices", &slices);
    if (!rc)
        rc = get_count(r, &s, "num_node_pools", &node_pools);
    if (!rc)
        rc = read_zones(r, &s, &pool);
    if (!pool.machine_type)
        pool.machine_type = gc_xstrdup(DEFAULT_POOL_MACHINE);
    if (!pool.name)
        pool.name = default_pool_name(pool.machine_type, m->id);
    const gc_tpu_machine *tpu = gc_catalog_tpu_machine(pool.machine_type);
    if (!rc && tpu)
        rc = read_tpu_shape(r, &s, &pool, tpu, flex_start);
    if (!rc && pool.static_nodes < 0 && pool.min_nodes > pool.max_nodes)
        rc = deploy_bp_fail_at(r, s.raw, "autoscaling_total_min_nodes", 0,
                               "module %s: autoscaling_total_min_nodes %ld is above "
                               "autoscaling_total_max_nodes %ld",
                               m->id, pool.min_nodes, pool.max_nodes);
    if (!rc && slices == 0)
        rc = deploy_bp_fail_at(r, s.raw, "num_slices", 0,
                               "module %s: num_slices must be at least 1", m->id);
    long count = slices > node_pools ? slices : node_pools;
    for (long i = 0; !rc && i < count; i++) {
        gc_pool_spec *p = add_pool(r->bp);
        *p = pool;
        p->name = count == 1 ? gc_xstrdup(pool.name) : gc_xasprintf("%s-%ld", pool.name, i);
        p->module_id = gc_xstrdup(m->id);
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
        int rc = deploy_bp_fail_at(
            r, container, key, 0,
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

static int read_kueue(bp_reader *r, const scope *kueue)
{
    gc_blueprint *bp = r->bp;
    const char *id = kueue->m->id;
    int rc = claim_settings(r, "kueue", kueue->raw, id);
    json_t *raw_vars = json_object_get(kueue->raw, "config_template_vars");
    if (!rc && json_is_object(raw_vars))
        rc = claim_settings(r, "kueue.config_template_vars", raw_vars, id);
    if (!rc)
        rc = get_bool(r, kueue, "install", &bp->kueue_install);
    if (!rc)
        rc = get_string(r, kueue, "version", &bp->kueue_version);
    bool pathways = false, slicing = false;
    if (!rc)
        rc = get_bool(r, kueue, "enable_pathways_for_tpus", &pathways);
    if (!rc)
        rc = get_bool(r, kueue, "enable_dynamic_slicing_for_tpus", &slicing);
    bp->pathways = bp->pathways || pathways;
    bp->kueue_pathways = bp->kueue_pathways || pathways;
    bp->dynamic_slicing = bp->dynamic_slicing || slicing;
    char *config_path = NULL;
    if (!rc)
        rc = get_string(r, kueue, "config_path", &config_path);
    const json_t *raw_path = json_object_get(kueue->raw, "config_path");
    const char *text = json_string_value(raw_path);
    if (text && !strncmp(text, "$(vars.", 7) && strlen(text) > 8 && text[strlen(text) - 1] == ')' &&
        deploy_bp_is_identifier(text + 7, strlen(text) - 8)) {
        free(bp->kueue_config_var);
        bp->kueue_config_var = gc_xstrndup(text + 7, strlen(text) - 8);
    }
    if (config_path) {
        free(bp->kueue_config_path);
        bp->kueue_config_path = config_path[0] == '/' ? gc_xstrdup(config_path)
                                                      : gc_xasprintf("%s/%s", bp->dir, config_path);
        free(config_path);
    }
    json_t *vars = json_object_get(kueue->val, "config_template_vars");
    if (!rc && vars && !json_is_null(vars)) {
        if (!json_is_object(vars))
            return deploy_bp_fail_at(
                r, kueue->raw, "config_template_vars", 0,
                "module %s: kueue.config_template_vars must be a mapping, not %s", id,
                gc_yaml_type_name(vars));
        json_object_update(bp->kueue_vars, vars);
        bp->kueue_user_vars = bp->kueue_user_vars || json_object_size(vars) > 0;
    }
    return rc;
}

/* A release the module installs (jobset, cert_manager): whether, and its version, which
 * install.c reads back; a wrong type is refused here with the file and line. */
static int read_release(bp_reader *r, scope *s, const char *setting, const char *prefix,
                        bool *install)
{
    s->prefix = prefix;
    int rc = claim_settings(r, setting, s->raw, s->m->id);
    if (!rc)
        rc = get_bool(r, s, "install", install);
    char *version = NULL;
    if (!rc)
        rc = get_string(r, s, "version", &version);
    free(version);
    return rc;
}

static int read_kubectl_apply(bp_reader *r, const gc_bp_module *m, const json_t *module)
{
    r->bp->has_kubectl_apply = true;
    scope s = {.m = m,
               .raw = json_object_get(module, "settings"),
               .val = m->settings,
               .prefix = "",
               .fallback = true};
    /* The module's own enable_pathways_for_tpus (or the cluster's, through use, or the
     * variable) selects the built-in Pathways configuration as kueue.enable_pathways_for_tpus
     * does. */
    bool pathways = false;
    int rc = get_bool(r, &s, "enable_pathways_for_tpus", &pathways);
    r->bp->kueue_pathways = r->bp->kueue_pathways || pathways;
    scope kueue, jobset, cert_manager;
    bool has_kueue = false, has_jobset = false, has_cert_manager = false;
    s.fallback = false;
    if (!rc)
        rc = sub_scope(r, &s, "kueue", &kueue, &has_kueue);
    if (!rc && has_kueue) {
        kueue.prefix = "kueue.";
        rc = read_kueue(r, &kueue);
    }
    if (!rc)
        rc = sub_scope(r, &s, "jobset", &jobset, &has_jobset);
    if (!rc && has_jobset)
        rc = read_release(r, &jobset, "jobset", "jobset.", &r->bp->jobset_install);
    if (!rc)
        rc = sub_scope(r, &s, "cert_manager", &cert_manager, &has_cert_manager);
    if (!rc && has_cert_manager)
        rc = read_release(r, &cert_manager, "cert_manager", "cert_manager.",
                          &r->bp->cert_manager_install);
    return rc;
}

static void add_unhandled(gc_blueprint *bp, const char *id, const char *source)
{
    bp->unhandled = gc_xrealloc(bp->unhandled, (bp->unhandled_count + 1) * sizeof(*bp->unhandled));
    bp->unhandled[bp->unhandled_count].id = gc_xstrdup(id);
    bp->unhandled[bp->unhandled_count].source = gc_xstrdup(source);
    bp->unhandled_count++;
}

/* Reads the modules of one kind in order; the cluster's first, so pools know its zone. */
int deploy_bp_read_modules(bp_reader *r, gc_bp_module_kind only_kind)
{
    for (size_t i = 0; i < r->bp->module_count; i++) {
        const gc_bp_module *m = &r->bp->modules[i];
        const json_t *module = json_object_get(r->modules, m->id);
        int rc = 0;
        if (m->kind != only_kind)
            continue;
        if (m->kind == GC_BP_MODULE_OTHER)
            add_unhandled(r->bp, m->id, m->source);
        else if (m->kind == GC_BP_MODULE_CLUSTER)
            rc = read_cluster(r, m, module);
        else if (m->kind == GC_BP_MODULE_NODE_POOL)
            rc = read_node_pool(r, m, module);
        else
            rc = read_kubectl_apply(r, m, module);
        if (rc)
            return rc;
    }
    return 0;
}
