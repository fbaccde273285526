/*
 * `job submit`'s compute type: resolved offline from the flags (--tpu-type, --device-type, a
 * dynamic slice's type), everything that follows from it (hosts per slice, the Pathways instance
 * type, the checks that depend on it), and resolved again against the cluster's nodes when the
 * offline answer was pending or assumed a host type (submit_refine).
 */
#include "submit/submit_compute.h"

#include "gcluster/buf.h"
#include "gcluster/job.h"
#include "gcluster/submit.h"
#include "gcluster/sys.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Everything that follows from the resolved compute type: the checks that depend on it, hosts
 * per slice and the container layout. Runs offline, and once more when the cluster's nodes
 * resolve the compute type differently. */
static int derive_compute(gc_submit_plan *p, const gc_compute *c, gc_error *err)
{
    gc_workload *w = &p->workload;
    const gc_submit_compute *flags = &p->compute;
    bool tpu = c->kind == GC_ACCEL_TPU;
    if (w->pathways && !tpu)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--pathways needs a TPU compute type: \"%s\" is a %s machine, and Pathways "
                       "runs on Cloud TPU slices (e.g. v6e-16, tpu7x-16)",
                       flags->type, c->kind == GC_ACCEL_GPU ? "GPU" : "CPU");
    if (tpu && flags->num_nodes_set)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--num-nodes cannot be used with TPU compute types: the hosts per slice "
                       "follow from the topology (%s is %d host%s); use --num-slices for more "
                       "slices",
                       c->display, c->vms_per_slice, c->vms_per_slice == 1 ? "" : "s");
    if (flags->numa_affinity && !tpu)
        return gc_fail(err, GC_EXIT_USAGE, "--cpu-affinity numa applies to TPU compute types only");
    w->compute = *c;
    w->nodes_per_slice = tpu ? c->vms_per_slice : (int)flags->num_nodes;
    w->numa_affinity = flags->numa_affinity;
    w->parallel_containers = !w->pathways && !flags->disable_parallel_containers && tpu &&
                             c->family && !strcmp(c->family->name, "tpu7x") &&
                             c->chips_per_vm % 2 == 0;
    return 0;
}

/* --compute-type tpu-v7x-slice (Google's name for TPU7x dynamic slicing): GKE's slice
 * controller forms a slice of the --topology shape out of the 4x4x4 blocks of a TPU7x pool when
 * Kueue admits the job, so there is no slice to find by node labels and the shape must be given.
 * It is one the controller can form: a sub-slice of one block (2x2x1, 2x2x2, 2x2x4, 2x4x4) or
 * whole blocks (every dimension a multiple of 4). Returns the compute type the catalog knows. */
static int dynamic_slice_type(const gc_submit_request *r, gc_submit_plan *p, const char **type,
                              gc_error *err)
{
    *type = r->compute_type;
    if (strcasecmp(r->compute_type, "tpu-v7x-slice") != 0)
        return 0;
    static const char *const sub_slices[] = {"2x2x1", "2x2x2", "2x2x4", "2x4x4"};
    if (!r->topology || !*r->topology)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--compute-type tpu-v7x-slice needs --topology: the shape of the dynamic "
                       "slice GKE forms from the pool's 4x4x4 blocks (2x2x1, 2x2x2, 2x2x4, 2x4x4, "
                       "or multiples of 4 such as 4x4x4 or 4x4x8)");
    int dims[3];
    bool ok = gc_topology_parse(r->topology, dims) == 3;
    bool whole_blocks = ok && dims[0] % 4 == 0 && dims[1] % 4 == 0 && dims[2] % 4 == 0;
    bool sub_slice = false;
    for (size_t i = 0; ok && i < sizeof(sub_slices) / sizeof(*sub_slices); i++)
        sub_slice |= !strcmp(r->topology, sub_slices[i]);
    if (!whole_blocks && !sub_slice)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--topology %s is not a dynamic TPU7x slice: use a sub-slice of one 4x4x4 "
                       "block (2x2x1, 2x2x2, 2x2x4, 2x4x4) or whole blocks, every dimension a "
                       "multiple of 4 (4x4x4, 4x4x8, 8x8x8)",
                       r->topology);
    p->workload.dynamic_slicing = true;
    *type = "tpu7x";
    return 0;
}

/* Offline resolution. A connected submit may leave to the cluster's nodes what only they can
 * tell (the slice shape of a bare tpu7x or a machine type); everything else is final here. */
int submit_resolve_compute(const gc_submit_request *r, gc_submit_plan *p, gc_error *err)
{
    if (!r->compute_type || !*r->compute_type)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--compute-type is required: a TPU slice (v6e-16, tpu7x-16, v5p-8, "
                       "ct6e-standard-4t), a GPU (l4-1, h100-80gb-8) or a CPU machine type "
                       "(n2-standard-32)");
    const char *type;
    int rc = dynamic_slice_type(r, p, &type, err);
    if (rc)
        return rc;
    p->compute = (gc_submit_compute){
        .type = type,
        .topology = r->topology,
        .num_nodes = r->num_nodes,
        .num_nodes_set = r->num_nodes_set,
        .numa_affinity = r->cpu_affinity && !strcmp(r->cpu_affinity, "numa"),
        .disable_parallel_containers = r->disable_parallel_containers,
    };
    p->workload.num_slices = (int)r->num_slices;
    p->workload.pathways = r->pathways;
    gc_compute c;
    rc = gc_catalog_resolve(type, r->topology, NULL, &c, err);
    if (rc && p->mode != GC_SUBMIT_OFFLINE && !strcmp(err->reason, GC_REASON_TOPOLOGY_REQUIRED)) {
        gc_error_clear(err);
        p->compute.pending = true;
        return 0;
    }
    return rc ? rc : derive_compute(p, &c, err);
}

/* The machine and the slice shape determine everything else a compute type resolves to. */
static bool same_compute(const gc_compute *a, const gc_compute *b)
{
    return a->kind == b->kind && !strcmp(a->machine_type, b->machine_type) &&
           !strcmp(a->accelerator, b->accelerator) && !strcmp(a->topology, b->topology);
}

int submit_refine(gc_submit_plan *p, const gc_cluster_shapes *cluster, gc_error *err)
{
    const gc_compute *offline = &p->workload.compute;
    if (!p->compute.pending && !(offline->kind == GC_ACCEL_TPU && offline->machine_assumed))
        return 0;
    gc_compute c;
    int rc = gc_catalog_resolve(p->compute.type, p->compute.topology, cluster, &c, err);
    if (rc)
        return rc;
    if (!p->compute.pending && same_compute(&c, offline))
        return 0;
    rc = derive_compute(p, &c, err);
    if (!rc)
        p->compute.pending = false;
    return rc;
}
