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

#define MTC_CRD          SUBMIT_MTC_CRD
#define MTC_CSI_DRIVER   SUBMIT_MTC_CSI_DRIVER
#define SLICE_CONTROLLER "accelerator.gke.io/slice"

/* Whether a read found nothing (404), may not be made (403: a warning, not checked), or failed
 * otherwise (the API server's error stands). */
static int read_outcome(const fact_read *r, const char *what, gc_strings *warnings, bool *missing,
                        gc_error *err)
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

static int check_mtc(const fact_read *n, gc_strings *warnings, gc_error *err)
{
    static const char enable[] =
        "enable GKE's multi-tier checkpointing on the cluster (gcloud container clusters update "
        "CLUSTER --location LOCATION --update-addons=HighScaleCheckpointing=ENABLED, which needs "
        "the GcsFuseCsiDriver add-on too; in a Cluster Toolkit blueprint "
        "enable_multi_tier_checkpointing: true), or submit without --gke-mtc-enabled";
    bool missing, no_kind;
    int rc = read_outcome(&n[FACT_MTC_CRD], "CustomResourceDefinition " MTC_CRD, warnings, &missing,
                          err);
    /* The list answers 404 when the API server does not serve the kind: no CRD either. */
    if (!rc)
        rc =
            read_outcome(&n[FACT_MTC_CONFIGS], "CheckpointConfigurations", warnings, &no_kind, err);
    if (!rc && (missing || no_kind))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--gke-mtc-enabled: the cluster has no CheckpointConfiguration CRD (" MTC_CRD
                       "), so multi-tier checkpointing is not enabled; %s",
                       enable);
    if (!rc)
        rc =
            read_outcome(&n[FACT_MTC_DRIVER], "CSIDriver " MTC_CSI_DRIVER, warnings, &missing, err);
    if (!rc && missing)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--gke-mtc-enabled: the cluster has no CSI driver " MTC_CSI_DRIVER
                       ", so the workers' checkpoint volume could never be mounted; %s",
                       enable);
    if (!rc && !n[FACT_MTC_CONFIGS].rc && json_array_size(n[FACT_MTC_CONFIGS].value) == 0)
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

static int check_slicing(const fact_read *n, const gc_workload *w, const cluster_facts *f,
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
    int rc = read_outcome(&n[FACT_TOPOLOGIES], "Kueue Topologies", warnings, &missing, err);
    if (!rc && (missing || (!n[FACT_TOPOLOGIES].rc && !json_array_size(n[FACT_TOPOLOGIES].value))))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--compute-type tpu-v7x-slice: the cluster has no Kueue Topology, so Kueue "
                       "cannot place the pods of a dynamic slice; %s",
                       configure);
    if (rc)
        return rc;
    rc = read_outcome(&n[FACT_ADMISSION_CHECKS], "Kueue AdmissionChecks", warnings, &missing, err);
    /* Not served (404) is none at all; forbidden was a warning, and nothing more is known. */
    if (rc || (n[FACT_ADMISSION_CHECKS].rc && !missing))
        return rc;
    /* The slice controller's check, preferring one the job's ClusterQueue runs. */
    const char *check = NULL;
    size_t i;
    const json_t *ac;
    json_array_foreach(n[FACT_ADMISSION_CHECKS].value, i, ac)
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
    if (!some_topology_has_level(n[FACT_TOPOLOGIES].value, level)) {
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

int submit_check_mtc(const gc_submit_plan *plan, const cluster_facts *f, gc_strings *warnings,
                     gc_error *err)
{
    (void)plan;
    return check_mtc(f->features, warnings, err);
}

int submit_check_slicing(const gc_submit_plan *plan, const cluster_facts *f, gc_strings *warnings,
                         gc_error *err)
{
    return check_slicing(f->features, &plan->workload, f, warnings, err);
}
