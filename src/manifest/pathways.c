/*
 * The Pathways JobSet: one JobSet with two replicated jobs.
 *
 *   pathways-head  one pod on the CPU head pool: the resource manager (pathways-rm), the IFRT
 *                  proxy (pathways-proxy) and, unless headless, the user's JAX program, which
 *                  reaches the proxy at grpc://$(PATHWAYS_HEAD):29000.
 *   worker         one Job per TPU slice, one pod per TPU host, each running pathways-worker
 *                  (and optionally a colocated Python sidecar).
 *
 * Every pod finds the head through the label JobSet puts on it for `spec.coordinator`:
 * jobset.sigs.k8s.io/coordinator = <name>-pathways-head-0-0.<name>, the head pod's stable DNS
 * name. Ports are fixed and pods use the host network, so one head per node and one slice per
 * node pool (the exclusive-topology annotations).
 */
#include "manifest/pod.h"

#include "gcluster/buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    PROXY_PORT = 29000,
    RM_PORT = 29001,
    RM_SECOND_PORT = 29002,
    WORKER_PORT = 29005,
    WORKER_SECOND_PORT = 29006,
    TPU_RUNTIME_PORT = 8471,
    TPU_METRICS_PORT = 8080,
    SIDECAR_PORT = 50051,
};

size_t gc_pathways_coordinator_length(size_t name_length)
{
    /* "<name>-pathways-head-0-0.<name>": the subdomain defaults to the JobSet name. */
    return 2 * name_length + strlen("-" GC_PATHWAYS_HEAD "-0-0.");
}

static json_t *args_with_extras(json_t *args, const gc_strings *extra)
{
    for (size_t i = 0; i < extra->count; i++)
        args = manifest_jappend(args, json_string(extra->items[i]));
    return args;
}

static json_t *args_printf(json_t *args, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static json_t *args_printf(json_t *args, const char *fmt, ...)
{
    gc_buf b;
    gc_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    gc_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    args = manifest_jappend(args, json_string(b.data));
    gc_buf_free(&b);
    return args;
}

static json_t *limits(const char *cpu, const char *memory)
{
    return json_pack("{s:{s:s, s:s}}", "limits", "cpu", cpu, "memory", memory);
}

/* Native sidecars are init containers that keep running; the head pod then finishes when the
 * user's container does, which is what lets the success policy end the JobSet. */
static json_t *as_sidecar(json_t *container, bool sidecar)
{
    return sidecar ? manifest_jset(container, "restartPolicy", json_string("Always")) : container;
}

static json_t *proxy_container(const gc_workload *w)
{
    json_t *args = json_array();
    args = args_printf(args, "--server_port=%d", PROXY_PORT);
    args = args_printf(args, "--resource_manager_address=$(PATHWAYS_HEAD):%d", RM_PORT);
    args = args_printf(args, "--gcs_scratch_location=%s", w->gcs_location);
    if (w->elastic_slices > 0)
        args = args_printf(args, "--num_elastic_slices=%d", w->elastic_slices);
    args = args_with_extras(args, &w->proxy_args);

    /* $(PATHWAYS_HEAD) in the args only expands if the container defines it (Google's
     * template forgets this, leaving the proxy a literal "$(PATHWAYS_HEAD):29001"). */
    json_t *env = manifest_with_user_env(
        json_pack("[o]", manifest_env_from_label("PATHWAYS_HEAD", JOBSET_COORDINATOR_LABEL)), w,
        GC_ENV_PROXY);
    const int ports[] = {PROXY_PORT};
    json_t *c = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o}", "name", PROXY_CONTAINER, "image",
                          w->proxy_image, "args", args, "env", env, "ports",
                          manifest_container_ports(ports, 1), "resources", limits("16", "100Gi"));
    return as_sidecar(c, !w->headless);
}

static json_t *resource_manager_container(const gc_workload *w)
{
    json_t *args = json_array();
    args = args_printf(args, "--server_port=%d", RM_PORT);
    args = args_printf(args, "--gcs_scratch_location=%s", w->gcs_location);
    args = args_printf(args, "--node_type=resource_manager");
    args = args_printf(args, "--instance_count=%d", w->num_slices);
    args = args_printf(args, "--instance_type=%s", w->compute.pathways_instance_type);
    args = args_with_extras(args, &w->server_args);

    json_t *env =
        json_pack("[o, o, o, o]",
                  manifest_env_from_annotation("REPLICATED_JOB_NAME", JOBSET_REPLICATED_JOB_KEY),
                  manifest_env_from_annotation("JOBSET_NAME", JOBSET_NAME_KEY),
                  manifest_env_from_label("HOST_ADDRESS", JOBSET_COORDINATOR_LABEL),
                  manifest_env_value("TPU_SKIP_MDS_QUERY", "true"));
    env = manifest_with_user_env(env, w, GC_ENV_SERVER);
    const int ports[] = {RM_PORT, RM_SECOND_PORT};
    json_t *c = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:[o]}", "name", RM_CONTAINER, "image",
                          w->server_image, "args", args, "env", env, "ports",
                          manifest_container_ports(ports, 2), "resources", limits("8", "32Gi"),
                          "volumeMounts", manifest_shared_tmp_mount());
    return as_sidecar(c, !w->headless);
}

static json_t *user_container(const gc_workload *w)
{
    char target[64];
    snprintf(target, sizeof(target), "grpc://$(PATHWAYS_HEAD):%d", PROXY_PORT);
    /* XCLOUD_ENVIRONMENT tells Pathways' client libraries they run on Google Cloud, as every
     * other Pathways launcher sets it. */
    json_t *env = json_pack("[o, o, o, o]",
                            manifest_env_from_label("PATHWAYS_HEAD", JOBSET_COORDINATOR_LABEL),
                            manifest_env_value("JAX_PLATFORMS", "proxy"),
                            manifest_env_value("JAX_BACKEND_TARGET", target),
                            manifest_env_value("XCLOUD_ENVIRONMENT", "GCP"));
    env = manifest_with_user_env(env, w, GC_ENV_WORKLOAD);
    return json_pack("{s:s, s:s, s:[s, s, s], s:o, s:o}", "name", WORKLOAD_CONTAINER, "image",
                     w->image, "command", "/bin/bash", "-c", w->command, "env", env, "volumeMounts",
                     manifest_user_volume_mounts(w, true));
}

static json_t *head_pod_spec(const gc_workload *w)
{
    json_t *spec = json_pack("{s:{s:s}, s:b, s:s, s:s, s:I}", "nodeSelector",
                             "cloud.google.com/gke-nodepool", w->head_pool, "hostNetwork", 1,
                             "dnsPolicy", "ClusterFirstWithHostNet", "restartPolicy", "Never",
                             "terminationGracePeriodSeconds", (json_int_t)w->grace_seconds);
    spec = manifest_set_identity(spec, w);
    if (w->sps) {
        /* A shared service has no proxy of its own: each client brings one (sps.c). */
        spec = manifest_jset(spec, "containers", json_pack("[o]", resource_manager_container(w)));
    } else if (w->headless) {
        spec =
            manifest_jset(spec, "containers",
                          json_pack("[o, o]", proxy_container(w), resource_manager_container(w)));
    } else {
        spec =
            manifest_jset(spec, "initContainers",
                          json_pack("[o, o]", proxy_container(w), resource_manager_container(w)));
        spec = manifest_jset(spec, "containers", json_pack("[o]", user_container(w)));
    }
    return manifest_jset(spec, "volumes", manifest_pod_volumes(w, !w->headless));
}

/* The head looks idle to the cluster autoscaler (little CPU while the TPUs work), and evicting
 * it to shrink the head pool ends the whole job; "false" tells the autoscaler to leave it. */
static json_t *head_pod_metadata(const gc_workload *w)
{
    return manifest_annotate(manifest_pod_metadata(w, !w->headless),
                             "cluster-autoscaler.kubernetes.io/safe-to-evict", "false");
}

static json_t *head_replicated_job(const gc_workload *w)
{
    json_t *job_spec = json_pack("{s:s, s:i, s:i, s:i}", "completionMode", "Indexed", "parallelism",
                                 1, "completions", 1, "backoffLimit", 0);
    if (w->restart_exit_code_count)
        job_spec =
            manifest_jset(job_spec, "podFailurePolicy",
                          manifest_pod_failure_policy(w, w->headless ? NULL : WORKLOAD_CONTAINER));
    job_spec = manifest_jset(
        job_spec, "template",
        json_pack("{s:o, s:o}", "metadata", head_pod_metadata(w), "spec", head_pod_spec(w)));
    return json_pack("{s:s, s:i, s:{s:o, s:o}}", "name", GC_PATHWAYS_HEAD, "replicas", 1,
                     "template", "metadata",
                     manifest_exclusive_job_metadata("kubernetes.io/hostname"), "spec", job_spec);
}

static json_t *worker_env(const gc_workload *w)
{
    json_t *env = json_array();
    if (w->verbose) {
        env = manifest_jappend(env, manifest_env_value("TPU_MIN_LOG_LEVEL", "0"));
        env = manifest_jappend(env, manifest_env_value("TF_CPP_MIN_LOG_LEVEL", "0"));
    }
    env = manifest_jappend(env, manifest_env_value("XCLOUD_ENVIRONMENT", "GCP"));
    env = manifest_jappend(env, manifest_env_value("MEGASCALE_GRPC_ENABLE_XOR_TRACER", "false"));
    env = manifest_jappend(env,
                           manifest_env_from_label("MEGASCALE_NUM_SLICES", JOBSET_REPLICAS_LABEL));
    env = manifest_jappend(env, manifest_env_from_annotation("JOBSET_NAME", JOBSET_NAME_KEY));
    env = manifest_jappend(
        env, manifest_env_from_annotation("REPLICATED_JOB_NAME", JOBSET_REPLICATED_JOB_KEY));
    env = manifest_jappend(env,
                           manifest_env_from_label("MEGASCALE_SLICE_ID", JOBSET_JOB_INDEX_LABEL));
    env = manifest_jappend(env, manifest_env_from_label("PATHWAYS_HEAD", JOBSET_COORDINATOR_LABEL));
    env = manifest_jappend(
        env, manifest_env_from_label("MEGASCALE_COORDINATOR_ADDRESS", JOBSET_COORDINATOR_LABEL));
    return manifest_with_user_env(env, w, GC_ENV_WORKER);
}

/* google.com/tpu plus cpu and memory: worker pods ask for all three at once, which a
 * ClusterQueue admits on one flavor when one resource group covers them; with cpu and memory in
 * a group of their own, only google.com/tpu (as xpk's workers). Extended resources need requests
 * equal to limits; cpu and memory are requests (limits too with --cpu-affinity numa, for
 * Guaranteed QoS and so exclusive, NUMA-aligned CPUs). */
static json_t *worker_resources(const gc_workload *w)
{
    json_int_t chips = w->compute.chips_per_vm;
    if (w->tpu_only_requests)
        return json_pack("{s:{s:I}, s:{s:I}}", "requests", "google.com/tpu", chips, "limits",
                         "google.com/tpu", chips);
    char cpu[16], memory[16];
    gc_tpu_worker_requests(w->compute.tpu_machine, cpu, memory);
    json_t *requests =
        json_pack("{s:s, s:s, s:I}", "cpu", cpu, "memory", memory, "google.com/tpu", chips);
    json_t *lim = w->numa_affinity ? json_pack("{s:s, s:s, s:I}", "cpu", cpu, "memory", memory,
                                               "google.com/tpu", chips)
                                   : json_pack("{s:I}", "google.com/tpu", chips);
    return json_pack("{s:o, s:o}", "requests", requests, "limits", lim);
}

static json_t *worker_container(const gc_workload *w)
{
    json_t *args = json_array();
    args = args_printf(args, "--server_port=%d", WORKER_PORT);
    args = args_printf(args, "--resource_manager_address=$(PATHWAYS_HEAD):%d", RM_PORT);
    args = args_printf(args, "--gcs_scratch_location=%s", w->gcs_location);
    /* MTC: the worker hands checkpoints to the colocated sidecar through this memory. */
    if (w->mtc)
        args =
            args_printf(args, "--cloud_pathways_sidecar_shm_directory=%s", SIDECAR_SHM_DIRECTORY);
    args = args_with_extras(args, &w->worker_args);
    const int ports[] = {WORKER_PORT, WORKER_SECOND_PORT, TPU_RUNTIME_PORT, TPU_METRICS_PORT};
    json_t *mounts = json_pack("[o]", manifest_shared_tmp_mount());
    if (w->mtc)
        mounts = manifest_mtc_volume_mounts(mounts, w, true);
    /* The user's mounts too: Google's gcluster mounts them in the workers as in the workload
     * container, so code running on the TPU hosts (and a headless job's) sees the same data. */
    json_t *user = manifest_user_volume_mounts(w, false);
    for (size_t i = 0; i < json_array_size(user); i++)
        mounts = manifest_jappend(mounts, json_incref(json_array_get(user, i)));
    json_decref(user);
    return json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "name", WORKER_CONTAINER, "image",
                     w->worker_image, "args", args, "env", worker_env(w), "ports",
                     manifest_container_ports(ports, 4), "resources", worker_resources(w),
                     "volumeMounts", mounts);
}

/* Colocated Python runs beside each TPU worker (it serves Python code next to the TPU host's
 * memory); as a native sidecar it never keeps a pod from finishing. */
static json_t *colocated_python_sidecar(const gc_workload *w)
{
    char address[32];
    snprintf(address, sizeof(address), "0.0.0.0:%d", SIDECAR_PORT);
    const int ports[] = {SIDECAR_PORT};
    /* As Google's gcluster starts it: memory returned to the system promptly (it holds
     * checkpoint copies), unbuffered Python output for the logs, and where the worker's shared
     * memory is mounted. */
    json_t *env =
        json_pack("[o, o, o, o]", manifest_env_value("TCMALLOC_RELEASE_RATE", "10"),
                  manifest_env_value("GRPC_SERVER_ADDRESS", address),
                  manifest_env_value("CLOUD_PATHWAYS_SIDECAR_SHM_DIRECTORY", SIDECAR_SHM_DIRECTORY),
                  manifest_env_value("PYTHONUNBUFFERED", "1"));
    json_t *mounts = json_pack("[o]", manifest_shared_tmp_mount());
    if (w->mtc)
        mounts = manifest_mtc_volume_mounts(mounts, w, true);
    json_t *c = json_pack("{s:s, s:s, s:o, s:o, s:o}", "name", "colocated-python-sidecar", "image",
                          w->sidecar_image, "env", env, "ports", manifest_container_ports(ports, 1),
                          "volumeMounts", mounts);
    return as_sidecar(c, true);
}

static json_t *worker_pod_spec(const gc_workload *w)
{
    json_t *spec = manifest_set_accelerator_placement(json_object(), w);
    spec = manifest_jset(spec, "hostNetwork", json_true());
    spec = manifest_jset(spec, "dnsPolicy", json_string("ClusterFirstWithHostNet"));
    spec = manifest_jset(spec, "restartPolicy", json_string("OnFailure"));
    spec = manifest_jset(spec, "terminationGracePeriodSeconds", json_integer(w->grace_seconds));
    spec = manifest_set_identity(spec, w);
    if (w->scheduler_name)
        spec = manifest_jset(spec, "schedulerName", json_string(w->scheduler_name));
    if (w->sidecar_image)
        spec = manifest_jset(spec, "initContainers", json_pack("[o]", colocated_python_sidecar(w)));
    spec = manifest_jset(spec, "containers", json_pack("[o]", worker_container(w)));
    json_t *volumes = manifest_pod_volumes(w, true);
    if (w->mtc)
        volumes = manifest_mtc_volumes(volumes, true);
    return manifest_jset(spec, "volumes", volumes);
}

/* The worker Job's backoffLimit: how many worker pod failures a slice survives before its Job
 * fails (and with it the JobSet, or one of its --restarts). A headless job's workers outlive
 * many JAX clients, and every client that goes away (a notebook restarted, a laptop's
 * connection dropped) or a preempted host can cost each worker a restart; with the batch
 * budget of 4 per host a few reconnects would end the job. pathways-utils' reference JobSet
 * (pathwaysutils/experimental/gke/jobset.py, max_slice_restarts=1_000_000, backoff_limit =
 * num_vms * max_slice_restarts) keeps headless workers alive that way, and so does this:
 * GC_HEADLESS_SLICE_RESTARTS per host unless --pathways-max-slice-restarts says otherwise, capped
 * at the int32 the Job API holds. */
static int worker_backoff_limit(const gc_workload *w)
{
    long long vms = w->compute.vms_per_slice;
    long long per_host = 4; /* batch: a few restarts per host before the slice counts as failed */
    if (w->headless && !w->max_slice_restarts_set)
        per_host = GC_HEADLESS_SLICE_RESTARTS;
    else if (w->elastic_slices > 0)
        per_host = w->max_slice_restarts; /* elastic: --pathways-max-slice-restarts per slice */
    long long limit = vms * per_host;
    return limit > INT32_MAX ? INT32_MAX : (int)limit;
}

static json_t *worker_replicated_job(const gc_workload *w)
{
    int vms = w->compute.vms_per_slice;
    int backoff = worker_backoff_limit(w);
    json_t *job_spec = json_pack(
        "{s:s, s:i, s:i, s:i, s:{s:o, s:o}}", "completionMode", "Indexed", "parallelism", vms,
        "completions", vms, "backoffLimit", backoff, "template", "metadata",
        manifest_slice_annotations(manifest_pod_metadata(w, true), w), "spec", worker_pod_spec(w));
    /* A multi-host TPU slice is one node pool, and two slices must never share one; dynamic
     * slices are carved out of one pool's blocks, and Kueue keeps them apart. */
    json_t *template = json_object();
    if (!w->dynamic_slicing)
        template = manifest_jset(template, "metadata",
                                 manifest_exclusive_job_metadata("cloud.google.com/gke-nodepool"));
    template = manifest_jset(template, "spec", job_spec);
    return json_pack("{s:s, s:i, s:o}", "name", GC_PATHWAYS_WORKER, "replicas", w->num_slices,
                     "template", template);
}

static json_t *failure_policy(const gc_workload *w)
{
    return json_pack("{s:i, s:s, s:[{s:s, s:[s]}]}", "maxRestarts", w->restarts, "restartStrategy",
                     "Recreate", "rules", "action", "FailJobSet", "onJobFailureReasons",
                     "PodFailurePolicy");
}

json_t *manifest_pathways_jobset(const gc_workload *w)
{
    json_t *spec = json_pack("{s:I, s:{s:b, s:b}, s:{s:s}, s:{s:s}}", "ttlSecondsAfterFinished",
                             (json_int_t)w->ttl_seconds, "network", "enableDNSHostnames", 1,
                             "publishNotReadyAddresses", 1, "coordinator", "replicatedJob",
                             GC_PATHWAYS_HEAD, "startupPolicy", "startupPolicyOrder", "InOrder");
    /* The job is done when the user's program is; headless servers run until cancelled. */
    if (!w->headless)
        spec = manifest_jset(
            spec, "successPolicy",
            json_pack("{s:s, s:[s]}", "operator", "All", "targetReplicatedJobs", GC_PATHWAYS_HEAD));
    spec = manifest_jset(spec, "failurePolicy", failure_policy(w));
    spec = manifest_jset(spec, "replicatedJobs",
                         json_pack("[o, o]", head_replicated_job(w), worker_replicated_job(w)));
    return manifest_jobset_object(w, spec);
}
