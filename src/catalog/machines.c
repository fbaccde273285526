/*
 * GPU and CPU compute types.
 *
 * A GPU is named by Google's shorthand (l4-2), its machine type (g2-standard-24) or, on a
 * connected cluster, its GKE accelerator label (nvidia-l4): a label does not say how many GPUs a
 * VM has, so it resolves through the nodes that carry it. A CPU machine type is
 * <family>-<class>-<vCPUs>[-lssd|-metal]; the vCPUs come from the name.
 */
#include "catalog/catalog_internal.h"

#include "gcluster/error.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define CPU_VCPUS_MAX 1024

static void gpu_choices_for_label(const char *label, gc_buf *b)
{
    size_t count;
    const gc_gpu_machine *gpus = gc_catalog_gpu_machines(&count);
    for (size_t i = 0; i < count; i++) {
        if (strcasecmp(gpus[i].accelerator, label))
            continue;
        gc_buf_printf(b, "%s%s%s%s%s", b->len ? ", " : "",
                      gpus[i].shorthand ? gpus[i].shorthand : gpus[i].machine_type,
                      gpus[i].shorthand ? " (" : "", gpus[i].shorthand ? gpus[i].machine_type : "",
                      gpus[i].shorthand ? ")" : "");
    }
}

/* nvidia-l4 and the like: the one GPU machine type of the cluster's nodes with that label. */
static int gpu_from_label(const char *typed, const char *label, const gc_cluster_shapes *cluster,
                          const gc_gpu_machine **gpu, gc_error *err)
{
    gc_buf choices, found;
    gc_buf_init(&choices);
    gc_buf_init(&found);
    gpu_choices_for_label(label, &choices);
    const char *machine = NULL;
    bool several = false;
    for (size_t i = 0; cluster && i < cluster->count; i++) {
        const gc_node_shape *s = &cluster->shapes[i];
        if (!s->accelerator || strcasecmp(s->accelerator, label) || !s->machine_type)
            continue;
        gc_buf_printf(&found, "%s%s (node pool %s: %d node%s)", found.len ? ", " : "",
                      s->machine_type, s->node_pool ? s->node_pool : "?", s->count,
                      s->count == 1 ? "" : "s");
        if (!machine)
            machine = s->machine_type;
        several = several || strcasecmp(machine, s->machine_type);
    }
    int rc = 0;
    if (!cluster)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s is a GKE accelerator label, which does not say how many "
                     "GPUs a VM has; name the machine instead: %s",
                     typed, choices.data);
    else if (!machine)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s: no node in the cluster carries "
                     "cloud.google.com/gke-accelerator=%s, so the label does not say how many GPUs "
                     "a VM has; name the machine instead: %s",
                     typed, label, choices.data);
    else if (several)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s: the cluster's %s nodes are of several machine types: %s; "
                     "name one as --compute-type",
                     typed, label, found.data);
    else if (!(*gpu = catalog_gpu_by_name(machine)))
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--compute-type %s: the cluster's %s nodes are %s, whose GPU count the "
                     "catalog does not know; name a known machine instead: %s",
                     typed, label, machine, choices.data);
    gc_buf_free(&choices);
    gc_buf_free(&found);
    return rc;
}

int catalog_resolve_gpu(const char *typed, const char *name, const gc_cluster_shapes *cluster,
                        gc_compute *out, bool *matched, gc_error *err)
{
    const gc_gpu_machine *gpu = catalog_gpu_by_name(name);
    if (!gpu && catalog_gpu_label_known(name)) {
        *matched = true;
        int rc = gpu_from_label(typed, name, cluster, &gpu, err);
        if (rc)
            return rc;
    }
    if (!gpu)
        return 0;
    *matched = true;
    out->kind = GC_ACCEL_GPU;
    snprintf(out->machine_type, sizeof(out->machine_type), "%s", gpu->machine_type);
    snprintf(out->accelerator, sizeof(out->accelerator), "%s", gpu->accelerator);
    out->gpus_per_vm = gpu->gpus;
    snprintf(out->display, sizeof(out->display), "%s",
             gpu->shorthand ? gpu->shorthand : gpu->machine_type);
    return 0;
}

static bool class_listed(const char *const *classes, const char *cls, size_t len)
{
    for (; *classes; classes++)
        if (strlen(*classes) == len && !strncmp(*classes, cls, len))
            return true;
    return false;
}

/* The vCPU count at `p` (1..CPU_VCPUS_MAX, no leading zero); sets *end past it. 0 if none. */
static int vcpu_count(const char *p, const char **end)
{
    int n = 0;
    *end = p;
    if (*p < '1' || *p > '9')
        return 0;
    for (; *p >= '0' && *p <= '9'; p++)
        if ((n = n * 10 + (*p - '0')) > CPU_VCPUS_MAX)
            return 0;
    *end = p;
    return n;
}

int catalog_resolve_cpu(const char *typed, const char *name, gc_compute *out, bool *matched,
                        gc_error *err)
{
    const char *dash = strchr(name, '-');
    bool local_ssd = false;
    const char *const *classes =
        dash ? catalog_cpu_classes(name, (size_t)(dash - name), &local_ssd) : NULL;
    if (!classes)
        return 0;
    *matched = true;
    int family_len = (int)(dash - name);
    const char *cls = dash + 1;
    size_t cls_len = strcspn(cls, "-");
    if (!class_listed(classes, cls, cls_len)) {
        gc_buf list;
        gc_buf_init(&list);
        for (const char *const *c = classes; *c; c++)
            gc_buf_printf(&list, "%s%.*s-%s-N", list.len ? ", " : "", family_len, name, *c);
        int rc = gc_fail(err, GC_EXIT_USAGE,
                         "--compute-type %s: %.*s machine types are %s, with N the number of "
                         "vCPUs (e.g. %.*s-%s-32)",
                         typed, family_len, name, list.data, family_len, name, classes[0]);
        gc_buf_free(&list);
        return rc;
    }
    const char *end;
    int vcpus = cls[cls_len] == '-' ? vcpu_count(cls + cls_len + 1, &end) : 0;
    bool suffix_ok =
        vcpus && (!*end || (local_ssd && (!strcmp(end, "-lssd") || !strcmp(end, "-metal"))));
    if (!suffix_ok)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--compute-type %s: a CPU machine type is <family>-<class>-<vCPUs>%s, with "
                       "1 to %d vCPUs, e.g. %.*s-%.*s-32",
                       typed, local_ssd ? "[-lssd|-metal]" : "", CPU_VCPUS_MAX, family_len, name,
                       (int)cls_len, cls);
    out->kind = GC_ACCEL_CPU;
    snprintf(out->machine_type, sizeof(out->machine_type), "%s", name);
    out->vcpus = vcpus;
    snprintf(out->display, sizeof(out->display), "%s", name);
    return 0;
}
