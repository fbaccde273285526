/*
 * What the parts of the Google Cloud plan share (gcp.h): the planner, settings as the toolkit
 * wires them, errors that say the fix, gcloud's list forms, steps and notes, and the one builder
 * of gcloud argvs (a table of each kind's group words and scope flags).
 */
#include "deploy/gcp.h"
#include "deploy/network_outputs.h"

#include <openssl/evp.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void deploy_gcp_planner_init(planner *p, const gc_blueprint *bp, const gc_cloud_target *t)
{
    p->bp = bp;
    p->project = t && t->project ? t->project : bp->project;
    p->cluster = t && t->cluster ? t->cluster : bp->cluster;
    p->location = t && t->location ? t->location : bp->region;
    p->region = bp->region;
    p->head_pool = t && t->head_pool ? t->head_pool : GC_PATHWAYS_HEAD_POOL;
    p->deployment = json_string_value(json_object_get(bp->vars, "deployment_name"));
    if (!p->deployment)
        p->deployment = bp->cluster;
    for (size_t i = 0; i < bp->module_count; i++)
        if (deploy_gcp_source_is(&bp->modules[i], SOURCE_CLUSTER))
            p->cluster_module = &bp->modules[i];
}

/* Module lookups */

bool deploy_gcp_source_is(const gc_bp_module *m, const char *path)
{
    return m && deploy_source_is(m->source, path);
}

const gc_bp_module *deploy_gcp_used(const gc_blueprint *bp, const gc_bp_module *m, const char *path)
{
    for (size_t i = 0; m && i < m->use_count; i++) {
        const gc_bp_module *used = deploy_blueprint_module(bp, m->use[i]);
        if (deploy_gcp_source_is(used, path))
            return used;
    }
    return NULL;
}

const json_t *deploy_gcp_setting(const planner *p, const gc_bp_module *m, const char *key)
{
    const json_t *v = m ? json_object_get(m->settings, key) : NULL;
    if (v && deploy_blueprint_unknown(v))
        return NULL;
    if (!v)
        v = json_object_get(p->bp->vars, key);
    return json_is_null(v) ? NULL : v;
}

bool deploy_gcp_unknown(const gc_bp_module *m, const char *key)
{
    return m && deploy_blueprint_unknown(json_object_get(m->settings, key));
}

const char *deploy_gcp_string(const planner *p, const gc_bp_module *m, const char *key,
                              const char *dflt)
{
    const char *s = json_string_value(deploy_gcp_setting(p, m, key));
    return s && *s ? s : dflt;
}

bool deploy_gcp_bool(const planner *p, const gc_bp_module *m, const char *key, bool dflt)
{
    const json_t *v = deploy_gcp_setting(p, m, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

long deploy_gcp_long(const planner *p, const gc_bp_module *m, const char *key, long dflt)
{
    const json_t *v = deploy_gcp_setting(p, m, key);
    return json_is_integer(v) ? (long)json_integer_value(v) : dflt;
}

/* Errors that say the fix */

int deploy_gcp_missing(planner *p, const gc_bp_module *m, const char *key, const char *example)
{
    return gc_fail(p->err, GC_EXIT_USAGE,
                   "module %s needs %s, and the blueprint leaves it empty; pass --vars %s=%s",
                   m->id, key, key, example);
}

int deploy_gcp_empty(planner *p, const json_t *raw, const gc_bp_module *m, const char *what,
                     const char *example)
{
    const char *text = json_string_value(raw);
    size_t len = text ? strlen(text) : 0;
    if (len > 8 && !strncmp(text, "$(vars.", 7) && text[len - 1] == ')')
        return gc_fail(p->err, GC_EXIT_USAGE,
                       "module %s: %s is vars.%.*s, which is empty; pass --vars %.*s=%s", m->id,
                       what, (int)(len - 8), text + 7, (int)(len - 8), text + 7, example);
    return gc_fail(p->err, GC_EXIT_USAGE, "module %s: %s is empty; set it (e.g. %s)", m->id, what,
                   example);
}

/* Lists */

char *deploy_gcp_key_values(const json_t *object)
{
    gc_buf b;
    gc_buf_init(&b);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)object, key, value)
    {
        if (json_is_string(value))
            gc_buf_printf(&b, "%s%s=%s", b.len ? "," : "", key, json_string_value(value));
    }
    if (!b.data)
        return gc_xstrdup("");
    return gc_buf_detach(&b);
}

/* Cluster Toolkit adds ghpc_blueprint and ghpc_deployment to vars.labels for every module, and
 * each module its own ghpc_module and ghpc_role. */
json_t *deploy_gcp_labels_json(const planner *p, const gc_bp_module *m, const char *ghpc_module,
                               const char *ghpc_role)
{
    json_t *labels = json_object();
    const json_t *user = deploy_gcp_setting(p, m, "labels");
    if (json_is_object(user))
        json_object_update(labels, (json_t *)user);
    json_object_set_new(labels, "ghpc_blueprint", json_string(p->bp->name));
    json_object_set_new(labels, "ghpc_deployment", json_string(p->deployment));
    json_object_set_new(labels, "ghpc_module", json_string(ghpc_module));
    json_object_set_new(labels, "ghpc_role", json_string(ghpc_role));
    return labels;
}

char *deploy_gcp_labels(const planner *p, const gc_bp_module *m, const char *ghpc_module,
                        const char *ghpc_role)
{
    json_t *labels = deploy_gcp_labels_json(p, m, ghpc_module, ghpc_role);
    char *list = deploy_gcp_key_values(labels);
    json_decref(labels);
    return list;
}

char *deploy_gcp_join(const json_t *list, const char *field)
{
    gc_buf b;
    gc_buf_init(&b);
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        const json_t *s = field ? json_object_get(v, field) : v;
        if (json_is_string(s))
            gc_buf_printf(&b, "%s%s", b.len ? "," : "", json_string_value(s));
    }
    if (!b.data)
        return gc_xstrdup("");
    return gc_buf_detach(&b);
}

/* Steps */

gc_cloud_step *deploy_gcp_step(planner *p, gc_cloud_step_kind kind, const char *name,
                               const gc_bp_module *m)
{
    gc_cloud_plan *plan = p->plan;
    plan->steps = gc_xrealloc(plan->steps, (plan->count + 1) * sizeof(*plan->steps));
    gc_cloud_step *s = &plan->steps[plan->count++];
    memset(s, 0, sizeof(*s));
    s->kind = kind;
    s->name = gc_xstrdup(name);
    s->module_id = gc_xstrdup(m ? m->id : "");
    return s;
}

void deploy_gcp_note(planner *p, const gc_bp_module *m, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    char *line = gc_xasprintf("module %s: %s", m ? m->id : "-", text);
    gc_strings_push(&p->plan->notes, line);
    free(line);
}

/* Terraform's random_id of 4 bytes, which deploy keeps no state for: stable digits instead. */

void deploy_gcp_suffix(const planner *p, const gc_bp_module *m, char out[9])
{
    const char *project = p->bp->project ? p->bp->project : "";
    char *seed = gc_xasprintf("%s/%s/%s", project, p->deployment, m->id);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(seed, strlen(seed), md, &len, EVP_sha256(), NULL) != 1 || len < 4)
        gc_fatal("libcrypto failed in EVP_Digest");
    snprintf(out, 9, "%02x%02x%02x%02x", md[0], md[1], md[2], md[3]);
    free(seed);
}

/* The builder */

typedef enum scope {
    SCOPE_PROJECT,  /* --project only */
    SCOPE_REGION,   /* --region */
    SCOPE_ROUTER,   /* --router and --region */
    SCOPE_LOCATION, /* --location (a cluster) */
    SCOPE_CLUSTER,  /* --cluster and --location (a node pool) */
    SCOPE_POLICY,   /* the project is the name (IAM policy bindings) */
    SCOPE_OWN,      /* --location of its own (a Filestore instance's zone or region) */
} scope;

static const struct kind_words {
    const char *words;       /* the command group */
    const char *create_word; /* after "create" (a resource policy's type), or NULL */
    scope scope;
    const char *id_field; /* what describe prints of a resource that exists */
    const char *url;      /* what goes before the name ("gs://" for a bucket), or NULL */
} kinds[] = {
    [GC_CLOUD_NETWORK] = {"compute networks", NULL, SCOPE_PROJECT, "name"},
    [GC_CLOUD_SUBNETWORK] = {"compute networks subnets", NULL, SCOPE_REGION, "name"},
    [GC_CLOUD_FIREWALL] = {"compute firewall-rules", NULL, SCOPE_PROJECT, "name"},
    [GC_CLOUD_ROUTER] = {"compute routers", NULL, SCOPE_REGION, "name"},
    [GC_CLOUD_NAT] = {"compute routers nats", NULL, SCOPE_ROUTER, "name"},
    [GC_CLOUD_SERVICE_ACCOUNT] = {"iam service-accounts", NULL, SCOPE_PROJECT, "email"},
    [GC_CLOUD_ROLE_BINDING] = {"projects", NULL, SCOPE_POLICY, NULL},
    [GC_CLOUD_CLUSTER] = {"container clusters", NULL, SCOPE_LOCATION, "name"},
    [GC_CLOUD_WORKLOAD_POLICY] = {"compute resource-policies", "workload-policy", SCOPE_REGION,
                                  "name"},
    [GC_CLOUD_NODE_POOL] = {"container node-pools", NULL, SCOPE_CLUSTER, "name"},
    [GC_CLOUD_REMOVE_DEFAULT_POOL] = {"container node-pools", NULL, SCOPE_CLUSTER, "name"},
    [GC_CLOUD_CLUSTER_ADDON] = {"container clusters", NULL, SCOPE_LOCATION, "name"},
    [GC_CLOUD_ACCOUNT_BINDING] = {"iam service-accounts", NULL, SCOPE_PROJECT, NULL},
    [GC_CLOUD_BUCKET] = {"storage buckets", NULL, SCOPE_PROJECT, "name", "gs://"},
    [GC_CLOUD_BUCKET_SETTINGS] = {"storage buckets", NULL, SCOPE_PROJECT, NULL, "gs://"},
    [GC_CLOUD_FILESTORE] = {"filestore instances", NULL, SCOPE_OWN, "name"},
};
_Static_assert(sizeof(kinds) / sizeof(*kinds) == GC_CLOUD_FILESTORE + 1,
               "group words for every step kind");

deploy_argv deploy_gcp_command(const planner *p, const gcp_ref *r, const char *verb)
{
    const struct kind_words *k = &kinds[r->kind];
    deploy_argv b = {0};
    deploy_argv_words(&b, "gcloud", NULL);
    char *words = gc_xstrdup(k->words);
    for (char *save, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save))
        deploy_argv_push(&b, gc_xstrdup(w));
    free(words);
    deploy_argv_words(&b, verb, NULL);
    if (k->create_word && !strcmp(verb, "create"))
        deploy_argv_words(&b, k->create_word, NULL);
    if (k->scope == SCOPE_POLICY) {
        deploy_argv_words(&b, p->project, NULL);
        return b;
    }
    deploy_argv_push(&b, gc_xasprintf("%s%s", k->url ? k->url : "", r->name));
    deploy_argv_flag(&b, "project", p->project);
    switch (k->scope) {
    case SCOPE_ROUTER:
        deploy_argv_flag(&b, "router", r->router);
        deploy_argv_flag(&b, "region", r->region);
        break;
    case SCOPE_REGION:
        deploy_argv_flag(&b, "region", r->region);
        break;
    case SCOPE_CLUSTER:
        deploy_argv_flag(&b, "cluster", p->cluster);
        deploy_argv_flag(&b, "location", p->location);
        break;
    case SCOPE_LOCATION:
        deploy_argv_flag(&b, "location", p->location);
        break;
    case SCOPE_OWN:
        deploy_argv_flag(&b, "location", r->region);
        break;
    case SCOPE_PROJECT:
    case SCOPE_POLICY:
        break;
    }
    return b;
}

char **deploy_gcp_describe(const planner *p, const gcp_ref *r)
{
    deploy_argv b = deploy_gcp_command(p, r, "describe");
    char *format = gc_xasprintf("value(%s)", kinds[r->kind].id_field);
    deploy_argv_flag(&b, "format", format);
    free(format);
    return b.items;
}

/* Service accounts: the module names the account "<deployment_name>-<name>" (the
 * service-accounts module's prefix), so two deployments in one project never share one. */

char *deploy_gcp_account_email(const planner *p, const gc_bp_module *sa)
{
    return gc_xasprintf("%s-%s@%s.iam.gserviceaccount.com", p->deployment,
                        deploy_gcp_string(p, sa, "name", "sa"), p->project);
}

/* An IAM binding: present when the project's policy lists the member under the role. */
char **deploy_gcp_binding_check(const planner *p, const gcp_ref *on, const char *member,
                                const char *role)
{
    deploy_argv b = deploy_gcp_command(p, on, "get-iam-policy");
    deploy_argv_flag(&b, "flatten", "bindings[].members");
    char *filter = gc_xasprintf("bindings.role=%s AND bindings.members=%s", role, member);
    deploy_argv_flag(&b, "filter", filter);
    free(filter);
    deploy_argv_flag(&b, "format", "value(bindings.role)");
    return b.items;
}

/* A gke-persistent-volume module's objects over volume `base` (the bucket or the Filestore
 * instance), as its templates render them for every kind of volume: its Namespace (when not
 * default), a PersistentVolume named pv_name (else `base`-pv) whose spec is storage class,
 * capacity and access mode followed by `source`'s fields (the volume's own: csi and the like;
 * taken), with a claimRef to the claim when `claim_ref`, and the PersistentVolumeClaim named
 * pvc_name (else `base`-pvc) that binds to it through volumeName. */
void deploy_gcp_volume_objects(const planner *p, const gc_bp_module *m, const char *base, long gib,
                               const char *storage_class, json_t *source, bool claim_ref,
                               json_t *objects)
{
    const char *ns = deploy_gcp_string(p, m, "namespace", "default");
    char *pv = json_string_value(json_object_get(m->settings, "pv_name"))
                   ? gc_xstrdup(deploy_gcp_string(p, m, "pv_name", ""))
                   : gc_xasprintf("%s-pv", base);
    char *pvc = json_string_value(json_object_get(m->settings, "pvc_name"))
                    ? gc_xstrdup(deploy_gcp_string(p, m, "pvc_name", ""))
                    : gc_xasprintf("%s-pvc", base);
    char *capacity = gc_xasprintf("%ldGi", gib);
    if (strcmp(ns, "default"))
        json_array_append_new(objects, json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
                                                 "Namespace", "metadata", "name", ns));
    json_t *spec = json_pack("{s:s, s:{s:s}, s:[s]}", "storageClassName", storage_class, "capacity",
                             "storage", capacity, "accessModes", "ReadWriteMany");
    json_object_update(spec, source);
    json_decref(source);
    if (claim_ref)
        json_object_set_new(spec, "claimRef",
                            json_pack("{s:s, s:s}", "name", pvc, "namespace", ns));
    json_array_append_new(
        objects, json_pack("{s:s, s:s, s:{s:s, s:o}, s:o}", "apiVersion", "v1", "kind",
                           "PersistentVolume", "metadata", "name", pv, "labels",
                           deploy_gcp_labels_json(p, m, "gke-persistent-volume", "file-system"),
                           "spec", spec));
    json_array_append_new(
        objects,
        json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:[s], s:s, s:s, s:{s:{s:s}}}}", "apiVersion",
                  "v1", "kind", "PersistentVolumeClaim", "metadata", "name", pvc, "namespace", ns,
                  "labels", deploy_gcp_labels_json(p, m, "gke-persistent-volume", "file-system"),
                  "spec", "accessModes", "ReadWriteMany", "storageClassName", storage_class,
                  "volumeName", pv, "resources", "requests", "storage", capacity));
    free(capacity);
    free(pv);
    free(pvc);
}
