/*
 * The cluster facts a connected `job submit` checks its plan against and refines it by: the
 * LocalQueue to use and its ClusterQueue, the nodes' shapes and pools, the PriorityClass.
 * Internal to submit/.
 */
#ifndef GCLUSTER_SUBMIT_CLUSTER_FACTS_H
#define GCLUSTER_SUBMIT_CLUSTER_FACTS_H

#include "gcluster/catalog.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"
#include "gcluster/submit.h"

#include <jansson.h>

/* What a submit check reads of the cluster (its entry in submit_live.c's table declares it); the
 * reads of every check that applies are gathered in the first round trip, together. */
enum {
    SUBMIT_READ_QUEUES = 1 << 0,    /* Kueue's LocalQueues, ClusterQueues and ResourceFlavors */
    SUBMIT_READ_NODES = 1 << 1,     /* the nodes the job needs, by label selector */
    SUBMIT_READ_PRIORITY = 1 << 2,  /* the PriorityClass --priority names */
    SUBMIT_READ_NAMESPACE = 1 << 3, /* the target namespace */
    SUBMIT_READ_MTC = 1 << 4,       /* multi-tier checkpointing's CRD, configurations, CSI driver */
    SUBMIT_READ_SLICING = 1 << 5,   /* Kueue's Topologies and AdmissionChecks */
    SUBMIT_READ_JOBSET_API = 1 << 6,      /* the jobset.x-k8s.io API group (404: JobSet missing) */
    SUBMIT_READ_STORAGE_CLASSES = 1 << 7, /* the StorageClasses of the profile= gateways */
    SUBMIT_READ_GATEWAYS = 1 << 8,        /* the profile= gateways' volumes and claims, by name */
};

/* One read of the first round trip as it came back: whether it was made, its outcome, and the
 * object (a get) or the items (a list). */
typedef struct fact_read {
    bool asked;
    int rc;
    gc_error err;
    json_t *value;
} fact_read;

/* The reads of the features' checks (submit_needs.c), and the objects of multi-tier
 * checkpointing they look for: GKE's HighScaleCheckpointing add-on installs both. */
#define SUBMIT_MTC_CRD        "checkpointconfigurations.checkpointing.gke.io"
#define SUBMIT_MTC_CSI_DRIVER "multitier-checkpoint.csi.storage.gke.io"
enum {
    FACT_MTC_CRD,
    FACT_MTC_CONFIGS,
    FACT_MTC_DRIVER,
    FACT_TOPOLOGIES,
    FACT_ADMISSION_CHECKS,
    FACT_READS
};

/* SUBMIT_READ_STORAGE_CLASSES: the StorageClass a gateway volume names, got by name. There are
 * three storage profiles, so three classes at most, each read once. */
#define SUBMIT_STORAGE_CLASSES 3
typedef struct storage_class_read {
    char *name;
    fact_read read;
} storage_class_read;

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
    node_shape *shapes; /* the nodes read: the workers' shape, the head pool, pinned pools */
    size_t shape_count;
    gc_strings pools_read; /* pools asked for by name, also those that had no nodes */
    gc_kube *kube;         /* to ask for a pool later (submit_cluster_facts_pool_nodes) */
    bool priority_found;
    /* SUBMIT_READ_JOBSET_API: the cluster does not serve jobset.x-k8s.io (a 404; a read that
     * failed otherwise tells nothing, and the create says what is wrong). */
    bool jobset_missing;
    fact_read features[FACT_READS]; /* SUBMIT_READ_MTC's and SUBMIT_READ_SLICING's */
    storage_class_read storage_classes[SUBMIT_STORAGE_CLASSES];
    size_t storage_class_count;
    /* SUBMIT_READ_GATEWAYS: a get of each object of plan->gateways, in its order (a 404: it is
     * to be created). */
    fact_read *gateways;
    size_t gateway_count;
} cluster_facts;

/* One round trip (two with a Kueue older than v1beta2) for everything the checks declare in
 * `reads` (SUBMIT_READ_*) about the plan's workload: its queue (w->queue unless defaulted, else
 * the one the namespace offers), the queue's ClusterQueue and the ResourceFlavors, its
 * PriorityClass, the nodes it needs, read by label selector: of the workers' TPU shape up to the
 * hosts and pools the job needs (all of the accelerator when the plan's slice shape is pending),
 * and one of the head pool (of cpu-np and of pathways-np when it is defaulted); the objects
 * multi-tier checkpointing and dynamic slicing need; the StorageClass of each gateway volume
 * in plan->gateways (gateways named first), and each gateway object itself. The cost follows the
 * job, not the cluster's size. */
int submit_cluster_facts_gather(gc_kube *kube, const gc_submit_plan *plan, unsigned reads,
                                cluster_facts *f, gc_error *err);
/* The node shapes as the catalog wants them (`out` must hold f->shape_count entries). */
void submit_cluster_facts_shapes(const cluster_facts *f, gc_node_shape *out,
                                 gc_cluster_shapes *shapes);
/* The nodes of `pool` seen (0: none now); a pool not read yet is read (one node). */
int submit_cluster_facts_pool_nodes(cluster_facts *f, const char *pool);
/* What the read of the StorageClass a gateway object of plan->gateways names found; NULL for a
 * claim, or when the class was not read. */
const storage_class_read *submit_cluster_facts_storage_class(const cluster_facts *f,
                                                             const json_t *gateway);
/* A gateway object's path (read in the first round), and its collection's (its dry run and create
 * go there), in namespace `ns` (a volume has none). */
char *submit_gateway_path(const json_t *gateway, const char *ns);
char *submit_gateway_collection(const json_t *gateway, const char *ns);
void submit_cluster_facts_free(cluster_facts *f);

#endif
