/*
 * Blueprints: Cluster Toolkit's YAML (blueprint_name, vars, deployment_groups[].modules[]) read
 * into a gc_blueprint, evaluated as the toolkit evaluates it.
 *
 * - Variables come from the blueprint, then a deployment file (-d) replaces some, then --vars.
 *   A variable's value may itself be an expression ($(ghpc_stage("x.tftpl")), $(vars.a)-b): it is
 *   evaluated where it is used, once, and a cycle is an error.
 * - Every module's settings are evaluated: $( ... ) holds an HCL expression over vars and module
 *   outputs (expr.c). Outputs of gke-node-pool that blueprints compute with (node_count_static,
 *   tpu_chips_per_node, static_gpu_count, ...) are derived from the machine type and topology as
 *   the module derives them; any other module output is known only once Terraform runs, so a
 *   value computed from it stays unknown and is an error only where deploy needs it.
 * - A setting a module leaves out takes what a module it `use`s outputs under that name (the
 *   outputs modelled here), else the blueprint variable of the same name, as in the toolkit.
 * - A TPU pool with a topology and no static_node_count gets the slice's host count, as the
 *   toolkit's expansion does (not for flex-start pools, which autoscale).
 * - Modules deploy does not act on are kept by id and source and listed as not handled.
 */
#include "gcluster/deploy.h"

#include "expr.h"
#include "gcluster/catalog.h"
#include "gcluster/emit.h"
#include "gcluster/text.h"
#include "network_outputs.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SOURCE_CLUSTER       "modules/scheduler/gke-cluster"
#define SOURCE_NODE_POOL     "modules/compute/gke-node-pool"
#define SOURCE_KUBECTL_APPLY "modules/management/kubectl-apply"

/* gke-node-pool's defaults: machine_type, autoscaling_total_max_nodes. */
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
    gc_yaml_doc deployment; /* -d */
    bool has_deployment;
    gc_blueprint *bp;
    json_t *raw_vars;   /* the doc's vars with the deployment file and --vars applied */
    json_t *vars;       /* evaluated variables, filled as they are used */
    json_t *evaluating; /* variables and modules being evaluated (a cycle check) */
    json_t *chain;      /* what is being evaluated, outermost first ("vars.a", "pool.x") */
    deploy_budget budget;
    int output_rc; /* the first error while deriving a module output, and its message */
    gc_error output_err;
    json_t *modules; /* id → the module's raw mapping */
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
    if (container && r->has_deployment &&
        gc_yaml_mark_of(&r->deployment, container, key, index, &line, &column))
        return gc_fail(r->err, GC_EXIT_USAGE, "%s:%d:%d: %s", r->bp->deployment_file, line, column,
                       message);
    return gc_fail(r->err, GC_EXIT_USAGE, "%s: %s", r->bp->path, message);
}

/* Evaluation */

static bool is_identifier(const char *s, size_t len)
{
    if (!len || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < len; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '-'))
            return false;
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

static int eval_value(bp_reader *r, const json_t *raw, json_t **out);
static bool located(const bp_reader *r);
static int module_output(bp_reader *r, const char *id, const char *name, json_t **out);

/* "a -> b -> c -> a": the chain from its first entry starting with `from` to `to`. */
static char *cycle_text(const bp_reader *r, const char *from, const char *to)
{
    gc_buf b;
    gc_buf_init(&b);
    size_t n = json_array_size(r->chain), start = n;
    for (size_t i = 0; i < n && start == n; i++)
        if (!strncmp(json_string_value(json_array_get(r->chain, i)), from, strlen(from)))
            start = i;
    for (size_t i = start; i < n; i++)
        gc_buf_printf(&b, "%s -> ", json_string_value(json_array_get(r->chain, i)));
    gc_buf_puts(&b, to);
    return gc_buf_detach(&b);
}

/* A cycle is an error naming it; "refers to" keeps it an error in modules deploy does not read
 * (whose other failures become unknown values). */
static int cycle(bp_reader *r, const char *from, const char *to)
{
    char *text = cycle_text(r, from, to);
    int rc = gc_fail(r->err, GC_EXIT_USAGE,
                     "%s refers to itself: %s; give one of them a value that does not", to, text);
    free(text);
    return rc;
}

/* Variables referring to variables recurse; far beyond any blueprint, and far below what the C
 * stack holds. */
#define MAX_CHAIN 128

static int push_chain(bp_reader *r, const char *what)
{
    if (json_array_size(r->chain) >= MAX_CHAIN)
        return gc_fail(r->err, GC_EXIT_USAGE,
                       "%s: variables and module outputs refer to one another more than %d deep",
                       what, MAX_CHAIN);
    json_array_append_new(r->chain, json_string(what));
    return 0;
}

static void pop_chain(bp_reader *r)
{
    json_array_remove(r->chain, json_array_size(r->chain) - 1);
}

/* A variable's value, evaluated once. */
static int var_value(bp_reader *r, const char *name, json_t **out)
{
    json_t *done = json_object_get(r->vars, name);
    if (done) {
        *out = json_incref(done);
        return 0;
    }
    json_t *raw = json_object_get(r->raw_vars, name);
    if (!raw) {
        char *names = defined_var_names(r->raw_vars);
        int rc = gc_fail(r->err, GC_EXIT_USAGE,
                         "$(vars.%s) refers to a variable the blueprint does not define (vars: "
                         "%s); add it under vars: or pass --vars %s=VALUE",
                         name, names, name);
        free(names);
        return rc;
    }
    char *what = gc_xasprintf("vars.%s", name);
    int rc = json_object_get(r->evaluating, what) ? cycle(r, what, what) : push_chain(r, what);
    if (rc) {
        free(what);
        return rc;
    }
    json_object_set_new(r->evaluating, what, json_true());
    rc = eval_value(r, raw, out);
    if (!rc && (rc = deploy_charge(&r->budget, *out, what, r->err)) != 0) {
        json_decref(*out);
        *out = NULL;
    }
    json_object_del(r->evaluating, what);
    pop_chain(r);
    free(what);
    if (rc)
        return located(r) ? rc
                          : fail_at(r, r->raw_vars, name, 0, "vars.%s: %s", name, r->err->message);
    json_object_set(r->vars, name, *out);
    return 0;
}

static int env_ref(void *ctx, const char *root, const char *attr, json_t **out, gc_error *err)
{
    (void)err;
    bp_reader *r = ctx;
    if (!strcmp(root, "vars"))
        return var_value(r, attr, out);
    if (!json_object_get(r->modules, root))
        return gc_fail(r->err, GC_EXIT_USAGE,
                       "$(%s.%s) refers to module %s, which the blueprint does not declare; "
                       "references are vars.NAME or MODULE_ID.OUTPUT",
                       root, attr, root);
    return module_output(r, root, attr, out);
}

/* ghpc_stage("FILE"): the toolkit copies FILE (relative to the blueprint) next to the
 * deployment and gives its new path. Here the file stays where it is, and the path stays
 * relative to the blueprint, which is where paths in settings are resolved. */
static int env_stage(void *ctx, const char *path, json_t **out, gc_error *err)
{
    (void)ctx;
    (void)err;
    *out = json_string(path);
    return 0;
}

static deploy_env blueprint_env(bp_reader *r)
{
    return (deploy_env){.ref = env_ref, .stage = env_stage, .ctx = r, .budget = &r->budget};
}

/* A copy of `raw` with every string's expressions evaluated. */
static int eval_value(bp_reader *r, const json_t *raw, json_t **out)
{
    *out = NULL;
    if (json_is_string(raw)) {
        deploy_env env = blueprint_env(r);
        return deploy_string_eval(json_string_value(raw), &env, out, r->err);
    }
    if (json_is_array(raw)) {
        json_t *list = json_array();
        size_t i;
        const json_t *item;
        json_array_foreach(raw, i, item)
        {
            json_t *v;
            int rc = eval_value(r, item, &v);
            if (rc) {
                json_decref(list);
                return rc;
            }
            json_array_append_new(list, v);
        }
        *out = list;
        return 0;
    }
    if (json_is_object(raw)) {
        json_t *obj = json_object();
        const char *key;
        const json_t *item;
        json_object_foreach((json_t *)raw, key, item)
        {
            json_t *v;
            int rc = eval_value(r, item, &v);
            if (rc) {
                json_decref(obj);
                return rc;
            }
            json_object_set_new(obj, key, v);
        }
        *out = obj;
        return 0;
    }
    *out = raw ? json_deep_copy(raw) : json_null();
    return 0;
}

/* Whether the error message already starts with a file location. */
static bool located(const bp_reader *r)
{
    const char *m = r->err->message, *dep = r->bp->deployment_file;
    return !strncmp(m, r->bp->path, strlen(r->bp->path)) || (dep && !strncmp(m, dep, strlen(dep)));
}

/* The same, with an error located at the innermost value that failed. */
static int eval_located(bp_reader *r, const json_t *container, const char *key, size_t index,
                        json_t **out)
{
    const json_t *raw = key ? json_object_get(container, key) : json_array_get(container, index);
    if (json_is_array(raw) || json_is_object(raw)) {
        json_t *copy = json_is_array(raw) ? json_array() : json_object();
        const char *k;
        const json_t *item;
        size_t i;
        int rc = 0;
        if (json_is_array(raw)) {
            json_array_foreach(raw, i, item)
            {
                json_t *v;
                if ((rc = eval_located(r, raw, NULL, i, &v)) != 0)
                    break;
                json_array_append_new(copy, v);
            }
        } else {
            json_object_foreach((json_t *)raw, k, item)
            {
                json_t *v;
                if ((rc = eval_located(r, raw, k, 0, &v)) != 0)
                    break;
                json_object_set_new(copy, k, v);
            }
        }
        if (rc)
            json_decref(copy);
        *out = rc ? NULL : copy;
        return rc;
    }
    int rc = eval_value(r, raw, out);
    if (rc && !located(r))
        return fail_at(r, container, key, index, "%s", r->err->message);
    return rc;
}

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

static gc_bp_module *find_module(const gc_blueprint *bp, const char *id)
{
    for (size_t i = 0; i < bp->module_count; i++)
        if (!strcmp(bp->modules[i].id, id))
            return &bp->modules[i];
    return NULL;
}

/* The gke-cluster whose enable_pathways_for_tpus output a kubectl-apply module gets: the one
 * it uses; without one in `use` (the toolkit would refuse the missing cluster_id), the
 * blueprint's cluster, which is the one deploy acts on. */
static const gc_bp_module *wired_cluster(const gc_blueprint *bp, const gc_bp_module *m)
{
    if (m->kind != GC_BP_MODULE_KUBECTL_APPLY)
        return NULL;
    for (size_t i = 0; i < m->use_count; i++) {
        const gc_bp_module *used = find_module(bp, m->use[i]);
        if (used && used->kind == GC_BP_MODULE_CLUSTER)
            return used;
    }
    for (size_t i = 0; i < bp->module_count; i++)
        if (bp->modules[i].kind == GC_BP_MODULE_CLUSTER)
            return &bp->modules[i];
    return NULL;
}

/* A module's setting after evaluation: settings[key], else a used module's output of that name,
 * else the variable. NULL when none (or null). */
static int module_setting(bp_reader *r, const gc_bp_module *m, const char *key, json_t **out)
{
    *out = NULL;
    json_t *v = json_object_get(m->settings, key);
    if (v) {
        *out = json_is_null(v) ? NULL : json_incref(v);
        return 0;
    }
    const gc_bp_module *cluster = wired_cluster(r->bp, m);
    if (cluster && !strcmp(key, "enable_pathways_for_tpus"))
        return module_setting(r, cluster, key, out);
    if (json_object_get(r->raw_vars, key)) {
        int rc = var_value(r, key, &v);
        if (rc && !r->output_rc) {
            r->output_rc = rc;
            r->output_err = *r->err;
        }
        if (rc)
            return rc;
        *out = json_is_null(v) ? NULL : v;
        if (!*out)
            json_decref(v);
    }
    return 0;
}

static char *module_string(bp_reader *r, const gc_bp_module *m, const char *key)
{
    json_t *v;
    if (module_setting(r, m, key, &v) || !json_is_string(v)) {
        json_decref(v);
        return NULL;
    }
    char *s = gc_xstrdup(json_string_value(v));
    json_decref(v);
    return s;
}

static bool module_true(bp_reader *r, const gc_bp_module *m, const char *key)
{
    json_t *v;
    bool yes = !module_setting(r, m, key, &v) && json_is_true(v);
    json_decref(v);
    return yes;
}

/* The TPU topology of a gke-node-pool: tpu_topology, placement_policy.tpu_topology, or the
 * accelerator_topology of a workload policy it uses (the toolkit reads them in that order). */
/* gke-node-pool takes the topology in placement_policy.tpu_topology; it has no tpu_topology
 * input, so a blueprint variable of that name is not wired to it (only a setting written on
 * the module itself, as older blueprints do, counts). */
static char *pool_topology(bp_reader *r, const gc_bp_module *m)
{
    char *t = NULL;
    json_t *policy;
    if (!module_setting(r, m, "placement_policy", &policy) && json_is_object(policy) &&
        json_is_string(json_object_get(policy, "tpu_topology")))
        t = gc_xstrdup(json_string_value(json_object_get(policy, "tpu_topology")));
    json_decref(policy);
    const json_t *own = json_object_get(m->settings, "tpu_topology");
    if (!t && json_is_string(own) && !gc_blueprint_unknown(own))
        t = gc_xstrdup(json_string_value(own));
    for (size_t i = 0; !t && i < m->use_count; i++) {
        const gc_bp_module *used = find_module(r->bp, m->use[i]);
        const json_t *wp = used ? json_object_get(used->settings, "workload_policy") : NULL;
        if (json_is_string(json_object_get(wp, "accelerator_topology")))
            t = gc_xstrdup(json_string_value(json_object_get(wp, "accelerator_topology")));
    }
    return t;
}

/* GPUs per node: guest_accelerator's count, else the catalog's count for the machine type. */
static long pool_gpus(bp_reader *r, const gc_bp_module *m, const char *machine)
{
    json_t *ga;
    long gpus = 0;
    if (!module_setting(r, m, "guest_accelerator", &ga) && json_is_array(ga)) {
        size_t i;
        json_t *a;
        json_array_foreach(ga, i, a)
        {
            json_t *count = json_object_get(a, "count");
            if (json_is_integer(count) && json_integer_value(count) > gpus)
                gpus = (long)json_integer_value(count);
        }
    }
    json_decref(ga);
    size_t n;
    const gc_gpu_machine *g = gc_catalog_gpu_machines(&n);
    for (size_t i = 0; !gpus && machine && i < n; i++)
        if (!strcmp(g[i].machine_type, machine))
            gpus = g[i].gpus;
    return gpus;
}

/* static_node_count as the toolkit expands it: the setting, else for a TPU pool with a known
 * topology (and not flex-start) the slice's host count. -1 when unset. */
static long pool_static_count(bp_reader *r, const gc_bp_module *m, const char *machine)
{
    json_t *v;
    long n = -1;
    if (!module_setting(r, m, "static_node_count", &v) && json_is_integer(v))
        n = (long)json_integer_value(v);
    json_decref(v);
    const gc_tpu_machine *tpu = machine ? gc_catalog_tpu_machine(machine) : NULL;
    if (n >= 0 || !tpu || module_true(r, m, "enable_flex_start"))
        return n;
    char *topology = pool_topology(r, m);
    if (!topology && tpu->only_topology)
        topology = gc_xstrdup(tpu->only_topology);
    int chips = topology ? gc_topology_chips(topology) : 0;
    free(topology);
    return chips > 0 && chips % tpu->chips_per_vm == 0 ? chips / tpu->chips_per_vm : -1;
}

/* The outputs of gke-node-pool that blueprints compute with; NULL for the others. */
static json_t *node_pool_output(bp_reader *r, const gc_bp_module *m, const char *name)
{
    char *machine = module_string(r, m, "machine_type");
    if (!machine)
        machine = gc_xstrdup(DEFAULT_POOL_MACHINE);
    const gc_tpu_machine *tpu = gc_catalog_tpu_machine(machine);
    json_t *out = NULL;
    if (!strcmp(name, "machine_type")) {
        out = json_string(machine);
    } else if (!strcmp(name, "node_count_static")) {
        /* coalesce(static_node_count, initial_node_count, 0) */
        long n = pool_static_count(r, m, machine);
        json_t *initial;
        if (n < 0 && !module_setting(r, m, "initial_node_count", &initial) &&
            json_is_integer(initial))
            n = (long)json_integer_value(initial);
        if (n < 0)
            json_decref(initial);
        out = json_integer(n < 0 ? 0 : n);
    } else if (!strcmp(name, "tpu_chips_per_node")) {
        out = tpu ? json_integer(tpu->chips_per_vm) : json_null();
    } else if (!strcmp(name, "tpu_accelerator_type")) {
        out = tpu ? json_string(tpu->family->gke_accelerator) : json_null();
    } else if (!strcmp(name, "tpu_topology")) {
        char *t = tpu ? pool_topology(r, m) : NULL;
        out = t ? json_string(t) : json_null();
        free(t);
    } else if (!strcmp(name, "static_gpu_count")) {
        long gpus = pool_gpus(r, m, machine);
        json_t *v;
        long nodes = -1;
        if (!module_setting(r, m, "static_node_count", &v) && json_is_integer(v))
            nodes = (long)json_integer_value(v);
        json_decref(v);
        out = json_integer(gpus > 0 && nodes >= 0 ? gpus * nodes : 0);
    } else if (!strcmp(name, "allocatable_gpu_per_node")) {
        long gpus = pool_gpus(r, m, machine);
        out = json_integer(gpus > 0 ? gpus : -1);
    } else if (!strcmp(name, "has_gpu")) {
        out = json_boolean(pool_gpus(r, m, machine) > 0);
    } else if (!strcmp(name, "accelerator_topology_mode")) {
        json_t *v;
        out = !module_setting(r, m, "accelerator_topology_mode", &v) && v ? v : json_null();
    }
    free(machine);
    return out;
}

/* A variable for the network modules' outputs: its value, or NULL. */
static json_t *output_var(void *ctx, const char *name)
{
    bp_reader *r = ctx;
    json_t *v = NULL;
    int rc = json_object_get(r->raw_vars, name) ? var_value(r, name, &v) : 0;
    if (rc && !r->output_rc) {
        r->output_rc = rc;
        r->output_err = *r->err;
    }
    if (rc)
        return NULL;
    return v;
}

static int evaluate_module(bp_reader *r, gc_bp_module *m);

static bool is_network_module(const gc_bp_module *m)
{
    return deploy_source_is(m->source, "modules/network/vpc") ||
           deploy_source_is(m->source, "modules/network/multivpc") ||
           deploy_source_is(m->source, "modules/network/gpu-rdma-vpc");
}

/* An output of module `id`, whose settings are evaluated first if they are not yet (modules may
 * use the outputs of modules declared after them); a module whose settings are being evaluated
 * is a cycle. Errors met while deriving the output (a variable it falls back to) are the
 * output's errors, not a silent default. */
static int module_output(bp_reader *r, const char *id, const char *name, json_t **out)
{
    *out = NULL;
    gc_bp_module *m = find_module(r->bp, id);
    char *mark = gc_xasprintf("%s.", id), *output = gc_xasprintf("%s.%s", id, name);
    /* Only node pools' and network modules' outputs are derived from their settings; any other
     * module's are unknown whatever its settings say. */
    bool derived = m && (m->kind == GC_BP_MODULE_NODE_POOL || is_network_module(m));
    int rc = !derived || m->settings                ? 0
             : json_object_get(r->evaluating, mark) ? cycle(r, mark, output)
                                                    : evaluate_module(r, m);
    if (!rc && derived && (rc = push_chain(r, output)) == 0) {
        int saved = r->output_rc;
        r->output_rc = 0;
        *out = m->kind == GC_BP_MODULE_NODE_POOL ? node_pool_output(r, m, name) : NULL;
        if (!*out)
            *out = deploy_network_output(m, name, output_var, r);
        if ((rc = r->output_rc) != 0)
            *r->err = r->output_err;
        r->output_rc = saved;
        pop_chain(r);
    }
    free(mark);
    free(output);
    if (rc) {
        json_decref(*out);
        *out = NULL;
        return rc;
    }
    if (!*out) {
        char *what = gc_xasprintf("%s.%s", id, name);
        *out = deploy_unknown(what);
        free(what);
    }
    return 0;
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
        return module_setting(r, s->m, key, out);
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
            return fail_at(r, s->raw, key, 0,
                           "module %s: setting %s%s uses %s, which is known only once Terraform "
                           "has run; gcluster deploy needs %s here (use a variable or a literal)",
                           s->m->id, s->prefix, key, unknown, expected);
        return fail_at(r, s->raw, key, 0, "module %s: setting %s%s must be %s, not %s", s->m->id,
                       s->prefix, key, expected, gc_yaml_type_name(v));
    }
    return fail_at(r, r->raw_vars, key, 0, "vars.%s (used by module %s) must be %s, not %s", key,
                   s->m->id, expected, unknown ? "a module output" : gc_yaml_type_name(v));
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
    {"name", gc_catalog_is_gke_name,
     "a GKE name: at most 40 lower-case letters, digits and hyphens, starting with a letter and "
     "ending with a letter or digit"},
    {"deployment_name", gc_catalog_is_gke_name,
     "a GKE cluster name: at most 40 lower-case letters, digits and hyphens, starting with a "
     "letter and ending with a letter or digit"},
    {"machine_type", gc_catalog_is_machine_type,
     "a machine type: lower-case letters, digits and hyphens, such as n2-standard-32"},
    {"region", gc_catalog_is_location, "a Google Cloud region, such as us-central1"},
    {"zone", gc_catalog_is_location, "a Google Cloud zone, such as us-central1-a"},
};

static bool is_printable(const char *s)
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
    if (!form && !is_printable(value))
        form = "text without control characters";
    if (!form)
        return 0;
    const char *more = strlen(value) > 64 ? "..." : "";
    if (json_object_get(s->raw, key))
        return fail_at(r, s->raw, key, 0, "module %s: setting %s%s \"%.64s%s\" is not %s", s->m->id,
                       s->prefix, key, value, more, form);
    return fail_at(r, r->raw_vars, key, 0, "vars.%s \"%.64s%s\" (used by module %s) is not %s", key,
                   value, more, s->m->id, form);
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

/* A check the toolkit makes as a validator, not as a parse error: with -l WARNING it becomes a
 * warning and deploy goes on, with -l IGNORE it is skipped. */
static int validator(bp_reader *r, int rc)
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
static int check_modules(bp_reader *r, json_t *groups)
{
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
            /* Ids and sources are printed in the plan: text only. */
            if (!rc && !is_printable(json_string_value(id)))
                rc = fail_at(r, module, "id", 0, "module id \"%.64s\" has control characters",
                             json_string_value(id));
            if (!rc && !is_printable(json_string_value(json_object_get(module, "source"))))
                rc = fail_at(r, module, "source", 0, "module %s: source has control characters",
                             json_string_value(id));
            if (!rc && json_object_get(r->modules, json_string_value(id)))
                rc = fail_at(r, module, "id", 0, "module id %s is used twice; ids must be unique",
                             json_string_value(id));
            json_t *settings = rc ? NULL : json_object_get(module, "settings");
            if (!rc && settings && !json_is_null(settings))
                rc = require_type(r, module, "settings", 0, settings, JSON_OBJECT,
                                  "module settings");
            json_t *use = rc ? NULL : json_object_get(module, "use");
            if (!rc && use)
                rc = require_type(r, module, "use", 0, use, JSON_ARRAY, "module use");
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
                    return fail_at(r, use, NULL, ui, "module %s uses %s, which no module declares",
                                   json_string_value(json_object_get(module, "id")),
                                   json_is_string(u) ? json_string_value(u) : "a non-string");
            }
        }
    }
    return 0;
}

/* Evaluates one module's settings, once. */
static int evaluate_module(bp_reader *r, gc_bp_module *m)
{
    char *mark = gc_xasprintf("%s.", m->id);
    json_object_set_new(r->evaluating, mark, json_true());
    json_t *raw = json_object_get(json_object_get(r->modules, m->id), "settings");
    json_t *settings = json_object();
    const char *key;
    json_t *value;
    int rc = 0;
    json_object_foreach(raw, key, value)
    {
        char *what = gc_xasprintf("%s.%s", m->id, key);
        json_t *v = NULL;
        rc = push_chain(r, what);
        if (!rc) {
            rc = eval_located(r, raw, key, 0, &v);
            if (!rc && (rc = deploy_charge(&r->budget, v, what, r->err)) != 0) {
                json_decref(v);
                v = NULL;
            }
            pop_chain(r);
        }
        /* Fatal: a module deploy reads, a reference the toolkit rejects too, a cycle, the
         * budget spent. */
        bool fatal = rc && (m->kind != GC_BP_MODULE_OTHER || !r->budget.left ||
                            strstr(r->err->message, "refers to"));
        if (rc && !fatal) {
            v = deploy_unknown(what);
            rc = 0;
        }
        free(what);
        if (rc)
            break;
        json_object_set_new(settings, key, v);
    }
    json_object_del(r->evaluating, mark);
    free(mark);
    if (rc) {
        json_decref(settings);
    } else {
        m->settings = settings;
        m->raw = json_is_object(raw) ? json_incref(raw) : json_object();
    }
    return rc;
}

/* Evaluates every module's settings (those a module output needed are done already). A module
 * deploy reads fails on its first bad value; one it does not read keeps a value it cannot
 * evaluate as unknown (Terraform evaluates it), except for references to variables or modules
 * that do not exist, which the toolkit rejects too. */
static int evaluate_modules(bp_reader *r)
{
    for (size_t i = 0; i < r->bp->module_count; i++) {
        gc_bp_module *m = &r->bp->modules[i];
        int rc = m->settings ? 0 : evaluate_module(r, m);
        if (rc)
            return rc;
    }
    return 0;
}

/* Modules */

static int read_cluster(bp_reader *r, const gc_bp_module *m, const json_t *module)
{
    gc_blueprint *bp = r->bp;
    if (bp->cluster)
        return fail_at(r, module, "id", 0,
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
        rc = fail_at(r, module, "id", 0,
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
        p->topology = pool_topology(r, s->m);
    if (!p->topology && m->only_topology)
        p->topology = gc_xstrdup(m->only_topology);
    if (!p->topology) {
        const json_t *raw = has_policy ? policy.raw : NULL;
        const char *var = json_is_string(json_object_get(raw, "tpu_topology"))
                              ? json_string_value(json_object_get(raw, "tpu_topology"))
                              : NULL;
        if (var && !strncmp(var, "$(vars.", 7))
            return fail_at(r, raw, "tpu_topology", 0,
                           "module %s: placement_policy.tpu_topology is %s, which has no value; "
                           "pass --vars %.*s=TOPOLOGY (e.g. 4x4) or set it in the deployment file",
                           s->m->id, var, (int)(strlen(var) - 8), var + 7);
        return fail_at(r, s->raw, NULL, 0,
                       "module %s: TPU machine type %s needs placement_policy.tpu_topology "
                       "(e.g. 4x4)",
                       s->m->id, m->machine_type);
    }
    gc_error why;
    if (gc_topology_validate(m, p->topology, &why)) {
        const json_t *raw =
            has_policy && json_object_get(policy.raw, "tpu_topology") ? policy.raw : s->raw;
        rc = validator(r,
                       fail_at(r, raw, "tpu_topology", 0, "module %s: %s", s->m->id, why.message));
        if (rc)
            return rc;
    }
    p->accelerator = gc_xstrdup(m->family->gke_accelerator);
    long hosts = gc_topology_chips(p->topology) / m->chips_per_vm;
    if (p->static_nodes >= 0 && p->static_nodes != hosts)
        return validator(
            r, fail_at(r, s->raw, "static_node_count", 0,
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
            rc = fail_at(r, raw, NULL, i,
                         "module %s: zones item %s has no value; pass --vars %.*s=ZONE (e.g. "
                         "us-east5-b) or set it in the deployment file",
                         s->m->id, t, (int)(strlen(t) - 8), t + 7);
            break;
        }
        if (!json_is_string(z) || !*json_string_value(z)) {
            rc = wrong(r, s, "zones", zones, "a list of zone names");
            break;
        }
        if (!gc_catalog_is_location(json_string_value(z))) {
            rc = fail_at(r, json_is_array(raw) ? raw : s->raw, json_is_array(raw) ? NULL : "zones",
                         json_is_array(raw) ? i : 0,
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
        rc = fail_at(r, s.raw, "autoscaling_total_min_nodes", 0,
                     "module %s: autoscaling_total_min_nodes %ld is above "
                     "autoscaling_total_max_nodes %ld",
                     m->id, pool.min_nodes, pool.max_nodes);
    if (!rc && slices == 0)
        rc = fail_at(r, s.raw, "num_slices", 0, "module %s: num_slices must be at least 1", m->id);
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
        is_identifier(text + 7, strlen(text) - 8)) {
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
            return fail_at(r, kueue->raw, "config_template_vars", 0,
                           "module %s: kueue.config_template_vars must be a mapping, not %s", id,
                           gc_yaml_type_name(vars));
        json_object_update(bp->kueue_vars, vars);
        bp->kueue_user_vars = bp->kueue_user_vars || json_object_size(vars) > 0;
    }
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
    scope kueue, jobset;
    bool has_kueue = false, has_jobset = false;
    s.fallback = false;
    if (!rc)
        rc = sub_scope(r, &s, "kueue", &kueue, &has_kueue);
    if (!rc && has_kueue) {
        kueue.prefix = "kueue.";
        rc = read_kueue(r, &kueue);
    }
    if (!rc)
        rc = sub_scope(r, &s, "jobset", &jobset, &has_jobset);
    if (!rc && has_jobset) {
        jobset.prefix = "jobset.";
        rc = claim_settings(r, "jobset", jobset.raw, m->id);
        if (!rc)
            rc = get_bool(r, &jobset, "install", &r->bp->jobset_install);
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

/* Reads the modules of one kind in order; the cluster's first, so pools know its zone. */
static int read_modules(bp_reader *r, gc_bp_module_kind only_kind)
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
        json_object_set(r->raw_vars, name, v ? v : json_string(""));
        free(name);
        gc_yaml_doc_free(&value);
    }
    return 0;
}

/* A deployment file (the toolkit's -d): YAML with `vars:` (and terraform_backend_defaults,
 * which deploy has no use for); its variables replace the blueprint's. */
static int apply_deployment_file(bp_reader *r, const char *path)
{
    int rc = gc_yaml_load_file(path, &r->deployment, r->err);
    if (rc) {
        r->err->code = GC_EXIT_USAGE;
        gc_error_prefix(r->err, "--deployment-file: ");
        return GC_EXIT_USAGE;
    }
    r->has_deployment = true;
    json_t *root = gc_yaml_root(&r->deployment);
    if (json_is_null(root) || !root)
        return 0;
    if (!json_is_object(root))
        return gc_fail(r->err, GC_EXIT_USAGE,
                       "%s: a deployment file is a YAML mapping with vars: (and optionally "
                       "terraform_backend_defaults:)",
                       path);
    /* A key the toolkit does not know (a misspelt vars:) would drop its variables in silence. */
    static const char *const keys[] = {"vars", "terraform_backend_defaults"};
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value)
    {
        size_t best = 0;
        for (size_t k = 1; k < sizeof(keys) / sizeof(*keys); k++)
            if (gc_text_edit_distance(key, keys[k]) < gc_text_edit_distance(key, keys[best]))
                best = k;
        int line, column;
        if (strcmp(key, keys[0]) && strcmp(key, keys[1]))
            return gc_yaml_mark_of(&r->deployment, root, key, 0, &line, &column)
                       ? gc_fail(r->err, GC_EXIT_USAGE,
                                 "%s:%d:%d: unknown key \"%.64s\" in a deployment file%s%s%s "
                                 "(it takes vars: and terraform_backend_defaults:)",
                                 path, line, column, key,
                                 gc_text_edit_distance(key, keys[best]) <= 2 ? "; did you mean "
                                                                             : "",
                                 gc_text_edit_distance(key, keys[best]) <= 2 ? keys[best] : "",
                                 gc_text_edit_distance(key, keys[best]) <= 2 ? ":?" : "")
                       : gc_fail(r->err, GC_EXIT_USAGE,
                                 "%s: unknown key \"%.64s\" in a deployment file (it takes "
                                 "vars: and terraform_backend_defaults:)",
                                 path, key);
    }
    json_t *vars = json_object_get(root, "vars");
    if (vars && !json_is_null(vars) && !json_is_object(vars))
        return gc_fail(r->err, GC_EXIT_USAGE, "%s: vars must be a mapping, not %s", path,
                       gc_yaml_type_name(vars));
    json_object_foreach(vars, key, value) json_object_set(r->raw_vars, key, value);
    return 0;
}

/* Whether `text` names vars.NAME (not a longer name that starts the same). */
static bool names_var(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(text, "vars."); p; p = strstr(p + 5, "vars.")) {
        char after = p[5 + n];
        if (!strncmp(p + 5, name, n) &&
            !(isalnum((unsigned char)after) || after == '_' || after == '-'))
            return true;
    }
    return false;
}

/* A failure on a null value is, in a blueprint, nearly always a variable declared without a
 * value (as Google's examples declare machine_type: and tpu_topology: for the user to fill):
 * the message then starts with the empty variables the modules use and how to give them. */
static void name_empty_vars(bp_reader *r)
{
    if (!strstr(r->err->message, "null"))
        return;
    gc_buf names, flags;
    gc_buf_init(&names);
    gc_buf_init(&flags);
    size_t count = 0;
    const char *key;
    json_t *value;
    json_object_foreach(r->raw_vars, key, value)
    {
        if (!json_is_null(value) || !is_identifier(key, strlen(key)) || count == 8)
            continue;
        bool used = false;
        for (size_t i = 0; !used && i < r->bp->module_count; i++) {
            const json_t *raw =
                json_object_get(json_object_get(r->modules, r->bp->modules[i].id), "settings");
            char *text = raw ? json_dumps(raw, JSON_COMPACT) : NULL;
            used = text && names_var(text, key);
            free(text);
        }
        if (!used)
            continue;
        gc_buf_printf(&names, "%s%s", count ? ", " : "", key);
        gc_buf_printf(&flags, "%s%s=VALUE", count ? "," : "", key);
        count++;
    }
    if (count) {
        char *cause = gc_xstrdup(r->err->message);
        gc_fail(r->err, GC_EXIT_USAGE,
                "the blueprint's variable%s %s %s no value; pass %s with --vars %s or in a "
                "deployment file (%s)",
                count > 1 ? "s" : "", names.data, count > 1 ? "have" : "has",
                count > 1 ? "them" : "it", flags.data, cause);
        free(cause);
    }
    gc_buf_free(&names);
    gc_buf_free(&flags);
}

static int read_top_level(bp_reader *r, const gc_blueprint_options *o)
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
    if (!is_printable(json_string_value(name)))
        return fail_at(r, root, "blueprint_name", 0, "blueprint_name has control characters");
    r->bp->name = gc_xstrdup(json_string_value(name));
    json_t *vars = json_object_get(root, "vars");
    if (!vars || json_is_null(vars)) {
        vars = json_object();
        json_object_set_new(root, "vars", vars);
    }
    rc = require_type(r, root, "vars", 0, vars, JSON_OBJECT, "vars");
    if (rc)
        return rc;
    r->raw_vars = vars;
    if (o->deployment_file)
        rc = apply_deployment_file(r, o->deployment_file);
    if (!rc)
        rc = apply_overrides(r, o->vars, o->var_count);
    if (rc)
        return rc;
    json_t *groups = json_object_get(root, "deployment_groups");
    rc = require_type(r, root, "deployment_groups", 0, groups, JSON_ARRAY, "deployment_groups");
    if (!rc)
        rc = check_modules(r, groups);
    if (!rc)
        rc = evaluate_modules(r);
    if (!rc)
        rc = read_modules(r, GC_BP_MODULE_CLUSTER);
    if (!rc)
        rc = read_modules(r, GC_BP_MODULE_NODE_POOL);
    if (!rc)
        rc = read_modules(r, GC_BP_MODULE_KUBECTL_APPLY);
    if (!rc)
        rc = read_modules(r, GC_BP_MODULE_OTHER);
    if (rc)
        name_empty_vars(r);
    return rc;
}

/* Every variable evaluated (the toolkit evaluates all of them); without a gke-cluster module the
 * target comes from the usual variables. */
static int fill_from_vars(bp_reader *r)
{
    gc_blueprint *bp = r->bp;
    const char *key;
    json_t *value;
    json_object_foreach(r->raw_vars, key, value)
    {
        json_t *v;
        int rc = var_value(r, key, &v);
        if (rc)
            return rc;
        json_decref(v);
    }
    static const char *const fallbacks[] = {"deployment_name", "project_id", "region", "zone"};
    char **fields[] = {&bp->cluster, &bp->project, &bp->region, &bp->zone};
    for (size_t i = 0; i < 4; i++) {
        json_t *v = json_object_get(r->vars, fallbacks[i]);
        if (!*fields[i] && json_is_string(v) && *json_string_value(v))
            *fields[i] = gc_xstrdup(json_string_value(v));
    }
    bp->vars = json_incref(r->vars);
    return 0;
}

/* The toolkit's test_zone_in_region validator: a zone of another region is a mistake. */
static int check_zone_in_region(bp_reader *r)
{
    gc_blueprint *bp = r->bp;
    if (!bp->zone || !bp->region)
        return 0;
    size_t n = strlen(bp->region);
    if (!strncmp(bp->zone, bp->region, n) && bp->zone[n] == '-')
        return 0;
    if (!strcmp(bp->zone, bp->region)) /* a zonal cluster: region names the zone */
        return 0;
    return validator(r, gc_fail(r->err, GC_EXIT_USAGE,
                                "%s: zone %s is not in region %s; fix vars.zone or vars.region "
                                "(validator test_zone_in_region; -l WARNING lets it pass)",
                                bp->path, bp->zone, bp->region));
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

int gc_blueprint_open(const char *path, const gc_blueprint_options *o, gc_blueprint *bp,
                      gc_error *err)
{
    memset(bp, 0, sizeof(*bp));
    bp->path = gc_xstrdup(path);
    bp->dir = directory_of(path);
    bp->kueue_vars = json_object();
    bp->validation = o->validation;
    bp->deployment_file = o->deployment_file ? gc_xstrdup(o->deployment_file) : NULL;
    bp_reader r = {.bp = bp,
                   .err = err,
                   .vars = json_object(),
                   .evaluating = json_object(),
                   .chain = json_array(),
                   .budget = {DEPLOY_BUDGET},
                   .modules = json_object()};
    int rc = gc_yaml_load_file(path, &r.doc, err);
    if (rc) {
        err->code = rc = GC_EXIT_USAGE;
    } else {
        rc = read_top_level(&r, o);
        if (!rc)
            rc = fill_from_vars(&r);
        if (!rc)
            rc = check_zone_in_region(&r);
    }
    for (size_t i = 0; i < r.owner_count; i++)
        free(r.owners[i].setting);
    free(r.owners);
    json_decref(r.vars);
    json_decref(r.evaluating);
    json_decref(r.chain);
    json_decref(r.modules);
    gc_yaml_doc_free(&r.doc);
    if (r.has_deployment)
        gc_yaml_doc_free(&r.deployment);
    if (rc)
        gc_blueprint_free(bp);
    return rc;
}

int gc_blueprint_load(const char *path, const char *const *overrides, size_t count,
                      gc_blueprint *bp, gc_error *err)
{
    gc_blueprint_options o = {.vars = overrides, .var_count = count};
    return gc_blueprint_open(path, &o, bp, err);
}

int gc_validation_level_parse(const char *text, gc_validation_level *out, gc_error *err)
{
    static const char *const names[] = {"ERROR", "WARNING", "IGNORE"};
    for (size_t i = 0; i < 3; i++) {
        if (text && !strcmp(text, names[i])) {
            *out = (gc_validation_level)i;
            return 0;
        }
    }
    return gc_fail(err, GC_EXIT_USAGE,
                   "--validation-level %s: expected ERROR, WARNING or IGNORE (as Google's "
                   "gcluster takes it)",
                   text ? text : "");
}

const gc_bp_module *gc_blueprint_module(const gc_blueprint *bp, const char *id)
{
    return find_module(bp, id);
}

const json_t *gc_blueprint_setting(const gc_blueprint *bp, const gc_bp_module *m, const char *key)
{
    const json_t *v = json_object_get(m->settings, key);
    if (!v) {
        const gc_bp_module *cluster = wired_cluster(bp, m);
        if (cluster && !strcmp(key, "enable_pathways_for_tpus"))
            return gc_blueprint_setting(bp, cluster, key);
        v = json_object_get(bp->vars, key);
    }
    return json_is_null(v) ? NULL : v;
}

const char *gc_blueprint_unknown(const json_t *value)
{
    return deploy_unknown_name(value);
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
    for (size_t i = 0; i < bp->module_count; i++) {
        gc_bp_module *m = &bp->modules[i];
        free(m->id);
        free(m->source);
        free(m->group);
        for (size_t j = 0; j < m->use_count; j++)
            free(m->use[j]);
        free(m->use);
        json_decref(m->settings);
        json_decref(m->raw);
    }
    free(bp->modules);
    free(bp->pools);
    free(bp->unhandled);
    free(bp->path);
    free(bp->dir);
    free(bp->deployment_file);
    free(bp->name);
    free(bp->project);
    free(bp->cluster);
    free(bp->region);
    free(bp->zone);
    free(bp->kueue_version);
    free(bp->kueue_config_path);
    free(bp->kueue_config_var);
    json_decref(bp->vars);
    json_decref(bp->kueue_vars);
    gc_strings_free(&bp->warnings);
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
