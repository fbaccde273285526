#include "manifest/pod.h"

#include "gcluster/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *pathways_mode(const gc_workload *w)
{
    if (!w->pathways)
        return "no";
    if (w->sps)
        return "sps";
    return w->headless ? "headless" : "yes";
}

json_t *manifest_jobset_object(const gc_workload *w, json_t *spec)
{
    char slices[16];
    snprintf(slices, sizeof(slices), "%d", w->num_slices);
    json_t *annotations = json_pack("{s:s, s:s}", GC_ANNOTATION_COMPUTE, w->compute.display,
                                    GC_ANNOTATION_SLICES, slices);
    if (w->compute.topology[0])
        annotations =
            manifest_jset(annotations, GC_ANNOTATION_TOPOLOGY, json_string(w->compute.topology));
    annotations = manifest_jset(annotations, GC_ANNOTATION_PATHWAYS, json_string(pathways_mode(w)));
    return json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}, s:o}, s:o}", "apiVersion",
                     "jobset.x-k8s.io/v1alpha2", "kind", "JobSet", "metadata", "name", w->name,
                     "labels", GC_LABEL_WORKLOAD, w->name, GC_LABEL_QUEUE, w->queue, "annotations",
                     annotations, "spec", spec);
}

json_t *manifest_jset(json_t *object, const char *key, json_t *value)
{
    if (!object || !value) {
        json_decref(object);
        json_decref(value);
        return NULL;
    }
    if (json_object_set_new(object, key, value) != 0) { /* jansson has freed value */
        json_decref(object);
        return NULL;
    }
    return object;
}

json_t *manifest_jappend(json_t *array, json_t *value)
{
    if (!array || !value) {
        json_decref(array);
        json_decref(value);
        return NULL;
    }
    if (json_array_append_new(array, value) != 0) {
        json_decref(array);
        return NULL;
    }
    return array;
}

json_t *manifest_env_value(const char *name, const char *value)
{
    return json_pack("{s:s, s:s}", "name", name, "value", value);
}

static json_t *env_from_field(const char *name, const char *kind, const char *key)
{
    char path[256];
    snprintf(path, sizeof(path), "metadata.%s['%s']", kind, key);
    return json_pack("{s:s, s:{s:{s:s}}}", "name", name, "valueFrom", "fieldRef", "fieldPath",
                     path);
}

json_t *manifest_env_from_label(const char *name, const char *label)
{
    return env_from_field(name, "labels", label);
}

json_t *manifest_env_from_annotation(const char *name, const char *annotation)
{
    return env_from_field(name, "annotations", annotation);
}

json_t *manifest_with_user_env(json_t *env, const gc_workload *w, gc_env_scope scope)
{
    for (size_t i = 0; i < w->env_count; i++)
        if (w->env[i].scope == scope)
            env = manifest_jappend(env, manifest_env_value(w->env[i].name, w->env[i].value));
    return env;
}

json_t *manifest_container_ports(const int *ports, size_t count)
{
    json_t *list = json_array();
    for (size_t i = 0; i < count; i++)
        list = manifest_jappend(list, json_pack("{s:i}", "containerPort", ports[i]));
    return list;
}

json_t *manifest_string_array(const gc_strings *list)
{
    json_t *array = json_array();
    for (size_t i = 0; i < list->count; i++)
        array = manifest_jappend(array, json_string(list->items[i]));
    return array;
}

json_t *manifest_shared_tmp_mount(void)
{
    return json_pack("{s:s, s:s}", "name", SHARED_TMP_VOLUME, "mountPath", "/tmp");
}

static void mount_volume_name(size_t index, char name[32])
{
    snprintf(name, 32, "user-mount-%zu", index);
}

static json_t *user_volume(const gc_mount *m, size_t index)
{
    char name[32];
    mount_volume_name(index, name);
    json_t *volume = json_pack("{s:s}", "name", name);
    switch (m->kind) {
    case GC_MOUNT_GCS: {
        /* A storage-profile mount reads the bucket through its gateway claim. */
        if (m->profile)
            return manifest_jset(volume, "persistentVolumeClaim",
                                 json_pack("{s:s}", "claimName", m->gateway ? m->gateway : ""));
        /* The bucket alone is the bucket name (a directory in it is the mount's subPath, as in
         * Google's gcluster); options= is the driver's mountOptions, one comma-separated list. */
        json_t *attributes = json_pack("{s:s}", "bucketName", m->source);
        if (m->options)
            attributes = manifest_jset(attributes, "mountOptions", json_string(m->options));
        for (size_t i = 0; i < m->attributes.count; i++) {
            const char *kv = m->attributes.items[i];
            char *key = gc_xstrndup(kv, strcspn(kv, "="));
            attributes = manifest_jset(attributes, key, json_string(kv + strlen(key) + 1));
            free(key);
        }
        return manifest_jset(volume, "csi",
                             json_pack("{s:s, s:b, s:o}", "driver", "gcsfuse.csi.storage.gke.io",
                                       "readOnly", m->read_only, "volumeAttributes", attributes));
    }
    case GC_MOUNT_HOST_PATH:
        return manifest_jset(volume, "hostPath", json_pack("{s:s}", "path", m->source));
    case GC_MOUNT_NFS:
        return manifest_jset(volume, "nfs",
                             json_pack("{s:s, s:s, s:b}", "server", m->source, "path",
                                       m->source_dir ? m->source_dir : "/", "readOnly",
                                       m->read_only));
    case GC_MOUNT_PVC:
        return manifest_jset(
            volume, "persistentVolumeClaim",
            json_pack("{s:s, s:b}", "claimName", m->source, "readOnly", m->read_only));
    }
    json_decref(volume);
    return NULL;
}

json_t *manifest_pod_volumes(const gc_workload *w, bool with_user_mounts)
{
    json_t *volumes = json_pack("[{s:s, s:{s:s, s:s}}]", "name", SHARED_TMP_VOLUME, "hostPath",
                                "path", "/tmp", "type", "DirectoryOrCreate");
    for (size_t i = 0; with_user_mounts && i < w->mount_count; i++)
        volumes = manifest_jappend(volumes, user_volume(&w->mounts[i], i));
    return volumes;
}

json_t *manifest_user_volume_mounts(const gc_workload *w, bool with_shared_tmp)
{
    json_t *mounts = json_array();
    if (with_shared_tmp)
        mounts = manifest_jappend(mounts, manifest_shared_tmp_mount());
    for (size_t i = 0; i < w->mount_count; i++) {
        char name[32];
        mount_volume_name(i, name);
        json_t *mount = json_pack("{s:s, s:s}", "name", name, "mountPath", w->mounts[i].target);
        if (w->mounts[i].kind == GC_MOUNT_GCS && w->mounts[i].source_dir)
            mount = manifest_jset(mount, "subPath", json_string(w->mounts[i].source_dir));
        if (w->mounts[i].read_only)
            mount = manifest_jset(mount, "readOnly", json_true());
        mounts = manifest_jappend(mounts, mount);
    }
    return mounts;
}

json_t *manifest_mtc_volumes(json_t *volumes, bool with_shm)
{
    volumes = manifest_jappend(
        volumes, json_pack("{s:s, s:{s:s}}", "name", MTC_VOLUME, "csi", "driver", MTC_CSI_DRIVER));
    if (with_shm)
        volumes = manifest_jappend(volumes, json_pack("{s:s, s:{s:s}}", "name", SIDECAR_SHM_VOLUME,
                                                      "emptyDir", "medium", "Memory"));
    return volumes;
}

json_t *manifest_mtc_volume_mounts(json_t *mounts, const gc_workload *w, bool with_shm)
{
    mounts = manifest_jappend(
        mounts, json_pack("{s:s, s:s}", "name", MTC_VOLUME, "mountPath", w->mtc_ramdisk_dir));
    if (with_shm)
        mounts = manifest_jappend(mounts, json_pack("{s:s, s:s}", "name", SIDECAR_SHM_VOLUME,
                                                    "mountPath", SIDECAR_SHM_DIRECTORY));
    return mounts;
}

json_t *manifest_slice_annotations(json_t *metadata, const gc_workload *w)
{
    if (!w->dynamic_slicing)
        return metadata;
    const char *topology = w->compute.topology;
    char *level = gc_xasprintf("cloud.google.com/gke-tpu-partition-%s-id", topology);
    metadata = manifest_annotate(metadata, "cloud.google.com/gke-tpu-slice-topology", topology);
    /* One slice: all pods in one partition of that shape. Several: each slice (a Job of
     * podset-slice-size pods) in a partition of its own, which Kueue reserves together. */
    if (w->num_slices > 1) {
        char size[16];
        snprintf(size, sizeof(size), "%d", w->nodes_per_slice);
        metadata =
            manifest_annotate(metadata, "kueue.x-k8s.io/podset-slice-required-topology", level);
        metadata = manifest_annotate(metadata, "kueue.x-k8s.io/podset-slice-size", size);
    } else {
        metadata = manifest_annotate(metadata, "kueue.x-k8s.io/podset-required-topology", level);
    }
    free(level);
    return metadata;
}

bool manifest_needs_gcsfuse(const gc_workload *w)
{
    for (size_t i = 0; i < w->mount_count; i++)
        if (w->mounts[i].kind == GC_MOUNT_GCS)
            return true;
    return false;
}

json_t *manifest_annotate(json_t *metadata, const char *key, const char *value)
{
    json_t *annotations = json_object_get(metadata, "annotations");
    if (!annotations)
        return manifest_jset(metadata, "annotations", json_pack("{s:s}", key, value));
    return manifest_jset(annotations, key, json_string(value)) ? metadata
                                                               : (json_decref(metadata), NULL);
}

json_t *manifest_pod_metadata(const gc_workload *w, bool with_user_mounts)
{
    json_t *metadata = json_pack("{s:{s:s}}", "labels", GC_LABEL_WORKLOAD, w->name);
    /* GKE injects the GCS FUSE sidecar only into pods that ask for it. */
    if (with_user_mounts && manifest_needs_gcsfuse(w))
        metadata = manifest_annotate(metadata, "gke-gcsfuse/volumes", "true");
    return metadata;
}

json_t *manifest_set_identity(json_t *pod_spec, const gc_workload *w)
{
    if (w->service_account)
        pod_spec = manifest_jset(pod_spec, "serviceAccountName", json_string(w->service_account));
    if (w->pull_secrets.count) {
        json_t *secrets = json_array();
        for (size_t i = 0; i < w->pull_secrets.count; i++)
            secrets =
                manifest_jappend(secrets, json_pack("{s:s}", "name", w->pull_secrets.items[i]));
        pod_spec = manifest_jset(pod_spec, "imagePullSecrets", secrets);
    }
    if (w->priority)
        pod_spec = manifest_jset(pod_spec, "priorityClassName", json_string(w->priority));
    return pod_spec;
}

static json_t *accelerator_node_selector(const gc_workload *w)
{
    json_t *selector = json_object();
    const gc_compute *c = &w->compute;
    if (c->kind == GC_ACCEL_TPU) {
        selector = manifest_jset(selector, "cloud.google.com/gke-tpu-accelerator",
                                 json_string(c->accelerator));
        /* A dynamic slice is formed from the pool's blocks on admission: no node carries the
         * slice's shape as its topology label beforehand. */
        if (!w->dynamic_slicing)
            selector = manifest_jset(selector, "cloud.google.com/gke-tpu-topology",
                                     json_string(c->topology));
    } else if (c->kind == GC_ACCEL_GPU) {
        selector = manifest_jset(selector, "cloud.google.com/gke-accelerator",
                                 json_string(c->accelerator));
    } else {
        /* GKE labels every node with its machine type; without this a CPU job could land on
         * any pool, including the Pathways head pool. */
        selector = manifest_jset(selector, "node.kubernetes.io/instance-type",
                                 json_string(c->machine_type));
    }
    for (size_t i = 0; i < w->node_term_count; i++)
        if (w->node_terms[i].values.count == 1)
            selector = manifest_jset(selector, w->node_terms[i].key,
                                     json_string(w->node_terms[i].values.items[0]));
    return selector;
}

static bool has_multi_valued_terms(const gc_workload *w)
{
    for (size_t i = 0; i < w->node_term_count; i++)
        if (w->node_terms[i].values.count > 1)
            return true;
    return false;
}

static json_t *required_affinity(const gc_workload *w)
{
    json_t *expressions = json_array();
    for (size_t i = 0; i < w->node_term_count; i++) {
        const gc_node_term *t = &w->node_terms[i];
        if (t->values.count > 1)
            expressions = manifest_jappend(
                expressions, json_pack("{s:s, s:s, s:o}", "key", t->key, "operator", "In", "values",
                                       manifest_string_array(&t->values)));
    }
    return json_pack("{s:{s:{s:[{s:o}]}}}", "nodeAffinity",
                     "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
                     "matchExpressions", expressions);
}

static bool has_tolerations(const gc_workload *w)
{
    return w->compute.kind != GC_ACCEL_CPU || w->nap_tolerations.count > 0;
}

static json_t *tolerations(const gc_workload *w)
{
    json_t *list = json_array();
    if (w->compute.kind == GC_ACCEL_TPU)
        list = manifest_jappend(list, json_pack("{s:s, s:s, s:s}", "key", "google.com/tpu",
                                                "operator", "Exists", "effect", "NoSchedule"));
    else if (w->compute.kind == GC_ACCEL_GPU)
        list = manifest_jappend(list, json_pack("{s:s, s:s, s:s}", "key", "nvidia.com/gpu",
                                                "operator", "Exists", "effect", "NoSchedule"));
    for (size_t i = 0; i < w->nap_tolerations.count; i++) {
        const char *kv = w->nap_tolerations.items[i];
        const char *eq = strchr(kv, '=');
        char *key = gc_xstrndup(kv, eq ? (size_t)(eq - kv) : strlen(kv));
        list = manifest_jappend(list,
                                json_pack("{s:s, s:s, s:s, s:s}", "key", key, "operator", "Equal",
                                          "value", eq ? eq + 1 : "", "effect", "NoSchedule"));
        free(key);
    }
    return list;
}

json_t *manifest_set_accelerator_placement(json_t *pod_spec, const gc_workload *w)
{
    pod_spec = manifest_jset(pod_spec, "nodeSelector", accelerator_node_selector(w));
    if (has_multi_valued_terms(w))
        pod_spec = manifest_jset(pod_spec, "affinity", required_affinity(w));
    if (has_tolerations(w))
        pod_spec = manifest_jset(pod_spec, "tolerations", tolerations(w));
    return pod_spec;
}

static int by_value(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

json_t *manifest_pod_failure_policy(const gc_workload *w, const char *container)
{
    /* Job validation wants the codes in ascending order ("must be ordered"); the JobSet's own
     * schema does not check, so codes as typed would only fail in the JobSet controller. */
    long *sorted = gc_xcalloc(w->restart_exit_code_count + 1, sizeof(long));
    memcpy(sorted, w->restart_exit_codes, w->restart_exit_code_count * sizeof(long));
    qsort(sorted, w->restart_exit_code_count, sizeof(long), by_value);
    json_t *codes = json_array();
    for (size_t i = 0; i < w->restart_exit_code_count; i++)
        codes = manifest_jappend(codes, json_integer(sorted[i]));
    free(sorted);
    /* Any other exit code fails the Job with reason PodFailurePolicy, which the JobSet's
     * FailJobSet rule turns into an immediate failure; the listed codes fall through to the
     * backoff limit and so to an ordinary JobSet restart (counted against --restarts). */
    json_t *on_exit_codes = json_pack("{s:s, s:o}", "operator", "NotIn", "values", codes);
    /* Native sidecars are stopped when the user's container ends and exit with whatever
     * code; only the user's container must decide. */
    if (container)
        on_exit_codes = manifest_jset(on_exit_codes, "containerName", json_string(container));
    return json_pack("{s:[{s:s, s:o}]}", "rules", "action", "FailJob", "onExitCodes",
                     on_exit_codes);
}

json_t *manifest_exclusive_job_metadata(const char *topology_key)
{
    return json_pack("{s:{s:s}}", "annotations", JOBSET_EXCLUSIVE_TOPOLOGY, topology_key);
}
