/*
 * Small builders for the pieces every pod template is made of (env, ports, volumes, placement).
 * Internal to manifest/.
 *
 * A builder that cannot build returns NULL, and NULL travels up: manifest_jset and manifest_jappend
 * given a NULL object or value free the other and return NULL, json_pack fails when an "o" is NULL,
 * so one string jansson refuses (not UTF-8) leaves no JobSet at all rather than a JobSet without
 * the container it belonged to. Every result is therefore used: `spec = manifest_jset(spec, ...)`.
 */
#ifndef GCLUSTER_MANIFEST_POD_H
#define GCLUSTER_MANIFEST_POD_H

#include "gcluster/manifest.h"

#include <jansson.h>

#define SHARED_TMP_VOLUME "shared-tmp"

/* Multi-tier checkpointing, named as Google's gcluster names them: the MTC CSI volume, and
 * (Pathways) the memory the worker shares with the colocated Python sidecar, which moves
 * checkpoints in and out of the worker's TPU memory. */
#define MTC_VOLUME            "cache"
#define MTC_CSI_DRIVER        "multitier-checkpoint.csi.storage.gke.io"
#define SIDECAR_SHM_VOLUME    "sidecar-shared-memory"
#define SIDECAR_SHM_DIRECTORY "/tmp/sidecar"

/* The Pathways servers' containers, each with its own --pathways-*-env flag. */
#define PROXY_CONTAINER  "pathways-proxy"
#define RM_CONTAINER     "pathways-rm"
#define WORKER_CONTAINER "pathways-worker"
/* The user's command runs here (TPU7x with parallel containers: -1 and -2). */
#define WORKLOAD_CONTAINER "workload-container"

/* Labels and annotations JobSet puts on every pod it creates; containers read them through the
 * downward API. */
#define JOBSET_COORDINATOR_LABEL  "jobset.sigs.k8s.io/coordinator"
#define JOBSET_NAME_KEY           "jobset.sigs.k8s.io/jobset-name"
#define JOBSET_REPLICATED_JOB_KEY "jobset.sigs.k8s.io/replicatedjob-name"
#define JOBSET_REPLICAS_LABEL     "jobset.sigs.k8s.io/replicatedjob-replicas"
#define JOBSET_JOB_INDEX_LABEL    "jobset.sigs.k8s.io/job-index"
#define JOBSET_EXCLUSIVE_TOPOLOGY "alpha.jobset.sigs.k8s.io/exclusive-topology"

/* The JobSet around `spec` (stolen): apiVersion, kind, name, labels and the annotations that
 * record what was asked for, so `job list` and `job inspect` can show it. */
json_t *manifest_jobset_object(const gc_workload *w, json_t *spec);
/* pathways.c: the Pathways JobSet, unchecked: NULL when a part could not be built. */
json_t *manifest_pathways_jobset(const gc_workload *w);

/* Sets object[key] = value (stealing the reference) and returns object; NULL (with both freed)
 * when either is NULL or the key is refused. */
json_t *manifest_jset(json_t *object, const char *key, json_t *value);
/* Appends value (stolen) to array and returns array; NULL (with both freed) on any failure. */
json_t *manifest_jappend(json_t *array, json_t *value);
/* Appends the user's variables for a container in `scope` to env. */
json_t *manifest_with_user_env(json_t *env, const gc_workload *w, gc_env_scope scope);

json_t *manifest_env_value(const char *name, const char *value);
json_t *manifest_env_from_label(const char *name, const char *label);
json_t *manifest_env_from_annotation(const char *name, const char *annotation);

json_t *manifest_container_ports(const int *ports, size_t count);
json_t *manifest_string_array(const gc_strings *list);
json_t *manifest_shared_tmp_mount(void);

/* Volumes: shared-tmp (hostPath /tmp) plus, with `with_user_mounts`, one per --mount. */
json_t *manifest_pod_volumes(const gc_workload *w, bool with_user_mounts);
/* volumeMounts of a user container: /tmp and every --mount. */
json_t *manifest_user_volume_mounts(const gc_workload *w, bool with_shared_tmp);
/* Appends the MTC volume (and, with `with_shm`, the sidecar's shared memory) to volumes. */
json_t *manifest_mtc_volumes(json_t *volumes, bool with_shm);
/* Appends the MTC volume's mount at the ramdisk directory (and, with `with_shm`, the shared
 * memory's at /tmp/sidecar) to mounts. */
json_t *manifest_mtc_volume_mounts(json_t *mounts, const gc_workload *w, bool with_shm);
/* Adds the Kueue topology annotations of a dynamically sliced TPU pod to metadata; returns it
 * unchanged for other workloads. */
json_t *manifest_slice_annotations(json_t *metadata, const gc_workload *w);
/* Whether a pod with the user's mounts needs the GCS FUSE sidecar injected. */
bool manifest_needs_gcsfuse(const gc_workload *w);

/* Pod metadata: the workload label, plus the GCS FUSE annotation when `with_user_mounts`. */
json_t *manifest_pod_metadata(const gc_workload *w, bool with_user_mounts);
/* Adds annotation key: value to metadata (stolen) and returns it; NULL as manifest_jset does. */
json_t *manifest_annotate(json_t *metadata, const char *key, const char *value);

/* Fields common to every pod spec of the workload: service account, pull secrets, priority.
 * Returns pod_spec (NULL as manifest_jset does). */
json_t *manifest_set_identity(json_t *pod_spec, const gc_workload *w);

/* Where accelerator pods may run: the node selector (accelerator labels plus the user's
 * constraints), required node affinity for multi-valued constraints, and tolerations. Returns
 * pod_spec (NULL as manifest_jset does). */
json_t *manifest_set_accelerator_placement(json_t *pod_spec, const gc_workload *w);

/* podFailurePolicy for --restart-on-exit-codes, for callers that have codes to list. Only
 * valid with restartPolicy Never. `container` (may be NULL for every container) is the one
 * whose exit code counts. */
json_t *manifest_pod_failure_policy(const gc_workload *w, const char *container);

/* The exclusive-topology annotation on a Job template: one pod (or one slice) per `key`. */
json_t *manifest_exclusive_job_metadata(const char *topology_key);

#endif
