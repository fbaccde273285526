/*
 * src/cluster/ against the scripted API server and a fake gcloud: describe groups nodes into
 * pools with their accelerators, reads the queues' quota and usage from Kueue's status, falls
 * back to Kueue's v1beta1, reports a cluster without Kueue, and takes the releases from the
 * controller Deployments; list asks gcloud for the configured project's clusters. Then the
 * commands through the real binary: cluster describe -o json and job inspect without a name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/cluster.h"
#include "job_test.h"
#include "kube_test.h"
#include "run_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

static json_t *node(const char *name, const char *pool, const char *accel, const char *topo,
                    const char *tpus, bool ready)
{
    json_t *n = jt_json("{'metadata': {'labels': {}}, 'status': {'allocatable': {},"
                        " 'conditions': []}}");
    json_t *labels = json_object_get(json_object_get(n, "metadata"), "labels");
    json_object_set_new(json_object_get(n, "metadata"), "name", json_string(name));
    json_object_set_new(labels, "cloud.google.com/gke-nodepool", json_string(pool));
    json_object_set_new(labels, "node.kubernetes.io/instance-type",
                        json_string(accel ? "ct6e-standard-4t" : "n4-standard-64"));
    if (accel)
        json_object_set_new(labels, "cloud.google.com/gke-tpu-accelerator", json_string(accel));
    if (topo)
        json_object_set_new(labels, "cloud.google.com/gke-tpu-topology", json_string(topo));
    if (tpus)
        json_object_set_new(json_object_get(json_object_get(n, "status"), "allocatable"),
                            "google.com/tpu", json_string(tpus));
    json_array_append_new(
        json_object_get(json_object_get(n, "status"), "conditions"),
        json_pack("{s:s, s:s}", "type", "Ready", "status", ready ? "True" : "False"));
    return n;
}

static void script_nodes(void)
{
    jt_list("/api/v1/nodes", "NodeList",
            json_pack("[o, o, o, o]", node("t1", "tpu-np-1", "tpu-v6e-slice", "4x4", "4", true),
                      node("t2", "tpu-np-1", "tpu-v6e-slice", "4x4", "4", false),
                      node("c1", "cpu-np", NULL, NULL, NULL, true),
                      node("t3", "tpu-np-2", "tpu-v6e-slice", "4x4", "4", true)));
}

static json_t *cluster_queue(void)
{
    return jt_json(
        "{'metadata': {'name': 'cluster-queue'}, 'spec': {'cohort': 'all', 'resourceGroups': ["
        " {'coveredResources': ['google.com/tpu'], 'flavors': [{'name': 'v6e', 'resources': ["
        "  {'name': 'google.com/tpu', 'nominalQuota': 32}]}]}]},"
        " 'status': {'pendingWorkloads': 2, 'reservingWorkloads': 1, 'admittedWorkloads': 1,"
        "  'flavorsReservation': [{'name': 'v6e', 'resources': [{'name': 'google.com/tpu',"
        "   'total': '16', 'borrowed': '0'}]}]}}");
}

static void script_kueue(const char *version)
{
    char path[256];
    snprintf(path, sizeof(path), "/apis/kueue.x-k8s.io/%s/clusterqueues", version);
    jt_list(path, "ClusterQueueList", json_pack("[o]", cluster_queue()));
    snprintf(path, sizeof(path), "/apis/kueue.x-k8s.io/%s/localqueues", version);
    jt_list(path, "LocalQueueList",
            jt_json("[{'metadata': {'name': 'user-queue', 'namespace': 'ns1'},"
                    " 'spec': {'clusterQueue': 'cluster-queue'},"
                    " 'status': {'pendingWorkloads': 2, 'reservingWorkloads': 1,"
                    "  'admittedWorkloads': 1}}]"));
    snprintf(path, sizeof(path), "/apis/kueue.x-k8s.io/%s/workloads", version);
    jt_list(path, "WorkloadList",
            jt_json("[{'metadata': {'name': 'jobset-pw-1', 'namespace': 'ns1',"
                    "  'ownerReferences': [{'kind': 'JobSet', 'name': 'pw'}]},"
                    " 'spec': {'queueName': 'user-queue'},"
                    " 'status': {'admission': {'clusterQueue': 'cluster-queue'}, 'conditions': ["
                    "  {'type': 'QuotaReserved', 'status': 'True'},"
                    "  {'type': 'Admitted', 'status': 'True'}]}},"
                    " {'metadata': {'name': 'jobset-q-2', 'namespace': 'ns1',"
                    "  'ownerReferences': [{'kind': 'JobSet', 'name': 'q'}]},"
                    " 'spec': {'queueName': 'user-queue'}, 'status': {}}]"));
    jt_get("/apis/kueue.x-k8s.io",
           json_pack("{s:s, s:{s:s}}", "kind", "APIGroup", "preferredVersion", "version", version));
}

static void script_versions(void)
{
    jt_get("/apis/apps/v1/namespaces/kueue-system/deployments/kueue-controller-manager",
           jt_json("{'spec': {'template': {'spec': {'containers': [{'name': 'manager',"
                   " 'image': 'registry.k8s.io/kueue/kueue:v0.13.4@sha256:abc'}]}}}}"));
    jt_get("/apis/jobset.x-k8s.io",
           jt_json("{'kind': 'APIGroup', 'preferredVersion': {'version': 'v1alpha2'}}"));
}

static void test_describe(void **state)
{
    (void)state;
    script_nodes();
    script_kueue("v1beta2");
    script_versions();
    gc_cluster_request req = {.pools = true, .workloads = true};
    gc_cluster_report r;
    gc_error err = {0};
    assert_int_equal(gc_cluster_describe(jt_kube(), &req, &r, &err), 0);
    assert_int_equal(r.nodes, 4);
    assert_int_equal(r.ready, 3);
    assert_int_equal(r.pool_count, 3);
    assert_string_equal(r.pools[0].name, "cpu-np"); /* by name */
    assert_null(r.pools[0].accelerator);
    assert_string_equal(r.pools[1].name, "tpu-np-1");
    assert_string_equal(r.pools[1].accelerator, "tpu-v6e-slice");
    assert_string_equal(r.pools[1].topology, "4x4");
    assert_int_equal(r.pools[1].nodes, 2);
    assert_int_equal(r.pools[1].ready, 1);
    assert_int_equal(r.pools[1].chips, 8);
    assert_string_equal(r.kueue_api, "v1beta2");
    assert_string_equal(r.kueue_version, "v0.13.4");
    assert_null(r.jobset_version); /* no Deployment scripted */
    assert_string_equal(r.jobset_api, "v1alpha2");
    assert_int_equal(r.cluster_queue_count, 1);
    const gc_cluster_queue *q = &r.cluster_queues[0];
    assert_string_equal(q->cohort, "all");
    assert_int_equal(q->pending, 2);
    assert_int_equal(q->admitted, 1);
    assert_int_equal(q->quota_count, 1);
    assert_string_equal(q->quotas[0].flavor, "v6e");
    assert_string_equal(q->quotas[0].nominal, "32");
    assert_string_equal(q->quotas[0].reserved, "16");
    assert_int_equal(r.local_queue_count, 1);
    assert_string_equal(r.local_queues[0].cluster_queue, "cluster-queue");
    assert_int_equal(r.workload_count, 2);
    assert_string_equal(r.workloads[0].job, "pw");
    assert_string_equal(r.workloads[0].state, "admitted");
    assert_string_equal(r.workloads[1].state, "pending");
    assert_null(r.workloads[1].cluster_queue);
    gc_cluster_report_free(&r);
    /* One round trip for all of it. */
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 1);
}

static void test_older_kueue(void **state)
{
    (void)state;
    script_nodes();
    script_kueue("v1beta1"); /* v1beta2 answers 404 */
    gc_cluster_request req = {.pools = false};
    gc_cluster_report r;
    gc_error err = {0};
    assert_int_equal(gc_cluster_describe(jt_kube(), &req, &r, &err), 0);
    assert_string_equal(r.kueue_api, "v1beta1");
    assert_int_equal(r.cluster_queue_count, 1);
    assert_int_equal(r.pool_count, 0); /* not asked */
    gc_cluster_report_free(&r);
}

static void test_no_kueue(void **state)
{
    (void)state;
    script_nodes();
    gc_cluster_request req = {.pools = true};
    gc_cluster_report r;
    gc_error err = {0};
    assert_int_equal(gc_cluster_describe(jt_kube(), &req, &r, &err), 0);
    assert_null(r.kueue_api);
    assert_int_equal(r.cluster_queue_count, 0);
    assert_int_equal(r.pool_count, 3);
    gc_cluster_report_free(&r);
}

static void test_forbidden_nodes_fail(void **state)
{
    (void)state;
    jt_answer("GET /api/v1/nodes",
              jt_json("{'status': 403, 'json': {'kind': 'Status', 'code': 403,"
                      " 'reason': 'Forbidden', 'message': 'nodes is forbidden'}}"));
    gc_cluster_request req = {.pools = true};
    gc_cluster_report r;
    gc_error err = {0};
    assert_int_not_equal(gc_cluster_describe(jt_kube(), &req, &r, &err), 0);
    assert_non_null(strstr(err.message, "forbidden"));
}

/* A fake gcloud: `config get-value project` prints $FAKE_PROJECT, `container clusters list`
 * prints two clusters when --project is proj-1 and records its arguments. */
static char *fake_dir;

static void write_fake_gcloud(const char *project)
{
    fake_dir = kube_test_tmpdir();
    char script[4096];
    snprintf(script, sizeof(script),
             "#!/bin/sh\n"
             "echo \"$@\" >> '%s/args'\n"
             "if [ \"$1 $2 $3\" = 'config get-value project' ]; then echo '%s'; exit 0; fi\n"
             "if [ \"$1 $2 $3 $4 $5\" = 'container clusters list --project proj-1' ]; then\n"
             "  echo '[{\"name\": \"tpu-cluster\", \"location\": \"us-east5\", \"status\": "
             "\"RUNNING\", \"currentMasterVersion\": \"1.35.1-gke.100\", \"currentNodeCount\": "
             "12}, {\"name\": \"cpu\", \"location\": \"us-central1-a\", \"status\": "
             "\"PROVISIONING\"}]'\n"
             "  exit 0\nfi\n"
             "echo 'ERROR: (gcloud) unexpected' >&2; exit 1\n",
             fake_dir, project);
    kube_test_put(fake_dir, "gcloud", script, 0755);
}

static void test_list_from_gcloud(void **state)
{
    (void)state;
    write_fake_gcloud("proj-1");
    char *gcloud = gc_xasprintf("%s/gcloud", fake_dir);
    gc_cluster_list_request req = {.gcloud = gcloud};
    gc_cluster_list list;
    gc_error err = {0};
    assert_int_equal(gc_cluster_list_clusters(&req, &list, &err), 0);
    assert_string_equal(list.project, "proj-1");
    assert_int_equal(list.count, 2);
    assert_string_equal(list.items[0].name, "tpu-cluster");
    assert_string_equal(list.items[0].location, "us-east5");
    assert_int_equal(list.items[0].nodes, 12);
    assert_null(list.items[1].version);
    gc_cluster_list_free(&list);
    /* --project wins: gcloud's configuration is not asked. */
    req.project = "other";
    assert_int_not_equal(gc_cluster_list_clusters(&req, &list, &err), 0);
    assert_non_null(strstr(err.message, "unexpected"));
    char *args_path = gc_xasprintf("%s/args", fake_dir);
    char *args = kube_test_read(args_path);
    assert_string_equal(args, "config get-value project\n"
                              "container clusters list --project proj-1 --format=json\n"
                              "container clusters list --project other --format=json\n");
    free(args);
    free(args_path);
    free(gcloud);
    kube_test_rmtree(fake_dir);
}

static void test_list_without_a_project(void **state)
{
    (void)state;
    write_fake_gcloud("(unset)");
    char *gcloud = gc_xasprintf("%s/gcloud", fake_dir);
    gc_cluster_list_request req = {.gcloud = gcloud};
    gc_cluster_list list;
    gc_error err = {0};
    assert_int_equal(gc_cluster_list_clusters(&req, &list, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "gcloud config set project"));
    req.gcloud = "/nonexistent/gcloud";
    assert_int_not_equal(gc_cluster_list_clusters(&req, &list, &err), 0);
    assert_non_null(strstr(err.message, "not installed"));
    free(gcloud);
    kube_test_rmtree(fake_dir);
}

/* The binary: cluster describe -o json and job inspect without a name, and cluster list with the
 * fake gcloud first on $PATH. */
static void run(cli_result *res, const char *const *args, const char *path_dir)
{
    char kubeconfig[512], path[1024];
    snprintf(kubeconfig, sizeof(kubeconfig), "KUBECONFIG=%s", jt_kubeconfig());
    snprintf(path, sizeof(path), "PATH=%s:/usr/bin:/bin", path_dir ? path_dir : "/nonexistent");
    const char *env[] = {"HOME=/nonexistent-home-for-tests", kubeconfig, path, NULL};
    run_cli(res, args, env);
}

static void test_commands(void **state)
{
    (void)state;
    script_nodes();
    script_kueue("v1beta2");
    script_versions();
    cli_result res;
    run(&res, (const char *const[]){"cluster", "describe", "-o", "json", NULL}, NULL);
    assert_int_equal(res.exit_code, 0);
    json_t *doc = json_loads(res.out.data, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_array_size(json_object_get(doc, "nodePools")), 3);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(doc, "kueue"), "version")), "v0.13.4");
    assert_null(json_object_get(doc, "workloads"));
    json_decref(doc);
    cli_result_free(&res);

    script_nodes();
    script_kueue("v1beta2");
    script_versions();
    run(&res, (const char *const[]){"job", "inspect", NULL}, NULL);
    assert_int_equal(res.exit_code, 0);
    assert_non_null(strstr(res.out.data, "tpu-np-1"));
    assert_non_null(strstr(res.out.data, "v6e:google.com/tpu 16/32"));
    assert_non_null(strstr(res.out.data, "admitted"));
    cli_result_free(&res);

    write_fake_gcloud("proj-1");
    run(&res, (const char *const[]){"cluster", "list", "-o", "json", NULL}, fake_dir);
    assert_int_equal(res.exit_code, 0);
    doc = json_loads(res.out.data, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(doc, "project")), "proj-1");
    assert_int_equal(json_array_size(json_object_get(doc, "clusters")), 2);
    json_decref(doc);
    cli_result_free(&res);
    kube_test_rmtree(fake_dir);
}

/* job inspect -o FILE writes the report there (nothing on stdout); -s prints it as well. */
static void test_inspect_file(void **state)
{
    (void)state;
    char *dir = kube_test_tmpdir();
    char *file = gc_xasprintf("%s/inspect.log", dir);
    script_nodes();
    script_kueue("v1beta2");
    script_versions();
    cli_result res;
    run(&res, (const char *const[]){"job", "inspect", "-o", file, NULL}, NULL);
    assert_int_equal(res.exit_code, 0);
    assert_int_equal(res.out.len, 0);
    char *text = kube_test_read(file);
    assert_non_null(strstr(text, "Node pools:"));
    free(text);
    cli_result_free(&res);
    script_nodes();
    script_kueue("v1beta2");
    script_versions();
    run(&res, (const char *const[]){"job", "inspect", "-o", file, "-s", "--format", "json", NULL},
        NULL);
    assert_int_equal(res.exit_code, 0);
    text = kube_test_read(file);
    assert_string_equal(text, res.out.data);
    assert_non_null(strstr(text, "\"nodePools\""));
    free(text);
    cli_result_free(&res);
    free(file);
    kube_test_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_describe, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_older_kueue, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_no_kueue, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_forbidden_nodes_fail, jt_open, jt_close),
        cmocka_unit_test(test_list_from_gcloud),
        cmocka_unit_test(test_list_without_a_project),
        cmocka_unit_test_setup_teardown(test_commands, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_inspect_file, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
