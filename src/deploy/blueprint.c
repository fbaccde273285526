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

/* Top level */

static int apply_overrides(bp_reader *r, const char *const *overrides, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const char *eq = strchr(overrides[i], '=');
        if (!eq || eq == overrides[i] ||
            !deploy_bp_is_identifier(overrides[i], (size_t)(eq - overrides[i])))
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
        if (!json_is_null(value) || !deploy_bp_is_identifier(key, strlen(key)) || count == 8)
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
        return deploy_bp_fail_at(r, NULL, NULL, 0,
                                 "a blueprint is a YAML mapping with blueprint_name, vars and "
                                 "deployment_groups");
    json_t *name = json_object_get(root, "blueprint_name");
    int rc =
        deploy_bp_require_type(r, root, "blueprint_name", 0, name, JSON_STRING, "blueprint_name");
    if (rc)
        return rc;
    if (!deploy_bp_is_printable(json_string_value(name)))
        return deploy_bp_fail_at(r, root, "blueprint_name", 0,
                                 "blueprint_name has control characters");
    r->bp->name = gc_xstrdup(json_string_value(name));
    json_t *vars = json_object_get(root, "vars");
    if (!vars || json_is_null(vars)) {
        vars = json_object();
        json_object_set_new(root, "vars", vars);
    }
    rc = deploy_bp_require_type(r, root, "vars", 0, vars, JSON_OBJECT, "vars");
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
    rc = deploy_bp_require_type(r, root, "deployment_groups", 0, groups, JSON_ARRAY,
                                "deployment_groups");
    if (!rc)
        rc = deploy_bp_check_modules(r, groups);
    if (!rc)
        rc = deploy_bp_evaluate_modules(r);
    if (!rc)
        rc = deploy_bp_read_modules(r, GC_BP_MODULE_CLUSTER);
    if (!rc)
        rc = deploy_bp_read_modules(r, GC_BP_MODULE_NODE_POOL);
    if (!rc)
        rc = deploy_bp_read_modules(r, GC_BP_MODULE_KUBECTL_APPLY);
    if (!rc)
        rc = deploy_bp_read_modules(r, GC_BP_MODULE_OTHER);
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
        int rc = deploy_bp_var_value(r, key, &v);
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

/* The toolkit's test_zone_in_region deploy_bp_validator: a zone of another region is a mistake. */
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
    return deploy_bp_validator(
        r, gc_fail(r->err, GC_EXIT_USAGE,
                   "%s: zone %s is not in region %s; fix vars.zone or vars.region "
                   "(deploy_bp_validator test_zone_in_region; -l WARNING lets it pass)",
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

int deploy_blueprint_load(const char *path, const char *const *overrides, size_t count,
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

const gc_bp_module *deploy_blueprint_module(const gc_blueprint *bp, const char *id)
{
    return deploy_bp_find_module(bp, id);
}

const json_t *deploy_blueprint_setting(const gc_blueprint *bp, const gc_bp_module *m,
                                       const char *key)
{
    const json_t *v = json_object_get(m->settings, key);
    if (!v) {
        const gc_bp_module *cluster = deploy_bp_wired_cluster(bp, m);
        if (cluster && !strcmp(key, "enable_pathways_for_tpus"))
            return deploy_blueprint_setting(bp, cluster, key);
        v = json_object_get(bp->vars, key);
    }
    return json_is_null(v) ? NULL : v;
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

gc_pool_spec *deploy_blueprint_all_pools(const gc_blueprint *bp, const char *head_pool,
                                         size_t *count)
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
