/*
 * One model of how Kueue admits a job into a ClusterQueue: submit's refusal (queue_fit.c) and
 * `job why`'s diagnosis (diagnose_kueue.c) both ask it, so they cannot reach different answers
 * about the same queue.
 */
#ifndef GCLUSTER_KUEUE_H
#define GCLUSTER_KUEUE_H

#include "gcluster/kube.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* One pod set as Kueue sees it: a replicated job's pods. */
typedef struct kueue_pod_set {
    const char *name;
    long long count;    /* pods */
    const json_t *spec; /* the pod template's spec: nodeSelector, affinity, tolerations */
    json_t *requests;   /* the whole pod set's: resource -> amount (JSON real) */
} kueue_pod_set;

/* The pod sets of a JobSet (each replicated job: replicas x parallelism pods) or of a Kueue
 * Workload (spec.podSets, with Kueue's own totals from status.resourceRequests when it wrote
 * them). Free with gc_kueue_pod_sets_free. */
size_t gc_kueue_pod_sets_of_jobset(const json_t *jobset, kueue_pod_set **out);
size_t gc_kueue_pod_sets_of_workload(const json_t *workload, kueue_pod_set **out);
void gc_kueue_pod_sets_free(kueue_pod_set *sets, size_t n);

/* Whether a ClusterQueue resource group covers `resource`. */
bool gc_kueue_group_covers(const json_t *group, const char *resource);

typedef enum kueue_when {
    KUEUE_EVER, /* with the queue (and its cohort) empty: could it ever be admitted? */
    KUEUE_NOW,  /* with the quota the ClusterQueue's status says is reserved already */
} kueue_when;

typedef enum kueue_outcome {
    KUEUE_ADMITTED,  /* every pod set has a flavor with room in every group it needs */
    KUEUE_UNCOVERED, /* a pod set requests a resource no resource group covers */
    KUEUE_NO_FLAVOR, /* no flavor of a group suits the pod set's nodes (labels or taints) */
    KUEUE_NO_QUOTA,  /* flavors suit it, and none has room */
} kueue_outcome;

typedef struct kueue_answer {
    kueue_outcome outcome;
    size_t pod_set;       /* the pod set that was not admitted */
    const json_t *group;  /* its resource group (NO_FLAVOR, NO_QUOTA) */
    const char *resource; /* UNCOVERED: the one not covered; NO_QUOTA: the one short */
    double need;          /* of `resource`, for the whole pod set */
    /* NO_QUOTA: the first suitable flavor short of room, its nominal quota, the most it can
     * hold for this queue (nominal plus the cohort's borrowing limit; INFINITY in a cohort
     * without one), and what is reserved in it already (KUEUE_NOW; 0 for KUEUE_EVER). */
    const char *flavor;
    double quota, limit, used;
    double most;             /* the largest limit among the suitable flavors short of `resource` */
    char short_flavors[256]; /* those flavors: "tpu-a, tpu-b" */
    /* NO_FLAVOR: a flavor whose node labels suit the pod set but that has a taint its pods do
     * not tolerate (NULL when no flavor's labels suit them). */
    const char *taint_flavor;
    const json_t *taint;
    /* Per pod set admitted so far (in order): {"name": ..., "flavors": {resource: flavor}},
     * as Kueue's podSetAssignments. */
    json_t *assignments;
} kueue_answer;

/* Whether Kueue v0.17's flavor assigner admits the pod sets into `cluster_queue` (whose
 * ResourceFlavors are `flavors`), pod set by pod set, each taking quota from what the previous
 * ones left: for each resource group that covers a resource the pod set requests, the first
 * flavor in the group's order whose node labels the pods' node selection matches (on the label
 * keys of that group's flavors only), whose NoSchedule/NoExecute taints the pods (or the flavor's
 * own tolerations) tolerate, and that has room for all of the pod set's requests of the group.
 * A resource no group covers, in any pod set, is the answer before any flavor is looked at.
 * `flavors` NULL (not read): every flavor suits every pod set, and only quota decides.
 * Fills `out` (free with gc_kueue_answer_free; its `resource` of KUEUE_UNCOVERED lives as long
 * as the pod sets) and returns its outcome. */
kueue_outcome gc_kueue_admit(const json_t *cluster_queue, const json_t *flavors,
                             const kueue_pod_set *sets, size_t n, kueue_when when,
                             kueue_answer *out);
void gc_kueue_answer_free(kueue_answer *a);

/* A ResourceFlavor by name among `flavors`, and its node labels. */
const json_t *gc_kueue_flavor(const json_t *flavors, const char *name);
const json_t *gc_kueue_flavor_labels(const json_t *flavors, const char *name);

/* ---- Kueue's objects at the API version the cluster serves ------------------------------- */

#define GC_KUEUE_GROUP "kueue.x-k8s.io"
/* The version gcluster writes Kueue's objects at (deploy), and asks for first. */
#define GC_KUEUE_VERSION "v1beta2"

/* Kueue's API versions, preferred first, NULL-terminated: v1beta2 (Kueue 0.15 on) and v1beta1
 * (Kueue up to 0.14, which serves nothing newer). What gcluster reads of LocalQueues,
 * ClusterQueues, ResourceFlavors and Workloads is alike in both, or read under both names. */
extern const char *const gc_kueue_versions[];

/* The version after `version` in that order; NULL after the last (or for one not in it). */
const char *gc_kueue_older_version(const char *version);

/* "/apis/kueue.x-k8s.io/VERSION[/namespaces/NS]/RESOURCE[/NAME]" (ns NULL: cluster-scoped, or
 * every namespace's). Caller frees. */
char *gc_kueue_path(const char *version, const char *ns, const char *resource, const char *name);

/* One Kueue read in a caller's batch of reads (gc_kube_read_all): which entry it is and what it
 * names; gc_kueue_read_all sets that entry's path at each version it tries. */
typedef struct gc_kueue_read {
    size_t index;         /* in the caller's reads */
    const char *ns;       /* NULL: cluster-scoped, or every namespace's */
    const char *resource; /* "localqueues", "clusterqueues", "resourceflavors", "workloads" ... */
    const char *name;     /* NULL: a list */
    /* Called with the read's ctx before it is sent again at an older version (NULL: nothing to
     * drop); a 404 collects nothing, so this matters only for reads that answered otherwise. */
    void (*forget)(void *ctx);
    char *path; /* the path sent last (owned: gc_kueue_reads_free) */
} gc_kueue_read;

/* Sends the caller's batch (`reads`; the entries `kueue` names are Kueue's, their paths set
 * here) in one round trip, Kueue's at the preferred version. When the first Kueue read answers
 * 404 (that version is not served), Kueue's reads alone go again at the next version: one more
 * round trip for a Kueue older than 0.15. `group`, when not NULL, is the index of a GET of
 * /apis/kueue.x-k8s.io in the batch: unless that succeeded, Kueue is not installed (or not
 * readable) and no older version is asked. Returns the version at which the first Kueue read
 * answered other than 404 (its rc says whether it succeeded), or NULL when no version was
 * found. Every read's outcome is in its rc and err, as gc_kube_read_all leaves them. */
const char *gc_kueue_read_all(gc_kube *kube, gc_kube_read *reads, size_t count,
                              gc_kueue_read *kueue, size_t kueue_count, const size_t *group);
/* Frees the paths of `kueue`. */
void gc_kueue_reads_free(gc_kueue_read *kueue, size_t kueue_count);

/* Whether a read's failure says its Kueue version is not served (404). */
bool gc_kueue_not_served(const gc_kube_read *read);

/* ---- the releases that run ------------------------------------------------------------- */

/* The controller Deployments (namespace, name) of Kueue and JobSet, as their release manifests
 * install them: what runs says which release is installed. */
#define GC_KUEUE_CONTROLLER_NS  "kueue-system"
#define GC_KUEUE_CONTROLLER     "kueue-controller-manager"
#define GC_JOBSET_CONTROLLER_NS "jobset-system"
#define GC_JOBSET_CONTROLLER    "jobset-controller-manager"

/* The release a controller Deployment runs: the tag of the first of its containers' images that
 * has one ("v0.17.1"; a digest after it ignored, a registry's port is no tag), as Google's
 * gcluster reads the installed Kueue version. NULL when none has a tag. Caller frees. */
char *gc_kueue_controller_release(const json_t *deployment);

#endif
