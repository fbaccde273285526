/*
 * A user's Kueue template (kueue.config_path): rendered as the kubectl-apply module renders it,
 * split into documents, ClusterQueues of one name merged, quotas in canonical form, and the
 * Pathways head pool's flavor checked. See kueue.c.
 */
#include "deploy/internal.h"
#include "gcluster/deploy.h"

#include "expr.h"
#include "gcluster/emit.h"
#include "gcluster/kube.h"
#include "gcluster/sys.h"
#include "kueue_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEMPLATE_FILE                                                                          \
    (16u << 20) /* templates are kilobytes: a larger file is the wrong one                         \
                 */

int deploy_kueue_cannot_build(const gc_blueprint *bp, const char *what, gc_error *err)
{
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s: cannot build the Kueue %s: a name or value in it is not valid UTF-8",
                   bp->path, what);
}

json_t *deploy_kueue_quantity(const json_t *v)
{
    char text[64] = "";
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v) && isfinite(json_real_value(v)) && json_real_value(v) >= 0) {
        /* A YAML number such as 1e3 or 480.5: Kubernetes reads a JSON number as a quantity,
         * so its shortest exact spelling is one. */
        double d = json_real_value(v);
        if (d == floor(d) && d < 1e15)
            snprintf(text, sizeof(text), "%.0f", d);
        else
            for (int digits = 1; digits <= 17; digits++) {
                snprintf(text, sizeof(text), "%.*g", digits, d);
                if (strtod(text, NULL) == d)
                    break;
            }
    } else if (json_is_string(v))
        snprintf(text, sizeof(text), "%s", json_string_value(v));
    char *canonical = text[0] ? gc_quantity_canonical(text) : NULL;
    json_t *out = canonical ? json_string(canonical) : NULL;
    free(canonical);
    return out;
}

/* A user template */

/* Template variables are bare names; a name the variables lack is an error that says where to
 * set it. */
static int template_ref(void *ctx, const char *root, const char *attr, json_t **out, gc_error *err)
{
    const json_t *v = json_object_get(ctx, root);
    if (!v || attr)
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s%s%s is not a template variable; set it in "
                       "kueue.config_template_vars",
                       root, attr ? "." : "", attr ? attr : "");
    *out = json_incref((json_t *)v);
    return 0;
}

int deploy_kueue_template_render(const char *text, size_t len, const json_t *vars,
                                 const char *label, gc_buf *out, gc_error *err)
{
    deploy_env env = {.ref = template_ref, .ctx = (void *)vars, .bare_names = true};
    return deploy_template_render(text, len, &env, label, out, err);
}

static int kind_rank(const char *kind)
{
    static const char *const order[] = {
        "Topology",       "ResourceFlavor",       "ProvisioningRequestConfig",
        "AdmissionCheck", "ClusterQueue",         "LocalQueue",
        "PriorityClass",  "WorkloadPriorityClass"};
    for (size_t i = 0; i < sizeof(order) / sizeof(*order); i++)
        if (!strcmp(kind, order[i]))
            return (int)i;
    return (int)(sizeof(order) / sizeof(*order));
}
#define LAST_RANK 8

/* Kinds without a namespace; every other kind a template holds is namespaced. */
static bool cluster_scoped(const char *kind)
{
    static const char *const kinds[] = {"ResourceFlavor",
                                        "ClusterQueue",
                                        "Topology",
                                        "AdmissionCheck",
                                        "ProvisioningRequestConfig",
                                        "WorkloadPriorityClass",
                                        "Cohort",
                                        "PriorityClass",
                                        "Namespace",
                                        "ClusterRole",
                                        "ClusterRoleBinding",
                                        "StorageClass",
                                        "PersistentVolume",
                                        "CustomResourceDefinition",
                                        "MutatingWebhookConfiguration",
                                        "ValidatingWebhookConfiguration",
                                        "RuntimeClass",
                                        "IngressClass",
                                        "DeviceClass",
                                        "CSIDriver",
                                        "APIService"};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(*kinds); i++)
        if (!strcmp(kind, kinds[i]))
            return true;
    return false;
}

static const char *object_kind(const json_t *obj)
{
    return json_string_value(json_object_get(obj, "kind"));
}

static const char *object_name(const json_t *obj)
{
    return json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
}

/* Appends a copy of obj; two ClusterQueues of the same name become one, as the module merges
 * them: metadata and spec merged (the later wins), resourceGroups of both concatenated. Any
 * other object is kept as it is, also one that shares a ClusterQueue's name. -1 when jansson
 * cannot (out of memory). */
static int add_object(json_t *objects, const json_t *obj)
{
    bool queue = !strcmp(object_kind(obj), "ClusterQueue");
    size_t i;
    json_t *other;
    json_array_foreach(objects, i, other)
    {
        if (!queue || strcmp(object_kind(other), "ClusterQueue") ||
            strcmp(object_name(other), object_name(obj)))
            continue;
        json_t *meta = json_object_get(other, "metadata");
        json_t *spec = json_object_get(other, "spec");
        json_t *more_spec = json_object_get(obj, "spec");
        json_t *groups = json_object_get(spec, "resourceGroups");
        json_t *all = json_is_array(groups) ? json_copy(groups) : json_array();
        json_t *more = json_object_get(more_spec, "resourceGroups");
        if (json_is_array(more))
            json_array_extend(all, more);
        json_object_update(meta, json_object_get(obj, "metadata"));
        if (!json_is_object(spec)) {
            spec = json_object();
            json_object_set_new(other, "spec", spec);
        }
        if (json_is_object(more_spec))
            json_object_update(spec, more_spec);
        return json_object_set_new(spec, "resourceGroups", all);
    }
    return json_array_append_new(objects, json_deep_copy(obj));
}

static int check_document(const gc_yaml_doc *doc, size_t index, const json_t *obj, gc_error *err)
{
    const json_t *meta = json_object_get(obj, "metadata");
    if (json_is_object(obj) && json_is_string(json_object_get(obj, "apiVersion")) &&
        json_is_string(json_object_get(obj, "kind")) &&
        json_is_string(json_object_get(meta, "name")))
        return 0;
    int line, column;
    if (gc_yaml_mark_of(doc, NULL, NULL, index, &line, &column))
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s:%d:%d: this document is not a Kubernetes object (it needs apiVersion, "
                       "kind and metadata.name)",
                       doc->name, line, column);
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s: document %zu is not a Kubernetes object (it needs apiVersion, kind and "
                   "metadata.name)",
                   doc->name, index + 1);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

int deploy_kueue_user_objects(const gc_blueprint *bp, const json_t *vars, json_t *objects,
                              gc_error *err)
{
    gc_buf text, rendered;
    gc_buf_init(&text);
    gc_buf_init(&rendered);
    int rc = gc_file_read(bp->kueue_config_path, MAX_TEMPLATE_FILE, &text, err);
    if (rc) {
        gc_error_prefix(err, "%s: kueue.config_path: ", bp->path);
        gc_buf_free(&text);
        gc_buf_free(&rendered);
        return rc;
    }
    /* The module renders the file as a template when its name ends in .tftpl or the blueprint
     * sets config_template_vars, and reads it as it is otherwise. */
    if (ends_with(bp->kueue_config_path, ".tftpl") || bp->kueue_user_vars)
        rc = deploy_kueue_template_render(text.data, text.len, vars, bp->kueue_config_path,
                                          &rendered, err);
    else
        gc_buf_append(&rendered, text.data, text.len);
    gc_yaml_doc doc = {0};
    if (!rc)
        rc = gc_yaml_load(rendered.data, rendered.len, bp->kueue_config_path, &doc, err);
    if (rc)
        err->code = rc = GC_EXIT_USAGE;
    json_t *merged = json_array(), *obj;
    size_t i;
    json_array_foreach(rc ? NULL : doc.documents, i, obj)
    {
        if (json_is_null(obj))
            continue;
        if ((rc = check_document(&doc, i, obj, err)) != 0)
            break;
        if (add_object(merged, obj) != 0) {
            rc = deploy_kueue_cannot_build(bp, "configuration of kueue.config_path", err);
            break;
        }
    }
    /* In apply order (a flavor before the queue naming it), each kind in template order. */
    for (int rank = 0; !rc && rank <= LAST_RANK; rank++) {
        json_array_foreach(merged, i, obj)
        {
            if (kind_rank(object_kind(obj)) != rank)
                continue;
            json_t *meta = json_object_get(obj, "metadata");
            if (!cluster_scoped(object_kind(obj)) && !json_object_get(meta, "namespace"))
                json_object_set_new(meta, "namespace", json_string(CONFIG_NAMESPACE));
            if (json_array_append(objects, obj) != 0) {
                rc = deploy_kueue_cannot_build(bp, "configuration of kueue.config_path", err);
                break;
            }
        }
    }
    json_decref(merged);
    gc_yaml_doc_free(&doc);
    gc_buf_free(&text);
    gc_buf_free(&rendered);
    return rc;
}

/* Quotas of a user template's ClusterQueues in canonical form too (a value that is not a
 * quantity is left for the API server to reject with its own message). False when jansson
 * cannot (out of memory). */
bool deploy_kueue_canonical_quotas(json_t *objects)
{
    static const char *const limits[] = {"nominalQuota", "borrowingLimit", "lendingLimit"};
    size_t i, g, f, r;
    json_t *obj, *group, *flavor, *resource;
    json_array_foreach(objects, i, obj)
    {
        if (strcmp(json_string_value(json_object_get(obj, "kind")), "ClusterQueue"))
            continue;
        json_t *groups = json_object_get(json_object_get(obj, "spec"), "resourceGroups");
        json_array_foreach(groups, g, group)
        {
            json_array_foreach(json_object_get(group, "flavors"), f, flavor)
            {
                json_array_foreach(json_object_get(flavor, "resources"), r, resource)
                {
                    for (size_t l = 0; l < sizeof(limits) / sizeof(*limits); l++) {
                        json_t *v = json_object_get(resource, limits[l]);
                        json_t *canonical = deploy_kueue_quantity(v);
                        if (canonical && json_object_set_new(resource, limits[l], canonical))
                            return false;
                    }
                }
            }
        }
    }
    return true;
}

/* The head-pool check for user templates */

static bool flavor_selects_pool(const json_t *obj, const char *pool)
{
    const json_t *labels = json_object_get(json_object_get(obj, "spec"), "nodeLabels");
    return !strcmp(json_string_value(json_object_get(obj, "kind")), "ResourceFlavor") &&
           json_is_string(json_object_get(labels, LABEL_NODEPOOL)) &&
           !strcmp(json_string_value(json_object_get(labels, LABEL_NODEPOOL)), pool);
}

static bool group_covers(const json_t *group, const char *resource)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(group, "coveredResources"), i, r)
    {
        if (json_is_string(r) && !strcmp(json_string_value(r), resource))
            return true;
    }
    return false;
}

/* Whether some ClusterQueue group covering cpu and memory lists flavor `name`. */
static bool flavor_has_cpu_quota(const json_t *objects, const char *name)
{
    size_t i, g, f;
    json_t *obj, *group, *flavor;
    json_array_foreach(objects, i, obj)
    {
        if (strcmp(json_string_value(json_object_get(obj, "kind")), "ClusterQueue"))
            continue;
        json_array_foreach(json_object_get(json_object_get(obj, "spec"), "resourceGroups"), g,
                           group)
        {
            if (!group_covers(group, "cpu") || !group_covers(group, "memory"))
                continue;
            json_array_foreach(json_object_get(group, "flavors"), f, flavor)
            {
                const char *n = json_string_value(json_object_get(flavor, "name"));
                if (n && !strcmp(n, name))
                    return true;
            }
        }
    }
    return false;
}

void deploy_kueue_warn_head_pool(const gc_blueprint *bp, const char *head_pool,
                                 const json_t *objects, gc_buf *warnings)
{
    size_t i;
    json_t *obj;
    json_array_foreach(objects, i, obj)
    {
        if (!flavor_selects_pool(obj, head_pool))
            continue;
        const char *name =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
        if (flavor_has_cpu_quota(objects, name))
            return;
        gc_buf_printf(warnings,
                      "%s: ResourceFlavor %s selects the Pathways head pool %s, but no "
                      "ClusterQueue resource group covering cpu and memory lists it, so Pathways "
                      "head pods will stay queued; give it cpu and memory quota\n",
                      bp->kueue_config_path, name, head_pool);
        return;
    }
    char drop[256];
    if (bp->kueue_config_var)
        snprintf(drop, sizeof(drop), "pass --vars %s=null", bp->kueue_config_var);
    else
        snprintf(drop, sizeof(drop), "drop kueue.config_path");
    gc_buf_printf(warnings,
                  "%s: no ResourceFlavor selects the Pathways head pool (%s: %s), so Kueue cannot "
                  "admit Pathways head pods there; add a flavor with that node label and cpu and "
                  "memory quota in the ClusterQueue (as the built-in pathways-flavor does), or "
                  "%s to use the module's built-in Pathways configuration\n",
                  bp->kueue_config_path, LABEL_NODEPOOL, head_pool, drop);
}
