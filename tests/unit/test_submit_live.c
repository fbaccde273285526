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
#define NODES          "/api/v1/nodes"
#define POOL_LABEL     "cloud.google.com/gke-nodepool"
#define IMAGE          "us-docker.pkg.dev/p/r/jax:1"

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/kube/test_server.py");
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

/* A ClusterQueue whose resource groups cover these resources ("google.com/tpu cpu memory" is
 * one group; groups are separated by '|'). */
static json_t *cluster_queue(const char *name, const char *groups)
{
    json_t *q = named(name);
    json_t *list = json_array();
    char *copy = strdup(groups);
    for (char *save, *g = strtok_r(copy, "|", &save); g; g = strtok_r(NULL, "|", &save)) {
        json_t *covered = json_array();
        for (char *save2, *r = strtok_r(g, " ", &save2); r; r = strtok_r(NULL, " ", &save2))
            json_array_append_new(covered, json_string(r));
        json_array_append_new(list, json_pack("{s:o}", "coveredResources", covered));
    }
    free(copy);
    json_object_set_new(q, "spec", json_pack("{s:o}", "resourceGroups", list));
    return q;
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

/* Scripts the pre-flight reads: LocalQueues, ClusterQueues and nodes (all stolen). */
static void serve_cluster(json_t *local_queues, json_t *cluster_queues, json_t *nodes)
{
    jt_list(LOCAL_QUEUES, "LocalQueueList", local_queues);
    jt_list(CLUSTER_QUEUES, "ClusterQueueList", cluster_queues);
    jt_list(NODES, "NodeList", nodes);
}

/* One LocalQueue on ClusterQueue cluster-queue, whose groups cover `groups` (see
 * cluster_queue), and these nodes (stolen). */
static void serve_one_queue(const char *queue, const char *groups, json_t *nodes)
{
    serve_cluster(json_pack("[o]", local_queue(queue, "cluster-queue")),
                  json_pack("[o]", cluster_queue("cluster-queue", groups)), nodes);
}

#define UNIFIED "google.com/tpu cpu memory"

static void serve_default_cluster(void)
{
    serve_one_queue("user-queue", UNIFIED, v6e_nodes());
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

static size_t count_method(const json_t *log, const char *method)
{
    size_t n = 0, i;
    const json_t *req;
    json_array_foreach(log, i, req) n +=
        !strcmp(json_string_value(json_object_get(req, "method")), method);
    return n;
}

static const char *param(const json_t *req, const char *key)
{
    return json_string_value(json_object_get(json_object_get(req, "params"), key));
}

/* The one POST, and the JobSet it carried (decref it). */
static json_t *posted_jobset(const json_t *log)
{
    size_t i;
    const json_t *req;
    json_array_foreach(log, i, req)
    {
        if (strcmp(json_string_value(json_object_get(req, "method")), "POST"))
            continue;
        assert_string_equal(json_string_value(json_object_get(req, "path")), JOBSETS);
        json_error_t error;
        json_t *body = json_loads(json_string_value(json_object_get(req, "body")), 0, &error);
        if (!body)
            fail_msg("POST body is not JSON: %s", error.text);
        return body;
    }
    fail_msg("nothing was POSTed");
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

static const json_t *pod_spec(const json_t *rj)
{
    return json_object_get(
        json_object_get(json_object_get(json_object_get(rj, "template"), "spec"), "template"),
        "spec");
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

/* Library tests */

static void pathways_job_is_created_in_two_round_trips(void **state)
{
    (void)state;
    serve_default_cluster();
    serve_created("pw-test");
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
    assert_int_equal(res->warnings.count, 0);
    assert_null(strstr(jt_recorded(), "warning:"));
    assert_int_equal(res->next_count, 2);
    assert_string_equal(res->next[0].command, "gcluster job inspect pw-test");
    assert_string_equal(res->next[1].command, "gcluster job logs pw-test -f");
    assert_false(res->awaited);

    /* The pre-flight reads went out together, then one POST: nothing else. */
    json_t *log = jt_requests();
    assert_int_equal(json_array_size(log), 4);
    assert_int_equal(o.requests, 4);
    assert_int_equal(count_method(log, "GET"), 3);
    const json_t *post = json_array_get(log, 3);
    assert_string_equal(json_string_value(json_object_get(post, "method")), "POST");
    assert_string_equal(param(post, "fieldValidation"), "Strict");
    assert_null(param(post, "dryRun"));
    json_t *jobset = posted_jobset(log);
    assert_string_equal(queue_label_of(jobset), "user-queue");
    assert_string_equal(head_pool_of(jobset), "cpu-np");
    assert_int_equal(
        json_integer_value(json_object_get(replicated_job(jobset, "worker"), "replicas")), 2);
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
    serve_one_queue("team-q", UNIFIED, nodes);
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

/* An error before the POST: the message, exit 2, and nothing created. */
static void assert_refused(const outcome *o, const char *message)
{
    assert_int_equal(o->rc, GC_EXIT_USAGE);
    if (!strstr(o->err.message, message))
        fail_msg("\"%s\" does not say \"%s\"", o->err.message, message);
    json_t *log = jt_requests();
    assert_int_equal(count_method(log, "POST"), 0);
    json_decref(log);
}

static void named_queue_must_exist(void **state)
{
    (void)state;
    serve_default_cluster();
    gc_submit_request r = pathways_request();
    r.queue = "nope";
    outcome o;
    run_submit(&o, &r);
    assert_refused(&o, "--queue nope: no such LocalQueue in namespace ns1 (it has: "
                       "user-queue)");
    outcome_free(&o);
}

static void several_queues_without_user_queue_need_a_choice(void **state)
{
    (void)state;
    serve_cluster(json_pack("[o, o]", local_queue("a", "cq"), local_queue("b", "cq")), json_array(),
                  v6e_nodes());
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_refused(&o, "has several LocalQueues (a, b) and none is named user-queue");
    outcome_free(&o);
}

static void no_head_pool_is_an_error(void **state)
{
    (void)state;
    json_t *nodes = json_array();
    add_nodes(nodes, "tpu-np-0", 4, "ct6e-standard-4t", "tpu-v6e-slice", "4x4");
    serve_one_queue("user-queue", UNIFIED, nodes);
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_refused(&o, "no node pool for the Pathways head");
    assert_non_null(strstr(o.err.message, "--pathways-head-np"));
    outcome_free(&o);
}

static void unknown_priority_is_an_error(void **state)
{
    (void)state;
    serve_default_cluster();
    jt_list(PRIORITIES, "PriorityClassList", json_array());
    gc_submit_request r = pathways_request();
    r.priority = "Urgent";
    outcome o;
    run_submit(&o, &r);
    assert_refused(&o, "--priority urgent: no such PriorityClass in the cluster");
    /* Asked for in the same round trip, by its Kubernetes (lower-case) name. */
    json_t *log = jt_requests();
    assert_int_equal(json_array_size(log), 4);
    size_t i;
    const json_t *req, *priority = NULL;
    json_array_foreach(log, i, req)
    {
        if (!strcmp(json_string_value(json_object_get(req, "path")), PRIORITIES))
            priority = req;
    }
    assert_non_null(priority);
    assert_string_equal(param(priority, "fieldSelector"), "metadata.name=urgent");
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
    const json_t *post = json_array_get(log, json_array_size(log) - 1);
    assert_string_equal(json_string_value(json_object_get(post, "method")), "POST");
    assert_string_equal(param(post, "dryRun"), "All");
    assert_string_equal(param(post, "fieldValidation"), "Strict");
    json_decref(log);
    outcome_free(&o);
}

static void warnings_are_sent_and_kept(void **state)
{
    (void)state;
    json_t *nodes = head_node();
    add_nodes(nodes, "tpu-np-0", 4, "ct6e-standard-4t", "tpu-v6e-slice", "4x4");
    serve_one_queue("user-queue", "google.com/tpu|cpu memory", nodes);
    serve_created("pw-test");
    gc_submit_request r = pathways_request();
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0); /* both may resolve: created anyway */
    assert_int_equal(o.result.warnings.count, 2);
    assert_non_null(strstr(o.result.warnings.items[0],
                           "ClusterQueue cluster-queue does not cover google.com/tpu, cpu and "
                           "memory in one resource group"));
    assert_non_null(strstr(o.result.warnings.items[1],
                           "the cluster has 4 tpu-v6e-slice hosts with topology 4x4, and this job "
                           "needs 8 (2 slices x 4): it will wait for capacity"));
    char *sent = gc_xasprintf("warning: %s\nwarning: %s\n", o.result.warnings.items[0],
                              o.result.warnings.items[1]);
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
    serve_one_queue("user-queue", UNIFIED, nodes);
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
    serve_one_queue("user-queue", UNIFIED, nodes);
    serve_created("pw-test");
    outcome o;
    run_submit(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_false(o.plan.compute.pending);
    assert_string_equal(o.result.compute, "tpu7x-16");
    json_t *log = jt_requests();
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
    assert_string_equal(json_string_value(json_object_get(watch, "path")), JOBSETS);
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

/* The notes of a headless job's next commands line up after the longest noted command. */
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
        "  gcluster job logs pw-test -f                 # the IFRT proxy\n"
        "  kubectl get pods -l jobset.sigs.k8s.io/jobset-name=pw-test,"
        "jobset.sigs.k8s.io/replicatedjob-name=pathways-head\n"
        "  kubectl port-forward <that pod> 29000:29000  # then "
        "JAX_BACKEND_TARGET=grpc://127.0.0.1:29000 JAX_PLATFORMS=proxy\n"
        "  gcluster job cancel pw-test                  # when you are done\n");
    cli_result_free(&res);
}

static void json_output_follows_the_documented_schema(void **state)
{
    (void)state;
    serve_cluster(json_pack("[o]", local_queue("user-queue", "cluster-queue")),
                  json_pack("[o]", cluster_queue("cluster-queue", "google.com/tpu|cpu memory")),
                  v6e_nodes());
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
    const json_t *warnings = json_object_get(doc, "warnings");
    assert_int_equal(json_array_size(warnings), 1);
    assert_non_null(strstr(json_string_value(json_array_get(warnings, 0)), "does not cover"));
    const json_t *next = json_object_get(doc, "next_commands");
    assert_int_equal(json_array_size(next), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(next, 1), "command")),
                        "gcluster job logs pw-test -f");
    assert_true(json_is_null(json_object_get(json_array_get(next, 1), "note")));
    assert_true(json_is_null(json_object_get(doc, "final")));
    assert_true(json_is_null(json_object_get(doc, "diagnosis")));
    assert_int_equal(json_object_size(doc), 13); /* nothing undocumented */
    /* The warning also reached stderr, for people. */
    assert_non_null(strstr(res.err.data, "gcluster: warning: ClusterQueue cluster-queue"));
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
        cmocka_unit_test_setup_teardown(pathways_job_is_created_in_two_round_trips, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(queue_and_head_pool_come_from_the_cluster, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(named_queue_must_exist, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(several_queues_without_user_queue_need_a_choice, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(no_head_pool_is_an_error, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(unknown_priority_is_an_error, jt_open, jt_close),
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
