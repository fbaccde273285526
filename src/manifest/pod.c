#include "manifest/pod.h"

#include "gcluster/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *jset(json_t *object, const char *key, json_t *value)
{
    json_object_set_new(object, key, value);
    return object;
}

json_t *env_value(const char *name, const char *value)
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

json_t *env_from_label(const char *name, const char *label)
{
    return env_from_field(name, "labels", label);
}

json_t *env_from_annotation(const char *name, const char *annotation)
{
    return env_from_field(name, "annotations", annotation);
}

json_t *container_ports(const int *ports, size_t count)
{
    json_t *list = json_array();
    for (size_t i = 0; i < count; i++)
        json_array_append_new(list, json_pack("{s:i}", "containerPort", ports[i]));
    return list;
}

json_t *string_array(const gc_strings *list)
{
    json_t *array = json_array();
    for (size_t i = 0; i < list->count; i++)
        json_array_append_new(array, json_string(list->items[i]));
    return array;
}

json_t *shared_tmp_mount(void)
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
        json_t *attributes = json_pack("{s:s}", "bucketName", m->source);
        if (m->source_dir) {
            char *option = gc_xasprintf("only-dir=%s", m->source_dir);
            jset(attributes, "mountOptions", json_string(option));
            free(option);
        }
        jset(volume, "csi",
             json_pack("{s:s, s:b, s:o}", "driver", "gcsfuse.csi.storage.gke.io", "readOnly",
                       m->read_only, "volumeAttributes", attributes));
        break;
    }
    case GC_MOUNT_HOST_PATH:
        jset(volume, "hostPath", json_pack("{s:s}", "path", m->source));
        break;
    case GC_MOUNT_NFS:
        jset(volume, "nfs",
             json_pack("{s:s, s:s, s:b}", "server", m->source, "path",
                       m->source_dir ? m->source_dir : "/", "readOnly", m->read_only));
        break;
    case GC_MOUNT_PVC:
        jset(volume, "persistentVolumeClaim",
             json_pack("{s:s, s:b}", "claimName", m->source, "readOnly", m->read_only));
        break;
    }
    return volume;
}

json_t *pod_volumes(const gc_workload *w, bool with_user_mounts)
{
    json_t *volumes = json_array();
    json_array_append_new(volumes,
                          json_pack("{s:s, s:{s:s, s:s}}", "name", SHARED_TMP_VOLUME, "hostPath",
                                    "path", "/tmp", "type", "DirectoryOrCreate"));
    for (size_t i = 0; with_user_mounts && i < w->mount_count; i++)
        json_array_append_new(volumes, user_volume(&w->mounts[i], i));
    return volumes;
}

json_t *user_volume_mounts(const gc_workload *w, bool with_shared_tmp)
{
    json_t *mounts = json_array();
    if (with_shared_tmp)
        json_array_append_new(mounts, shared_tmp_mount());
    for (size_t i = 0; i < w->mount_count; i++) {
        char name[32];
        mount_volume_name(i, name);
        json_t *mount = json_pack("{s:s, s:s}", "name", name, "mountPath", w->mounts[i].target);
        if (w->mounts[i].read_only)
            jset(mount, "readOnly", json_true());
        json_array_append_new(mounts, mount);
    }
    return mounts;
}

bool needs_gcsfuse(const gc_workload *w)
{
    for (size_t i = 0; i < w->mount_count; i++)
        if (w->mounts[i].kind == GC_MOUNT_GCS)
            return true;
    return false;
}

json_t *pod_metadata(const gc_workload *w, bool with_user_mounts)
{
    json_t *metadata = json_pack("{s:{s:s}}", "labels", GC_LABEL_WORKLOAD, w->name);
    /* GKE injects the GCS FUSE sidecar only into pods that ask for it. */
    if (with_user_mounts && needs_gcsfuse(w))
        jset(metadata, "annotations", json_pack("{s:s}", "gke-gcsfuse/volumes", "true"));
    return metadata;
}

void set_identity(json_t *pod_spec, const gc_workload *w)
{
    if (w->service_account)
        jset(pod_spec, "serviceAccountName", json_string(w->service_account));
    if (w->pull_secrets.count) {
        json_t *secrets = json_array();
        for (size_t i = 0; i < w->pull_secrets.count; i++)
            json_array_append_new(secrets, json_pack("{s:s}", "name", w->pull_secrets.items[i]));
        jset(pod_spec, "imagePullSecrets", secrets);
    }
    if (w->priority)
        jset(pod_spec, "priorityClassName", json_string(w->priority));
}

static json_t *accelerator_node_selector(const gc_workload *w)
{
    json_t *selector = json_object();
    const gc_compute *c = &w->compute;
    if (c->kind == GC_ACCEL_TPU) {
        jset(selector, "cloud.google.com/gke-tpu-accelerator", json_string(c->accelerator));
        jset(selector, "cloud.google.com/gke-tpu-topology", json_string(c->topology));
    } else if (c->kind == GC_ACCEL_GPU) {
        jset(selector, "cloud.google.com/gke-accelerator", json_string(c->accelerator));
    } else {
        /* GKE labels every node with its machine type; without this a CPU job could land on
         * any pool, including the Pathways head pool. */
        jset(selector, "node.kubernetes.io/instance-type", json_string(c->machine_type));
    }
    for (size_t i = 0; i < w->node_term_count; i++)
        if (w->node_terms[i].values.count == 1)
            jset(selector, w->node_terms[i].key, json_string(w->node_terms[i].values.items[0]));
    return selector;
}

static json_t *required_affinity(const gc_workload *w)
{
    json_t *expressions = json_array();
    for (size_t i = 0; i < w->node_term_count; i++) {
        const gc_node_term *t = &w->node_terms[i];
        if (t->values.count > 1)
            json_array_append_new(expressions,
                                  json_pack("{s:s, s:s, s:o}", "key", t->key, "operator", "In",
                                            "values", string_array(&t->values)));
    }
    if (!json_array_size(expressions)) {
        json_decref(expressions);
        return NULL;
    }
    return json_pack("{s:{s:{s:[{s:o}]}}}", "nodeAffinity",
                     "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
                     "matchExpressions", expressions);
}

static json_t *tolerations(const gc_workload *w)
{
    json_t *list = json_array();
    if (w->compute.kind == GC_ACCEL_TPU)
        json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "key", "google.com/tpu",
                                              "operator", "Exists", "effect", "NoSchedule"));
    else if (w->compute.kind == GC_ACCEL_GPU)
        json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "key", "nvidia.com/gpu",
                                              "operator", "Exists", "effect", "NoSchedule"));
    for (size_t i = 0; i < w->nap_tolerations.count; i++) {
        const char *kv = w->nap_tolerations.items[i];
        const char *eq = strchr(kv, '=');
        char *key = gc_xstrndup(kv, eq ? (size_t)(eq - kv) : strlen(kv));
        json_array_append_new(list,
                              json_pack("{s:s, s:s, s:s, s:s}", "key", key, "operator", "Equal",
                                        "value", eq ? eq + 1 : "", "effect", "NoSchedule"));
        free(key);
    }
    if (!json_array_size(list)) {
        json_decref(list);
        return NULL;
    }
    return list;
}

void set_accelerator_placement(json_t *pod_spec, const gc_workload *w)
{
    jset(pod_spec, "nodeSelector", accelerator_node_selector(w));
    json_t *affinity = required_affinity(w);
    if (affinity)
        jset(pod_spec, "affinity", affinity);
    json_t *tol = tolerations(w);
    if (tol)
        jset(pod_spec, "tolerations", tol);
}

json_t *pod_failure_policy(const gc_workload *w, const char *container)
{
    if (!w->restart_exit_code_count)
        return NULL;
    json_t *codes = json_array();
    for (size_t i = 0; i < w->restart_exit_code_count; i++)
        json_array_append_new(codes, json_integer(w->restart_exit_codes[i]));
    /* Any other exit code fails the Job with reason PodFailurePolicy, which the JobSet's
     * FailJobSet rule turns into an immediate failure; the listed codes fall through to the
     * backoff limit and so to an ordinary JobSet restart (counted against --restarts). */
    json_t *on_exit_codes = json_pack("{s:s, s:o}", "operator", "NotIn", "values", codes);
    /* Native sidecars are stopped when the user's container ends and exit with whatever
     * code; only the user's container must decide. */
    if (container)
        jset(on_exit_codes, "containerName", json_string(container));
    return json_pack("{s:[{s:s, s:o}]}", "rules", "action", "FailJob", "onExitCodes",
                     on_exit_codes);
}

json_t *exclusive_job_metadata(const char *topology_key)
{
    return json_pack("{s:{s:s}}", "annotations", JOBSET_EXCLUSIVE_TOPOLOGY, topology_key);
}
