/*
 * "Did you mean": the usage error for a compute type nothing recognised, naming the valid choices
 * nearest to what was typed. The nearest are found by family first (ct6e-standard-2t → the other
 * ct6e hosts, l4-3 → the l4 shorthands, v7-8 → tpu7x-8), then by edit distance over every name
 * the catalog knows.
 */
#include "catalog/catalog_internal.h"

#include "gcluster/error.h"
#include "gcluster/text.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NEAR_MAX 6

bool catalog_all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s))
            return false;
    return true;
}

/* Names people give TPU generations that are not the ones Cloud TPU uses in shorthands. */
static const struct misname {
    const char *typed;
    const char *family;
    const char *other_family; /* a second candidate, or NULL */
} misnames[] = {
    {"v7", "tpu7x", NULL},      {"v7x", "tpu7x", NULL},    {"tpu7", "tpu7x", NULL},
    {"tpuv7", "tpu7x", NULL},   {"tpuv7x", "tpu7x", NULL}, {"ironwood", "tpu7x", NULL},
    {"v6", "v6e", NULL},        {"tpuv6e", "v6e", NULL},   {"trillium", "v6e", NULL},
    {"v5", "v5p", "v5litepod"}, {"tpuv5", "v5p", NULL},    {"tpuv5p", "v5p", NULL},
    {"tpuv5e", "v5e", NULL},    {"v5lite", "v5e", NULL},   {"v5lp", "v5e", NULL},
    {"tpuv4", "v4", NULL},      {"v4p", "v4", NULL},
};

/* The closest names seen so far, nearest first. */
typedef struct near_list {
    char names[NEAR_MAX][GC_NAME_MAX];
    int distance[NEAR_MAX];
    size_t count;
    int limit; /* farther than this is not "near" */
} near_list;

static void consider(near_list *near, const char *typed, const char *candidate)
{
    int d = (int)gc_text_edit_distance(typed, candidate);
    if (d > near->limit)
        return;
    for (size_t i = 0; i < near->count; i++)
        if (!strcasecmp(near->names[i], candidate))
            return;
    size_t at = near->count;
    while (at > 0 && near->distance[at - 1] > d)
        at--;
    if (at >= NEAR_MAX)
        return;
    size_t last = near->count < NEAR_MAX ? near->count : NEAR_MAX - 1;
    for (size_t i = last; i > at; i--) {
        memcpy(near->names[i], near->names[i - 1], GC_NAME_MAX);
        near->distance[i] = near->distance[i - 1];
    }
    snprintf(near->names[at], GC_NAME_MAX, "%s", candidate);
    near->distance[at] = d;
    if (near->count < NEAR_MAX)
        near->count++;
}

/* Whether <family>-<rest> is a valid shorthand, so it can be offered. */
static bool shorthand_valid(const gc_tpu_family *family, const char *rest)
{
    char shape[GC_TOPOLOGY_MAX];
    if (catalog_all_digits(rest)) {
        long n = strlen(rest) > 7 ? 0 : strtol(rest, NULL, 10);
        return n > 0 && n % family->cores_per_chip == 0 &&
               !catalog_shape_for_chips(family, (int)n / family->cores_per_chip, shape);
    }
    int dims[3];
    int rank = gc_topology_parse(rest, dims);
    if (rank != family->dimensions)
        return false;
    catalog_shape_format(dims, rank, shape);
    return catalog_family_serves(family, shape);
}

static void family_form(const char *family_name, const char *rest, gc_buf *b)
{
    const gc_tpu_family *family = catalog_family_by_name(family_name, strlen(family_name));
    if (*rest && shorthand_valid(family, rest))
        gc_buf_printf(b, "%s-%s", family->name, rest);
    else
        gc_buf_printf(b, "%s-N", family->name);
    gc_buf_printf(b, " (N counting %s)",
                  family->cores_per_chip == 1 ? "chips" : "TensorCores, 2 per chip");
}

/* ct6e-standard-2t, tpu7x-standard-8t: the family's real host types. */
static const gc_tpu_family *tpu_host_choices(const char *name, size_t head_len, gc_buf *b)
{
    size_t count;
    const gc_tpu_machine *machines = gc_catalog_tpu_machines(&count);
    const gc_tpu_family *family = NULL;
    for (size_t i = 0; i < count && !family; i++)
        if (strcspn(machines[i].machine_type, "-") == head_len &&
            !strncmp(machines[i].machine_type, name, head_len))
            family = machines[i].family;
    for (size_t i = 0; family && i < count; i++) {
        const gc_tpu_machine *m = &machines[i];
        if (m->family != family)
            continue;
        gc_buf_printf(b, "%s%s (%d chip%s per VM%s%s)", b->len ? ", " : "", m->machine_type,
                      m->chips_per_vm, m->chips_per_vm == 1 ? "" : "s",
                      m->only_topology ? ", only " : "", m->only_topology ? m->only_topology : "");
    }
    return family;
}

static bool same_head(const char *a, const char *name, size_t head_len)
{
    return a && strcspn(a, "-") == head_len && !strncmp(a, name, head_len);
}

/* l4-3, a3-highgpu-3g: the GPU machines of the same kind. */
static bool gpu_choices(const char *name, size_t head_len, gc_buf *b)
{
    size_t count;
    const gc_gpu_machine *gpus = gc_catalog_gpu_machines(&count);
    for (size_t i = 0; i < count; i++) {
        const gc_gpu_machine *g = &gpus[i];
        if (!same_head(g->shorthand, name, head_len) && !same_head(g->machine_type, name, head_len))
            continue;
        gc_buf_puts(b, b->len ? ", " : "");
        if (g->shorthand)
            gc_buf_printf(b, "%s (%s, ", g->shorthand, g->machine_type);
        else
            gc_buf_printf(b, "%s (", g->machine_type);
        gc_buf_printf(b, "%d GPU%s)", g->gpus, g->gpus == 1 ? "" : "s");
    }
    return b->len > 0;
}

/* nvidia-h100: the GKE GPU labels it is a part of (with `related`), else those close to it. */
static bool gpu_label_choices(const char *name, bool related_only, gc_buf *b)
{
    size_t count;
    const gc_gpu_machine *gpus = gc_catalog_gpu_machines(&count);
    int limit = (int)strlen(name) / 3 > 2 ? (int)strlen(name) / 3 : 2;
    for (size_t i = 0; i < count; i++) {
        const char *label = gpus[i].accelerator;
        bool listed = false;
        for (size_t j = 0; j < i; j++)
            listed = listed || !strcmp(label, gpus[j].accelerator);
        if (listed)
            continue;
        size_t nl = strlen(name), ll = strlen(label);
        bool related = !strncmp(label, name, nl < ll ? nl : ll);
        if (related || (!related_only && (int)gc_text_edit_distance(name, label) <= limit))
            gc_buf_printf(b, "%s%s", b->len ? ", " : "", label);
    }
    return b->len > 0;
}

static void nearest_names(const char *name, const char *rest, gc_buf *b)
{
    near_list near;
    memset(&near, 0, sizeof(near));
    near.limit = (int)strlen(name) / 3 > 2 ? (int)strlen(name) / 3 : 2;
    size_t count;
    const gc_tpu_family *families = gc_catalog_tpu_families(&count);
    for (size_t i = 0; i < count; i++) {
        consider(&near, name, families[i].name);
        consider(&near, name, families[i].gke_accelerator);
        const char *names[] = {families[i].name, families[i].alias};
        for (size_t k = 0; k < 2 && *rest; k++) {
            char candidate[GC_NAME_MAX];
            if (!names[k] || !shorthand_valid(&families[i], rest))
                continue;
            snprintf(candidate, sizeof(candidate), "%s-%.*s", names[k], GC_NAME_MAX / 2, rest);
            consider(&near, name, candidate);
        }
    }
    const gc_tpu_machine *machines = gc_catalog_tpu_machines(&count);
    for (size_t i = 0; i < count; i++)
        consider(&near, name, machines[i].machine_type);
    const gc_gpu_machine *gpus = gc_catalog_gpu_machines(&count);
    for (size_t i = 0; i < count; i++) {
        if (gpus[i].shorthand)
            consider(&near, name, gpus[i].shorthand);
        consider(&near, name, gpus[i].machine_type);
        consider(&near, name, gpus[i].accelerator);
    }
    for (size_t i = 0; i < near.count; i++)
        gc_buf_printf(b, "%s%s", i ? ", " : "", near.names[i]);
}

/* n9-standard-8: shaped like a CPU machine type, of a family the catalog does not know. */
static bool looks_like_cpu(const char *name)
{
    size_t family = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789");
    if (!family || name[family] != '-')
        return false;
    const char *cls = name + family + 1;
    size_t cls_len = strspn(cls, "abcdefghijklmnopqrstuvwxyz");
    return cls_len && cls[cls_len] == '-' && isdigit((unsigned char)cls[cls_len + 1]);
}

int catalog_unknown_compute_type(const char *typed, const char *name, gc_error *err)
{
    size_t head_len = strcspn(name, "-");
    const char *rest = name[head_len] ? name + head_len + 1 : "";
    const struct misname *hint = NULL;
    for (size_t i = 0; i < sizeof(misnames) / sizeof(misnames[0]); i++)
        if (strlen(misnames[i].typed) == head_len && !strncmp(misnames[i].typed, name, head_len))
            hint = &misnames[i];

    gc_buf near;
    gc_buf_init(&near);
    const gc_tpu_family *family;
    int rc;
    if ((family = tpu_host_choices(name, head_len, &near))) {
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "unknown --compute-type \"%s\": %s host machine types are %s. %s", typed,
                     family->name, near.data, CATALOG_ACCEPTED_FORMS);
    } else if (hint) {
        family_form(hint->family, rest, &near);
        if (hint->other_family) {
            gc_buf_puts(&near, " or ");
            family_form(hint->other_family, rest, &near);
        }
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "unknown --compute-type \"%s\": Cloud TPU shorthands name this generation "
                     "differently; did you mean %s? %s",
                     typed, near.data, CATALOG_ACCEPTED_FORMS);
    } else if (head_len == 6 && !strncmp(name, "nvidia", 6)) {
        if (!gpu_label_choices(name, true, &near) && !gpu_label_choices(name, false, &near))
            gpu_label_choices("nvidia-", true, &near);
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "unknown --compute-type \"%s\": GKE GPU labels near it: %s. %s", typed,
                     near.data, CATALOG_ACCEPTED_FORMS);
    } else if (gpu_choices(name, head_len, &near)) {
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "unknown --compute-type \"%s\": GPU choices near it: %s. %s", typed, near.data,
                     CATALOG_ACCEPTED_FORMS);
    } else {
        gc_buf cpu;
        gc_buf_init(&cpu);
        if (!looks_like_cpu(name)) {
            nearest_names(name, rest, &near);
        } else {
            gc_buf_puts(&cpu, " CPU machine types are <family>-<class>-<vCPUs> with a family of ");
            catalog_list_cpu_families(&cpu);
            gc_buf_putc(&cpu, '.');
        }
        rc = gc_fail(err, GC_EXIT_USAGE, "unknown --compute-type \"%s\"%s%s%s%s %s", typed,
                     near.len ? "; did you mean " : "", near.data, near.len ? "?" : ".", cpu.data,
                     CATALOG_ACCEPTED_FORMS);
        gc_buf_free(&cpu);
    }
    gc_buf_free(&near);
    return rc;
}
