/*
 * Whether Kueue can ever admit a JobSet from a ClusterQueue, decided before it is created: the
 * Kueue model (kueue_model.c) admits its pod sets into the queue as if the queue were empty, and
 * a refusal names the pod set, the flavors and the fix. Quota already used by other jobs is not
 * counted: it frees up. Nor are flavors whose quota a cohort may add to without a borrowing
 * limit: the job may fit then.
 *
 * Then the flavors' node labels together must still name nodes the cluster has: Kueue adds each
 * assigned flavor's node labels to the pods, and the flavors of two groups can pin them to
 * labels no node has together (a TPU flavor's accelerator and a cpu/memory flavor's node pool).
 */
#include "gcluster/kube.h"
#include "gcluster/kueue.h"
#include "submit/submit_checks.h"

#include "gcluster/buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE_POOL_LABEL "cloud.google.com/gke-nodepool"

static const json_t *resource_groups(const cluster_facts *f)
{
    return json_object_get(json_object_get(f->cluster_queue_object, "spec"), "resourceGroups");
}

static const json_t *group_covering(const cluster_facts *f, const char *resource)
{
    size_t i;
    const json_t *g;
    json_array_foreach(resource_groups(f), i, g)
    {
        if (gc_kueue_group_covers(g, resource))
            return g;
    }
    return NULL;
}

/* The flavors of a group, as their ResourceFlavor objects' node labels say where they place
 * pods: "cpu-user (cloud.google.com/gke-nodepool=cpu-np)". */
static void describe_flavors(const cluster_facts *f, const json_t *group, gc_buf *out)
{
    size_t i;
    const json_t *entry;
    json_array_foreach(json_object_get(group, "flavors"), i, entry)
    {
        gc_buf_printf(out, "%s%s", i ? "; " : "", gc_kube_string(entry, "name"));
        const json_t *labels = gc_kueue_flavor_labels(f->flavors, gc_kube_string(entry, "name"));
        const char *key;
        const json_t *value;
        size_t n = 0;
        json_object_foreach((json_t *)labels, key, value)
            gc_buf_printf(out, "%s%s=%s", n++ ? ", " : " (", key, json_string_value(value));
        gc_buf_printf(out, "%s", n ? ")" : " (any node)");
    }
}

bool submit_queue_splits_tpu(const cluster_facts *f, gc_buf *why)
{
    const json_t *tpu = group_covering(f, "google.com/tpu");
    if (!tpu || (gc_kueue_group_covers(tpu, "cpu") && gc_kueue_group_covers(tpu, "memory")))
        return false;
    const json_t *cpu = group_covering(f, "cpu");
    gc_buf_printf(why, "ClusterQueue %s keeps cpu and memory apart from google.com/tpu",
                  f->cluster_queue);
    if (cpu) {
        gc_buf_printf(why, ", in a resource group whose flavors would pin pods requesting them to "
                           "their nodes: ");
        describe_flavors(f, cpu, why);
    }
    return true;
}

/* The resources of `group` the pod set requests: "cpu and memory". */
static void requested_in(const json_t *group, const kueue_pod_set *p, gc_buf *out)
{
    const char *names[8];
    size_t n = 0, i;
    const json_t *r;
    json_array_foreach(json_object_get(group, "coveredResources"), i, r)
    {
        if (n < 8 && json_string_value(r) &&
            json_real_value(json_object_get(p->requests, json_string_value(r))) > 0)
            names[n++] = json_string_value(r);
    }
    for (i = 0; i < n; i++)
        gc_buf_printf(out, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", names[i]);
}

/* The fix for pods no flavor of `group` matches. */
static void no_flavor_fix(cluster_facts *f, const json_t *group, const kueue_pod_set *p,
                          const gc_workload *w, gc_buf *out)
{
    const char *pool = gc_kube_string(json_object_get(p->spec, "nodeSelector"), NODE_POOL_LABEL);
    if (w->pathways && p->name && !strcmp(p->name, GC_PATHWAYS_HEAD) && pool) {
        size_t i;
        const json_t *entry;
        json_array_foreach(json_object_get(group, "flavors"), i, entry)
        {
            const char *other = gc_kube_string(
                gc_kueue_flavor_labels(f->flavors, gc_kube_string(entry, "name")), NODE_POOL_LABEL);
            if (other && submit_cluster_facts_pool_nodes(f, other)) {
                gc_buf_printf(out, "put the head on that pool with --pathways-head-np %s, or ",
                              other);
                break;
            }
        }
        gc_buf_printf(out,
                      "configure Kueue for head pool %s with gcluster deploy BLUEPRINT "
                      "--pathways-head-np %s",
                      pool, pool);
        return;
    }
    gc_buf_printf(out,
                  "submit to a --queue made for these nodes, or add a flavor for them to %s "
                  "(gcluster deploy BLUEPRINT configures one for the blueprint's node pools)",
                  f->cluster_queue);
}

static void describe_selection(const json_t *spec, gc_buf *out)
{
    const char *key;
    const json_t *value;
    size_t n = 0;
    json_object_foreach((json_t *)json_object_get(spec, "nodeSelector"), key, value)
        gc_buf_printf(out, "%s%s=%s", n++ ? ", " : "", key, json_string_value(value));
    if (!n)
        gc_buf_printf(out, "no node labels");
}

/* The flavor whose nodes would suit the pods carries a taint they do not tolerate. */
static int refuse_taint(const cluster_facts *f, const kueue_answer *a, const kueue_pod_set *p,
                        gc_error *err)
{
    char taint[256];
    gc_kube_taint_words(a->taint, taint, sizeof(taint));
    return gc_fail(err, GC_EXIT_USAGE,
                   "ClusterQueue %s's flavor %s for %s is for nodes tainted %s, which its pods do "
                   "not tolerate, so Kueue would never admit this job; add a toleration for it to "
                   "flavor %s (spec.tolerations: Kueue gives it to the pods it admits there), or "
                   "submit to a --queue made for these nodes",
                   f->cluster_queue, a->taint_flavor, gc_job_role_words(p->name), taint,
                   a->taint_flavor);
}

static int refuse_no_flavor(cluster_facts *f, const kueue_answer *a, const kueue_pod_set *p,
                            const gc_workload *w, gc_error *err)
{
    if (a->taint)
        return refuse_taint(f, a, p, err);
    const json_t *group = a->group;
    gc_buf resources, selection, flavors, fix;
    gc_buf_init(&resources);
    gc_buf_init(&selection);
    gc_buf_init(&flavors);
    gc_buf_init(&fix);
    requested_in(group, p, &resources);
    describe_selection(p->spec, &selection);
    describe_flavors(f, group, &flavors);
    no_flavor_fix(f, group, p, w, &fix);
    int rc = gc_fail(err, GC_EXIT_USAGE,
                     "ClusterQueue %s has no flavor for the %s of %s, whose pods select %s (its "
                     "flavors for them: %s), so Kueue would never admit this job; %s",
                     f->cluster_queue, resources.data, gc_job_role_words(p->name), selection.data,
                     flavors.data, fix.data);
    gc_buf_free(&resources);
    gc_buf_free(&selection);
    gc_buf_free(&flavors);
    gc_buf_free(&fix);
    return rc;
}

static int refuse_quota(const cluster_facts *f, const kueue_pod_set *p, const gc_workload *w,
                        const kueue_answer *s, gc_error *err)
{
    char need_text[32], most_text[32], per_pod[32];
    gc_kube_format_quantity(s->need, s->resource, need_text, sizeof(need_text));
    gc_kube_format_quantity(s->most, s->resource, most_text, sizeof(most_text));
    gc_kube_format_quantity(s->need / (double)(p->count ? p->count : 1), s->resource, per_pod,
                            sizeof(per_pod));
    bool slices = w->compute.kind == GC_ACCEL_TPU && p->name &&
                  (!strcmp(p->name, GC_PATHWAYS_WORKER) || !strcmp(p->name, GC_MAIN_JOB));
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s need%s %s %s (%lld pod%s x %s), and ClusterQueue %s has at most %s in "
                   "%s, so Kueue would never admit this job; %sraise that quota (gcluster deploy "
                   "BLUEPRINT sets it)",
                   gc_job_role_words(p->name), gc_job_role_s(p->name), need_text, s->resource,
                   (long long)p->count, p->count == 1 ? "" : "s", per_pod, f->cluster_queue,
                   most_text, s->short_flavors,
                   slices ? "submit fewer --num-slices or a smaller --compute-type, or " : "");
}

static int refuse_uncovered(const cluster_facts *f, const kueue_pod_set *p, const char *resource,
                            gc_error *err)
{
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s request%s %s, which ClusterQueue %s has no quota for, so Kueue would never "
                   "admit this job; submit to a --queue that covers it, or add it to %s "
                   "(gcluster deploy BLUEPRINT configures google.com/tpu, cpu and memory)",
                   gc_job_role_words(p->name), gc_job_role_s(p->name), resource, f->cluster_queue,
                   f->cluster_queue);
}

/* Label keys a node shape has values for. */
static const char *shape_value(const node_shape *s, const char *key)
{
    if (!strcmp(key, NODE_POOL_LABEL))
        return s->node_pool;
    if (!strcmp(key, "cloud.google.com/gke-tpu-accelerator") ||
        !strcmp(key, "cloud.google.com/gke-accelerator"))
        return s->accelerator;
    if (!strcmp(key, "cloud.google.com/gke-tpu-topology"))
        return s->topology;
    if (!strcmp(key, "node.kubernetes.io/instance-type"))
        return s->machine_type;
    return NULL;
}

/* The pods' node labels once Kueue has added its flavors': when they name a node pool that has
 * nodes, one of them must have the other labels too (a pool's nodes are all alike), else the
 * scheduler can never place the pods. A pool without nodes may be scaling from zero. */
static int check_pinned(cluster_facts *f, const kueue_pod_set *p, const json_t *labels,
                        gc_error *err)
{
    const char *pool = gc_kube_string(labels, NODE_POOL_LABEL);
    if (!pool || !submit_cluster_facts_pool_nodes(f, pool))
        return 0;
    const char *clash = NULL;
    for (size_t i = 0; i < f->shape_count; i++) {
        const node_shape *s = &f->shapes[i];
        if (strcmp(s->node_pool, pool) != 0)
            continue;
        const char *key;
        const json_t *value;
        clash = NULL;
        json_object_foreach((json_t *)labels, key, value)
        {
            const char *have = shape_value(s, key);
            if (!clash && have && strcmp(have, json_string_value(value)) != 0)
                clash = key;
        }
        if (!clash)
            return 0;
    }
    return gc_fail(err, GC_EXIT_USAGE,
                   "ClusterQueue %s would pin %s to node pool %s and to %s=%s at once, and no node "
                   "of %s has that label, so they could never be scheduled; submit to a --queue "
                   "whose one resource group covers all they request (gcluster deploy BLUEPRINT "
                   "configures google.com/tpu, cpu and memory together)",
                   f->cluster_queue, gc_job_role_words(p->name), pool, clash,
                   gc_kube_string(labels, clash), pool);
}

/* The pods' node selector with the node labels of the flavors Kueue assigned them. */
static json_t *pinned_labels(const cluster_facts *f, const kueue_pod_set *p,
                             const json_t *assignment)
{
    json_t *labels = json_deep_copy(json_object_get(p->spec, "nodeSelector"));
    if (!labels)
        labels = json_object();
    const char *resource;
    const json_t *flavor;
    json_object_foreach((json_t *)json_object_get(assignment, "flavors"), resource, flavor)
        json_object_update(labels,
                           (json_t *)gc_kueue_flavor_labels(f->flavors, json_string_value(flavor)));
    return labels;
}

int submit_queue_fit(cluster_facts *f, const json_t *jobset, const gc_workload *w, gc_error *err)
{
    if (!f->cluster_queue_object || !f->flavors)
        return 0;
    kueue_pod_set *sets;
    size_t n = gc_kueue_pod_sets_of_jobset(jobset, &sets);
    kueue_answer a;
    gc_kueue_admit(f->cluster_queue_object, f->flavors, sets, n, KUEUE_EVER, &a);
    int rc = 0;
    /* The pod sets admitted before the one that was not, in order: their flavors' labels first. */
    for (size_t i = 0; !rc && i < json_array_size(a.assignments); i++) {
        json_t *labels = pinned_labels(f, &sets[i], json_array_get(a.assignments, i));
        rc = check_pinned(f, &sets[i], labels, err);
        json_decref(labels);
    }
    if (!rc && a.outcome == KUEUE_UNCOVERED)
        rc = refuse_uncovered(f, &sets[a.pod_set], a.resource, err);
    else if (!rc && a.outcome == KUEUE_NO_FLAVOR)
        rc = refuse_no_flavor(f, &a, &sets[a.pod_set], w, err);
    else if (!rc && a.outcome == KUEUE_NO_QUOTA)
        rc = refuse_quota(f, &sets[a.pod_set], w, &a, err);
    gc_kueue_answer_free(&a);
    gc_kueue_pod_sets_free(sets, n);
    return rc;
}
