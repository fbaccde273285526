/*
 * What a submit needs to know about the cluster, in one round trip: the LocalQueues of the
 * namespace, the nodes' labels (metadata only), the ClusterQueues and, with --priority, the
 * PriorityClass, all requested at once. Only an older Kueue (v1beta1) or a user who may not
 * list ClusterQueues or PriorityClasses costs further requests.
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

/* --queue must exist; else the only LocalQueue of the namespace; else user-queue; else an
 * error that lists them. */
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

/* The first round trip: its lists and the answers not kept in cluster_facts. */
typedef struct first_round {
    json_t *local_queues;   /* current Kueue API */
    json_t *cluster_queues; /* all of them: a handful, and the chosen queue's is among them */
    json_t *priority_classes;
    char *priority_selector;
    gc_kube_list_options priority_options;
    gc_kube_read reads[4]; /* in the order of the indexes below */
    char *paths[4];
    size_t count;
} first_round;

enum { LOCAL_QUEUES, NODES, CLUSTER_QUEUES, PRIORITY_CLASS };

static void add_read(first_round *round, char *path, const gc_kube_list_options *opts,
                     gc_kube_item_fn on_item, void *ctx)
{
    round->paths[round->count] = path;
    round->reads[round->count++] =
        (gc_kube_read){.path = path, .opts = opts, .on_item = on_item, .ctx = ctx};
}

/* Everything that does not depend on another answer goes out at once: the namespace's
 * LocalQueues, the nodes' labels, the ClusterQueues and, with --priority, the PriorityClass. */
static void send_first_round(gc_kube *kube, const char *priority, const char *ns, cluster_facts *f,
                             first_round *round)
{
    memset(round, 0, sizeof(*round));
    round->local_queues = json_array();
    round->cluster_queues = json_array();
    round->priority_classes = json_array();
    add_read(round, gc_kube_path("kueue.x-k8s.io", "v1beta2", ns, "localqueues", NULL), NULL,
             collect_item, round->local_queues);
    add_read(round, gc_kube_path(NULL, "v1", NULL, "nodes", NULL), &node_list_options, on_node, f);
    add_read(round, gc_kube_path("kueue.x-k8s.io", "v1beta2", NULL, "clusterqueues", NULL), NULL,
             collect_item, round->cluster_queues);
    if (priority) {
        round->priority_selector = gc_xasprintf("metadata.name=%s", priority);
        round->priority_options.field_selector = round->priority_selector;
        add_read(round, gc_kube_path("scheduling.k8s.io", "v1", NULL, "priorityclasses", NULL),
                 &round->priority_options, collect_item, round->priority_classes);
    }
    gc_kube_read_all(kube, round->reads, round->count);
}

static void first_round_free(first_round *round)
{
    json_decref(round->local_queues);
    json_decref(round->cluster_queues);
    json_decref(round->priority_classes);
    free(round->priority_selector);
    for (size_t i = 0; i < round->count; i++)
        free(round->paths[i]);
}

/* LocalQueues and nodes must be known; an older Kueue (v1beta1) is asked again. */
static int take_first_round(gc_kube *kube, const char *ns, first_round *round, cluster_facts *f,
                            gc_error *err)
{
    gc_kube_read *queues = &round->reads[LOCAL_QUEUES], *nodes = &round->reads[NODES];
    int rc = take_local_queues("v1beta2", queues->rc, round->local_queues, f, &queues->err);
    if (rc)
        *err = queues->err;
    else if ((rc = nodes->rc))
        *err = nodes->err;
    else if (!f->kueue_version)
        rc = list_local_queues_v1beta1(kube, ns, f, err);
    return rc;
}

/* The chosen queue's ClusterQueue from the first round's list; asked for by name when that list
 * could not be had (an older Kueue, or no permission to list them). */
static int find_cluster_queue(gc_kube *kube, const first_round *round, cluster_facts *f,
                              gc_error *err)
{
    if (round->reads[CLUSTER_QUEUES].rc || strcmp(f->kueue_version, "v1beta2") != 0)
        return get_cluster_queue(kube, f, err);
    size_t i;
    json_t *q;
    json_array_foreach(round->cluster_queues, i, q)
    {
        const char *n = name_of(q);
        if (n && !strcmp(n, f->cluster_queue) && !f->cluster_queue_object)
            f->cluster_queue_object = json_incref(q);
    }
    return 0; /* not there: reported as a warning by the checks */
}

static int find_priority_class(gc_kube *kube, const char *priority, const first_round *round,
                               cluster_facts *f, gc_error *err)
{
    if (round->reads[PRIORITY_CLASS].rc)
        return get_priority_class(kube, priority, f, err);
    f->priority_found = json_array_size(round->priority_classes) > 0;
    return 0;
}

int job_cluster_facts_gather(gc_kube *kube, const gc_workload *w, cluster_facts *f, gc_error *err)
{
    memset(f, 0, sizeof(*f));
    const char *ns = gc_kube_namespace(kube);
    first_round round;
    send_first_round(kube, w->priority, ns, f, &round);
    int rc = take_first_round(kube, ns, &round, f, err);
    if (!rc && f->kueue_version)
        rc = choose_queue(w->queue_defaulted ? NULL : w->queue, ns, f, err);
    if (!rc && f->kueue_version)
        rc = find_cluster_queue(kube, &round, f, err);
    if (!rc && w->priority)
        rc = find_priority_class(kube, w->priority, &round, f, err);
    first_round_free(&round);
    return rc;
}

void job_cluster_facts_shapes(const cluster_facts *f, gc_node_shape *out, gc_cluster_shapes *shapes)
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

int job_cluster_facts_pool_nodes(const cluster_facts *f, const char *pool)
{
    int n = 0;
    for (size_t i = 0; i < f->shape_count; i++)
        if (!strcmp(f->shapes[i].node_pool, pool))
            n += f->shapes[i].count;
    return n;
}

void job_cluster_facts_free(cluster_facts *f)
{
    json_decref(f->local_queues);
    json_decref(f->cluster_queue_object);
    free(f->shapes);
    memset(f, 0, sizeof(*f));
}
