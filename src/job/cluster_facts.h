/*
 * The cluster facts a connected `job submit` checks its plan against and refines it by: the
 * LocalQueue to use and its ClusterQueue, the nodes' shapes and pools, the PriorityClass.
 * Internal to job/.
 */
#ifndef GCLUSTER_JOB_CLUSTER_FACTS_H
#define GCLUSTER_JOB_CLUSTER_FACTS_H

#include "gcluster/catalog.h"
#include "gcluster/job.h"

#include <jansson.h>

/* Nodes with identical placement labels, counted. */
typedef struct node_shape {
    char machine_type[64];
    char accelerator[64];
    char topology[32];
    char node_pool[64];
    int count;
} node_shape;

typedef struct cluster_facts {
    const char *kueue_version;    /* "v1beta2", "v1beta1", or NULL when Kueue is not installed */
    json_t *local_queues;         /* the namespace's LocalQueues */
    char queue[254];              /* the LocalQueue chosen */
    const json_t *local_queue;    /* and its object (in local_queues) */
    char cluster_queue[254];      /* and its ClusterQueue */
    json_t *cluster_queue_object; /* NULL if it does not exist (or may not be read) */
    bool cluster_queue_forbidden; /* the user may not read it: nothing about it is known */
    json_t *flavors;              /* the ResourceFlavors; NULL when they could not be listed */
    node_shape *shapes;
    size_t shape_count;
    bool priority_found;
} cluster_facts;

/* One round trip (two with a Kueue older than v1beta2) for everything about `w`: its queue
 * (w->queue unless defaulted, else the one the namespace offers), the queue's ClusterQueue and
 * the ResourceFlavors, the nodes, and its PriorityClass. */
int job_cluster_facts_gather(gc_kube *kube, const gc_workload *w, cluster_facts *f, gc_error *err);
/* The node shapes as the catalog wants them (`out` must hold f->shape_count entries). */
void job_cluster_facts_shapes(const cluster_facts *f, gc_node_shape *out,
                              gc_cluster_shapes *shapes);
int job_cluster_facts_pool_nodes(const cluster_facts *f, const char *pool);
void job_cluster_facts_free(cluster_facts *f);

#endif
