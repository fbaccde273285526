/*
 * The JobSet envelope shared by both shapes, and the ordinary (non-Pathways) shape: one
 * replicated job `main-job` with one Job per slice (TPU) or group (GPU/CPU) and one pod per
 * host, every pod running the user's command.
 */
#include "manifest/pod.h"

#include "gcluster/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gc_workload_free(gc_workload *w)
{
    char **owned[] = {&w->name,          &w->queue,           &w->priority,       &w->image,
                      &w->command,       &w->service_account, &w->scheduler_name, &w->gcs_location,
                      &w->head_pool,     &w->proxy_image,     &w->server_image,   &w->worker_image,
                      &w->sidecar_image, &w->mtc_ramdisk_dir};
    for (size_t i = 0; i < sizeof(owned) / sizeof(*owned); i++) {
        free(*owned[i]);
        *owned[i] = NULL;
    }
    gc_strings *lists[] = {&w->pull_secrets, &w->nap_tolerations, &w->proxy_args, &w->server_args,
                           &w->worker_args};
    for (size_t i = 0; i < sizeof(lists) / sizeof(*lists); i++)
        gc_strings_free(lists[i]);
    for (size_t i = 0; i < w->node_term_count; i++) {
        free(w->node_terms[i].key);
        gc_strings_free(&w->node_terms[i].values);
    }
    free(w->node_terms);
    for (size_t i = 0; i < w->mount_count; i++) {
        free(w->mounts[i].source);
        free(w->mounts[i].source_dir);
        free(w->mounts[i].target);
        free(w->mounts[i].options);
        gc_strings_free(&w->mounts[i].attributes);
        free(w->mounts[i].profile);
        free(w->mounts[i].gateway);
    }
    free(w->mounts);
    for (size_t i = 0; i < w->env_count; i++) {
        free(w->env[i].name);
        free(w->env[i].value);
        free(w->env[i].source);
    }
    free(w->env);
    free(w->restart_exit_codes);
    w->node_terms = NULL;
    w->mounts = NULL;
    w->env = NULL;
    w->restart_exit_codes = NULL;
    w->node_term_count = w->mount_count = w->env_count = w->restart_exit_code_count = 0;
}

static json_t *verbose_env(const gc_workload *w, json_t *env)
{
    if (!w->verbose)
        return env;
    if (w->compute.kind == GC_ACCEL_TPU) {
        env = manifest_jappend(env, manifest_env_value("TPU_STDERR_LOG_LEVEL", "0"));
        env = manifest_jappend(env, manifest_env_value("TPU_MIN_LOG_LEVEL", "0"));
        env = manifest_jappend(env, manifest_env_value("TF_CPP_MIN_LOG_LEVEL", "0"));
        env =
            manifest_jappend(env, manifest_env_value("TPU_VMODULE", "real_program_continuator=1"));
    } else if (w->compute.kind == GC_ACCEL_GPU) {
        env = manifest_jappend(env, manifest_env_value("NCCL_DEBUG", "INFO"));
    }
    return env;
}

/* Multi-slice TPU jobs without Pathways talk over DCN through megascale, which needs to know
 * the slice count, its own slice and the first host of slice 0. */
static json_t *multislice_env(const gc_workload *w, json_t *env)
{
    if (w->compute.kind != GC_ACCEL_TPU || w->num_slices < 2)
        return env;
    char *coordinator = gc_xasprintf("%s-%s-0-0.%s", w->name, GC_MAIN_JOB, w->name);
    env = manifest_jappend(env,
                           manifest_env_from_label("MEGASCALE_NUM_SLICES", JOBSET_REPLICAS_LABEL));
    env = manifest_jappend(env,
                           manifest_env_from_label("MEGASCALE_SLICE_ID", JOBSET_JOB_INDEX_LABEL));
    env = manifest_jappend(env, manifest_env_value("MEGASCALE_COORDINATOR_ADDRESS", coordinator));
    free(coordinator);
    return env;
}

static json_t *main_resources(const gc_workload *w, int containers)
{
    const gc_compute *c = &w->compute;
    if (c->kind == GC_ACCEL_TPU) {
        json_int_t chips = c->chips_per_vm / containers;
        if (!w->numa_affinity)
            return json_pack("{s:{s:I}}", "limits", "google.com/tpu", chips);
        char cpu[16], memory[16];
        gc_tpu_worker_requests(c->tpu_machine, cpu, memory);
        return json_pack("{s:{s:s, s:s, s:I}}", "limits", "cpu", cpu, "memory", memory,
                         "google.com/tpu", chips);
    }
    if (c->kind == GC_ACCEL_GPU)
        return json_pack("{s:{s:i}}", "limits", "nvidia.com/gpu", c->gpus_per_vm);
    /* Leave a little of the machine to the kubelet and system daemons. */
    int cpus = c->vcpus * 95 / 100;
    char cpu[16];
    snprintf(cpu, sizeof(cpu), "%d", cpus > 0 ? cpus : 1);
    return json_pack("{s:{s:s}}", "limits", "cpu", cpu);
}

static json_t *main_container(const gc_workload *w, const char *name, int containers)
{
    json_t *env =
        manifest_with_user_env(multislice_env(w, verbose_env(w, json_array())), w, GC_ENV_WORKLOAD);
    json_t *c = json_pack("{s:s, s:s, s:[s, s, s]}", "name", name, "image", w->image, "command",
                          "/bin/bash", "-c", w->command);
    if (env && !json_array_size(env))
        json_decref(env);
    else
        c = manifest_jset(c, "env", env);
    c = manifest_jset(c, "resources", main_resources(w, containers));
    if (w->mount_count || w->mtc) {
        json_t *mounts = manifest_user_volume_mounts(w, false);
        c = manifest_jset(c, "volumeMounts",
                          w->mtc ? manifest_mtc_volume_mounts(mounts, w, false) : mounts);
    }
    return c;
}

static json_t *main_containers(const gc_workload *w)
{
    if (!w->parallel_containers)
        return json_pack("[o]", main_container(w, WORKLOAD_CONTAINER, 1));
    /* TPU7x hosts run two processes, each owning half the chips (Google's default). */
    return json_pack("[o, o]", main_container(w, WORKLOAD_CONTAINER "-1", 2),
                     main_container(w, WORKLOAD_CONTAINER "-2", 2));
}

static json_t *main_pod_spec(const gc_workload *w)
{
    json_t *spec = manifest_set_accelerator_placement(json_object(), w);
    if (w->compute.kind != GC_ACCEL_CPU) {
        spec = manifest_jset(spec, "hostNetwork", json_true());
        spec = manifest_jset(spec, "dnsPolicy", json_string("ClusterFirstWithHostNet"));
    }
    spec = manifest_jset(spec, "restartPolicy", json_string("Never"));
    spec = manifest_jset(spec, "terminationGracePeriodSeconds", json_integer(w->grace_seconds));
    spec = manifest_set_identity(spec, w);
    if (w->scheduler_name)
        spec = manifest_jset(spec, "schedulerName", json_string(w->scheduler_name));
    spec = manifest_jset(spec, "containers", main_containers(w));
    if (w->mount_count || w->mtc) {
        json_t *volumes = manifest_pod_volumes(w, true);
        /* no shared /tmp without Pathways */
        if (json_array_remove(volumes, 0) != 0) {
            json_decref(volumes);
            volumes = NULL;
        }
        spec =
            manifest_jset(spec, "volumes", w->mtc ? manifest_mtc_volumes(volumes, false) : volumes);
    }
    return spec;
}

static json_t *main_replicated_job(const gc_workload *w)
{
    json_t *job_spec =
        json_pack("{s:s, s:i, s:i, s:i}", "completionMode", "Indexed", "parallelism",
                  w->nodes_per_slice, "completions", w->nodes_per_slice, "backoffLimit", 0);
    if (w->restart_exit_code_count)
        job_spec = manifest_jset(
            job_spec, "podFailurePolicy",
            manifest_pod_failure_policy(w, w->parallel_containers ? NULL : WORKLOAD_CONTAINER));
    job_spec =
        manifest_jset(job_spec, "template",
                      json_pack("{s:o, s:o}", "metadata",
                                manifest_slice_annotations(manifest_pod_metadata(w, true), w),
                                "spec", main_pod_spec(w)));

    json_t *template = json_object();
    /* A multi-host TPU slice is one node pool; two slices must never share one. Dynamic slices
     * are carved out of one pool's blocks, and Kueue keeps them apart. */
    if (w->compute.kind == GC_ACCEL_TPU && !w->dynamic_slicing)
        template = manifest_jset(template, "metadata",
                                 manifest_exclusive_job_metadata("cloud.google.com/gke-nodepool"));
    template = manifest_jset(template, "spec", job_spec);
    return json_pack("{s:s, s:i, s:o}", "name", GC_MAIN_JOB, "replicas", w->num_slices, "template",
                     template);
}

/* The ordinary JobSet, unchecked: NULL when a part could not be built. */
static json_t *plain_jobset(const gc_workload *w)
{
    json_t *spec = json_pack("{s:I, s:{s:i, s:[{s:s, s:[s]}]}, s:[o]}", "ttlSecondsAfterFinished",
                             (json_int_t)w->ttl_seconds, "failurePolicy", "maxRestarts",
                             w->restarts, "rules", "action", "FailJobSet", "onJobFailureReasons",
                             "PodFailurePolicy", "replicatedJobs", main_replicated_job(w));
    return manifest_jobset_object(w, spec);
}

/* Two of the user's variables that would land in one container. Each flag reaches one container
 * only, so --env K=V with --pathways-proxy-env K=W sets K in two different containers: no
 * conflict. */
static int check_user_env(const gc_workload *w, gc_error *err)
{
    for (size_t i = 0; i < w->env_count; i++) {
        for (size_t j = i + 1; j < w->env_count; j++) {
            const gc_env_var *a = &w->env[i], *b = &w->env[j];
            if (a->scope == b->scope && !strcmp(a->name, b->name))
                return gc_fail(err, GC_EXIT_USAGE,
                               "%s and %s both set %s for the same container; keep one", a->source,
                               b->source, a->name);
        }
    }
    return 0;
}

/* The user's variables a container gets: a Pathways server its role's own flag, the workload
 * container(s) --env and --env-file, any other container none. */
static gc_env_scope container_scope(const char *container)
{
    if (!strcmp(container, PROXY_CONTAINER))
        return GC_ENV_PROXY;
    if (!strcmp(container, RM_CONTAINER))
        return GC_ENV_SERVER;
    if (!strcmp(container, WORKER_CONTAINER))
        return GC_ENV_WORKER;
    return strncmp(container, WORKLOAD_CONTAINER, strlen(WORKLOAD_CONTAINER)) ? GC_ENV_NONE
                                                                              : GC_ENV_WORKLOAD;
}

/* What gcluster itself sets `entry` (an env item) to, for a message. */
static void describe_env(const json_t *entry, char *out, size_t size)
{
    const char *name = json_string_value(json_object_get(entry, "name"));
    const char *value = json_string_value(json_object_get(entry, "value"));
    const char *field = json_string_value(json_object_get(
        json_object_get(json_object_get(entry, "valueFrom"), "fieldRef"), "fieldPath"));
    if (value)
        snprintf(out, size, "%s=%s", name, value);
    else
        snprintf(out, size, "%s from the pod's %s", name, field ? field : "fields");
}

/* gcluster's variables come first in every container, the user's after them (see
 * manifest_with_user_env), so a name seen twice is the user's second. Kubernetes would keep the
 * last one silently, and the job would run without what Pathways needs. */
static int check_container_env(const gc_workload *w, const json_t *container, gc_error *err)
{
    const char *container_name = json_string_value(json_object_get(container, "name"));
    const json_t *env = json_object_get(container, "env");
    gc_env_scope scope = container_scope(container_name);
    for (size_t i = 0; i < json_array_size(env); i++) {
        const char *name = json_string_value(json_object_get(json_array_get(env, i), "name"));
        for (size_t j = 0; j < w->env_count; j++) {
            const gc_env_var *v = &w->env[j];
            if (v->scope != scope || strcmp(v->name, name))
                continue;
            size_t first = 0;
            while (strcmp(json_string_value(json_object_get(json_array_get(env, first), "name")),
                          name))
                first++;
            if (first == i)
                continue;
            char ours[256];
            describe_env(json_array_get(env, first), ours, sizeof(ours));
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s sets %s, which gcluster already sets in container %s (%s) for the "
                           "job to work; remove it from %s or use another name",
                           v->source, name, container_name, ours, v->source);
        }
    }
    return 0;
}

static int check_containers(const gc_workload *w, const json_t *pod_spec, gc_error *err)
{
    static const char *const lists[] = {"initContainers", "containers"};
    for (size_t l = 0; l < 2; l++) {
        const json_t *containers = json_object_get(pod_spec, lists[l]);
        for (size_t i = 0; i < json_array_size(containers); i++) {
            int rc = check_container_env(w, json_array_get(containers, i), err);
            if (rc)
                return rc;
        }
    }
    return 0;
}

int gc_workload_jobset(const gc_workload *w, json_t **jobset, gc_error *err)
{
    *jobset = NULL;
    int rc = check_user_env(w, err);
    if (rc)
        return rc;
    json_t *built = w->pathways ? manifest_pathways_jobset(w) : plain_jobset(w);
    if (!built)
        return gc_fail(err, GC_EXIT_USAGE,
                       "the JobSet %s cannot be built: one of its values is missing or is not "
                       "valid UTF-8",
                       w->name ? w->name : "(unnamed)");
    const json_t *jobs = json_object_get(json_object_get(built, "spec"), "replicatedJobs");
    for (size_t i = 0; !rc && i < json_array_size(jobs); i++) {
        const json_t *job_spec =
            json_object_get(json_object_get(json_array_get(jobs, i), "template"), "spec");
        rc = check_containers(w, json_object_get(json_object_get(job_spec, "template"), "spec"),
                              err);
    }
    if (rc)
        json_decref(built);
    else
        *jobset = built;
    return rc;
}
