/*
 * `job submit` against a cluster, through gc_submit_prepare, gc_submit_live and gc_submit_await
 * and through the real binary, with a scripted loopback API server answering the pre-flight
 * reads and the POST as a real one would. The tests read the returned result, the events and
 * every request that was sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/submit.h"
#include "job_test.h"
#include "kube_test.h"
#include "run_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS             "ns1"
#define JOBSETS        JT_JOBSETS
#define LOCAL_QUEUES   "/apis/kueue.x-k8s.io/v1beta2/namespaces/" NS "/localqueues"
#define CLUSTER_QUEUES "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
#define PRIORITIES     "/apis/scheduling.k8s.io/v1/priorityclasses"
#define FLAVORS        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors"
#define JOBS           "/apis/batch/v1/namespaces/" NS "/jobs"
#define NODES          "/api/v1/nodes"
#define POOL_LABEL     "cloud.google.com/gke-nodepool"
#define ACCELERATOR    "cloud.google.com/gke-tpu-accelerator"
#define TOPOLOGY       "cloud.google.com/gke-tpu-topology"
#define IMAGE          "us-docker.pkg.dev/p/r/jax:1"

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

/* The cluster */

static json_t *named(const char *name)
{
    return json_pack("{s:{s:s}}", "metadata", "name", name);
}

static json_t *local_queue(const char *name, const char *cluster_queue)
{
    json_t *q = named(name);
    json_object_set_new(q, "spec", json_pack("{s:s}", "clusterQueue", cluster_queue));
    return q;
}

/* A ResourceFlavor selecting nodes by one label ("key=value"), or any node (NULL). */
static json_t *flavor(const char *name, const char *label)
{
    json_t *labels = json_object();
    if (label) {
        const char *eq = strchr(label, '=');
        char *key = strndup(label, (size_t)(eq - label));
        json_object_set_new(labels, key, json_string(eq + 1));
        free(key);
    }
    json_t *f = named(name);
    json_object_set_new(f, "spec", json_pack("{s:o}", "nodeLabels", labels));
    return f;
}

#define HEAD_FLAVOR_LABEL POOL_LABEL "=cpu-np"
#define TPU_FLAVOR_LABEL  "cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice"

/* What gcluster deploy and testenv make: pathways-flavor on cpu-np, tpu-flavor on v6e hosts. */
static json_t *deploy_flavors(void)
{
    return json_pack("[o, o]", flavor("pathways-flavor", HEAD_FLAVOR_LABEL),
                     flavor("tpu-flavor", TPU_FLAVOR_LABEL));
}

/* One flavor's quotas in a resource group: "google.com/tpu=32 cpu=480 memory=2000G". */
static json_t *flavor_quotas(const char *name, const char *quotas)
{
    json_t *resources = json_array();
    char *copy = strdup(quotas);
    for (char *save, *q = strtok_r(copy, " ", &save); q; q = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(q, '=');
        *eq = '\0';
        json_array_append_new(resources,
                              json_pack("{s:s, s:s}", "name", q, "nominalQuota", eq + 1));
    }
    free(copy);
    return json_pack("{s:s, s:o}", "name", name, "resources", resources);
}

/* A resource group covering `covered` ("cpu memory") with these flavors (stolen). */
static json_t *group(const char *covered, json_t *flavors)
{
    json_t *list = json_array();
    char *copy = strdup(covered);
    for (char *save, *r = strtok_r(copy, " ", &save); r; r = strtok_r(NULL, " ", &save))
        json_array_append_new(list, json_string(r));
    free(copy);
    return json_pack("{s:o, s:o}", "coveredResources", list, "flavors", flavors);
}

static json_t *cluster_queue(const char *name, json_t *groups)
{
    json_t *q = named(name);
    json_object_set_new(q, "spec", json_pack("{s:o}", "resourceGroups", groups));
    return q;
}

#define UNIFIED "google.com/tpu cpu memory"

/* gcluster deploy's ClusterQueue: one group for TPUs, cpu and memory, with `tpu` chips. */
static json_t *unified_queue(const char *tpu)
{
    char *tpu_quotas = gc_xasprintf("google.com/tpu=%s cpu=10000 memory=100Ti", tpu);
    json_t *q = cluster_queue(
        "cluster-queue",
        json_pack("[o]", group(UNIFIED, json_pack("[o, o]",
                                                  flavor_quotas("pathways-flavor",
                                                                "google.com/tpu=0 cpu=480 "
                                                                "memory=2000G"),
                                                  flavor_quotas("tpu-flavor", tpu_quotas)))));
    free(tpu_quotas);
    return q;
}

/* xpk's and earlier Cluster Toolkit releases': google.com/tpu in one group, cpu and memory in
 * another, on the head pool's flavor. */
static json_t *split_queue(void)
{
    return cluster_queue(
        "cluster-queue",
        json_pack("[o, o]",
                  group("google.com/tpu",
                        json_pack("[o]", flavor_quotas("tpu-flavor", "google.com/tpu=999999"))),
                  group("cpu memory", json_pack("[o]", flavor_quotas("pathways-flavor",
                                                                     "cpu=480 memory=2000G")))));
}

/* `count` nodes of one pool; accelerator and topology NULL for CPU nodes. */
static void add_nodes(json_t *nodes, const char *pool, int count, const char *machine,
                      const char *accelerator, const char *topology)
{
    for (int i = 0; i < count; i++) {
        char name[96];
        snprintf(name, sizeof(name), "%s-%d", pool, i);
        json_t *labels =
            json_pack("{s:s, s:s}", POOL_LABEL, pool, "node.kubernetes.io/instance-type", machine);
        if (accelerator)
            json_object_set_new(labels, "cloud.google.com/gke-tpu-accelerator",
                                json_string(accelerator));
        if (topology)
            json_object_set_new(labels, "cloud.google.com/gke-tpu-topology", json_string(topology));
        json_array_append_new(
            nodes, json_pack("{s:{s:s, s:o}}", "metadata", "name", name, "labels", labels));
    }
}

/* A node in the head pool cpu-np, the start of most clusters here. */
static json_t *head_node(void)
{
    json_t *nodes = json_array();
    add_nodes(nodes, "cpu-np", 1, "n4-standard-64", NULL, NULL);
    return nodes;
}

/* The default cluster: a head pool, two v6e 4x4 slices, user-queue on a unified ClusterQueue. */
static json_t *v6e_nodes(void)
{
    json_t *nodes = head_node();
    add_nodes(nodes, "tpu-np-0", 4, "ct6e-standard-4t", "tpu-v6e-slice", "4x4");
    add_nodes(nodes, "tpu-np-1", 4, "ct6e-standard-4t", "tpu-v6e-slice", "4x4");
    return nodes;
}

/* The label selectors a submit may send for these nodes, each with the nodes it selects: a pool's,
 * an accelerator's (any value, or one) and an accelerator's with a topology. */
static json_t *nodes_by_selector(const json_t *nodes)
{
    json_t *by = json_object();
    size_t i;
    const json_t *node;
    json_array_foreach(nodes, i, node)
    {
        const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
        const char *pool = json_string_value(json_object_get(labels, POOL_LABEL));
        const char *accelerator = json_string_value(json_object_get(labels, ACCELERATOR));
        const char *topology = json_string_value(json_object_get(labels, TOPOLOGY));
        char *keys[4] = {gc_xasprintf("%s=%s", POOL_LABEL, pool), NULL, NULL, NULL};
        if (accelerator) {
            keys[1] = gc_xstrdup(ACCELERATOR);
            keys[2] = gc_xasprintf("%s=%s", ACCELERATOR, accelerator);
            if (topology)
                keys[3] = gc_xasprintf("%s=%s,%s=%s", ACCELERATOR, accelerator, TOPOLOGY, topology);
        }
        for (size_t k = 0; k < 4 && keys[k]; k++) {
            if (!json_object_get(by, keys[k]))
                json_object_set_new(by, keys[k], json_array());
            json_array_append(json_object_get(by, keys[k]), (json_t *)node);
            free(keys[k]);
        }
    }
    return by;
}

/* A repeated answer of `object` (stolen), after `hold` seconds (0: at once). */
static void answer_held(const char *method_path, json_t *object, double hold)
{
    char *data = json_dumps(object, JSON_COMPACT);
    jt_answer(method_path,
              json_pack("{s:b, s:{s:s}, s:[{s:s, s:f}]}", "repeat", 1, "headers", "Content-Type",
                        "application/json", "chunks", "data", data, "delay", hold));
    free(data);
    json_decref(object);
}

/* The nodes (stolen) as the API server lists them for each label selector, after `hold` seconds
 * (0: at once); any other selector selects none. The job's namespace exists and JobSet's API is
 * served (submit reads both in the same round, so they are held as long: an answer sent before
 * the rest of the batch has arrived would end the round early). */
static void serve_nodes_held(json_t *nodes, double hold)
{
    answer_held("GET /api/v1/namespaces/" NS, named(NS), hold);
    answer_held(
        "GET /apis/jobset.x-k8s.io",
        json_pack("{s:s, s:[{s:s}]}", "kind", "APIGroup", "versions", "version", "v1alpha2"), hold);
    json_t *by = nodes_by_selector(nodes);
    json_object_set_new(by, "", json_array());
    const char *selector;
    json_t *items;
    json_object_foreach(by, selector, items)
    {
        json_t *list = json_pack("{s:s, s:s, s:{s:s}, s:O}", "kind", "NodeList", "apiVersion", "v1",
                                 "metadata", "resourceVersion", "10", "items", items);
        char *data = json_dumps(list, JSON_COMPACT);
        json_t *when = json_pack("{s:n}", "watch");
        if (*selector)
            json_object_set_new(when, "labelSelector", json_string(selector));
        jt_answer("GET " NODES,
                  json_pack("{s:o, s:b, s:{s:s}, s:[{s:s, s:f}]}", "when", when, "repeat", 1,
                            "headers", "Content-Type", "application/json", "chunks", "data", data,
                            "delay", hold));
        free(data);
        json_decref(list);
    }
    json_decref(by);
    json_decref(nodes);
}

static void serve_nodes(json_t *nodes)
{
    serve_nodes_held(nodes, 0);
}

/* The API server's answer to the dry runs of the Jobs the JobSet controller will create. */
static void serve_job_dry_runs(void)
{
    jt_answer("POST " JOBS,
              json_pack("{s:i, s:{s:s}, s:b}", "status", 201, "json", "kind", "Job", "repeat", 1));
}

/* Scripts the pre-flight reads (LocalQueues, ClusterQueues, ResourceFlavors and nodes, all
 * stolen) and the Jobs' dry runs. */
static void serve_cluster_with(json_t *local_queues, json_t *cluster_queues, json_t *flavors,
                               json_t *nodes)
{
    jt_list(LOCAL_QUEUES, "LocalQueueList", local_queues);
    jt_list(CLUSTER_QUEUES, "ClusterQueueList", cluster_queues);
    jt_list(FLAVORS, "ResourceFlavorList", flavors);
    serve_nodes(nodes);
    serve_job_dry_runs();
}

static void serve_cluster(json_t *local_queues, json_t *cluster_queues, json_t *nodes)
{
    serve_cluster_with(local_queues, cluster_queues, deploy_flavors(), nodes);
}

/* One LocalQueue on ClusterQueue `cq` (stolen), deploy's flavors and these nodes (stolen). */
static void serve_one_queue(const char *queue, json_t *cq, json_t *nodes)
{
    serve_cluster(json_pack("[o]", local_queue(queue, "cluster-queue")), json_pack("[o]", cq),
                  nodes);
}

static void serve_default_cluster(void)
{
    serve_one_queue("user-queue", unified_queue("64"), v6e_nodes());
}

/* The API server's answer to the POST: 201 with the created object. */
static void serve_created(const char *name)
{
    jt_answer("POST " JOBSETS, json_pack("{s:i, s:o}", "status", 201, "json", jt_jobset(name, 2)));
}

/* The submit */

static gc_submit_request pathways_request(void)
{
    gc_submit_request r;
    gc_submit_request_defaults(&r);
    r.name = "pw-test";
    r.compute_type = "v6e-16";
    r.num_slices = 2;
    r.pathways = true;
    r.pathways_gcs_location = "gs://bucket/scratch";
    r.command = "python train.py";
    r.image = IMAGE;
    return r;
}

typedef struct outcome {
    int rc;
    gc_error err;
    gc_submit_plan plan;
    gc_submit_result result;
    unsigned requests;
} outcome;

static void run_submit(outcome *o, const gc_submit_request *r)
{
    memset(o, 0, sizeof(*o));
    if (gc_submit_prepare(r, &o->plan, &o->err))
        fail_msg("prepare: %s", o->err.message);
    o->rc = gc_submit_live(jt_kube(), &o->plan, jt_events(), &o->result, &o->err);
    if (!o->rc && o->plan.await_completion)
        o->rc = gc_submit_await(jt_kube(), &o->plan, jt_events(), &o->result, &o->err);
    o->requests = gc_kube_request_count(jt_kube());
}

static void outcome_free(outcome *o)
{
    gc_submit_result_free(&o->result);
    gc_submit_plan_free(&o->plan);
}

/* What was sent */

static const char *field(const json_t *req, const char *key)
{
    return json_string_value(json_object_get(req, key));
}

static size_t count_requests(const json_t *log, const char *method, const char *path)
{
    size_t n = 0, i;
    const json_t *req;
    json_array_foreach(log, i, req) n +=
        !strcmp(field(req, "method"), method) && (!path || !strcmp(field(req, "path"), path));
    return n;
}

static const char *param(const json_t *req, const char *key)
{
    return json_string_value(json_object_get(json_object_get(req, "params"), key));
}

static json_t *body_of(const json_t *req)
{
    json_error_t error;
    json_t *body = json_loads(field(req, "body"), 0, &error);
    if (!body)
        fail_msg("%s %s: the body is not JSON: %s", field(req, "method"), field(req, "path"),
                 error.text);
    return body;
}

/* The JobSet POSTed (the last one, dry run or not; decref it). */
static json_t *posted_jobset(const json_t *log)
{
    for (size_t i = json_array_size(log); i-- > 0;) {
        const json_t *req = json_array_get(log, i);
        if (!strcmp(field(req, "method"), "POST") && !strcmp(field(req, "path"), JOBSETS))
            return body_of(req);
    }
    fail_msg("no JobSet was POSTed");
    return NULL;
}

/* The Job dry-run for replicated job `rjob` (decref it). */
static json_t *dry_run_job(const json_t *log, const char *rjob)
{
    size_t i;
    const json_t *req;
    json_array_foreach(log, i, req)
    {
        if (strcmp(field(req, "method"), "POST") || strcmp(field(req, "path"), JOBS))
            continue;
        assert_string_equal(param(req, "dryRun"), "All");
        assert_string_equal(param(req, "fieldValidation"), "Strict");
        json_t *job = body_of(req);
        const char *name = json_string_value(
            json_object_get(json_object_get(json_object_get(job, "metadata"), "labels"),
                            "jobset.sigs.k8s.io/replicatedjob-name"));
        if (name && !strcmp(name, rjob))
            return job;
        json_decref(job);
    }
    fail_msg("no dry run of the %s Job", rjob);
    return NULL;
}

static const json_t *replicated_job(const json_t *jobset, const char *name)
{
    size_t i;
    const json_t *rj;
    json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i, rj)
    {
        if (!strcmp(json_string_value(json_object_get(rj, "name")), name))
            return rj;
    }
    fail_msg("no replicated job %s", name);
    return NULL;
}

/* The pod spec of a Job or of a replicated job's Job template. */
static const json_t *job_pod_spec(const json_t *job)
{
    return json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "spec");
}

static const json_t *pod_spec(const json_t *rj)
{
    return job_pod_spec(json_object_get(rj, "template"));
}

static const char *head_pool_of(const json_t *jobset)
{
    return json_string_value(json_object_get(
        json_object_get(pod_spec(replicated_job(jobset, "pathways-head")), "nodeSelector"),
        POOL_LABEL));
}

static const char *queue_label_of(const json_t *jobset)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(jobset, "metadata"), "labels"),
                        "kueue.x-k8s.io/queue-name"));
}

/* The resources of a pod spec's first container (of `list`: "containers", "initContainers"), as
 * compact JSON (caller frees). */
static char *resources_in(const json_t *spec, const char *list)
{
    const json_t *resources =
        json_object_get(json_array_get(json_object_get(spec, list), 0), "resources");
    if (!resources)
        fail_msg("the first of the %s has no resources", list);
    return json_dumps(resources, JSON_COMPACT | JSON_SORT_KEYS);
}

static char *resources_of(const json_t *spec)
{
    return resources_in(spec, "containers");
}

/* Library tests */

/* Answers `method_path` with `body` (stolen) after a short hold, `times` times: requests sent
 * together with it arrive while it is held. */
static void held(const char *method_path, int status, json_t *body, int times)
{
    char *data = json_dumps(body, JSON_COMPACT);
    for (int i = 0; i < times; i++)
        jt_answer(method_path, json_pack("{s:i, s:{s:s}, s:[{s:s, s:f}]}", "status", status,
                                         "headers", "Content-Type", "application/json", "chunks",
                                         "data", data, "delay", 0.3));
    free(data);
    json_decref(body);
}

static json_t *list_of(const char *kind, json_t *items)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:o}", "kind", kind, "apiVersion", "v1", "metadata",
                     "resourceVersion", "10", "items", items);
}

/* The default cluster's Kueue lists (user-queue, unified ClusterQueue, the deploy flavors), each
 * answered after a hold, so the requests of one batch arrive while they are held. */
static void held_default_queues(void)
{
    held("GET " LOCAL_QUEUES, 200,
         list_of("LocalQueueList", json_pack("[o]", local_queue("user-queue", "cluster-queue"))),
         1);
    held("GET " CLUSTER_QUEUES, 200,
         list_of("ClusterQueueList", json_pack("[o]", unified_queue("64"))), 1);
    held("GET " FLAVORS, 200, list_of("ResourceFlavorList", deploy_flavors()), 1);
}

/* Requests that arrived while no other was being answered: each starts a round trip, when every
 * answer is held long enough for the rest of its batch to arrive meanwhile. */
static size_t round_trips(const json_t *log)
{
    size_t n = 0, i;
    const json_t *req;
    json_array_foreach(log, i, req) n += json_integer_value(json_object_get(req, "in_flight")) == 1;
    return n;
}

static int by_text(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The nodes read, by the label selectors sent: "selector limit=N [metadata]" each, sorted (the
 * reads go out together, in no fixed order). */
static char *node_reads(const json_t *log)
{
    char *reads[16];
    size_t n = 0, i;
    const json_t *req;
    json_array_foreach(log, i, req)
    {
        if (strcmp(field(req, "path"), NODES) != 0 || n == 16)
            continue;
        const char *accept =
            json_string_value(json_object_get(json_object_get(req, "headers"), "accept"));
        reads[n++] = gc_xasprintf(
            "%s limit=%s%s", param(req, "labelSelector"), param(req, "limit"),
            accept && strstr(accept, "as=PartialObjectMetadataList") ? " metadata" : "");
    }
    qsort(reads, n, sizeof(*reads), by_text);
    gc_buf b;
    gc_buf_init(&b);
    for (i = 0; i < n; i++) {
        gc_buf_printf(&b, "%s%s", i ? "; " : "", reads[i]);
        free(reads[i]);
    }
    return gc_buf_detach(&b);
}

/* Eight reads together (JobSet's API group, the namespace, the Kueue lists, the nodes of the
 * workers' shape and one node of each pool the head may go to), then the two Jobs' dry runs
 * together, then the POST: eleven requests in three round trips. Whether JobSet and Kueue are
 * installed costs no round trip of its own: JobSet's group is read with the rest, and Kueue's
 * LocalQueue list says whether Kueue is served. */
static void pathways_job_is_created_in_three_round_trips(void **state)
{
    (void)state;
    held_default_queues();
    serve_nodes_held(v6e_nodes(), 0.3);
    held("POST " JOBS, 201, json_pack("{s:s}", "kind", "Job"), 2);
    held("POST " JOBSETS, 201, jt_jobset("pw-test", 2), 1);
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);

    const gc_submit_result *res = &o.result;
    assert_string_equal(res->name, "pw-test");
    assert_string_equal(res->ns, NS);
    assert_string_equal(res->queue, "user-queue");
    assert_string_equal(res->compute, "v6e-16");
    assert_int_equal(res->num_slices, 2);
    assert_int_equal(res->pathways, GC_PATHWAYS_FULL);
    assert_string_equal(res->head_pool, "cpu-np");
    assert_string_equal(res->image, IMAGE);
    assert_false(res->dry_run);
    assert_null(res->tpu_requests_note);
    assert_int_equal(res->warnings.count, 0);
    assert_string_equal(jt_recorded(), "");
    assert_int_equal(res->next_count, 2);
    assert_string_equal(res->next[0].command, "gcluster job inspect pw-test");
    assert_string_equal(res->next[1].command, "gcluster job logs pw-test -f");
    assert_false(res->awaited);

    json_t *log = jt_requests();
    assert_int_equal(json_array_size(log), 11);
    assert_int_equal(o.requests, 11);
    assert_int_equal(round_trips(log), 3);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 3);
    assert_int_equal(count_requests(log, "GET", "/apis/jobset.x-k8s.io"), 1);
    assert_int_equal(count_requests(log, "GET", "/apis/kueue.x-k8s.io"), 0);
    for (size_t i = 0; i < 8; i++)
        assert_string_equal(field(json_array_get(log, i), "method"), "GET");
    /* Only the nodes the job needs, never the cluster's: 2 slices x 4 hosts of v6e 4x4, and one
     * node of each head pool candidate; labels only. */
    char *reads = node_reads(log);
    assert_string_equal(reads, POOL_LABEL "=cpu-np limit=1 metadata; " POOL_LABEL
                                          "=pathways-np limit=1 metadata; " ACCELERATOR
                                          "=tpu-v6e-slice," TOPOLOGY "=4x4 limit=8 metadata");
    free(reads);
    assert_int_equal(count_requests(log, "POST", JOBS), 2);
    const json_t *post = json_array_get(log, 10);
    assert_string_equal(field(post, "path"), JOBSETS);
    assert_string_equal(param(post, "fieldValidation"), "Strict");
    assert_null(param(post, "dryRun"));
    assert_int_equal(json_integer_value(json_object_get(post, "in_flight")), 1);

    /* The unified ClusterQueue: the workers ask for TPUs, cpu and memory. */
    json_t *jobset = posted_jobset(log);
    assert_string_equal(queue_label_of(jobset), "user-queue");
    assert_string_equal(head_pool_of(jobset), "cpu-np");
    assert_int_equal(
        json_integer_value(json_object_get(replicated_job(jobset, "worker"), "replicas")), 2);
    char *resources = resources_of(pod_spec(replicated_job(jobset, "worker")));
    assert_string_equal(resources,
                        "{\"limits\":{\"google.com/tpu\":4},\"requests\":{\"cpu\":\"90\","
                        "\"google.com/tpu\":4,\"memory\":\"360Gi\"}}");
    free(resources);
    json_decref(jobset);
    json_decref(log);
    outcome_free(&o);
}

/* The Jobs sent for the dry run are the ones the JobSet controller will make: the replicated
 * job's template, named and labelled as the controller names and labels them, suspended (the
 * JobSet waits in Kueue), without Kueue's queue label or an owner. */
static void dry_run_jobs_are_the_controllers(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    json_t *log = jt_requests();
    json_t *jobset = posted_jobset(log);
    const json_t *rjob = replicated_job(jobset, "worker");
    json_t *job = dry_run_job(log, "worker");
    const json_t *metadata = json_object_get(job, "metadata");
    assert_string_equal(json_string_value(json_object_get(job, "apiVersion")), "batch/v1");
    assert_string_equal(json_string_value(json_object_get(job, "kind")), "Job");
    assert_string_equal(json_string_value(json_object_get(metadata, "name")), "pw-test-worker-0");
    assert_string_equal(json_string_value(json_object_get(metadata, "namespace")), NS);
    assert_null(json_object_get(metadata, "ownerReferences"));
    assert_true(json_is_true(json_object_get(json_object_get(job, "spec"), "suspend")));
    const json_t *labels = json_object_get(metadata, "labels");
    assert_null(json_object_get(labels, "kueue.x-k8s.io/queue-name"));
    static const char *const expected[][2] = {
        {"jobset.sigs.k8s.io/jobset-name", "pw-test"},
        {"jobset.sigs.k8s.io/replicatedjob-name", "worker"},
        {"jobset.sigs.k8s.io/replicatedjob-replicas", "2"},
        {"jobset.sigs.k8s.io/global-replicas", "3"},
        {"jobset.sigs.k8s.io/job-index", "0"},
        {"jobset.sigs.k8s.io/job-global-index", "1"},
        {"jobset.sigs.k8s.io/restart-attempt", "0"},
        {"jobset.sigs.k8s.io/group-name", "default"},
        {"jobset.sigs.k8s.io/coordinator", "pw-test-pathways-head-0-0.pw-test"},
    };
    const json_t *pod_metadata =
        json_object_get(json_object_get(json_object_get(job, "spec"), "template"), "metadata");
    for (size_t i = 0; i < sizeof(expected) / sizeof(expected[0]); i++) {
        const json_t *maps[] = {labels, json_object_get(metadata, "annotations"),
                                json_object_get(pod_metadata, "labels"),
                                json_object_get(pod_metadata, "annotations")};
        for (size_t m = 0; m < 4; m++)
            assert_string_equal(json_string_value(json_object_get(maps[m], expected[i][0])),
                                expected[i][1]);
    }
    /* The template's own annotation stays, and the pod spec is the template's plus the
     * subdomain the controller sets for DNS hostnames. */
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(metadata, "annotations"),
                                          "alpha.jobset.sigs.k8s.io/exclusive-topology")),
        POOL_LABEL);
    json_t *spec = json_deep_copy(job_pod_spec(job));
    assert_string_equal(json_string_value(json_object_get(spec, "subdomain")), "pw-test");
    json_object_del(spec, "subdomain");
    assert_true(json_equal(spec, pod_spec(rjob)));
    json_decref(spec);
    json_decref(job);
    job = dry_run_job(log, "pathways-head");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(job, "metadata"), "name")),
        "pw-test-pathways-head-0");
    json_decref(job);
    json_decref(jobset);
    json_decref(log);
    outcome_free(&o);
}

/* xpk's and earlier Cluster Toolkit releases' ClusterQueue: cpu and memory in a group of their
 * own, whose flavor would pin the workers to the head pool. The workers ask for TPUs alone, in
 * the JobSet and in the Jobs checked, and the result and a notice say why. */
static void split_queue_workers_request_only_tpus(void **state)
{
    (void)state;
    serve_one_queue("user-queue", split_queue(), v6e_nodes());
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    const char *note = "the workers request only google.com/tpu: ClusterQueue cluster-queue keeps "
                       "cpu and memory apart from google.com/tpu, in a resource group whose "
                       "flavors would pin pods requesting them to their nodes: pathways-flavor "
                       "(" HEAD_FLAVOR_LABEL ")";
    assert_string_equal(o.result.tpu_requests_note, note);
    char *notice = gc_xasprintf("notice: %s\n", note);
    assert_string_equal(jt_recorded(), notice);
    free(notice);
    assert_int_equal(o.result.warnings.count, 0);
    json_t *log = jt_requests();
    json_t *jobset = posted_jobset(log);
    json_t *job = dry_run_job(log, "worker");
    const char *tpu_only = "{\"limits\":{\"google.com/tpu\":4},\"requests\":"
                           "{\"google.com/tpu\":4}}";
    char *resources = resources_of(pod_spec(replicated_job(jobset, "worker")));
    assert_string_equal(resources, tpu_only);
    free(resources);
    resources = resources_of(job_pod_spec(job));
    assert_string_equal(resources, tpu_only);
    free(resources);
    /* The head keeps its limits: its flavor is the cpu and memory one. */
    resources = resources_in(pod_spec(replicated_job(jobset, "pathways-head")), "initContainers");
    assert_string_equal(resources, "{\"limits\":{\"cpu\":\"16\",\"memory\":\"100Gi\"}}");
    free(resources);
    json_decref(job);
    json_decref(jobset);
    json_decref(log);
    outcome_free(&o);
}

static void queue_and_head_pool_come_from_the_cluster(void **state)
{
    (void)state;
    json_t *nodes = json_array();
    add_nodes(nodes, "pathways-np", 2, "n2-standard-32", NULL, NULL);
    add_nodes(nodes, "tpu-np-0", 4, "ct6e-standard-4t", "tpu-v6e-slice", "4x4");
    add_nodes(nodes, "tpu-np-1", 4, "ct6e-standard-4t", "tpu-v6e-slice", "4x4");
    serve_cluster_with(json_pack("[o]", local_queue("team-q", "cluster-queue")),
                       json_pack("[o]", unified_queue("64")),
                       json_pack("[o, o]", flavor("pathways-flavor", POOL_LABEL "=pathways-np"),
                                 flavor("tpu-flavor", TPU_FLAVOR_LABEL)),
                       nodes);
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_string_equal(o.result.queue, "team-q");
    assert_string_equal(o.result.head_pool, "pathways-np");
    json_t *log = jt_requests();
    json_t *jobset = posted_jobset(log);
    assert_string_equal(queue_label_of(jobset), "team-q");
    assert_string_equal(head_pool_of(jobset), "pathways-np");
    json_decref(jobset);
    json_decref(log);
    outcome_free(&o);
}

/* An error before anything is created: the message, exit 2, no JobSet POSTed; `dry_runs` Jobs
 * were checked before it (0: the error came from the reads alone). */
static void assert_refused(const outcome *o, const char *message, size_t dry_runs)
{
    if (o->rc != GC_EXIT_USAGE)
        fail_msg("exit %d, not %d: %s", o->rc, GC_EXIT_USAGE, o->err.message);
    if (!strstr(o->err.message, message))
        fail_msg("\"%s\" does not say \"%s\"", o->err.message, message);
    assert_null(strchr(o->err.message, '\n'));
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "POST", JOBSETS), 0);
    assert_int_equal(count_requests(log, "POST", JOBS), dry_runs);
    json_decref(log);
}

/* Submits pw-test (Pathways v6e-16 x2, or as `r` says) and expects a refusal before any dry run. */
static void expect_refusal(const gc_submit_request *r, const char *message)
{
    outcome o;
    run_submit(&o, r);
    assert_refused(&o, message, 0);
    outcome_free(&o);
}

/* Submits pw-test (Pathways v6e-16 x2) and expects it created, with this one warning. */
static void expect_created_with_one_warning(const char *warning)
{
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_int_equal(o.result.warnings.count, 1);
    assert_string_equal(o.result.warnings.items[0], warning);
    outcome_free(&o);
}

/* The same on the default nodes and a ClusterQueue `cq` (stolen) behind user-queue. */
/* Google's gcluster: "target namespace ... does not exist", read in the first round, before
 * anything is created. */
static void missing_namespace_is_refused(void **state)
{
    (void)state;
    jt_answer("GET /api/v1/namespaces/" NS,
              json_pack("{s:i, s:{s:s, s:s, s:s, s:i}}", "status", 404, "json", "kind", "Status",
                        "reason", "NotFound", "message", "namespaces \"" NS "\" not found", "code",
                        404));
    serve_default_cluster();
    gc_submit_request r = pathways_request();
    expect_refusal(&r, "target namespace " NS " does not exist: create it (kubectl create "
                       "namespace " NS ") or pick another with --gke-namespace");
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "POST", JOBSETS), 0);
    assert_int_equal(count_requests(log, "POST", JOBS), 0);
    json_decref(log);
}

static void expect_refusal_on(json_t *cq, const char *message)
{
    serve_one_queue("user-queue", cq, v6e_nodes());
    gc_submit_request r = pathways_request();
    expect_refusal(&r, message);
}

/* Multi-tier checkpointing and dynamic slicing: what the cluster must have, and the fix. */

#define MTC_CRD_PATH                                                                               \
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"                                     \
    "checkpointconfigurations.checkpointing.gke.io"
#define MTC_CONFIGS_PATH "/apis/checkpointing.gke.io/v1/checkpointconfigurations"
#define MTC_DRIVER_PATH  "/apis/storage.k8s.io/v1/csidrivers/multitier-checkpoint.csi.storage.gke.io"
#define TOPOLOGIES_PATH  "/apis/kueue.x-k8s.io/v1beta2/topologies"
#define CHECKS_PATH      "/apis/kueue.x-k8s.io/v1beta2/admissionchecks"

#define SERVING_CLASS_PATH "/apis/storage.k8s.io/v1/storageclasses/gcsfusecsi-serving"
#define STORAGE_CLASSES    "/apis/storage.k8s.io/v1/storageclasses"
#define VOLUMES            "/api/v1/persistentvolumes"
#define CLAIMS             "/api/v1/namespaces/" NS "/persistentvolumeclaims"

static gc_submit_request profile_request(void)
{
    gc_submit_request r = pathways_request();
    r.mounts[0] = "gs://models/llama;/models;ro;profile=serving";
    /* Another bucket: a gateway of its own, on the same StorageClass (read once). */
    r.mounts[1] = "gs://datasets/c4;/data;ro;profile=serving";
    r.mount_count = 2;
    return r;
}

static size_t count_prefixed(const json_t *log, const char *method, const char *prefix)
{
    size_t n = 0, i;
    const json_t *req;
    json_array_foreach(log, i, req) n += !strcmp(field(req, "method"), method) &&
                                         !strncmp(field(req, "path"), prefix, strlen(prefix));
    return n;
}

static gc_submit_request mtc_request(void)
{
    gc_submit_request r = pathways_request();
    r.mtc_enabled = true;
    r.pathways_sidecar_image = "us-docker.pkg.dev/p/r/sidecar:1";
    return r;
}

/* What the HighScaleCheckpointing add-on and a CheckpointConfiguration leave in a cluster; each
 * `with_*` false leaves that piece out (unscripted: 404). */
static void serve_mtc(bool with_crd, bool with_driver, bool with_config)
{
    if (with_crd)
        jt_get(MTC_CRD_PATH, named("checkpointconfigurations.checkpointing.gke.io"));
    if (with_driver)
        jt_get(MTC_DRIVER_PATH, named("multitier-checkpoint.csi.storage.gke.io"));
    if (with_crd)
        jt_list(MTC_CONFIGS_PATH, "CheckpointConfigurationList",
                with_config ? json_pack("[o]", named("default")) : json_array());
}

static void mtc_job_is_created_when_the_cluster_has_it(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_mtc(true, true, true);
    serve_created("pw-test");
    gc_submit_request r = mtc_request();
    outcome o;
    run_submit(&o, &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    assert_int_equal(o.result.warnings.count, 0);
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "GET", MTC_CRD_PATH), 1);
    assert_int_equal(count_requests(log, "GET", MTC_DRIVER_PATH), 1);
    assert_int_equal(count_requests(log, "GET", MTC_CONFIGS_PATH), 1);
    json_t *jobset = posted_jobset(log);
    const json_t *volumes = json_object_get(pod_spec(replicated_job(jobset, "worker")), "volumes");
    const char *driver = NULL;
    for (size_t i = 0; i < json_array_size(volumes); i++) {
        const json_t *csi = json_object_get(json_array_get(volumes, i), "csi");
        const char *d = json_string_value(json_object_get(csi, "driver"));
        if (d && !strcmp(d, "multitier-checkpoint.csi.storage.gke.io"))
            driver = d;
    }
    assert_non_null(driver);
    json_decref(jobset);
    json_decref(log);
    outcome_free(&o);
}

static void mtc_without_the_add_on_names_the_fix(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_mtc(false, false, false);
    gc_submit_request r = mtc_request();
    expect_refusal(&r, "--gke-mtc-enabled: the cluster has no CheckpointConfiguration CRD "
                       "(checkpointconfigurations.checkpointing.gke.io), so multi-tier "
                       "checkpointing is not enabled; enable GKE's multi-tier checkpointing on the "
                       "cluster (gcloud container clusters update CLUSTER --location LOCATION "
                       "--update-addons=HighScaleCheckpointing=ENABLED");
}

static void mtc_without_the_csi_driver_names_the_fix(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_mtc(true, false, true);
    gc_submit_request r = mtc_request();
    expect_refusal(&r, "--gke-mtc-enabled: the cluster has no CSI driver "
                       "multitier-checkpoint.csi.storage.gke.io");
}

static void mtc_without_a_checkpoint_configuration_names_the_fix(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_mtc(true, true, false);
    gc_submit_request r = mtc_request();
    expect_refusal(&r, "--gke-mtc-enabled: the cluster has no CheckpointConfiguration, so the "
                       "multi-tier checkpointing driver does not know where to keep checkpoints; "
                       "create one (apiVersion checkpointing.gke.io/v1");
}

/* What multi-tier checkpointing needs is read in the first round trip with the queues, the
 * nodes and the namespace (the check declares its reads), so an MTC submit costs what any submit
 * costs: the reads, the Jobs' dry runs, the POST. */
static void mtc_submit_makes_three_round_trips(void **state)
{
    (void)state;
    held_default_queues();
    held("GET " MTC_CRD_PATH, 200, named("checkpointconfigurations.checkpointing.gke.io"), 1);
    held("GET " MTC_DRIVER_PATH, 200, named("multitier-checkpoint.csi.storage.gke.io"), 1);
    held("GET " MTC_CONFIGS_PATH, 200,
         list_of("CheckpointConfigurationList", json_pack("[o]", named("default"))), 1);
    serve_nodes_held(v6e_nodes(), 0.3);
    held("POST " JOBS, 201, json_pack("{s:s}", "kind", "Job"), 2);
    held("POST " JOBSETS, 201, jt_jobset("pw-test", 2), 1);
    gc_submit_request r = mtc_request();
    outcome o;
    run_submit(&o, &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "GET", MTC_CRD_PATH), 1);
    assert_int_equal(count_requests(log, "GET", MTC_DRIVER_PATH), 1);
    assert_int_equal(count_requests(log, "GET", MTC_CONFIGS_PATH), 1);
    assert_int_equal(o.requests, 14);
    /* Counted by the client (requests sent together share one): on a loaded machine the server
     * may see a batch's requests arrive one after another. */
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 3);
    json_decref(log);
    outcome_free(&o);
}

/* --skip-prereqs (Google's global flag) skips these reads, and says so. */
static void skip_prereqs_skips_the_feature_checks(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_created("pw-test");
    gc_submit_request r = mtc_request();
    r.skip_prereqs = true;
    outcome o;
    run_submit(&o, &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    assert_int_equal(o.result.warnings.count, 1);
    assert_string_equal(o.result.warnings.items[0], "--skip-prereqs: whether the cluster has "
                                                    "multi-tier checkpointing was not checked");
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "GET", MTC_CRD_PATH), 0);
    assert_int_equal(count_requests(log, "GET", MTC_CONFIGS_PATH), 0);
    json_decref(log);
    outcome_free(&o);
}

/* A job without MTC or dynamic slicing reads none of it. */
static void plain_jobs_do_not_read_feature_objects(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "GET", MTC_CRD_PATH), 0);
    assert_int_equal(count_requests(log, "GET", TOPOLOGIES_PATH), 0);
    assert_int_equal(count_prefixed(log, "GET", STORAGE_CLASSES), 0);
    json_decref(log);
    outcome_free(&o);
}

/* A TPU7x pool of one 4x4x4 block (16 hosts) and a
 * ClusterQueue that does (or does not) run the slice controller's check. */
static void serve_slicing_cluster(bool queue_runs_check)
{
    json_t *nodes = head_node();
    add_nodes(nodes, "tpu7x-np", 16, "tpu7x-standard-4t", "tpu7x", "4x4x4");
    json_t *cq = unified_queue("1024");
    if (queue_runs_check)
        json_object_set_new(json_object_get(cq, "spec"), "admissionChecks",
                            json_pack("[s]", "dynamic-slicing-ac"));
    json_t *tpu7x = flavor("tpu-flavor", "cloud.google.com/gke-tpu-accelerator=tpu7x");
    serve_cluster_with(
        json_pack("[o]", local_queue("user-queue", "cluster-queue")), json_pack("[o]", cq),
        json_pack("[o, o]", flavor("pathways-flavor", HEAD_FLAVOR_LABEL), tpu7x), nodes);
}

static json_t *slicing_topology(void)
{
    return jt_json("{'metadata': {'name': 'dynamic-slicing-topology'}, 'spec': {'levels': "
                   "[{'nodeLabel': 'cloud.google.com/gce-topology-block'}, {'nodeLabel': "
                   "'cloud.google.com/gke-tpu-partition-4x4x4-id'}, {'nodeLabel': "
                   "'kubernetes.io/hostname'}]}}");
}

static json_t *slice_check(void)
{
    return jt_json("{'metadata': {'name': 'dynamic-slicing-ac'}, 'spec': {'controllerName': "
                   "'accelerator.gke.io/slice'}}");
}

static gc_submit_request slicing_request(const char *topology)
{
    gc_submit_request r = pathways_request();
    r.compute_type = "tpu-v7x-slice";
    r.topology = topology;
    r.num_slices = 1;
    return r;
}

static void dynamic_slice_is_created_when_the_cluster_has_it(void **state)
{
    (void)state;
    serve_slicing_cluster(true);
    jt_list(TOPOLOGIES_PATH, "TopologyList", json_pack("[o]", slicing_topology()));
    jt_list(CHECKS_PATH, "AdmissionCheckList", json_pack("[o]", slice_check()));
    serve_created("pw-test");
    gc_submit_request r = slicing_request("4x4x4");
    outcome o;
    run_submit(&o, &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    for (size_t i = 0; i < o.result.warnings.count; i++)
        fail_msg("unexpected warning: %s", o.result.warnings.items[i]);
    json_t *log = jt_requests();
    json_t *jobset = posted_jobset(log);
    const json_t *worker = replicated_job(jobset, "worker");
    const json_t *annotations = json_object_get(
        json_object_get(json_object_get(json_object_get(worker, "template"), "spec"), "template"),
        "metadata");
    annotations = json_object_get(annotations, "annotations");
    assert_string_equal(
        json_string_value(json_object_get(annotations, "kueue.x-k8s.io/podset-required-topology")),
        "cloud.google.com/gke-tpu-partition-4x4x4-id");
    assert_null(json_object_get(json_object_get(pod_spec(worker), "nodeSelector"), TOPOLOGY));
    json_decref(jobset);
    json_decref(log);
    outcome_free(&o);
}

/* A dynamic slice's Kueue Topologies and AdmissionChecks go out with Kueue's other lists in
 * the first round trip: three round trips in all, as for any submit. */
static void dynamic_slice_submit_makes_three_round_trips(void **state)
{
    (void)state;
    json_t *nodes = head_node();
    add_nodes(nodes, "tpu7x-np", 16, "tpu7x-standard-4t", "tpu7x", "4x4x4");
    json_t *cq = unified_queue("1024");
    json_object_set_new(json_object_get(cq, "spec"), "admissionChecks",
                        json_pack("[s]", "dynamic-slicing-ac"));
    held("GET " LOCAL_QUEUES, 200,
         list_of("LocalQueueList", json_pack("[o]", local_queue("user-queue", "cluster-queue"))),
         1);
    held("GET " CLUSTER_QUEUES, 200, list_of("ClusterQueueList", json_pack("[o]", cq)), 1);
    held("GET " FLAVORS, 200,
         list_of("ResourceFlavorList",
                 json_pack("[o, o]", flavor("pathways-flavor", HEAD_FLAVOR_LABEL),
                           flavor("tpu-flavor", "cloud.google.com/gke-tpu-accelerator=tpu7x"))),
         1);
    held("GET " TOPOLOGIES_PATH, 200, list_of("TopologyList", json_pack("[o]", slicing_topology())),
         1);
    held("GET " CHECKS_PATH, 200, list_of("AdmissionCheckList", json_pack("[o]", slice_check())),
         1);
    serve_nodes_held(nodes, 0.3);
    held("POST " JOBS, 201, json_pack("{s:s}", "kind", "Job"), 2);
    held("POST " JOBSETS, 201, jt_jobset("pw-test", 1), 1);
    gc_submit_request r = slicing_request("4x4x4");
    outcome o;
    run_submit(&o, &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "GET", TOPOLOGIES_PATH), 1);
    assert_int_equal(count_requests(log, "GET", CHECKS_PATH), 1);
    /* Counted by the client (requests sent together share one): on a loaded machine the server
     * may see a batch's requests arrive one after another. */
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 3);
    json_decref(log);
    outcome_free(&o);
}

/* Storage-profile mounts: the StorageClass their gateway volume needs. */

/* The POSTs to `path`: server-side dry runs (dryRun=All) or creates. */
static size_t count_posts(const json_t *log, const char *path, bool dry_runs)
{
    size_t n = 0, i;
    const json_t *req;
    json_array_foreach(log, i, req) n += !strcmp(field(req, "method"), "POST") &&
                                         !strcmp(field(req, "path"), path) &&
                                         (param(req, "dryRun") != NULL) == dry_runs;
    return n;
}

/* Whether a request to `path` (a prefix with `prefix`) is among the first `first` of the log. */
static bool among_first(const json_t *log, size_t first, const char *path, bool prefix)
{
    size_t i;
    const json_t *req;
    json_array_foreach(log, i, req)
    {
        const char *p = field(req, "path");
        if (i < first && (prefix ? !strncmp(p, path, strlen(path)) : !strcmp(p, path)))
            return true;
    }
    return false;
}

/* The gateway objects the profile request names in namespace NS: a volume, then its claim,
 * for each bucket. */
static json_t *profile_gateways(void)
{
    gc_submit_request r = profile_request();
    gc_submit_plan plan;
    gc_error err = {0};
    if (gc_submit_prepare(&r, &plan, &err))
        fail_msg("prepare: %s", err.message);
    json_t *objects = NULL;
    if (gc_workload_gateways(&plan.workload, NS, &objects, &err))
        fail_msg("gateways: %s", err.message);
    gc_submit_plan_free(&plan);
    assert_int_equal(json_array_size(objects), 4);
    return objects;
}

static const char *object_name(const json_t *object)
{
    return gc_kube_string(json_object_get(object, "metadata"), "name");
}

/* The first round's reads (the gateways unscripted: not there) and the Jobs' dry runs, held so
 * the requests of each round arrive together. */
static void serve_profile_cluster(void)
{
    held_default_queues();
    held("GET " SERVING_CLASS_PATH, 200, named("gcsfusecsi-serving"), 1);
    serve_nodes_held(v6e_nodes(), 0.3);
    held("POST " JOBS, 201, json_pack("{s:s}", "kind", "Job"), 2);
}

/* The StorageClass a profile= mount needs and the gateway objects themselves are read in the
 * first round trip with the queues, the nodes and the namespace (the gateways' entries of the
 * checks table declare them), the class once for the mounts that share it. The gateways not
 * there are dry-run with the Jobs, and created with the JobSet's POST: three round trips. */
static void profile_mount_submit_makes_three_round_trips(void **state)
{
    (void)state;
    serve_profile_cluster();
    /* Two volumes and two claims, each dry-run, then created. */
    held("POST " VOLUMES, 201, json_pack("{s:s}", "kind", "PersistentVolume"), 4);
    held("POST " CLAIMS, 201, json_pack("{s:s}", "kind", "PersistentVolumeClaim"), 4);
    held("POST " JOBSETS, 201, jt_jobset("pw-test", 2), 1);
    gc_submit_request r = profile_request();
    outcome o;
    run_submit(&o, &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    json_t *log = jt_requests();
    assert_int_equal(count_prefixed(log, "GET", STORAGE_CLASSES), 1);
    assert_int_equal(count_requests(log, "GET", SERVING_CLASS_PATH), 1);
    /* Among the first thirteen requests, which go out together. */
    assert_true(among_first(log, 13, SERVING_CLASS_PATH, false));
    assert_int_equal(count_prefixed(log, "GET", VOLUMES "/"), 2);
    assert_int_equal(count_prefixed(log, "GET", CLAIMS "/"), 2);
    assert_true(among_first(log, 13, VOLUMES "/", true));
    assert_true(among_first(log, 13, CLAIMS "/", true));
    assert_int_equal(count_posts(log, VOLUMES, true), 2);
    assert_int_equal(count_posts(log, CLAIMS, true), 2);
    assert_int_equal(count_posts(log, VOLUMES, false), 2);
    assert_int_equal(count_posts(log, CLAIMS, false), 2);
    /* 13 reads (9, the two volumes and two claims), 6 dry runs (2 Jobs, 4 gateways), 5 creates
     * (4 gateways, the JobSet). */
    assert_int_equal(o.requests, 24);
    assert_int_equal(round_trips(log), 3);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 3);
    json_decref(log);
    outcome_free(&o);
}

/* A gateway object that is there already is reused: neither dry-run nor created again. */
static void profile_mount_reuses_a_gateway_object_that_is_there(void **state)
{
    (void)state;
    json_t *gateways = profile_gateways();
    const json_t *claim = json_array_get(gateways, 1);
    assert_string_equal(gc_kube_string(claim, "kind"), "PersistentVolumeClaim");
    char *claim_path = gc_xasprintf(CLAIMS "/%s", object_name(claim));
    char *get = gc_xasprintf("GET %s", claim_path);
    serve_profile_cluster();
    held(get, 200, json_deep_copy(claim), 1);
    held("POST " VOLUMES, 201, json_pack("{s:s}", "kind", "PersistentVolume"), 4);
    held("POST " CLAIMS, 201, json_pack("{s:s}", "kind", "PersistentVolumeClaim"), 2);
    held("POST " JOBSETS, 201, jt_jobset("pw-test", 2), 1);
    gc_submit_request r = profile_request();
    outcome o;
    run_submit(&o, &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "GET", claim_path), 1);
    assert_int_equal(count_posts(log, VOLUMES, true), 2);
    assert_int_equal(count_posts(log, VOLUMES, false), 2);
    /* The other claim alone. */
    assert_int_equal(count_posts(log, CLAIMS, true), 1);
    assert_int_equal(count_posts(log, CLAIMS, false), 1);
    size_t i;
    const json_t *req;
    json_array_foreach(log, i, req)
    {
        if (strcmp(field(req, "method"), "POST") != 0 || strcmp(field(req, "path"), CLAIMS) != 0)
            continue;
        json_t *body = body_of(req);
        assert_string_not_equal(object_name(body), object_name(claim));
        json_decref(body);
    }
    assert_int_equal(o.requests, 22);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 3);
    json_decref(log);
    free(get);
    free(claim_path);
    json_decref(gateways);
    outcome_free(&o);
}

/* A gateway the API server refuses at its create (an admission webhook that dry runs skip) is
 * the submit's error, naming the object and the fix; the JobSet went out in the same round. */
static void profile_mount_gateway_create_failure_names_it_and_the_fix(void **state)
{
    (void)state;
    json_t *gateways = profile_gateways();
    serve_profile_cluster();
    jt_answer("POST " VOLUMES,
              json_pack("{s:i, s:{s:s}, s:b, s:{s:s}}", "status", 201, "json", "kind",
                        "PersistentVolume", "repeat", 1, "when", "dryRun", "All"));
    jt_answer("POST " VOLUMES,
              json_pack("{s:i, s:{s:s, s:s, s:s, s:i}, s:b, s:{s:n}}", "status", 400, "json",
                        "kind", "Status", "reason", "BadRequest", "message",
                        "admission webhook \"pv.example.com\" denied the request: bucket not "
                        "allowed",
                        "code", 400, "repeat", 1, "when", "dryRun"));
    held("POST " CLAIMS, 201, json_pack("{s:s}", "kind", "PersistentVolumeClaim"), 4);
    held("POST " JOBSETS, 201, jt_jobset("pw-test", 2), 1);
    gc_submit_request r = profile_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_not_equal(o.rc, 0);
    char *want = gc_xasprintf("--mount profile=: gateway PersistentVolume %s was not created: ",
                              object_name(json_array_get(gateways, 0)));
    if (!strstr(o.err.message, want) || !strstr(o.err.message, "bucket not allowed") ||
        !strstr(o.err.message, "JobSet pw-test was created and its pods wait for the gateway: "
                               "cancel it (gcluster job cancel pw-test)"))
        fail_msg("unexpected error: %s", o.err.message);
    json_t *log = jt_requests();
    assert_int_equal(count_posts(log, VOLUMES, false), 2);
    assert_int_equal(count_requests(log, "POST", JOBSETS), 1);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 3);
    json_decref(log);
    free(want);
    json_decref(gateways);
    outcome_free(&o);
}

/* A StorageClass known to be missing refuses the submit before anything is created. */
static void profile_mount_without_its_storage_class_names_the_fix(void **state)
{
    (void)state;
    serve_default_cluster();
    gc_submit_request r = profile_request();
    outcome o;
    run_submit(&o, &r);
    assert_refused(&o,
                   "--mount: the cluster has no StorageClass gcsfusecsi-serving, which "
                   "profile= needs: GKE creates the gcsfusecsi-* classes from version "
                   "1.35.1-gke.1616000 on",
                   0);
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "GET", SERVING_CLASS_PATH), 1);
    assert_int_equal(count_prefixed(log, "POST", VOLUMES), 0);
    assert_int_equal(count_prefixed(log, "POST", CLAIMS), 0);
    json_decref(log);
    outcome_free(&o);
}

/* One the user may not read may be there: the submit goes on. */
static void profile_mount_storage_class_one_may_not_read_is_taken_as_there(void **state)
{
    (void)state;
    serve_default_cluster();
    jt_answer("GET " SERVING_CLASS_PATH,
              json_pack("{s:i, s:{s:s, s:s, s:i}}", "status", 403, "json", "reason", "Forbidden",
                        "message", "storageclasses is forbidden", "code", 403));
    /* Each gateway dry-run with the Jobs, then created. */
    jt_answer("POST " VOLUMES, json_pack("{s:i, s:{s:s}, s:b}", "status", 201, "json", "kind",
                                         "PersistentVolume", "repeat", 1));
    jt_answer("POST " CLAIMS, json_pack("{s:i, s:{s:s}, s:b}", "status", 201, "json", "kind",
                                        "PersistentVolumeClaim", "repeat", 1));
    serve_created("pw-test");
    gc_submit_request r = profile_request();
    outcome o;
    run_submit(&o, &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "GET", SERVING_CLASS_PATH), 1);
    assert_int_equal(count_requests(log, "POST", JOBSETS), 1);
    json_decref(log);
    outcome_free(&o);
}

static void dynamic_slice_without_a_topology_names_the_fix(void **state)
{
    (void)state;
    serve_slicing_cluster(true);
    jt_list(TOPOLOGIES_PATH, "TopologyList", json_array());
    jt_list(CHECKS_PATH, "AdmissionCheckList", json_pack("[o]", slice_check()));
    gc_submit_request r = slicing_request("4x4x4");
    expect_refusal(&r, "--compute-type tpu-v7x-slice: the cluster has no Kueue Topology, so "
                       "Kueue cannot place the pods of a dynamic slice; configure Kueue for TPU7x "
                       "dynamic slicing");
}

static void dynamic_slice_without_the_slice_check_names_the_fix(void **state)
{
    (void)state;
    serve_slicing_cluster(false);
    jt_list(TOPOLOGIES_PATH, "TopologyList", json_pack("[o]", slicing_topology()));
    jt_list(CHECKS_PATH, "AdmissionCheckList", json_array());
    gc_submit_request r = slicing_request("4x4x4");
    expect_refusal(&r, "--compute-type tpu-v7x-slice: the cluster has no AdmissionCheck of GKE's "
                       "slice controller (controllerName accelerator.gke.io/slice)");
}

/* A Kueue that does not serve AdmissionChecks (404) has none. */
static void dynamic_slice_without_admission_checks_served_names_the_fix(void **state)
{
    (void)state;
    serve_slicing_cluster(true);
    jt_list(TOPOLOGIES_PATH, "TopologyList", json_pack("[o]", slicing_topology()));
    gc_submit_request r = slicing_request("4x4x4");
    expect_refusal(&r, "--compute-type tpu-v7x-slice: the cluster has no AdmissionCheck of GKE's "
                       "slice controller");
}

static void dynamic_slice_on_a_queue_without_the_check_names_the_fix(void **state)
{
    (void)state;
    serve_slicing_cluster(false);
    jt_list(TOPOLOGIES_PATH, "TopologyList", json_pack("[o]", slicing_topology()));
    jt_list(CHECKS_PATH, "AdmissionCheckList", json_pack("[o]", slice_check()));
    gc_submit_request r = slicing_request("4x4x4");
    expect_refusal(&r, "ClusterQueue cluster-queue (of LocalQueue user-queue) does not run the "
                       "slice controller's AdmissionCheck dynamic-slicing-ac");
}

/* A shape the Topology has no partition level for is admitted only if the nodes carry it. */
static void dynamic_slice_level_missing_from_the_topology_is_a_warning(void **state)
{
    (void)state;
    serve_slicing_cluster(true);
    jt_list(TOPOLOGIES_PATH, "TopologyList", json_pack("[o]", slicing_topology()));
    jt_list(CHECKS_PATH, "AdmissionCheckList", json_pack("[o]", slice_check()));
    serve_created("pw-test");
    gc_submit_request r = slicing_request("4x4x8");
    outcome o;
    run_submit(&o, &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    bool found = false;
    for (size_t i = 0; i < o.result.warnings.count; i++)
        found |= strstr(o.result.warnings.items[i],
                        "no Kueue Topology has the level "
                        "cloud.google.com/gke-tpu-partition-4x4x8-id") != NULL;
    if (!found)
        fail_msg("no warning about the partition level; warnings: %zu", o.result.warnings.count);
    outcome_free(&o);
}

static void named_queue_must_exist(void **state)
{
    (void)state;
    serve_default_cluster();
    gc_submit_request r = pathways_request();
    r.queue = "nope";
    expect_refusal(&r, "--queue nope: no such LocalQueue in namespace ns1 (it has: user-queue)");
}

static void several_queues_without_user_queue_need_a_choice(void **state)
{
    (void)state;
    serve_cluster(json_pack("[o, o]", local_queue("a", "cq"), local_queue("b", "cq")), json_array(),
                  v6e_nodes());
    gc_submit_request r = pathways_request();
    expect_refusal(&r, "has several LocalQueues (a, b) and none is named user-queue");
}

static void no_head_pool_is_an_error(void **state)
{
    (void)state;
    json_t *nodes = json_array();
    add_nodes(nodes, "tpu-np-0", 4, "ct6e-standard-4t", "tpu-v6e-slice", "4x4");
    serve_one_queue("user-queue", unified_queue("64"), nodes);
    gc_submit_request r = pathways_request();
    expect_refusal(&r, "no node pool for the Pathways head");
}

static void missing_cluster_queue_is_an_error(void **state)
{
    (void)state;
    serve_cluster(json_pack("[o]", local_queue("user-queue", "gone-cq")),
                  json_pack("[o]", unified_queue("64")), v6e_nodes());
    gc_submit_request r = pathways_request();
    expect_refusal(&r, "LocalQueue user-queue points to ClusterQueue \"gone-cq\", which does not "
                       "exist, so Kueue would never admit this job; create it with gcluster "
                       "deploy BLUEPRINT, or submit to another --queue");
}

static void inactive_cluster_queue_is_an_error(void **state)
{
    (void)state;
    json_t *cq = unified_queue("64");
    json_object_set_new(cq, "status",
                        json_pack("{s:[{s:s, s:s, s:s, s:s}]}", "conditions", "type", "Active",
                                  "status", "False", "reason", "FlavorNotFound", "message",
                                  "Can't admit new workloads: references missing "
                                  "ResourceFlavor(s): tpu-flavor"));
    expect_refusal_on(cq, "ClusterQueue cluster-queue is inactive (FlavorNotFound: Can't admit new "
                          "workloads: references missing ResourceFlavor(s): tpu-flavor), so Kueue "
                          "would never admit this job");
}

/* A queue its administrator stopped (stopPolicy Hold) admits the job once resumed: the job is
 * created, with one warning that says how to resume the queue (its LocalQueue, inactive
 * because of it, adds none). */
static void stopped_cluster_queue_is_a_warning(void **state)
{
    (void)state;
    json_t *cq = unified_queue("64");
    json_object_set_new(cq, "status",
                        json_pack("{s:[{s:s, s:s, s:s, s:s}]}", "conditions", "type", "Active",
                                  "status", "False", "reason", "Stopped", "message",
                                  "Can't admit new workloads: is stopped."));
    json_t *lq = local_queue("user-queue", "cluster-queue");
    json_object_set_new(lq, "status",
                        json_pack("{s:[{s:s, s:s, s:s, s:s}]}", "conditions", "type", "Active",
                                  "status", "False", "reason", "ClusterQueueIsInactive", "message",
                                  "Can't submit new workloads to clusterQueue"));
    serve_cluster(json_pack("[o]", lq), json_pack("[o]", cq), v6e_nodes());
    serve_created("pw-test");
    expect_created_with_one_warning(
        "ClusterQueue cluster-queue is stopped (Can't admit new workloads: is stopped.): the job "
        "waits in its queue until the queue is resumed: kubectl patch clusterqueue cluster-queue "
        "--type=merge -p '{\"spec\":{\"stopPolicy\":\"None\"}}'");
}

/* Two slices of 16 chips can never fit in a flavor with room for 8. */
static void quota_below_the_job_is_an_error(void **state)
{
    (void)state;
    expect_refusal_on(unified_queue("8"),
                      "the workers need 32 google.com/tpu (8 pods x 4), and ClusterQueue "
                      "cluster-queue has at most 8 in tpu-flavor, so Kueue would never admit "
                      "this job; submit fewer --num-slices or a smaller --compute-type, or raise "
                      "that quota");
}

/* A cohort may lend more than the nominal quota: nothing to refuse. */
static void quota_a_cohort_may_lend_is_not_an_error(void **state)
{
    (void)state;
    json_t *cq = unified_queue("8");
    json_object_set_new(json_object_get(cq, "spec"), "cohortName", json_string("team"));
    serve_one_queue("user-queue", cq, v6e_nodes());
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    outcome_free(&o);
}

static void no_flavor_for_the_workers_is_an_error(void **state)
{
    (void)state;
    json_t *nodes = head_node();
    add_nodes(nodes, "tpu7x-np", 2, "tpu7x-standard-4t", "tpu7x", "2x2x2");
    serve_one_queue("user-queue", unified_queue("64"), nodes);
    gc_submit_request r = pathways_request();
    r.compute_type = "tpu7x-16";
    r.num_slices = 1;
    expect_refusal(&r, "ClusterQueue cluster-queue has no flavor for the google.com/tpu, cpu and "
                       "memory of the workers, whose pods select "
                       "cloud.google.com/gke-tpu-accelerator=tpu7x, "
                       "cloud.google.com/gke-tpu-topology=2x2x2 (its flavors for them: "
                       "pathways-flavor (" HEAD_FLAVOR_LABEL "); tpu-flavor (" TPU_FLAVOR_LABEL
                       ")), so Kueue would never admit this job; submit to a --queue made for "
                       "these nodes");
}

/* A flavor whose taint the pods do not tolerate is no flavor for them. */
static void untolerated_flavor_taint_is_an_error(void **state)
{
    (void)state;
    json_t *tainted = flavor("tpu-flavor", TPU_FLAVOR_LABEL);
    json_object_set_new(json_object_get(tainted, "spec"), "nodeTaints",
                        jt_json("[{'key': 'team', 'value': 'ml', 'effect': 'NoSchedule'}]"));
    serve_cluster_with(json_pack("[o]", local_queue("user-queue", "cluster-queue")),
                       json_pack("[o]", unified_queue("64")),
                       json_pack("[o, o]", flavor("pathways-flavor", HEAD_FLAVOR_LABEL), tainted),
                       v6e_nodes());
    gc_submit_request r = pathways_request();
    expect_refusal(&r, "flavor tpu-flavor for the workers is for nodes tainted team=ml:NoSchedule, "
                       "which its pods do not tolerate");
}

/* xpk's flavor pins cpu and memory to cpu-np; a head on another pool is never admitted. */
static void head_pool_without_a_flavor_is_an_error(void **state)
{
    (void)state;
    json_t *nodes = v6e_nodes();
    add_nodes(nodes, "pathways-np", 2, "n2-standard-32", NULL, NULL);
    serve_one_queue("user-queue", split_queue(), nodes);
    gc_submit_request r = pathways_request();
    r.pathways_head_np = "pathways-np";
    outcome o;
    run_submit(&o, &r);
    assert_refused(&o,
                   "ClusterQueue cluster-queue has no flavor for the cpu and memory of the "
                   "head, whose pods select " POOL_LABEL "=pathways-np (its flavors for them: "
                   "pathways-flavor (" HEAD_FLAVOR_LABEL ")), so Kueue would never admit this "
                   "job; put the head on that pool with --pathways-head-np cpu-np, or "
                   "configure Kueue for head pool pathways-np with gcluster deploy BLUEPRINT "
                   "--pathways-head-np pathways-np",
                   0);
    /* The head pool given is read with the workers' nodes; cpu-np, which only the flavor names,
     * is read (one node) when the fix needs to know it has nodes, after the first round trip. */
    json_t *log = jt_requests();
    char *reads = node_reads(log);
    assert_string_equal(reads, POOL_LABEL "=cpu-np limit=1 metadata; " POOL_LABEL
                                          "=pathways-np limit=1 metadata; " ACCELERATOR
                                          "=tpu-v6e-slice," TOPOLOGY "=4x4 limit=8 metadata");
    free(reads);
    const json_t *last = json_array_get(log, json_array_size(log) - 1);
    assert_string_equal(param(last, "labelSelector"), POOL_LABEL "=cpu-np");
    json_decref(log);
    outcome_free(&o);
}

/* The flavor's pool has no nodes: only deploy can help. */
static void head_pool_flavor_on_an_empty_pool_names_deploy(void **state)
{
    (void)state;
    json_t *nodes = json_array();
    add_nodes(nodes, "pathways-np", 2, "n2-standard-32", NULL, NULL);
    add_nodes(nodes, "tpu-np-0", 4, "ct6e-standard-4t", "tpu-v6e-slice", "4x4");
    add_nodes(nodes, "tpu-np-1", 4, "ct6e-standard-4t", "tpu-v6e-slice", "4x4");
    serve_one_queue("user-queue", split_queue(), nodes);
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_refused(&o,
                   "so Kueue would never admit this job; configure Kueue for head pool "
                   "pathways-np with gcluster deploy BLUEPRINT --pathways-head-np pathways-np",
                   0);
    assert_null(strstr(o.err.message, "--pathways-head-np cpu-np"));
    outcome_free(&o);
}

/* A ClusterQueue without google.com/tpu has no quota for the workers. */
static void uncovered_resource_is_an_error(void **state)
{
    (void)state;
    json_t *cq = cluster_queue(
        "cluster-queue",
        json_pack("[o]", group("cpu memory", json_pack("[o]", flavor_quotas("pathways-flavor",
                                                                            "cpu=480 "
                                                                            "memory=2000G")))));
    expect_refusal_on(cq,
                      "the workers request google.com/tpu, which ClusterQueue cluster-queue has "
                      "no quota for, so Kueue would never admit this job; submit to a --queue "
                      "that covers it");
}

/* One flavor on the head pool covers TPUs too: Kueue would send the workers to cpu-np, whose
 * nodes have no TPUs. */
static void flavors_pinning_pods_to_no_node_are_an_error(void **state)
{
    (void)state;
    json_t *cq = cluster_queue(
        "cluster-queue",
        json_pack("[o]", group(UNIFIED, json_pack("[o]", flavor_quotas("pathways-flavor",
                                                                       "google.com/tpu=64 "
                                                                       "cpu=10000 "
                                                                       "memory=100Ti")))));
    expect_refusal_on(cq,
                      "ClusterQueue cluster-queue would pin the workers to node pool cpu-np and "
                      "to cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice at once, and no "
                      "node of cpu-np has that label, so they could never be scheduled");
}

static void numa_affinity_on_a_split_queue_is_an_error(void **state)
{
    (void)state;
    serve_one_queue("user-queue", split_queue(), v6e_nodes());
    gc_submit_request r = pathways_request();
    r.cpu_affinity = "numa";
    expect_refusal(&r, "--cpu-affinity numa makes the TPU pods request cpu and memory, but "
                       "ClusterQueue cluster-queue keeps cpu and memory apart from "
                       "google.com/tpu");
}

/* A Job the API server rejects in the dry run: its message, the flag behind the field, exit 2,
 * and no JobSet created. Both Jobs are refused here (the scripted server cannot tell them apart);
 * the head's, first in the JobSet, is told. */
static void rejected_job_names_the_flag(void **state)
{
    (void)state;
    jt_list(LOCAL_QUEUES, "LocalQueueList",
            json_pack("[o]", local_queue("user-queue", "cluster-queue")));
    jt_list(CLUSTER_QUEUES, "ClusterQueueList", json_pack("[o]", unified_queue("64")));
    jt_list(FLAVORS, "ResourceFlavorList", deploy_flavors());
    serve_nodes(v6e_nodes());
    const char *message = "Job.batch \"pw-test-pathways-head-0\" is invalid: "
                          "spec.template.spec.volumes[1].hostPath.path: Invalid value: "
                          "\"/data/etc\": an admission policy forbids this host path";
    jt_answer("POST " JOBS, json_pack("{s:i, s:{s:s, s:s, s:s, s:i}, s:b}", "status", 422, "json",
                                      "kind", "Status", "reason", "Invalid", "message", message,
                                      "code", 422, "repeat", 1));
    gc_submit_request r = pathways_request();
    r.mounts[0] = "/data/etc:/data"; /* ("/data/../etc" is refused before anything is sent) */
    r.mount_count = 1;
    outcome o;
    run_submit(&o, &r);
    assert_refused(&o, "could not create the Job of the head, so the job could never start", 2);
    assert_non_null(strstr(o.err.message, message));
    assert_non_null(strstr(o.err.message, "(set by --mount)"));
    outcome_free(&o);
}

/* A user who may create JobSets but not Jobs: the dry runs are skipped with a warning. */
static void jobs_the_user_may_not_create_are_not_checked(void **state)
{
    (void)state;
    jt_list(LOCAL_QUEUES, "LocalQueueList",
            json_pack("[o]", local_queue("user-queue", "cluster-queue")));
    jt_list(CLUSTER_QUEUES, "ClusterQueueList", json_pack("[o]", unified_queue("64")));
    jt_list(FLAVORS, "ResourceFlavorList", deploy_flavors());
    serve_nodes(v6e_nodes());
    jt_answer("POST " JOBS,
              json_pack("{s:i, s:{s:s, s:s, s:s, s:i}, s:b}", "status", 403, "json", "kind",
                        "Status", "reason", "Forbidden", "message",
                        "jobs.batch is forbidden: User \"u\" cannot create resource \"jobs\" in "
                        "API group \"batch\" in the namespace \"ns1\"",
                        "code", 403, "repeat", 1));
    serve_created("pw-test");
    expect_created_with_one_warning("you may not create Jobs in namespace ns1, so the Jobs of "
                                    "this JobSet were not checked with a server-side dry run");
}

/* Nobody may read the ClusterQueue: said, not checked, and the JobSet is made as offline. */
static void unreadable_cluster_queue_is_a_warning(void **state)
{
    (void)state;
    json_t *forbidden = jt_json("{'status': 403, 'json': {'kind': 'Status', 'reason': "
                                "'Forbidden', 'code': 403, 'message': 'forbidden'}}");
    jt_list(LOCAL_QUEUES, "LocalQueueList",
            json_pack("[o]", local_queue("user-queue", "cluster-queue")));
    jt_answer("GET " CLUSTER_QUEUES, json_deep_copy(forbidden));
    jt_answer("GET " CLUSTER_QUEUES "/cluster-queue", json_deep_copy(forbidden));
    jt_answer("GET " FLAVORS, forbidden);
    serve_nodes(v6e_nodes());
    serve_job_dry_runs();
    serve_created("pw-test");
    expect_created_with_one_warning("you may not read ClusterQueue cluster-queue or the "
                                    "ResourceFlavors: whether Kueue can admit this job was not "
                                    "checked");
}

/* Kueue v0.14 serves only v1beta1: its three lists are asked for again, together. */
static void older_kueue_costs_one_more_round_trip(void **state)
{
    (void)state;
    const char *v1beta1 = "/apis/kueue.x-k8s.io/v1beta1";
    char *lq = gc_xasprintf("%s/namespaces/" NS "/localqueues", v1beta1);
    char *cq = gc_xasprintf("%s/clusterqueues", v1beta1);
    char *rf = gc_xasprintf("%s/resourceflavors", v1beta1);
    jt_list(lq, "LocalQueueList", json_pack("[o]", local_queue("user-queue", "cluster-queue")));
    jt_list(cq, "ClusterQueueList", json_pack("[o]", split_queue()));
    jt_list(rf, "ResourceFlavorList", deploy_flavors());
    serve_nodes(v6e_nodes());
    serve_job_dry_runs();
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_non_null(o.result.tpu_requests_note);
    json_t *log = jt_requests();
    /* 8 reads at v1beta2 (3 of them 404; the namespace, JobSet's API group), the 3 lists at
     * v1beta1, 2 dry runs, the POST. */
    assert_int_equal(json_array_size(log), 14);
    for (size_t i = 8; i < 11; i++)
        assert_non_null(strstr(field(json_array_get(log, i), "path"), v1beta1));
    json_decref(log);
    outcome_free(&o);
    free(lq);
    free(cq);
    free(rf);
}

static void unknown_priority_is_an_error(void **state)
{
    (void)state;
    serve_default_cluster();
    jt_list(PRIORITIES, "PriorityClassList", json_array());
    gc_submit_request r = pathways_request();
    r.priority = "Urgent";
    expect_refusal(&r, "--priority urgent: no such PriorityClass in the cluster");
    /* Asked for in the same round trip, by its Kubernetes (lower-case) name. */
    json_t *log = jt_requests();
    assert_int_equal(json_array_size(log), 9);
    size_t i;
    const json_t *req, *priority = NULL;
    json_array_foreach(log, i, req)
    {
        if (!strcmp(field(req, "path"), PRIORITIES))
            priority = req;
    }
    assert_non_null(priority);
    assert_string_equal(param(priority, "fieldSelector"), "metadata.name=urgent");
    json_decref(log);
}

/* --skip-prereqs: the cluster is still read (queue, head pool), but the checks before the
 * create are not made: an unknown PriorityClass and a ClusterQueue without TPU quota go through,
 * and no Job is dry-run; the JobSet is POSTed. */
static void skip_prereqs_creates_without_the_checks(void **state)
{
    (void)state;
    serve_one_queue("user-queue", unified_queue("0"), v6e_nodes());
    jt_list(PRIORITIES, "PriorityClassList", json_array());
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    r.priority = "urgent";
    outcome o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(gc_submit_prepare(&r, &o.plan, &o.err), 0);
    o.plan.skip_prereqs = true;
    o.rc = gc_submit_live(jt_kube(), &o.plan, jt_events(), &o.result, &o.err);
    if (o.rc)
        fail_msg("%s", o.err.message);
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "POST", JOBSETS), 1);
    assert_int_equal(count_requests(log, "POST", NULL), 1); /* no dry run of any Job */
    json_decref(log);
    outcome_free(&o);
}

/* A cluster without JobSet's API group and without Kueue (no LocalQueue list at any version it
 * might serve): the submit stops after its reads, creates and dry-runs nothing, and says what is
 * missing, for the caller to install and submit again. */
static void missing_jobset_and_kueue_stop_the_submit(void **state)
{
    (void)state;
    jt_answer("GET /apis/jobset.x-k8s.io",
              json_pack("{s:i, s:{s:s, s:s, s:i, s:s}}", "status", 404, "json", "kind", "Status",
                        "reason", "NotFound", "code", 404, "message", "not found"));
    serve_nodes(v6e_nodes());
    serve_job_dry_runs();
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    assert_true(o.result.jobset_missing);
    assert_true(o.result.kueue_missing);
    assert_null(o.result.name);
    assert_int_equal(o.result.warnings.count, 0);
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "POST", NULL), 0);
    assert_int_equal(count_requests(log, "GET", "/apis/jobset.x-k8s.io"), 1);
    json_decref(log);
    outcome_free(&o);
}

/* Kueue served, JobSet not: only JobSet is missing. */
static void missing_jobset_alone_is_said(void **state)
{
    (void)state;
    jt_answer("GET /apis/jobset.x-k8s.io",
              json_pack("{s:i, s:{s:s, s:s, s:i, s:s}}", "status", 404, "json", "kind", "Status",
                        "reason", "NotFound", "code", 404, "message", "not found"));
    serve_default_cluster();
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    assert_true(o.result.jobset_missing);
    assert_false(o.result.kueue_missing);
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "POST", NULL), 0);
    json_decref(log);
    outcome_free(&o);
}

/* With --skip-prereqs JobSet's API group is not read and nothing is said missing. */
static void skip_prereqs_does_not_read_the_jobset_api(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    outcome o;
    memset(&o, 0, sizeof(o));
    assert_int_equal(gc_submit_prepare(&r, &o.plan, &o.err), 0);
    o.plan.skip_prereqs = true;
    o.rc = gc_submit_live(jt_kube(), &o.plan, jt_events(), &o.result, &o.err);
    if (o.rc)
        fail_msg("%s", o.err.message);
    assert_false(o.result.jobset_missing);
    json_t *log = jt_requests();
    assert_int_equal(count_requests(log, "GET", "/apis/jobset.x-k8s.io"), 0);
    assert_int_equal(count_requests(log, "POST", JOBSETS), 1);
    json_decref(log);
    outcome_free(&o);
}

static void name_taken_says_its_age_and_status(void **state)
{
    (void)state;
    serve_default_cluster();
    char created[32];
    kube_test_rfc3339(-2 * 3600 - 60, created);
    json_t *existing = jt_jobset("pw-test", 2);
    json_object_set_new(json_object_get(existing, "metadata"), "creationTimestamp",
                        json_string(created));
    jt_condition(existing, "Completed", "AllJobsCompleted", "jobset completed successfully");
    jt_answer("POST " JOBSETS,
              json_pack("{s:i, s:{s:s, s:s, s:s, s:i}}", "status", 409, "json", "kind", "Status",
                        "reason", "AlreadyExists", "message",
                        "jobsets.jobset.x-k8s.io \"pw-test\" already exists", "code", 409));
    jt_get(JOBSETS "/pw-test", existing);
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, GC_EXIT_USAGE);
    assert_non_null(strstr(o.err.message, "a job named pw-test already exists in namespace "
                                          "ns1 (created 2h ago, Succeeded)"));
    assert_non_null(strstr(o.err.message, "gcluster job cancel pw-test"));
    outcome_free(&o);
}

static void missing_jobset_crd_names_the_fix(void **state)
{
    (void)state;
    serve_default_cluster(); /* the POST is unscripted: 404, as without the JobSet CRD */
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, GC_EXIT_RUNTIME);
    assert_non_null(strstr(o.err.message, "the cluster does not serve JobSets"));
    assert_non_null(strstr(o.err.message, "install JobSet >= 0.7"));
    outcome_free(&o);
}

/* --dry-run=server: the JobSet's dry run goes with the Jobs', and that is the last round trip. */
static void server_dry_run_sends_dry_run_all(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    r.dry_run = "server";
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_true(o.result.dry_run);
    assert_int_equal(o.result.next_count, 0);
    json_t *log = jt_requests();
    assert_int_equal(json_array_size(log), 11);
    assert_int_equal(count_requests(log, "POST", JOBS), 2);
    size_t i;
    const json_t *req;
    json_array_foreach(log, i, req)
    {
        if (!strcmp(field(req, "path"), JOBSETS)) {
            assert_string_equal(param(req, "dryRun"), "All");
            assert_string_equal(param(req, "fieldValidation"), "Strict");
        }
    }
    assert_int_equal(count_requests(log, "POST", JOBSETS), 1);
    json_decref(log);
    outcome_free(&o);
}

static void warnings_are_sent_and_kept(void **state)
{
    (void)state;
    json_t *nodes = head_node();
    add_nodes(nodes, "tpu-np-0", 4, "ct6e-standard-4t", "tpu-v6e-slice", "4x4");
    serve_one_queue("user-queue", unified_queue("64"), nodes);
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0); /* may resolve (the autoscaler adds nodes): created anyway */
    assert_int_equal(o.result.warnings.count, 1);
    assert_string_equal(o.result.warnings.items[0],
                        "the cluster has 4 tpu-v6e-slice hosts with topology 4x4, and this job "
                        "needs 8 (2 slices x 4): it will wait for capacity");
    char *sent = gc_xasprintf("warning: %s\n", o.result.warnings.items[0]);
    assert_string_equal(jt_recorded(), sent);
    free(sent);
    outcome_free(&o);
}

/* v6e-8 is two 4-chip hosts offline; on a cluster of 8-chip hosts it is one. */
static void compute_is_refined_by_the_nodes(void **state)
{
    (void)state;
    json_t *nodes = head_node();
    add_nodes(nodes, "tpu-8t", 1, "ct6e-standard-8t", "tpu-v6e-slice", "2x4");
    serve_one_queue("user-queue", unified_queue("64"), nodes);
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    r.compute_type = "v6e-8";
    r.num_slices = 1;
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_string_equal(o.plan.workload.compute.machine_type, "ct6e-standard-8t");
    assert_int_equal(o.plan.workload.nodes_per_slice, 1);
    json_t *log = jt_requests();
    json_t *jobset = posted_jobset(log);
    const json_t *worker = replicated_job(jobset, "worker");
    assert_int_equal(
        json_integer_value(json_object_get(
            json_object_get(json_object_get(worker, "template"), "spec"), "parallelism")),
        1);
    json_decref(jobset);
    json_decref(log);
    assert_int_equal(o.result.warnings.count, 0); /* the one 8-chip host is enough */
    outcome_free(&o);
}

/* A bare tpu7x gets its slice shape from the nodes' topology label; offline it is an error. */
static void pending_compute_is_resolved_by_the_nodes(void **state)
{
    (void)state;
    gc_submit_request r = pathways_request();
    r.compute_type = "tpu7x";
    r.num_slices = 1;
    r.dry_run_out = "-";
    gc_submit_plan plan;
    gc_error err = {0};
    assert_int_equal(gc_submit_prepare(&r, &plan, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--compute-type tpu7x does not say the slice shape"));
    gc_submit_plan_free(&plan);

    r.dry_run_out = NULL;
    json_t *nodes = head_node();
    add_nodes(nodes, "tpu7x-np", 2, "tpu7x-standard-4t", "tpu7x", "2x2x2");
    serve_cluster_with(json_pack("[o]", local_queue("user-queue", "cluster-queue")),
                       json_pack("[o]", unified_queue("64")),
                       json_pack("[o, o]", flavor("pathways-flavor", HEAD_FLAVOR_LABEL),
                                 flavor("tpu-flavor", "cloud.google.com/gke-tpu-accelerator="
                                                      "tpu7x")),
                       nodes);
    serve_created("pw-test");
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_false(o.plan.compute.pending);
    assert_string_equal(o.result.compute, "tpu7x-16");
    json_t *log = jt_requests();
    /* The shape is for the nodes to tell: all of the accelerator's, a page at a time. */
    char *reads = node_reads(log);
    assert_string_equal(reads, POOL_LABEL "=cpu-np limit=1 metadata; " POOL_LABEL
                                          "=pathways-np limit=1 metadata; " ACCELERATOR
                                          "=tpu7x limit=500 metadata");
    free(reads);
    json_t *jobset = posted_jobset(log);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(pod_spec(replicated_job(jobset, "worker")), "nodeSelector"),
            "cloud.google.com/gke-tpu-topology")),
        "2x2x2");
    json_decref(jobset);
    json_decref(log);
    outcome_free(&o);
}

/* --await-job-completion: the JobSet, listed to start the watch, has already succeeded. */
static void await_returns_the_final_status(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_created("pw-test");
    json_t *done = jt_jobset("pw-test", 2);
    jt_condition(done, "Completed", "AllJobsCompleted", "jobset completed successfully");
    jt_list(JOBSETS, "JobSetList", json_pack("[o]", done));
    gc_submit_request r = pathways_request();
    r.await_completion = true;
    r.timeout = "90s";
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_int_equal(o.plan.timeout_seconds, 90);
    assert_true(o.result.awaited);
    assert_int_equal(o.result.final.phase, GC_JOB_SUCCEEDED);
    json_t *log = jt_requests();
    const json_t *watch = json_array_get(log, json_array_size(log) - 1);
    assert_string_equal(field(watch, "path"), JOBSETS);
    assert_string_equal(param(watch, "fieldSelector"), "metadata.name=pw-test");
    json_decref(log);
    outcome_free(&o);
}

/* Through the binary */

/* `gcluster job submit` for pw-test, a Pathways v6e-16 x2 job, plus `extra`. */
static void run_gcluster(cli_result *res, const char *const *extra)
{
    const char *argv[64] = {"job",
                            "submit",
                            "--kubeconfig",
                            jt_kubeconfig(),
                            "--name",
                            "pw-test",
                            "--compute-type",
                            "v6e-16",
                            "--num-slices",
                            "2",
                            "--pathways",
                            "--pathways-gcs-location",
                            "gs://bucket/scratch"};
    size_t n = 13;
    for (size_t i = 0; extra[i]; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    run_cli(res, argv, NULL); /* HOME is the test's own (jt_start) */
}

static void text_output_names_the_job_and_the_next_commands(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_created("pw-test");
    cli_result res;
    run_gcluster(&res, (const char *[]){"--command", "python train.py", "--image", IMAGE, NULL});
    assert_int_equal(res.exit_code, 0);
    assert_string_equal(res.out.data,
                        "Created Pathways job pw-test in namespace ns1, queued on user-queue "
                        "(v6e-16 x2).\n"
                        "  gcluster job inspect pw-test\n"
                        "  gcluster job logs pw-test -f\n");
    cli_result_free(&res);
}

/* A headless job's next commands end in job connect; their notes line up after the longest
 * noted command. */
static void headless_text_output_says_how_to_reach_the_proxy(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_created("pw-test");
    cli_result res;
    run_gcluster(&res, (const char *[]){"--pathways-headless", NULL});
    assert_int_equal(res.exit_code, 0);
    assert_string_equal(
        res.out.data,
        "Created headless Pathways job pw-test in namespace ns1, queued on user-queue "
        "(v6e-16 x2).\n"
        "  gcluster job inspect pw-test\n"
        "  gcluster job logs pw-test -f  # the IFRT proxy\n"
        "  gcluster job connect pw-test  # JAX_PLATFORMS=proxy "
        "JAX_BACKEND_TARGET=grpc://127.0.0.1:29000 (or -- python3 your_program.py)\n"
        "  gcluster job cancel pw-test   # when you are done\n");
    cli_result_free(&res);
}

static void json_output_follows_the_documented_schema(void **state)
{
    (void)state;
    json_t *nodes = head_node();
    add_nodes(nodes, "tpu-np-0", 4, "ct6e-standard-4t", "tpu-v6e-slice", "4x4");
    serve_one_queue("user-queue", split_queue(), nodes);
    serve_created("pw-test");
    cli_result res;
    run_gcluster(&res, (const char *[]){"--command", "python train.py", "--image", IMAGE,
                                        "--output", "json", NULL});
    assert_int_equal(res.exit_code, 0);
    json_error_t error;
    json_t *doc = json_loads(res.out.data, 0, &error);
    if (!doc)
        fail_msg("not JSON (%s): %s", error.text, res.out.data);
    assert_string_equal(json_string_value(json_object_get(doc, "name")), "pw-test");
    assert_string_equal(json_string_value(json_object_get(doc, "namespace")), NS);
    assert_string_equal(json_string_value(json_object_get(doc, "queue")), "user-queue");
    assert_string_equal(json_string_value(json_object_get(doc, "compute")), "v6e-16");
    assert_int_equal(json_integer_value(json_object_get(doc, "num_slices")), 2);
    assert_string_equal(json_string_value(json_object_get(doc, "pathways")), "yes");
    assert_string_equal(json_string_value(json_object_get(doc, "head_pool")), "cpu-np");
    assert_string_equal(json_string_value(json_object_get(doc, "image")), IMAGE);
    assert_true(json_is_false(json_object_get(doc, "dry_run")));
    const char *note = json_string_value(json_object_get(doc, "tpu_requests_note"));
    assert_non_null(note);
    assert_non_null(strstr(note, "the workers request only google.com/tpu: ClusterQueue"));
    const json_t *warnings = json_object_get(doc, "warnings");
    assert_int_equal(json_array_size(warnings), 1);
    assert_non_null(strstr(json_string_value(json_array_get(warnings, 0)), "wait for capacity"));
    const json_t *next = json_object_get(doc, "next_commands");
    assert_int_equal(json_array_size(next), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(next, 1), "command")),
                        "gcluster job logs pw-test -f");
    assert_true(json_is_null(json_object_get(json_array_get(next, 1), "note")));
    assert_true(json_is_null(json_object_get(doc, "final")));
    assert_true(json_is_null(json_object_get(doc, "diagnosis")));
    assert_int_equal(json_object_size(doc), 14); /* nothing undocumented */
    /* The warning and the note also reached stderr, for people. */
    assert_non_null(strstr(res.err.data, "gcluster: warning: the cluster has 4"));
    char *line = gc_xasprintf("gcluster: %s\n", note);
    assert_non_null(strstr(res.err.data, line));
    free(line);
    json_decref(doc);
    cli_result_free(&res);
}

/* The job failed while awaited: exit 3, and why, in text and in the JSON document. */
static void await_failure_says_why(void **state)
{
    (void)state;
    const char *formats[] = {"text", "json"};
    for (size_t f = 0; f < 2; f++) {
        serve_default_cluster();
        serve_created("pw-test");
        json_t *failed = jt_jobset("pw-test", 2);
        jt_condition(failed, "Failed", "ReachedMaxRestarts",
                     "jobset failed due to reaching max "
                     "number of restarts");
        jt_list(JOBSETS, "JobSetList", json_pack("[O]", failed)); /* the watch's first list */
        json_t *head = jt_pod("pw-test", "pathways-head", 0, 0, "Failed", "cpu-np-0");
        jt_pod_exit(head, "workload-container", 3);
        jt_list(JT_PODS, "PodList", json_pack("[O]", head)); /* the watch's look at the pods */
        /* What the diagnosis reads. */
        jt_get(JOBSETS "/pw-test", failed);
        jt_list(JT_PODS, "PodList", json_pack("[o]", head));
        jt_list(JT_JOBS, "JobList", json_array());
        jt_list(JT_EVENTS, "EventList", json_array());
        jt_list(JT_WORKLOADS, "WorkloadList", json_array());
        jt_answer("GET " JT_PODS "/pw-test-pathways-head-0-0-x0/log",
                  jt_json("{'body': 'ValueError: batch size 0\\n'}"));
        cli_result res;
        run_gcluster(&res,
                     (const char *[]){"--command", "python train.py", "--image", IMAGE,
                                      "--await-job-completion", "--output", formats[f], NULL});
        assert_int_equal(res.exit_code, 3);
        /* "the head failed 5d ago: ...": the age depends on the day the test runs. */
        const char *cause = ": container workload-container of pod pw-test-pathways-head-0-0-x0 "
                            "exited with code 3; no restarts were left (0 of at most 2)";
        const char *fix = "see why: gcluster job logs pw-test; fix it, then submit again";
        if (f == 0) {
            char *want = gc_xasprintf("%s\nFix:   %s\n", cause, fix);
            assert_non_null(strstr(res.out.data, "\nCause: the head failed "));
            assert_non_null(strstr(res.out.data, want));
            free(want);
        } else {
            json_t *doc = json_loads(res.out.data, 0, NULL);
            json_t *why = json_object_get(doc, "diagnosis");
            assert_string_equal(json_string_value(json_object_get(why, "state")), "Failed");
            assert_non_null(strstr(json_string_value(json_object_get(why, "cause")), cause));
            assert_string_equal(json_string_value(json_object_get(why, "fix")), fix);
            json_decref(doc);
        }
        cli_result_free(&res);
    }
}

static void dry_run_out_json_is_the_jobset(void **state)
{
    (void)state;
    cli_result res;
    run_gcluster(&res, (const char *[]){"--command", "python train.py", "--image", IMAGE,
                                        "--dry-run-out", "-", "--output", "json", NULL});
    assert_int_equal(res.exit_code, 0);
    json_error_t error;
    json_t *doc = json_loads(res.out.data, 0, &error);
    if (!doc)
        fail_msg("not JSON (%s): %s", error.text, res.out.data);
    assert_string_equal(json_string_value(json_object_get(doc, "kind")), "JobSet");
    assert_string_equal(json_string_value(json_object_get(doc, "apiVersion")),
                        "jobset.x-k8s.io/v1alpha2");
    assert_string_equal(queue_label_of(doc), "user-queue");
    assert_string_equal(head_pool_of(doc), "cpu-np");
    json_decref(doc);
    json_t *log = jt_requests();
    assert_int_equal(json_array_size(log), 0); /* offline: nothing contacted */
    json_decref(log);
    cli_result_free(&res);
}

static void bad_input_is_refused_before_anything_is_sent(void **state)
{
    (void)state;
    static const struct {
        const char *args[4];
        const char *message;
    } cases[] = {
        {{"--output", "xml", "--command", "x"}, "--output xml: use text, json or yaml"},
        {{"--command", "x", "--timeout", "soon"}, "--timeout"},
        {{"--priority", "Not_A_Name", "--command", "x"}, "--priority \"not_a_name\""},
        {{"--pathways-headless", "--command", "x"},
         "--command is not used with "
         "--pathways-headless"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        serve_default_cluster();
        cli_result res;
        const char *extra[7] = {cases[i].args[0],
                                cases[i].args[1],
                                cases[i].args[2],
                                cases[i].args[3],
                                "--image",
                                IMAGE,
                                NULL};
        run_gcluster(&res, extra);
        assert_int_equal(res.exit_code, GC_EXIT_USAGE);
        if (!strstr(res.err.data, cases[i].message))
            fail_msg("case %zu: \"%s\" does not say \"%s\"", i, res.err.data, cases[i].message);
        json_t *log = jt_requests();
        assert_int_equal(json_array_size(log), 0);
        json_decref(log);
        cli_result_free(&res);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(pathways_job_is_created_in_three_round_trips, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(dry_run_jobs_are_the_controllers, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(split_queue_workers_request_only_tpus, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(queue_and_head_pool_come_from_the_cluster, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(named_queue_must_exist, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(several_queues_without_user_queue_need_a_choice, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(no_head_pool_is_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(missing_cluster_queue_is_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(mtc_job_is_created_when_the_cluster_has_it, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(mtc_submit_makes_three_round_trips, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(dynamic_slice_submit_makes_three_round_trips, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(mtc_without_the_add_on_names_the_fix, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(mtc_without_the_csi_driver_names_the_fix, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(mtc_without_a_checkpoint_configuration_names_the_fix,
                                        jt_open, jt_close),
        cmocka_unit_test_setup_teardown(skip_prereqs_skips_the_feature_checks, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(plain_jobs_do_not_read_feature_objects, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(profile_mount_submit_makes_three_round_trips, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(profile_mount_reuses_a_gateway_object_that_is_there,
                                        jt_open, jt_close),
        cmocka_unit_test_setup_teardown(profile_mount_gateway_create_failure_names_it_and_the_fix,
                                        jt_open, jt_close),
        cmocka_unit_test_setup_teardown(profile_mount_without_its_storage_class_names_the_fix,
                                        jt_open, jt_close),
        cmocka_unit_test_setup_teardown(
            profile_mount_storage_class_one_may_not_read_is_taken_as_there, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(dynamic_slice_is_created_when_the_cluster_has_it, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(dynamic_slice_without_a_topology_names_the_fix, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(dynamic_slice_without_the_slice_check_names_the_fix,
                                        jt_open, jt_close),
        cmocka_unit_test_setup_teardown(dynamic_slice_without_admission_checks_served_names_the_fix,
                                        jt_open, jt_close),
        cmocka_unit_test_setup_teardown(dynamic_slice_on_a_queue_without_the_check_names_the_fix,
                                        jt_open, jt_close),
        cmocka_unit_test_setup_teardown(dynamic_slice_level_missing_from_the_topology_is_a_warning,
                                        jt_open, jt_close),
        cmocka_unit_test_setup_teardown(inactive_cluster_queue_is_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(stopped_cluster_queue_is_a_warning, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(quota_below_the_job_is_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(quota_a_cohort_may_lend_is_not_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(no_flavor_for_the_workers_is_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(untolerated_flavor_taint_is_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(head_pool_without_a_flavor_is_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(head_pool_flavor_on_an_empty_pool_names_deploy, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(uncovered_resource_is_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(flavors_pinning_pods_to_no_node_are_an_error, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(numa_affinity_on_a_split_queue_is_an_error, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(rejected_job_names_the_flag, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(jobs_the_user_may_not_create_are_not_checked, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(unreadable_cluster_queue_is_a_warning, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(older_kueue_costs_one_more_round_trip, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(unknown_priority_is_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(missing_namespace_is_refused, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(skip_prereqs_creates_without_the_checks, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(missing_jobset_and_kueue_stop_the_submit, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(missing_jobset_alone_is_said, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(skip_prereqs_does_not_read_the_jobset_api, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(name_taken_says_its_age_and_status, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(missing_jobset_crd_names_the_fix, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(server_dry_run_sends_dry_run_all, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(warnings_are_sent_and_kept, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(compute_is_refined_by_the_nodes, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(pending_compute_is_resolved_by_the_nodes, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(await_returns_the_final_status, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(await_failure_says_why, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(text_output_names_the_job_and_the_next_commands, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(headless_text_output_says_how_to_reach_the_proxy, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(json_output_follows_the_documented_schema, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(dry_run_out_json_is_the_jobset, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(bad_input_is_refused_before_anything_is_sent, jt_open,
                                        jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
