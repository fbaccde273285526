/*
 * What a submit needs to know about the cluster, in one round trip: the LocalQueues of the
 * namespace, the ClusterQueues, the ResourceFlavors, the nodes the job needs (by label selector,
 * metadata only, limited to what the job needs: never the whole cluster) and, with --priority,
 * the PriorityClass, the namespace, what multi-tier checkpointing and dynamic slicing need and
 * the StorageClasses of the profile= gateways and the gateways themselves, each only when a check
 * declares it, all requested at once. An older Kueue (v1beta1) costs one more round trip (its
 * reads, together: gc_kueue_read_all); a user who may not list ClusterQueues or PriorityClasses
 * costs a request for the one that matters; a flavor pinning pods to a node pool not read yet costs
 * a read of one of its nodes.
 */
#include "submit/cluster_facts.h"

#include "gcluster/buf.h"
#include "gcluster/kube.h"
#include "gcluster/kueue.h"
#include "gcluster/submit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NODE_POOL_LABEL   "cloud.google.com/gke-nodepool"
#define ACCELERATOR_LABEL "cloud.google.com/gke-tpu-accelerator"
#define TOPOLOGY_LABEL    "cloud.google.com/gke-tpu-topology"

static int collect_item(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    json_array_append(ctx, item);
    return 0;
}

/* Kueue's lists; the answers not kept in cluster_facts. */
typedef struct kueue_lists {
    json_t *local_queues;
    json_t *cluster_queues; /* all of them: a handful, and the chosen queue's is among them */
    json_t *flavors;
} kueue_lists;

static void forget_items(void *ctx)
{
    json_array_clear(ctx);
}

/* The ResourceFlavors, when they could be listed (else NULL: the flavor checks are skipped). */
static void take_flavors(const gc_kube_read *read, const kueue_lists *lists, cluster_facts *f)
{
    if (!read->rc && f->kueue_version)
        f->flavors = json_incref(lists->flavors);
}

static const json_t *find_local_queue(const cluster_facts *f, const char *name)
{
    size_t i;
    json_t *q;
    json_array_foreach(f->local_queues, i, q)
    {
        const char *n = gc_kube_field(q, NULL, "name");
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
        gc_buf_printf(&b, "%s%s", i ? ", " : "",
                      gc_kube_field(q, NULL, "name") ? gc_kube_field(q, NULL, "name") : "?");
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
        chosen = gc_kube_field(json_array_get(f->local_queues, 0), NULL, "name");
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
    char *path = gc_kueue_path(f->kueue_version, NULL, "clusterqueues", f->cluster_queue);
    int rc = gc_kube_get(kube, path, NULL, &f->cluster_queue_object, err);
    free(path);
    if (rc && (err->http_status == 404 || err->http_status == 403)) {
        f->cluster_queue_forbidden = err->http_status == 403;
        gc_error_clear(err);
        return 0; /* missing: refused by the checks; forbidden: they say what was not checked */
    }
    return rc;
}

static node_shape *find_shape(cluster_facts *f, const char *machine, const char *accelerator,
                              const char *topology, const char *pool)
{
    for (size_t i = 0; i < f->shape_count; i++) {
        node_shape *s = &f->shapes[i];
        if (!strcmp(s->machine_type, machine) && !strcmp(s->accelerator, accelerator) &&
            !strcmp(s->topology, topology) && !strcmp(s->node_pool, pool))
            return s;
    }
    return NULL;
}

static void add_node(json_t *node, cluster_facts *f)
{
    const char *pool = gc_kube_field(node, "labels", NODE_POOL_LABEL);
    const char *machine = gc_kube_field(node, "labels", "node.kubernetes.io/instance-type");
    const char *accelerator = gc_kube_field(node, "labels", ACCELERATOR_LABEL);
    const char *topology = gc_kube_field(node, "labels", TOPOLOGY_LABEL);
    if (!accelerator)
        accelerator = gc_kube_field(node, "labels", "cloud.google.com/gke-accelerator");
    pool = pool ? pool : "";
    machine = machine ? machine : "";
    accelerator = accelerator ? accelerator : "";
    topology = topology ? topology : "";
    node_shape *s = find_shape(f, machine, accelerator, topology, pool);
    if (s) {
        s->count++;
        return;
    }
    f->shapes = gc_xrealloc(f->shapes, (f->shape_count + 1) * sizeof(*f->shapes));
    s = &f->shapes[f->shape_count++];
    snprintf(s->machine_type, sizeof(s->machine_type), "%s", machine);
    snprintf(s->accelerator, sizeof(s->accelerator), "%s", accelerator);
    snprintf(s->topology, sizeof(s->topology), "%s", topology);
    snprintf(s->node_pool, sizeof(s->node_pool), "%s", pool);
    s->count = 1;
}

/* One targeted read of nodes: a label selector names the shape or the pool, only metadata comes
 * back (the labels are all that is used), and it ends once it has seen what it needs, so its
 * cost follows the job, not the cluster. */
typedef struct node_read {
    char selector[256];
    gc_kube_list_options opts;
    cluster_facts *f;
    int hosts_wanted; /* end after this many nodes ... (0: read them all) */
    int pools_wanted; /* ... spread over at least this many pools */
    int hosts;
    gc_strings pools;
} node_read;

static void node_read_init(node_read *r, cluster_facts *f, int hosts_wanted, int pools_wanted)
{
    memset(r, 0, sizeof(*r));
    r->f = f;
    r->hosts_wanted = hosts_wanted;
    r->pools_wanted = pools_wanted;
    /* A page as large as what is wanted: the usual answer is a single page. */
    r->opts = (gc_kube_list_options){
        .label_selector = r->selector,
        .page_size = hosts_wanted > 0 && hosts_wanted < 500 ? hosts_wanted : 500,
        .accept = GC_KUBE_ACCEPT_METADATA};
}

static bool has_string(const gc_strings *list, const char *s)
{
    for (size_t i = 0; i < list->count; i++)
        if (!strcmp(list->items[i], s))
            return true;
    return false;
}

static int on_node(json_t *node, void *ctx, gc_error *err)
{
    (void)err;
    node_read *r = ctx;
    add_node(node, r->f);
    const char *pool = gc_kube_field(node, "labels", NODE_POOL_LABEL);
    if (pool && !has_string(&r->pools, pool))
        gc_strings_push(&r->pools, pool);
    r->hosts++;
    if (r->hosts_wanted > 0 && r->hosts >= r->hosts_wanted &&
        r->pools.count >= (size_t)r->pools_wanted)
        return GC_KUBE_STOP;
    return 0;
}

static gc_kube_read node_read_batch_entry(node_read *r, const char *nodes_path)
{
    return (gc_kube_read){.path = nodes_path, .opts = &r->opts, .on_item = on_node, .ctx = r};
}

/* A node pool read by name: one node tells its shape (a pool's nodes are all alike), none that it
 * has no nodes now. */
static void pool_read_init(node_read *r, cluster_facts *f, const char *pool)
{
    node_read_init(r, f, 1, 1);
    snprintf(r->selector, sizeof(r->selector), NODE_POOL_LABEL "=%s", pool);
    gc_strings_push(&f->pools_read, pool);
}

/* The accelerator label of a compute type only the nodes can finish (a bare family such as
 * tpu7x, or a TPU machine type), or NULL when the catalog does not tell it. */
static const char *pending_accelerator(const char *type)
{
    const gc_tpu_machine *m = gc_catalog_tpu_machine(type);
    if (m)
        return m->family->gke_accelerator;
    size_t n;
    const gc_tpu_family *families = gc_catalog_tpu_families(&n);
    for (size_t i = 0; i < n; i++)
        if (!strcasecmp(type, families[i].name) ||
            (families[i].alias && !strcasecmp(type, families[i].alias)))
            return families[i].gke_accelerator;
    return NULL;
}

/* The workers' nodes: of their accelerator and topology, as many as the job needs hosts (and
 * pools, one per slice); of their accelerator, all of them, when the slice shape is for the
 * nodes to tell. Only TPU jobs are checked against the nodes. Returns whether a read is needed. */
static bool worker_read_init(node_read *r, cluster_facts *f, const gc_submit_plan *plan)
{
    const gc_workload *w = &plan->workload;
    if (plan->compute.pending) {
        const char *accelerator = pending_accelerator(plan->compute.type);
        node_read_init(r, f, 0, 0);
        if (accelerator)
            snprintf(r->selector, sizeof(r->selector), ACCELERATOR_LABEL "=%s", accelerator);
        else
            snprintf(r->selector, sizeof(r->selector), ACCELERATOR_LABEL);
        return true;
    }
    if (w->compute.kind != GC_ACCEL_TPU)
        return false;
    /* A dynamic slice is formed from any of the accelerator's blocks, whatever their pool's
     * topology label says, and several slices may share one pool. */
    if (w->dynamic_slicing) {
        node_read_init(r, f, w->compute.vms_per_slice * w->num_slices, 1);
        snprintf(r->selector, sizeof(r->selector), ACCELERATOR_LABEL "=%s", w->compute.accelerator);
        return true;
    }
    node_read_init(r, f, w->compute.vms_per_slice * w->num_slices, w->num_slices);
    snprintf(r->selector, sizeof(r->selector), ACCELERATOR_LABEL "=%s," TOPOLOGY_LABEL "=%s",
             w->compute.accelerator, w->compute.topology);
    return true;
}

/* The nodes of a submit: the workers' and the head pool's (the one given, or the two it may be
 * defaulted to). At most three reads. */
typedef struct node_reads {
    node_read reads[3];
    size_t count;
} node_reads;

static void node_reads_init(node_reads *n, cluster_facts *f, const gc_submit_plan *plan)
{
    const gc_workload *w = &plan->workload;
    n->count = 0;
    if (worker_read_init(&n->reads[n->count], f, plan))
        n->count++;
    if (!w->pathways)
        return;
    if (!w->head_pool_defaulted) {
        pool_read_init(&n->reads[n->count++], f, w->head_pool);
        return;
    }
    pool_read_init(&n->reads[n->count++], f, "cpu-np");
    pool_read_init(&n->reads[n->count++], f, "pathways-np");
}

static void node_reads_free(node_reads *n)
{
    for (size_t i = 0; i < n->count; i++)
        gc_strings_free(&n->reads[i].pools);
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

/* Everything the first round trip reads: at most Kueue's three lists and two feature lists,
 * three node reads, the PriorityClass, the namespace, the three feature reads outside Kueue,
 * JobSet's API group and the StorageClasses; and a get of each gateway object. */
#define FIRST_ROUND_READS (14 + SUBMIT_STORAGE_CLASSES)

typedef struct first_round {
    kueue_lists kueue;
    node_reads nodes;
    json_t *priority_classes;
    char *priority_selector;
    gc_kube_list_options priority_options;
    json_t *target_namespace;
    json_t *jobset_group;
    gc_kube_read *reads;
    char **paths; /* those not Kueue's (gc_kueue_read owns those) */
    size_t capacity;
    gc_kueue_read kueue_reads[5];
    size_t kueue_count;
    size_t local_queues, cluster_queues, flavors; /* their indexes in reads (SUBMIT_READ_QUEUES) */
    size_t priority;                              /* the PriorityClass's (SUBMIT_READ_PRIORITY) */
    size_t target;                                /* the namespace's (SUBMIT_READ_NAMESPACE) */
    size_t jobset_api;                            /* SUBMIT_READ_JOBSET_API's */
    size_t feature[FACT_READS];                   /* each feature read's */
    size_t storage_class[SUBMIT_STORAGE_CLASSES]; /* each StorageClass's */
    size_t gateways; /* the first gateway object's (SUBMIT_READ_GATEWAYS), the others follow */
    size_t count;
} first_round;

static size_t add_read(first_round *round, char *path, gc_kube_read read)
{
    size_t i = round->count++;
    round->paths[i] = path;
    if (path)
        read.path = path;
    round->reads[i] = read;
    return i;
}

/* A read of Kueue `resource` (a list into `items`, or with `object` a get), at the version
 * gc_kueue_read_all finds. */
static size_t add_kueue_read(first_round *round, const char *ns, const char *resource,
                             json_t *items)
{
    size_t i =
        add_read(round, NULL, (gc_kube_read){.on_item = items ? collect_item : NULL, .ctx = items});
    round->kueue_reads[round->kueue_count++] = (gc_kueue_read){
        .index = i, .ns = ns, .resource = resource, .forget = items ? forget_items : NULL};
    return i;
}

static size_t add_list_read(first_round *round, char *path, json_t *items)
{
    return add_read(round, path, (gc_kube_read){.on_item = collect_item, .ctx = items});
}

/* Multi-tier checkpointing's CRD, its configurations and CSI driver; and dynamic slicing's
 * Kueue Topologies and AdmissionChecks. */
#define MTC_CRD        SUBMIT_MTC_CRD
#define MTC_CSI_DRIVER SUBMIT_MTC_CSI_DRIVER

static void add_feature_reads(first_round *round, unsigned reads, cluster_facts *f)
{
    fact_read *r = f->features;
    if (reads & SUBMIT_READ_MTC) {
        r[FACT_MTC_CONFIGS].value = json_array();
        round->feature[FACT_MTC_CRD] = add_read(
            round,
            gc_kube_path("apiextensions.k8s.io", "v1", NULL, "customresourcedefinitions", MTC_CRD),
            (gc_kube_read){.object = &r[FACT_MTC_CRD].value});
        round->feature[FACT_MTC_CONFIGS] = add_list_read(
            round,
            gc_kube_path("checkpointing.gke.io", "v1", NULL, "checkpointconfigurations", NULL),
            r[FACT_MTC_CONFIGS].value);
        round->feature[FACT_MTC_DRIVER] = add_read(
            round, gc_kube_path("storage.k8s.io", "v1", NULL, "csidrivers", MTC_CSI_DRIVER),
            (gc_kube_read){.object = &r[FACT_MTC_DRIVER].value});
        r[FACT_MTC_CRD].asked = r[FACT_MTC_CONFIGS].asked = r[FACT_MTC_DRIVER].asked = true;
    }
    if (reads & SUBMIT_READ_SLICING) {
        r[FACT_TOPOLOGIES].value = json_array();
        r[FACT_ADMISSION_CHECKS].value = json_array();
        round->feature[FACT_TOPOLOGIES] =
            add_kueue_read(round, NULL, "topologies", r[FACT_TOPOLOGIES].value);
        round->feature[FACT_ADMISSION_CHECKS] =
            add_kueue_read(round, NULL, "admissionchecks", r[FACT_ADMISSION_CHECKS].value);
        r[FACT_TOPOLOGIES].asked = r[FACT_ADMISSION_CHECKS].asked = true;
    }
}

static bool is_volume(const json_t *gateway)
{
    const char *kind = gc_kube_string(gateway, "kind");
    return kind && !strcmp(kind, "PersistentVolume");
}

/* The StorageClass a gateway volume names (a claim names it too, and is bound to the volume). */
static const char *gateway_storage_class(const json_t *gateway)
{
    if (!is_volume(gateway))
        return NULL;
    return gc_kube_string(json_object_get(gateway, "spec"), "storageClassName");
}

static storage_class_read *find_storage_class(const cluster_facts *f, const char *name)
{
    for (size_t i = 0; i < f->storage_class_count; i++)
        if (!strcmp(f->storage_classes[i].name, name))
            return (storage_class_read *)&f->storage_classes[i];
    return NULL;
}

/* A get of each StorageClass the gateway volumes name, once each. */
static void add_storage_class_reads(first_round *round, const gc_submit_plan *plan,
                                    cluster_facts *f)
{
    size_t i;
    const json_t *gateway;
    json_array_foreach(plan->gateways, i, gateway)
    {
        const char *name = gateway_storage_class(gateway);
        if (!name || find_storage_class(f, name) ||
            f->storage_class_count == SUBMIT_STORAGE_CLASSES)
            continue;
        size_t k = f->storage_class_count++;
        storage_class_read *sc = &f->storage_classes[k];
        sc->name = gc_xstrdup(name);
        sc->read.asked = true;
        round->storage_class[k] =
            add_read(round, gc_kube_path("storage.k8s.io", "v1", NULL, "storageclasses", name),
                     (gc_kube_read){.object = &sc->read.value});
    }
}

char *submit_gateway_collection(const json_t *gateway, const char *ns)
{
    return is_volume(gateway) ? gc_kube_path(NULL, "v1", NULL, "persistentvolumes", NULL)
                              : gc_kube_path(NULL, "v1", ns, "persistentvolumeclaims", NULL);
}

char *submit_gateway_path(const json_t *gateway, const char *ns)
{
    const char *name = gc_kube_string(json_object_get(gateway, "metadata"), "name");
    return is_volume(gateway) ? gc_kube_path(NULL, "v1", NULL, "persistentvolumes", name)
                              : gc_kube_path(NULL, "v1", ns, "persistentvolumeclaims", name);
}

/* A get of each gateway object of plan->gateways, in their order: whether it is there already. */
static void add_gateway_reads(first_round *round, const gc_submit_plan *plan, const char *ns,
                              cluster_facts *f)
{
    f->gateway_count = json_array_size(plan->gateways);
    f->gateways = gc_xcalloc(f->gateway_count ? f->gateway_count : 1, sizeof(*f->gateways));
    round->gateways = round->count;
    for (size_t i = 0; i < f->gateway_count; i++) {
        f->gateways[i].asked = true;
        add_read(round, submit_gateway_path(json_array_get(plan->gateways, i), ns),
                 (gc_kube_read){.object = &f->gateways[i].value});
    }
}

/* Everything the checks declared goes out at once. */
static void send_first_round(gc_kube *kube, const gc_submit_plan *plan, unsigned reads,
                             const char *ns, cluster_facts *f, first_round *round)
{
    const char *priority = plan->workload.priority;
    memset(round, 0, sizeof(*round));
    round->capacity =
        FIRST_ROUND_READS + ((reads & SUBMIT_READ_GATEWAYS) ? json_array_size(plan->gateways) : 0);
    round->reads = gc_xcalloc(round->capacity, sizeof(*round->reads));
    round->paths = gc_xcalloc(round->capacity, sizeof(*round->paths));
    round->kueue = (kueue_lists){json_array(), json_array(), json_array()};
    round->priority_classes = json_array();
    /* LocalQueues first: whether they are found says which Kueue version is served. */
    if (reads & SUBMIT_READ_QUEUES) {
        round->local_queues = add_kueue_read(round, ns, "localqueues", round->kueue.local_queues);
        round->cluster_queues =
            add_kueue_read(round, NULL, "clusterqueues", round->kueue.cluster_queues);
        round->flavors = add_kueue_read(round, NULL, "resourceflavors", round->kueue.flavors);
    }
    if (reads & SUBMIT_READ_NODES) {
        node_reads_init(&round->nodes, f, plan);
        char *nodes_path = gc_kube_path(NULL, "v1", NULL, "nodes", NULL);
        for (size_t i = 0; i < round->nodes.count; i++)
            add_read(round, i ? NULL : nodes_path,
                     node_read_batch_entry(&round->nodes.reads[i], nodes_path));
        if (!round->nodes.count)
            free(nodes_path);
    }
    if (priority && (reads & SUBMIT_READ_PRIORITY)) {
        round->priority_selector = gc_xasprintf("metadata.name=%s", priority);
        round->priority_options.field_selector = round->priority_selector;
        round->priority = add_list_read(
            round, gc_kube_path("scheduling.k8s.io", "v1", NULL, "priorityclasses", NULL),
            round->priority_classes);
        round->reads[round->priority].opts = &round->priority_options;
    }
    /* The namespace itself, which Google's gcluster requires to exist: an API server lets a
     * JobSet be created in a namespace that does not, and nothing ever runs it. */
    if (reads & SUBMIT_READ_NAMESPACE)
        round->target = add_read(round, gc_kube_path(NULL, "v1", NULL, "namespaces", ns),
                                 (gc_kube_read){.object = &round->target_namespace});
    add_feature_reads(round, reads, f);
    if (reads & SUBMIT_READ_STORAGE_CLASSES)
        add_storage_class_reads(round, plan, f);
    if (reads & SUBMIT_READ_GATEWAYS)
        add_gateway_reads(round, plan, ns, f);
    if (reads & SUBMIT_READ_JOBSET_API)
        round->jobset_api = add_read(round, gc_xstrdup("/apis/jobset.x-k8s.io"),
                                     (gc_kube_read){.object = &round->jobset_group});
    f->kueue_version = gc_kueue_read_all(kube, round->reads, round->count, round->kueue_reads,
                                         round->kueue_count, NULL);
    for (size_t i = 0; i < FACT_READS; i++) {
        if (!f->features[i].asked)
            continue;
        f->features[i].rc = round->reads[round->feature[i]].rc;
        f->features[i].err = round->reads[round->feature[i]].err;
    }
    for (size_t i = 0; i < f->storage_class_count; i++) {
        f->storage_classes[i].read.rc = round->reads[round->storage_class[i]].rc;
        f->storage_classes[i].read.err = round->reads[round->storage_class[i]].err;
    }
    for (size_t i = 0; i < f->gateway_count; i++) {
        f->gateways[i].rc = round->reads[round->gateways + i].rc;
        f->gateways[i].err = round->reads[round->gateways + i].err;
    }
    if (reads & SUBMIT_READ_JOBSET_API) {
        gc_kube_read *r = &round->reads[round->jobset_api];
        f->jobset_missing = r->rc && r->err.http_status == 404;
        gc_error_clear(&r->err);
    }
}

static void first_round_free(first_round *round)
{
    json_decref(round->kueue.local_queues);
    json_decref(round->kueue.cluster_queues);
    json_decref(round->kueue.flavors);
    node_reads_free(&round->nodes);
    json_decref(round->priority_classes);
    json_decref(round->target_namespace);
    json_decref(round->jobset_group);
    free(round->priority_selector);
    for (size_t i = 0; i < round->capacity; i++)
        free(round->paths[i]);
    free(round->paths);
    free(round->reads);
    gc_kueue_reads_free(round->kueue_reads, round->kueue_count);
}

/* LocalQueues and nodes must be known (a LocalQueue list not served at any version: Kueue is
 * not installed). */
static int take_first_round(const first_round *round, unsigned reads, cluster_facts *f,
                            gc_error *err)
{
    if (reads & SUBMIT_READ_QUEUES) {
        const gc_kube_read *queues = &round->reads[round->local_queues];
        if (f->kueue_version && queues->rc) {
            *err = queues->err;
            return queues->rc;
        }
        if (f->kueue_version)
            f->local_queues = json_incref(round->kueue.local_queues);
        take_flavors(&round->reads[round->flavors], &round->kueue, f);
    }
    for (size_t i = 0; i < round->count; i++) {
        const gc_kube_read *r = &round->reads[i];
        if (r->on_item == on_node && r->rc) {
            *err = r->err;
            return r->rc;
        }
    }
    return 0;
}

/* The chosen queue's ClusterQueue from the list; asked for by name when that list could not be
 * had (no permission to list them). */
static int find_cluster_queue(gc_kube *kube, const first_round *round, cluster_facts *f,
                              gc_error *err)
{
    if (round->reads[round->cluster_queues].rc)
        return get_cluster_queue(kube, f, err);
    size_t i;
    json_t *q;
    json_array_foreach(round->kueue.cluster_queues, i, q)
    {
        const char *n = gc_kube_field(q, NULL, "name");
        if (n && !strcmp(n, f->cluster_queue) && !f->cluster_queue_object)
            f->cluster_queue_object = json_incref(q);
    }
    return 0; /* not there: refused by the checks */
}

static int find_priority_class(gc_kube *kube, const char *priority, const first_round *round,
                               cluster_facts *f, gc_error *err)
{
    if (round->reads[round->priority].rc)
        return get_priority_class(kube, priority, f, err);
    f->priority_found = json_array_size(round->priority_classes) > 0;
    return 0;
}

int submit_cluster_facts_gather(gc_kube *kube, const gc_submit_plan *plan, unsigned reads,
                                cluster_facts *f, gc_error *err)
{
    const gc_workload *w = &plan->workload;
    memset(f, 0, sizeof(*f));
    f->kube = kube;
    const char *ns = gc_kube_namespace(kube);
    first_round round;
    send_first_round(kube, plan, reads, ns, f, &round);
    int rc = take_first_round(&round, reads, f, err);
    /* A namespace one may not read is taken to exist (the create will say otherwise). */
    const gc_kube_read *target = &round.reads[round.target];
    if (!rc && (reads & SUBMIT_READ_NAMESPACE) && target->rc && target->err.http_status == 404)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "target namespace %s does not exist: create it (kubectl create namespace "
                     "%s) or pick another with --gke-namespace",
                     ns, ns);
    if (!rc && f->kueue_version)
        rc = choose_queue(w->queue_defaulted ? NULL : w->queue, ns, f, err);
    if (!rc && f->kueue_version)
        rc = find_cluster_queue(kube, &round, f, err);
    if (!rc && w->priority && (reads & SUBMIT_READ_PRIORITY))
        rc = find_priority_class(kube, w->priority, &round, f, err);
    first_round_free(&round);
    return rc;
}

void submit_cluster_facts_shapes(const cluster_facts *f, gc_node_shape *out,
                                 gc_cluster_shapes *shapes)
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

/* A pool neither read by name nor met among the workers' nodes is read now (one node): the
 * flavors of some ClusterQueues pin pods to pools the first round did not ask about. A pool that
 * cannot be read counts as having no nodes, which the checks take as "may be scaling". */
int submit_cluster_facts_pool_nodes(cluster_facts *f, const char *pool)
{
    int n = 0;
    for (size_t i = 0; i < f->shape_count; i++)
        if (!strcmp(f->shapes[i].node_pool, pool))
            n += f->shapes[i].count;
    if (n || !f->kube || has_string(&f->pools_read, pool))
        return n;
    node_read r;
    pool_read_init(&r, f, pool);
    char *path = gc_kube_path(NULL, "v1", NULL, "nodes", NULL);
    gc_error err = {0};
    gc_kube_list(f->kube, path, &r.opts, on_node, &r, NULL, &err);
    free(path);
    gc_strings_free(&r.pools);
    return r.hosts;
}

const storage_class_read *submit_cluster_facts_storage_class(const cluster_facts *f,
                                                             const json_t *gateway)
{
    const char *name = gateway_storage_class(gateway);
    return name ? find_storage_class(f, name) : NULL;
}

void submit_cluster_facts_free(cluster_facts *f)
{
    json_decref(f->local_queues);
    json_decref(f->cluster_queue_object);
    json_decref(f->flavors);
    free(f->shapes);
    gc_strings_free(&f->pools_read);
    for (size_t i = 0; i < FACT_READS; i++)
        json_decref(f->features[i].value);
    for (size_t i = 0; i < f->storage_class_count; i++) {
        free(f->storage_classes[i].name);
        json_decref(f->storage_classes[i].read.value);
    }
    for (size_t i = 0; i < f->gateway_count; i++)
        json_decref(f->gateways[i].value);
    free(f->gateways);
    memset(f, 0, sizeof(*f));
}
