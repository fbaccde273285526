/*
 * What a submit needs to know about the cluster, gathered in as few round trips as possible:
 * the LocalQueues of the namespace and the nodes' labels (two lists sent together, the nodes
 * metadata-only), then the chosen queue's ClusterQueue (one get) and, with --priority, the
 * PriorityClass (one get).
 */
#include "job/cluster_facts.h"

#include "gcluster/buf.h"
#include "gcluster/kube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE_POOL_LABEL "cloud.google.com/gke-nodepool"

static const char *label(const json_t *object, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(object, "metadata"), "labels"), key));
}

static const char *name_of(const json_t *object)
{
    return json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
}

static int collect_item(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    json_array_append(ctx, item);
    return 0;
}

/* Takes the outcome of a LocalQueue list at `version`: a 404 means that version is not served
 * (returns 0 with f->kueue_version still NULL, so the caller tries the next one). */
static int take_local_queues(const char *version, int rc, json_t *items, cluster_facts *f,
                             gc_error *err)
{
    if (!rc) {
        f->kueue_version = version;
        f->local_queues = json_incref(items);
        return 0;
    }
    if (err->http_status != 404)
        return rc;
    gc_error_clear(err);
    return 0;
}

/* Lists Kueue LocalQueues with the older API version, after the current one was not found. */
static int list_local_queues_v1beta1(gc_kube *kube, const char *ns, cluster_facts *f, gc_error *err)
{
    char *path = gc_kube_path("kueue.x-k8s.io", "v1beta1", ns, "localqueues", NULL);
    json_t *items = json_array();
    int rc = gc_kube_list(kube, path, NULL, collect_item, items, NULL, err);
    free(path);
    rc = take_local_queues("v1beta1", rc, items, f, err);
    json_decref(items);
    return rc; /* f->kueue_version NULL: Kueue is not installed */
}

static const json_t *find_local_queue(const cluster_facts *f, const char *name)
{
    size_t i;
    json_t *q;
    json_array_foreach(f->local_queues, i, q)
    {
        const char *n = name_of(q);
        if (n && !strcmp(n, name))
            return q;
    }
    return NULL;
}

static char *queue_names(const cluster_facts *f)
{
    gc_buf b;
    gc_buf_init(&b);
    size_t i;
    json_t *q;
    json_array_foreach(f->local_queues, i, q)
        gc_buf_printf(&b, "%s%s", i ? ", " : "", name_of(q) ? name_of(q) : "?");
    return gc_buf_detach(&b);
}

/* SPEC §3: --queue must exist; else the only LocalQueue; else user-queue; else an error. */
static int choose_queue(const char *requested, const char *ns, cluster_facts *f, gc_error *err)
{
    size_t count = json_array_size(f->local_queues);
    const char *chosen = NULL;
    if (requested && find_local_queue(f, requested))
        chosen = requested;
    else if (!requested && count == 1)
        chosen = name_of(json_array_get(f->local_queues, 0));
    else if (!requested && find_local_queue(f, "user-queue"))
        chosen = "user-queue";
    if (chosen) {
        snprintf(f->queue, sizeof(f->queue), "%s", chosen);
        const json_t *q = find_local_queue(f, chosen);
        const char *cq =
            json_string_value(json_object_get(json_object_get(q, "spec"), "clusterQueue"));
        snprintf(f->cluster_queue, sizeof(f->cluster_queue), "%s", cq ? cq : "");
        return 0;
    }
    char *names = queue_names(f);
    int rc;
    if (requested)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--queue %s: no such LocalQueue in namespace %s (it has: %s); create it with "
                     "gcluster deploy, or pick one of those",
                     requested, ns, count ? names : "none");
    else if (count == 0)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "namespace %s has no Kueue LocalQueue to submit to: run gcluster deploy "
                     "BLUEPRINT to create one (user-queue), or pass --queue",
                     ns);
    else
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "namespace %s has several LocalQueues (%s) and none is named user-queue: "
                     "choose one with --queue",
                     ns, names);
    free(names);
    return rc;
}

static int get_cluster_queue(gc_kube *kube, cluster_facts *f, gc_error *err)
{
    if (!f->cluster_queue[0])
        return 0;
    char *path =
        gc_kube_path("kueue.x-k8s.io", f->kueue_version, NULL, "clusterqueues", f->cluster_queue);
    int rc = gc_kube_get(kube, path, NULL, &f->cluster_queue_object, err);
    free(path);
    if (rc && err->http_status == 404) {
        gc_error_clear(err);
        return 0; /* reported as a warning by the checks */
    }
    return rc;
}

static void add_node(json_t *node, cluster_facts *f)
{
    const char *pool = label(node, NODE_POOL_LABEL);
    const char *machine = label(node, "node.kubernetes.io/instance-type");
    const char *accelerator = label(node, "cloud.google.com/gke-tpu-accelerator");
    const char *topology = label(node, "cloud.google.com/gke-tpu-topology");
    if (!accelerator)
        accelerator = label(node, "cloud.google.com/gke-accelerator");
    for (size_t i = 0; i < f->shape_count; i++) {
        node_shape *s = &f->shapes[i];
        if (!strcmp(s->machine_type, machine ? machine : "") &&
            !strcmp(s->accelerator, accelerator ? accelerator : "") &&
            !strcmp(s->topology, topology ? topology : "") &&
            !strcmp(s->node_pool, pool ? pool : "")) {
            s->count++;
            return;
        }
    }
    f->shapes = gc_xrealloc(f->shapes, (f->shape_count + 1) * sizeof(*f->shapes));
    node_shape *s = &f->shapes[f->shape_count++];
    snprintf(s->machine_type, sizeof(s->machine_type), "%s", machine ? machine : "");
    snprintf(s->accelerator, sizeof(s->accelerator), "%s", accelerator ? accelerator : "");
    snprintf(s->topology, sizeof(s->topology), "%s", topology ? topology : "");
    snprintf(s->node_pool, sizeof(s->node_pool), "%s", pool ? pool : "");
    s->count = 1;
}

static int on_node(json_t *node, void *ctx, gc_error *err)
{
    (void)err;
    add_node(node, ctx);
    return 0;
}

/* Only the labels matter, so ask for metadata: a fraction of the bytes of full Nodes. */
static const gc_kube_list_options node_list_options = {
    .label_selector = NODE_POOL_LABEL,
    .page_size = 500,
    .accept = GC_KUBE_ACCEPT_METADATA,
};

/* The LocalQueues (current Kueue API) and the nodes do not depend on each other: one round
 * trip for both. */
static int list_queues_and_nodes(gc_kube *kube, const char *ns, cluster_facts *f, gc_error *err)
{
    char *queues_path = gc_kube_path("kueue.x-k8s.io", "v1beta2", ns, "localqueues", NULL);
    char *nodes_path = gc_kube_path(NULL, "v1", NULL, "nodes", NULL);
    json_t *queues = json_array();
    gc_kube_list_call calls[] = {
        {.path = queues_path, .on_item = collect_item, .ctx = queues},
        {.path = nodes_path, .opts = &node_list_options, .on_item = on_node, .ctx = f},
    };
    gc_kube_list_all(kube, calls, 2);
    int rc = take_local_queues("v1beta2", calls[0].rc, queues, f, &calls[0].err);
    if (rc)
        *err = calls[0].err;
    else if ((rc = calls[1].rc))
        *err = calls[1].err;
    else if (!f->kueue_version)
        rc = list_local_queues_v1beta1(kube, ns, f, err);
    json_decref(queues);
    free(queues_path);
    free(nodes_path);
    return rc;
}

static int get_priority_class(gc_kube *kube, const char *priority, cluster_facts *f, gc_error *err)
{
    char *path = gc_kube_path("scheduling.k8s.io", "v1", NULL, "priorityclasses", priority);
    json_t *pc = NULL;
    int rc = gc_kube_get(kube, path, NULL, &pc, err);
    free(path);
    json_decref(pc);
    f->priority_found = rc == 0;
    if (rc && err->http_status == 404) {
        gc_error_clear(err);
        return 0;
    }
    return rc;
}

int cluster_facts_gather(gc_kube *kube, const gc_submit_request *r, cluster_facts *f, gc_error *err)
{
    memset(f, 0, sizeof(*f));
    const char *ns = gc_kube_namespace(kube);
    int rc = list_queues_and_nodes(kube, ns, f, err);
    if (!rc && f->kueue_version)
        rc = choose_queue(r->queue, ns, f, err);
    if (!rc && f->kueue_version)
        rc = get_cluster_queue(kube, f, err);
    if (!rc && r->priority)
        rc = get_priority_class(kube, r->priority, f, err);
    return rc;
}

void cluster_facts_shapes(const cluster_facts *f, gc_node_shape *out, gc_cluster_shapes *shapes)
{
    for (size_t i = 0; i < f->shape_count; i++) {
        out[i].machine_type = f->shapes[i].machine_type;
        out[i].accelerator = f->shapes[i].accelerator;
        out[i].topology = f->shapes[i].topology[0] ? f->shapes[i].topology : NULL;
        out[i].node_pool = f->shapes[i].node_pool;
        out[i].count = f->shapes[i].count;
    }
    shapes->shapes = out;
    shapes->count = f->shape_count;
}

int cluster_facts_pool_nodes(const cluster_facts *f, const char *pool)
{
    int n = 0;
    for (size_t i = 0; i < f->shape_count; i++)
        if (!strcmp(f->shapes[i].node_pool, pool))
            n += f->shapes[i].count;
    return n;
}

void cluster_facts_free(cluster_facts *f)
{
    json_decref(f->local_queues);
    json_decref(f->cluster_queue_object);
    free(f->shapes);
    memset(f, 0, sizeof(*f));
}
