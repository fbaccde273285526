/*
 * What a submit needs to know about the cluster, in one round trip: the LocalQueues of the
 * namespace, the nodes' labels (metadata only), the ClusterQueues, the ResourceFlavors and, with
 * --priority, the PriorityClass, all requested at once. An older Kueue (v1beta1) costs one more
 * round trip (its LocalQueues, ClusterQueues and ResourceFlavors, together); a user who may not
 * list ClusterQueues or PriorityClasses costs a request for the one that matters.
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

/* The Kueue lists of one API version; the answers not kept in cluster_facts. */
typedef struct kueue_lists {
    json_t *local_queues;
    json_t *cluster_queues; /* all of them: a handful, and the chosen queue's is among them */
    json_t *flavors;
} kueue_lists;

enum { LOCAL_QUEUES, CLUSTER_QUEUES, FLAVORS, KUEUE_READS };

static void kueue_lists_init(kueue_lists *lists)
{
    lists->local_queues = json_array();
    lists->cluster_queues = json_array();
    lists->flavors = json_array();
}

static void kueue_lists_free(kueue_lists *lists)
{
    json_decref(lists->local_queues);
    json_decref(lists->cluster_queues);
    json_decref(lists->flavors);
}

/* The three lists of `version` as reads of one batch, at reads[0..KUEUE_READS). */
static void add_kueue_reads(gc_kube_read *reads, char **paths, const char *version, const char *ns,
                            kueue_lists *lists)
{
    paths[LOCAL_QUEUES] = gc_kube_path("kueue.x-k8s.io", version, ns, "localqueues", NULL);
    paths[CLUSTER_QUEUES] = gc_kube_path("kueue.x-k8s.io", version, NULL, "clusterqueues", NULL);
    paths[FLAVORS] = gc_kube_path("kueue.x-k8s.io", version, NULL, "resourceflavors", NULL);
    json_t *into[KUEUE_READS] = {lists->local_queues, lists->cluster_queues, lists->flavors};
    for (int i = 0; i < KUEUE_READS; i++)
        reads[i] = (gc_kube_read){.path = paths[i], .on_item = collect_item, .ctx = into[i]};
}

/* The ResourceFlavors, when they could be listed (else NULL: the flavor checks are skipped). */
static void take_flavors(const gc_kube_read *read, const kueue_lists *lists, cluster_facts *f)
{
    if (!read->rc && f->kueue_version)
        f->flavors = json_incref(lists->flavors);
}

/* Lists Kueue's objects with the older API version, after the current one was not found. */
static int list_kueue_v1beta1(gc_kube *kube, const char *ns, cluster_facts *f, kueue_lists *lists,
                              gc_kube_read *reads, gc_error *err)
{
    char *paths[KUEUE_READS];
    kueue_lists_free(lists);
    kueue_lists_init(lists);
    add_kueue_reads(reads, paths, "v1beta1", ns, lists);
    gc_kube_read_all(kube, reads, KUEUE_READS);
    int rc = take_local_queues("v1beta1", reads[LOCAL_QUEUES].rc, lists->local_queues, f,
                               &reads[LOCAL_QUEUES].err);
    if (rc)
        *err = reads[LOCAL_QUEUES].err;
    take_flavors(&reads[FLAVORS], lists, f);
    for (int i = 0; i < KUEUE_READS; i++)
        free(paths[i]);
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
        const json_t *q = f->local_queue = find_local_queue(f, chosen);
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
    if (rc && (err->http_status == 404 || err->http_status == 403)) {
        f->cluster_queue_forbidden = err->http_status == 403;
        gc_error_clear(err);
        return 0; /* missing: refused by the checks; forbidden: they say what was not checked */
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

/* The first round trip: Kueue's lists at the current API version, the nodes and, with
 * --priority, the PriorityClass. */
typedef struct first_round {
    kueue_lists kueue;
    json_t *priority_classes;
    char *priority_selector;
    gc_kube_list_options priority_options;
    gc_kube_read reads[KUEUE_READS + 2]; /* Kueue's, then NODES and PRIORITY_CLASS */
    char *paths[KUEUE_READS + 2];
    size_t count;
} first_round;

enum { NODES = KUEUE_READS, PRIORITY_CLASS };

/* Everything that does not depend on another answer goes out at once. */
static void send_first_round(gc_kube *kube, const char *priority, const char *ns, cluster_facts *f,
                             first_round *round)
{
    memset(round, 0, sizeof(*round));
    kueue_lists_init(&round->kueue);
    round->priority_classes = json_array();
    add_kueue_reads(round->reads, round->paths, "v1beta2", ns, &round->kueue);
    round->paths[NODES] = gc_kube_path(NULL, "v1", NULL, "nodes", NULL);
    round->reads[NODES] = (gc_kube_read){
        .path = round->paths[NODES], .opts = &node_list_options, .on_item = on_node, .ctx = f};
    round->count = NODES + 1;
    if (priority) {
        round->priority_selector = gc_xasprintf("metadata.name=%s", priority);
        round->priority_options.field_selector = round->priority_selector;
        round->paths[PRIORITY_CLASS] =
            gc_kube_path("scheduling.k8s.io", "v1", NULL, "priorityclasses", NULL);
        round->reads[PRIORITY_CLASS] = (gc_kube_read){.path = round->paths[PRIORITY_CLASS],
                                                      .opts = &round->priority_options,
                                                      .on_item = collect_item,
                                                      .ctx = round->priority_classes};
        round->count++;
    }
    gc_kube_read_all(kube, round->reads, round->count);
}

static void first_round_free(first_round *round)
{
    kueue_lists_free(&round->kueue);
    json_decref(round->priority_classes);
    free(round->priority_selector);
    for (size_t i = 0; i < round->count; i++)
        free(round->paths[i]);
}

/* LocalQueues and nodes must be known; an older Kueue (v1beta1) is asked again, its lists then
 * taking the place of the first round's. */
static int take_first_round(gc_kube *kube, const char *ns, first_round *round, cluster_facts *f,
                            gc_error *err)
{
    gc_kube_read *queues = &round->reads[LOCAL_QUEUES], *nodes = &round->reads[NODES];
    int rc = take_local_queues("v1beta2", queues->rc, round->kueue.local_queues, f, &queues->err);
    if (rc)
        *err = queues->err;
    else if ((rc = nodes->rc))
        *err = nodes->err;
    else if (!f->kueue_version)
        rc = list_kueue_v1beta1(kube, ns, f, &round->kueue, round->reads, err);
    else
        take_flavors(&round->reads[FLAVORS], &round->kueue, f);
    return rc;
}

/* The chosen queue's ClusterQueue from the list; asked for by name when that list could not be
 * had (no permission to list them). */
static int find_cluster_queue(gc_kube *kube, const first_round *round, cluster_facts *f,
                              gc_error *err)
{
    if (round->reads[CLUSTER_QUEUES].rc)
        return get_cluster_queue(kube, f, err);
    size_t i;
    json_t *q;
    json_array_foreach(round->kueue.cluster_queues, i, q)
    {
        const char *n = name_of(q);
        if (n && !strcmp(n, f->cluster_queue) && !f->cluster_queue_object)
            f->cluster_queue_object = json_incref(q);
    }
    return 0; /* not there: refused by the checks */
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
    json_decref(f->flavors);
    free(f->shapes);
    memset(f, 0, sizeof(*f));
}
