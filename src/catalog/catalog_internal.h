/*
 * What the catalog's files share: table lookups (tables.c), slice-shape rules (topology.c),
 * GPU and CPU resolution (machines.c) and the "did you mean" lists of errors (suggest.c).
 * resolve.c joins them into gc_catalog_resolve().
 */
#ifndef GCLUSTER_CATALOG_INTERNAL_H
#define GCLUSTER_CATALOG_INTERNAL_H

#include "gcluster/buf.h"
#include "gcluster/catalog.h"

#include <stdbool.h>
#include <stddef.h>

/* The forms --compute-type accepts, for the end of "unknown compute type" errors. */
#define CATALOG_ACCEPTED_FORMS                                                                     \
    "Accepted forms: TPU shorthands (v6e-16, v5litepod-16 or v5e-16, v5p-8, v4-8, tpu7x-16, "      \
    "or with a shape: v6e-4x4, tpu7x-2x2x2), TPU machine types (ct6e-standard-4t), GKE TPU "       \
    "labels (tpu-v6e-slice, tpu7x) with --topology, GPU shorthands (l4-2, h100-80gb-8) or "        \
    "machine types (a3-highgpu-8g), and CPU machine types (n2-standard-32)."

/* tables.c */
const gc_tpu_family *catalog_family_by_name(const char *name, size_t len); /* name or alias */
const gc_tpu_family *catalog_family_by_label(const char *label);
const gc_gpu_machine *catalog_gpu_by_name(const char *name); /* shorthand or machine type */
bool catalog_gpu_label_known(const char *label);
/* "n2" → its machine classes, NULL-terminated; NULL for an unknown family. */
const char *const *catalog_cpu_classes(const char *family, size_t len, bool *local_ssd);
void catalog_list_cpu_families(gc_buf *b);

/* topology.c */
/* The host type assumed offline for `shape`: the family's 1-chip host for a 1-chip slice, else
 * its 4-chip host. */
const gc_tpu_machine *catalog_default_host(const gc_tpu_family *family, const char *shape);
bool catalog_host_serves(const gc_tpu_machine *machine, const char *shape);
bool catalog_family_serves(const gc_tpu_family *family, const char *shape);
/* Writes "4x4" / "2x2x1" for dims of the given rank. */
void catalog_shape_format(const int dims[3], int rank, char out[GC_TOPOLOGY_MAX]);
/* The family's shape for a chip count: 0, or -1 when no slice has that many chips. */
int catalog_shape_for_chips(const gc_tpu_family *family, int chips, char out[GC_TOPOLOGY_MAX]);
/* Like gc_topology_validate, naming `source` ("--topology 4x2", "--compute-type v6e-4x2"). When
 * the user did not name the host type (`host_named` false), the valid shapes listed are the
 * family's, on every host type. */
int catalog_validate_shape(const gc_tpu_machine *machine, bool host_named, const char *shape,
                           const char *source, gc_error *err);
/* "1x1 2x2 ..." or "2x2x1 2x2x2 2x2x4 2x4x4, or AxBxC with ..." for `machine`. */
void catalog_describe_shapes(const gc_tpu_machine *machine, gc_buf *b);
/* Every shape of the family with the host type serving it, for "valid shapes" lists. */
void catalog_describe_family_shapes(const gc_tpu_family *family, gc_buf *b);
/* "v6e-1 (1x1), v6e-4 (2x2), ..." or, for 3-D, the valid sizes nearest `size` (the N of
 * <family>-N, in the family's unit). */
void catalog_describe_sizes(const gc_tpu_family *family, int size, gc_buf *b);
/* "v6e-16": the family name and the slice size in the family's unit. */
void catalog_display_name(const gc_tpu_family *family, int chips, char out[GC_NAME_MAX]);

/* machines.c: each sets *matched when `name` (lower-case) is of its kind. */
int catalog_resolve_gpu(const char *typed, const char *name, const gc_cluster_shapes *cluster,
                        gc_compute *out, bool *matched, gc_error *err);
int catalog_resolve_cpu(const char *typed, const char *name, gc_compute *out, bool *matched,
                        gc_error *err);

/* suggest.c: the usage error for a compute type nothing recognised, with the choices nearest
 * to it. */
int catalog_unknown_compute_type(const char *typed, const char *name, gc_error *err);
/* Whether `s` is one or more decimal digits (the size of a shorthand such as v6e-16). */
bool catalog_all_digits(const char *s);

#endif
