/*
 * The Jobs a JobSet's controller will create, built here so a submit can have the API server
 * validate them (a server-side dry run) before the JobSet exists. The API server checks only a
 * JobSet's own schema; the Job and pod templates inside it are validated when the controller
 * creates each Job, after submit has returned, where a rejection leaves the job stuck.
 *
 * Each Job is built as the JobSet controller builds it (sigs.k8s.io/jobset, constructJob and
 * labelAndAnnotateObject): the replicated job's template, named <jobset>-<replicated job>-<index>,
 * its Job and pod template labelled and annotated with the jobset.sigs.k8s.io keys, the pod's
 * subdomain set when DNS hostnames are on, and suspended, as the Jobs of a JobSet Kueue holds
 * are until it is admitted. Two keys are left out: the JobSet's UID and the job key (a hash of the
 * Job's name), which do not exist before the JobSet does and whose form never fails validation.
 * No owner reference either: Kueue's Job webhook would look the owner up, and it does not exist
 * yet. Without the queue-name label Kueue does not manage the Jobs as workloads of their own.
 */
#include "submit/submit_checks.h"

#include "gcluster/buf.h"
#include "gcluster/checked.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *text(const json_t *object, const char *key)
{
    return json_string_value(json_object_get(object, key));
}

static json_int_t replicas_of(const json_t *rjob)
{
    json_t *r = json_object_get(rjob, "replicas");
    return r ? json_integer_value(r) : 1;
}

/* "<jobset>-<replicated job>-<job>-<pod>.<subdomain>": the coordinator pod's DNS name. */
static char *coordinator_endpoint(const json_t *jobset, const char *name, const char *subdomain)
{
    const json_t *c = json_object_get(json_object_get(jobset, "spec"), "coordinator");
    if (!c)
        return NULL;
    return gc_xasprintf("%s-%s-%lld-%lld.%s", name, text(c, "replicatedJob"),
                        (long long)json_integer_value(json_object_get(c, "jobIndex")),
                        (long long)json_integer_value(json_object_get(c, "podIndex")), subdomain);
}

static void set_number(json_t *map, const char *key, json_int_t value)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%lld", (long long)value);
    json_object_set_new(map, key, json_string(buf));
}

/* The keys the controller puts on a Job and on its pod template, as labels and as annotations.
 * Replicated jobs without a group are in group "default" (the JobSet webhook's default). */
static json_t *jobset_keys(const json_t *jobset, const json_t *rjob, json_int_t index)
{
    const char *name = text(json_object_get(jobset, "metadata"), "name");
    const json_t *rjobs = json_object_get(json_object_get(jobset, "spec"), "replicatedJobs");
    const char *group = text(rjob, "groupName") ? text(rjob, "groupName") : "default";
    json_int_t global = 0, before = 0, in_group = 0, group_before = 0;
    size_t i;
    const json_t *r;
    json_array_foreach(rjobs, i, r)
    {
        const char *g = text(r, "groupName") ? text(r, "groupName") : "default";
        if (r == rjob) {
            before = global;
            group_before = in_group;
        }
        global = gc_saturating_add(global, replicas_of(r));
        if (!strcmp(g, group))
            in_group = gc_saturating_add(in_group, replicas_of(r));
    }
    json_t *keys = json_object();
    json_object_set_new(keys, "jobset.sigs.k8s.io/jobset-name", json_string(name));
    json_object_set_new(keys, "jobset.sigs.k8s.io/replicatedjob-name",
                        json_string(text(rjob, "name")));
    set_number(keys, "jobset.sigs.k8s.io/restart-attempt", 0);
    set_number(keys, "jobset.sigs.k8s.io/replicatedjob-replicas", replicas_of(rjob));
    set_number(keys, "jobset.sigs.k8s.io/global-replicas", global);
    set_number(keys, "jobset.sigs.k8s.io/job-index", index);
    set_number(keys, "jobset.sigs.k8s.io/job-global-index", before + index);
    json_object_set_new(keys, "jobset.sigs.k8s.io/group-name", json_string(group));
    set_number(keys, "jobset.sigs.k8s.io/group-replicas", in_group);
    set_number(keys, "jobset.sigs.k8s.io/job-group-index", group_before + index);
    return keys;
}

/* Adds `keys` to object.metadata's labels and annotations (making them as needed). */
static void label_and_annotate(json_t *object, json_t *keys)
{
    json_t *metadata = json_object_get(object, "metadata");
    if (!metadata) {
        metadata = json_object();
        json_object_set_new(object, "metadata", metadata);
    }
    const char *fields[] = {"labels", "annotations"};
    for (size_t i = 0; i < 2; i++) {
        json_t *map = json_object_get(metadata, fields[i]);
        if (!map) {
            map = json_object();
            json_object_set_new(metadata, fields[i], map);
        }
        json_object_update(map, keys);
    }
}

static json_t *child_job(const json_t *jobset, const json_t *rjob, const char *ns, json_int_t index)
{
    const char *name = text(json_object_get(jobset, "metadata"), "name");
    const json_t *network = json_object_get(json_object_get(jobset, "spec"), "network");
    const char *subdomain = text(network, "subdomain") ? text(network, "subdomain") : name;
    const json_t *template = json_object_get(rjob, "template");

    json_t *metadata = json_deep_copy(json_object_get(template, "metadata"));
    json_t *job = json_pack("{s:s, s:s, s:o}", "apiVersion", "batch/v1", "kind", "Job", "metadata",
                            metadata ? metadata : json_object());
    char *job_name = gc_xasprintf("%s-%s-%lld", name, text(rjob, "name"), (long long)index);
    metadata = json_object_get(job, "metadata");
    json_object_set_new(metadata, "name", json_string(job_name));
    json_object_set_new(metadata, "namespace", json_string(ns));
    free(job_name);

    json_t *spec = json_deep_copy(json_object_get(template, "spec"));
    json_object_set_new(job, "spec", spec ? spec : json_object());
    spec = json_object_get(job, "spec");
    json_object_set_new(spec, "suspend", json_true());

    json_t *keys = jobset_keys(jobset, rjob, index);
    char *coordinator = coordinator_endpoint(jobset, name, subdomain);
    if (coordinator)
        json_object_set_new(keys, "jobset.sigs.k8s.io/coordinator", json_string(coordinator));
    free(coordinator);
    label_and_annotate(job, keys);
    json_t *pod_template = json_object_get(spec, "template");
    if (pod_template) {
        label_and_annotate(pod_template, keys);
        if (json_is_true(json_object_get(network, "enableDNSHostnames")))
            json_object_set_new(json_object_get(pod_template, "spec"), "subdomain",
                                json_string(subdomain));
    }
    json_decref(keys);
    return job;
}

json_t *submit_child_jobs(const json_t *jobset, const char *ns)
{
    json_t *jobs = json_array();
    size_t i;
    const json_t *rjob;
    json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i, rjob)
        json_array_append_new(jobs, child_job(jobset, rjob, ns, 0));
    return jobs;
}

/* Fields of a Job that only a flag sets, by a piece of their path in the API server's message. */
static const struct {
    const char *field;
    const char *flag;
} field_flags[] = {
    {"podFailurePolicy", "--restart-on-exit-codes"},
    {".volumes[", "--mount"},
    /* "volumeMounts[0].mountPath", and "volumeMounts.subPath" as Kubernetes 1.35 words it */
    {".volumeMounts", "--mount"},
    {"schedulerName", "--gke-scheduler"},
    {"serviceAccountName", "--service-account"},
    {"imagePullSecrets", "--image-pull-secret"},
    {"priorityClassName", "--priority"},
    {"terminationGracePeriodSeconds", "--grace-period"},
    {"nodeAffinity", "--node-constraint or --placement-policy"},
};

static void add_flag(gc_buf *out, const char *flag)
{
    if (out->len && strstr(out->data, flag))
        return;
    gc_buf_printf(out, "%s%s", out->len ? ", " : "", flag);
}

/* The user variable that env entry `index` of a container of the rejected Job holds, by name. */
static const char *env_source(const json_t *job, const char *containers, size_t container,
                              size_t index, const gc_workload *w)
{
    const json_t *spec =
        json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec");
    const json_t *c = json_array_get(json_object_get(spec, containers), container);
    const char *name = text(json_array_get(json_object_get(c, "env"), index), "name");
    for (size_t i = 0; name && i < w->env_count; i++)
        if (!strcmp(w->env[i].name, name))
            return w->env[i].source;
    return NULL;
}

static void env_flags(const char *message, const char *containers, const json_t *job,
                      const gc_workload *w, gc_buf *out)
{
    char pattern[32];
    snprintf(pattern, sizeof(pattern), ".%s[", containers);
    for (const char *p = strstr(message, pattern); p; p = strstr(p + 1, pattern)) {
        size_t container, index;
        int used = 0;
        if (sscanf(p + strlen(pattern), "%zu].env[%zu]%n", &container, &index, &used) == 2 &&
            used) {
            const char *source = env_source(job, containers, container, index, w);
            if (source)
                add_flag(out, source);
        }
    }
}

void submit_rejected_flags(const char *message, const json_t *job, const gc_workload *w,
                           gc_buf *out)
{
    for (size_t i = 0; i < sizeof(field_flags) / sizeof(field_flags[0]); i++) {
        /* Volumes and mounts come from --mount only when it was given; otherwise an overlay
         * (--gke-custom-templates-path) put them there. */
        if (!strcmp(field_flags[i].flag, "--mount") && !w->mount_count)
            continue;
        if (strstr(message, field_flags[i].field))
            add_flag(out, field_flags[i].flag);
    }
    env_flags(message, "containers", job, w, out);
    env_flags(message, "initContainers", job, w, out);
}
