/*
 * Why Kueue has not admitted a job (or took it back): its queue, the queue's cluster queue,
 * the quota per flavor and who uses it, and the jobs ahead of it in line.
 *
 * Quota is worked out by the Kueue model (kueue_model.c, the one submit's refusal asks too)
 * from the job's pod sets and the cluster queue's quotas and reserved usage, not read from
 * Kueue's message: Kueue reports on the pod set it tried last, which for a
 * Pathways job below one slice of quota is the head ("couldn't assign flavors to pod set
 * pathways-head") although the workers are what do not fit.
 */
#include "diagnose/diagnose_kueue.h"
#include "diagnose/diagnosis.h"
#include "gcluster/kube.h"
#include "gcluster/kueue.h"
#include "gcluster/sys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_USERS 3

static const json_t *find_named(const json_t *list, const char *ns, const char *name)
{
    size_t i;
    const json_t *item;
    json_array_foreach(list, i, item)
    {
        const char *n = gc_kube_field(item, NULL, "name");
        const char *item_ns = gc_kube_field(item, NULL, "namespace");
        if (n && name && !strcmp(n, name) && (!ns || (item_ns && !strcmp(item_ns, ns))))
            return item;
    }
    return NULL;
}

static const char *queue_name(const gc_diagnose_input *in)
{
    const char *q = gc_kube_field(in->jobset, "labels", "kueue.x-k8s.io/queue-name");
    return q ? q : gc_kube_string(json_object_get(in->workload, "spec"), "queueName");
}

/* The cluster queue a Workload is (or would be) in. */
static const char *workload_cluster_queue(const gc_diagnose_input *in, const json_t *w)
{
    const char *admitted =
        gc_kube_string(json_object_get(json_object_get(w, "status"), "admission"), "clusterQueue");
    if (admitted)
        return admitted;
    const json_t *lq = find_named(in->local_queues, gc_kube_field(w, NULL, "namespace"),
                                  gc_kube_string(json_object_get(w, "spec"), "queueName"));
    return gc_kube_string(json_object_get(lq, "spec"), "clusterQueue");
}

static long long workload_priority(const json_t *w)
{
    return (long long)json_integer_value(json_object_get(json_object_get(w, "spec"), "priority"));
}

/* The PriorityClass name: v1beta2 spec.priorityClassRef.name, v1beta1 spec.priorityClassName. */
static const char *priority_class(const json_t *w)
{
    const json_t *spec = json_object_get(w, "spec");
    const char *cls = gc_kube_string(json_object_get(spec, "priorityClassRef"), "name");
    return cls ? cls : gc_kube_string(spec, "priorityClassName");
}

/* "high (750)", or "750" without a class. */
static void priority_words(const json_t *w, char *out, size_t size)
{
    const char *cls = priority_class(w);
    long long value = workload_priority(w);
    if (cls)
        snprintf(out, size, "%s (%lld)", cls, value);
    else
        snprintf(out, size, "%lld", value);
}

/* "a --priority above high", or "a --priority (such as high)" when the other has none. */
static void priority_fix(const json_t *other, char *out, size_t size)
{
    const char *cls = priority_class(other);
    if (cls)
        snprintf(out, size, "a --priority above %s", cls);
    else
        snprintf(out, size, "a --priority (such as high)");
}

static bool finished(const json_t *w)
{
    return gc_kube_condition_true(w, "Finished");
}

/* ---- admission -------------------------------------------------------------------------- */

/* Why the Kueue model did not admit the job now, in the diagnosis's terms. */
typedef struct shortage {
    const char *pod_set;
    const char *flavor;
    const char *resource;
    double need, quota, limit, used;
    bool no_flavor;           /* no flavor of the queue suits the pod set's nodes */
    const json_t *selector;   /* of that pod set */
    const char *uncovered;    /* a resource no group of the queue covers */
    const char *taint_flavor; /* a flavor for its nodes whose taint the pods do not tolerate */
    const json_t *taint;
} shortage;

/* Whether Kueue can admit the pod sets now, with the quota the queue has reserved already; false
 * with `s` filled when one does not fit (its names live as long as `sets`). */
static bool fits(const gc_diagnose_input *in, const json_t *cq, const kueue_pod_set *sets, size_t n,
                 shortage *s)
{
    kueue_answer a;
    bool ok = gc_kueue_admit(cq, in->flavors, sets, n, KUEUE_NOW, &a) == KUEUE_ADMITTED;
    if (!ok) {
        const kueue_pod_set *p = &sets[a.pod_set];
        *s = (shortage){.pod_set = p->name,
                        .flavor = a.flavor,
                        .resource = a.resource,
                        .need = a.need,
                        .quota = a.quota,
                        .limit = a.limit,
                        .used = a.used,
                        .no_flavor = a.outcome == KUEUE_NO_FLAVOR,
                        .selector = json_object_get(p->spec, "nodeSelector"),
                        .uncovered = a.outcome == KUEUE_UNCOVERED ? a.resource : NULL,
                        .taint_flavor = a.taint_flavor,
                        .taint = a.taint};
    }
    gc_kueue_answer_free(&a);
    return ok;
}

typedef struct quota_user {
    const json_t *w;
    double amount;
} quota_user;

/* Who holds quota of one flavor and resource in a cluster queue: "pw-a (16), pw-c (16)". */
static void users_of(const gc_diagnose_input *in, const char *cq, const char *flavor,
                     const char *resource, const json_t *self, char *out, size_t size,
                     const json_t **top)
{
    quota_user users[MAX_USERS + 1];
    size_t n = 0, i, j;
    const json_t *w, *ps;
    const char *own = gc_kube_field(self, NULL, "uid");
    json_array_foreach(in->workloads, i, w)
    {
        const json_t *admission = json_object_get(json_object_get(w, "status"), "admission");
        if (!gc_kube_same(gc_kube_string(admission, "clusterQueue"), cq) || finished(w) ||
            !gc_kube_condition_true(w, "QuotaReserved") ||
            gc_kube_same(gc_kube_field(w, NULL, "uid"), own))
            continue;
        double amount = 0;
        json_array_foreach(json_object_get(admission, "podSetAssignments"), j, ps)
        {
            if (gc_kube_same(gc_kube_string(json_object_get(ps, "flavors"), resource), flavor))
                amount += gc_kube_quantity(
                    json_object_get(json_object_get(ps, "resourceUsage"), resource));
        }
        if (amount <= 0)
            continue;
        size_t at = n < MAX_USERS + 1 ? n++ : MAX_USERS;
        users[at].w = w;
        users[at].amount = amount;
        for (size_t k = at; k > 0 && users[k].amount > users[k - 1].amount; k--) {
            quota_user t = users[k];
            users[k] = users[k - 1];
            users[k - 1] = t;
        }
    }
    out[0] = '\0';
    *top = n ? users[0].w : NULL;
    size_t len = 0;
    for (size_t k = 0; k < n && k < MAX_USERS && len < size; k++) {
        char amount[32];
        gc_kube_format_quantity(users[k].amount, resource, amount, sizeof(amount));
        len += (size_t)snprintf(out + len, size - len, "%s%s", k ? ", " : "",
                                gc_job_owner_name(users[k].w));
        if (n > 1 && len < size)
            len += (size_t)snprintf(out + len, size - len, " (%s)", amount);
    }
    if (n > MAX_USERS && len < size)
        snprintf(out + len, size - len, " and others");
}

/* The `gcluster deploy` blueprint variable that sets a quota of its own flavors. */
static const char *blueprint_variable(const shortage *s)
{
    bool head = gc_kube_same(s->flavor, "pathways-flavor");
    if (gc_kube_same(s->resource, "google.com/tpu"))
        return head ? "the head flavor's TPU quota" : "tpu_quota";
    if (gc_kube_same(s->resource, "cpu"))
        return head ? "pathways_cpu_quota" : "tpu_flavor_cpu_quota";
    if (gc_kube_same(s->resource, "memory"))
        return head ? "pathways_memory_quota" : "tpu_flavor_memory_quota";
    return "the quota";
}

static void quota_short(const gc_diagnose_input *in, const json_t *cq, const shortage *s,
                        gc_diagnosis *d)
{
    const char *cq_name = gc_kube_field(cq, NULL, "name");
    const char *role = gc_job_role_words(s->pod_set);
    const char *verb_s = gc_job_role_s(s->pod_set);
    char need[32], quota[32], used[32], free_[32];
    gc_kube_format_quantity(s->need, s->resource, need, sizeof(need));
    gc_kube_format_quantity(s->quota, s->resource, quota, sizeof(quota));
    gc_kube_format_quantity(s->used, s->resource, used, sizeof(used));
    gc_kube_format_quantity(s->limit - s->used > 0 ? s->limit - s->used : 0, s->resource, free_,
                            sizeof(free_));
    diagnose_set(d, GC_JOB_QUEUED, "QuotaShort");
    if (s->uncovered) {
        diagnose_cause(d, "%s need%s %s %s, and cluster queue %s has no quota for %s at all", role,
                       verb_s, need, s->resource, cq_name, s->resource);
        diagnose_fix(d,
                     "add %s to a resource group of %s (gcluster deploy BLUEPRINT sets up "
                     "google.com/tpu, cpu and memory), or submit to another --queue",
                     s->resource, cq_name);
        return;
    }
    if (s->need > s->limit) {
        char borrow[64] = "";
        if (s->limit > s->quota) {
            char limit[32];
            gc_kube_format_quantity(s->limit, s->resource, limit, sizeof(limit));
            snprintf(borrow, sizeof(borrow), " (%s with what it may borrow)", limit);
        }
        diagnose_cause(d,
                       "%s need%s %s %s in %s; the quota of cluster queue %s is %s%s, less than "
                       "the job needs even when the queue is empty",
                       role, verb_s, need, s->resource, s->flavor, cq_name, quota, borrow);
        diagnose_fix(d,
                     "raise %s's %s quota for %s to at least %s (%s in the blueprint, then "
                     "gcluster deploy BLUEPRINT), or submit a smaller job (--num-slices, "
                     "--compute-type)",
                     cq_name, s->resource, s->flavor, need, blueprint_variable(s));
        return;
    }
    char users[256];
    const json_t *top;
    users_of(in, cq_name, s->flavor, s->resource, in->workload, users, sizeof(users), &top);
    diagnose_cause(d, "%s need%s %s %s in %s; quota %s, %s used%s%s", role, verb_s, need,
                   s->resource, s->flavor, quota, used, users[0] ? " by " : "", users);
    if (!top) {
        diagnose_fix(d, "wait: it starts when %s more %s is free in %s", need, s->resource,
                     cq_name);
        return;
    }
    const char *preempt = gc_kube_string(json_object_get(json_object_get(cq, "spec"), "preemption"),
                                         "withinClusterQueue");
    bool can_preempt = preempt && strcmp(preempt, "Never") &&
                       workload_priority(top) >= workload_priority(in->workload);
    char above[96];
    priority_fix(top, above, sizeof(above));
    diagnose_fix(d, "wait for %s to finish, or free its quota: gcluster job cancel %s%s%s%s",
                 gc_job_owner_name(top), gc_job_owner_name(top),
                 can_preempt ? "; or submit with " : "", can_preempt ? above : "",
                 can_preempt ? ", which lets the queue preempt it" : "");
}

/* The one flavor for the pods' nodes has a taint the pods do not tolerate: Kueue passes it over
 * (the scheduler would keep them off its nodes), so the job waits for a flavor forever. */
static void flavor_tainted(const gc_diagnose_input *in, const json_t *cq, const shortage *s,
                           gc_diagnosis *d)
{
    const char *cq_name = gc_kube_field(cq, NULL, "name");
    char taint[256];
    gc_kube_taint_words(s->taint, taint, sizeof(taint));
    diagnose_set(d, GC_JOB_QUEUED, "FlavorTaintNotTolerated");
    diagnose_cause(d,
                   "the nodes %s ask%s for are flavor %s of cluster queue %s, tainted %s, which "
                   "the pods do not tolerate, so Kueue never admits the job",
                   gc_job_role_words(s->pod_set), gc_job_role_s(s->pod_set), s->taint_flavor,
                   cq_name, taint);
    diagnose_fix(d,
                 "add a toleration for %s to flavor %s (kubectl edit resourceflavor %s, "
                 "spec.tolerations: Kueue gives it to the pods it admits there), or submit to "
                 "another --queue",
                 taint, s->taint_flavor, s->taint_flavor);
    char *taints = json_dumps(
        json_object_get(json_object_get(gc_kueue_flavor(in->flavors, s->taint_flavor), "spec"),
                        "nodeTaints"),
        JSON_COMPACT | JSON_SORT_KEYS);
    diagnose_evidence(d, "ResourceFlavor %s: nodeTaints %s", s->taint_flavor,
                      taints ? taints : "[]");
    free(taints);
}

static void no_flavor(const gc_diagnose_input *in, const json_t *cq, const shortage *s,
                      gc_diagnosis *d)
{
    if (s->taint) {
        flavor_tainted(in, cq, s, d);
        return;
    }
    const char *cq_name = gc_kube_field(cq, NULL, "name");
    char wanted[256] = "";
    size_t len = 0;
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)s->selector, key, value)
    {
        if (len < sizeof(wanted))
            len += (size_t)snprintf(wanted + len, sizeof(wanted) - len, "%s%s=%s", len ? ", " : "",
                                    key, json_string_value(value));
    }
    diagnose_set(d, GC_JOB_QUEUED, "NoFlavor");
    diagnose_cause(d,
                   "%s ask%s for nodes with %s, and no flavor of cluster queue %s is for such "
                   "nodes",
                   gc_job_role_words(s->pod_set), gc_job_role_s(s->pod_set),
                   wanted[0] ? wanted : "(no node selector)", cq_name);
    const char *pool = gc_kube_string(s->selector, "cloud.google.com/gke-nodepool");
    if (pool && gc_kube_same(s->pod_set, "pathways-head"))
        diagnose_fix(d,
                     "submit with --pathways-head-np set to a pool the queue has a flavor for, "
                     "or add a flavor for %s: gcluster deploy BLUEPRINT --pathways-head-np %s",
                     pool, pool);
    else
        diagnose_fix(d,
                     "submit with a --compute-type the queue has a flavor for (kubectl get "
                     "clusterqueue %s -o yaml lists them), or add one with gcluster deploy "
                     "BLUEPRINT",
                     cq_name);
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(json_object_get(cq, "spec"), "resourceGroups"), i, g)
    {
        size_t j;
        const json_t *f;
        json_array_foreach(json_object_get(g, "flavors"), j, f)
        {
            const char *fname = gc_kube_string(f, "name");
            char *labels = json_dumps(gc_kueue_flavor_labels(in->flavors, fname),
                                      JSON_COMPACT | JSON_SORT_KEYS);
            diagnose_evidence(d, "ResourceFlavor %s: nodeLabels %s", fname, labels ? labels : "{}");
            free(labels);
        }
    }
}

/* ---- the line of jobs ahead ------------------------------------------------------------- */

static bool ahead_of(const json_t *other, const json_t *self)
{
    long long po = workload_priority(other), ps = workload_priority(self);
    if (po != ps)
        return po > ps;
    long long to = gc_clock_timestamp(gc_kube_field(other, NULL, "creationTimestamp"));
    long long ts = gc_clock_timestamp(gc_kube_field(self, NULL, "creationTimestamp"));
    if (to < 0 || ts < 0)
        return false;
    if (to != ts)
        return to < ts;
    /* The same second: the one Kueue has already tried (it has a QuotaReserved condition) is
     * ahead of one it has not looked at yet. */
    return gc_kube_condition(other, "QuotaReserved") && !gc_kube_condition(self, "QuotaReserved");
}

/* The first pending job ahead of this one in the same cluster queue (NULL if none). */
static const json_t *first_ahead(const gc_diagnose_input *in, const char *cq, size_t *count)
{
    const json_t *first = NULL;
    size_t i;
    const json_t *w;
    *count = 0;
    json_array_foreach(in->workloads, i, w)
    {
        if (gc_kube_same(gc_kube_field(w, NULL, "uid"), gc_kube_field(in->workload, NULL, "uid")) ||
            finished(w) || gc_kube_condition_true(w, "QuotaReserved") ||
            json_is_false(json_object_get(json_object_get(w, "spec"), "active")) ||
            !gc_kube_same(workload_cluster_queue(in, w), cq) || !ahead_of(w, in->workload))
            continue;
        (*count)++;
        if (!first || ahead_of(w, first))
            first = w;
    }
    return first;
}

static void waiting_behind(const gc_diagnose_input *in, const json_t *cq, const json_t *blocker,
                           size_t count, gc_diagnosis *d)
{
    const char *cq_name = gc_kube_field(cq, NULL, "name");
    const char *strategy = gc_kube_string(json_object_get(cq, "spec"), "queueingStrategy");
    bool strict = gc_kube_same(strategy, "StrictFIFO");
    const char *who = gc_job_owner_name(blocker);
    char why[400] = "";
    kueue_pod_set *sets;
    size_t n = gc_kueue_pod_sets_of_workload(blocker, &sets);
    shortage s;
    if (n && !fits(in, cq, sets, n, &s) && s.flavor) {
        char need[32], free_[32];
        gc_kube_format_quantity(s.need, s.resource, need, sizeof(need));
        gc_kube_format_quantity(s.limit - s.used > 0 ? s.limit - s.used : 0, s.resource, free_,
                                sizeof(free_));
        snprintf(why, sizeof(why), ", which needs %s %s in %s (%s free)", need, s.resource,
                 s.flavor, free_);
    }
    gc_kueue_pod_sets_free(sets, n);
    char theirs[48], mine[48];
    priority_words(blocker, theirs, sizeof(theirs));
    priority_words(in->workload, mine, sizeof(mine));
    char line[160] = "";
    if (strict)
        snprintf(line, sizeof(line),
                 "; cluster queue %s is StrictFIFO, so nothing behind it "
                 "starts",
                 cq_name);
    char above[96];
    priority_fix(blocker, above, sizeof(above));
    diagnose_set(d, GC_JOB_QUEUED, "WaitingBehind");
    if (workload_priority(blocker) > workload_priority(in->workload))
        diagnose_cause(d, "waiting behind %s (priority %s, above this job's %s)%s%s", who, theirs,
                       mine, why, line);
    else
        diagnose_cause(d, "waiting behind %s%s (queued earlier)%s%s", who,
                       count > 1 ? " and others" : "", why, line);
    diagnose_fix(d, "wait for %s to start, cancel it (gcluster job cancel %s), or submit with %s",
                 who, who, above);
    diagnose_evidence(d, "ClusterQueue %s: queueingStrategy %s", cq_name,
                      strategy ? strategy : "BestEffortFIFO");
    diagnose_evidence(d, "Workload %s (%s): pending, priority %lld, created %s",
                      gc_kube_field(blocker, NULL, "name"), who, workload_priority(blocker),
                      gc_kube_field(blocker, NULL, "creationTimestamp"));
}

/* ---- queues ----------------------------------------------------------------------------- */

/* "user-queue", or the first other queue of the namespace whose cluster queue exists. */
static const char *other_queue(const gc_diagnose_input *in, const char *ns, const char *not_this)
{
    const char *best = NULL;
    size_t i;
    const json_t *lq;
    json_array_foreach(in->local_queues, i, lq)
    {
        const char *name = gc_kube_field(lq, NULL, "name");
        if (!gc_kube_same(gc_kube_field(lq, NULL, "namespace"), ns) ||
            gc_kube_same(name, not_this) ||
            !find_named(in->cluster_queues, NULL,
                        gc_kube_string(json_object_get(lq, "spec"), "clusterQueue")))
            continue;
        if (!best || gc_kube_same(name, "user-queue"))
            best = name;
    }
    return best;
}

static void list_queues(const gc_diagnose_input *in, const char *ns, char *out, size_t size)
{
    size_t len = 0, i;
    const json_t *lq;
    out[0] = '\0';
    json_array_foreach(in->local_queues, i, lq)
    {
        if (gc_kube_same(gc_kube_field(lq, NULL, "namespace"), ns) && len < size)
            len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ", " : "",
                                    gc_kube_field(lq, NULL, "name"));
    }
}

static void resubmit_fix(const gc_diagnose_input *in, const char *ns, const char *queue,
                         const char *otherwise, gc_diagnosis *d)
{
    const char *name = gc_kube_field(in->jobset, NULL, "name");
    const char *other = other_queue(in, ns, queue);
    if (other)
        diagnose_fix(d, "gcluster job cancel %s, then submit it again with --queue %s", name,
                     other);
    else
        diagnose_fix(d, "%s", otherwise);
}

static void cluster_queue_inactive(const gc_diagnose_input *in, const json_t *cq, gc_diagnosis *d)
{
    const char *cq_name = gc_kube_field(cq, NULL, "name");
    const json_t *active = gc_kube_condition(cq, "Active");
    const char *why = gc_kube_string(active, "reason");
    diagnose_set(d, GC_JOB_QUEUED, "ClusterQueueInactive");
    diagnose_evidence(d, "ClusterQueue %s: Active=False (%s): %s", cq_name, why ? why : "?",
                      gc_kube_string_or(active, "message", ""));
    if (gc_kube_same(why, "Stopped")) {
        const char *policy = gc_kube_string(json_object_get(cq, "spec"), "stopPolicy");
        diagnose_cause(d, "cluster queue %s is stopped (stopPolicy %s): it admits no job", cq_name,
                       policy ? policy : "Hold");
        diagnose_fix(d,
                     "kubectl patch clusterqueue %s --type=merge -p "
                     "'{\"spec\":{\"stopPolicy\":\"None\"}}'",
                     cq_name);
        return;
    }
    if (gc_kube_same(why, "FlavorNotFound")) {
        char missing[256] = "";
        size_t len = 0, i, j;
        const json_t *g, *f;
        json_array_foreach(json_object_get(json_object_get(cq, "spec"), "resourceGroups"), i, g)
            json_array_foreach(json_object_get(g, "flavors"), j, f)
        {
            const char *fname = gc_kube_string(f, "name");
            if (in->flavors && !find_named(in->flavors, NULL, fname) && len < sizeof(missing))
                len += (size_t)snprintf(missing + len, sizeof(missing) - len, "%s%s",
                                        len ? ", " : "", fname);
        }
        diagnose_cause(d,
                       "cluster queue %s is inactive: it names flavor %s, which does not "
                       "exist",
                       cq_name, missing[0] ? missing : "(see its status)");
        diagnose_fix(d,
                     "create the missing flavor (gcluster deploy BLUEPRINT creates the ones it "
                     "names) or take it out of the queue: kubectl edit clusterqueue %s",
                     cq_name);
        return;
    }
    diagnose_cause(d, "cluster queue %s is inactive: %s", cq_name,
                   gc_kube_string_or(active, "message", "no reason"));
    diagnose_fix(d, "kubectl describe clusterqueue %s shows what it lacks", cq_name);
}

static void kueue_says(const gc_diagnose_input *in, gc_diagnosis *d)
{
    const json_t *c = gc_kube_condition(in->workload, "QuotaReserved");
    if (c)
        diagnose_evidence(d, "Workload %s: QuotaReserved=%s (%s): %s",
                          gc_kube_field(in->workload, NULL, "name"), gc_kube_string(c, "status"),
                          gc_kube_string_or(c, "reason", ""), gc_kube_string_or(c, "message", ""));
}

static void no_workload(const gc_diagnose_input *in, gc_diagnosis *d)
{
    char age[16];
    gc_job_age(gc_kube_field(in->jobset, NULL, "creationTimestamp"), in->now, age, sizeof(age));
    diagnose_set(d, GC_JOB_QUEUED, "NoWorkload");
    diagnose_cause(d, "queued on %s, but Kueue has not picked it up%s%s%s", queue_name(in),
                   age[0] ? " (submitted " : "", age, age[0] ? " ago)" : "");
    diagnose_fix(d, "check that Kueue runs and manages JobSets: kubectl get pods -n kueue-system "
                    "(its configuration must list jobset.x-k8s.io/jobset under "
                    "integrations.frameworks)");
    diagnose_evidence(d, "no Workload with label kueue.x-k8s.io/job-uid=%s",
                      gc_kube_field(in->jobset, NULL, "uid"));
}

/* Kueue's words for a queue it cannot use ("LocalQueue q doesn't exist", "ClusterQueue cq is
 * inactive") are plain enough to name the reason; its words on quota are not (they are about
 * the pod set it tried last), so anything else stays Pending. */
static const char *reason_in_message(const char *message)
{
    if (!message)
        return "Pending";
    bool local = !strncmp(message, "LocalQueue ", 11);
    bool cluster = !strncmp(message, "ClusterQueue ", 13);
    if (local && strstr(message, " doesn't exist"))
        return "QueueMissing";
    if (cluster && strstr(message, " doesn't exist"))
        return "ClusterQueueMissing";
    if (cluster && strstr(message, " is inactive"))
        return "ClusterQueueInactive";
    return "Pending";
}

/* What is known from Kueue's own words while the queues are not read (yet). */
static void pending_by_message(const gc_diagnose_input *in, gc_diagnosis *d)
{
    const json_t *c = gc_kube_condition(in->workload, "QuotaReserved");
    const char *message = gc_kube_string(c, "message");
    diagnose_set(d, GC_JOB_QUEUED, reason_in_message(message));
    diagnose_cause(d, "waiting for Kueue to admit it%s%s", message ? ": " : "",
                   message ? message : "");
    diagnose_fix(d, "kubectl describe workload %s -n %s shows what Kueue waits for",
                 gc_kube_field(in->workload, NULL, "name"),
                 gc_kube_field(in->workload, NULL, "namespace"));
}

void diagnose_queued(const gc_diagnose_input *in, gc_diagnosis *d)
{
    if (!in->workload) {
        no_workload(in, d);
        return;
    }
    kueue_says(in, d);
    if (!in->queues_read) {
        d->wants |= GC_DIAGNOSE_WANT_QUEUES;
        pending_by_message(in, d);
        return;
    }
    const char *ns = gc_kube_field(in->jobset, NULL, "namespace");
    const char *queue = queue_name(in);
    const json_t *lq = find_named(in->local_queues, ns, queue);
    if (!lq) {
        char queues[256];
        list_queues(in, ns, queues, sizeof(queues));
        diagnose_set(d, GC_JOB_QUEUED, "QueueMissing");
        diagnose_cause(d, "queue %s does not exist in namespace %s (queues there: %s)", queue, ns,
                       queues[0] ? queues : "none");
        resubmit_fix(in, ns, queue,
                     "create the queues with gcluster deploy BLUEPRINT (it makes user-queue), "
                     "then submit again with --queue user-queue",
                     d);
        diagnose_evidence(d, "no LocalQueue %s/%s", ns, queue);
        return;
    }
    const char *lq_stop = gc_kube_string(json_object_get(lq, "spec"), "stopPolicy");
    if (lq_stop && strcmp(lq_stop, "None")) {
        diagnose_set(d, GC_JOB_QUEUED, "QueueStopped");
        diagnose_cause(d, "queue %s is stopped (stopPolicy %s): it admits no job", queue, lq_stop);
        diagnose_fix(d,
                     "kubectl patch localqueue %s -n %s --type=merge -p "
                     "'{\"spec\":{\"stopPolicy\":\"None\"}}'",
                     queue, ns);
        return;
    }
    const char *cq_name = gc_kube_string(json_object_get(lq, "spec"), "clusterQueue");
    const json_t *cq = find_named(in->cluster_queues, NULL, cq_name);
    if (!cq) {
        diagnose_set(d, GC_JOB_QUEUED, "ClusterQueueMissing");
        diagnose_cause(d, "queue %s sends its jobs to cluster queue %s, which does not exist",
                       queue, cq_name ? cq_name : "(none)");
        char otherwise[300];
        snprintf(otherwise, sizeof(otherwise),
                 "create cluster queue %s (gcluster deploy BLUEPRINT creates cluster-queue), or "
                 "point queue %s at an existing one",
                 cq_name ? cq_name : "", queue);
        resubmit_fix(in, ns, queue, otherwise, d);
        diagnose_evidence(d, "LocalQueue %s/%s: spec.clusterQueue %s; no such ClusterQueue", ns,
                          queue, cq_name ? cq_name : "");
        return;
    }
    const json_t *active = gc_kube_condition(cq, "Active");
    if (active && !gc_kube_condition_true(cq, "Active")) {
        cluster_queue_inactive(in, cq, d);
        return;
    }
    kueue_pod_set *sets;
    size_t n = gc_kueue_pod_sets_of_workload(in->workload, &sets);
    shortage s;
    bool fit = fits(in, cq, sets, n, &s);
    if (!fit) {
        /* s names resources by the pod sets' keys: report before freeing them. */
        if (s.no_flavor && !s.uncovered)
            no_flavor(in, cq, &s, d);
        else
            quota_short(in, cq, &s, d);
        if (s.flavor) {
            char quota[32], used[32];
            gc_kube_format_quantity(s.quota, s.resource, quota, sizeof(quota));
            gc_kube_format_quantity(s.used, s.resource, used, sizeof(used));
            diagnose_evidence(d, "ClusterQueue %s: %s %s nominalQuota %s, reserved %s", cq_name,
                              s.flavor, s.resource, quota, used);
        }
    }
    gc_kueue_pod_sets_free(sets, n);
    if (!fit)
        return;
    size_t count;
    const json_t *blocker = first_ahead(in, cq_name, &count);
    if (blocker) {
        waiting_behind(in, cq, blocker, count, d);
        return;
    }
    if (gc_kube_condition_true(in->workload, "QuotaReserved")) {
        const json_t *admitted = gc_kube_condition(in->workload, "Admitted");
        diagnose_set(d, GC_JOB_QUEUED, "AdmissionChecks");
        diagnose_cause(d, "quota reserved in %s; waiting for its admission checks%s%s", cq_name,
                       gc_kube_string(admitted, "message") ? ": " : "",
                       gc_kube_string_or(admitted, "message", ""));
        diagnose_fix(d, "kubectl get workload %s -o yaml shows the checks' state",
                     gc_kube_field(in->workload, NULL, "name"));
        return;
    }
    pending_by_message(in, d);
}

/* ---- eviction --------------------------------------------------------------------------- */

/* The Workload whose UID Kueue names in a preemption message ("... (UID: 5b80..., JobUID: ...)").
 */
static const json_t *preemptor(const gc_diagnose_input *in, const char *message)
{
    const char *at = message ? strstr(message, "UID: ") : NULL;
    if (!at)
        return NULL;
    at += 5;
    size_t len = strcspn(at, ",) ");
    size_t i;
    const json_t *w;
    json_array_foreach(in->workloads, i, w)
    {
        const char *uid = gc_kube_field(w, NULL, "uid");
        if (uid && strlen(uid) == len && !strncmp(uid, at, len))
            return w;
    }
    return NULL;
}

bool diagnose_evicted(const gc_diagnose_input *in, gc_diagnosis *d)
{
    const json_t *evicted = gc_kube_condition(in->workload, "Evicted");
    if (!evicted || !gc_kube_condition_true(in->workload, "Evicted"))
        return false;
    const char *reason = gc_kube_string(evicted, "reason");
    const char *message = gc_kube_string(evicted, "message");
    char age[16];
    gc_job_age(gc_kube_string(evicted, "lastTransitionTime"), in->now, age, sizeof(age));
    char when[32] = "";
    if (age[0])
        snprintf(when, sizeof(when), " %s ago", age);

    /* What it waits for now, in the words of the queue diagnosis. */
    gc_diagnosis now;
    memset(&now, 0, sizeof(now));
    diagnose_queued(in, &now);
    d->wants |= now.wants;
    char then[GC_DIAGNOSIS_LINE];
    snprintf(then, sizeof(then), "%s", now.cause);

    diagnose_evidence(d, "Workload %s: Evicted=True (%s): %s",
                      gc_kube_field(in->workload, NULL, "name"), reason ? reason : "",
                      message ? message : "");
    if (gc_kube_same(reason, "Preempted")) {
        const json_t *by = preemptor(in, message);
        char theirs[48], mine[48];
        priority_words(in->workload, mine, sizeof(mine));
        diagnose_set(d, GC_JOB_QUEUED, "Preempted");
        if (by) {
            priority_words(by, theirs, sizeof(theirs));
            diagnose_cause(d,
                           "preempted%s by %s (priority %s, above this job's %s): its pods "
                           "were stopped and it waits in line again; now %s",
                           when, gc_job_owner_name(by), theirs, mine, then);
        } else {
            if (!in->workloads)
                d->wants |= GC_DIAGNOSE_WANT_QUEUES;
            diagnose_cause(d,
                           "preempted%s by a job of higher priority: its pods were stopped "
                           "and it waits in line again; now %s",
                           when, then);
        }
        diagnose_fix(d, "nothing to do: it starts again from the beginning when quota frees up; "
                        "submit with a higher --priority to keep it from being preempted");
        return true;
    }
    diagnose_set(d, GC_JOB_QUEUED, "Evicted");
    if (gc_kube_same(reason, "PodsReadyTimeout"))
        diagnose_cause(d, "stopped by Kueue%s: its pods were not all ready in time; now %s", when,
                       then);
    else if (gc_kube_same(reason, "ClusterQueueStopped") ||
             gc_kube_same(reason, "LocalQueueStopped"))
        diagnose_cause(d, "stopped by Kueue%s: its queue was stopped; now %s", when, then);
    else
        diagnose_cause(d, "stopped by Kueue%s (%s: %s); now %s", when, reason ? reason : "?",
                       message ? message : "", then);
    const json_t *requeue =
        json_object_get(json_object_get(in->workload, "status"), "requeueState");
    if (requeue)
        diagnose_evidence(d, "Workload %s: requeueState count %lld, requeueAt %s",
                          gc_kube_field(in->workload, NULL, "name"),
                          (long long)json_integer_value(json_object_get(requeue, "count")),
                          gc_kube_string_or(requeue, "requeueAt", "-"));
    snprintf(d->fix, sizeof(d->fix), "%s", now.fix);
    return true;
}
