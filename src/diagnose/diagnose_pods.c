/*
 * Why an admitted job's pods do not run, and how a running one is doing: from its pods (phase,
 * conditions, container states) and, for pods that cannot be placed, the nodes and who holds
 * them.
 */
#include "diagnose/diagnose_pods.h"
#include "diagnose/diagnosis.h"
#include "gcluster/checked.h"
#include "gcluster/kube.h"

#include "gcluster/manifest.h"
#include "gcluster/sys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STUCK_SECONDS 120 /* a bound pod with no started container for this long is stuck */
#define MAX_HOLDERS   3

static const char *pod_name(const json_t *pod)
{
    return gc_kube_field(pod, NULL, "name");
}

/* ---- container states ------------------------------------------------------------------- */

static bool waiting_in(const json_t *cs, void *ctx)
{
    const char *reason =
        gc_kube_string(json_object_get(json_object_get(cs, "state"), "waiting"), "reason");
    for (const char *const *r = ctx; *r; r++)
        if (gc_kube_same(reason, *r))
            return true;
    return false;
}

static const char *const image_reasons[] = {"ImagePullBackOff", "ErrImagePull", "InvalidImageName",
                                            "ErrImageNeverPull", NULL};
static const char *const start_reasons[] = {"CreateContainerConfigError", "CreateContainerError",
                                            "RunContainerError", "CrashLoopBackOff", NULL};

/* The flag that sets a container's image. */
static const char *image_flag(const char *container)
{
    if (gc_kube_same(container, "pathways-proxy"))
        return "--pathways-proxy-image";
    if (gc_kube_same(container, "pathways-rm"))
        return "--pathways-server-image";
    if (gc_kube_same(container, "pathways-worker"))
        return "--pathways-worker-image (or --pathways-server-image)";
    if (gc_kube_same(container, "colocated-python-sidecar"))
        return "--pathways-colocated-python-sidecar-image";
    return "--image";
}

/* The kubelet's long pull message, in a few words. */
static const char *pull_words(const char *message)
{
    if (!message)
        return "the pull failed";
    if (strstr(message, "not found") || strstr(message, "NotFound") ||
        strstr(message, "manifest unknown"))
        return "no such image or tag";
    if (strstr(message, "403") || strstr(message, "401") || strstr(message, "denied") ||
        strstr(message, "nauthorized") || strstr(message, "ermission"))
        return "access denied";
    if (strstr(message, "invalid reference") || strstr(message, "InvalidImageName"))
        return "not a valid image name";
    return "the pull failed";
}

static const char *container_image(const gc_kube_container_state *c)
{
    const char *image = gc_kube_string(c->status, "image");
    return image ? image : "?";
}

/* ---- counting pods ---------------------------------------------------------------------- */

typedef struct pod_group {
    const json_t *example;
    size_t count;
    const char *role;
} pod_group;

static void count_in(pod_group *g, const json_t *pod)
{
    if (!g->count) {
        g->example = pod;
        g->role = gc_job_pod_role(pod);
    } else if (!gc_kube_same(g->role, gc_job_pod_role(pod))) {
        g->role = NULL; /* more than one role */
    }
    g->count++;
}

/* "1 worker pod", "4 worker pods", "the head pod" into `out`. */
static const char *pods_words(const pod_group *g, char *out, size_t size)
{
    const char *kind = gc_kube_same(g->role, GC_PATHWAYS_HEAD)     ? "head pod"
                       : gc_kube_same(g->role, GC_PATHWAYS_WORKER) ? "worker pod"
                                                                   : "pod";
    if (g->count == 1 && gc_kube_same(g->role, GC_PATHWAYS_HEAD))
        snprintf(out, size, "the head pod");
    else
        snprintf(out, size, "%zu %s%s", g->count, kind, g->count == 1 ? "" : "s");
    return out;
}

/* Verb endings that agree with the pod count: "waits"/"wait", "is"/"are", "has"/"have". */
static const char *s_(const pod_group *g)
{
    return g->count == 1 ? "s" : "";
}

static const char *is_(const pod_group *g)
{
    return g->count == 1 ? "is" : "are";
}

static bool unscheduled(const json_t *pod)
{
    const json_t *c = gc_kube_condition(pod, "PodScheduled");
    return c && gc_kube_same(gc_kube_string(c, "status"), "False");
}

static bool gated(const json_t *pod)
{
    return json_array_size(json_object_get(json_object_get(pod, "spec"), "schedulingGates")) > 0;
}

/* Bound, Pending, and no container started for STUCK_SECONDS. */
static bool stuck_creating(const gc_diagnose_input *in, const json_t *pod)
{
    const json_t *status = json_object_get(pod, "status");
    if (!gc_kube_string(json_object_get(pod, "spec"), "nodeName") ||
        !gc_kube_same(gc_kube_string(status, "phase"), "Pending") || in->now <= 0)
        return false;
    const char *since =
        gc_kube_string(gc_kube_condition(pod, "PodScheduled"), "lastTransitionTime");
    long long t = gc_clock_timestamp(since ? since : gc_kube_field(pod, NULL, "creationTimestamp"));
    return t >= 0 && in->now - t >= STUCK_SECONDS;
}

/* ---- nodes ------------------------------------------------------------------------------ */

static bool node_has(const json_t *node, const char *key, const char *value)
{
    return gc_kube_same(gc_kube_field(node, "labels", key), value);
}

/* Whether the scheduler could put a pod with `spec` on `node` as far as its labels and taints
 * go (room is another matter). */
static bool node_selected(const json_t *node, const json_t *spec)
{
    return gc_kube_selection_matches(
        spec, json_object_get(json_object_get(node, "metadata"), "labels"), NULL);
}

static const json_t *untolerated_taint(const json_t *node, const json_t *spec)
{
    return gc_kube_untolerated_taint(json_object_get(json_object_get(node, "spec"), "taints"),
                                     json_object_get(spec, "tolerations"), NULL);
}

/* "4x4, 2x2x2": the values the nodes have for a label key. */
static void values_of(const json_t *nodes, const char *key, char *out, size_t size)
{
    json_t *seen = json_object();
    size_t len = 0, i;
    const json_t *node;
    out[0] = '\0';
    json_array_foreach(nodes, i, node)
    {
        const char *v = gc_kube_field(node, "labels", key);
        if (!v || json_object_get(seen, v) || len >= size)
            continue;
        json_object_set_new(seen, v, json_true());
        len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ", " : "", v);
    }
    json_decref(seen);
}

typedef struct holder {
    const char *job;
    size_t hosts;
} holder;

/* Which other jobs hold the selected, usable nodes: "pw-outside (8)". Returns the busy count. */
static size_t busy_nodes(const gc_diagnose_input *in, const json_t *spec, size_t *usable,
                         holder *holders, size_t *holder_count)
{
    size_t busy = 0, i;
    const json_t *node;
    *usable = 0;
    *holder_count = 0;
    json_array_foreach(in->nodes, i, node)
    {
        if (!node_selected(node, spec) || untolerated_taint(node, spec) ||
            json_is_true(json_object_get(json_object_get(node, "spec"), "unschedulable")))
            continue;
        (*usable)++;
        const char *name = gc_kube_field(node, NULL, "name");
        const char *by = NULL;
        size_t j;
        const json_t *pod;
        json_array_foreach(in->node_pods, j, pod)
        {
            const char *phase = gc_kube_string(json_object_get(pod, "status"), "phase");
            if (gc_kube_same(gc_kube_string(json_object_get(pod, "spec"), "nodeName"), name) &&
                !gc_kube_same(phase, "Succeeded") && !gc_kube_same(phase, "Failed"))
                by = gc_job_owner_name(pod);
        }
        if (!by)
            continue;
        busy++;
        size_t h;
        for (h = 0; h < *holder_count && !gc_kube_same(holders[h].job, by); h++)
            ;
        if (h == *holder_count && h < MAX_HOLDERS)
            holders[(*holder_count)++] = (holder){.job = by};
        if (h < *holder_count)
            holders[h].hosts++;
    }
    return busy;
}

/* The TPU slice shapes the nodes offer: "tpu-v6e-slice 4x4 (8 hosts), tpu7x 2x2x2 (2 hosts)". */
static void tpu_shapes(const json_t *nodes, char *out, size_t size)
{
    json_t *hosts = json_object(); /* "accelerator topology" -> count, in first-seen order */
    size_t i;
    const json_t *node;
    json_array_foreach(nodes, i, node)
    {
        const char *accelerator =
            gc_kube_field(node, "labels", "cloud.google.com/gke-tpu-accelerator");
        const char *topology = gc_kube_field(node, "labels", "cloud.google.com/gke-tpu-topology");
        if (!accelerator || !topology)
            continue;
        char key[160];
        snprintf(key, sizeof(key), "%s %s", accelerator, topology);
        json_object_set_new(
            hosts, key,
            json_integer(gc_saturating_add(json_integer_value(json_object_get(hosts, key)), 1)));
    }
    size_t len = 0;
    const char *key;
    json_t *count;
    out[0] = '\0';
    json_object_foreach(hosts, key, count)
    {
        if (len < size)
            len += (size_t)snprintf(out + len, size - len, "%s%s (%lld host%s)", len ? ", " : "",
                                    key, (long long)json_integer_value(count),
                                    json_integer_value(count) == 1 ? "" : "s");
    }
    if (!len)
        snprintf(out, size, "no TPU hosts");
    json_decref(hosts);
}

/* "tpu-v6e-slice 4x4 hosts", "hosts of node pool cpu-np", else the selector itself. */
static void hosts_words(const json_t *selector, const char *wanted, char *out, size_t size)
{
    const char *accelerator = gc_kube_string(selector, "cloud.google.com/gke-tpu-accelerator");
    const char *topology = gc_kube_string(selector, "cloud.google.com/gke-tpu-topology");
    const char *pool = gc_kube_string(selector, "cloud.google.com/gke-nodepool");
    if (accelerator)
        snprintf(out, size, "%s%s%s hosts", accelerator, topology ? " " : "",
                 topology ? topology : "");
    else if (pool)
        snprintf(out, size, "hosts of node pool %s", pool);
    else
        snprintf(out, size, "nodes with %s", wanted[0] ? wanted : "no selector");
}

static void selector_words(const json_t *selector, char *out, size_t size)
{
    size_t len = 0;
    const char *key;
    const json_t *value;
    out[0] = '\0';
    json_object_foreach((json_t *)selector, key, value)
    {
        if (len < size)
            len += (size_t)snprintf(out + len, size - len, "%s%s=%s", len ? ", " : "", key,
                                    json_string_value(value));
    }
}

/* Pods the scheduler cannot place: which label no node has, which taint, which hosts are busy
 * and by whom; the scheduler's own words when the nodes are not known. */
static void unschedulable(const gc_diagnose_input *in, const pod_group *g, gc_diagnosis *d)
{
    const json_t *pod = g->example;
    const json_t *spec = json_object_get(pod, "spec");
    const json_t *selector = json_object_get(spec, "nodeSelector");
    const char *scheduler = gc_kube_string(gc_kube_condition(pod, "PodScheduled"), "message");
    const char *name = gc_kube_field(in->jobset, NULL, "name");
    char pw[64];
    diagnose_set(d, d->state, "Unschedulable");
    diagnose_evidence(d, "pod %s: PodScheduled=False: %s", pod_name(pod),
                      scheduler ? scheduler : "");
    if (!in->nodes) {
        d->wants |= GC_DIAGNOSE_WANT_NODES;
        diagnose_cause(d, "%s cannot be placed on a node: %s", pods_words(g, pw, sizeof(pw)),
                       scheduler ? scheduler : "the scheduler gave no reason");
        diagnose_fix(d, "kubectl describe pod %s", pod_name(pod));
        return;
    }
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)selector, key, value)
    {
        size_t i, with = 0;
        const json_t *node;
        json_array_foreach(in->nodes, i, node) with +=
            node_has(node, key, json_string_value(value));
        if (with)
            continue;
        char others[200];
        values_of(in->nodes, key, others, sizeof(others));
        diagnose_cause(d,
                       "%s ask%s for nodes with %s=%s, and no node has it (the nodes have "
                       "%s)",
                       pods_words(g, pw, sizeof(pw)), s_(g), key, json_string_value(value),
                       others[0] ? others : "no such label");
        if (gc_kube_same(key, "cloud.google.com/gke-nodepool") &&
            gc_kube_same(g->role, GC_PATHWAYS_HEAD)) {
            diagnose_fix(d,
                         "gcluster job cancel %s, then submit again with --pathways-head-np "
                         "set to one of those pools, or create the pool: gcluster deploy "
                         "BLUEPRINT --create-node-pools",
                         name);
        } else if (strstr(key, "gke-tpu")) {
            char shapes[300];
            tpu_shapes(in->nodes, shapes, sizeof(shapes));
            diagnose_fix(d,
                         "gcluster job cancel %s, then submit again with a --compute-type "
                         "(and --topology) the cluster has: %s",
                         name, shapes);
        } else
            diagnose_fix(d,
                         "gcluster job cancel %s, then submit again without the %s=%s node "
                         "selector, or label nodes with it (kubectl label nodes NODE %s=%s)",
                         name, key, json_string_value(value), key, json_string_value(value));
        return;
    }
    char wanted[256], hosts[300];
    selector_words(selector, wanted, sizeof(wanted));
    hosts_words(selector, wanted, hosts, sizeof(hosts));
    size_t matching = 0, cordoned = 0, tainted = 0, i;
    const json_t *node, *taint = NULL;
    json_array_foreach(in->nodes, i, node)
    {
        if (!node_selected(node, spec))
            continue;
        matching++;
        if (json_is_true(json_object_get(json_object_get(node, "spec"), "unschedulable")))
            cordoned++;
        else if (untolerated_taint(node, spec)) {
            taint = untolerated_taint(node, spec);
            tainted++;
        }
    }
    if (!matching) {
        diagnose_cause(d, "%s ask%s for nodes with %s, and no node has all of these",
                       pods_words(g, pw, sizeof(pw)), s_(g), wanted);
        diagnose_fix(d,
                     "gcluster job cancel %s, then submit again with a --compute-type the "
                     "cluster has",
                     name);
        return;
    }
    if (tainted && tainted + cordoned == matching) {
        char taint_text[200];
        gc_kube_taint_words(taint, taint_text, sizeof(taint_text));
        diagnose_cause(d,
                       "%s cannot go on the %zu %s: they carry the taint %s, which the pods do "
                       "not tolerate",
                       pods_words(g, pw, sizeof(pw)), matching, hosts, taint_text);
        diagnose_fix(d,
                     "remove the taint (kubectl taint nodes NODE %s-) or submit from a "
                     "queue whose flavor tolerates it",
                     gc_kube_string(taint, "key"));
        return;
    }
    if (cordoned == matching) {
        diagnose_cause(d, "%s cannot be placed: all %zu %s are cordoned",
                       pods_words(g, pw, sizeof(pw)), matching, hosts);
        diagnose_fix(d, "kubectl uncordon the nodes (kubectl get nodes -l %s)", wanted);
        return;
    }
    holder holders[MAX_HOLDERS];
    size_t usable, holder_count;
    size_t busy = busy_nodes(in, spec, &usable, holders, &holder_count);
    if (busy && busy + g->count > usable) {
        char who[200] = "";
        size_t len = 0;
        for (size_t h = 0; h < holder_count && len < sizeof(who); h++)
            len += (size_t)snprintf(who + len, sizeof(who) - len, "%s%s (%zu host%s)",
                                    h ? ", " : "", holders[h].job, holders[h].hosts,
                                    holders[h].hosts == 1 ? "" : "s");
        char count[64];
        if (busy == usable)
            snprintf(count, sizeof(count), "all %zu", usable);
        else
            snprintf(count, sizeof(count), "%zu of the %zu", busy, usable);
        diagnose_cause(d, "%s wait%s for free hosts: %s %s are busy, held by %s",
                       pods_words(g, pw, sizeof(pw)), s_(g), count, hosts, who);
        diagnose_fix(d, "wait for %s to end, or free its hosts: gcluster job cancel %s",
                     holders[0].job, holders[0].job);
        return;
    }
    diagnose_cause(d, "%s cannot be placed on the %zu %s: %s", pods_words(g, pw, sizeof(pw)),
                   matching, hosts, scheduler ? scheduler : "no reason given");
    diagnose_fix(d, "kubectl describe pod %s", pod_name(pod));
}

bool diagnose_pod_problem(const gc_diagnose_input *in, gc_diagnosis *d)
{
    pod_group pulls = {0}, starts = {0}, unplaced = {0}, gates = {0}, stuck = {0};
    gc_kube_container_state pull = {0}, start = {0};
    size_t i;
    const json_t *pod;
    json_array_foreach(in->pods, i, pod)
    {
        gc_kube_container_state c;
        if (gc_kube_field(pod, NULL, "deletionTimestamp"))
            continue;
        if (gc_kube_each_container(pod, waiting_in, (void *)image_reasons, &c)) {
            if (!pulls.count)
                pull = c;
            count_in(&pulls, pod);
        } else if (gc_kube_each_container(pod, waiting_in, (void *)start_reasons, &c)) {
            if (!starts.count)
                start = c;
            count_in(&starts, pod);
        } else if (gated(pod)) {
            count_in(&gates, pod);
        } else if (unscheduled(pod)) {
            count_in(&unplaced, pod);
        } else if (stuck_creating(in, pod)) {
            count_in(&stuck, pod);
        }
    }
    const char *name = gc_kube_field(in->jobset, NULL, "name");
    char pw[64];
    if (pulls.count) {
        diagnose_set(d, d->state, "ImagePull");
        diagnose_cause(d, "%s cannot pull image %s: %s", pods_words(&pulls, pw, sizeof(pw)),
                       container_image(&pull), pull_words(pull.message));
        if (gc_kube_same(pull_words(pull.message), "access denied"))
            diagnose_fix(d,
                         "let the nodes read the image (grant their service account "
                         "roles/artifactregistry.reader) or pass --image-pull-secret, then "
                         "gcluster job cancel %s and submit again",
                         name);
        else
            diagnose_fix(d,
                         "gcluster job cancel %s, then submit again with %s set to an image "
                         "that exists",
                         name, image_flag(pull.name));
        diagnose_evidence(d, "pod %s: container %s waiting (%s): %s", pod_name(pull.pod), pull.name,
                          pull.reason, pull.message ? pull.message : "");
        return true;
    }
    if (starts.count) {
        diagnose_set(d, d->state, "ContainerError");
        if (gc_kube_same(start.reason, "CrashLoopBackOff"))
            diagnose_cause(
                d, "container %s of %s keeps crashing (restarted %lld times)", start.name,
                pods_words(&starts, pw, sizeof(pw)),
                (long long)json_integer_value(json_object_get(start.status, "restartCount")));
        else
            diagnose_cause(d, "container %s of %s cannot start: %s", start.name,
                           pods_words(&starts, pw, sizeof(pw)),
                           start.message ? start.message : start.reason);
        char flags[96];
        diagnose_logs_flags(start.pod, start.name, flags, sizeof(flags));
        diagnose_fix(d,
                     "gcluster job logs %s%s shows why; kubectl describe pod %s shows the "
                     "node's side",
                     name, flags, pod_name(start.pod));
        diagnose_evidence(d, "pod %s: container %s waiting (%s)", pod_name(start.pod), start.name,
                          start.reason);
        return true;
    }
    if (unplaced.count) {
        unschedulable(in, &unplaced, d);
        return true;
    }
    if (gates.count) {
        const json_t *gate = json_array_get(
            json_object_get(json_object_get(gates.example, "spec"), "schedulingGates"), 0);
        diagnose_set(d, d->state, "Gated");
        diagnose_cause(d, "%s %s held back from scheduling by the gate %s",
                       pods_words(&gates, pw, sizeof(pw)), is_(&gates),
                       gc_kube_string(gate, "name"));
        diagnose_fix(d,
                     "nothing to do while Kueue places them; if it lasts, kubectl describe "
                     "pod %s",
                     pod_name(gates.example));
        return true;
    }
    if (stuck.count) {
        char age[16];
        gc_job_age(
            gc_kube_string(gc_kube_condition(stuck.example, "PodScheduled"), "lastTransitionTime"),
            in->now, age, sizeof(age));
        diagnose_set(d, d->state, "StuckCreating");
        diagnose_cause(d, "%s %s been on %s node%s for %s without starting a container",
                       pods_words(&stuck, pw, sizeof(pw)), stuck.count == 1 ? "has" : "have",
                       stuck.count == 1 ? "its" : "their", stuck.count == 1 ? "" : "s",
                       age[0] ? age : "a while");
        diagnose_fix(d,
                     "kubectl describe pod %s shows what the node waits for (image, volumes, "
                     "network)",
                     pod_name(stuck.example));
        diagnose_evidence(d, "pod %s: Pending on node %s, no container started",
                          pod_name(stuck.example),
                          gc_kube_string(json_object_get(stuck.example, "spec"), "nodeName"));
        return true;
    }
    return false;
}

/* ---- running ---------------------------------------------------------------------------- */

static void restarts_words(const json_t *jobset, char *out, size_t size)
{
    long r = gc_job_restarts(jobset), max = gc_job_max_restarts(jobset);
    if (r)
        snprintf(out, size, "restarted %ld time%s (of at most %ld)", r, r == 1 ? "" : "s", max);
    else
        snprintf(out, size, "no restarts so far (at most %ld)", max);
}

/* The running pods of one replicated job: from the pods, or without them from the JobSet's
 * count of ready Jobs (a Job is ready when all its pods are). */
static long running_in(const gc_diagnose_input *in, const char *rjob, long parallelism)
{
    long running = 0;
    size_t i;
    const json_t *pod, *rs;
    if (in->pods) {
        json_array_foreach(in->pods, i, pod) running +=
            gc_kube_same(gc_job_pod_role(pod), rjob) &&
            gc_kube_same(gc_kube_string(json_object_get(pod, "status"), "phase"), "Running");
        return running;
    }
    json_array_foreach(
        json_object_get(json_object_get(in->jobset, "status"), "replicatedJobsStatus"), i,
        rs) if (gc_kube_same(gc_kube_string(rs, "name"), rjob)) running =
        gc_saturating_add(
            running,
            gc_saturating_mul(json_integer_value(json_object_get(rs, "ready")), parallelism));
    return running;
}

/* "head 1/1, workers 8/8" by replicated job. */
static void per_role(const gc_diagnose_input *in, char *out, size_t size)
{
    size_t len = 0, i;
    const json_t *rjob;
    out[0] = '\0';
    json_array_foreach(json_object_get(json_object_get(in->jobset, "spec"), "replicatedJobs"), i,
                       rjob)
    {
        const char *rname = gc_kube_string(rjob, "name");
        const json_t *job_spec = json_object_get(json_object_get(rjob, "template"), "spec");
        json_int_t replicas = json_integer_value(json_object_get(rjob, "replicas"));
        json_int_t parallelism = json_integer_value(json_object_get(job_spec, "parallelism"));
        long per_job = (long)(parallelism ? parallelism : 1);
        long expected = gc_saturating_mul(replicas ? replicas : 1, per_job);
        long running = running_in(in, rname, per_job);
        const char *label = gc_kube_same(rname, GC_PATHWAYS_HEAD)     ? "head"
                            : gc_kube_same(rname, GC_PATHWAYS_WORKER) ? "workers"
                                                                      : rname;
        if (len < size)
            len += (size_t)snprintf(out + len, size - len, "%s%s %ld/%ld", len ? ", " : "", label,
                                    running, expected);
    }
}

/* What the JobSet controller counts: "JobSet pw: restarts 0 of 1; Jobs ready: pathways-head 1/1,
 * worker 2/2". */
static void jobset_counts(const gc_diagnose_input *in, gc_diagnosis *d)
{
    char ready[256] = "";
    size_t len = 0, i;
    const json_t *rjob;
    json_array_foreach(json_object_get(json_object_get(in->jobset, "spec"), "replicatedJobs"), i,
                       rjob)
    {
        const char *rname = gc_kube_string(rjob, "name");
        json_int_t jobs = 0;
        size_t j;
        const json_t *rs;
        json_array_foreach(
            json_object_get(json_object_get(in->jobset, "status"), "replicatedJobsStatus"), j,
            rs) if (gc_kube_same(gc_kube_string(rs, "name"), rname)) jobs =
            json_integer_value(json_object_get(rs, "ready"));
        json_int_t replicas = json_integer_value(json_object_get(rjob, "replicas"));
        if (len < sizeof(ready))
            len += (size_t)snprintf(ready + len, sizeof(ready) - len, "%s%s %lld/%lld",
                                    len ? ", " : "", rname ? rname : "?", (long long)jobs,
                                    (long long)(replicas ? replicas : 1));
    }
    diagnose_evidence(d, "JobSet %s: restarts %ld of %ld; Jobs ready: %s",
                      gc_kube_field(in->jobset, NULL, "name"), gc_job_restarts(in->jobset),
                      gc_job_max_restarts(in->jobset), ready);
}

void diagnose_running(const gc_diagnose_input *in, gc_diagnosis *d)
{
    jobset_counts(in, d);
    gc_job_facts f;
    gc_job_facts_from_jobset(in->jobset, &f);
    size_t i;
    const json_t *pod;
    json_array_foreach(in->pods, i, pod) gc_job_facts_add_pod(&f, pod);
    if (!in->pods)
        gc_job_facts_add_ready_jobs(&f, in->jobset);
    const char *name = gc_kube_field(in->jobset, NULL, "name");
    char roles[160], again[64];
    per_role(in, roles, sizeof(roles));
    restarts_words(in->jobset, again, sizeof(again));
    long in_place = 0;
    json_array_foreach(in->pods, i, pod)
    {
        static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
        for (size_t l = 0; l < 2; l++) {
            size_t j;
            const json_t *cs;
            json_array_foreach(json_object_get(json_object_get(pod, "status"), lists[l]), j, cs)
                in_place = gc_saturating_add(
                    in_place, json_integer_value(json_object_get(cs, "restartCount")));
        }
    }
    char containers[64] = "";
    if (in_place)
        snprintf(containers, sizeof(containers), "; containers restarted %ld time%s in place",
                 in_place, in_place == 1 ? "" : "s");

    if (d->state == GC_JOB_RESTARTING) {
        const json_t *c = gc_kube_condition(in->jobset, "RestartingJobSet");
        diagnose_set(d, GC_JOB_RESTARTING, "Restarting");
        diagnose_cause(d, "restarting after a failure: restart %ld of at most %ld%s%s",
                       gc_job_restarts(in->jobset), gc_job_max_restarts(in->jobset),
                       gc_kube_string(c, "message") ? " (" : "",
                       gc_kube_string_or(c, "message", ""));
        if (gc_kube_string(c, "message"))
            strncat(d->cause, ")", sizeof(d->cause) - strlen(d->cause) - 1);
        diagnose_fix(d,
                     "nothing to do unless it keeps failing; see why: gcluster job logs %s "
                     "--all",
                     name);
        return;
    }
    int expected = f.pods_expected ? f.pods_expected : f.pods_seen;
    if (f.pods_running >= expected && expected > 0) {
        diagnose_set(d, GC_JOB_RUNNING, "Running");
        diagnose_cause(d, "running: %d/%d pods (%s); %s%s", f.pods_running, expected, roles, again,
                       containers);
        diagnose_fix(d, "nothing to do; follow it with gcluster job logs %s -f", name);
        return;
    }
    diagnose_set(d, d->state, "Starting");
    char created[32] = "";
    if (in->pods)
        snprintf(created, sizeof(created), ", %d created", f.pods_seen);
    diagnose_cause(d, "starting: %d/%d pods running (%s)%s; %s", f.pods_running, expected, roles,
                   created, again);
    diagnose_fix(d, "nothing to do yet; gcluster job inspect %s shows each pod", name);
}
