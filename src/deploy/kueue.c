/*
 * The Kueue configuration a Pathways cluster needs, built as objects.
 *
 * Why one resource group: a Pathways worker pod asks for google.com/tpu, cpu and memory at
 * once, and Kueue assigns all of a pod's resources from one flavor only when they sit in the
 * same group. The head pod asks only for cpu and memory. pathways-flavor comes first and has no
 * TPU quota, so the head is charged there (and pinned to the head pool by its node label) while
 * workers, which select the TPU accelerator label that pathways-flavor lacks, fall through to
 * tpu-flavor.
 *
 * Google's Terraform renders the same from a template and drops all of it when the user gives
 * their own template; here a user template is allowed too, but a Pathways blueprint whose
 * template leaves the head pool without a flavor gets a warning that says what to add.
 */
#include "gcluster/deploy.h"

#include "gcluster/emit.h"
#include "gcluster/kube.h"
#include "gcluster/sys.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LABEL_NODEPOOL    "cloud.google.com/gke-nodepool"
#define LABEL_ACCELERATOR "cloud.google.com/gke-tpu-accelerator"
#define MAX_TEMPLATE_FILE                                                                          \
    (16u << 20) /* templates are kilobytes: a larger file is the wrong one                         \
                 */

/* The built-in configuration's variables before config_template_vars. TPU quotas default to
 * "no limit in practice", as Cluster Toolkit's tpu_quota does; the head pool's are Toolkit's. */
static const struct {
    const char *name;
    const char *value;
} builtin_defaults[] = {
    {"tpu_quota", "999999"},
    {"tpu_flavor_cpu_quota", "999999"},
    {"tpu_flavor_memory_quota", "999999Gi"},
    {"pathways_cpu_quota", "480"},
    {"pathways_memory_quota", "2000G"},
    {"namespace", "default"},
};

static const struct {
    const char *name;
    int value;
    const char *description;
} priority_classes[] = {
    {"very-low", 100, "Very low priority: preempted first"},
    {"low", 250, "Low priority"},
    {"medium", 500, "Medium priority"},
    {"high", 750, "High priority"},
    {"very-high", 1000, "Very high priority: preempts lower priorities in the queue"},
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

/* What to say when a builder here yields NULL: a string jansson refused (not UTF-8). */
static int cannot_build(const gc_blueprint *bp, const char *what, gc_error *err)
{
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s: cannot build the Kueue %s: a name or value in it is not valid UTF-8",
                   bp->path, what);
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
        if (json_object_set_new(vars, builtin_defaults[i].name,
                                json_string(builtin_defaults[i].value)) != 0) {
            json_decref(vars);
            vars = NULL;
        }
    }
    if (vars && json_object_update(vars, bp->kueue_vars) != 0) {
        json_decref(vars);
        vars = NULL;
    }
    if (!vars)
        return cannot_build(bp, "template variables", err);
    *out = vars;
    return 0;
}

/* A quantity written as a JSON number or string, in canonical spelling as a new JSON string
 * (see kube/quantity.c for why); NULL when it is not a quantity. */
static json_t *canonical_quantity(const json_t *v)
{
    char text[64] = "";
    if (json_is_integer(v) && json_integer_value(v) >= 0)
        snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(v));
    else if (json_is_string(v))
        snprintf(text, sizeof(text), "%s", json_string_value(v));
    char *canonical = text[0] ? gc_quantity_canonical(text) : NULL;
    json_t *out = canonical ? json_string(canonical) : NULL;
    free(canonical);
    return out;
}

/* A quota variable as a nominalQuota value. */
static int quota(const json_t *vars, const char *name, json_t **out, gc_error *err)
{
    const json_t *v = json_object_get(vars, name);
    *out = canonical_quantity(v);
    if (*out)
        return 0;
    char shown[64] = "a list or mapping";
    if (json_is_string(v))
        snprintf(shown, sizeof(shown), "\"%.40s\"", json_string_value(v));
    else if (json_is_number(v))
        snprintf(shown, sizeof(shown), "%g", json_number_value(v));
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

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* A label value: at most 63 of [A-Za-z0-9-_.], starting and ending with a letter or digit. */
static bool is_label_value(const char *s)
{
    size_t len = strlen(s);
    if (len > 63 || (len && (!is_alnum(s[0]) || !is_alnum(s[len - 1]))))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(s[i]) && !strchr("-_.", s[i]))
            return false;
    return true;
}

/* A DNS subdomain (`max` 253: object names) or label (`max` 63: namespaces): lower-case
 * letters, digits and '-' (and '.' between labels of a subdomain), alphanumeric at both ends. */
static bool is_dns_name(const char *s, size_t max)
{
    size_t len = strlen(s);
    if (!len || len > max || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
              (s[i] == '.' && max > 63)))
            return false;
    return true;
}

/* A label key: an optional DNS subdomain and '/', then a name of the label value's form. */
static bool is_label_key(const char *s)
{
    const char *slash = strrchr(s, '/');
    const char *name = slash ? slash + 1 : s;
    if (slash) {
        char prefix[254];
        size_t plen = (size_t)(slash - s);
        if (plen >= sizeof(prefix))
            return false;
        memcpy(prefix, s, plen);
        prefix[plen] = '\0';
        if (!is_dns_name(prefix, 253))
            return false;
    }
    return *name && is_label_value(name);
}

#define LABEL_VALUE_FORM                                                                           \
    "at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
#define DNS_LABEL_FORM                                                                             \
    "at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit"

/* A template variable that becomes a label value (`dns_label` false) or a namespace name. */
static int name_var(const gc_blueprint *bp, const json_t *vars, const char *name, bool dns_label,
                    const char *use, const char **out, gc_error *err)
{
    int rc = string_var(vars, name, out, err);
    if (rc || (dns_label ? is_dns_name(*out, 63) : is_label_value(*out)))
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
        if (!name || !is_dns_name(name, 253))
            what = "metadata.name", shown = name ? name : "", form = "a DNS subdomain name";
        else if (ns && !(json_is_string(ns) && is_dns_name(json_string_value(ns), 63)))
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
                if (!is_label_key(key))
                    what = m ? "spec.nodeLabels key" : "metadata.labels key", shown = key,
                    form =
                        "a label key (an optional DNS prefix and '/', then " LABEL_VALUE_FORM ")";
                else if (!json_is_string(value) || !is_label_value(json_string_value(value)))
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

static json_t *resource_flavor(const char *api, const char *name, const char *label,
                               const char *value, bool tpu_toleration)
{
    json_t *tolerations = tpu_toleration ? json_pack("[{s:s, s:s, s:s}]", "key", "google.com/tpu",
                                                     "operator", "Exists", "effect", "NoSchedule")
                                         : NULL;
    json_t *spec =
        json_pack("{s:{s:s}, s:o*}", "nodeLabels", label, value, "tolerations", tolerations);
    return spec ? kube_object(api, "ResourceFlavor", name, NULL, "spec", spec) : NULL;
}

static json_t *flavor_quotas(const char *flavor, json_t *tpu, json_t *cpu, json_t *memory)
{
    return json_pack("{s:s, s:[{s:s, s:o}, {s:s, s:o}, {s:s, s:o}]}", "name", flavor, "resources",
                     "name", "google.com/tpu", "nominalQuota", tpu, "name", "cpu", "nominalQuota",
                     cpu, "name", "memory", "nominalQuota", memory);
}

static int cluster_queue(const char *api, const json_t *vars, json_t **out, gc_error *err)
{
    json_t *q[5] = {NULL};
    static const char *const names[5] = {"pathways_cpu_quota", "pathways_memory_quota", "tpu_quota",
                                         "tpu_flavor_cpu_quota", "tpu_flavor_memory_quota"};
    for (int i = 0; i < 5; i++) {
        int rc = quota(vars, names[i], &q[i], err);
        if (rc) {
            for (int j = 0; j < i; j++)
                json_decref(q[j]);
            return rc;
        }
    }
    json_t *group =
        json_pack("{s:[s,s,s], s:[o,o]}", "coveredResources", "google.com/tpu", "cpu", "memory",
                  "flavors", flavor_quotas("pathways-flavor", json_string("0"), q[0], q[1]),
                  flavor_quotas("tpu-flavor", q[2], q[3], q[4]));
    json_t *spec =
        json_pack("{s:{}, s:s, s:{s:s, s:s}, s:[o]}", "namespaceSelector", "queueingStrategy",
                  "BestEffortFIFO", "preemption", "reclaimWithinCohort", "Never",
                  "withinClusterQueue", "LowerPriority", "resourceGroups", group);
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

static int builtin_objects(const gc_blueprint *bp, const char *head_pool, const char *api,
                           const json_t *vars, json_t *objects, gc_error *err)
{
    const char *accelerator = NULL, *ns = NULL;
    if (!json_object_get(vars, "accelerator_type"))
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s: the Pathways Kueue configuration needs the TPU accelerator: add a "
                       "gke-node-pool with a TPU machine type, or set "
                       "kueue.config_template_vars.accelerator_type (e.g. tpu-v6e-slice)",
                       bp->path);
    int rc = name_var(bp, vars, "accelerator_type", false,
                      "the " LABEL_ACCELERATOR " node label tpu-flavor selects", &accelerator, err);
    if (!rc)
        rc = name_var(bp, vars, "namespace", true, "the namespace of LocalQueue user-queue", &ns,
                      err);
    if (!rc && !is_label_value(head_pool))
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "%s: the Pathways head pool name \"%.64s\" is not a Kubernetes label value "
                     "(it becomes the " LABEL_NODEPOOL " node label pathways-flavor selects): use "
                     "%s",
                     bp->path, head_pool, LABEL_VALUE_FORM);
    json_t *cq = NULL;
    if (!rc)
        rc = cluster_queue(api, vars, &cq, err);
    if (rc)
        return rc;
    json_t *built[5 + sizeof(priority_classes) / sizeof(*priority_classes)] = {
        resource_flavor(api, "pathways-flavor", LABEL_NODEPOOL, head_pool, false),
        resource_flavor(api, "tpu-flavor", LABEL_ACCELERATOR, accelerator, true),
        cq,
        kube_object(api, "LocalQueue", "user-queue", ns, "spec",
                    json_pack("{s:s}", "clusterQueue", "cluster-queue")),
    };
    size_t n = 4;
    for (size_t i = 0; i < sizeof(priority_classes) / sizeof(*priority_classes); i++)
        built[n++] = priority_class(i);
    return append_all(objects, built, n) ? 0 : cannot_build(bp, "configuration", err);
}

/* A user template */

/* Advances line/column over text[from, to). */
static void advance(const char *text, size_t from, size_t to, int *line, int *column)
{
    for (size_t i = from; i < to; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *column = 1;
        } else {
            (*column)++;
        }
    }
}

static int append_var(const json_t *vars, const char *name, gc_buf *out)
{
    const json_t *v = json_object_get(vars, name);
    if (json_is_string(v))
        gc_buf_puts(out, json_string_value(v));
    else if (json_is_integer(v))
        gc_buf_printf(out, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        gc_buf_printf(out, "%g", json_real_value(v));
    else if (json_is_boolean(v))
        gc_buf_puts(out, json_is_true(v) ? "true" : "false");
    else
        return -1;
    return 0;
}

int gc_template_render(const char *text, size_t len, const json_t *vars, const char *label,
                       gc_buf *out, gc_error *err)
{
    int line = 1, column = 1;
    size_t done = 0;
    for (size_t i = 0; i < len; i++) {
        bool escape = i + 2 < len && text[i + 1] == text[i] && text[i + 2] == '{';
        if ((text[i] == '$' || text[i] == '%') && escape) { /* $${ and %%{ are literal */
            gc_buf_append(out, text + done, i - done);
            advance(text, done, i, &line, &column);
            gc_buf_putc(out, text[i]);
            gc_buf_putc(out, '{');
            column += 3;
            done = i + 3;
            i += 2;
            continue;
        }
        if (i + 1 >= len || text[i + 1] != '{' || (text[i] != '$' && text[i] != '%'))
            continue;
        advance(text, done, i, &line, &column);
        gc_buf_append(out, text + done, i - done);
        const char *close = memchr(text + i, '}', len - i);
        if (text[i] == '%')
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s:%d:%d: template directives (%%{ ... }) are not supported; only "
                           "${name} substitution is (write %%%%{ for a literal %%{)",
                           label, line, column);
        size_t name_len = close ? (size_t)(close - text) - i - 2 : 0;
        char name[128];
        if (!close || !name_len || name_len >= sizeof(name))
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s:%d:%d: \"${\" starts no ${name} reference (write $${ for a literal "
                           "${)",
                           label, line, column);
        memcpy(name, text + i + 2, name_len);
        name[name_len] = '\0';
        if (append_var(vars, name, out))
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s:%d:%d: ${%s} is not a template variable; set it in "
                           "kueue.config_template_vars (only names, not expressions, are "
                           "substituted)",
                           label, line, column, name);
        advance(text, i, i + name_len + 3, &line, &column);
        done = i + name_len + 3;
        i = done - 1;
    }
    gc_buf_append(out, text + done, len - done);
    return 0;
}

static int kind_rank(const char *kind)
{
    static const char *const order[] = {"ResourceFlavor", "AdmissionCheck", "Topology",
                                        "ClusterQueue",   "LocalQueue",     "PriorityClass"};
    for (size_t i = 0; i < sizeof(order) / sizeof(*order); i++)
        if (!strcmp(kind, order[i]))
            return (int)i;
    return (int)(sizeof(order) / sizeof(*order));
}

/* Appends obj to objects; but two ClusterQueues of the same name become one with both sets of
 * resource groups (what the Terraform module does, so templates written for it mean the same
 * here). -1 when jansson cannot (out of memory). */
static int add_object(json_t *objects, json_t *obj)
{
    const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
    size_t i;
    json_t *other;
    json_array_foreach(objects, i, other)
    {
        const char *other_name =
            json_string_value(json_object_get(json_object_get(other, "metadata"), "name"));
        if (strcmp(json_string_value(json_object_get(other, "kind")), "ClusterQueue") ||
            strcmp(other_name, name))
            continue;
        json_t *spec = json_object_get(other, "spec");
        json_t *groups = json_object_get(spec, "resourceGroups");
        json_t *more = json_object_get(json_object_get(obj, "spec"), "resourceGroups");
        return json_is_array(groups) && json_is_array(more) ? json_array_extend(groups, more) : 0;
    }
    return json_array_append(objects, obj);
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

static int user_objects(const gc_blueprint *bp, const json_t *vars, json_t *objects, gc_error *err)
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
    rc = gc_template_render(text.data, text.len, vars, bp->kueue_config_path, &rendered, err);
    gc_yaml_doc doc = {0};
    if (!rc)
        rc = gc_yaml_load(rendered.data, rendered.len, bp->kueue_config_path, &doc, err);
    if (rc)
        err->code = rc = GC_EXIT_USAGE;
    json_t *obj;
    size_t i;
    for (int rank = 0; !rc && rank <= 6; rank++) {
        json_array_foreach(doc.documents, i, obj)
        {
            if (json_is_null(obj))
                continue;
            if (rank == 0 && (rc = check_document(&doc, i, obj, err)))
                break;
            const char *kind = json_string_value(json_object_get(obj, "kind"));
            if (kind_rank(kind) == rank && add_object(objects, obj) != 0) {
                rc = cannot_build(bp, "configuration of kueue.config_path", err);
                break;
            }
        }
    }
    gc_yaml_doc_free(&doc);
    gc_buf_free(&text);
    gc_buf_free(&rendered);
    return rc;
}

/* Quotas of a user template's ClusterQueues in canonical form too (a value that is not a
 * quantity is left for the API server to reject with its own message). False when jansson
 * cannot (out of memory). */
static bool canonicalize_quotas(json_t *objects)
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
                        json_t *canonical = canonical_quantity(v);
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

static void warn_head_pool(const gc_blueprint *bp, const char *head_pool, const json_t *objects,
                           gc_buf *warnings)
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
    gc_buf_printf(warnings,
                  "%s: no ResourceFlavor selects the Pathways head pool (%s: %s), so Kueue cannot "
                  "admit Pathways head pods there; add a flavor with that node label and cpu and "
                  "memory quota in the ClusterQueue (as the built-in pathways-flavor does), or "
                  "drop kueue.config_path to use the built-in configuration\n",
                  bp->kueue_config_path, LABEL_NODEPOOL, head_pool);
}

int gc_kueue_objects(const gc_blueprint *bp, const char *head_pool, const char *kueue_api,
                     json_t **objects, gc_buf *warnings, gc_error *err)
{
    *objects = json_array();
    if (!bp->kueue_install || (!bp->pathways && !bp->kueue_config_path))
        return 0;
    head_pool = head_pool ? head_pool : GC_PATHWAYS_HEAD_POOL;
    json_t *vars;
    int rc = template_vars(bp, head_pool, &vars, err);
    if (rc)
        return rc;
    if (bp->kueue_config_path) {
        rc = user_objects(bp, vars, *objects, err);
        if (!rc)
            rc = check_object_names(bp, *objects, err);
        if (!rc && !canonicalize_quotas(*objects))
            rc = cannot_build(bp, "configuration of kueue.config_path", err);
        if (!rc && bp->pathways)
            warn_head_pool(bp, head_pool, *objects, warnings);
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
    int rc = gc_kueue_objects(bp, head_pool, "v1beta2", &objects, &warnings, err);
    json_decref(objects);
    gc_buf_free(&warnings);
    return rc;
}
