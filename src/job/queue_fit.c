/*
 * Whether Kueue can ever admit a JobSet from a ClusterQueue, decided before it is created.
 *
 * Kueue turns each replicated job into a pod set (its pods, their summed requests) and, for each
 * resource group of the ClusterQueue that covers a resource the pods request, gives the pod set
 * one flavor of that group: the first flavor whose node labels match the pods' node selector and
 * required node affinity (compared on the label keys the group's flavors use only), whose taints
 * the pods tolerate, and which has quota for all of the pod set's pods at once. It then adds each
 * assigned flavor's node labels to the pods. A job can be created and never run when no flavor
 * matches, when no matching flavor's quota holds it even with the queue empty, or when the flavors
 * of two groups pin the pods to labels no node has together (a TPU flavor's accelerator and a
 * cpu/memory flavor's node pool).
 *
 * Quota already used by other jobs is not counted: it frees up. Nor are flavors whose quota a
 * cohort may add to without a borrowing limit: the job may fit then.
 */
#include "job/diagnose.h"
#include "job/submit_checks.h"

#include "gcluster/buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NODE_POOL_LABEL "cloud.google.com/gke-nodepool"

static const char *name_of(const json_t *object)
{
    return job_string(json_object_get(object, "metadata"), "name");
}

/* One replicated job as Kueue sees it. */
typedef struct pod_set {
    const char *name;
    json_int_t count;   /* pods */
    const json_t *spec; /* the pod template's spec */
    json_t *requests;   /* per pod: resource name -> amount */
} pod_set;

static size_t pod_sets_of(const json_t *jobset, pod_set **out)
{
    const json_t *rjobs = json_object_get(json_object_get(jobset, "spec"), "replicatedJobs");
    pod_set *sets = gc_xcalloc(json_array_size(rjobs) + 1, sizeof(*sets));
    size_t i;
    const json_t *rjob;
    json_array_foreach(rjobs, i, rjob)
    {
        const json_t *job_spec = json_object_get(json_object_get(rjob, "template"), "spec");
        const json_t *replicas = json_object_get(rjob, "replicas");
        const json_t *parallelism = json_object_get(job_spec, "parallelism");
        sets[i].name = job_string(rjob, "name");
        sets[i].count = (replicas ? json_integer_value(replicas) : 1) *
                        (parallelism ? json_integer_value(parallelism) : 1);
        sets[i].spec = json_object_get(json_object_get(job_spec, "template"), "spec");
        sets[i].requests = job_pod_requests(sets[i].spec);
    }
    *out = sets;
    return json_array_size(rjobs);
}

static void pod_sets_free(pod_set *sets, size_t n)
{
    for (size_t i = 0; i < n; i++)
        json_decref(sets[i].requests);
    free(sets);
}

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
        if (job_group_covers(g, resource))
            return g;
    }
    return NULL;
}

static const json_t *flavor_named(const cluster_facts *f, const char *name)
{
    size_t i;
    const json_t *flavor;
    json_array_foreach(f->flavors, i, flavor)
    {
        if (name && name_of(flavor) && !strcmp(name_of(flavor), name))
            return flavor;
    }
    return NULL;
}

static const json_t *node_labels(const json_t *flavor)
{
    return json_object_get(json_object_get(flavor, "spec"), "nodeLabels");
}

/* The flavors of a group, as their ResourceFlavor objects' node labels say where they place
 * pods: "cpu-user (cloud.google.com/gke-nodepool=cpu-np)". */
static void describe_flavors(const cluster_facts *f, const json_t *group, gc_buf *out)
{
    size_t i;
    const json_t *entry;
    json_array_foreach(json_object_get(group, "flavors"), i, entry)
    {
        gc_buf_printf(out, "%s%s", i ? "; " : "", job_string(entry, "name"));
        const json_t *labels = node_labels(flavor_named(f, job_string(entry, "name")));
        const char *key;
        const json_t *value;
        size_t n = 0;
        json_object_foreach((json_t *)labels, key, value)
            gc_buf_printf(out, "%s%s=%s", n++ ? ", " : " (", key, json_string_value(value));
        gc_buf_printf(out, "%s", n ? ")" : " (any node)");
    }
}

bool job_queue_splits_tpu(const cluster_facts *f, gc_buf *why)
{
    const json_t *tpu = group_covering(f, "google.com/tpu");
    if (!tpu || (job_group_covers(tpu, "cpu") && job_group_covers(tpu, "memory")))
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

/* The label keys of a group's flavors: Kueue compares node selection on these keys only. */
static bool group_has_key(const cluster_facts *f, const json_t *group, const char *key)
{
    size_t i;
    const json_t *entry;
    json_array_foreach(json_object_get(group, "flavors"), i, entry)
    {
        if (json_object_get(node_labels(flavor_named(f, job_string(entry, "name"))), key))
            return true;
    }
    return false;
}

/* One node selector requirement against a flavor's labels (unknown operators match). */
static bool requirement_holds(const json_t *req, const json_t *labels)
{
    const char *op = job_string_or(req, "operator", "");
    const char *have = job_string(labels, job_string_or(req, "key", ""));
    if (!strcmp(op, "Exists"))
        return have != NULL;
    if (!strcmp(op, "DoesNotExist"))
        return have == NULL;
    bool listed = false;
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(req, "values"), i, v) listed |=
        have && json_string_value(v) && !strcmp(have, json_string_value(v));
    if (!strcmp(op, "In"))
        return listed;
    if (!strcmp(op, "NotIn"))
        return !listed;
    return true;
}

/* Required node affinity: terms are ORed, a term's requirements ANDed; requirements on keys
 * the group does not use are dropped, and a term left empty matches every flavor. */
static bool affinity_matches(const cluster_facts *f, const json_t *group, const json_t *spec,
                             const json_t *labels)
{
    const json_t *terms = json_object_get(
        json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                        "requiredDuringSchedulingIgnoredDuringExecution"),
        "nodeSelectorTerms");
    if (!json_array_size(terms))
        return true;
    size_t i, j;
    const json_t *term, *req;
    json_array_foreach(terms, i, term)
    {
        bool holds = true;
        size_t relevant = 0;
        json_array_foreach(json_object_get(term, "matchExpressions"), j, req)
        {
            if (!group_has_key(f, group, job_string_or(req, "key", "")))
                continue;
            relevant++;
            holds &= requirement_holds(req, labels);
        }
        if (!relevant || holds)
            return true;
    }
    return false;
}

static bool tolerates(const json_t *tolerations, const json_t *taint)
{
    size_t i;
    const json_t *t;
    json_array_foreach(tolerations, i, t)
    {
        const char *key = job_string(t, "key"), *effect = job_string(t, "effect");
        bool exists = job_string(t, "operator") && !strcmp(job_string(t, "operator"), "Exists");
        if (effect && *effect &&
            (!job_string(taint, "effect") || strcmp(effect, job_string(taint, "effect"))))
            continue;
        if (!key || !*key) {
            if (exists)
                return true;
            continue;
        }
        if (!job_string(taint, "key") || strcmp(key, job_string(taint, "key")))
            continue;
        const char *value = job_string_or(t, "value", "");
        if (exists || !strcmp(value, job_string_or(taint, "value", "")))
            return true;
    }
    return false;
}

/* The flavor's NoSchedule and NoExecute taints, tolerated by the pods or the flavor itself. */
static bool taints_tolerated(const json_t *spec, const json_t *flavor)
{
    const json_t *fspec = json_object_get(flavor, "spec");
    size_t i;
    const json_t *taint;
    json_array_foreach(json_object_get(fspec, "nodeTaints"), i, taint)
    {
        const char *effect = job_string_or(taint, "effect", "");
        if (strcmp(effect, "NoSchedule") != 0 && strcmp(effect, "NoExecute") != 0)
            continue;
        if (!tolerates(json_object_get(spec, "tolerations"), taint) &&
            !tolerates(json_object_get(fspec, "tolerations"), taint))
            return false;
    }
    return true;
}

static bool flavor_matches(const cluster_facts *f, const json_t *group, const json_t *spec,
                           const json_t *flavor)
{
    const json_t *labels = node_labels(flavor);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)json_object_get(spec, "nodeSelector"), key, value)
    {
        if (!group_has_key(f, group, key))
            continue;
        const char *have = job_string(labels, key);
        if (!have || !json_string_value(value) || strcmp(have, json_string_value(value)))
            return false;
    }
    return affinity_matches(f, group, spec, labels) && taints_tolerated(spec, flavor);
}

/* The most of `resource` a flavor of the ClusterQueue can hold: its nominal quota, plus its
 * borrowing limit in a cohort (INFINITY in a cohort without one). */
static double quota_of(const cluster_facts *f, const json_t *entry, const char *resource)
{
    const json_t *spec = json_object_get(f->cluster_queue_object, "spec");
    bool cohort = job_string(spec, "cohort") || job_string(spec, "cohortName");
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(entry, "resources"), i, r)
    {
        if (!job_string(r, "name") || strcmp(job_string(r, "name"), resource))
            continue;
        double nominal = job_quantity(json_object_get(r, "nominalQuota"));
        const json_t *borrowing = json_object_get(r, "borrowingLimit");
        if (!cohort)
            return nominal;
        return borrowing ? nominal + job_quantity(borrowing) : INFINITY;
    }
    return 0;
}

/* Quota assigned so far, per flavor and resource: "flavor/resource" -> amount. */
static double used(const json_t *usage, const char *flavor, const char *resource)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", flavor, resource);
    return json_real_value(json_object_get(usage, key));
}

static void use(json_t *usage, const char *flavor, const char *resource, double amount)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", flavor, resource);
    json_object_set_new(usage, key, json_real(used(usage, flavor, resource) + amount));
}

static double need(const pod_set *p, const char *resource)
{
    return json_real_value(json_object_get(p->requests, resource)) * (double)p->count;
}

/* Why no matching flavor had room, for the message. */
typedef struct shortfall {
    const char *resource;
    double need;
    double most; /* the largest quota for it among the matching flavors */
    gc_buf flavors;
} shortfall;

/* The first flavor of `group` Kueue could give pod set `p`, with its quota counted in `usage`;
 * NULL when there is none (matched_any says whether any flavor matched the pods' labels). */
static const json_t *assign(const cluster_facts *f, const json_t *group, const pod_set *p,
                            json_t *usage, bool *matched_any, shortfall *s)
{
    size_t i, j;
    const json_t *entry, *r;
    *matched_any = false;
    json_array_foreach(json_object_get(group, "flavors"), i, entry)
    {
        const char *name = job_string(entry, "name");
        const json_t *flavor = flavor_named(f, name);
        if (!flavor || !flavor_matches(f, group, p->spec, flavor))
            continue;
        *matched_any = true;
        bool fits = true;
        json_array_foreach(json_object_get(group, "coveredResources"), j, r)
        {
            const char *resource = json_string_value(r);
            double wanted = need(p, resource);
            double quota = quota_of(f, entry, resource);
            if (wanted <= 0 || wanted + used(usage, name, resource) <= quota * (1 + 1e-9))
                continue;
            fits = false;
            if (!s->resource || !strcmp(s->resource, resource)) {
                s->resource = resource;
                s->need = wanted;
                s->most = quota > s->most ? quota : s->most;
                gc_buf_printf(&s->flavors, "%s%s", s->flavors.len ? ", " : "", name);
            }
            break;
        }
        if (!fits)
            continue;
        json_array_foreach(json_object_get(group, "coveredResources"), j, r)
            use(usage, name, json_string_value(r), need(p, json_string_value(r)));
        return flavor;
    }
    return NULL;
}

/* The resources of `group` the pod set requests: "cpu and memory". */
static void requested_in(const json_t *group, const pod_set *p, gc_buf *out)
{
    const char *names[8];
    size_t n = 0, i;
    const json_t *r;
    json_array_foreach(json_object_get(group, "coveredResources"), i, r)
    {
        if (n < 8 && json_string_value(r) && need(p, json_string_value(r)) > 0)
            names[n++] = json_string_value(r);
    }
    for (i = 0; i < n; i++)
        gc_buf_printf(out, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", names[i]);
}

/* The fix for pods no flavor of `group` matches. */
static void no_flavor_fix(cluster_facts *f, const json_t *group, const pod_set *p,
                          const gc_workload *w, gc_buf *out)
{
    const char *pool = job_string(json_object_get(p->spec, "nodeSelector"), NODE_POOL_LABEL);
    if (w->pathways && p->name && !strcmp(p->name, GC_PATHWAYS_HEAD) && pool) {
        size_t i;
        const json_t *entry;
        json_array_foreach(json_object_get(group, "flavors"), i, entry)
        {
            const char *other = job_string(node_labels(flavor_named(f, job_string(entry, "name"))),
                                           NODE_POOL_LABEL);
            if (other && job_cluster_facts_pool_nodes(f, other)) {
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

static int refuse_no_flavor(cluster_facts *f, const json_t *group, const pod_set *p,
                            const gc_workload *w, gc_error *err)
{
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
                     f->cluster_queue, resources.data, job_role_words(p->name), selection.data,
                     flavors.data, fix.data);
    gc_buf_free(&resources);
    gc_buf_free(&selection);
    gc_buf_free(&flavors);
    gc_buf_free(&fix);
    return rc;
}

static int refuse_quota(const cluster_facts *f, const pod_set *p, const gc_workload *w,
                        const shortfall *s, gc_error *err)
{
    char need_text[32], most_text[32], per_pod[32];
    job_format_quantity(s->need, s->resource, need_text, sizeof(need_text));
    job_format_quantity(s->most, s->resource, most_text, sizeof(most_text));
    job_format_quantity(s->need / (double)p->count, s->resource, per_pod, sizeof(per_pod));
    bool slices = w->compute.kind == GC_ACCEL_TPU && p->name &&
                  (!strcmp(p->name, GC_PATHWAYS_WORKER) || !strcmp(p->name, GC_MAIN_JOB));
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s need%s %s %s (%lld pod%s x %s), and ClusterQueue %s has at most %s in "
                   "%s, so Kueue would never admit this job; %sraise that quota (gcluster deploy "
                   "BLUEPRINT sets it)",
                   job_role_words(p->name), job_role_s(p->name), need_text, s->resource,
                   (long long)p->count, p->count == 1 ? "" : "s", per_pod, f->cluster_queue,
                   most_text, s->flavors.data,
                   slices ? "submit fewer --num-slices or a smaller --compute-type, or " : "");
}

static int refuse_uncovered(const cluster_facts *f, const pod_set *p, const char *resource,
                            gc_error *err)
{
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s request%s %s, which ClusterQueue %s has no quota for, so Kueue would never "
                   "admit this job; submit to a --queue that covers it, or add it to %s "
                   "(gcluster deploy BLUEPRINT configures google.com/tpu, cpu and memory)",
                   job_role_words(p->name), job_role_s(p->name), resource, f->cluster_queue,
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
static int check_pinned(cluster_facts *f, const pod_set *p, const json_t *labels, gc_error *err)
{
    const char *pool = job_string(labels, NODE_POOL_LABEL);
    if (!pool || !job_cluster_facts_pool_nodes(f, pool))
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
                   f->cluster_queue, job_role_words(p->name), pool, clash,
                   job_string(labels, clash), pool);
}

/* Every resource the pods request must be covered by a group: Kueue admits nothing else. */
static int check_covered(const cluster_facts *f, const pod_set *p, gc_error *err)
{
    const char *resource;
    const json_t *value;
    json_object_foreach(p->requests, resource, value)
    {
        if (!group_covering(f, resource))
            return refuse_uncovered(f, p, resource, err);
    }
    return 0;
}

/* Assigns `p` a flavor in every group it needs, as Kueue would. */
static int fit_pod_set(cluster_facts *f, const pod_set *p, const gc_workload *w, json_t *usage,
                       gc_error *err)
{
    const char *resource;
    const json_t *value;
    json_t *labels = json_deep_copy(json_object_get(p->spec, "nodeSelector"));
    if (!labels)
        labels = json_object();
    int rc = 0;
    size_t i;
    const json_t *group;
    json_array_foreach(resource_groups(f), i, group)
    {
        bool requested = false;
        json_object_foreach(p->requests, resource, value) requested |=
            job_group_covers(group, resource);
        if (!requested)
            continue;
        bool matched_any;
        shortfall s = {0};
        gc_buf_init(&s.flavors);
        const json_t *flavor = assign(f, group, p, usage, &matched_any, &s);
        if (!flavor)
            rc = matched_any ? refuse_quota(f, p, w, &s, err)
                             : refuse_no_flavor(f, group, p, w, err);
        else
            json_object_update(labels, (json_t *)node_labels(flavor));
        gc_buf_free(&s.flavors);
        if (rc)
            break;
    }
    if (!rc)
        rc = check_pinned(f, p, labels, err);
    json_decref(labels);
    return rc;
}

int job_queue_fit(cluster_facts *f, const json_t *jobset, const gc_workload *w, gc_error *err)
{
    if (!f->cluster_queue_object || !f->flavors)
        return 0;
    pod_set *sets;
    size_t n = pod_sets_of(jobset, &sets);
    json_t *usage = json_object();
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++)
        rc = check_covered(f, &sets[i], err);
    for (size_t i = 0; !rc && i < n; i++)
        rc = fit_pod_set(f, &sets[i], w, usage, err);
    json_decref(usage);
    pod_sets_free(sets, n);
    return rc;
}
