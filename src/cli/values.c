/*
 * Value sets that several option tables share, and the checks every set supports.
 */
#include "cli/options.h"

#include "gcluster/buf.h"
#include "gcluster/catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cli_values cli_job_names = {.job_names = true};
const cli_values cli_paths = {.files = true};

static const char *const text_formats[] = {"text", "json", "yaml", NULL};
const cli_values cli_text_formats = {.names = text_formats};

static const char *const table_formats[] = {"table", "wide", "json", "yaml", NULL};
const cli_values cli_table_formats = {.names = table_formats};

/* Several catalog entries name the same thing (tpu7x is a family and a GKE label; a 2x4 slice
 * of v6e exists on the 4-chip and the 8-chip host): each name is offered once. */
typedef struct unique_names {
    gc_buf seen; /* "\nname\nname\n" */
    cli_value_fn add;
    void *ctx;
} unique_names;

static void add_once(unique_names *u, const char *name)
{
    char needle[GC_NAME_MAX + 2];
    snprintf(needle, sizeof(needle), "\n%s\n", name);
    if (strstr(u->seen.data, needle))
        return;
    gc_buf_printf(&u->seen, "%s\n", name);
    u->add(u->ctx, name);
}

/* family-N for every slice size the family's hosts serve (N in the family's unit). */
static void add_tpu_shorthands(unique_names *u, const gc_tpu_family *family,
                               char (*shapes)[GC_TOPOLOGY_MAX], size_t cap)
{
    size_t count;
    const gc_tpu_machine *machines = gc_catalog_tpu_machines(&count);
    for (size_t m = 0; m < count; m++) {
        if (machines[m].family != family)
            continue;
        size_t n = gc_catalog_topologies(&machines[m], shapes, cap);
        for (size_t i = 0; i < n && i < cap; i++) {
            char name[GC_NAME_MAX];
            int size = gc_topology_chips(shapes[i]) * family->cores_per_chip;
            snprintf(name, sizeof(name), "%s-%d", family->name, size);
            add_once(u, name);
            if (family->alias) {
                snprintf(name, sizeof(name), "%s-%d", family->alias, size);
                add_once(u, name);
            }
        }
    }
}

/* TPU shorthands, TPU machine types and GKE labels, GPU shorthands, machine types and labels.
 * CPU machine types are an open pattern (n2-standard-32) and are not listed. */
static void generate_compute_types(cli_value_fn add, void *ctx)
{
    unique_names u = {.add = add, .ctx = ctx};
    gc_buf_init(&u.seen);
    gc_buf_putc(&u.seen, '\n');
    enum { SHAPES_MAX = 1024 };
    char(*shapes)[GC_TOPOLOGY_MAX] = gc_xcalloc(SHAPES_MAX, GC_TOPOLOGY_MAX);
    size_t count;
    const gc_tpu_family *families = gc_catalog_tpu_families(&count);
    for (size_t i = 0; i < count; i++)
        add_tpu_shorthands(&u, &families[i], shapes, SHAPES_MAX);
    free(shapes);
    for (size_t i = 0; i < count; i++)
        add_once(&u, families[i].gke_accelerator);
    const gc_tpu_machine *machines = gc_catalog_tpu_machines(&count);
    for (size_t i = 0; i < count; i++)
        add_once(&u, machines[i].machine_type);
    const gc_gpu_machine *gpus = gc_catalog_gpu_machines(&count);
    for (size_t i = 0; i < count; i++) {
        if (gpus[i].shorthand)
            add_once(&u, gpus[i].shorthand);
        add_once(&u, gpus[i].machine_type);
        add_once(&u, gpus[i].accelerator);
    }
    gc_buf_free(&u.seen);
}

const cli_values cli_compute_types = {.open = true, .generate = generate_compute_types};

bool cli_value_allowed(const cli_values *values, const char *value)
{
    if (!values->names || values->open)
        return true;
    for (const char *const *n = values->names; *n; n++)
        if (!strcmp(*n, value))
            return true;
    return false;
}

void cli_values_join(const cli_values *values, const char *separator, char *out, size_t size)
{
    gc_buf b;
    gc_buf_init(&b);
    for (const char *const *n = values->names; n && *n; n++) {
        const char *before = n == values->names ? "" : separator ? separator : n[1] ? ", " : " or ";
        gc_buf_printf(&b, "%s%s", before, *n);
    }
    snprintf(out, size, "%s", b.data);
    gc_buf_free(&b);
}
