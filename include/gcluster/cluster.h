/*
 * cluster: what a cluster has, for `gcluster cluster list | describe | info` and `job inspect`
 * without a job name: the GKE clusters of a project (through gcloud), and of one cluster its
 * node pools with their accelerators, Kueue's queues with their quotas and usage, its workloads,
 * and the JobSet and Kueue it runs. Data in, data out; cli/ renders it.
 */
#ifndef GCLUSTER_CLUSTER_H
#define GCLUSTER_CLUSTER_H

#include "gcluster/error.h"
#include "gcluster/kube.h"

#include <stdbool.h>
#include <stddef.h>

/* One GKE cluster of a project, as `gcloud container clusters list` reports it. */
typedef struct gc_cluster_summary {
    char *name;
    char *location; /* zone or region */
    char *status;   /* RUNNING, PROVISIONING, ... */
    char *version;  /* currentMasterVersion */
    unsigned nodes; /* currentNodeCount */
} gc_cluster_summary;

typedef struct gc_cluster_list {
    char *project; /* the project asked (--project, else gcloud's configured one) */
    gc_cluster_summary *items;
    size_t count;
} gc_cluster_list;

typedef struct gc_cluster_list_request {
    const char *project; /* NULL: `gcloud config get-value project` */
    const char *gcloud;  /* the program; NULL: "gcloud" on $PATH */
} gc_cluster_list_request;

/* The clusters of the project, by gcloud (the user's own credentials and configuration). A
 * missing gcloud, no project or a failing gcloud are errors that say what to do. */
int gc_cluster_list_clusters(const gc_cluster_list_request *r, gc_cluster_list *out, gc_error *err);
void gc_cluster_list_free(gc_cluster_list *list);

/* A node pool: the nodes that share the GKE node-pool label. */
typedef struct gc_cluster_pool {
    char *name;         /* cloud.google.com/gke-nodepool; "(none)" for nodes without it */
    char *machine_type; /* node.kubernetes.io/instance-type */
    char *accelerator;  /* gke-tpu-accelerator or gke-accelerator label, or NULL (CPU) */
    char *topology;     /* gke-tpu-topology, or NULL */
    char *zone;         /* topology.kubernetes.io/zone */
    unsigned nodes;
    unsigned ready;
    long long chips; /* allocatable google.com/tpu or nvidia.com/gpu, summed over the nodes */
} gc_cluster_pool;

/* One resource of one flavor of a ClusterQueue: the quota and what is reserved of it. */
typedef struct gc_cluster_quota {
    char *flavor;
    char *resource;
    char *nominal;  /* nominalQuota, as written ("64", "1Ti") */
    char *reserved; /* status.flavorsReservation total, "0" when none */
    char *borrowed; /* of the reservation, borrowed from the cohort, or NULL */
} gc_cluster_quota;

typedef struct gc_cluster_queue {
    char *name;
    char *cohort; /* or NULL */
    gc_cluster_quota *quotas;
    size_t quota_count;
    long long pending;
    long long reserving; /* quota reserved (admitted or waiting for admission checks) */
    long long admitted;
} gc_cluster_queue;

typedef struct gc_local_queue {
    char *ns;
    char *name;
    char *cluster_queue;
    long long pending;
    long long reserving;
    long long admitted;
} gc_local_queue;

/* A Kueue Workload: a job waiting in, or admitted from, a queue. */
typedef struct gc_cluster_workload {
    char *ns;
    char *name;
    char *job;           /* the JobSet (or other owner) it stands for, or NULL */
    char *queue;         /* LocalQueue */
    char *state;         /* pending, reserved, admitted, evicted, finished */
    char *cluster_queue; /* status.admission.clusterQueue, or NULL */
} gc_cluster_workload;

typedef struct gc_cluster_report {
    /* What runs the cluster's jobs. `*_version` is the release (the controller Deployment's
     * image tag) or NULL when no Deployment says it; `*_api` the API version served (NULL: not
     * installed). */
    char *jobset_version;
    char *jobset_api;
    char *kueue_version;
    char *kueue_api;
    unsigned nodes;
    unsigned ready;
    gc_cluster_pool *pools;
    size_t pool_count;
    gc_cluster_queue *cluster_queues;
    size_t cluster_queue_count;
    gc_local_queue *local_queues;
    size_t local_queue_count;
    gc_cluster_workload *workloads;
    size_t workload_count;
} gc_cluster_report;

typedef struct gc_cluster_request {
    bool pools;     /* read the nodes (describe, inspect) */
    bool workloads; /* list the Workloads of every namespace (inspect) */
} gc_cluster_request;

/* Reads the cluster in one round trip (the older Kueue API version costs one more): nodes,
 * ClusterQueues, LocalQueues of every namespace, Workloads when asked, the JobSet and Kueue
 * controller Deployments and which JobSet and Kueue API versions are served. A cluster without
 * Kueue is not an error (no queues, kueue_api NULL). */
int gc_cluster_describe(gc_kube *kube, const gc_cluster_request *r, gc_cluster_report *out,
                        gc_error *err);
void gc_cluster_report_free(gc_cluster_report *r);

/* A claim a job can mount (`cluster volume`). */
typedef struct gc_cluster_volume {
    char *ns;
    char *name;
    char *type;   /* the Cluster Toolkit module (ghpc_module), else the StorageClass, else
                   * "Standard" */
    char *phase;  /* Bound, Pending, Lost, or NULL */
    bool gateway; /* a storage-profile gateway `job submit` made for a profile= mount */
} gc_cluster_volume;

typedef struct gc_cluster_volume_list {
    gc_cluster_volume *items;
    size_t count;
} gc_cluster_volume_list;

/* The claims of every namespace that Cluster Toolkit's file-system modules made (label
 * ghpc_role=file-system, as Google's `gcluster cluster volume` lists), then the storage-profile
 * gateways (label gcluster.google.com/managed-by=cluster-toolkit), each once. */
int gc_cluster_volumes(gc_kube *kube, gc_cluster_volume_list *out, gc_error *err);
void gc_cluster_volume_list_free(gc_cluster_volume_list *list);

#endif
