/*
 * gc_catalog_resolve(): what a --compute-type (and --topology) means.
 *
 * A TPU compute type is read in three steps. First what was typed: a host machine type
 * (ct6e-standard-4t), a GKE label (tpu-v6e-slice), a bare family (tpu7x), or a shorthand with a
 * size (v6e-16) or a shape (v6e-4x4). Then the slice shape: the one asked for (shorthand shape
 * or --topology, which must agree with a sized shorthand), else the one the size means, else the
 * topology label of the cluster's nodes of that family. Last the host type: the one named, or
 * the one the cluster has for that shape, or (offline, or when the cluster has none) the family's
 * 4-chip host (1-chip for 1x1). Anything else is tried as a GPU, then a CPU machine type.
 */
#include "catalog/catalog_internal.h"

#include "gcluster/error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DISTINCT_MAX 32 /* different topologies of one family a cluster may show */

typedef struct tpu_request {
    const char *typed;                 /* --compute-type as typed, for messages */
    const gc_tpu_family *family;       /* always set once recognised */
    const gc_tpu_machine *machine;     /* the host type, when the user named it */
    char shape[GC_TOPOLOGY_MAX];       /* the slice shape, once known */
    int chips;                         /* a sized shorthand's chips, or 0 */
    char sized_shape[GC_TOPOLOGY_MAX]; /* the shape that size means offline */
    char source[GC_NAME_MAX + 64];     /* where `shape` came from, for messages */
} tpu_request;

/* "v6e-16": N in the family's unit → chips and the shape that many chips make. */
static int parse_size(tpu_request *req, const char *digits, gc_error *err)
{
    const gc_tpu_family *family = req->family;
    int cores = family->cores_per_chip;
    /* Seven digits is already far beyond the largest slice; stop there to stay in an int. */
    int n = strlen(digits) > 7 ? 99999999 : (int)strtol(digits, NULL, 10);
    if (n > 0 && n % cores == 0) {
        req->chips = n / cores;
        if (!catalog_shape_for_chips(family, req->chips, req->sized_shape)) {
            snprintf(req->source, sizeof(req->source), "--compute-type %s", req->typed);
            return 0;
        }
    }
    gc_buf sizes;
    gc_buf_init(&sizes);
    catalog_describe_sizes(family, n, &sizes);
    int rc;
    if (n == 0)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s: the size must be positive. %s sizes near it: %s",
                     req->typed, family->name, sizes.data);
    else if (cores == 1)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s: no %s slice has %d chips (in %s-N, N counts chips). "
                     "Valid %s sizes: %s; or give a shape, e.g. %s-4x4",
                     req->typed, family->name, n, family->name, family->name, sizes.data,
                     family->name);
    else if (n % cores)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s: in %s-N, N counts TensorCores, %d per chip, so it is "
                     "even. Nearest valid sizes: %s; or give a shape, e.g. %s-2x2x4",
                     req->typed, family->name, cores, sizes.data, family->name);
    else
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s: that is %d chip%s (in %s-N, N counts TensorCores, %d "
                     "per chip), and no %s slice has that many. Nearest valid sizes: %s; or give "
                     "a shape, e.g. %s-2x2x4",
                     req->typed, n / cores, n / cores == 1 ? "" : "s", family->name, cores,
                     family->name, sizes.data, family->name);
    gc_buf_free(&sizes);
    return rc;
}

/* Reads a TPU compute type (lower-cased in `name`); *matched stays false when it is not one. */
static int parse_tpu(const char *name, tpu_request *req, bool *matched, gc_error *err)
{
    *matched = true;
    if ((req->machine = gc_catalog_tpu_machine(name))) {
        req->family = req->machine->family;
        return 0;
    }
    if ((req->family = catalog_family_by_label(name)))
        return 0;
    if ((req->family = catalog_family_by_name(name, strlen(name))))
        return 0;
    const char *dash = strchr(name, '-');
    if (dash)
        req->family = catalog_family_by_name(name, (size_t)(dash - name));
    if (!req->family) {
        *matched = false;
        return 0;
    }
    const char *rest = dash + 1;
    if (catalog_all_digits(rest))
        return parse_size(req, rest, err);
    int dims[3];
    int rank = gc_topology_parse(rest, dims);
    if (rank) {
        catalog_shape_format(dims, rank, req->shape);
        snprintf(req->source, sizeof(req->source), "--compute-type %s", req->typed);
        return 0;
    }
    if (strchr(rest, '-')) /* tpu7x-standard-8t: a host machine type that does not exist */
        return catalog_unknown_compute_type(req->typed, name, err);
    const gc_tpu_family *f = req->family;
    return gc_fail(err, GC_EXIT_USAGE,
                   "--compute-type %s: after \"%s-\" comes a slice size (%s-%d, N counting %s) "
                   "or a shape (%s-%s)",
                   req->typed, f->name, f->name, 8 * f->cores_per_chip,
                   f->cores_per_chip == 1 ? "chips" : "TensorCores, 2 per chip", f->name,
                   f->dimensions == 2 ? "4x4" : "2x2x4");
}

/* --topology next to the compute type: it must agree with what the compute type already says. */
static int apply_topology_flag(tpu_request *req, const char *topology, gc_error *err)
{
    if (!topology || !*topology)
        return 0;
    char source[GC_TOPOLOGY_MAX + 16];
    snprintf(source, sizeof(source), "--topology %.*s", GC_TOPOLOGY_MAX - 1, topology);
    int dims[3];
    int rank = gc_topology_parse(topology, dims);
    if (rank != req->family->dimensions) {
        const gc_tpu_machine *host =
            req->machine ? req->machine : catalog_default_host(req->family, "");
        return catalog_validate_shape(host, req->machine != NULL, topology, source, err);
    }
    char shape[GC_TOPOLOGY_MAX];
    catalog_shape_format(dims, rank, shape);
    if (req->shape[0] && strcmp(req->shape, shape))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--compute-type %s asks for a %s slice but --topology says %s; give the "
                       "shape once (drop --topology, or make them the same)",
                       req->typed, req->shape, shape);
    int chips = dims[0] * dims[1] * dims[2];
    if (req->chips && chips != req->chips) {
        char other[GC_NAME_MAX];
        catalog_display_name(req->family, chips, other);
        return gc_fail(err, GC_EXIT_USAGE,
                       "--compute-type %s is %d chip%s (%s) but --topology %s is %d chip%s; they "
                       "must agree: drop --topology, or use --compute-type %s with it",
                       req->typed, req->chips, req->chips == 1 ? "" : "s", req->sized_shape, shape,
                       chips, chips == 1 ? "" : "s", other);
    }
    snprintf(req->shape, sizeof(req->shape), "%s", shape);
    snprintf(req->source, sizeof(req->source), "%s", source);
    return 0;
}

/* The host type of a node shape, if it is one of `family`'s. */
static const gc_tpu_machine *family_host(const gc_node_shape *s, const gc_tpu_family *family)
{
    const gc_tpu_machine *m = gc_catalog_tpu_machine(s->machine_type);
    return m && m->family == family ? m : NULL;
}

/* Nodes of the request's family (of its host type, when named) labelled with a topology of
 * `chips` chips (any, when 0). */
static bool node_counts(const gc_node_shape *s, const tpu_request *req, int chips)
{
    const gc_tpu_machine *m = family_host(s, req->family);
    if (!m || (req->machine && m != req->machine) || !s->topology || !*s->topology)
        return false;
    return !chips || gc_topology_chips(s->topology) == chips;
}

/* The distinct topology labels of those nodes, in the order the cluster lists them. */
static size_t node_topologies(const gc_cluster_shapes *cluster, const tpu_request *req, int chips,
                              const char *out[DISTINCT_MAX])
{
    size_t n = 0;
    for (size_t i = 0; i < cluster->count && n < DISTINCT_MAX; i++) {
        const gc_node_shape *s = &cluster->shapes[i];
        if (!node_counts(s, req, chips))
            continue;
        bool seen = false;
        for (size_t j = 0; j < n; j++)
            seen = seen || !strcmp(out[j], s->topology);
        if (!seen)
            out[n++] = s->topology;
    }
    return n;
}

/* "4x4x4 (pool-a: 16 tpu7x-standard-4t nodes), 2x2x2 (pool-b: ...)" */
static void describe_node_topologies(const gc_cluster_shapes *cluster, const tpu_request *req,
                                     const char *const *topologies, size_t n, gc_buf *b)
{
    for (size_t t = 0; t < n; t++) {
        gc_buf_printf(b, "%s%s (", t ? ", " : "", topologies[t]);
        bool first = true;
        for (size_t i = 0; i < cluster->count; i++) {
            const gc_node_shape *s = &cluster->shapes[i];
            if (!node_counts(s, req, 0) || strcmp(s->topology, topologies[t]))
                continue;
            gc_buf_printf(b, "%snode pool %s: %d %s node%s", first ? "" : "; ",
                          s->node_pool ? s->node_pool : "?", s->count, s->machine_type,
                          s->count == 1 ? "" : "s");
            first = false;
        }
        gc_buf_putc(b, ')');
    }
}

static void discovered(tpu_request *req, const char *topology)
{
    snprintf(req->shape, sizeof(req->shape), "%s", topology);
    snprintf(req->source, sizeof(req->source), "the topology label %s of the cluster's %s nodes",
             req->shape, req->family->gke_accelerator);
}

/* A sized shorthand: the shape its size means, unless the cluster's nodes of the family have
 * another shape of that many chips (v5p-1024 on 4x8x16 nodes rather than 8x8x8). */
static int pick_sized_shape(tpu_request *req, const gc_cluster_shapes *cluster, gc_error *err)
{
    snprintf(req->shape, sizeof(req->shape), "%s", req->sized_shape);
    if (!cluster)
        return 0;
    const char *found[DISTINCT_MAX];
    size_t n = node_topologies(cluster, req, req->chips, found), kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(found[i], req->sized_shape))
            return 0;
        if (catalog_family_serves(req->family, found[i]))
            found[kept++] = found[i];
    }
    if (kept == 1)
        discovered(req, found[0]);
    if (kept <= 1)
        return 0;
    gc_buf list;
    gc_buf_init(&list);
    describe_node_topologies(cluster, req, found, kept, &list);
    int rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s is %d chips, and the cluster's %s nodes come in several "
                     "shapes of that size: %s; choose one with --topology",
                     req->typed, req->chips, req->family->name, list.data);
    gc_buf_free(&list);
    return rc;
}

/* No shape asked for (bare family, label, machine type): the one shape of a -1t/-8t host, or
 * the topology label of the cluster's nodes; never a guess among several. */
static int pick_unsized_shape(tpu_request *req, const gc_cluster_shapes *cluster, gc_error *err)
{
    const gc_tpu_family *family = req->family;
    if (req->machine && req->machine->only_topology) {
        snprintf(req->shape, sizeof(req->shape), "%s", req->machine->only_topology);
        snprintf(req->source, sizeof(req->source), "--compute-type %s", req->typed);
        return 0;
    }
    const char *found[DISTINCT_MAX];
    size_t n = cluster ? node_topologies(cluster, req, 0, found) : 0;
    if (n == 1) {
        discovered(req, found[0]);
        return 0;
    }
    gc_buf b;
    gc_buf_init(&b);
    int rc;
    if (n > 1) {
        describe_node_topologies(cluster, req, found, n, &b);
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s does not say the slice shape, and the cluster's %s%s%s "
                     "nodes have several: %s; choose one with --topology",
                     req->typed, family->name, req->machine ? " " : "",
                     req->machine ? req->machine->machine_type : "", b.data);
    } else {
        if (req->machine)
            catalog_describe_shapes(req->machine, &b);
        else
            catalog_describe_family_shapes(family, &b);
        char example[GC_NAME_MAX], example_shape[GC_TOPOLOGY_MAX];
        int example_chips = family->dimensions == 2 ? 16 : 8;
        catalog_display_name(family, example_chips, example);
        catalog_shape_for_chips(family, example_chips, example_shape);
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s does not say the slice shape%s; pass --topology. Valid "
                     "%s shapes: %s. Or use a sized shorthand, e.g. %s (%s)",
                     req->typed,
                     cluster ? ", and the cluster has no nodes of it with a topology label" : "",
                     family->name, b.data, example, example_shape);
        /* Offline this is final; a connected submit asks the cluster's nodes first. */
        if (!cluster && err)
            snprintf(err->reason, sizeof(err->reason), "%s", GC_REASON_TOPOLOGY_REQUIRED);
    }
    gc_buf_free(&b);
    return rc;
}

static bool cluster_has(const gc_cluster_shapes *cluster, const gc_tpu_machine *m,
                        const char *topology)
{
    for (size_t i = 0; i < cluster->count; i++) {
        const gc_node_shape *s = &cluster->shapes[i];
        if (s->machine_type && !strcasecmp(s->machine_type, m->machine_type) &&
            (!topology || (s->topology && !strcmp(s->topology, topology))))
            return true;
    }
    return false;
}

/* Two host types both holding nodes of the requested shape: the pods' nodeSelector (accelerator
 * and topology labels) cannot tell them apart, and their chips per VM differ. */
static int ambiguous_hosts(const tpu_request *req, const gc_tpu_machine *const *hosts, size_t n,
                           gc_error *err)
{
    gc_buf b;
    gc_buf_init(&b);
    for (size_t i = 0; i < n; i++)
        gc_buf_printf(&b, "%s%s (%d chips per VM)", i ? ", " : "", hosts[i]->machine_type,
                      hosts[i]->chips_per_vm);
    int rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s: the cluster has %s slices on several host types: %s; "
                     "name the host type as --compute-type (e.g. --compute-type %s --topology %s)",
                     req->typed, req->shape, b.data, hosts[0]->machine_type, req->shape);
    gc_buf_free(&b);
    return rc;
}

static int choose_host(const tpu_request *req, const gc_cluster_shapes *cluster,
                       const gc_tpu_machine **host, bool *assumed, gc_error *err)
{
    *assumed = false;
    if (req->machine) {
        *host = req->machine;
        return catalog_validate_shape(req->machine, true, req->shape, req->source, err);
    }
    const gc_tpu_machine *fallback = catalog_default_host(req->family, req->shape);
    if (cluster) {
        size_t count;
        const gc_tpu_machine *machines = gc_catalog_tpu_machines(&count);
        const gc_tpu_machine *exact[8], *serving[8];
        size_t n_exact = 0, n_serving = 0;
        for (size_t i = 0; i < count && n_serving < 8; i++) {
            const gc_tpu_machine *m = &machines[i];
            if (m->family != req->family || !cluster_has(cluster, m, NULL) ||
                !catalog_host_serves(m, req->shape))
                continue;
            serving[n_serving++] = m;
            if (cluster_has(cluster, m, req->shape))
                exact[n_exact++] = m;
        }
        if (n_exact == 1) {
            *host = exact[0];
            return 0;
        }
        if (n_exact > 1)
            return ambiguous_hosts(req, exact, n_exact, err);
        if (n_serving) {
            *host = serving[0];
            for (size_t i = 0; i < n_serving; i++)
                if (serving[i] == fallback)
                    *host = fallback;
            return 0;
        }
    }
    *host = fallback;
    *assumed = true;
    return catalog_validate_shape(fallback, false, req->shape, req->source, err);
}

static void fill_tpu(gc_compute *out, const tpu_request *req, const gc_tpu_machine *host,
                     bool assumed)
{
    const gc_tpu_family *family = req->family;
    int dims[3];
    int rank = gc_topology_parse(req->shape, dims);
    out->kind = GC_ACCEL_TPU;
    out->family = family;
    out->tpu_machine = host;
    snprintf(out->machine_type, sizeof(out->machine_type), "%s", host->machine_type);
    snprintf(out->accelerator, sizeof(out->accelerator), "%s", family->gke_accelerator);
    catalog_shape_format(dims, rank, out->topology);
    out->chips = dims[0] * dims[1] * dims[2];
    out->chips_per_vm = host->chips_per_vm;
    out->vms_per_slice = out->chips / host->chips_per_vm;
    snprintf(out->pathways_instance_type, sizeof(out->pathways_instance_type), "%s:%s",
             host->pathways_type ? host->pathways_type : family->pathways_type, out->topology);
    catalog_display_name(family, out->chips, out->display);
    out->machine_assumed = assumed;
}

static int resolve_tpu(tpu_request *req, const char *topology, const gc_cluster_shapes *cluster,
                       gc_compute *out, gc_error *err)
{
    int rc = apply_topology_flag(req, topology, err);
    if (!rc && !req->shape[0])
        rc = req->chips ? pick_sized_shape(req, cluster, err)
                        : pick_unsized_shape(req, cluster, err);
    const gc_tpu_machine *host = NULL;
    bool assumed = false;
    if (!rc)
        rc = choose_host(req, cluster, &host, &assumed, err);
    if (!rc)
        fill_tpu(out, req, host, assumed);
    return rc;
}

int gc_catalog_resolve(const char *compute_type, const char *topology,
                       const gc_cluster_shapes *cluster, gc_compute *out, gc_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!compute_type || !*compute_type)
        return gc_fail(err, GC_EXIT_USAGE, "--compute-type is required. %s",
                       CATALOG_ACCEPTED_FORMS);
    size_t len = strlen(compute_type);
    if (len >= GC_NAME_MAX)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--compute-type \"%.40s...\" is too long to be a compute type (at most %d "
                       "characters). %s",
                       compute_type, GC_NAME_MAX - 1, CATALOG_ACCEPTED_FORMS);
    char name[GC_NAME_MAX];
    for (size_t i = 0; i <= len; i++)
        name[i] = (char)tolower((unsigned char)compute_type[i]);

    tpu_request req;
    memset(&req, 0, sizeof(req));
    req.typed = compute_type;
    bool matched = false;
    int rc = parse_tpu(name, &req, &matched, err);
    if (!rc && matched)
        rc = resolve_tpu(&req, topology, cluster, out, err);
    if (!rc && !matched)
        rc = catalog_resolve_gpu(compute_type, name, cluster, out, &matched, err);
    if (!rc && !matched)
        rc = catalog_resolve_cpu(compute_type, name, out, &matched, err);
    if (!rc && !matched)
        rc = catalog_unknown_compute_type(compute_type, name, err);
    if (!rc && out->kind != GC_ACCEL_TPU && topology && *topology)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--topology %s: --topology shapes TPU slices, and --compute-type %s is a %s "
                     "machine (%s); drop --topology",
                     topology, compute_type, out->kind == GC_ACCEL_GPU ? "GPU" : "CPU",
                     out->machine_type);
    if (rc)
        memset(out, 0, sizeof(*out));
    return rc;
}
