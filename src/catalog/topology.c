/*
 * TPU slice shapes: which shapes a host type serves, and which shape a chip count means.
 *
 * 2-D families (v5e, v6e) take the eight shapes of shapes_2d exactly as written (4x2 is not
 * 2x4: GKE's gke-tpu-topology label spells them this way). 3-D families (v4, v5p, tpu7x) take
 * the four sub-cube shapes of small_3d, or AxBxC with A<=B<=C all multiples of 4 and at most the
 * family's number of 4x4x4 cubes. A host type serves a shape when it is a whole number of VMs;
 * the -1t and -8t hosts serve exactly one shape each.
 */
#include "catalog/catalog_internal.h"

#include "gcluster/error.h"

#include <stdio.h>
#include <string.h>

#define DIM_MAX 1024 /* keeps A*B*C well inside an int */

static const char *const shapes_2d[] = {"1x1", "2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"};
static const char *const small_3d[] = {"2x2x1", "2x2x2", "2x2x4", "2x4x4"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef enum shape_rule {
    SHAPE_OK,
    SHAPE_MALFORMED,
    SHAPE_RANK,          /* AxB for a 3-D family or AxBxC for a 2-D one */
    SHAPE_HOST_ONLY,     /* a -1t/-8t host and not its one shape */
    SHAPE_NOT_IN_TABLE,  /* 2-D: not one of shapes_2d */
    SHAPE_NOT_MULTIPLE,  /* 3-D: not a sub-cube and not all multiples of 4 */
    SHAPE_ORDER,         /* 3-D: not A<=B<=C */
    SHAPE_TOO_LARGE,     /* 3-D: more cubes than the family has */
    SHAPE_NOT_WHOLE_VMS, /* chips not a multiple of the host's chips per VM */
} shape_rule;

int gc_topology_parse(const char *topology, int dims[3])
{
    int rank = 0;
    const char *p = topology;
    if (!p)
        return 0;
    for (;;) {
        if (*p < '1' || *p > '9')
            return 0;
        int value = 0;
        for (; *p >= '0' && *p <= '9'; p++) {
            value = value * 10 + (*p - '0');
            if (value > DIM_MAX)
                return 0;
        }
        dims[rank++] = value;
        if (*p == '\0')
            break;
        if (rank == 3 || (*p != 'x' && *p != 'X'))
            return 0;
        p++;
    }
    if (rank < 2)
        return 0;
    if (rank == 2)
        dims[2] = 1;
    return rank;
}

int gc_topology_chips(const char *topology)
{
    int dims[3];
    if (!gc_topology_parse(topology, dims))
        return 0;
    return dims[0] * dims[1] * dims[2];
}

void catalog_shape_format(const int dims[3], int rank, char out[GC_TOPOLOGY_MAX])
{
    if (rank == 2)
        snprintf(out, GC_TOPOLOGY_MAX, "%dx%d", dims[0], dims[1]);
    else
        snprintf(out, GC_TOPOLOGY_MAX, "%dx%dx%d", dims[0], dims[1], dims[2]);
}

static bool listed(const char *shape, const char *const *list, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!strcmp(list[i], shape))
            return true;
    return false;
}

static int cubes(const int dims[3])
{
    return (dims[0] / 4) * (dims[1] / 4) * (dims[2] / 4);
}

/* The first rule `dims` breaks for `machine`; `shape` is dims written canonically. */
static shape_rule check_shape(const gc_tpu_machine *machine, const int dims[3], int rank,
                              const char *shape)
{
    const gc_tpu_family *family = machine->family;
    if (rank != family->dimensions)
        return SHAPE_RANK;
    if (machine->only_topology)
        return strcmp(shape, machine->only_topology) ? SHAPE_HOST_ONLY : SHAPE_OK;
    if (rank == 2) {
        if (!listed(shape, shapes_2d, COUNT(shapes_2d)))
            return SHAPE_NOT_IN_TABLE;
    } else if (!listed(shape, small_3d, COUNT(small_3d))) {
        if (dims[0] % 4 || dims[1] % 4 || dims[2] % 4)
            return SHAPE_NOT_MULTIPLE;
        if (dims[0] > dims[1] || dims[1] > dims[2])
            return SHAPE_ORDER;
        if (cubes(dims) > family->max_cubes)
            return SHAPE_TOO_LARGE;
    }
    if ((dims[0] * dims[1] * dims[2]) % machine->chips_per_vm)
        return SHAPE_NOT_WHOLE_VMS;
    return SHAPE_OK;
}

static shape_rule check_shape_string(const gc_tpu_machine *machine, const char *text)
{
    int dims[3];
    int rank = gc_topology_parse(text, dims);
    if (!rank)
        return SHAPE_MALFORMED;
    char shape[GC_TOPOLOGY_MAX];
    catalog_shape_format(dims, rank, shape);
    return check_shape(machine, dims, rank, shape);
}

bool catalog_host_serves(const gc_tpu_machine *machine, const char *shape)
{
    return check_shape_string(machine, shape) == SHAPE_OK;
}

bool catalog_family_serves(const gc_tpu_family *family, const char *shape)
{
    size_t count;
    const gc_tpu_machine *machines = gc_catalog_tpu_machines(&count);
    for (size_t i = 0; i < count; i++)
        if (machines[i].family == family && catalog_host_serves(&machines[i], shape))
            return true;
    return false;
}

/* The host type a shape of the family gets when none was named: the 1-chip host for a 1x1 slice,
 * the 4-chip one otherwise. Here, with the shapes, so the tables never call back into them. */
const gc_tpu_machine *catalog_default_host(const gc_tpu_family *family, const char *shape)
{
    size_t count;
    const gc_tpu_machine *machines = gc_catalog_tpu_machines(&count);
    int want = gc_topology_chips(shape) == 1 ? 1 : 4;
    for (size_t i = 0; i < count; i++)
        if (machines[i].family == family && machines[i].chips_per_vm == want)
            return &machines[i];
    /* A family without a 1-chip host (v4, v5p): its 4-chip host explains why 1x1x1 fails. */
    for (size_t i = 0; i < count; i++)
        if (machines[i].family == family && machines[i].chips_per_vm == 4)
            return &machines[i];
    return NULL;
}

/* The family's host type that serves `shape`, other than `besides`, or NULL. */
static const gc_tpu_machine *other_host_serving(const gc_tpu_machine *besides, const char *shape)
{
    size_t count;
    const gc_tpu_machine *machines = gc_catalog_tpu_machines(&count);
    for (size_t i = 0; i < count; i++)
        if (&machines[i] != besides && machines[i].family == besides->family &&
            catalog_host_serves(&machines[i], shape))
            return &machines[i];
    return NULL;
}

size_t gc_catalog_topologies(const gc_tpu_machine *machine, char (*out)[GC_TOPOLOGY_MAX],
                             size_t cap)
{
    size_t total = 0;
#define EMIT(...)                                                                                  \
    do {                                                                                           \
        if (total < cap)                                                                           \
            snprintf(out[total], GC_TOPOLOGY_MAX, __VA_ARGS__);                                    \
        total++;                                                                                   \
    } while (0)

    if (machine->only_topology) {
        EMIT("%s", machine->only_topology);
        return total;
    }
    if (machine->family->dimensions == 2) {
        for (size_t i = 0; i < COUNT(shapes_2d); i++)
            if (catalog_host_serves(machine, shapes_2d[i]))
                EMIT("%s", shapes_2d[i]);
        return total;
    }
    for (size_t i = 0; i < COUNT(small_3d); i++)
        if (catalog_host_serves(machine, small_3d[i]))
            EMIT("%s", small_3d[i]);
    /* In units of 4: a <= b <= c and a*b*c <= the family's cubes. */
    int max = machine->family->max_cubes;
    for (int a = 1; a * a * a <= max; a++)
        for (int b = a; a * b * b <= max; b++)
            for (int c = b; a * b * c <= max; c++) {
                char shape[GC_TOPOLOGY_MAX];
                catalog_shape_format((const int[3]){4 * a, 4 * b, 4 * c}, 3, shape);
                EMIT("%s", shape);
            }
#undef EMIT
    return total;
}

int catalog_shape_for_chips(const gc_tpu_family *family, int chips, char out[GC_TOPOLOGY_MAX])
{
    if (family->dimensions == 2) {
        for (size_t i = 0; i < COUNT(shapes_2d); i++)
            if (gc_topology_chips(shapes_2d[i]) == chips &&
                catalog_family_serves(family, shapes_2d[i])) {
                snprintf(out, GC_TOPOLOGY_MAX, "%s", shapes_2d[i]);
                return 0;
            }
        return -1;
    }
    if (chips == 1 && catalog_family_serves(family, "1x1x1")) {
        snprintf(out, GC_TOPOLOGY_MAX, "1x1x1");
        return 0;
    }
    for (size_t i = 0; i < COUNT(small_3d); i++)
        if (gc_topology_chips(small_3d[i]) == chips) {
            snprintf(out, GC_TOPOLOGY_MAX, "%s", small_3d[i]);
            return 0;
        }
    if (chips <= 0 || chips % 64 || chips / 64 > family->max_cubes)
        return -1;
    /* The most cubic a <= b <= c (in cubes) with a*b*c = n: the smallest c - a; on a tie the
     * larger a, which is the more even split. */
    int n = chips / 64, best[3] = {0, 0, 0};
    for (int a = 1; a * a * a <= n; a++)
        for (int b = a; a * b * b <= n; b++)
            if (n % (a * b) == 0) {
                int c = n / (a * b);
                if (!best[0] || c - a <= best[2] - best[0]) {
                    best[0] = a;
                    best[1] = b;
                    best[2] = c;
                }
            }
    catalog_shape_format((const int[3]){4 * best[0], 4 * best[1], 4 * best[2]}, 3, out);
    return 0;
}

void catalog_describe_shapes(const gc_tpu_machine *machine, gc_buf *b)
{
    if (machine->only_topology || machine->family->dimensions == 2) {
        char shapes[COUNT(shapes_2d)][GC_TOPOLOGY_MAX];
        size_t n = gc_catalog_topologies(machine, shapes, COUNT(shapes));
        for (size_t i = 0; i < n && i < COUNT(shapes); i++)
            gc_buf_printf(b, "%s%s", i ? " " : "", shapes[i]);
        return;
    }
    gc_buf_printf(b,
                  "2x2x1 2x2x2 2x2x4 2x4x4, or AxBxC with A<=B<=C all multiples of 4 and at most "
                  "%d cubes of 4x4x4 (4x4x4 4x4x8 4x8x8 8x8x8 8x8x16 ...)",
                  machine->family->max_cubes);
}

void catalog_describe_family_shapes(const gc_tpu_family *family, gc_buf *b)
{
    size_t count;
    const gc_tpu_machine *machines = gc_catalog_tpu_machines(&count);
    bool first = true;
    for (size_t i = 0; i < count; i++) {
        if (machines[i].family != family)
            continue;
        gc_buf_puts(b, first ? "" : "; ");
        catalog_describe_shapes(&machines[i], b);
        gc_buf_printf(b, " on %s", machines[i].machine_type);
        first = false;
    }
}

void catalog_display_name(const gc_tpu_family *family, int chips, char out[GC_NAME_MAX])
{
    snprintf(out, GC_NAME_MAX, "%s-%d", family->name, chips * family->cores_per_chip);
}

static void describe_size(const gc_tpu_family *family, int chips, bool first, gc_buf *b)
{
    char name[GC_NAME_MAX], shape[GC_TOPOLOGY_MAX];
    catalog_display_name(family, chips, name);
    if (catalog_shape_for_chips(family, chips, shape))
        return;
    gc_buf_printf(b, "%s%s (%s)", first ? "" : ", ", name, shape);
}

void catalog_describe_sizes(const gc_tpu_family *family, int size, gc_buf *b)
{
    size_t start = b->len;
    if (family->dimensions == 2) {
        for (size_t i = 0; i < COUNT(shapes_2d); i++)
            if (catalog_family_serves(family, shapes_2d[i]))
                describe_size(family, gc_topology_chips(shapes_2d[i]), b->len == start, b);
        return;
    }
    /* 3-D slices exist for 1 (tpu7x), 4, 8, 16, 32 and every multiple of 64 chips up to the
     * family's cubes: name the nearest below and above `size`, in chips. */
    int per = family->cores_per_chip, below = 0, above = 0;
    int fixed[] = {1, 4, 8, 16, 32};
    char shape[GC_TOPOLOGY_MAX];
    for (size_t i = 0; i < COUNT(fixed); i++) {
        if (catalog_shape_for_chips(family, fixed[i], shape))
            continue;
        if (fixed[i] * per < size)
            below = fixed[i];
        else if (fixed[i] * per > size && !above)
            above = fixed[i];
    }
    int step = 64 * per; /* the size of one more cube */
    if (size > step) {
        int k = (size - 1) / step;
        below = 64 * (k < family->max_cubes ? k : family->max_cubes);
    }
    if (!above && size / step + 1 <= family->max_cubes)
        above = 64 * (size / step + 1);
    if (below)
        describe_size(family, below, b->len == start, b);
    if (above)
        describe_size(family, above, b->len == start, b);
}

/* Sorts three dimensions ascending, for "write 4x4x8". */
static void sort3(int d[3])
{
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2 - i; j++)
            if (d[j] > d[j + 1]) {
                int t = d[j];
                d[j] = d[j + 1];
                d[j + 1] = t;
            }
}

/* The first clause of the message: which rule `shape` breaks. */
static void explain_rule(shape_rule rule, const gc_tpu_machine *machine, const char *shape_text,
                         const char *shape, const int dims[3], gc_buf *b)
{
    const gc_tpu_family *family = machine->family;
    int chips = dims[0] * dims[1] * dims[2];
    int sorted[3] = {dims[0], dims[1], dims[2]};
    switch (rule) {
    case SHAPE_MALFORMED:
        gc_buf_printf(b, "\"%s\" is not a slice shape; write %s, e.g. %s", shape_text,
                      family->dimensions == 2 ? "AxB" : "AxBxC",
                      family->dimensions == 2 ? "4x4" : "2x2x4");
        break;
    case SHAPE_RANK:
        gc_buf_printf(b, "%s slices are %d-D (%s), so %s is not one of them", family->name,
                      family->dimensions, family->dimensions == 2 ? "AxB" : "AxBxC", shape);
        break;
    case SHAPE_HOST_ONLY:
        gc_buf_printf(b, "%s hosts (%d chip%s each) serve only %s slices, not %s",
                      machine->machine_type, machine->chips_per_vm,
                      machine->chips_per_vm == 1 ? "" : "s", machine->only_topology, shape);
        break;
    case SHAPE_NOT_IN_TABLE:
        gc_buf_printf(b,
                      "%s is not a %s slice shape (2-D shapes are written as GKE labels them, "
                      "smaller side first)",
                      shape, family->name);
        break;
    case SHAPE_NOT_MULTIPLE:
        gc_buf_printf(b,
                      "%s is not a %s slice shape: a 3-D slice is 2x2x1, 2x2x2, 2x2x4 or 2x4x4, "
                      "or has every dimension a multiple of 4",
                      shape, family->name);
        break;
    case SHAPE_ORDER:
        sort3(sorted);
        gc_buf_printf(b,
                      "the dimensions of %s must be in non-decreasing order (A<=B<=C): write "
                      "%dx%dx%d",
                      shape, sorted[0], sorted[1], sorted[2]);
        break;
    case SHAPE_TOO_LARGE:
        gc_buf_printf(b, "%s is %d cubes of 4x4x4, more than the largest %s slice (%d cubes)",
                      shape, cubes(dims), family->name, family->max_cubes);
        break;
    case SHAPE_NOT_WHOLE_VMS:
        gc_buf_printf(b, "%s is %d chip%s, not a whole number of %s VMs (%d chips each)", shape,
                      chips, chips == 1 ? "" : "s", machine->machine_type, machine->chips_per_vm);
        break;
    case SHAPE_OK:
        break;
    }
}

int catalog_validate_shape(const gc_tpu_machine *machine, bool host_named, const char *shape_text,
                           const char *source, gc_error *err)
{
    if (!shape_text)
        shape_text = "";
    int dims[3] = {0, 0, 0};
    int rank = gc_topology_parse(shape_text, dims);
    char shape[GC_TOPOLOGY_MAX] = "";
    if (rank)
        catalog_shape_format(dims, rank, shape);
    shape_rule rule = rank ? check_shape(machine, dims, rank, shape) : SHAPE_MALFORMED;
    if (rule == SHAPE_OK)
        return 0;

    gc_buf why;
    gc_buf_init(&why);
    explain_rule(rule, machine, shape_text, shape, dims, &why);
    /* The family may still serve the shape on another host type (1x1 on the -1t host). */
    const gc_tpu_machine *other = rank ? other_host_serving(machine, shape) : NULL;
    if (other)
        gc_buf_printf(&why, "; %s serves it", other->machine_type);
    if (rule != SHAPE_HOST_ONLY && host_named) {
        gc_buf_printf(&why, ". Valid %s shapes on %s: ", machine->family->name,
                      machine->machine_type);
        catalog_describe_shapes(machine, &why);
    } else if (rule != SHAPE_HOST_ONLY) {
        gc_buf_printf(&why, ". Valid %s shapes: ", machine->family->name);
        catalog_describe_family_shapes(machine->family, &why);
    }
    int rc = gc_fail(err, GC_EXIT_USAGE, "%s: %s", source, why.data);
    gc_buf_free(&why);
    return rc;
}

int gc_topology_validate(const gc_tpu_machine *machine, const char *topology, gc_error *err)
{
    char source[GC_TOPOLOGY_MAX + 16];
    snprintf(source, sizeof(source), "--topology %.*s", GC_TOPOLOGY_MAX - 1,
             topology ? topology : "");
    return catalog_validate_shape(machine, true, topology, source, err);
}
