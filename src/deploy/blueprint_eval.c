/*
 * Blueprint evaluation: variables (each once, a cycle an error), module settings (lazily, so a
 * module may use the outputs of one declared after it) and the module outputs deploy models
 * (gke-node-pool's from its machine type and topology, the network modules' in
 * network_outputs.c); everything it makes is charged to the reader's budget. See blueprint.c.
 */
#include "deploy/internal.h"
#include "gcluster/deploy.h"

#include "blueprint_internal.h"
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

int deploy_bp_fail_at(const bp_reader *r, const json_t *container, const char *key, size_t index,
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

bool deploy_bp_is_identifier(const char *s, size_t len)
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
int deploy_bp_var_value(bp_reader *r, const char *name, json_t **out)
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
                          : deploy_bp_fail_at(r, r->raw_vars, name, 0, "vars.%s: %s", name,
                                              r->err->message);
    json_object_set(r->vars, name, *out);
    return 0;
}

static int env_ref(void *ctx, const char *root, const char *attr, json_t **out, gc_error *err)
{
    (void)err;
    bp_reader *r = ctx;
    if (!strcmp(root, "vars"))
        return deploy_bp_var_value(r, attr, out);
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
int deploy_bp_eval_located(bp_reader *r, const json_t *container, const char *key, size_t index,
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
                if ((rc = deploy_bp_eval_located(r, raw, NULL, i, &v)) != 0)
                    break;
                json_array_append_new(copy, v);
            }
        } else {
            json_object_foreach((json_t *)raw, k, item)
            {
                json_t *v;
                if ((rc = deploy_bp_eval_located(r, raw, k, 0, &v)) != 0)
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
        return deploy_bp_fail_at(r, container, key, index, "%s", r->err->message);
    return rc;
}

/* Module settings and outputs */

gc_bp_module *deploy_bp_find_module(const gc_blueprint *bp, const char *id)
{
    for (size_t i = 0; i < bp->module_count; i++)
        if (!strcmp(bp->modules[i].id, id))
            return &bp->modules[i];
    return NULL;
}

/* The gke-cluster whose enable_pathways_for_tpus output a kubectl-apply module gets: the one
 * it uses; without one in `use` (the toolkit would refuse the missing cluster_id), the
 * blueprint's cluster, which is the one deploy acts on. */
const gc_bp_module *deploy_bp_wired_cluster(const gc_blueprint *bp, const gc_bp_module *m)
{
    if (m->kind != GC_BP_MODULE_KUBECTL_APPLY)
        return NULL;
    for (size_t i = 0; i < m->use_count; i++) {
        const gc_bp_module *used = deploy_bp_find_module(bp, m->use[i]);
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
int deploy_bp_module_setting(bp_reader *r, const gc_bp_module *m, const char *key, json_t **out)
{
    *out = NULL;
    json_t *v = json_object_get(m->settings, key);
    if (v) {
        *out = json_is_null(v) ? NULL : json_incref(v);
        return 0;
    }
    const gc_bp_module *cluster = deploy_bp_wired_cluster(r->bp, m);
    if (cluster && !strcmp(key, "enable_pathways_for_tpus"))
        return deploy_bp_module_setting(r, cluster, key, out);
    if (json_object_get(r->raw_vars, key)) {
        int rc = deploy_bp_var_value(r, key, &v);
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
    if (deploy_bp_module_setting(r, m, key, &v) || !json_is_string(v)) {
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
    bool yes = !deploy_bp_module_setting(r, m, key, &v) && json_is_true(v);
    json_decref(v);
    return yes;
}

/* The TPU topology of a gke-node-pool: tpu_topology, placement_policy.tpu_topology, or the
 * accelerator_topology of a workload policy it uses (the toolkit reads them in that order). */
/* gke-node-pool takes the topology in placement_policy.tpu_topology; it has no tpu_topology
 * input, so a blueprint variable of that name is not wired to it (only a setting written on
 * the module itself, as older blueprints do, counts). */
char *deploy_bp_pool_topology(bp_reader *r, const gc_bp_module *m)
{
    char *t = NULL;
    json_t *policy;
    if (!deploy_bp_module_setting(r, m, "placement_policy", &policy) && json_is_object(policy) &&
        json_is_string(json_object_get(policy, "tpu_topology")))
        t = gc_xstrdup(json_string_value(json_object_get(policy, "tpu_topology")));
    json_decref(policy);
    const json_t *own = json_object_get(m->settings, "tpu_topology");
    if (!t && json_is_string(own) && !deploy_blueprint_unknown(own))
        t = gc_xstrdup(json_string_value(own));
    for (size_t i = 0; !t && i < m->use_count; i++) {
        const gc_bp_module *used = deploy_bp_find_module(r->bp, m->use[i]);
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
    if (!deploy_bp_module_setting(r, m, "guest_accelerator", &ga) && json_is_array(ga)) {
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
    if (!deploy_bp_module_setting(r, m, "static_node_count", &v) && json_is_integer(v))
        n = (long)json_integer_value(v);
    json_decref(v);
    const gc_tpu_machine *tpu = machine ? gc_catalog_tpu_machine(machine) : NULL;
    if (n >= 0 || !tpu || module_true(r, m, "enable_flex_start"))
        return n;
    char *topology = deploy_bp_pool_topology(r, m);
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
        if (n < 0 && !deploy_bp_module_setting(r, m, "initial_node_count", &initial) &&
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
        char *t = tpu ? deploy_bp_pool_topology(r, m) : NULL;
        out = t ? json_string(t) : json_null();
        free(t);
    } else if (!strcmp(name, "static_gpu_count")) {
        long gpus = pool_gpus(r, m, machine);
        json_t *v;
        long nodes = -1;
        if (!deploy_bp_module_setting(r, m, "static_node_count", &v) && json_is_integer(v))
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
        out =
            !deploy_bp_module_setting(r, m, "accelerator_topology_mode", &v) && v ? v : json_null();
    }
    free(machine);
    return out;
}

/* A variable for the network modules' outputs: its value, or NULL. */
static json_t *output_var(void *ctx, const char *name)
{
    bp_reader *r = ctx;
    json_t *v = NULL;
    int rc = json_object_get(r->raw_vars, name) ? deploy_bp_var_value(r, name, &v) : 0;
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
    gc_bp_module *m = deploy_bp_find_module(r->bp, id);
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
            rc = deploy_bp_eval_located(r, raw, key, 0, &v);
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
int deploy_bp_evaluate_modules(bp_reader *r)
{
    for (size_t i = 0; i < r->bp->module_count; i++) {
        gc_bp_module *m = &r->bp->modules[i];
        int rc = m->settings ? 0 : evaluate_module(r, m);
        if (rc)
            return rc;
    }
    return 0;
}

const char *deploy_blueprint_unknown(const json_t *value)
{
    return deploy_unknown_name(value);
}
