/*
 * The Kueue configuration of a blueprint, built as objects, equal to what Cluster Toolkit's
 * kubectl-apply module applies for the same blueprint:
 *
 * - kueue.config_path set: that file, rendered as a Terraform template when its name ends in
 *   .tftpl or config_template_vars is set (else taken as it is), split into YAML documents;
 *   ClusterQueues of the same name become one (metadata and spec merged, resourceGroups
 *   concatenated) and every other object is kept as written. The module applies them through a
 *   Helm release in kueue-system, so a namespaced object without a namespace lands there.
 * - otherwise, with enable_pathways_for_tpus and/or enable_dynamic_slicing_for_tpus, the
 *   module's built-in configuration for that pair (kueue-configuration-pathways,
 *   -dynamic-slicing, -dynamic-slicing-pathways): built here from the same facts.
 * - otherwise nothing.
 *
 * Why one resource group in the Pathways variants: a Pathways worker pod asks for
 * google.com/tpu, cpu and memory at once, and Kueue assigns all of a pod's resources from one
 * flavor only when they sit in the same group. The head pod selects the head pool by its
 * cloud.google.com/gke-nodepool label, which the TPU flavor lacks, so Kueue passes over the TPU
 * flavor for it and charges pathways-flavor.
 *
 * Our additions, which change nothing a toolkit template renders: the template variables also
 * hold pathways_head_np (--pathways-head-np, also the built-in pathways-flavor's pool),
 * namespace ("default") and accelerator_type derived from the TPU pools when unset, and a
 * Pathways blueprint whose own template leaves the head pool without a flavor gets a warning.
 */
#include "deploy/internal.h"
#include "gcluster/deploy.h"

#include "expr.h"
#include "gcluster/emit.h"
#include "gcluster/kube.h"
#include "gcluster/kueue.h"
#include "gcluster/sys.h"
#include "kueue_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The dynamic-slicing objects, as the module names them. */
#define SLICING_TOPOLOGY   "dynamic-slicing-topology"
#define SLICING_CHECK      "dynamic-slicing-ac"
#define SLICING_CONTROLLER "accelerator.gke.io/slice"

/* The module's template variables before config_template_vars (kubectl-apply's defaults). */
static const struct {
    const char *name;
    const char *text; /* a string default */
    long number;      /* a number default, when text is NULL */
} builtin_defaults[] = {
    {"pathways_cpu_quota", NULL, 480},
    {"pathways_memory_quota", "2000G", 0},
    {"tpu_flavor_cpu_quota", "999999", 0},
    {"tpu_flavor_memory_quota", "999999T", 0},
    {"tpu_quota", "999999", 0},
    {"tpu_topology", "", 0},
    {"namespace", "default", 0},
};

static const struct {
    const char *name;
    int value;
    const char *description;
} priority_classes[] = {
    {"very-low", 100, "Very Low"},    {"low", 250, "Low"},
    {"medium", 500, "Medium"},        {"high", 750, "High"},
    {"very-high", 1000, "Very High"},
};

/* Variables */

/* The accelerator of the blueprint's TPU pools, when they agree on one. */
static int derive_accelerator(const gc_blueprint *bp, const char **out, gc_error *err)
{
    *out = NULL;
    for (size_t i = 0; i < bp->pool_count; i++) {
        const char *a = bp->pools[i].accelerator;
        if (!a)
            continue;
        if (*out && strcmp(*out, a))
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s: the TPU node pools have different accelerators (%s, %s); set "
                           "kueue.config_template_vars.accelerator_type to the one tpu-flavor "
                           "should select",
                           bp->path, *out, a);
        *out = a;
    }
    return 0;
}

/* Defaults (and pathways_head_np, so a template can follow --pathways-head-np), then the
 * blueprint's config_template_vars, then an accelerator_type derived from the TPU pools. */
static int template_vars(const gc_blueprint *bp, const char *head_pool, json_t **out, gc_error *err)
{
    *out = NULL;
    const char *accelerator = NULL;
    if (!json_object_get(bp->kueue_vars, "accelerator_type")) {
        int rc = derive_accelerator(bp, &accelerator, err);
        if (rc)
            return rc;
    }
    json_t *vars =
        json_pack("{s:s, s:s*}", "pathways_head_np", head_pool, "accelerator_type", accelerator);
    for (size_t i = 0; vars && i < sizeof(builtin_defaults) / sizeof(*builtin_defaults); i++) {
        json_t *v = builtin_defaults[i].text ? json_string(builtin_defaults[i].text)
                                             : json_integer(builtin_defaults[i].number);
        if (json_object_set_new(vars, builtin_defaults[i].name, v) != 0) {
            json_decref(vars);
            vars = NULL;
        }
    }
    if (vars && json_object_update(vars, bp->kueue_vars) != 0) {
        json_decref(vars);
        vars = NULL;
    }
    if (!vars)
        return deploy_kueue_cannot_build(bp, "template variables", err);
    *out = vars;
    return 0;
}

/* A quota variable as a nominalQuota value. */
static int quota(const json_t *vars, const char *name, json_t **out, gc_error *err)
{
    const json_t *v = json_object_get(vars, name);
    *out = deploy_kueue_quantity(v);
    if (*out)
        return 0;
    const char *unknown = deploy_blueprint_unknown(v);
    if (!v || json_is_null(v))
        return gc_fail(err, GC_EXIT_USAGE,
                       "kueue.config_template_vars.%s is null (it has no value): give it a "
                       "quantity (e.g. 32, 480, 2000G, 512Gi), or give the variable it comes "
                       "from one with --vars NAME=VALUE",
                       name);
    if (unknown)
        return gc_fail(err, GC_EXIT_USAGE,
                       "kueue.config_template_vars.%s is known only once Terraform runs (it comes "
                       "from %.80s), and deploy needs its value: write a quantity (e.g. 32, 480, "
                       "2000G, 512Gi) or an expression over vars and node pool outputs",
                       name, unknown);
    char shown[64];
    if (json_is_string(v))
        snprintf(shown, sizeof(shown), "\"%.40s\"", json_string_value(v));
    else if (json_is_number(v))
        snprintf(shown, sizeof(shown), "%g", json_number_value(v));
    else
        snprintf(shown, sizeof(shown), "%s",
                 json_is_boolean(v) ? "true or false"
                 : json_is_array(v) ? "a list"
                                    : "a mapping");
    return gc_fail(err, GC_EXIT_USAGE,
                   "kueue.config_template_vars.%s is %s, not a Kubernetes quantity (e.g. 32, "
                   "480, 2000G, 512Gi)",
                   name, shown);
}

static int string_var(const json_t *vars, const char *name, const char **out, gc_error *err)
{
    const json_t *v = json_object_get(vars, name);
    if (!json_is_string(v) || !*json_string_value(v))
        return gc_fail(err, GC_EXIT_USAGE,
                       "kueue.config_template_vars.%s must be a non-empty string", name);
    *out = json_string_value(v);
    return 0;
}

/* Kubernetes names and labels: a value the API server would refuse (or one with bytes a
 * terminal acts on) is found here, naming the variable it came from, not by the server later. */

#define LABEL_VALUE_FORM                                                                           \
    "at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
#define DNS_LABEL_FORM                                                                             \
    "at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit"

/* A template variable that becomes a label value (`dns_label` false) or a namespace name. */
static int name_var(const gc_blueprint *bp, const json_t *vars, const char *name, bool dns_label,
                    const char *use, const char **out, gc_error *err)
{
    int rc = string_var(vars, name, out, err);
    if (rc || (dns_label ? gc_kube_is_dns_label(*out) : gc_kube_is_label_value(*out)))
        return rc;
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s: kueue.config_template_vars.%s \"%.64s%s\" is not a Kubernetes %s (it "
                   "becomes %s): use %s",
                   bp->path, name, *out, strlen(*out) > 64 ? "..." : "",
                   dns_label ? "namespace name" : "label value", use,
                   dns_label ? DNS_LABEL_FORM : LABEL_VALUE_FORM);
}

/* What a user template's objects name and label: metadata.name, .namespace and .labels, and a
 * ResourceFlavor's spec.nodeLabels, which its variables fill in. */
static int check_object_names(const gc_blueprint *bp, const json_t *objects, gc_error *err)
{
    size_t i;
    json_t *obj;
    json_array_foreach(objects, i, obj)
    {
        const char *kind = json_string_value(json_object_get(obj, "kind"));
        const json_t *meta = json_object_get(obj, "metadata");
        const char *name = json_string_value(json_object_get(meta, "name"));
        const json_t *ns = json_object_get(meta, "namespace");
        const char *what = NULL, *shown = NULL, *form = NULL;
        if (!name || !gc_kube_is_dns_subdomain(name))
            what = "metadata.name", shown = name ? name : "", form = "a DNS subdomain name";
        else if (ns && !(json_is_string(ns) && gc_kube_is_dns_label(json_string_value(ns))))
            what = "metadata.namespace", shown = json_is_string(ns) ? json_string_value(ns) : "",
            form = "a namespace name (" DNS_LABEL_FORM ")";
        const json_t *maps[] = {json_object_get(meta, "labels"),
                                kind && !strcmp(kind, "ResourceFlavor")
                                    ? json_object_get(json_object_get(obj, "spec"), "nodeLabels")
                                    : NULL};
        for (size_t m = 0; !what && m < 2; m++) {
            const char *key;
            const json_t *value;
            json_object_foreach((json_t *)maps[m], key, value)
            {
                if (!gc_kube_is_label_key(key))
                    what = m ? "spec.nodeLabels key" : "metadata.labels key", shown = key,
                    form =
                        "a label key (an optional DNS prefix and '/', then " LABEL_VALUE_FORM ")";
                else if (!json_is_string(value) ||
                         !gc_kube_is_label_value(json_string_value(value)))
                    what = m ? "spec.nodeLabels value" : "metadata.labels value",
                    shown = json_is_string(value) ? json_string_value(value) : "(not a string)",
                    form = "a label value (" LABEL_VALUE_FORM ")";
                if (what)
                    break;
            }
        }
        if (what)
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s: %s %s: %s \"%.64s%s\" is not %s; check the template variable that "
                           "fills it",
                           bp->kueue_config_path, kind ? kind : "object", name ? name : "", what,
                           shown, strlen(shown) > 64 ? "..." : "", form);
    }
    return 0;
}

/* The built-in objects */

/* apiVersion, kind and metadata (namespace left out when ns is NULL), then `key`: `value`
 * (stolen) unless key is NULL. NULL when anything in it could not be built. */
static json_t *kube_object(const char *api_version, const char *kind, const char *name,
                           const char *ns, const char *key, json_t *value)
{
    json_t *object = json_pack("{s:s, s:s, s:{s:s, s:s*}}", "apiVersion", api_version, "kind", kind,
                               "metadata", "name", name, "namespace", ns);
    if (key && (!object || json_object_set_new(object, key, value) != 0)) {
        if (!object)
            json_decref(value);
        json_decref(object);
        return NULL;
    }
    return object;
}

/* The TPU flavor: the accelerator label (and the topology label when tpu_topology is set, so
 * the flavor admits only that slice shape), the toleration of the TPU nodes' taint, and with
 * dynamic slicing the Topology it belongs to. */
static json_t *tpu_flavor(const char *api, const char *name, const char *accelerator,
                          const char *topology, bool slicing)
{
    json_t *labels = json_pack("{s:s}", LABEL_ACCELERATOR, accelerator);
    if (labels && topology && *topology)
        json_object_set_new(labels, LABEL_TOPOLOGY, json_string(topology));
    json_t *spec = json_pack("{s:o*, s:[{s:s, s:s, s:s}]}", "nodeLabels", labels, "tolerations",
                             "effect", "NoSchedule", "key", "google.com/tpu", "value", "present");
    if (spec && slicing)
        json_object_set_new(spec, "topologyName", json_string(SLICING_TOPOLOGY));
    return spec ? kube_object(api, "ResourceFlavor", name, NULL, "spec", spec) : NULL;
}

static json_t *resource(const char *name, json_t *quota)
{
    return json_pack("{s:s, s:o*}", "name", name, "nominalQuota", quota);
}

static int cluster_queue(const char *api, const json_t *vars, const char *tpu_flavor_name,
                         bool pathways, bool slicing, json_t **out, gc_error *err)
{
    *out = NULL;
    json_t *q[5] = {NULL};
    static const char *const names[5] = {"tpu_quota", "tpu_flavor_cpu_quota",
                                         "tpu_flavor_memory_quota", "pathways_cpu_quota",
                                         "pathways_memory_quota"};
    for (int i = 0; i < (pathways ? 5 : 1); i++) {
        int rc = quota(vars, names[i], &q[i], err);
        if (rc) {
            for (int j = 0; j < i; j++)
                json_decref(q[j]);
            return rc;
        }
    }
    json_t *group;
    if (pathways)
        group = json_pack("{s:[s,s,s], s:[{s:s, s:[o,o,o]}, {s:s, s:[o,o,o]}]}", "coveredResources",
                          "google.com/tpu", "cpu", "memory", "flavors", "name", tpu_flavor_name,
                          "resources", resource("google.com/tpu", q[0]), resource("cpu", q[1]),
                          resource("memory", q[2]), "name", "pathways-flavor", "resources",
                          resource("google.com/tpu", json_string("0")), resource("cpu", q[3]),
                          resource("memory", q[4]));
    else
        group =
            json_pack("{s:[s], s:[{s:s, s:[o]}]}", "coveredResources", "google.com/tpu", "flavors",
                      "name", tpu_flavor_name, "resources", resource("google.com/tpu", q[0]));
    json_t *spec = json_pack("{s:{s:s, s:s}, s:{}, s:[o*]}", "preemption", "reclaimWithinCohort",
                             "Never", "withinClusterQueue", "LowerPriority", "namespaceSelector",
                             "resourceGroups", group);
    if (spec && slicing)
        json_object_set_new(spec, "admissionChecks", json_pack("[s]", SLICING_CHECK));
    *out = spec ? kube_object(api, "ClusterQueue", "cluster-queue", NULL, "spec", spec) : NULL;
    return 0;
}

static json_t *priority_class(size_t i)
{
    json_t *pc = kube_object("scheduling.k8s.io/v1", "PriorityClass", priority_classes[i].name,
                             NULL, NULL, NULL);
    json_t *fields = json_pack("{s:i, s:b, s:s}", "value", priority_classes[i].value,
                               "globalDefault", 0, "description", priority_classes[i].description);
    if (!pc || !fields || json_object_update(pc, fields) != 0) {
        json_decref(pc);
        pc = NULL;
    }
    json_decref(fields);
    return pc;
}

void deploy_priority_classes(json_t *objects)
{
    for (size_t i = 0; i < sizeof(priority_classes) / sizeof(*priority_classes); i++)
        json_array_append_new(objects, priority_class(i));
}

/* Appends each object (stolen) to `objects`; false, with the rest freed, once one is NULL. */
static bool append_all(json_t *objects, json_t *const *items, size_t count)
{
    bool ok = true;
    for (size_t i = 0; i < count; i++) {
        if (ok && (!items[i] || json_array_append_new(objects, items[i]) != 0))
            ok = false;
        else if (!ok)
            json_decref(items[i]);
    }
    return ok;
}

/* The module's built-in configuration for (pathways, slicing). The slicing Topology and
 * AdmissionCheck are kueue.x-k8s.io/v1beta1 objects in the module's templates, the rest uses
 * the API version the cluster serves. */
static int builtin_objects(const gc_blueprint *bp, const char *head_pool, const char *api,
                           const json_t *vars, json_t *objects, gc_error *err)
{
    const char *accelerator = NULL, *topology = "";
    bool pathways = bp->kueue_pathways, slicing = bp->dynamic_slicing;
    if (!json_object_get(vars, "accelerator_type"))
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s: the built-in Kueue configuration needs the TPU accelerator: add a "
                       "gke-node-pool with a TPU machine type, or set "
                       "kueue.config_template_vars.accelerator_type (e.g. tpu-v6e-slice)",
                       bp->path);
    int rc =
        name_var(bp, vars, "accelerator_type", false,
                 "the " LABEL_ACCELERATOR " node label the TPU flavor selects", &accelerator, err);
    if (!rc && !gc_kube_is_label_value(head_pool))
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "%s: the Pathways head pool name \"%.64s\" is not a Kubernetes label value "
                     "(it becomes the " LABEL_NODEPOOL " node label pathways-flavor selects): use "
                     "%s",
                     bp->path, head_pool, LABEL_VALUE_FORM);
    const json_t *t = json_object_get(vars, "tpu_topology");
    if (!rc && json_is_string(t))
        topology = json_string_value(t);
    else if (!rc && t && !json_is_null(t))
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "kueue.config_template_vars.tpu_topology must be a string (e.g. \"4x4\")");
    if (!rc && *topology && !gc_kube_is_label_value(topology))
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "%s: kueue.config_template_vars.tpu_topology \"%.64s\" is not a Kubernetes "
                     "label value (it becomes the cloud.google.com/gke-tpu-topology node label): "
                     "use %s",
                     bp->path, topology, LABEL_VALUE_FORM);
    char *flavor = rc         ? NULL
                   : pathways ? gc_xasprintf("flavor-%s", accelerator)
                              : gc_xstrdup("tpu-flavor");
    json_t *cq = NULL;
    if (!rc)
        rc = cluster_queue(api, vars, flavor, pathways, slicing, &cq, err);
    if (rc) {
        free(flavor);
        return rc;
    }
    json_t *built[6 + sizeof(priority_classes) / sizeof(*priority_classes)];
    size_t n = 0;
    if (slicing) {
        built[n++] =
            kube_object("kueue.x-k8s.io/v1beta1", "Topology", SLICING_TOPOLOGY, NULL, "spec",
                        json_pack("{s:[{s:s}, {s:s}, {s:s}]}", "levels", "nodeLabel",
                                  "cloud.google.com/gce-topology-block", "nodeLabel",
                                  "cloud.google.com/gke-tpu-partition-4x4x4-id", "nodeLabel",
                                  "kubernetes.io/hostname"));
        built[n++] = kube_object("kueue.x-k8s.io/v1beta1", "AdmissionCheck", SLICING_CHECK, NULL,
                                 "spec", json_pack("{s:s}", "controllerName", SLICING_CONTROLLER));
    }
    /* The plain slicing flavor selects the accelerator only; the Pathways ones the topology
     * too when tpu_topology is set. */
    built[n++] = tpu_flavor(api, flavor, accelerator, pathways ? topology : NULL, slicing);
    if (pathways)
        built[n++] = kube_object(api, "ResourceFlavor", "pathways-flavor", NULL, "spec",
                                 json_pack("{s:{s:s}}", "nodeLabels", LABEL_NODEPOOL, head_pool));
    built[n++] = cq;
    built[n++] = kube_object(api, "LocalQueue", "user-queue", "default", "spec",
                             json_pack("{s:s}", "clusterQueue", "cluster-queue"));
    for (size_t i = 0; i < sizeof(priority_classes) / sizeof(*priority_classes); i++)
        built[n++] = priority_class(i);
    free(flavor);
    return append_all(objects, built, n) ? 0 : deploy_kueue_cannot_build(bp, "configuration", err);
}

int deploy_kueue_objects(const gc_blueprint *bp, const char *head_pool, const char *kueue_api,
                         json_t **objects, gc_buf *warnings, gc_error *err)
{
    *objects = json_array();
    if (!bp->kueue_install ||
        (!bp->kueue_config_path && !bp->kueue_pathways && !bp->dynamic_slicing))
        return 0;
    head_pool = head_pool ? head_pool : GC_PATHWAYS_HEAD_POOL;
    json_t *vars;
    int rc = template_vars(bp, head_pool, &vars, err);
    if (rc)
        return rc;
    if (bp->kueue_config_path) {
        rc = deploy_kueue_user_objects(bp, vars, *objects, err);
        if (!rc)
            rc = check_object_names(bp, *objects, err);
        if (!rc && !deploy_kueue_canonical_quotas(*objects))
            rc = deploy_kueue_cannot_build(bp, "configuration of kueue.config_path", err);
        if (!rc && bp->pathways)
            deploy_kueue_warn_head_pool(bp, head_pool, *objects, warnings);
    } else {
        char api[64];
        snprintf(api, sizeof(api), "kueue.x-k8s.io/%s", kueue_api);
        rc = builtin_objects(bp, head_pool, api, vars, *objects, err);
    }
    json_decref(vars);
    if (rc) {
        json_decref(*objects);
        *objects = NULL;
    }
    return rc;
}

int gc_kueue_check(const gc_blueprint *bp, const char *head_pool, gc_error *err)
{
    json_t *objects;
    gc_buf warnings;
    gc_buf_init(&warnings);
    int rc = deploy_kueue_objects(bp, head_pool, GC_KUEUE_VERSION, &objects, &warnings, err);
    json_decref(objects);
    gc_buf_free(&warnings);
    return rc;
}
