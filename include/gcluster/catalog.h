/*
 * The accelerator catalog: what every --compute-type means.
 *
 * The facts are tables (TPU families, TPU host machine types, GPU machines, CPU families); the
 * functions here are pure lookups over them. gc_catalog_resolve() turns what the user typed into
 * a gc_compute: the machine type, the slice topology, chips per VM, VMs per slice, the GKE node
 * labels and the Pathways --instance_type. With a description of the cluster's TPU nodes it
 * resolves against what the cluster really has; without one (offline) it assumes the 4-chip-per-VM
 * host type, as Cloud TPU documents for multi-host slices.
 */
#ifndef GCLUSTER_CATALOG_H
#define GCLUSTER_CATALOG_H

#include "gcluster/error.h"

#include <stdbool.h>
#include <stddef.h>

typedef enum gc_accel_kind {
    GC_ACCEL_TPU,
    GC_ACCEL_GPU,
    GC_ACCEL_CPU,
} gc_accel_kind;

/* A TPU generation, named as Cloud TPU, GKE and Pathways name it. */
typedef struct gc_tpu_family {
    const char *name;            /* shorthand prefix and display name: "v6e", "v5litepod" */
    const char *alias;           /* second accepted prefix ("v5e" for v5litepod) or NULL */
    const char *gke_accelerator; /* cloud.google.com/gke-tpu-accelerator: "tpu-v6e-slice" */
    const char *pathways_type;   /* Pathways --instance_type prefix: "tpuv6e" */
    int dimensions;              /* 2 (v5e, v6e) or 3 (v4, v5p, tpu7x) */
    int cores_per_chip;          /* 2 where the shorthand's N counts TensorCores (v4, v5p, tpu7x) */
    int max_cubes;               /* 3-D families: the largest slice, in 4x4x4 cubes */
} gc_tpu_family;

/* A TPU host (VM) machine type of a family. */
typedef struct gc_tpu_machine {
    const char *machine_type; /* "ct6e-standard-4t" */
    const gc_tpu_family *family;
    int chips_per_vm;          /* google.com/tpu per host: 1, 4 or 8 */
    const char *only_topology; /* the single shape this host type serves ("1x1", "2x4"), or NULL */
    const char *pathways_type; /* overrides family->pathways_type ("tpuv6e1t"), or NULL */
    int host_vcpus;            /* the host's size; worker pods request a share of it */
    int host_memory_gib;
} gc_tpu_machine;

/* A GPU machine type. GKE runs one pod per VM asking for all of its GPUs. */
typedef struct gc_gpu_machine {
    const char *shorthand;    /* "l4-2", or NULL where only the machine type names it */
    const char *machine_type; /* "g2-standard-24" */
    const char *accelerator;  /* cloud.google.com/gke-accelerator: "nvidia-l4" */
    int gpus;                 /* nvidia.com/gpu per VM */
} gc_gpu_machine;

/* The TPU node shapes a cluster really has (from node labels), for connected resolution. */
typedef struct gc_node_shape {
    const char *machine_type; /* node.kubernetes.io/instance-type */
    const char *accelerator;  /* cloud.google.com/gke-tpu-accelerator or gke-accelerator */
    const char *topology;     /* cloud.google.com/gke-tpu-topology, NULL for GPU/CPU nodes */
    const char *node_pool;    /* cloud.google.com/gke-nodepool */
    int count;                /* nodes with exactly these labels */
} gc_node_shape;

typedef struct gc_cluster_shapes {
    const gc_node_shape *shapes;
    size_t count;
} gc_cluster_shapes;

#define GC_TOPOLOGY_MAX 32
#define GC_NAME_MAX     64

/* What a --compute-type (plus --topology) resolves to. */
typedef struct gc_compute {
    gc_accel_kind kind;
    const gc_tpu_family *family;       /* TPU only */
    const gc_tpu_machine *tpu_machine; /* TPU only */
    char machine_type[GC_NAME_MAX];    /* "ct6e-standard-4t", "g2-standard-24", "n2-standard-32" */
    char accelerator[GC_NAME_MAX];  /* GKE label value: "tpu-v6e-slice", "nvidia-l4"; "" for CPU */
    char topology[GC_TOPOLOGY_MAX]; /* TPU slice shape: "4x4"; "" otherwise */
    int chips;                      /* TPU chips in one slice */
    int chips_per_vm;               /* TPU: google.com/tpu per pod */
    int vms_per_slice;              /* TPU: pods per slice */
    int gpus_per_vm;                /* GPU: nvidia.com/gpu per pod */
    int vcpus;                      /* CPU machine types: vCPUs of the machine */
    char pathways_instance_type[GC_NAME_MAX]; /* "tpuv6e:4x4" */
    char display[GC_NAME_MAX]; /* canonical name for listings: "v6e-16", "tpu7x-256" */
    bool machine_assumed;      /* offline: the host type was assumed, not discovered (also when
                                * connected but no node of the family serves the shape) */
} gc_compute;

/* err->reason when the topology could come from the cluster's nodes (bare tpu7x, a machine type
 * or an accelerator label without --topology): a connected submit asks the cluster first. */
#define GC_REASON_TOPOLOGY_REQUIRED "TopologyRequired"

/*
 * Resolves `compute_type` (case-insensitive) and the optional --topology value.
 * `cluster` is NULL offline. Returns 0, or GC_EXIT_USAGE with a message that names the flag and
 * lists the valid choices near what was typed.
 */
int gc_catalog_resolve(const char *compute_type, const char *topology,
                       const gc_cluster_shapes *cluster, gc_compute *out, gc_error *err);

/* Parses "AxB" or "AxBxC" into dims (returns the number of dimensions, 0 if malformed).
 * Dimensions are 1..1024 without leading zeros; "X" is read as "x"; a 2-D shape sets dims[2] = 1.
 */
int gc_topology_parse(const char *topology, int dims[3]);

/* Chips in a slice of shape `topology` (the product of its dimensions), 0 if malformed. */
int gc_topology_chips(const char *topology);

/* Whether `topology` is a valid slice shape for `machine`: 2-D families take the fixed shapes,
 * 3-D families 2x2x1, 2x2x2, 2x2x4, 2x4x4 or A<=B<=C in multiples of 4 within the family's
 * cube limit; explains why not. */
int gc_topology_validate(const gc_tpu_machine *machine, const char *topology, gc_error *err);

/* The tables, for sweeps in tests and for listing choices in errors and help. */
const gc_tpu_family *gc_catalog_tpu_families(size_t *count);
const gc_tpu_machine *gc_catalog_tpu_machines(size_t *count);
const gc_tpu_machine *gc_catalog_tpu_machine(const char *machine_type);
const gc_gpu_machine *gc_catalog_gpu_machines(size_t *count);

/* Every slice shape `machine` serves (1x1 2x2 ... for 2-D, 2x2x1 ... then AxBxC ascending for
 * 3-D). Writes at most `cap` shapes to `out` and returns how many there are, like snprintf. */
size_t gc_catalog_topologies(const gc_tpu_machine *machine, char (*out)[GC_TOPOLOGY_MAX],
                             size_t cap);

/* What a Pathways worker pod requests besides google.com/tpu on host `m`: half the host's vCPUs
 * and memory, as Kubernetes quantities ("90", "360Gi"). */
void gc_tpu_worker_requests(const gc_tpu_machine *m, char cpu[16], char memory[16]);

/* Short description of the accepted compute-type forms, for `job submit --help`. */
const char *gc_catalog_help(void);

#endif
