/*
 * What the cluster must have for the features a job asks for beyond JobSet and Kueue, checked by
 * a connected `job submit` before anything is created (one batch of reads, only for a job that
 * uses one of them):
 *
 * - Multi-tier checkpointing (--gke-mtc-enabled): GKE's HighScaleCheckpointing add-on installs
 *   the CheckpointConfiguration CRD (checkpointconfigurations.checkpointing.gke.io) and the
 *   multitier-checkpoint.csi.storage.gke.io CSI driver; the driver mounts nothing until a
 *   CheckpointConfiguration says which Cloud Storage bucket backs the checkpoints and how much
 *   memory the RAM disk gets. Without them the worker pods stay ContainerCreating (the CSI
 *   volume cannot be attached) while the job holds its TPUs.
 * - TPU7x dynamic slicing (--compute-type tpu-v7x-slice): Kueue places the pods by
 *   topology-aware scheduling, which needs a Topology object, and GKE's slice controller forms
 *   the slice as the admission check (controllerName accelerator.gke.io/slice) of the job's
 *   ClusterQueue. Without them Kueue never admits the job, or admits it onto nodes that are no
 *   slice.
 *
 * Each missing piece is an error that names the fix; what the user may not read is a warning
 * (not checked), and so is a Topology without the partition level the pods ask for.
 */
#include "gcluster/buf.h"
#include "gcluster/kube.h"
#include "gcluster/submit.h"
#include "submit/submit_checks.h"

#include <stdlib.h>
#include <string.h>

#define MTC_CRD          "checkpointconfigurations.checkpointing.gke.io"
#define MTC_CSI_DRIVER   "multitier-checkpoint.csi.storage.gke.io"
#define SLICE_CONTROLLER "accelerator.gke.io/slice"

enum { MTC_CRD_READ, MTC_CONFIGS, MTC_DRIVER, TOPOLOGIES, ADMISSION_CHECKS, READS };

typedef struct needs_reads {
    gc_kube_read reads[READS];
    size_t index[READS]; /* where each read is in `reads`, or READS when it is not made */
    size_t count;
    char *paths[READS];
    json_t *crd, *driver;                            /* gets */
    json_t *configs, *topologies, *admission_checks; /* lists */
} needs_reads;

static int collect(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    json_array_append(ctx, item);
    return 0;
}

static void add_get(needs_reads *n, int which, char *path, json_t **into)
{
    n->paths[which] = path;
    n->index[which] = n->count;
    n->reads[n->count++] = (gc_kube_read){.path = path, .object = into};
}

static void add_list(needs_reads *n, int which, char *path, json_t *into)
{
    n->paths[which] = path;
    n->index[which] = n->count;
    n->reads[n->count++] = (gc_kube_read){.path = path, .on_item = collect, .ctx = into};
}

static const gc_kube_read *read_of(const needs_reads *n, int which)
{
    return n->index[which] < READS ? &n->reads[n->index[which]] : NULL;
}

static void needs_reads_free(needs_reads *n)
{
    for (size_t i = 0; i < READS; i++)
        free(n->paths[i]);
    json_decref(n->crd);
    json_decref(n->driver);
    json_decref(n->configs);
    json_decref(n->topologies);
    json_decref(n->admission_checks);
}

/* Whether a read found nothing (404), may not be made (403: a warning, not checked), or failed
 * otherwise (the API server's error stands). */
static int read_outcome(const gc_kube_read *r, const char *what, gc_strings *warnings,
                        bool *missing, gc_error *err)
{
    *missing = false;
    if (!r->rc)
        return 0;
    if (r->err.http_status == 404) {
        *missing = true;
        return 0;
    }
    if (r->err.http_status == 403) {
        char *text = gc_xasprintf("you may not read %s: whether the cluster has it was not "
                                  "checked",
                                  what);
        gc_strings_push(warnings, text);
        free(text);
        return 0;
    }
    *err = r->err;
    return r->rc;
}

static int check_mtc(const needs_reads *n, gc_strings *warnings, gc_error *err)
{
    static const char enable[] =
        "enable GKE's multi-tier checkpointing on the cluster (gcloud container clusters update "
        "CLUSTER --location LOCATION --update-addons=HighScaleCheckpointing=ENABLED, which needs "
        "the GcsFuseCsiDriver add-on too; in a Cluster Toolkit blueprint "
        "enable_multi_tier_checkpointing: true), or submit without --gke-mtc-enabled";
    bool missing, no_kind;
    int rc = read_outcome(read_of(n, MTC_CRD_READ), "CustomResourceDefinition " MTC_CRD, warnings,
                          &missing, err);
    /* The list answers 404 when the API server does not serve the kind: no CRD either. */
    if (!rc)
        rc = read_outcome(read_of(n, MTC_CONFIGS), "CheckpointConfigurations", warnings, &no_kind,
                          err);
    if (!rc && (missing || no_kind))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--gke-mtc-enabled: the cluster has no CheckpointConfiguration CRD (" MTC_CRD
                       "), so multi-tier checkpointing is not enabled; %s",
                       enable);
    if (!rc)
        rc = read_outcome(read_of(n, MTC_DRIVER), "CSIDriver " MTC_CSI_DRIVER, warnings, &missing,
                          err);
    if (!rc && missing)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--gke-mtc-enabled: the cluster has no CSI driver " MTC_CSI_DRIVER
                       ", so the workers' checkpoint volume could never be mounted; %s",
                       enable);
    if (!rc && !read_of(n, MTC_CONFIGS)->rc && json_array_size(n->configs) == 0)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--gke-mtc-enabled: the cluster has no CheckpointConfiguration, so the "
                       "multi-tier checkpointing driver does not know where to keep checkpoints; "
                       "create one (apiVersion checkpointing.gke.io/v1, kind "
                       "CheckpointConfiguration, spec.cloudStorageBucketName: BUCKET, "
                       "spec.inMemoryVolumeSize: 50Gi; Cluster Toolkit's gke-cluster module makes "
                       "it from mtc_target_bucket), or submit without --gke-mtc-enabled");
    return rc;
}

static bool has_string(const json_t *array, const char *value)
{
    size_t i;
    const json_t *v;
    json_array_foreach(array, i, v)
    {
        const char *s = json_is_string(v) ? json_string_value(v) : gc_kube_string(v, "name");
        if (s && !strcmp(s, value))
            return true;
    }
    return false;
}

/* Whether ClusterQueue `cq` runs admission check `name`: spec.admissionChecks (names), or
 * spec.admissionChecksStrategy.admissionChecks (objects with a name). */
static bool queue_runs_check(const json_t *cq, const char *name)
{
    const json_t *spec = json_object_get(cq, "spec");
    const json_t *strategy = json_object_get(spec, "admissionChecksStrategy");
    return has_string(json_object_get(spec, "admissionChecks"), name) ||
           has_string(json_object_get(strategy, "admissionChecks"), name);
}

/* The Topology levels (node labels) of every Topology, for a message and the level check. */
static bool some_topology_has_level(const json_t *topologies, const char *level)
{
    size_t i;
    const json_t *t;
    json_array_foreach(topologies, i, t)
    {
        size_t j;
        const json_t *l;
        json_array_foreach(json_object_get(json_object_get(t, "spec"), "levels"), j, l)
        {
            const char *label = gc_kube_string(l, "nodeLabel");
            if (label && !strcmp(label, level))
                return true;
        }
    }
    return false;
}

static int check_slicing(const needs_reads *n, const gc_workload *w, const cluster_facts *f,
                         gc_strings *warnings, gc_error *err)
{
    static const char configure[] =
        "configure Kueue for TPU7x dynamic slicing (Cluster Toolkit's "
        "kueue-configuration-dynamic-slicing template, enable_dynamic_slicing_for_tpus: true, "
        "with GKE's slice controller), or submit a fixed slice (--compute-type tpu7x --topology T)";
    if (!f->kueue_version)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--compute-type tpu-v7x-slice: Kueue is not installed, and dynamic slices "
                       "are placed by Kueue's topology-aware scheduling; %s",
                       configure);
    bool missing;
    int rc = read_outcome(read_of(n, TOPOLOGIES), "Kueue Topologies", warnings, &missing, err);
    if (!rc && (missing || (!read_of(n, TOPOLOGIES)->rc && !json_array_size(n->topologies))))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--compute-type tpu-v7x-slice: the cluster has no Kueue Topology, so Kueue "
                       "cannot place the pods of a dynamic slice; %s",
                       configure);
    if (rc)
        return rc;
    rc = read_outcome(read_of(n, ADMISSION_CHECKS), "Kueue AdmissionChecks", warnings, &missing,
                      err);
    /* Not served (404) is none at all; forbidden was a warning, and nothing more is known. */
    if (rc || (read_of(n, ADMISSION_CHECKS)->rc && !missing))
        return rc;
    /* The slice controller's check, preferring one the job's ClusterQueue runs. */
    const char *check = NULL;
    size_t i;
    const json_t *ac;
    json_array_foreach(n->admission_checks, i, ac)
    {
        const char *controller = gc_kube_string(json_object_get(ac, "spec"), "controllerName");
        const char *name = gc_kube_string(json_object_get(ac, "metadata"), "name");
        if (!controller || strcmp(controller, SLICE_CONTROLLER) || !name)
            continue;
        if (!check || !f->cluster_queue_object || queue_runs_check(f->cluster_queue_object, name))
            check = name;
    }
    if (!check)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--compute-type tpu-v7x-slice: the cluster has no AdmissionCheck of GKE's "
                       "slice controller (controllerName " SLICE_CONTROLLER
                       "), so nothing would form the slice; %s",
                       configure);
    if (f->cluster_queue_object && !queue_runs_check(f->cluster_queue_object, check))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--compute-type tpu-v7x-slice: ClusterQueue %s (of LocalQueue %s) does not "
                       "run the slice controller's AdmissionCheck %s, so Kueue would admit the "
                       "job without forming its slice; add %s to the ClusterQueue's "
                       "spec.admissionChecks, or submit to a --queue whose ClusterQueue has it",
                       f->cluster_queue, f->queue, check, check);
    char *level = gc_xasprintf("cloud.google.com/gke-tpu-partition-%s-id", w->compute.topology);
    if (!some_topology_has_level(n->topologies, level)) {
        char *text = gc_xasprintf("no Kueue Topology has the level %s that the pods of a %s "
                                  "dynamic slice ask for; Kueue admits them only when the nodes "
                                  "carry that label",
                                  level, w->compute.topology);
        gc_strings_push(warnings, text);
        free(text);
    }
    free(level);
    return 0;
}

int submit_check_cluster_needs(gc_kube *kube, const gc_submit_plan *plan, const cluster_facts *f,
                               gc_strings *warnings, gc_error *err)
{
    const gc_workload *w = &plan->workload;
    if (!w->mtc && !w->dynamic_slicing)
        return 0;
    if (plan->skip_prereqs) {
        gc_strings_push(warnings, w->mtc ? "--skip-prereqs: whether the cluster has multi-tier "
                                           "checkpointing was not checked"
                                         : "--skip-prereqs: whether the cluster has TPU7x "
                                           "dynamic slicing was not checked");
        return 0;
    }
    needs_reads n;
    memset(&n, 0, sizeof(n));
    for (size_t i = 0; i < READS; i++)
        n.index[i] = READS;
    n.configs = json_array();
    n.topologies = json_array();
    n.admission_checks = json_array();
    if (w->mtc) {
        add_get(
            &n, MTC_CRD_READ,
            gc_kube_path("apiextensions.k8s.io", "v1", NULL, "customresourcedefinitions", MTC_CRD),
            &n.crd);
        add_list(&n, MTC_CONFIGS,
                 gc_kube_path("checkpointing.gke.io", "v1", NULL, "checkpointconfigurations", NULL),
                 n.configs);
        add_get(&n, MTC_DRIVER,
                gc_kube_path("storage.k8s.io", "v1", NULL, "csidrivers", MTC_CSI_DRIVER),
                &n.driver);
    }
    if (w->dynamic_slicing && f->kueue_version) {
        add_list(&n, TOPOLOGIES,
                 gc_kube_path("kueue.x-k8s.io", f->kueue_version, NULL, "topologies", NULL),
                 n.topologies);
        add_list(&n, ADMISSION_CHECKS,
                 gc_kube_path("kueue.x-k8s.io", f->kueue_version, NULL, "admissionchecks", NULL),
                 n.admission_checks);
    }
    if (n.count)
        gc_kube_read_all(kube, n.reads, n.count);
    int rc = w->mtc ? check_mtc(&n, warnings, err) : 0;
    if (!rc && w->dynamic_slicing)
        rc = check_slicing(&n, w, f, warnings, err);
    needs_reads_free(&n);
    return rc;
}
