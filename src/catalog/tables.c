/*
 * The catalog's facts: TPU families and their host machine types, GPU machines, CPU families.
 *
 * Catalog decisions, where Cloud TPU, xpk and Google's gcluster disagree:
 *
 * 1. Shorthand sizes follow Cloud TPU names. In v4-N, v5p-N and tpu7x-N, N counts TensorCores
 *    (2 per chip); in v5litepod-N (alias v5e-N) and v6e-N, N counts chips. So v4-8 and v5p-8
 *    are 4 chips (2x2x1, one VM) and tpu7x-16 is 8 chips (2x2x2, two VMs). Google's gcluster
 *    reads every suffix as chips except the literal string "v4-8" (B15: its v5p-8 is 8 chips,
 *    its v4-16 is 16) and refuses tpu7x-N unless --topology is given; xpk counts TensorCores
 *    as we do.
 * 2. The size is honoured. Google ignores the N of a shorthand given with --topology (B16: v6e-16
 *    --topology 2x4 is accepted); here a sized shorthand and --topology must agree in chip
 *    count, and a shape written in the shorthand (v6e-4x4) must equal --topology.
 * 3. Host type. Offline: the family's 4-chip host (ct4p-hightpu-4t, ct5p-hightpu-4t,
 *    ct5lp-hightpu-4t, ct6e-standard-4t, tpu7x-standard-4t), as Cloud TPU documents for
 *    multi-host slices and as xpk does; 1x1 / 1x1x1 take the 1-chip host (ct5lp-hightpu-1t,
 *    ct6e-standard-1t, tpu7x-standard-1t), as xpk does. So offline v6e-8 and v5litepod-8 are
 *    2x4 on two 4-chip VMs, and gc_compute.machine_assumed says the host was assumed. Google
 *    pins v6e-8 and v5litepod-8 to the -8t host (one 8-chip VM) whatever the cluster has (B7),
 *    and v6e-1/-4, v5litepod-1/-4, v5p-1/-2/-4 to one -Nt type each; xpk has no -8t types at
 *    all and no v5litepod-1/-4. Connected, we use the host type the cluster's TPU nodes really
 *    have, preferring nodes labelled with exactly the requested topology: v6e-8 on
 *    ct6e-standard-8t nodes labelled 2x4 is one 8-chip VM (tpuv6e1t:2x4). Two host types both
 *    holding nodes of the requested shape is a usage error (the nodeSelector could not tell
 *    them apart); no serving host in the cluster falls back to the offline choice.
 * 4. -1t and -8t hosts serve one shape each: -1t 1x1 (1x1x1 for tpu7x), -8t 2x4, with 1 and 8
 *    chips per VM; naming one needs no --topology. Every other shape must be a whole number of
 *    VMs: pathways-job lets ct6e-standard-4t take 1x1 and would ask 4 chips of a 1-chip VM; we
 *    refuse it and name the host type that serves the shape.
 * 5. Pathways --instance_type is <prefix>:<topology> with prefixes tpuv4, tpuv5 (v5p: Pathways
 *    renamed "v5p" to "v5"), tpuv5e, tpuv6e, tpu7x, and tpuv5e1t / tpuv6e1t for the 8-chip
 *    single-host types (pathways-job, pathways-utils). The 1-chip hosts keep the family prefix
 *    (tpuv6e:1x1, as xpk). Google's gcluster pastes the first "-" token of what was typed
 *    (v6e:4x4, ct6e:4x4, tpu:4x4; B2), which Pathways does not document.
 * 6. Shapes: Google's rules, 2-D 1x1 2x2 2x4 4x4 4x8 8x8 8x16 16x16; 3-D 2x2x1 2x2x2 2x2x4 2x4x4
 *    or A<=B<=C all multiples of 4 within 64 (v4), 140 (v5p), 144 (tpu7x) cubes of 4x4x4, with
 *    no cap per dimension (xpk stops at 256 and lets v4 take any order; we do neither, so v5p
 *    has 496 shapes here, 414 in xpk). A chip count maps to the table shape, else to the
 *    "most cubic" one (smallest C-A): this reproduces Google's table (64 4x4x4, 128 4x4x8, 256
 *    4x8x8, 512 8x8x8, 1024 8x8x16, 2048 8x16x16) and extends it to every multiple of 64 chips
 *    (v5p-17920 is 16x20x28, the full pod), where Google refuses any count off its table and
 *    xpk takes its iteration order (xpk v4-768 is 4x4x24, ours 4x8x12). Connected, a sized
 *    shorthand takes the family's node topology label with that many chips when there is one
 *    (v5p-1024 on 4x8x16 nodes is 4x8x16).
 * 7. No shape asked for (bare tpu7x, a machine type, a GKE label): the topology label of the
 *    family's nodes; several different ones are a usage error listing them and naming
 *    --topology (Google takes "the first" of a Go map, B17); offline, --topology is required.
 * 8. Labels: v5e is tpu-v5-lite-podslice (Google's Terraform table says tpu-v5e-slice, B21);
 *    a2-ultragpu is nvidia-a100-80gb (Google's job table says nvidia-tesla-a100, B6).
 * 9. display is <family>-<N> in the family's unit (v6e-16, v5p-8, tpu7x-256, v5litepod-16,
 *    never the v5e alias), so `job list` reads like Cloud TPU and the name resolves back to
 *    the same slice.
 * 10. A Pathways worker requests half its host's vCPUs and memory besides google.com/tpu, so
 *    system daemons and a colocated Python sidecar still fit. Google and xpk request only
 *    google.com/tpu; we ask for tpu, cpu and memory at once where the ClusterQueue
 *    covers all three in one resource group (Kueue then charges them to one flavor), and only
 *    for google.com/tpu where it does not.
 */
#include "catalog/catalog_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

enum { FAMILY_V4, FAMILY_V5P, FAMILY_V5E, FAMILY_V6E, FAMILY_TPU7X };

static const gc_tpu_family tpu_families[] = {
    [FAMILY_V4] = {"v4", NULL, "tpu-v4-podslice", "tpuv4", 3, 2, 64},
    [FAMILY_V5P] = {"v5p", NULL, "tpu-v5p-slice", "tpuv5", 3, 2, 140},
    [FAMILY_V5E] = {"v5litepod", "v5e", "tpu-v5-lite-podslice", "tpuv5e", 2, 1, 0},
    [FAMILY_V6E] = {"v6e", NULL, "tpu-v6e-slice", "tpuv6e", 2, 1, 0},
    [FAMILY_TPU7X] = {"tpu7x", NULL, "tpu7x", "tpu7x", 3, 2, 144},
};

/* Host sizes (vCPUs, GiB) are the Compute Engine machine shapes. */
static const gc_tpu_machine tpu_machines[] = {
    {"ct4p-hightpu-4t", &tpu_families[FAMILY_V4], 4, NULL, NULL, 240, 407},
    {"ct5p-hightpu-4t", &tpu_families[FAMILY_V5P], 4, NULL, NULL, 208, 448},
    {"ct5lp-hightpu-1t", &tpu_families[FAMILY_V5E], 1, "1x1", NULL, 24, 48},
    {"ct5lp-hightpu-4t", &tpu_families[FAMILY_V5E], 4, NULL, NULL, 112, 192},
    {"ct5lp-hightpu-8t", &tpu_families[FAMILY_V5E], 8, "2x4", "tpuv5e1t", 224, 384},
    {"ct6e-standard-1t", &tpu_families[FAMILY_V6E], 1, "1x1", NULL, 44, 176},
    {"ct6e-standard-4t", &tpu_families[FAMILY_V6E], 4, NULL, NULL, 180, 720},
    {"ct6e-standard-8t", &tpu_families[FAMILY_V6E], 8, "2x4", "tpuv6e1t", 180, 1440},
    {"tpu7x-standard-1t", &tpu_families[FAMILY_TPU7X], 1, "1x1x1", NULL, 56, 240},
    {"tpu7x-standard-4t", &tpu_families[FAMILY_TPU7X], 4, NULL, NULL, 224, 960},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * GPU machines. The shorthands are Google's; g2-standard-4/8/16/32 (one L4 each) have none, so
 * they are reachable by machine type only and display as such.
 */
static const gc_gpu_machine gpu_machines[] = {
    {"l4-1", "g2-standard-12", "nvidia-l4", 1},
    {"l4-2", "g2-standard-24", "nvidia-l4", 2},
    {"l4-4", "g2-standard-48", "nvidia-l4", 4},
    {"l4-8", "g2-standard-96", "nvidia-l4", 8},
    {NULL, "g2-standard-4", "nvidia-l4", 1},
    {NULL, "g2-standard-8", "nvidia-l4", 1},
    {NULL, "g2-standard-16", "nvidia-l4", 1},
    {NULL, "g2-standard-32", "nvidia-l4", 1},
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
};

/*
 * CPU machine families and their classes, for <family>-<class>-<vCPUs> names. Only the shape of
 * the name is checked, not every size Compute Engine sells: GKE refuses a size that does not
 * exist when the node pool is created, and a table of sizes would go stale.
 */
typedef struct cpu_family {
    const char *name;
    const char *classes[4];
    bool local_ssd; /* "-lssd" and "-metal" variants exist */
} cpu_family;

static const cpu_family cpu_families[] = {
    {"n1", {"standard", "highmem", "highcpu", NULL}, false},
    {"n2", {"standard", "highmem", "highcpu", NULL}, false},
    {"n2d", {"standard", "highmem", "highcpu", NULL}, false},
    {"n4", {"standard", "highmem", "highcpu", NULL}, false},
    {"n4d", {"standard", "highmem", "highcpu", NULL}, false},
    {"c2", {"standard", NULL}, false},
    {"c2d", {"standard", "highmem", "highcpu", NULL}, false},
    {"c3", {"standard", "highmem", "highcpu", NULL}, true},
    {"c3d", {"standard", "highmem", "highcpu", NULL}, true},
    {"c4", {"standard", "highmem", "highcpu", NULL}, true},
    {"c4a", {"standard", "highmem", "highcpu", NULL}, true},
    {"c4d", {"standard", "highmem", "highcpu", NULL}, true},
    {"e2", {"standard", "highmem", "highcpu", NULL}, false},
    {"t2d", {"standard", NULL}, false},
    {"t2a", {"standard", NULL}, false},
    {"h3", {"standard", NULL}, false},
    {"z3", {"highmem", NULL}, true},
    {"m1", {"megamem", "ultramem", NULL}, false},
    {"m2", {"megamem", "ultramem", "hypermem", NULL}, false},
    {"m3", {"megamem", "ultramem", NULL}, false},
    {"m4", {"megamem", "ultramem", NULL}, false},
};

const gc_tpu_family *gc_catalog_tpu_families(size_t *count)
{
    if (count)
        *count = COUNT(tpu_families);
    return tpu_families;
}

const gc_tpu_machine *gc_catalog_tpu_machines(size_t *count)
{
    if (count)
        *count = COUNT(tpu_machines);
    return tpu_machines;
}

const gc_tpu_machine *gc_catalog_tpu_machine(const char *machine_type)
{
    for (size_t i = 0; machine_type && i < COUNT(tpu_machines); i++)
        if (!strcasecmp(tpu_machines[i].machine_type, machine_type))
            return &tpu_machines[i];
    return NULL;
}

const gc_gpu_machine *gc_catalog_gpu_machines(size_t *count)
{
    if (count)
        *count = COUNT(gpu_machines);
    return gpu_machines;
}

static bool token_is(const char *word, const char *name, size_t len)
{
    return word && strlen(word) == len && !strncasecmp(word, name, len);
}

const gc_tpu_family *catalog_family_by_name(const char *name, size_t len)
{
    for (size_t i = 0; i < COUNT(tpu_families); i++)
        if (token_is(tpu_families[i].name, name, len) || token_is(tpu_families[i].alias, name, len))
            return &tpu_families[i];
    return NULL;
}

const gc_tpu_family *catalog_family_by_label(const char *label)
{
    for (size_t i = 0; i < COUNT(tpu_families); i++)
        if (!strcasecmp(tpu_families[i].gke_accelerator, label))
            return &tpu_families[i];
    return NULL;
}

const gc_gpu_machine *catalog_gpu_by_name(const char *name)
{
    for (size_t i = 0; i < COUNT(gpu_machines); i++)
        if ((gpu_machines[i].shorthand && !strcasecmp(gpu_machines[i].shorthand, name)) ||
            !strcasecmp(gpu_machines[i].machine_type, name))
            return &gpu_machines[i];
    return NULL;
}

bool catalog_gpu_label_known(const char *label)
{
    for (size_t i = 0; i < COUNT(gpu_machines); i++)
        if (!strcasecmp(gpu_machines[i].accelerator, label))
            return true;
    return false;
}

const char *const *catalog_cpu_classes(const char *family, size_t len, bool *local_ssd)
{
    for (size_t i = 0; i < COUNT(cpu_families); i++)
        if (token_is(cpu_families[i].name, family, len)) {
            if (local_ssd)
                *local_ssd = cpu_families[i].local_ssd;
            return cpu_families[i].classes;
        }
    return NULL;
}

void catalog_list_cpu_families(gc_buf *b)
{
    for (size_t i = 0; i < COUNT(cpu_families); i++)
        gc_buf_printf(b, "%s%s", i ? " " : "", cpu_families[i].name);
}

/* Kubernetes quantities for half of `value`: whole units when even, else milli-units. */
static void half_quantity(int value, const char *unit, const char *milli_unit, char out[16])
{
    if (value % 2 == 0)
        snprintf(out, 16, "%d%s", value / 2, unit);
    else
        snprintf(out, 16, "%d%s", value * 500, milli_unit);
}

void gc_tpu_worker_requests(const gc_tpu_machine *m, char cpu[16], char memory[16])
{
    if (!m) {
        snprintf(cpu, 16, "0");
        snprintf(memory, 16, "0");
        return;
    }
    half_quantity(m->host_vcpus, "", "m", cpu);
    /* Half a GiB is 512Mi: an odd GiB count is written in Mi to stay exact. */
    if (m->host_memory_gib % 2 == 0)
        snprintf(memory, 16, "%dGi", m->host_memory_gib / 2);
    else
        snprintf(memory, 16, "%dMi", m->host_memory_gib * 512);
}

const char *gc_catalog_help(void)
{
    return "Compute types (--compute-type, case-insensitive):\n"
           "  TPU shorthands  v6e-16, v5litepod-16 (or v5e-16): N counts chips;\n"
           "                  v4-8, v5p-8, tpu7x-16: N counts TensorCores, 2 per chip\n"
           "                  (v5p-8 is 4 chips, 2x2x1); with a shape: v6e-4x4, v5p-2x2x1,\n"
           "                  tpu7x-2x2x2; bare tpu7x with --topology\n"
           "  TPU hosts       ct4p-hightpu-4t, ct5p-hightpu-4t, ct5lp-hightpu-{1t,4t,8t},\n"
           "                  ct6e-standard-{1t,4t,8t}, tpu7x-standard-{1t,4t}\n"
           "  GKE TPU labels  tpu-v4-podslice, tpu-v5p-slice, tpu-v5-lite-podslice,\n"
           "                  tpu-v6e-slice, tpu7x (with --topology, or the cluster's nodes' "
           "shape)\n"
           "  GPUs            l4-{1,2,4,8}, a100-40gb-{1,2,4,8}, a100-80gb-{1,2,4,8},\n"
           "                  h100-80gb-{1,2,4,8}, h100-mega-80gb-8, h200-141gb-8, b200-8, "
           "gb200-4,\n"
           "                  their machine types (g2-standard-24, a2-megagpu-16g, "
           "a3-highgpu-8g),\n"
           "                  or an nvidia-* label when connected to a cluster\n"
           "  CPUs            machine types: n2-standard-32, n4-standard-64, c3-highmem-8, ...\n"
           "--topology: 2-D (v5e, v6e) 1x1 2x2 2x4 4x4 4x8 8x8 8x16 16x16; 3-D (v4, v5p, tpu7x)\n"
           "  2x2x1 2x2x2 2x2x4 2x4x4, or AxBxC with A<=B<=C all multiples of 4.\n"
           "Connected, the host type and shape follow the cluster's TPU nodes; offline, slices\n"
           "use the 4-chip host type (1x1 the 1-chip one).\n";
}
