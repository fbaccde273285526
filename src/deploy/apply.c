/*
 * deploy against a cluster: the node pools it has and lacks, the Kueue configuration by
 * server-side apply (field manager "gcluster", so a second run is a no-op and fields other
 * managers own are only taken over where ours differ), and the gcloud commands for missing pools.
 *
 * Resource names and scopes come from API discovery, not a table, so a user template may hold
 * any kind the cluster serves. Nothing here prints: what was found and done goes into the
 * gc_deploy_report, warnings and notices to the caller's gc_events as well.
 */
#include "deploy/internal.h"

#include "gcluster/kube.h"
#include "gcluster/kueue.h"
#include "gcluster/process.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LABEL_NODEPOOL       "cloud.google.com/gke-nodepool"
#define ACTIVE_WAIT_ATTEMPTS 40 /* x 250 ms: Kueue marks a new ClusterQueue Active in ~1 s */

/* Node pools */

static int count_node(json_t *node, void *ctx, gc_error *err)
{
    (void)err;
    json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    const char *pool = json_string_value(json_object_get(labels, LABEL_NODEPOOL));
    if (pool) {
        json_t *counts = ctx;
        json_int_t n = json_integer_value(json_object_get(counts, pool));
        json_object_set_new(counts, pool, json_integer(n + 1));
    }
    return 0;
}

static void describe_size(const gc_pool_spec *p, char *out, size_t size)
{
    if (p->topology)
        snprintf(out, size, "%s %s, %ld hosts", p->accelerator, p->topology, p->static_nodes);
    else if (p->static_nodes >= 0)
        snprintf(out, size, "%ld nodes", p->static_nodes);
    else
        snprintf(out, size, "autoscaling %ld-%ld", p->min_nodes, p->max_nodes);
}

typedef struct target {
    const gc_blueprint *bp;
    const char *project, *cluster, *location;
} target;

static char *dup_or_null(const char *s)
{
    return s ? gc_xstrdup(s) : NULL;
}

/* A warning goes to the caller now and stays in the report. */
static void warn(deploy_cluster *d, const char *text)
{
    gc_strings_push(&d->report->warnings, text);
    gc_warn(d->ev, "%s", text);
}

/* Which of the pools the cluster has (from its nodes' pool labels), and for each missing one the
 * gcloud command that creates it. */
static int list_pools(deploy_cluster *d, const gc_pool_spec *pools, size_t count, const target *t,
                      gc_error *err)
{
    json_t *counts = json_object();
    gc_kube_list_options opts = {
        .label_selector = LABEL_NODEPOOL, .accept = GC_KUBE_ACCEPT_METADATA, .page_size = 500};
    int rc = gc_kube_list(d->kube, "/api/v1/nodes", &opts, count_node, counts, NULL, err);
    if (rc) {
        json_decref(counts);
        gc_error_prefix(err, "listing the cluster's nodes to find its node pools: ");
        return rc;
    }
    gc_deploy_report *report = d->report;
    report->pools = gc_xcalloc(count ? count : 1, sizeof(*report->pools));
    for (size_t i = 0; i < count; i++) {
        gc_deploy_pool *p = &report->pools[report->pool_count++];
        char size[96];
        describe_size(&pools[i], size, sizeof(size));
        const json_t *nodes = json_object_get(counts, pools[i].name);
        p->name = gc_xstrdup(pools[i].name);
        p->machine_type = gc_xstrdup(pools[i].machine_type);
        p->size = gc_xstrdup(size);
        p->nodes = nodes ? (long)json_integer_value(nodes) : -1;
        if (nodes)
            continue;
        p->create_command = deploy_pool_create_command(t->bp, &pools[i],
                                                       &(gc_cloud_target){.project = t->project,
                                                                          .cluster = t->cluster,
                                                                          .location = t->location});
    }
    report->pools_listed = true;
    json_decref(counts);
    return 0;
}

/* Waits briefly for Kueue to accept a ClusterQueue, and records what it decided. */
static int check_queue_state(deploy_cluster *d, const deploy_object_ref *ref, gc_deploy_object *out,
                             gc_error *err)
{
    const char *reason = "Pending", *message = "Kueue has not looked at it yet";
    json_t *cq = NULL;
    gc_progress(d->ev, "waiting for Kueue to make %s Active", ref->label);
    for (int attempt = 0; attempt < ACTIVE_WAIT_ATTEMPTS && !out->queue_active; attempt++) {
        if (attempt)
            deploy_sleep_ms(250);
        json_decref(cq);
        int rc = gc_kube_get(d->kube, ref->path, NULL, &cq, err);
        if (rc) {
            gc_event(d->ev, GC_EVENT_PROGRESS_END, "%s", "");
            return rc;
        }
        const json_t *active = gc_kube_condition(cq, "Active");
        if (active) {
            reason = gc_kube_string(active, "reason");
            message = gc_kube_string(active, "message");
            out->queue_active = gc_kube_condition_true(cq, "Active");
        }
    }
    gc_event(d->ev, GC_EVENT_PROGRESS_END, "%s", "");
    out->queue_checked = true;
    out->queue_reason = dup_or_null(reason);
    out->queue_message = dup_or_null(message);
    if (!out->queue_active) {
        char *text = gc_xasprintf("%s is not Active (%s: %s)", ref->label, reason ? reason : "",
                                  message ? message : "");
        warn(d, text);
        free(text);
    }
    json_decref(cq);
    return 0;
}

static void object_free(gc_deploy_object *o)
{
    free(o->api_version);
    free(o->kind);
    free(o->name);
    free(o->ns);
    free(o->label);
    free(o->queue_reason);
    free(o->queue_message);
    memset(o, 0, sizeof(*o));
}

static void describe_object(const json_t *obj, const deploy_object_ref *ref, gc_deploy_object *out)
{
    const json_t *meta = json_object_get(obj, "metadata");
    out->api_version = gc_xstrdup(json_string_value(json_object_get(obj, "apiVersion")));
    out->kind = gc_xstrdup(json_string_value(json_object_get(obj, "kind")));
    out->name = dup_or_null(json_string_value(json_object_get(meta, "name")));
    out->ns = dup_or_null(json_string_value(json_object_get(meta, "namespace")));
    out->label = gc_xstrdup(ref->label);
}

static int apply_objects(deploy_cluster *d, json_t *objects, bool plan, gc_error *err)
{
    gc_deploy_report *report = d->report;
    report->objects = gc_xcalloc(json_array_size(objects), sizeof(*report->objects));
    size_t i;
    json_t *obj;
    int rc = 0;
    json_array_foreach(objects, i, obj)
    {
        deploy_object_ref ref = {0};
        rc = deploy_locate(d->kube, d->located, obj, &ref, err);
        gc_deploy_object *out = &report->objects[report->object_count];
        if (!rc) {
            describe_object(obj, &ref, out);
            rc = plan ? deploy_apply_object(d->kube, obj, &ref, true, &out->outcome, err)
                      : deploy_apply_after_install(
                            d->kube, obj, &ref, deploy_install_changed(report), &out->outcome, err);
        }
        /* An object is reported once it was applied; its error says what became of the rest. */
        if (!rc)
            report->object_count++;
        else
            object_free(out);
        free(ref.path);
        if (rc)
            break;
    }
    return rc;
}

/* The whole command */

static void summarize(const gc_blueprint *bp, const target *t, const char *head_pool,
                      gc_deploy_report *report)
{
    report->started = true;
    report->blueprint = dup_or_null(bp->name);
    report->cluster = dup_or_null(t->cluster);
    report->project = dup_or_null(t->project);
    report->location = dup_or_null(t->location);
    report->pathways = bp->pathways;
    report->head_pool = bp->pathways ? gc_xstrdup(head_pool) : NULL;
    report->unhandled =
        gc_xcalloc(bp->unhandled_count ? bp->unhandled_count : 1, sizeof(*report->unhandled));
    for (size_t i = 0; i < bp->unhandled_count; i++)
        if (!deploy_cloud_handles(bp->unhandled[i].source) &&
            !deploy_storage_handles(bp, bp->unhandled[i].id))
            report->unhandled[report->unhandled_count++] =
                (gc_module_ref){.id = dup_or_null(bp->unhandled[i].id),
                                .source = dup_or_null(bp->unhandled[i].source)};
}

/* An installed controller older than what jobs need (unless the blueprint installs it: then
 * the install said so already). */
static void warn_too_old(deploy_cluster *d, const char *name, const char *installed,
                         const char *needed)
{
    for (size_t i = 0; i < d->report->install_count; i++)
        if (!strcmp(d->report->installs[i].name, name))
            return;
    char *text = gc_xasprintf("%s %s is installed; jobs need %s or later (deploy --upgrade "
                              "installs the blueprint's release)",
                              name, installed, needed);
    warn(d, text);
    free(text);
}

/* Jobs need the Kueue API v1beta2 (Kueue 0.15.0 and later, the oldest release Cluster Toolkit
 * supports) and JobSet 0.9.0 or later (the oldest the toolkit supports). */
static void check_versions(deploy_cluster *d, json_t *cache, const char *kueue_api,
                           bool jobset_served)
{
    gc_deploy_report *report = d->report;
    if (kueue_api[0])
        report->kueue_version =
            deploy_running_version(d->kube, cache, GC_KUEUE_CONTROLLER_NS, GC_KUEUE_CONTROLLER);
    if (jobset_served)
        report->jobset_version =
            deploy_running_version(d->kube, cache, GC_JOBSET_CONTROLLER_NS, GC_JOBSET_CONTROLLER);
    long kueue = deploy_version_number(report->kueue_version);
    long jobset = deploy_version_number(report->jobset_version);
    if (kueue >= 0 && kueue < 15000)
        warn_too_old(d, "Kueue", report->kueue_version, "0.15.0");
    if (jobset >= 0 && jobset < 9000)
        warn_too_old(d, "JobSet", report->jobset_version, "0.9.0");
}

/* What the cluster serves once the installs are done: the Kueue API version ("" when not
 * served), and a warning for JobSet when jobs would find none. */
static int check_prerequisites(deploy_cluster *d, json_t *cache, char kueue_api[16], gc_error *err)
{
    char jobset_api[16];
    int rc = deploy_served(d->kube, cache, GC_KUEUE_GROUP, GC_KUEUE_VERSION, kueue_api, 16, err);
    if (!rc)
        rc = deploy_served(d->kube, cache, "jobset.x-k8s.io", "v1alpha2", jobset_api,
                           sizeof(jobset_api), err);
    if (rc)
        return rc;
    if (!jobset_api[0] && !d->report->plan)
        warn(d, "the cluster does not serve JobSet (jobset.x-k8s.io) and the blueprint does not "
                "install it: jobs cannot run until it is installed (set jobset.install: true "
                "in the kubectl-apply module)");
    check_versions(d, cache, kueue_api, jobset_api[0]);
    return 0;
}

/* What the installs found: an older release stays unless --upgrade; a release without a kept
 * digest is not installed. */
static void report_installs(deploy_cluster *d)
{
    for (size_t i = 0; i < d->report->install_count; i++) {
        const gc_deploy_install *in = &d->report->installs[i];
        char *text = NULL;
        if (in->state == GC_INSTALL_OLDER)
            text = gc_xasprintf("%s %s is installed, older than the blueprint's %s; it is left "
                                "as it is (deploy --upgrade installs %s)",
                                in->name, in->installed, in->version, in->version);
        else if (in->state == GC_INSTALL_UNVERIFIABLE)
            text = gc_xasprintf("%s %s is not installed and gcluster will not install it: it "
                                "keeps no SHA-256 digest of that release to check the download "
                                "against; install it yourself (the blueprint asks for it)",
                                in->name, in->version);
        if (text)
            warn(d, text);
        free(text);
    }
}

/* Objects listed without applying them: with --plan before the cluster serves their API. */
static void list_unapplied(gc_deploy_report *report, json_t *objects)
{
    report->objects = gc_xcalloc(json_array_size(objects) + 1, sizeof(*report->objects));
    size_t i;
    json_t *obj;
    json_array_foreach(objects, i, obj)
    {
        deploy_object_ref ref = {0};
        const char *api = json_string_value(json_object_get(obj, "apiVersion"));
        const char *kind = json_string_value(json_object_get(obj, "kind"));
        const char *slash = strchr(api, '/');
        size_t n = 0;
        for (const char *k = kind; *k && n < 63; k++)
            ref.label[n++] = (char)tolower((unsigned char)*k);
        snprintf(ref.label + n, sizeof(ref.label) - n, "%s%.*s/%s", slash ? "." : "",
                 slash ? (int)(slash - api) : 0, api,
                 json_string_value(json_object_get(json_object_get(obj, "metadata"), "name")));
        gc_deploy_object *out = &report->objects[report->object_count++];
        describe_object(obj, &ref, out);
        out->outcome = GC_APPLY_NOT_CHECKED;
    }
}

/* Every object deploy applies, with the builders' warnings (one per line). */
static int build_objects(deploy_cluster *d, const char *kueue_api, gc_error *err)
{
    gc_buf warnings;
    gc_buf_init(&warnings);
    int rc = gc_deploy_objects(d->bp, d->head_pool, kueue_api, &d->objects, &warnings, err);
    /* applying (not --plan, with the cluster): a volume without its server is not applied */
    if (!rc)
        rc = deploy_filestore_addresses(d->bp,
                                        &(gc_cloud_target){.project = d->r->project,
                                                           .cluster = d->r->cluster,
                                                           .location = d->r->location},
                                        d->gcloud, d->objects, d->kube && !d->r->plan, err);
    for (char *save, *line = strtok_r(warnings.data, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save))
        warn(d, line);
    gc_buf_free(&warnings);
    return rc;
}

void deploy_cluster_begin(deploy_cluster *d, const char *why)
{
    memset(d->report, 0, sizeof(*d->report));
    const gc_deploy_request *r = d->r;
    d->head_pool = r->head_pool ? r->head_pool : GC_PATHWAYS_HEAD_POOL;
    target t = {.bp = d->bp,
                .project = r->project ? r->project : d->bp->project,
                .cluster = r->cluster ? r->cluster : d->bp->cluster,
                .location = r->location ? r->location : d->bp->region};
    summarize(d->bp, &t, d->head_pool, d->report);
    d->report->plan = r->plan || !d->kube;
    if (!d->kube)
        d->report->not_connected = gc_xstrdup(why ? why : "no cluster");
    d->cache = json_object();
    d->located = json_object();
}

/* What the blueprint installs: found first (without the cluster, only what installing takes),
 * then, not under --plan, installed and waited for. */
int deploy_stage_installs(deploy_cluster *d, gc_error *err)
{
    int rc = deploy_install_check(d->kube, d->kube ? d->cache : NULL, d->bp, d->r, d->report, err);
    if (!rc && d->kube)
        report_installs(d);
    if (!rc && d->kube && !d->r->plan)
        rc = deploy_install_run(d->kube, d->r, d->ev, d->report, err);
    if (!rc && deploy_install_changed(d->report))
        json_object_clear(d->cache);
    return rc;
}

/* What the cluster serves, the node pools it has, and every object applied (with --plan:
 * dry-run applied; without the cluster: listed). */
int deploy_stage_objects(deploy_cluster *d, gc_error *err)
{
    gc_deploy_report *report = d->report;
    if (!d->kube) {
        int rc = build_objects(d, GC_KUEUE_VERSION, err);
        if (rc)
            return rc;
        report->kueue_api = gc_xstrdup(GC_KUEUE_GROUP "/" GC_KUEUE_VERSION);
        list_unapplied(report, d->objects);
        return 0;
    }
    int rc = check_prerequisites(d, d->cache, d->kueue_api, err);
    const char *api = d->kueue_api[0] ? d->kueue_api : GC_KUEUE_VERSION;
    if (!rc)
        rc = build_objects(d, api, err);
    size_t pool_count;
    gc_pool_spec *pools = deploy_blueprint_all_pools(d->bp, d->head_pool, &pool_count);
    const gc_deploy_request *r = d->r;
    target t = {.bp = d->bp,
                .project = r->project ? r->project : d->bp->project,
                .cluster = r->cluster ? r->cluster : d->bp->cluster,
                .location = r->location ? r->location : d->bp->region};
    if (!rc)
        rc = list_pools(d, pools, pool_count, &t, err);
    free(pools);
    if (rc || !json_array_size(d->objects))
        return rc;
    report->kueue_api = gc_xasprintf(GC_KUEUE_GROUP "/%s", api);
    if (d->kueue_api[0])
        return apply_objects(d, d->objects, r->plan, err);
    if (r->plan) {
        list_unapplied(report, d->objects);
        return 0;
    }
    return gc_fail(err, GC_EXIT_RUNTIME,
                   "the cluster does not serve Kueue (kueue.x-k8s.io) and it was not installed "
                   "(see above); the Kueue configuration was not applied");
}

/* Each ClusterQueue applied, until Kueue makes it Active (bounded). */
int deploy_stage_wait(deploy_cluster *d, gc_error *err)
{
    gc_deploy_report *report = d->report;
    for (size_t i = 0; i < report->object_count; i++) {
        gc_deploy_object *out = &report->objects[i];
        if (strcmp(out->kind, "ClusterQueue"))
            continue;
        deploy_object_ref ref = {0};
        int rc = deploy_locate(d->kube, d->located, json_array_get(d->objects, i), &ref, err);
        if (!rc)
            rc = check_queue_state(d, &ref, out, err);
        free(ref.path);
        if (rc)
            return rc;
    }
    return 0;
}

void deploy_cluster_end(deploy_cluster *d)
{
    json_decref(d->cache);
    json_decref(d->objects);
    json_decref(d->located);
    d->cache = d->objects = d->located = NULL;
}

void deploy_report_free(gc_deploy_report *report)
{
    free(report->blueprint);
    free(report->cluster);
    free(report->project);
    free(report->location);
    free(report->head_pool);
    for (size_t i = 0; i < report->unhandled_count; i++) {
        free(report->unhandled[i].id);
        free(report->unhandled[i].source);
    }
    free(report->unhandled);
    for (size_t i = 0; i < report->install_count; i++)
        deploy_install_free(&report->installs[i]);
    free(report->installs);
    for (size_t i = 0; i < report->pool_count; i++) {
        gc_deploy_pool *p = &report->pools[i];
        free(p->name);
        free(p->machine_type);
        free(p->size);
        free(p->create_command);
    }
    free(report->pools);
    free(report->kueue_api);
    free(report->kueue_version);
    free(report->not_connected);
    free(report->jobset_version);
    for (size_t i = 0; i < report->object_count; i++)
        object_free(&report->objects[i]);
    free(report->objects);
    gc_strings_free(&report->warnings);
    memset(report, 0, sizeof(*report));
}
