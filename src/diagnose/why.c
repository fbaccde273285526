/*
 * `job why`: the diagnosis engine's inputs, read in as few round trips as the answer needs.
 *
 *   1. the JobSet, its pods and the namespace's Warning events, together (what `job inspect`
 *      reads anyway);
 *   2. its Kueue Workload, found by the JobSet's UID, and with it, for a failed job, its child
 *      Jobs (they say why it failed after Pathways deleted its pods);
 *   3. only what the engine asks for: the queues (LocalQueues, ClusterQueues, ResourceFlavors,
 *      Workloads) and the nodes with the pods holding them, sent together; then the failed
 *      container's last log lines.
 * A healthy running job stops after 2, as `job inspect` does. Lists are decoded down to the
 * fields the engine and inspect read, and scoped by label or field selectors where the API
 * allows.
 */
#include "diagnose/why.h"

#include "diagnose/diagnosis.h"
#include "gcluster/buf.h"
#include "gcluster/diagnose.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/kueue.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JOBSET_LABEL "jobset.sigs.k8s.io/jobset-name"

/* What the engine and inspect read of each kind (gc_json_load_fields shapes). */
static const char POD_FIELDS[] =
    "{\"metadata\": {\"name\": true, \"namespace\": true, \"labels\": true,"
    "              \"creationTimestamp\": true, \"deletionTimestamp\": true,"
    "              \"ownerReferences\": true},"
    " \"spec\": {\"nodeName\": true, \"nodeSelector\": true, \"tolerations\": true,"
    "          \"affinity\": {\"nodeAffinity\": true}, \"schedulingGates\": true},"
    " \"status\": true}";
static const char JOB_FIELDS[] = "{\"metadata\": {\"name\": true, \"labels\": true},"
                                 " \"status\": {\"conditions\": true}}";
static const char EVENT_FIELDS[] =
    "{\"involvedObject\": {\"kind\": true, \"name\": true}, \"reason\": true, \"message\": true,"
    " \"count\": true, \"lastTimestamp\": true, \"eventTime\": true}";
static const char WORKLOAD_FIELDS[] =
    "{\"metadata\": {\"name\": true, \"namespace\": true, \"uid\": true, \"labels\": true,"
    "              \"creationTimestamp\": true, \"ownerReferences\": true},"
    " \"spec\": true, \"status\": true}";
static const char LOCAL_QUEUE_FIELDS[] =
    "{\"metadata\": {\"name\": true, \"namespace\": true}, \"spec\": true}";
static const char CLUSTER_QUEUE_FIELDS[] =
    "{\"metadata\": {\"name\": true}, \"spec\": true, \"status\": true}";
static const char FLAVOR_FIELDS[] = "{\"metadata\": {\"name\": true}, \"spec\": true}";
static const char NODE_FIELDS[] = "{\"metadata\": {\"name\": true, \"labels\": true},"
                                  " \"spec\": {\"taints\": true, \"unschedulable\": true},"
                                  " \"status\": {\"allocatable\": true}}";
static const char HOLDER_FIELDS[] =
    "{\"metadata\": {\"name\": true, \"namespace\": true, \"labels\": true,"
    "              \"ownerReferences\": true},"
    " \"spec\": {\"nodeName\": true}, \"status\": {\"phase\": true}}";

/* Pods per list request. The reader decodes each pod as it arrives, so the page bounds only the
 * API server's answer (about 12 MB of JSON), not our memory: a job of up to 2,000 pods (32 slices
 * of v6e-256) comes in one request. */
#define POD_PAGE 2000

/* Pods bound to a node and not finished: the ones holding a host. */
#define HOLDING_A_NODE "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"

static json_t *shape(const char *fields)
{
    return json_loads(fields, 0, NULL);
}

static int append_item(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    json_array_append(ctx, item);
    return 0;
}

/* ---- the reads of a round trip ------------------------------------------------------------ */

/* The reads of one round trip, with what they need to stay alive until it is over. */
typedef struct wanted_round {
    gc_kube_read reads[6];
    char *paths[6];
    json_t *fields[6];
    gc_kube_list_options opts[6];
    int want[6]; /* the GC_DIAGNOSE_WANT_* each read serves; 0: the caller checks it */
    size_t count;
    gc_kueue_read kueue[1]; /* reads of Kueue at the version the cluster serves */
    size_t kueue_count;
    const char *kueue_version; /* the version that served them (NULL: none) */
    char selector[300];        /* the job's label selector, for its child Jobs */
} wanted_round;

static void add_list(wanted_round *r, int want, char *path, const char *fields,
                     gc_kube_item_fn on_item, void *ctx)
{
    size_t i = r->count++;
    r->paths[i] = path;
    r->fields[i] = shape(fields);
    r->opts[i].fields = r->fields[i];
    r->want[i] = want;
    r->reads[i] = (gc_kube_read){.path = path, .opts = &r->opts[i], .on_item = on_item, .ctx = ctx};
}

static void wanted_round_free(wanted_round *r)
{
    for (size_t i = 0; i < r->count; i++) {
        free(r->paths[i]);
        json_decref(r->fields[i]);
    }
    gc_kueue_reads_free(r->kueue, r->kueue_count);
}

/* A read the cluster refuses to this user, or does not serve: the diagnosis goes on without
 * it. Anything else (the server or the network failing) is an error. */
static bool refused(const gc_error *err)
{
    return err->http_status == 401 || err->http_status == 403 || err->http_status == 404;
}

static void unreadable(diagnose_why_inputs *in, const char *what, const gc_error *why)
{
    char *line = gc_xasprintf("%s could not be read: %s", what, why->message);
    gc_strings_push(&in->unreadable, line);
    free(line);
}

static void forget_queues(diagnose_why_inputs *in)
{
    json_t **lists[] = {&in->local_queues, &in->cluster_queues, &in->flavors, &in->workloads};
    for (size_t i = 0; i < 4; i++) {
        json_decref(*lists[i]);
        *lists[i] = NULL;
    }
}

static void forget_nodes(diagnose_why_inputs *in)
{
    json_decref(in->nodes);
    json_decref(in->node_pods);
    in->nodes = in->node_pods = NULL;
}

static const char *read_words(int want)
{
    return want == GC_DIAGNOSE_WANT_QUEUES  ? "the queues"
           : want == GC_DIAGNOSE_WANT_NODES ? "the nodes"
                                            : "the child Jobs";
}

/* Sends the round's reads together. A wanted read the cluster refuses leaves that kind of
 * input unknown and says so as evidence (refused child Jobs count as none, so the diagnosis
 * goes on to the log); any other failure of a wanted read is returned. Reads of want 0 are the
 * caller's to check. */
static int send_round(gc_kube *kube, wanted_round *r, diagnose_why_inputs *in, int *refusals,
                      gc_error *err)
{
    if (r->count)
        r->kueue_version =
            gc_kueue_read_all(kube, r->reads, r->count, r->kueue, r->kueue_count, NULL);
    int rc = 0;
    *refusals = 0;
    for (size_t i = 0; i < r->count && !rc; i++) {
        gc_kube_read *read = &r->reads[i];
        if (!r->want[i] || !read->rc || (*refusals & r->want[i]))
            continue;
        if (!refused(&read->err)) {
            *err = read->err;
            rc = read->rc;
        } else {
            *refusals |= r->want[i];
            unreadable(in, read_words(r->want[i]), &read->err);
        }
    }
    if (*refusals & GC_DIAGNOSE_WANT_QUEUES)
        forget_queues(in);
    if (*refusals & GC_DIAGNOSE_WANT_NODES)
        forget_nodes(in);
    if (*refusals & GC_DIAGNOSE_WANT_JOBS)
        json_array_clear(in->jobs);
    return rc;
}

/* The job's child Jobs (by its label), decoded to their names and conditions. */
static void add_job_reads(wanted_round *r, diagnose_why_inputs *in, const char *ns)
{
    const char *name = gc_kube_field(in->jobset, NULL, "name");
    snprintf(r->selector, sizeof(r->selector), JOBSET_LABEL "=%s", name ? name : "");
    json_decref(in->jobs);
    in->jobs = json_array();
    size_t i = r->count;
    add_list(r, GC_DIAGNOSE_WANT_JOBS, gc_kube_path("batch", "v1", ns, "jobs", NULL), JOB_FIELDS,
             append_item, in->jobs);
    r->opts[i].label_selector = r->selector;
}

/* ---- 1 and 2: the job itself ------------------------------------------------------------ */

/* What the engine will ask for besides the Workload: the JobSet alone says whether the job
 * failed, and so whether its child Jobs are wanted (the pods are left out, so this look costs
 * nothing per pod; a failure its pods show to be a disruption reads the Jobs in vain, one small
 * list in a round trip made anyway). */
static int first_wants(const diagnose_why_inputs *in)
{
    gc_diagnose_input din = {.jobset = in->jobset};
    gc_diagnosis d;
    diagnose_job(&din, &d);
    return d.wants;
}

/* Round 2: the Workload, found by the JobSet's UID (at the Kueue version the cluster serves: an
 * older Kueue costs one more request; none: no Kueue), with the child Jobs when the engine will
 * want them. */
static int read_workload(gc_kube *kube, diagnose_why_inputs *in, gc_error *err)
{
    const char *uid = gc_kube_field(in->jobset, NULL, "uid");
    char selector[128];
    snprintf(selector, sizeof(selector), "kueue.x-k8s.io/job-uid=%s", uid ? uid : "");
    wanted_round r = {0};
    json_t *items = json_array();
    add_list(&r, 0, NULL, WORKLOAD_FIELDS, append_item, items);
    r.opts[0].label_selector = selector;
    r.kueue[r.kueue_count++] =
        (gc_kueue_read){.index = 0, .ns = gc_kube_namespace(kube), .resource = "workloads"};
    if (!(in->tried & GC_DIAGNOSE_WANT_JOBS) && (first_wants(in) & GC_DIAGNOSE_WANT_JOBS)) {
        in->tried |= GC_DIAGNOSE_WANT_JOBS;
        add_job_reads(&r, in, gc_kube_namespace(kube));
    }
    int refusals;
    int rc = send_round(kube, &r, in, &refusals, err);
    const gc_kube_read *workload = &r.reads[0];
    if (!rc && !workload->rc) {
        in->kueue_version = r.kueue_version;
        if (json_array_size(items))
            in->workload = json_incref(json_array_get(items, json_array_size(items) - 1));
    } else if (!rc && !gc_kueue_not_served(workload)) {
        *err = workload->err; /* not a Kueue that is missing: the server failed */
        rc = workload->rc;
    }
    json_decref(items);
    wanted_round_free(&r);
    return rc;
}

static const char *involved_name(const json_t *event)
{
    return json_string_value(json_object_get(json_object_get(event, "involvedObject"), "name"));
}

/* Whether `object` is the JobSet NAME, one of its Jobs (NAME-RJOB-INDEX) or one of their pods
 * (NAME-RJOB-INDEX-...): after NAME- comes a replicated job's name and a digit, so the objects of
 * a job named NAME-2 are not NAME's. */
static bool names_job_object(const char *object, const char *name, const json_t *jobset)
{
    size_t n = strlen(name);
    if (!strcmp(object, name))
        return true;
    if (strncmp(object, name, n) || object[n] != '-')
        return false;
    const char *rest = object + n + 1;
    size_t i;
    const json_t *rjob;
    json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i, rjob)
    {
        const char *role = gc_kube_string(rjob, "name");
        size_t m = role ? strlen(role) : 0;
        if (m && !strncmp(rest, role, m) && rest[m] == '-' && isdigit((unsigned char)rest[m + 1]))
            return true;
    }
    return false;
}

/* While the namespace's Warning events stream in (the JobSet is read in the same round trip),
 * only those that can be about the job are kept: NAME, NAME-*, or a Workload, which Kueue names
 * jobset-NAME-HASH; so memory follows the job, not the namespace. keep_job_warnings then keeps
 * the job's own, once the JobSet and its Workload are known. */
typedef struct job_events {
    const char *name;
    char name_prefix[300];     /* "NAME-" */
    char workload_prefix[300]; /* "jobset-NAME-" */
    json_t *kept;
} job_events;

static int keep_if_about_job(json_t *event, void *ctx, gc_error *err)
{
    (void)err;
    job_events *e = ctx;
    const char *object = involved_name(event);
    if (object &&
        (!strcmp(object, e->name) || !strncmp(object, e->name_prefix, strlen(e->name_prefix)) ||
         !strncmp(object, e->workload_prefix, strlen(e->workload_prefix))))
        json_array_append(e->kept, event);
    return 0;
}

static void keep_job_warnings(const json_t *events, const char *name, diagnose_why_inputs *in)
{
    const char *workload = in->workload ? gc_kube_field(in->workload, NULL, "name") : NULL;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        const char *object = involved_name(e);
        if (object &&
            (names_job_object(object, name, in->jobset) || (workload && !strcmp(object, workload))))
            json_array_append(in->warnings, e);
    }
}

int diagnose_why_read_job(gc_kube *kube, const char *name, diagnose_why_inputs *in, gc_error *err)
{
    memset(in, 0, sizeof(*in));
    in->pods = json_array();
    in->warnings = json_array();
    const char *ns = gc_kube_namespace(kube);
    char *pods_path = gc_kube_path(NULL, "v1", ns, "pods", NULL);
    char *events_path = gc_kube_path(NULL, "v1", ns, "events", NULL);
    char selector[300];
    snprintf(selector, sizeof(selector), JOBSET_LABEL "=%s", name);
    json_t *pod_fields = shape(POD_FIELDS), *event_fields = shape(EVENT_FIELDS);
    gc_kube_list_options pods = {
        .label_selector = selector, .fields = pod_fields, .page_size = POD_PAGE};
    gc_kube_list_options warnings = {.field_selector = "type=Warning", .fields = event_fields};
    json_t *events = json_array();
    job_events candidates = {.name = name, .kept = events};
    snprintf(candidates.name_prefix, sizeof(candidates.name_prefix), "%s-", name);
    snprintf(candidates.workload_prefix, sizeof(candidates.workload_prefix), "jobset-%s-", name);
    gc_kube_read reads[] = {
        {.path = pods_path, .opts = &pods, .on_item = append_item, .ctx = in->pods},
        {.path = events_path, .opts = &warnings, .on_item = keep_if_about_job, .ctx = &candidates},
    };
    int rc = gc_job_find_jobset_with(kube, name, &in->jobset, reads, 2, err);
    if (!rc)
        rc = read_workload(kube, in, err);
    if (!rc)
        keep_job_warnings(events, name, in);
    json_decref(events);
    json_decref(pod_fields);
    json_decref(event_fields);
    free(pods_path);
    free(events_path);
    return rc;
}

/* ---- 3: what the engine asks for -------------------------------------------------------- */

/* The pods holding nodes, except the job's own (the engine asks who else holds a host). */
typedef struct holders {
    json_t *into;
    const char *ns;
    const char *name;
} holders;

static int keep_holder(json_t *pod, void *ctx, gc_error *err)
{
    (void)err;
    holders *h = ctx;
    bool own = gc_kube_same(gc_kube_field(pod, NULL, "namespace"), h->ns) &&
               gc_kube_same(gc_kube_field(pod, "labels", JOBSET_LABEL), h->name);
    if (!own)
        json_array_append(h->into, pod);
    return 0;
}

/* The queue lists, empty: what the engine reads as "no queues" once they are known. */
static void new_queue_lists(diagnose_why_inputs *in)
{
    in->local_queues = json_array();
    in->cluster_queues = json_array();
    in->flavors = json_array();
    in->workloads = json_array();
}

static void add_queue_reads(wanted_round *r, diagnose_why_inputs *in)
{
    new_queue_lists(in);
    const struct {
        const char *resource;
        const char *fields;
        json_t *into;
    } lists[] = {
        {"localqueues", LOCAL_QUEUE_FIELDS, in->local_queues},
        {"clusterqueues", CLUSTER_QUEUE_FIELDS, in->cluster_queues},
        {"resourceflavors", FLAVOR_FIELDS, in->flavors},
        {"workloads", WORKLOAD_FIELDS, in->workloads},
    };
    for (size_t i = 0; i < sizeof(lists) / sizeof(*lists); i++)
        add_list(r, GC_DIAGNOSE_WANT_QUEUES,
                 gc_kueue_path(in->kueue_version, NULL, lists[i].resource, NULL), lists[i].fields,
                 append_item, lists[i].into);
}

static void add_node_reads(wanted_round *r, diagnose_why_inputs *in, holders *h)
{
    in->nodes = json_array();
    in->node_pods = json_array();
    add_list(r, GC_DIAGNOSE_WANT_NODES, gc_kube_path(NULL, "v1", NULL, "nodes", NULL), NODE_FIELDS,
             append_item, in->nodes);
    *h = (holders){.into = in->node_pods,
                   .ns = gc_kube_field(in->jobset, NULL, "namespace"),
                   .name = gc_kube_field(in->jobset, NULL, "name")};
    size_t i = r->count;
    add_list(r, GC_DIAGNOSE_WANT_NODES, gc_kube_path(NULL, "v1", NULL, "pods", NULL), HOLDER_FIELDS,
             keep_holder, h);
    r->opts[i].label_selector = JOBSET_LABEL;
    r->opts[i].field_selector = HOLDING_A_NODE;
}

/* The queues, the nodes and the child Jobs, as wanted, in one round trip. */
static int read_lists(gc_kube *kube, diagnose_why_inputs *in, int want, gc_error *err)
{
    wanted_round r = {0};
    holders h;
    bool queues = want & GC_DIAGNOSE_WANT_QUEUES;
    if (queues && !in->kueue_version) { /* no Kueue: there are no queues, nothing to ask */
        new_queue_lists(in);
        in->queues_read = true;
        queues = false;
    }
    if (queues)
        add_queue_reads(&r, in);
    if (want & GC_DIAGNOSE_WANT_NODES)
        add_node_reads(&r, in, &h);
    if (want & GC_DIAGNOSE_WANT_JOBS)
        add_job_reads(&r, in, gc_kube_namespace(kube));
    int refusals;
    int rc = send_round(kube, &r, in, &refusals, err);
    if (queues && !(refusals & GC_DIAGNOSE_WANT_QUEUES))
        in->queues_read = true;
    wanted_round_free(&r);
    return rc;
}

static int collect_line(size_t index, const char *line, size_t len, void *ctx)
{
    (void)index;
    gc_buf *tail = ctx;
    gc_buf_append(tail, line, len);
    gc_buf_putc(tail, '\n');
    return 0;
}

/* The failed container's last lines; a pod that is gone leaves the log out. */
static void read_log_tail(gc_kube *kube, diagnose_why_inputs *in, const gc_diagnosis *d)
{
    gc_kube_log_source source = {.pod = d->log_pod, .container = d->log_container};
    gc_kube_log_options opts = {.tail_lines = GC_DIAGNOSIS_LOG_LINES};
    gc_buf tail;
    gc_buf_init(&tail);
    gc_error err = {0};
    if (gc_kube_logs(kube, &source, 1, &opts, collect_line, NULL, &tail, &err)) {
        char *what = gc_xasprintf("the log of %s/%s", d->log_pod, d->log_container);
        unreadable(in, what, &err);
        free(what);
        gc_buf_free(&tail);
        return;
    }
    in->log_tail = gc_buf_detach(&tail);
}

static void engine_input(const diagnose_why_inputs *in, long long now, gc_diagnose_input *out)
{
    *out = (gc_diagnose_input){
        .jobset = in->jobset,
        .workload = in->workload,
        .pods = in->pods,
        .jobs = in->jobs,
        .events = in->warnings,
        .queues_read = in->queues_read,
        .local_queues = in->local_queues,
        .cluster_queues = in->cluster_queues,
        .flavors = in->flavors,
        .workloads = in->workloads,
        .nodes = in->nodes,
        .node_pods = in->node_pods,
        .log_tail = in->log_tail,
        .now = now,
    };
}

int diagnose_why_diagnose(gc_kube *kube, diagnose_why_inputs *in, long long now, gc_diagnosis *out,
                          gc_error *err)
{
    gc_diagnose_input din;
    engine_input(in, now, &din);
    diagnose_job(&din, out);
    /* Each kind of read at most once: the answer may ask for another kind after a read. */
    int rc = 0;
    for (int want = out->wants & ~in->tried; want && !rc; want = out->wants & ~in->tried) {
        in->tried |= want;
        rc = read_lists(
            kube, in,
            want & (GC_DIAGNOSE_WANT_QUEUES | GC_DIAGNOSE_WANT_NODES | GC_DIAGNOSE_WANT_JOBS), err);
        if (!rc && (want & GC_DIAGNOSE_WANT_LOG) && out->log_pod[0])
            read_log_tail(kube, in, out);
        engine_input(in, now, &din);
        diagnose_job(&din, out);
    }
    for (size_t i = 0; i < in->unreadable.count; i++)
        diagnose_evidence(out, "%s", in->unreadable.items[i]);
    return rc;
}

void diagnose_why_inputs_free(diagnose_why_inputs *in)
{
    json_decref(in->jobset);
    json_decref(in->workload);
    json_decref(in->pods);
    json_decref(in->jobs);
    json_decref(in->warnings);
    forget_queues(in);
    forget_nodes(in);
    free(in->log_tail);
    gc_strings_free(&in->unreadable);
    memset(in, 0, sizeof(*in));
}

int gc_job_why(gc_kube *kube, const char *name, gc_diagnosis *out, gc_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = gc_job_name_check(name, err);
    if (rc)
        return rc;
    diagnose_why_inputs in;
    rc = diagnose_why_read_job(kube, name, &in, err);
    if (!rc)
        rc = diagnose_why_diagnose(kube, &in, (long long)time(NULL), out, err);
    diagnose_why_inputs_free(&in);
    /* No JobSet of that name: it may be a Shared Pathways Service client's proxy Job. */
    gc_error sps_err = {0};
    if (rc && err->http_status == 404 && diagnose_why_sps_client(kube, name, out, &sps_err) == 0)
        rc = 0;
    return rc;
}
