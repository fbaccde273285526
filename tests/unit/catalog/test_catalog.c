/*
 * The accelerator catalog: a sweep over every TPU host type and every shape it serves,
 * every shorthand form, every rejection rule with its message, resolution against a synthetic
 * cluster, and the GPU and CPU entries. Expected values are written out here, independently of
 * the tables they check.
 */
#include "gcluster/catalog.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define NODE(machine, accelerator, topology, pool, count)                                          \
    {                                                                                              \
        (machine), (accelerator), (topology), (pool), (count)                                      \
    }
#define CLUSTER(nodes)                                                                             \
    {                                                                                              \
        (nodes), sizeof(nodes) / sizeof((nodes)[0])                                                \
    }

static gc_compute resolve_ok(const char *compute_type, const char *topology,
                             const gc_cluster_shapes *cluster)
{
    gc_compute c;
    gc_error err = {0};
    int rc = gc_catalog_resolve(compute_type, topology, cluster, &c, &err);
    if (rc)
        fail_msg("%s --topology %s: rc %d: %s", compute_type, topology ? topology : "(none)", rc,
                 err.message);
    return c;
}

/* Asserts a usage error whose message contains every phrase. */
static void expect_usage(const char *compute_type, const char *topology,
                         const gc_cluster_shapes *cluster, const char *const *phrases)
{
    gc_compute c;
    gc_error err = {0};
    int rc = gc_catalog_resolve(compute_type, topology, cluster, &c, &err);
    if (rc != GC_EXIT_USAGE)
        fail_msg("%s --topology %s: expected a usage error, got rc %d (%s %s)",
                 compute_type ? compute_type : "(null)", topology ? topology : "(none)", rc,
                 c.machine_type, c.topology);
    for (; *phrases; phrases++)
        if (!strstr(err.message, *phrases))
            fail_msg("%s --topology %s: message lacks \"%s\":\n  %s",
                     compute_type ? compute_type : "(null)", topology ? topology : "(none)",
                     *phrases, err.message);
    assert_string_equal(c.machine_type, "");
    assert_string_equal(c.display, "");
}

#define EXPECT_USAGE(ct, topo, cluster, ...)                                                       \
    expect_usage((ct), (topo), (cluster), (const char *const[]){__VA_ARGS__, NULL})

/* ---- the tables ------------------------------------------------------------------------- */

static void test_families(void **state)
{
    (void)state;
    static const struct {
        const char *name, *alias, *label, *pathways;
        int dimensions, cores, cubes;
    } want[] = {
        {"v4", NULL, "tpu-v4-podslice", "tpuv4", 3, 2, 64},
        {"v5p", NULL, "tpu-v5p-slice", "tpuv5", 3, 2, 140},
        {"v5litepod", "v5e", "tpu-v5-lite-podslice", "tpuv5e", 2, 1, 0},
        {"v6e", NULL, "tpu-v6e-slice", "tpuv6e", 2, 1, 0},
        {"tpu7x", NULL, "tpu7x", "tpu7x", 3, 2, 144},
    };
    size_t count;
    const gc_tpu_family *families = gc_catalog_tpu_families(&count);
    assert_int_equal(count, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < count; i++) {
        assert_string_equal(families[i].name, want[i].name);
        if (want[i].alias)
            assert_string_equal(families[i].alias, want[i].alias);
        else
            assert_null(families[i].alias);
        assert_string_equal(families[i].gke_accelerator, want[i].label);
        assert_string_equal(families[i].pathways_type, want[i].pathways);
        assert_int_equal(families[i].dimensions, want[i].dimensions);
        assert_int_equal(families[i].cores_per_chip, want[i].cores);
        assert_int_equal(families[i].max_cubes, want[i].cubes);
    }
}

/* Every TPU host type, as Cloud TPU and the Pathways references describe it. */
static const struct host_fact {
    const char *machine;
    const char *family;
    const char *label;
    const char *prefix; /* Pathways --instance_type prefix */
    int chips_per_vm;
    int cores_per_chip;
    size_t shapes; /* how many slice shapes it serves */
    const char *cpu, *memory;
} hosts[] = {
    {"ct4p-hightpu-4t", "v4", "tpu-v4-podslice", "tpuv4", 4, 2, 186, "120", "208384Mi"},
    {"ct5p-hightpu-4t", "v5p", "tpu-v5p-slice", "tpuv5", 4, 2, 496, "104", "224Gi"},
    {"ct5lp-hightpu-1t", "v5litepod", "tpu-v5-lite-podslice", "tpuv5e", 1, 1, 1, "12", "24Gi"},
    {"ct5lp-hightpu-4t", "v5litepod", "tpu-v5-lite-podslice", "tpuv5e", 4, 1, 7, "56", "96Gi"},
    {"ct5lp-hightpu-8t", "v5litepod", "tpu-v5-lite-podslice", "tpuv5e1t", 8, 1, 1, "112", "192Gi"},
    {"ct6e-standard-1t", "v6e", "tpu-v6e-slice", "tpuv6e", 1, 1, 1, "22", "88Gi"},
    {"ct6e-standard-4t", "v6e", "tpu-v6e-slice", "tpuv6e", 4, 1, 7, "90", "360Gi"},
    {"ct6e-standard-8t", "v6e", "tpu-v6e-slice", "tpuv6e1t", 8, 1, 1, "90", "720Gi"},
    {"tpu7x-standard-1t", "tpu7x", "tpu7x", "tpu7x", 1, 2, 1, "28", "120Gi"},
    {"tpu7x-standard-4t", "tpu7x", "tpu7x", "tpu7x", 4, 2, 520, "112", "480Gi"},
};
#define HOST_COUNT (sizeof(hosts) / sizeof(hosts[0]))

static void test_machine_lookup(void **state)
{
    (void)state;
    size_t count;
    const gc_tpu_machine *machines = gc_catalog_tpu_machines(&count);
    assert_int_equal(count, HOST_COUNT);
    for (size_t i = 0; i < HOST_COUNT; i++) {
        assert_string_equal(machines[i].machine_type, hosts[i].machine);
        assert_ptr_equal(gc_catalog_tpu_machine(hosts[i].machine), &machines[i]);
        assert_string_equal(machines[i].family->name, hosts[i].family);
        assert_int_equal(machines[i].chips_per_vm, hosts[i].chips_per_vm);
    }
    assert_ptr_equal(gc_catalog_tpu_machine("CT6E-Standard-8T"), &machines[7]);
    assert_string_equal(gc_catalog_tpu_machine("ct6e-standard-8t")->only_topology, "2x4");
    assert_string_equal(gc_catalog_tpu_machine("ct5lp-hightpu-8t")->only_topology, "2x4");
    assert_string_equal(gc_catalog_tpu_machine("ct6e-standard-1t")->only_topology, "1x1");
    assert_string_equal(gc_catalog_tpu_machine("tpu7x-standard-1t")->only_topology, "1x1x1");
    assert_null(gc_catalog_tpu_machine("ct6e-standard-4t")->only_topology);
    assert_null(gc_catalog_tpu_machine("ct6e-standard-2t"));
    assert_null(gc_catalog_tpu_machine("ct5p-hightpu-1t"));
    assert_null(gc_catalog_tpu_machine(NULL));
}

static void test_worker_requests(void **state)
{
    (void)state;
    for (size_t i = 0; i < HOST_COUNT; i++) {
        char cpu[16], memory[16];
        gc_tpu_worker_requests(gc_catalog_tpu_machine(hosts[i].machine), cpu, memory);
        assert_string_equal(cpu, hosts[i].cpu);
        assert_string_equal(memory, hosts[i].memory);
    }
    char cpu[16], memory[16];
    gc_tpu_worker_requests(NULL, cpu, memory);
    assert_string_equal(cpu, "0");
    assert_string_equal(memory, "0");
}

/* ---- the sweep: every host type × every shape it serves ---------------------------------- */

static int product(const char *shape)
{
    int dims[3];
    assert_int_not_equal(gc_topology_parse(shape, dims), 0);
    return dims[0] * dims[1] * dims[2];
}

static void check_entry(const struct host_fact *h, const char *shape)
{
    gc_error err = {0};
    const gc_tpu_machine *m = gc_catalog_tpu_machine(h->machine);
    if (gc_topology_validate(m, shape, &err))
        fail_msg("%s %s: %s", h->machine, shape, err.message);

    int chips = product(shape);
    char display[GC_NAME_MAX], instance[GC_NAME_MAX];
    snprintf(display, sizeof(display), "%s-%d", h->family, chips * h->cores_per_chip);
    snprintf(instance, sizeof(instance), "%s:%s", h->prefix, shape);

    /* The host type named, with the shape. */
    gc_compute c = resolve_ok(h->machine, shape, NULL);
    assert_int_equal(c.kind, GC_ACCEL_TPU);
    assert_ptr_equal(c.tpu_machine, m);
    assert_string_equal(c.family->name, h->family);
    assert_string_equal(c.machine_type, h->machine);
    assert_string_equal(c.accelerator, h->label);
    assert_string_equal(c.topology, shape);
    assert_int_equal(c.chips, chips);
    assert_int_equal(c.chips_per_vm, h->chips_per_vm);
    assert_int_equal(c.vms_per_slice * h->chips_per_vm, chips);
    assert_int_equal(c.vms_per_slice, chips / h->chips_per_vm);
    assert_string_equal(c.pathways_instance_type, instance);
    assert_string_equal(c.display, display);
    assert_false(c.machine_assumed);

    /* Round trip: the display name on a cluster of this host type gives the same slice. */
    gc_node_shape node = NODE(h->machine, h->label, shape, "np-tpu", c.vms_per_slice);
    gc_cluster_shapes cluster = {&node, 1};
    gc_compute back = resolve_ok(display, NULL, &cluster);
    assert_string_equal(back.machine_type, h->machine);
    assert_string_equal(back.topology, shape);
    assert_int_equal(back.vms_per_slice, c.vms_per_slice);
    assert_string_equal(back.pathways_instance_type, instance);
    assert_string_equal(back.display, display);
    assert_false(back.machine_assumed);

    /* The display name with the shape as --topology agrees with it, offline too. */
    gc_compute offline = resolve_ok(display, shape, NULL);
    assert_string_equal(offline.topology, shape);
    assert_string_equal(offline.display, display);
    assert_true(offline.machine_assumed);
}

static void test_sweep_every_entry(void **state)
{
    (void)state;
    size_t total = 0;
    for (size_t i = 0; i < HOST_COUNT; i++) {
        const gc_tpu_machine *m = gc_catalog_tpu_machine(hosts[i].machine);
        size_t n = gc_catalog_topologies(m, NULL, 0);
        assert_int_equal(n, hosts[i].shapes);
        char(*shapes)[GC_TOPOLOGY_MAX] = calloc(n, sizeof(*shapes));
        assert_int_equal(gc_catalog_topologies(m, shapes, n), n);
        for (size_t s = 0; s < n; s++) {
            for (size_t t = 0; t < s; t++)
                assert_string_not_equal(shapes[s], shapes[t]);
            check_entry(&hosts[i], shapes[s]);
        }
        total += n;
        free(shapes);
    }
    assert_int_equal(total, 186 + 496 + 1 + 7 + 1 + 1 + 7 + 1 + 1 + 520);
}

static void test_topology_lists(void **state)
{
    (void)state;
    char shapes[8][GC_TOPOLOGY_MAX];
    const char *v6e[] = {"2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16"};
    assert_int_equal(gc_catalog_topologies(gc_catalog_tpu_machine("ct6e-standard-4t"), shapes, 8),
                     7);
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(shapes[i], v6e[i]);
    assert_int_equal(gc_catalog_topologies(gc_catalog_tpu_machine("ct5lp-hightpu-4t"), shapes, 8),
                     7);
    assert_string_equal(shapes[0], "2x2");
    assert_int_equal(gc_catalog_topologies(gc_catalog_tpu_machine("ct6e-standard-8t"), shapes, 8),
                     1);
    assert_string_equal(shapes[0], "2x4");
    assert_int_equal(gc_catalog_topologies(gc_catalog_tpu_machine("ct6e-standard-1t"), shapes, 8),
                     1);
    assert_string_equal(shapes[0], "1x1");
    assert_int_equal(gc_catalog_topologies(gc_catalog_tpu_machine("tpu7x-standard-1t"), shapes, 8),
                     1);
    assert_string_equal(shapes[0], "1x1x1");
    /* 3-D: the four sub-cube shapes first, then AxBxC ascending; only `cap` are written. */
    const char *v5p[] = {"2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "4x4x12", "4x4x16"};
    assert_int_equal(gc_catalog_topologies(gc_catalog_tpu_machine("ct5p-hightpu-4t"), shapes, 8),
                     496);
    for (size_t i = 0; i < 8; i++)
        assert_string_equal(shapes[i], v5p[i]);
}

/* ---- every shorthand form ---------------------------------------------------------------- */

static const struct form {
    const char *typed, *topology;
    const char *machine, *shape;
    int vms;
    const char *instance, *display;
    bool assumed;
} forms[] = {
    /* TensorCore-counted shorthands: chips = N / 2 */
    {"v5p-8", NULL, "ct5p-hightpu-4t", "2x2x1", 1, "tpuv5:2x2x1", "v5p-8", true},
    {"V5P-8", NULL, "ct5p-hightpu-4t", "2x2x1", 1, "tpuv5:2x2x1", "v5p-8", true},
    {"v5p-16", NULL, "ct5p-hightpu-4t", "2x2x2", 2, "tpuv5:2x2x2", "v5p-16", true},
    {"v5p-32", NULL, "ct5p-hightpu-4t", "2x2x4", 4, "tpuv5:2x2x4", "v5p-32", true},
    {"v5p-64", NULL, "ct5p-hightpu-4t", "2x4x4", 8, "tpuv5:2x4x4", "v5p-64", true},
    {"v4-8", NULL, "ct4p-hightpu-4t", "2x2x1", 1, "tpuv4:2x2x1", "v4-8", true},
    {"v4-16", NULL, "ct4p-hightpu-4t", "2x2x2", 2, "tpuv4:2x2x2", "v4-16", true},
    {"tpu7x-16", NULL, "tpu7x-standard-4t", "2x2x2", 2, "tpu7x:2x2x2", "tpu7x-16", true},
    {"TPU7X-128", NULL, "tpu7x-standard-4t", "4x4x4", 16, "tpu7x:4x4x4", "tpu7x-128", true},
    {"tpu7x-2", NULL, "tpu7x-standard-1t", "1x1x1", 1, "tpu7x:1x1x1", "tpu7x-2", true},
    /* chip-counted shorthands */
    {"v6e-1", NULL, "ct6e-standard-1t", "1x1", 1, "tpuv6e:1x1", "v6e-1", true},
    {"v6e-4", NULL, "ct6e-standard-4t", "2x2", 1, "tpuv6e:2x2", "v6e-4", true},
    {"v6e-8", NULL, "ct6e-standard-4t", "2x4", 2, "tpuv6e:2x4", "v6e-8", true},
    {"v6e-16", NULL, "ct6e-standard-4t", "4x4", 4, "tpuv6e:4x4", "v6e-16", true},
    {"V6e-256", NULL, "ct6e-standard-4t", "16x16", 64, "tpuv6e:16x16", "v6e-256", true},
    {"v5litepod-1", NULL, "ct5lp-hightpu-1t", "1x1", 1, "tpuv5e:1x1", "v5litepod-1", true},
    {"v5litepod-8", NULL, "ct5lp-hightpu-4t", "2x4", 2, "tpuv5e:2x4", "v5litepod-8", true},
    {"v5e-8", NULL, "ct5lp-hightpu-4t", "2x4", 2, "tpuv5e:2x4", "v5litepod-8", true},
    {"V5E-16", NULL, "ct5lp-hightpu-4t", "4x4", 4, "tpuv5e:4x4", "v5litepod-16", true},
    {"v5e-256", NULL, "ct5lp-hightpu-4t", "16x16", 64, "tpuv5e:16x16", "v5litepod-256", true},
    /* shorthands with a shape */
    {"v6e-4x4", NULL, "ct6e-standard-4t", "4x4", 4, "tpuv6e:4x4", "v6e-16", true},
    {"V6E-4X4", NULL, "ct6e-standard-4t", "4x4", 4, "tpuv6e:4x4", "v6e-16", true},
    {"v6e-1x1", NULL, "ct6e-standard-1t", "1x1", 1, "tpuv6e:1x1", "v6e-1", true},
    {"v5e-2x4", NULL, "ct5lp-hightpu-4t", "2x4", 2, "tpuv5e:2x4", "v5litepod-8", true},
    {"tpu7x-2x2x2", NULL, "tpu7x-standard-4t", "2x2x2", 2, "tpu7x:2x2x2", "tpu7x-16", true},
    {"tpu7x-4x4x20", NULL, "tpu7x-standard-4t", "4x4x20", 80, "tpu7x:4x4x20", "tpu7x-640", true},
    {"v5p-2x2x1", NULL, "ct5p-hightpu-4t", "2x2x1", 1, "tpuv5:2x2x1", "v5p-8", true},
    {"v4-4x4x4", NULL, "ct4p-hightpu-4t", "4x4x4", 16, "tpuv4:4x4x4", "v4-128", true},
    /* a shape in the shorthand and the same --topology */
    {"v6e-4x4", "4x4", "ct6e-standard-4t", "4x4", 4, "tpuv6e:4x4", "v6e-16", true},
    /* a size and --topology of as many chips, including a shape other than the default */
    {"tpu7x-16", "2x2x2", "tpu7x-standard-4t", "2x2x2", 2, "tpu7x:2x2x2", "tpu7x-16", true},
    {"v5p-1024", "4x8x16", "ct5p-hightpu-4t", "4x8x16", 128, "tpuv5:4x8x16", "v5p-1024", true},
    {"v6e-16", "4X4", "ct6e-standard-4t", "4x4", 4, "tpuv6e:4x4", "v6e-16", true},
    /* bare family with --topology */
    {"tpu7x", "4x4x8", "tpu7x-standard-4t", "4x4x8", 32, "tpu7x:4x4x8", "tpu7x-256", true},
    {"TPU7x", "1x1x1", "tpu7x-standard-1t", "1x1x1", 1, "tpu7x:1x1x1", "tpu7x-2", true},
    {"v6e", "2x4", "ct6e-standard-4t", "2x4", 2, "tpuv6e:2x4", "v6e-8", true},
    {"v5e", "4x8", "ct5lp-hightpu-4t", "4x8", 8, "tpuv5e:4x8", "v5litepod-32", true},
    /* machine types */
    {"ct6e-standard-4t", "4x4", "ct6e-standard-4t", "4x4", 4, "tpuv6e:4x4", "v6e-16", false},
    {"CT6E-STANDARD-4T", "8x16", "ct6e-standard-4t", "8x16", 32, "tpuv6e:8x16", "v6e-128", false},
    {"ct6e-standard-8t", NULL, "ct6e-standard-8t", "2x4", 1, "tpuv6e1t:2x4", "v6e-8", false},
    {"ct6e-standard-8t", "2x4", "ct6e-standard-8t", "2x4", 1, "tpuv6e1t:2x4", "v6e-8", false},
    {"ct6e-standard-1t", NULL, "ct6e-standard-1t", "1x1", 1, "tpuv6e:1x1", "v6e-1", false},
    {"ct5lp-hightpu-8t", NULL, "ct5lp-hightpu-8t", "2x4", 1, "tpuv5e1t:2x4", "v5litepod-8", false},
    {"ct5lp-hightpu-1t", NULL, "ct5lp-hightpu-1t", "1x1", 1, "tpuv5e:1x1", "v5litepod-1", false},
    {"ct5lp-hightpu-4t", "2x2", "ct5lp-hightpu-4t", "2x2", 1, "tpuv5e:2x2", "v5litepod-4", false},
    {"ct5p-hightpu-4t", "2x2x1", "ct5p-hightpu-4t", "2x2x1", 1, "tpuv5:2x2x1", "v5p-8", false},
    {"ct4p-hightpu-4t", "4x4x8", "ct4p-hightpu-4t", "4x4x8", 32, "tpuv4:4x4x8", "v4-256", false},
    {"tpu7x-standard-1t", NULL, "tpu7x-standard-1t", "1x1x1", 1, "tpu7x:1x1x1", "tpu7x-2", false},
    {"Tpu7x-Standard-4t", "2x2x1", "tpu7x-standard-4t", "2x2x1", 1, "tpu7x:2x2x1", "tpu7x-8",
     false},
    /* GKE labels with --topology */
    {"tpu-v6e-slice", "8x8", "ct6e-standard-4t", "8x8", 16, "tpuv6e:8x8", "v6e-64", true},
    {"TPU-V6E-SLICE", "1x1", "ct6e-standard-1t", "1x1", 1, "tpuv6e:1x1", "v6e-1", true},
    {"tpu-v5-lite-podslice", "2x4", "ct5lp-hightpu-4t", "2x4", 2, "tpuv5e:2x4", "v5litepod-8",
     true},
    {"tpu-v5p-slice", "2x2x4", "ct5p-hightpu-4t", "2x2x4", 4, "tpuv5:2x2x4", "v5p-32", true},
    {"tpu-v4-podslice", "4x4x4", "ct4p-hightpu-4t", "4x4x4", 16, "tpuv4:4x4x4", "v4-128", true},
};

static void test_shorthand_forms(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        const struct form *f = &forms[i];
        gc_compute c = resolve_ok(f->typed, f->topology, NULL);
        if (strcmp(c.machine_type, f->machine) || strcmp(c.topology, f->shape) ||
            c.vms_per_slice != f->vms || strcmp(c.pathways_instance_type, f->instance) ||
            strcmp(c.display, f->display) || c.machine_assumed != f->assumed)
            fail_msg("%s --topology %s: got %s %s %d VMs %s %s assumed=%d", f->typed,
                     f->topology ? f->topology : "(none)", c.machine_type, c.topology,
                     c.vms_per_slice, c.pathways_instance_type, c.display, c.machine_assumed);
        assert_int_equal(c.kind, GC_ACCEL_TPU);
        assert_int_equal(c.chips, product(f->shape));
        assert_int_equal(c.chips_per_vm * c.vms_per_slice, c.chips);
        assert_int_equal(c.gpus_per_vm, 0);
    }
}

/* Google's table of 3-D shapes per chip count, which "most cubic" must reproduce, and beyond. */
static void test_chip_counts_to_shapes(void **state)
{
    (void)state;
    static const struct {
        int chips;
        const char *shape;
    } table[] = {
        {4, "2x2x1"},    {8, "2x2x2"},    {16, "2x2x4"},      {32, "2x4x4"},      {64, "4x4x4"},
        {128, "4x4x8"},  {256, "4x8x8"},  {512, "8x8x8"},     {1024, "8x8x16"},   {2048, "8x16x16"},
        {192, "4x4x12"}, {384, "4x8x12"}, {4096, "16x16x16"}, {8960, "16x20x28"},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        char typed[32];
        snprintf(typed, sizeof(typed), "v5p-%d", 2 * table[i].chips);
        gc_compute c = resolve_ok(typed, NULL, NULL);
        assert_string_equal(c.topology, table[i].shape);
        assert_int_equal(c.chips, table[i].chips);
        assert_int_equal(c.vms_per_slice, table[i].chips / 4);
        assert_string_equal(c.display, typed);
    }
    assert_string_equal(resolve_ok("v4-8192", NULL, NULL).topology, "16x16x16");
    assert_string_equal(resolve_ok("tpu7x-18432", NULL, NULL).topology, "16x24x24");
    const char *two_d[][2] = {{"v6e-1", "1x1"},    {"v6e-4", "2x2"},    {"v6e-8", "2x4"},
                              {"v6e-16", "4x4"},   {"v6e-32", "4x8"},   {"v6e-64", "8x8"},
                              {"v6e-128", "8x16"}, {"v6e-256", "16x16"}};
    for (size_t i = 0; i < 8; i++)
        assert_string_equal(resolve_ok(two_d[i][0], NULL, NULL).topology, two_d[i][1]);
}

/* ---- rejections, each with what its message must say ------------------------------------- */

static void test_reject_sizes(void **state)
{
    (void)state;
    EXPECT_USAGE("v6e-12", NULL, NULL, "v6e-12", "no v6e slice has 12 chips", "N counts chips",
                 "v6e-1 (1x1)", "v6e-8 (2x4)", "v6e-256 (16x16)", "v6e-4x4");
    EXPECT_USAGE("v5e-2", NULL, NULL, "no v5litepod slice has 2 chips", "v5litepod-1 (1x1)",
                 "v5litepod-4 (2x2)");
    EXPECT_USAGE("v6e-0", NULL, NULL, "must be positive", "v6e-1 (1x1)");
    EXPECT_USAGE("v5p-7", NULL, NULL, "N counts TensorCores", "even", "v5p-8 (2x2x1)");
    EXPECT_USAGE("v5p-100", NULL, NULL, "that is 50 chips", "no v5p slice has that many",
                 "v5p-64 (2x4x4), v5p-128 (4x4x4)");
    EXPECT_USAGE("v5p-4", NULL, NULL, "2 chips", "Nearest valid sizes: v5p-8 (2x2x1)");
    EXPECT_USAGE("v5p-40000", NULL, NULL, "20000 chips", "v5p-17920 (16x20x28)");
    EXPECT_USAGE("v5p-99999999999", NULL, NULL, "v5p-17920 (16x20x28)");
    EXPECT_USAGE("tpu7x-3", NULL, NULL, "even", "tpu7x-2 (1x1x1), tpu7x-8 (2x2x1)");
    EXPECT_USAGE("v4-300", NULL, NULL, "150 chips", "v4-256 (4x4x8), v4-384 (4x4x12)");
    EXPECT_USAGE("v4-2", NULL, NULL, "that is 1 chip (", "v4-8 (2x2x1)");
    EXPECT_USAGE("v6e-abc", NULL, NULL, "after \"v6e-\" comes a slice size", "v6e-4x4");
    EXPECT_USAGE("v6e-", NULL, NULL, "after \"v6e-\" comes a slice size");
}

static void test_reject_topology_rules(void **state)
{
    (void)state;
    /* 2-D: only the table's shapes, as written */
    EXPECT_USAGE("v6e", "4x2", NULL, "--topology 4x2", "4x2 is not a v6e slice shape",
                 "Valid v6e shapes: 1x1 on ct6e-standard-1t; 2x2 2x4 4x4 4x8 8x8 8x16 16x16 on "
                 "ct6e-standard-4t; 2x4 on ct6e-standard-8t");
    EXPECT_USAGE("ct6e-standard-4t", "4x2", NULL,
                 "Valid v6e shapes on ct6e-standard-4t: 2x2 2x4 4x4 4x8 8x8 8x16 16x16");
    EXPECT_USAGE("v6e", "3x3", NULL, "3x3 is not a v6e slice shape");
    EXPECT_USAGE("tpu-v5-lite-podslice", "32x32", NULL, "32x32 is not a v5litepod slice shape");
    /* rank */
    EXPECT_USAGE("v6e", "2x2x1", NULL, "v6e slices are 2-D (AxB)", "2x2x1");
    EXPECT_USAGE("v6e-2x2x1", NULL, NULL, "--compute-type v6e-2x2x1", "v6e slices are 2-D");
    EXPECT_USAGE("tpu7x", "2x2", NULL, "tpu7x slices are 3-D (AxBxC)");
    EXPECT_USAGE("v6e-16", "2x2x4", NULL, "v6e slices are 2-D");
    /* 3-D rules */
    EXPECT_USAGE("tpu7x", "4x4x6", NULL, "4x4x6 is not a tpu7x slice shape",
                 "every dimension a multiple of 4", "2x2x1 2x2x2 2x2x4 2x4x4");
    EXPECT_USAGE("v5p-1x1x1", NULL, NULL, "1x1x1 is not a v5p slice shape");
    EXPECT_USAGE("tpu7x", "8x4x4", NULL, "non-decreasing order", "write 4x4x8");
    EXPECT_USAGE("v5p", "16x8x4", NULL, "write 4x8x16");
    EXPECT_USAGE("v4", "16x16x20", NULL, "80 cubes", "largest v4 slice (64 cubes)");
    EXPECT_USAGE("v5p", "20x20x28", NULL, "175 cubes", "largest v5p slice (140 cubes)");
    EXPECT_USAGE("tpu7x", "16x24x28", NULL, "168 cubes", "(144 cubes)");
    /* host types that serve one shape, and whole VMs */
    EXPECT_USAGE("ct6e-standard-8t", "4x4", NULL, "ct6e-standard-8t hosts (8 chips each)",
                 "serve only 2x4 slices", "ct6e-standard-4t serves it");
    EXPECT_USAGE("ct5lp-hightpu-8t", "2x2", NULL, "serve only 2x4", "ct5lp-hightpu-4t serves it");
    EXPECT_USAGE("ct5lp-hightpu-1t", "2x2", NULL, "ct5lp-hightpu-1t hosts (1 chip each)",
                 "serve only 1x1");
    EXPECT_USAGE("tpu7x-standard-1t", "2x2x1", NULL, "serve only 1x1x1",
                 "tpu7x-standard-4t serves it");
    EXPECT_USAGE("ct6e-standard-4t", "1x1", NULL, "1x1 is 1 chip",
                 "not a whole number of ct6e-standard-4t VMs (4 chips each)",
                 "ct6e-standard-1t serves it");
    EXPECT_USAGE("tpu7x-standard-4t", "1x1x1", NULL, "tpu7x-standard-1t serves it");
    /* malformed */
    const char *bad[] = {"4x", "x4", "0x4", "04x4", "4x4x4x4", "axb", "4*4", "4x4 ", "2049x1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        EXPECT_USAGE("v6e", bad[i], NULL, "is not a slice shape", "write AxB");
    EXPECT_USAGE("tpu7x", "2x2x", NULL, "is not a slice shape", "write AxBxC");
}

static void test_reject_disagreements(void **state)
{
    (void)state;
    /* Google silently ignores the size when --topology is given (B16); we do not. */
    EXPECT_USAGE("v6e-16", "2x4", NULL, "--compute-type v6e-16 is 16 chips (4x4)",
                 "--topology 2x4 is 8 chips", "must agree", "--compute-type v6e-8");
    EXPECT_USAGE("tpu7x-32", "4x4x4", NULL, "16 chips (2x2x4)", "--topology 4x4x4 is 64 chips",
                 "tpu7x-128");
    EXPECT_USAGE("v5p-8", "2x2x2", NULL, "4 chips (2x2x1)", "8 chips", "v5p-16");
    EXPECT_USAGE("v6e-4x4", "2x4", NULL, "--compute-type v6e-4x4 asks for a 4x4 slice",
                 "--topology says 2x4");
    EXPECT_USAGE("tpu7x-2x2x2", "2x2x4", NULL, "asks for a 2x2x2 slice");
}

static void test_reject_missing_topology(void **state)
{
    (void)state;
    EXPECT_USAGE("tpu7x", NULL, NULL, "--compute-type tpu7x does not say the slice shape",
                 "pass --topology", "1x1x1 on tpu7x-standard-1t", "2x2x1 2x2x2 2x2x4 2x4x4",
                 "144 cubes", "tpu7x-16 (2x2x2)");
    EXPECT_USAGE("tpu7x", "", NULL, "pass --topology");
    EXPECT_USAGE("tpu-v6e-slice", NULL, NULL, "--topology", "1x1 on ct6e-standard-1t",
                 "2x2 2x4 4x4 4x8 8x8 8x16 16x16 on ct6e-standard-4t", "2x4 on ct6e-standard-8t",
                 "v6e-16 (4x4)");
    EXPECT_USAGE("ct6e-standard-4t", NULL, NULL, "pass --topology", "2x2 2x4 4x4");
    EXPECT_USAGE("tpu7x-standard-4t", NULL, NULL, "pass --topology");
    EXPECT_USAGE("tpu-v5p-slice", NULL, NULL, "pass --topology", "140 cubes");
}

static void test_reject_unknown(void **state)
{
    (void)state;
    EXPECT_USAGE("v7-8", NULL, NULL, "unknown --compute-type \"v7-8\"", "did you mean tpu7x-8",
                 "TensorCores", "Accepted forms");
    EXPECT_USAGE("v5-8", NULL, NULL, "v5p-8", "v5litepod-8");
    EXPECT_USAGE("ironwood", NULL, NULL, "tpu7x-N");
    EXPECT_USAGE("ct6e-standard-2t", NULL, NULL, "unknown --compute-type \"ct6e-standard-2t\"",
                 "v6e host machine types are", "ct6e-standard-1t (1 chip per VM, only 1x1)",
                 "ct6e-standard-4t (4 chips per VM)", "ct6e-standard-8t (8 chips per VM, only 2x4)",
                 "Accepted forms");
    EXPECT_USAGE("tpu7x-standard-8t", NULL, NULL, "tpu7x host machine types are",
                 "tpu7x-standard-1t", "tpu7x-standard-4t");
    EXPECT_USAGE("ct5p-hightpu-1t", NULL, NULL, "ct5p-hightpu-4t (4 chips per VM)");
    EXPECT_USAGE("l4-3", NULL, NULL, "unknown --compute-type \"l4-3\"",
                 "l4-1 (g2-standard-12, 1 GPU)", "l4-2 (g2-standard-24, 2 GPUs)",
                 "l4-8 (g2-standard-96, 8 GPUs)");
    EXPECT_USAGE("h100-8", NULL, NULL, "h100-80gb-8 (a3-highgpu-8g, 8 GPUs)", "h100-mega-80gb-8");
    EXPECT_USAGE("a3-highgpu-3g", NULL, NULL, "h100-80gb-1 (a3-highgpu-1g, 1 GPU)");
    EXPECT_USAGE("nvidia-h100", NULL, NULL, "GKE GPU labels near it",
                 "nvidia-h100-80gb, nvidia-h100-mega-80gb");
    EXPECT_USAGE("tpu-v6e-podslice", NULL, NULL, "did you mean", "tpu-v6e-slice");
    EXPECT_USAGE("ct6e-standrd-4t", NULL, NULL, "ct6e-standard-4t");
    EXPECT_USAGE("x9-standard-8", NULL, NULL, "CPU machine types are <family>-<class>-<vCPUs>",
                 "n2 n2d");
    EXPECT_USAGE("banana", NULL, NULL, "unknown --compute-type \"banana\".", "Accepted forms");
    EXPECT_USAGE("", NULL, NULL, "--compute-type is required", "Accepted forms");
    EXPECT_USAGE(NULL, NULL, NULL, "--compute-type is required");
    EXPECT_USAGE("v6e-16-and-a-very-long-tail-that-goes-on-and-on-and-on-and-on-forever", NULL,
                 NULL, "too long");
}

/* ---- connected: the cluster's TPU nodes decide the host type and the shape --------------- */

static void test_connected_host_choice(void **state)
{
    (void)state;
    /* v6e-8 on ct6e-standard-8t nodes labelled 2x4: one 8-chip VM. */
    gc_node_shape eight[] = {NODE("ct6e-standard-8t", "tpu-v6e-slice", "2x4", "np-8t", 2),
                             NODE("n4-standard-64", NULL, NULL, "cpu-np", 3)};
    gc_cluster_shapes cluster8 = CLUSTER(eight);
    gc_compute c = resolve_ok("v6e-8", NULL, &cluster8);
    assert_string_equal(c.machine_type, "ct6e-standard-8t");
    assert_string_equal(c.topology, "2x4");
    assert_int_equal(c.chips_per_vm, 8);
    assert_int_equal(c.vms_per_slice, 1);
    assert_string_equal(c.pathways_instance_type, "tpuv6e1t:2x4");
    assert_string_equal(c.display, "v6e-8");
    assert_false(c.machine_assumed);
    /* the same with the shape given, and for the label */
    assert_string_equal(resolve_ok("v6e-2x4", NULL, &cluster8).machine_type, "ct6e-standard-8t");
    assert_string_equal(resolve_ok("tpu-v6e-slice", NULL, &cluster8).machine_type,
                        "ct6e-standard-8t");
    /* v6e-16 cannot run on 8-chip hosts: the offline choice, assumed */
    c = resolve_ok("v6e-16", NULL, &cluster8);
    assert_string_equal(c.machine_type, "ct6e-standard-4t");
    assert_int_equal(c.vms_per_slice, 4);
    assert_true(c.machine_assumed);

    /* 4-chip nodes of 2x4: two VMs. */
    gc_node_shape four[] = {NODE("ct6e-standard-4t", "tpu-v6e-slice", "2x4", "np-4t", 2)};
    gc_cluster_shapes cluster4 = CLUSTER(four);
    c = resolve_ok("v6e-8", NULL, &cluster4);
    assert_string_equal(c.machine_type, "ct6e-standard-4t");
    assert_int_equal(c.vms_per_slice, 2);
    assert_string_equal(c.pathways_instance_type, "tpuv6e:2x4");
    assert_false(c.machine_assumed);
    /* a 4x4 pool serves 4x4 requests; the host type is in the cluster, not assumed */
    gc_node_shape four16[] = {NODE("ct6e-standard-4t", "tpu-v6e-slice", "4x4", "np-a", 4)};
    gc_cluster_shapes cluster16 = CLUSTER(four16);
    c = resolve_ok("v6e-8", NULL, &cluster16);
    assert_string_equal(c.machine_type, "ct6e-standard-4t");
    assert_string_equal(c.topology, "2x4");
    assert_false(c.machine_assumed);

    /* Both host types, only one of them with nodes of the requested shape: that one. */
    gc_node_shape mixed[] = {NODE("ct6e-standard-4t", "tpu-v6e-slice", "4x4", "np-4t", 4),
                             NODE("ct6e-standard-8t", "tpu-v6e-slice", "2x4", "np-8t", 1)};
    gc_cluster_shapes cluster_mixed = CLUSTER(mixed);
    assert_string_equal(resolve_ok("v6e-8", NULL, &cluster_mixed).machine_type, "ct6e-standard-8t");
    assert_string_equal(resolve_ok("v6e-16", NULL, &cluster_mixed).machine_type,
                        "ct6e-standard-4t");
    assert_string_equal(resolve_ok("v6e", "2x4", &cluster_mixed).machine_type, "ct6e-standard-8t");

    /* Both with nodes of 2x4: the pods could not tell them apart. */
    gc_node_shape both[] = {NODE("ct6e-standard-4t", "tpu-v6e-slice", "2x4", "np-4t", 2),
                            NODE("ct6e-standard-8t", "tpu-v6e-slice", "2x4", "np-8t", 1)};
    gc_cluster_shapes cluster_both = CLUSTER(both);
    EXPECT_USAGE("v6e-8", NULL, &cluster_both, "several host types",
                 "ct6e-standard-4t (4 chips per VM)", "ct6e-standard-8t (8 chips per VM)",
                 "--compute-type ct6e-standard-4t --topology 2x4");
    /* naming the host type settles it */
    c = resolve_ok("ct6e-standard-8t", NULL, &cluster_both);
    assert_int_equal(c.vms_per_slice, 1);
    c = resolve_ok("ct6e-standard-4t", NULL, &cluster_both);
    assert_string_equal(c.topology, "2x4");
    assert_int_equal(c.vms_per_slice, 2);

    /* A 1x1 request next to 4-chip nodes only: the 1-chip host, assumed. */
    c = resolve_ok("v6e-1", NULL, &cluster4);
    assert_string_equal(c.machine_type, "ct6e-standard-1t");
    assert_true(c.machine_assumed);

    /* No TPU nodes at all: the offline choice; resolution does not fail over capacity. */
    gc_node_shape cpu_only[] = {NODE("n4-standard-64", NULL, NULL, "cpu-np", 3)};
    gc_cluster_shapes cluster_cpu = CLUSTER(cpu_only);
    c = resolve_ok("v5e-8", NULL, &cluster_cpu);
    assert_string_equal(c.machine_type, "ct5lp-hightpu-4t");
    assert_int_equal(c.vms_per_slice, 2);
    assert_true(c.machine_assumed);
    gc_cluster_shapes empty = {NULL, 0};
    assert_true(resolve_ok("tpu7x-16", NULL, &empty).machine_assumed);
}

static void test_connected_topology_discovery(void **state)
{
    (void)state;
    gc_node_shape one[] = {NODE("tpu7x-standard-4t", "tpu7x", "4x4x4", "np-a", 16),
                           NODE("ct6e-standard-4t", "tpu-v6e-slice", "4x4", "np-v6e", 4)};
    gc_cluster_shapes cluster_one = CLUSTER(one);
    gc_compute c = resolve_ok("tpu7x", NULL, &cluster_one);
    assert_string_equal(c.machine_type, "tpu7x-standard-4t");
    assert_string_equal(c.topology, "4x4x4");
    assert_int_equal(c.vms_per_slice, 16);
    assert_string_equal(c.pathways_instance_type, "tpu7x:4x4x4");
    assert_string_equal(c.display, "tpu7x-128");
    assert_false(c.machine_assumed);
    assert_string_equal(resolve_ok("tpu7x-standard-4t", NULL, &cluster_one).topology, "4x4x4");
    assert_string_equal(resolve_ok("tpu-v6e-slice", NULL, &cluster_one).topology, "4x4");
    /* --topology still wins over what the nodes have */
    assert_string_equal(resolve_ok("tpu7x", "2x2x2", &cluster_one).topology, "2x2x2");

    /* Several shapes and none asked for: list them, never pick one (Google's B17). */
    gc_node_shape several[] = {NODE("tpu7x-standard-4t", "tpu7x", "4x4x4", "np-a", 16),
                               NODE("tpu7x-standard-4t", "tpu7x", "2x2x2", "np-b", 2),
                               NODE("tpu7x-standard-4t", "tpu7x", "4x4x4", "np-c", 16)};
    gc_cluster_shapes cluster_several = CLUSTER(several);
    EXPECT_USAGE("tpu7x", NULL, &cluster_several, "does not say the slice shape",
                 "several: 4x4x4 (node pool np-a: 16 tpu7x-standard-4t nodes; node pool np-c: "
                 "16 tpu7x-standard-4t nodes), 2x2x2 (node pool np-b: 2 tpu7x-standard-4t nodes)",
                 "--topology");
    assert_string_equal(resolve_ok("tpu7x", "2x2x2", &cluster_several).topology, "2x2x2");
    assert_string_equal(resolve_ok("tpu7x-16", NULL, &cluster_several).topology, "2x2x2");

    /* A named host type only looks at its own nodes. */
    gc_node_shape hosts_mixed[] = {NODE("ct6e-standard-4t", "tpu-v6e-slice", "4x4", "np-4t", 4),
                                   NODE("ct6e-standard-8t", "tpu-v6e-slice", "2x4", "np-8t", 1)};
    gc_cluster_shapes cluster_hosts = CLUSTER(hosts_mixed);
    c = resolve_ok("ct6e-standard-4t", NULL, &cluster_hosts);
    assert_string_equal(c.topology, "4x4");
    assert_int_equal(c.vms_per_slice, 4);
    EXPECT_USAGE("tpu-v6e-slice", NULL, &cluster_hosts, "several: 4x4", "2x4 (node pool np-8t");

    /* No nodes of the family: --topology is needed, as offline. */
    gc_node_shape v6e_only[] = {NODE("ct6e-standard-4t", "tpu-v6e-slice", "4x4", "np", 4)};
    gc_cluster_shapes cluster_v6e = CLUSTER(v6e_only);
    EXPECT_USAGE("tpu7x", NULL, &cluster_v6e, "the cluster has no nodes of it", "pass --topology");
}

static void test_connected_sized_shapes(void **state)
{
    (void)state;
    /* v5p-1024 is 512 chips: 8x8x8 offline, but the cluster's 512-chip shape when it has one. */
    gc_node_shape other[] = {NODE("ct5p-hightpu-4t", "tpu-v5p-slice", "4x8x16", "np-a", 128)};
    gc_cluster_shapes cluster_other = CLUSTER(other);
    gc_compute c = resolve_ok("v5p-1024", NULL, &cluster_other);
    assert_string_equal(c.topology, "4x8x16");
    assert_int_equal(c.vms_per_slice, 128);
    assert_string_equal(c.display, "v5p-1024");
    assert_false(c.machine_assumed);
    assert_string_equal(resolve_ok("v5p-1024", NULL, NULL).topology, "8x8x8");
    /* the default shape among them wins */
    gc_node_shape with_default[] = {NODE("ct5p-hightpu-4t", "tpu-v5p-slice", "4x8x16", "a", 128),
                                    NODE("ct5p-hightpu-4t", "tpu-v5p-slice", "8x8x8", "b", 128)};
    gc_cluster_shapes cluster_default = CLUSTER(with_default);
    assert_string_equal(resolve_ok("v5p-1024", NULL, &cluster_default).topology, "8x8x8");
    /* two non-default shapes of that size: ask */
    gc_node_shape two[] = {NODE("ct5p-hightpu-4t", "tpu-v5p-slice", "4x8x16", "a", 128),
                           NODE("ct5p-hightpu-4t", "tpu-v5p-slice", "4x4x32", "b", 128)};
    gc_cluster_shapes cluster_two = CLUSTER(two);
    EXPECT_USAGE("v5p-1024", NULL, &cluster_two, "512 chips",
                 "several shapes of that size: 4x8x16 (node pool a", "4x4x32 (node pool b",
                 "--topology");
    assert_string_equal(resolve_ok("v5p-1024", "4x4x32", &cluster_two).topology, "4x4x32");
    /* shapes of another size do not matter */
    assert_string_equal(resolve_ok("v5p-128", NULL, &cluster_two).topology, "4x4x4");
}

/* ---- GPUs and CPUs ----------------------------------------------------------------------- */

static void test_gpu_entries(void **state)
{
    (void)state;
    static const struct {
        const char *shorthand, *machine, *label;
        int gpus;
    } want[] = {
        {"l4-1", "g2-standard-12", "nvidia-l4", 1},
        {"l4-2", "g2-standard-24", "nvidia-l4", 2},
        {"l4-4", "g2-standard-48", "nvidia-l4", 4},
        {"l4-8", "g2-standard-96", "nvidia-l4", 8},
        {"a100-40gb-1", "a2-highgpu-1g", "nvidia-tesla-a100", 1},
        {"a100-40gb-2", "a2-highgpu-2g", "nvidia-tesla-a100", 2},
        {"a100-40gb-4", "a2-highgpu-4g", "nvidia-tesla-a100", 4},
        {"a100-40gb-8", "a2-highgpu-8g", "nvidia-tesla-a100", 8},
        {NULL, "a2-megagpu-16g", "nvidia-tesla-a100", 16},
        {"a100-80gb-1", "a2-ultragpu-1g", "nvidia-a100-80gb", 1},
        {"a100-80gb-2", "a2-ultragpu-2g", "nvidia-a100-80gb", 2},
        {"a100-80gb-4", "a2-ultragpu-4g", "nvidia-a100-80gb", 4},
        {"a100-80gb-8", "a2-ultragpu-8g", "nvidia-a100-80gb", 8},
        {"h100-80gb-1", "a3-highgpu-1g", "nvidia-h100-80gb", 1},
        {"h100-80gb-2", "a3-highgpu-2g", "nvidia-h100-80gb", 2},
        {"h100-80gb-4", "a3-highgpu-4g", "nvidia-h100-80gb", 4},
        {"h100-80gb-8", "a3-highgpu-8g", "nvidia-h100-80gb", 8},
        {"h100-mega-80gb-8", "a3-megagpu-8g", "nvidia-h100-mega-80gb", 8},
        {"h200-141gb-8", "a3-ultragpu-8g", "nvidia-h200-141gb", 8},
        {"b200-8", "a4-highgpu-8g", "nvidia-b200", 8},
        {"gb200-4", "a4x-highgpu-4g", "nvidia-gb200", 4},
        {NULL, "g2-standard-4", "nvidia-l4", 1},
        {NULL, "g2-standard-32", "nvidia-l4", 1},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const char *names[] = {want[i].shorthand, want[i].machine};
        for (size_t k = 0; k < 2; k++) {
            if (!names[k])
                continue;
            gc_compute c = resolve_ok(names[k], NULL, NULL);
            assert_int_equal(c.kind, GC_ACCEL_GPU);
            assert_string_equal(c.machine_type, want[i].machine);
            assert_string_equal(c.accelerator, want[i].label);
            assert_int_equal(c.gpus_per_vm, want[i].gpus);
            assert_string_equal(c.display, want[i].shorthand ? want[i].shorthand : want[i].machine);
            assert_string_equal(c.topology, "");
            assert_null(c.tpu_machine);
        }
    }
    /* every table entry resolves by each of its names, and the display name back to it */
    size_t count;
    const gc_gpu_machine *gpus = gc_catalog_gpu_machines(&count);
    assert_int_equal(count, 25);
    for (size_t i = 0; i < count; i++) {
        gc_compute c = resolve_ok(gpus[i].machine_type, NULL, NULL);
        assert_int_equal(c.gpus_per_vm, gpus[i].gpus);
        assert_string_equal(resolve_ok(c.display, NULL, NULL).machine_type, gpus[i].machine_type);
    }
    assert_string_equal(resolve_ok("L4-2", NULL, NULL).machine_type, "g2-standard-24");
    assert_string_equal(resolve_ok("A3-HIGHGPU-8G", NULL, NULL).display, "h100-80gb-8");
    EXPECT_USAGE("l4-2", "2x2", NULL, "--topology shapes TPU slices",
                 "l4-2 is a GPU machine (g2-standard-24)");
}

static void test_gpu_labels(void **state)
{
    (void)state;
    EXPECT_USAGE("nvidia-l4", NULL, NULL, "GKE accelerator label",
                 "does not say how many GPUs a VM has", "l4-2 (g2-standard-24)", "g2-standard-4");
    EXPECT_USAGE("NVIDIA-H100-80GB", NULL, NULL, "h100-80gb-8 (a3-highgpu-8g)");
    gc_node_shape l4[] = {NODE("g2-standard-24", "nvidia-l4", NULL, "gpu-np", 3),
                          NODE("n4-standard-64", NULL, NULL, "cpu-np", 1)};
    gc_cluster_shapes cluster = CLUSTER(l4);
    gc_compute c = resolve_ok("nvidia-l4", NULL, &cluster);
    assert_int_equal(c.kind, GC_ACCEL_GPU);
    assert_string_equal(c.machine_type, "g2-standard-24");
    assert_string_equal(c.accelerator, "nvidia-l4");
    assert_int_equal(c.gpus_per_vm, 2);
    assert_string_equal(c.display, "l4-2");
    EXPECT_USAGE("nvidia-h100-80gb", NULL, &cluster, "no node in the cluster carries",
                 "cloud.google.com/gke-accelerator=nvidia-h100-80gb", "h100-80gb-8");
    gc_node_shape two[] = {NODE("g2-standard-24", "nvidia-l4", NULL, "a", 3),
                           NODE("g2-standard-48", "nvidia-l4", NULL, "b", 1)};
    gc_cluster_shapes cluster_two = CLUSTER(two);
    EXPECT_USAGE("nvidia-l4", NULL, &cluster_two, "several machine types",
                 "g2-standard-24 (node pool a: 3 nodes)", "g2-standard-48 (node pool b: 1 node)");
    gc_node_shape odd[] = {NODE("a3-edgegpu-8g", "nvidia-h100-80gb", NULL, "edge", 1)};
    gc_cluster_shapes cluster_odd = CLUSTER(odd);
    EXPECT_USAGE("nvidia-h100-80gb", NULL, &cluster_odd, "a3-edgegpu-8g",
                 "the catalog does not know");
}

static void test_cpu_entries(void **state)
{
    (void)state;
    static const struct {
        const char *typed, *machine;
        int vcpus;
    } want[] = {
        {"n2-standard-32", "n2-standard-32", 32},
        {"n4-standard-64", "n4-standard-64", 64},
        {"N2-HIGHMEM-8", "n2-highmem-8", 8},
        {"c3-highcpu-4", "c3-highcpu-4", 4},
        {"c3d-standard-360-lssd", "c3d-standard-360-lssd", 360},
        {"c3-highcpu-192-metal", "c3-highcpu-192-metal", 192},
        {"m2-ultramem-416", "m2-ultramem-416", 416},
        {"m1-megamem-96", "m1-megamem-96", 96},
        {"e2-standard-2", "e2-standard-2", 2},
        {"t2d-standard-60", "t2d-standard-60", 60},
        {"n1-highcpu-96", "n1-highcpu-96", 96},
        {"c4a-highmem-72", "c4a-highmem-72", 72},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        gc_compute c = resolve_ok(want[i].typed, NULL, NULL);
        assert_int_equal(c.kind, GC_ACCEL_CPU);
        assert_string_equal(c.machine_type, want[i].machine);
        assert_string_equal(c.display, want[i].machine);
        assert_int_equal(c.vcpus, want[i].vcpus);
        assert_string_equal(c.accelerator, "");
        assert_string_equal(c.topology, "");
        assert_int_equal(c.gpus_per_vm, 0);
    }
    EXPECT_USAGE("n2-superfast-8", NULL, NULL,
                 "n2 machine types are n2-standard-N, n2-highmem-N, "
                 "n2-highcpu-N");
    EXPECT_USAGE("m1-standard-8", NULL, NULL, "m1-megamem-N, m1-ultramem-N");
    EXPECT_USAGE("n2-standard-0", NULL, NULL, "<family>-<class>-<vCPUs>", "1 to 1024 vCPUs",
                 "n2-standard-32");
    EXPECT_USAGE("n2-standard-08", NULL, NULL, "<family>-<class>-<vCPUs>");
    EXPECT_USAGE("n2-standard-2000", NULL, NULL, "1 to 1024 vCPUs");
    EXPECT_USAGE("n2-standard", NULL, NULL, "<family>-<class>-<vCPUs>");
    EXPECT_USAGE("n2-standard-8-lssd", NULL, NULL, "<family>-<class>-<vCPUs>, with");
    EXPECT_USAGE("c3-standard-8-ssd", NULL, NULL, "[-lssd|-metal]");
    EXPECT_USAGE("n2-standard-32", "4x4", NULL, "--topology shapes TPU slices",
                 "CPU machine (n2-standard-32)");
}

/* ---- parsing and help -------------------------------------------------------------------- */

static void test_topology_parse(void **state)
{
    (void)state;
    int dims[3];
    assert_int_equal(gc_topology_parse("4x4", dims), 2);
    assert_int_equal(dims[0], 4);
    assert_int_equal(dims[1], 4);
    assert_int_equal(dims[2], 1);
    assert_int_equal(gc_topology_parse("2X2X1", dims), 3);
    assert_int_equal(dims[0] * 100 + dims[1] * 10 + dims[2], 221);
    assert_int_equal(gc_topology_parse("16x20x28", dims), 3);
    assert_int_equal(dims[2], 28);
    assert_int_equal(gc_topology_parse("1024x1x1", dims), 3);
    const char *bad[] = {"",     "4",      "4x",   "x4",   "0x4",  "04x4", "4x4x4x4",
                         "4x-4", "1025x1", " 4x4", "4x4 ", "4xx4", "axb"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (gc_topology_parse(bad[i], dims))
            fail_msg("\"%s\" parsed", bad[i]);
    assert_int_equal(gc_topology_parse(NULL, dims), 0);
    assert_int_equal(gc_topology_chips("4x8x16"), 512);
    assert_int_equal(gc_topology_chips("16x16"), 256);
    assert_int_equal(gc_topology_chips("bogus"), 0);

    gc_error err = {0};
    assert_int_equal(gc_topology_validate(gc_catalog_tpu_machine("ct6e-standard-4t"), "4x4", &err),
                     0);
    assert_int_equal(gc_topology_validate(gc_catalog_tpu_machine("ct6e-standard-4t"), "4x2", &err),
                     GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--topology 4x2"));
    assert_int_equal(gc_topology_validate(gc_catalog_tpu_machine("ct6e-standard-4t"), NULL, &err),
                     GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "is not a slice shape"));
}

static void test_help(void **state)
{
    (void)state;
    const char *help = gc_catalog_help();
    const char *phrases[] = {"v6e-16",
                             "v5p-8 is 4 chips, 2x2x1",
                             "N counts TensorCores",
                             "v5e-16",
                             "bare tpu7x with --topology",
                             "ct5lp-hightpu-{1t,4t,8t}",
                             "ct6e-standard-{1t,4t,8t}",
                             "tpu7x-standard-{1t,4t}",
                             "tpu-v5-lite-podslice",
                             "h100-mega-80gb-8",
                             "gb200-4",
                             "nvidia-*",
                             "n2-standard-32",
                             "1x1 2x2 2x4 4x4 4x8 8x8 8x16 16x16",
                             "2x2x1 2x2x2 2x2x4 2x4x4"};
    for (size_t i = 0; i < sizeof(phrases) / sizeof(phrases[0]); i++)
        if (!strstr(help, phrases[i]))
            fail_msg("help lacks \"%s\"", phrases[i]);
    size_t lines = 0;
    for (const char *p = help; *p; p++)
        lines += *p == '\n';
    assert_true(lines >= 10 && lines <= 25);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families),
        cmocka_unit_test(test_machine_lookup),
        cmocka_unit_test(test_worker_requests),
        cmocka_unit_test(test_sweep_every_entry),
        cmocka_unit_test(test_topology_lists),
        cmocka_unit_test(test_shorthand_forms),
        cmocka_unit_test(test_chip_counts_to_shapes),
        cmocka_unit_test(test_reject_sizes),
        cmocka_unit_test(test_reject_topology_rules),
        cmocka_unit_test(test_reject_disagreements),
        cmocka_unit_test(test_reject_missing_topology),
        cmocka_unit_test(test_reject_unknown),
        cmocka_unit_test(test_connected_host_choice),
        cmocka_unit_test(test_connected_topology_discovery),
        cmocka_unit_test(test_connected_sized_shapes),
        cmocka_unit_test(test_gpu_entries),
        cmocka_unit_test(test_gpu_labels),
        cmocka_unit_test(test_cpu_entries),
        cmocka_unit_test(test_topology_parse),
        cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
