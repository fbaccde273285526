/*
 * Kueue's admission of a job's pod sets into a ClusterQueue, as its flavor assigner does it
 * (Kueue v0.17, flavorassigner): pod set by pod set, resource group by resource group, the first
 * flavor that suits the pods and has room.
 *
 * Quota: a flavor holds at most its nominal quota for the queue, plus its borrowing limit when
 * the queue is in a cohort (a cohort without a borrowing limit may lend any amount: INFINITY
 * here, because the cohort's other queues are not read and what they lend cannot be known).
 * KUEUE_NOW counts what the ClusterQueue's status says is reserved already (flavorsReservation,
 * else flavorsUsage); KUEUE_EVER does not (it frees up).
 */
#include "gcluster/checked.h"
#include "gcluster/kueue.h"

#include "gcluster/kube.h"

#include "gcluster/buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gc_kueue_group_covers(const json_t *group, const char *resource)
{
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(group, "coveredResources"), i, r)
    {
        if (gc_kube_same(json_string_value(r), resource))
            return true;
    }
    return false;
}

const json_t *gc_kueue_flavor(const json_t *flavors, const char *name)
{
    size_t i;
    const json_t *flavor;
    json_array_foreach(flavors, i, flavor)
    {
        if (gc_kube_same(gc_kube_field(flavor, NULL, "name"), name))
            return flavor;
    }
    return NULL;
}

const json_t *gc_kueue_flavor_labels(const json_t *flavors, const char *name)
{
    return json_object_get(json_object_get(gc_kueue_flavor(flavors, name), "spec"), "nodeLabels");
}

/* ---- pod sets --------------------------------------------------------------------------- */

static void add_amount(json_t *amounts, const char *key, double amount)
{
    double had = json_real_value(json_object_get(amounts, key));
    json_object_set_new(amounts, key, json_real(had + amount));
}

/* The whole pod set's requests: one pod's, times the pods. */
static json_t *requests_of(const json_t *pod_spec, long long count)
{
    json_t *one = gc_kube_pod_requests(pod_spec);
    json_t *all = json_object();
    const char *resource;
    json_t *value;
    json_object_foreach(one, resource, value)
        add_amount(all, resource, json_real_value(value) * (double)count);
    json_decref(one);
    return all;
}

size_t gc_kueue_pod_sets_of_jobset(const json_t *jobset, kueue_pod_set **out)
{
    const json_t *rjobs = json_object_get(json_object_get(jobset, "spec"), "replicatedJobs");
    kueue_pod_set *sets = gc_xcalloc(json_array_size(rjobs) + 1, sizeof(*sets));
    size_t i;
    const json_t *rjob;
    json_array_foreach(rjobs, i, rjob)
    {
        const json_t *job_spec = json_object_get(json_object_get(rjob, "template"), "spec");
        const json_t *replicas = json_object_get(rjob, "replicas");
        const json_t *parallelism = json_object_get(job_spec, "parallelism");
        sets[i].name = gc_kube_string(rjob, "name");
        sets[i].count = gc_saturating_mul(replicas ? json_integer_value(replicas) : 1,
                                          parallelism ? json_integer_value(parallelism) : 1);
        sets[i].spec = json_object_get(json_object_get(job_spec, "template"), "spec");
        sets[i].requests = requests_of(sets[i].spec, sets[i].count);
    }
    *out = sets;
    return json_array_size(rjobs);
}

size_t gc_kueue_pod_sets_of_workload(const json_t *workload, kueue_pod_set **out)
{
    const json_t *spec_sets = json_object_get(json_object_get(workload, "spec"), "podSets");
    const json_t *totals = json_object_get(json_object_get(workload, "status"), "resourceRequests");
    kueue_pod_set *sets = gc_xcalloc(json_array_size(spec_sets) + 1, sizeof(*sets));
    size_t i;
    const json_t *ps;
    json_array_foreach(spec_sets, i, ps)
    {
        kueue_pod_set *s = &sets[i];
        s->name = gc_kube_string(ps, "name");
        json_int_t count = json_integer_value(json_object_get(ps, "count"));
        s->count = count ? (long long)count : 1;
        s->spec = json_object_get(json_object_get(ps, "template"), "spec");
        /* Kueue's own totals when it wrote them; the same sum from the template otherwise. */
        const json_t *total = NULL;
        size_t j;
        const json_t *t;
        json_array_foreach(totals, j, t)
        {
            if (gc_kube_same(gc_kube_string(t, "name"), s->name))
                total = json_object_get(t, "resources");
        }
        if (!total) {
            s->requests = requests_of(s->spec, s->count);
            continue;
        }
        s->requests = json_object();
        const char *resource;
        const json_t *value;
        json_object_foreach((json_t *)total, resource, value)
            add_amount(s->requests, resource, gc_kube_quantity(value));
    }
    *out = sets;
    return json_array_size(spec_sets);
}

void gc_kueue_pod_sets_free(kueue_pod_set *sets, size_t n)
{
    for (size_t i = 0; sets && i < n; i++)
        json_decref(sets[i].requests);
    free(sets);
}

/* ---- quota ------------------------------------------------------------------------------ */

static double need_of(const kueue_pod_set *p, const char *resource)
{
    return json_real_value(json_object_get(p->requests, resource));
}

static const json_t *resource_entry(const json_t *flavor_entry, const char *resource)
{
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(flavor_entry, "resources"), i, r)
    {
        if (gc_kube_same(gc_kube_string(r, "name"), resource))
            return r;
    }
    return NULL;
}

static double limit_of(const json_t *cq, const json_t *r)
{
    const json_t *spec = json_object_get(cq, "spec");
    bool cohort = gc_kube_string(spec, "cohort") || gc_kube_string(spec, "cohortName");
    double nominal = r ? gc_kube_quantity(json_object_get(r, "nominalQuota")) : 0;
    const json_t *borrowing = json_object_get(r, "borrowingLimit");
    if (!cohort)
        return nominal;
    return borrowing ? nominal + gc_kube_quantity(borrowing) : INFINITY;
}

/* What the ClusterQueue's status says is reserved of `resource` in `flavor`. */
static double reserved(const json_t *cq, const char *flavor, const char *resource)
{
    const json_t *status = json_object_get(cq, "status");
    const json_t *list = json_object_get(status, "flavorsReservation");
    if (!list)
        list = json_object_get(status, "flavorsUsage");
    size_t i;
    const json_t *f;
    json_array_foreach(list, i, f)
    {
        if (!gc_kube_same(gc_kube_string(f, "name"), flavor))
            continue;
        double total = gc_kube_quantity(json_object_get(resource_entry(f, resource), "total"));
        return total > 0 ? total : 0;
    }
    return 0;
}

/* ---- assignment ------------------------------------------------------------------------- */

typedef struct model {
    const json_t *cq, *flavors;
    kueue_when when;
    json_t *planned; /* "flavor/resource" -> taken by the earlier pod sets */
} model;

static double planned(const model *m, const char *flavor, const char *resource)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", flavor, resource);
    return json_real_value(json_object_get(m->planned, key));
}

static void plan(model *m, const char *flavor, const char *resource, double amount)
{
    char key[512];
    snprintf(key, sizeof(key), "%s/%s", flavor, resource);
    add_amount(m->planned, key, amount);
}

/* The label keys of a group's flavors, as an object's member names. */
static json_t *group_keys(const model *m, const json_t *group)
{
    json_t *keys = json_object();
    size_t i;
    const json_t *entry;
    json_array_foreach(json_object_get(group, "flavors"), i, entry)
    {
        const char *key;
        const json_t *value;
        json_object_foreach(
            (json_t *)gc_kueue_flavor_labels(m->flavors, gc_kube_string(entry, "name")), key, value)
            json_object_set_new(keys, key, json_true());
    }
    return keys;
}

/* Records a flavor short of room in `out` (the first one short decides `flavor`). */
static void note_short(kueue_answer *out, const char *flavor, const char *resource, double need,
                       const json_t *r, double limit, double used)
{
    if (out->resource && strcmp(out->resource, resource) != 0)
        return;
    if (!out->flavor) {
        out->flavor = flavor;
        out->resource = resource;
        out->need = need;
        out->quota = r ? gc_kube_quantity(json_object_get(r, "nominalQuota")) : 0;
        out->limit = limit;
        out->used = used;
        out->most = limit;
    } else if (limit > out->most)
        out->most = limit;
    size_t len = strlen(out->short_flavors);
    if (len < sizeof(out->short_flavors))
        snprintf(out->short_flavors + len, sizeof(out->short_flavors) - len, "%s%s",
                 len ? ", " : "", flavor);
}

/* Whether flavor `entry` of `group` has room for the pod set's requests of the group. */
static bool has_room(const model *m, const json_t *group, const json_t *entry,
                     const kueue_pod_set *p, kueue_answer *out)
{
    const char *name = gc_kube_string(entry, "name");
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(group, "coveredResources"), i, r)
    {
        const char *resource = json_string_value(r);
        double need = need_of(p, resource);
        if (!resource || need <= 0)
            continue;
        const json_t *quota = resource_entry(entry, resource);
        double limit = limit_of(m->cq, quota);
        double used = m->when == KUEUE_NOW ? reserved(m->cq, name, resource) : 0;
        if (need + used + planned(m, name, resource) <= limit * (1 + 1e-9))
            continue;
        note_short(out, name, resource, need, quota, limit, used);
        return false;
    }
    return true;
}

/* The flavor of `group` Kueue gives pod set `p`, its quota planned; NULL when none. */
static const char *assign(model *m, const json_t *group, const kueue_pod_set *p, bool *suited,
                          kueue_answer *out)
{
    json_t *keys = group_keys(m, group);
    const char *chosen = NULL;
    size_t i;
    const json_t *entry;
    *suited = false;
    json_array_foreach(json_object_get(group, "flavors"), i, entry)
    {
        const char *name = gc_kube_string(entry, "name");
        const json_t *flavor = gc_kueue_flavor(m->flavors, name);
        const json_t *fspec = json_object_get(flavor, "spec");
        /* Flavors not read (forbidden): each suits every pod, as one without labels would. */
        if ((!flavor && m->flavors) ||
            !gc_kube_selection_matches(p->spec, json_object_get(fspec, "nodeLabels"), keys))
            continue;
        const json_t *taint = gc_kube_untolerated_taint(json_object_get(fspec, "nodeTaints"),
                                                        json_object_get(p->spec, "tolerations"),
                                                        json_object_get(fspec, "tolerations"));
        if (taint) {
            if (!out->taint) {
                out->taint = taint;
                out->taint_flavor = name;
            }
            continue;
        }
        *suited = true;
        if (has_room(m, group, entry, p, out)) {
            chosen = name;
            break;
        }
    }
    json_decref(keys);
    if (!chosen)
        return NULL;
    size_t j;
    const json_t *r;
    json_array_foreach(json_object_get(group, "coveredResources"), j, r)
    {
        if (need_of(p, json_string_value(r)) > 0)
            plan(m, chosen, json_string_value(r), need_of(p, json_string_value(r)));
    }
    return chosen;
}

static bool requests_any(const json_t *group, const kueue_pod_set *p)
{
    const char *resource;
    const json_t *value;
    json_object_foreach(p->requests, resource, value)
    {
        if (json_real_value(value) > 0 && gc_kueue_group_covers(group, resource))
            return true;
    }
    return false;
}

/* A resource the pod set requests that no group covers (Kueue admits nothing else). */
static const char *uncovered(const json_t *groups, const kueue_pod_set *p)
{
    const char *resource;
    const json_t *value;
    json_object_foreach(p->requests, resource, value)
    {
        bool covered = false;
        size_t i;
        const json_t *group;
        json_array_foreach(groups, i, group) covered |= gc_kueue_group_covers(group, resource);
        if (!covered && json_real_value(value) > 0)
            return resource;
    }
    return NULL;
}

/* What the flavors passed over in a group that found one said does not concern the next. */
static void forget_misses(kueue_answer *out)
{
    out->flavor = out->resource = out->taint_flavor = NULL;
    out->taint = NULL;
    out->need = out->quota = out->limit = out->used = out->most = 0;
    out->short_flavors[0] = '\0';
}

/* Fills the group's flavors of pod set `p`: false with `out` saying why when one has none. */
static bool admit_pod_set(model *m, const kueue_pod_set *p, kueue_answer *out)
{
    const json_t *groups = json_object_get(json_object_get(m->cq, "spec"), "resourceGroups");
    json_t *flavors = json_object();
    size_t i;
    const json_t *group;
    json_array_foreach(groups, i, group)
    {
        if (!requests_any(group, p))
            continue;
        bool suited;
        const char *chosen = assign(m, group, p, &suited, out);
        if (!chosen) {
            out->outcome = suited ? KUEUE_NO_QUOTA : KUEUE_NO_FLAVOR;
            out->group = group;
            json_decref(flavors);
            return false;
        }
        size_t j;
        const json_t *r;
        json_array_foreach(json_object_get(group, "coveredResources"), j, r)
        {
            if (need_of(p, json_string_value(r)) > 0)
                json_object_set_new(flavors, json_string_value(r), json_string(chosen));
        }
        forget_misses(out);
    }
    json_array_append_new(out->assignments,
                          json_pack("{s:s?, s:o}", "name", p->name, "flavors", flavors));
    return true;
}

kueue_outcome gc_kueue_admit(const json_t *cluster_queue, const json_t *flavors,
                             const kueue_pod_set *sets, size_t n, kueue_when when,
                             kueue_answer *out)
{
    memset(out, 0, sizeof(*out));
    out->assignments = json_array();
    /* A resource no group covers first, in any pod set: no quota or flavor would help. */
    const json_t *groups =
        json_object_get(json_object_get(cluster_queue, "spec"), "resourceGroups");
    for (size_t i = 0; i < n; i++) {
        const char *missing = uncovered(groups, &sets[i]);
        if (missing) {
            out->outcome = KUEUE_UNCOVERED;
            out->pod_set = i;
            out->resource = missing;
            out->need = need_of(&sets[i], missing);
            return out->outcome;
        }
    }
    model m = {.cq = cluster_queue, .flavors = flavors, .when = when, .planned = json_object()};
    for (size_t i = 0; i < n; i++) {
        if (!admit_pod_set(&m, &sets[i], out)) {
            out->pod_set = i;
            break;
        }
    }
    json_decref(m.planned);
    if (out->outcome != KUEUE_NO_FLAVOR) {
        out->taint = NULL;
        out->taint_flavor = NULL;
    }
    return out->outcome;
}

void gc_kueue_answer_free(kueue_answer *a)
{
    json_decref(a->assignments);
    a->assignments = NULL;
}
