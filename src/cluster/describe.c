/*
 * What one cluster has: node pools (nodes grouped by GKE's node-pool label, with the accelerator
 * labels GKE sets on TPU and GPU nodes), Kueue's ClusterQueues and LocalQueues with quota and
 * usage as their status reports it, Workloads, and the JobSet and Kueue releases. Everything is
 * read in one batch; Kueue's older API version (v1beta1, Kueue up to v0.14) costs one more
 * (gc_kueue_read_all; the queue fields read here are the same in both).
 */
#include "gcluster/buf.h"
#include "gcluster/checked.h"
#include "gcluster/cluster.h"
#include "gcluster/json_scan.h"
#include "gcluster/kueue.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* Only what the report needs of each node: a few labels, readiness and the accelerators. */
static const char NODE_FIELDS[] =
    "{\"metadata\": {\"labels\": {\"cloud.google.com/gke-nodepool\": true,"
    "                           \"cloud.google.com/gke-tpu-accelerator\": true,"
    "                           \"cloud.google.com/gke-accelerator\": true,"
    "                           \"cloud.google.com/gke-tpu-topology\": true,"
    "                           \"node.kubernetes.io/instance-type\": true,"
    "                           \"topology.kubernetes.io/zone\": true}},"
    " \"status\": {\"allocatable\": {\"google.com/tpu\": true, \"nvidia.com/gpu\": true},"
    "             \"conditions\": [{\"type\": true, \"status\": true}]}}";

static char *dup_or_null(const char *s)
{
    return s ? gc_xstrdup(s) : NULL;
}

static long long count(const json_t *status, const char *key)
{
    return json_integer_value(json_object_get(status, key));
}

static int collect(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    json_array_append(ctx, item);
    return 0;
}

static void forget(void *ctx)
{
    json_array_clear(ctx);
}

static gc_cluster_pool *find_pool(gc_cluster_report *r, const char *name)
{
    for (size_t i = 0; i < r->pool_count; i++)
        if (!strcmp(r->pools[i].name, name))
            return &r->pools[i];
    r->pools = gc_xrealloc(r->pools, (r->pool_count + 1) * sizeof(*r->pools));
    gc_cluster_pool *p = &r->pools[r->pool_count++];
    memset(p, 0, sizeof(*p));
    p->name = gc_xstrdup(name);
    return p;
}

static long long chips(const json_t *node)
{
    const json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable");
    const char *tpu = gc_kube_string(alloc, "google.com/tpu"),
               *gpu = gc_kube_string(alloc, "nvidia.com/gpu");
    double v = gc_quantity_value(tpu ? tpu : gpu ? gpu : "0");
    return v > 0 ? gc_saturating_from_double(v) : 0;
}

static void add_node(gc_cluster_report *r, const json_t *node)
{
    const char *pool_name = gc_kube_field(node, "labels", "cloud.google.com/gke-nodepool");
    gc_cluster_pool *p = find_pool(r, pool_name ? pool_name : "(none)");
    const char *accel = gc_kube_field(node, "labels", "cloud.google.com/gke-tpu-accelerator");
    if (!accel)
        accel = gc_kube_field(node, "labels", "cloud.google.com/gke-accelerator");
    if (!p->machine_type)
        p->machine_type =
            dup_or_null(gc_kube_field(node, "labels", "node.kubernetes.io/instance-type"));
    if (!p->accelerator)
        p->accelerator = dup_or_null(accel);
    if (!p->topology)
        p->topology =
            dup_or_null(gc_kube_field(node, "labels", "cloud.google.com/gke-tpu-topology"));
    if (!p->zone)
        p->zone = dup_or_null(gc_kube_field(node, "labels", "topology.kubernetes.io/zone"));
    p->nodes++;
    r->nodes++;
    if (gc_kube_condition_true(node, "Ready")) {
        p->ready++;
        r->ready++;
    }
    p->chips = gc_saturating_add(p->chips, chips(node));
}

static int by_pool_name(const void *a, const void *b)
{
    return strcmp(((const gc_cluster_pool *)a)->name, ((const gc_cluster_pool *)b)->name);
}

/* The total of `resource` of `flavor` in a status list (flavorsReservation's shape). */
static const json_t *flavor_resource(const json_t *flavors, const char *flavor,
                                     const char *resource)
{
    size_t i, j;
    const json_t *f, *res;
    json_array_foreach(flavors, i, f)
    {
        if (!gc_kube_same(gc_kube_string(f, "name"), flavor))
            continue;
        json_array_foreach(json_object_get(f, "resources"), j, res)
        {
            if (gc_kube_same(gc_kube_string(res, "name"), resource))
                return res;
        }
    }
    return NULL;
}

static char *quantity_text(const json_t *q)
{
    if (json_is_string(q))
        return gc_xstrdup(json_string_value(q));
    if (json_is_integer(q))
        return gc_xasprintf("%lld", (long long)json_integer_value(q));
    return NULL;
}

static void add_quotas(gc_cluster_queue *q, const json_t *cq)
{
    const json_t *reserved = json_object_get(json_object_get(cq, "status"), "flavorsReservation");
    size_t g, f, r;
    const json_t *group, *flavor, *res;
    json_array_foreach(json_object_get(json_object_get(cq, "spec"), "resourceGroups"), g, group)
    {
        json_array_foreach(json_object_get(group, "flavors"), f, flavor)
        {
            json_array_foreach(json_object_get(flavor, "resources"), r, res)
            {
                const char *fname = gc_kube_string(flavor, "name"),
                           *rname = gc_kube_string(res, "name");
                if (!fname || !rname)
                    continue;
                q->quotas = gc_xrealloc(q->quotas, (q->quota_count + 1) * sizeof(*q->quotas));
                gc_cluster_quota *quota = &q->quotas[q->quota_count++];
                const json_t *used = flavor_resource(reserved, fname, rname);
                char *total = quantity_text(json_object_get(used, "total"));
                *quota = (gc_cluster_quota){
                    .flavor = gc_xstrdup(fname),
                    .resource = gc_xstrdup(rname),
                    .nominal = quantity_text(json_object_get(res, "nominalQuota")),
                    .reserved = total ? total : gc_xstrdup("0"),
                    .borrowed = quantity_text(json_object_get(used, "borrowed")),
                };
            }
        }
    }
}

static void add_cluster_queue(gc_cluster_report *r, const json_t *cq)
{
    r->cluster_queues =
        gc_xrealloc(r->cluster_queues, (r->cluster_queue_count + 1) * sizeof(*r->cluster_queues));
    gc_cluster_queue *q = &r->cluster_queues[r->cluster_queue_count++];
    memset(q, 0, sizeof(*q));
    const json_t *status = json_object_get(cq, "status");
    q->name = gc_xstrdup(gc_kube_field(cq, NULL, "name") ? gc_kube_field(cq, NULL, "name") : "");
    q->cohort = dup_or_null(gc_kube_string(json_object_get(cq, "spec"), "cohort"));
    if (!q->cohort) /* v1beta2 names it cohortName */
        q->cohort = dup_or_null(gc_kube_string(json_object_get(cq, "spec"), "cohortName"));
    q->pending = count(status, "pendingWorkloads");
    q->reserving = count(status, "reservingWorkloads");
    q->admitted = count(status, "admittedWorkloads");
    add_quotas(q, cq);
}

static void add_local_queue(gc_cluster_report *r, const json_t *lq)
{
    r->local_queues =
        gc_xrealloc(r->local_queues, (r->local_queue_count + 1) * sizeof(*r->local_queues));
    const json_t *status = json_object_get(lq, "status");
    r->local_queues[r->local_queue_count++] = (gc_local_queue){
        .ns = gc_xstrdup(gc_kube_field(lq, NULL, "namespace") ? gc_kube_field(lq, NULL, "namespace")
                                                              : ""),
        .name = gc_xstrdup(gc_kube_field(lq, NULL, "name") ? gc_kube_field(lq, NULL, "name") : ""),
        .cluster_queue = dup_or_null(gc_kube_string(json_object_get(lq, "spec"), "clusterQueue")),
        .pending = count(status, "pendingWorkloads"),
        .reserving = count(status, "reservingWorkloads"),
        .admitted = count(status, "admittedWorkloads"),
    };
}

/* Kueue's own order of a Workload's life: finished, evicted, admitted, quota reserved, else
 * pending in its queue. */
static const char *workload_state(const json_t *wl)
{
    if (gc_kube_condition_true(wl, "Finished"))
        return "finished";
    if (gc_kube_condition_true(wl, "Evicted"))
        return "evicted";
    if (gc_kube_condition_true(wl, "Admitted"))
        return "admitted";
    if (gc_kube_condition_true(wl, "QuotaReserved"))
        return "reserved";
    return "pending";
}

static void add_workload(gc_cluster_report *r, const json_t *wl)
{
    r->workloads = gc_xrealloc(r->workloads, (r->workload_count + 1) * sizeof(*r->workloads));
    const json_t *owner =
        json_array_get(json_object_get(json_object_get(wl, "metadata"), "ownerReferences"), 0);
    const json_t *admission = json_object_get(json_object_get(wl, "status"), "admission");
    r->workloads[r->workload_count++] = (gc_cluster_workload){
        .ns = gc_xstrdup(gc_kube_field(wl, NULL, "namespace") ? gc_kube_field(wl, NULL, "namespace")
                                                              : ""),
        .name = gc_xstrdup(gc_kube_field(wl, NULL, "name") ? gc_kube_field(wl, NULL, "name") : ""),
        .job = dup_or_null(gc_kube_string(owner, "name")),
        .queue = dup_or_null(gc_kube_string(json_object_get(wl, "spec"), "queueName")),
        .state = gc_xstrdup(workload_state(wl)),
        .cluster_queue = dup_or_null(gc_kube_string(admission, "clusterQueue")),
    };
}

/* The preferred version a discovery document (GET /apis/GROUP) names, or NULL. */
static char *served_version(const json_t *group)
{
    return dup_or_null(gc_kube_string(json_object_get(group, "preferredVersion"), "version"));
}

enum {
    READ_NODES,
    READ_CLUSTER_QUEUES,
    READ_LOCAL_QUEUES,
    READ_WORKLOADS,
    READ_KUEUE_DEPLOYMENT,
    READ_JOBSET_DEPLOYMENT,
    READ_KUEUE_GROUP,
    READ_JOBSET_GROUP,
    READ_COUNT,
};

typedef struct reads {
    gc_kube_read r[READ_COUNT];
    char *paths[READ_COUNT];
    json_t *items[READ_WORKLOADS + 1]; /* the lists' items */
    json_t *objects[READ_COUNT];       /* the gets' answers */
    gc_kube_list_options list_opts[READ_WORKLOADS + 1];
} reads;

static void set_reads(reads *b, json_t *node_fields)
{
    memset(b, 0, sizeof(*b));
    for (int i = READ_NODES; i <= READ_WORKLOADS; i++) {
        b->items[i] = json_array();
        b->list_opts[i].on_restart = forget;
    }
    b->list_opts[READ_NODES].fields = node_fields;
    b->paths[READ_NODES] = gc_kube_path(NULL, "v1", NULL, "nodes", NULL);
    b->r[READ_NODES] = (gc_kube_read){.path = b->paths[READ_NODES],
                                      .opts = &b->list_opts[READ_NODES],
                                      .on_item = collect,
                                      .ctx = b->items[READ_NODES]};
    /* Kueue's lists: their paths are gc_kueue_read_all's, at the version it finds. */
    for (int i = READ_CLUSTER_QUEUES; i <= READ_WORKLOADS; i++)
        b->r[i] = (gc_kube_read){.opts = &b->list_opts[i], .on_item = collect, .ctx = b->items[i]};
    b->paths[READ_KUEUE_DEPLOYMENT] =
        gc_kube_path("apps", "v1", GC_KUEUE_CONTROLLER_NS, "deployments", GC_KUEUE_CONTROLLER);
    b->paths[READ_JOBSET_DEPLOYMENT] =
        gc_kube_path("apps", "v1", GC_JOBSET_CONTROLLER_NS, "deployments", GC_JOBSET_CONTROLLER);
    b->paths[READ_KUEUE_GROUP] = gc_xstrdup("/apis/kueue.x-k8s.io");
    b->paths[READ_JOBSET_GROUP] = gc_xstrdup("/apis/jobset.x-k8s.io");
    for (int i = READ_KUEUE_DEPLOYMENT; i < READ_COUNT; i++)
        b->r[i] = (gc_kube_read){.path = b->paths[i], .object = &b->objects[i]};
}

static void free_reads(reads *b)
{
    for (int i = 0; i < READ_COUNT; i++) {
        free(b->paths[i]);
        json_decref(b->objects[i]);
        if (i <= READ_WORKLOADS)
            json_decref(b->items[i]);
    }
}

static bool active(int i, const gc_cluster_request *req)
{
    return !(i == READ_NODES && !req->pools) && !(i == READ_WORKLOADS && !req->workloads);
}

/* The reads of `which` (the lists) that must succeed; the Kueue lists may be 404 (no Kueue, or
 * only its older version). */
static int first_failure(const reads *b, const gc_cluster_request *req, gc_error *err)
{
    for (int i = READ_NODES; i <= READ_WORKLOADS; i++) {
        const gc_kube_read *r = &b->r[i];
        if (!active(i, req))
            continue;
        if (!r->rc || (i != READ_NODES && gc_kueue_not_served(r)))
            continue;
        *err = r->err;
        return r->rc;
    }
    return 0;
}

/* The reads the request asks for, in one batch; Kueue's at the version the cluster serves
 * (ClusterQueues first: whether they are found says which), unless the discovery of Kueue's
 * group says it is not installed. Returns that version, or NULL. */
static const char *run_batch(gc_kube *kube, reads *b, const gc_cluster_request *req)
{
    static const char *const resources[] = {[READ_CLUSTER_QUEUES] = "clusterqueues",
                                            [READ_LOCAL_QUEUES] = "localqueues",
                                            [READ_WORKLOADS] = "workloads"};
    gc_kube_read batch[READ_COUNT];
    size_t slot[READ_COUNT];
    gc_kueue_read kueue[3];
    size_t n = 0, k = 0;
    for (int i = 0; i < READ_COUNT; i++) {
        if (!active(i, req))
            continue;
        slot[i] = n;
        batch[n++] = b->r[i];
        if (i >= READ_CLUSTER_QUEUES && i <= READ_WORKLOADS)
            kueue[k++] =
                (gc_kueue_read){.index = slot[i], .resource = resources[i], .forget = forget};
    }
    const char *version = gc_kueue_read_all(kube, batch, n, kueue, k, &slot[READ_KUEUE_GROUP]);
    for (int i = 0; i < READ_COUNT; i++) {
        if (!active(i, req))
            continue;
        b->r[i].rc = batch[slot[i]].rc;
        b->r[i].err = batch[slot[i]].err;
    }
    gc_kueue_reads_free(kueue, k);
    return version;
}

static void fill_report(const reads *b, gc_cluster_report *out)
{
    size_t i;
    const json_t *item;
    json_array_foreach(b->items[READ_NODES], i, item) add_node(out, item);
    if (out->pool_count > 1)
        qsort(out->pools, out->pool_count, sizeof(*out->pools), by_pool_name);
    json_array_foreach(b->items[READ_CLUSTER_QUEUES], i, item) add_cluster_queue(out, item);
    json_array_foreach(b->items[READ_LOCAL_QUEUES], i, item) add_local_queue(out, item);
    json_array_foreach(b->items[READ_WORKLOADS], i, item) add_workload(out, item);
    out->kueue_version = gc_kueue_controller_release(b->objects[READ_KUEUE_DEPLOYMENT]);
    out->jobset_version = gc_kueue_controller_release(b->objects[READ_JOBSET_DEPLOYMENT]);
    out->jobset_api = served_version(b->objects[READ_JOBSET_GROUP]);
}

int gc_cluster_describe(gc_kube *kube, const gc_cluster_request *req, gc_cluster_report *out,
                        gc_error *err)
{
    memset(out, 0, sizeof(*out));
    json_t *node_fields = json_loads(NODE_FIELDS, 0, NULL);
    reads b;
    set_reads(&b, node_fields);
    const char *kueue = run_batch(kube, &b, req);
    int rc = first_failure(&b, req, err);
    if (!rc) {
        fill_report(&b, out);
        if (!b.r[READ_CLUSTER_QUEUES].rc)
            out->kueue_api = gc_xstrdup(kueue);
    }
    free_reads(&b);
    json_decref(node_fields);
    if (rc)
        gc_cluster_report_free(out);
    return rc;
}

void gc_cluster_report_free(gc_cluster_report *r)
{
    for (size_t i = 0; i < r->pool_count; i++) {
        gc_cluster_pool *p = &r->pools[i];
        free(p->name), free(p->machine_type), free(p->accelerator), free(p->topology);
        free(p->zone);
    }
    for (size_t i = 0; i < r->cluster_queue_count; i++) {
        gc_cluster_queue *q = &r->cluster_queues[i];
        for (size_t j = 0; j < q->quota_count; j++) {
            gc_cluster_quota *t = &q->quotas[j];
            free(t->flavor), free(t->resource), free(t->nominal), free(t->reserved);
            free(t->borrowed);
        }
        free(q->quotas), free(q->name), free(q->cohort);
    }
    for (size_t i = 0; i < r->local_queue_count; i++) {
        gc_local_queue *q = &r->local_queues[i];
        free(q->ns), free(q->name), free(q->cluster_queue);
    }
    for (size_t i = 0; i < r->workload_count; i++) {
        gc_cluster_workload *w = &r->workloads[i];
        free(w->ns), free(w->name), free(w->job), free(w->queue), free(w->state);
        free(w->cluster_queue);
    }
    free(r->pools), free(r->cluster_queues), free(r->local_queues), free(r->workloads);
    free(r->jobset_version), free(r->jobset_api), free(r->kueue_version), free(r->kueue_api);
    memset(r, 0, sizeof(*r));
}
