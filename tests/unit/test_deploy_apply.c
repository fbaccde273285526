/*
 * deploy against clusters testenv cannot imitate (the cluster tier covers the ordinary case):
 * one without Kueue or JobSet, and one whose Kueue serves only v1beta1. A scripted loopback
 * server answers; the test reads the report deploy returned, the events it sent and the
 * requests it made.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/deploy.h"
#include "gcluster/kube.h"
#include "kube_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLUEPRINT GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml"

static char *tmp;
static kube_test_pki pki;
static kube_test_server server;

static int setup(void **state)
{
    (void)state;
    tmp = kube_test_tmpdir();
    if (!kube_test_make_pki(tmp, &pki) || !kube_test_server_start(&server, &pki, tmp))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kube_test_server_stop(&server);
    kube_test_pki_free(&pki);
    kube_test_rmtree(tmp);
    return 0;
}

static int reset(void **state)
{
    (void)state;
    return kube_test_server_reset(&server) ? 0 : -1;
}

/* Scripts the server; the text uses ' for " to stay readable. */
static void script(const char *text)
{
    if (!kube_test_server_script_quoted(&server, text))
        fail_msg("bad script: %s", text);
}

/* The cluster has the head pool only (three cpu-np nodes). */
#define NODES                                                                                      \
    "'GET /api/v1/nodes': [{'json': {'kind': 'List', 'metadata': {}, 'items': ["                   \
    "{'metadata': {'name': 'n1', 'labels': {'cloud.google.com/gke-nodepool': 'cpu-np'}}},"         \
    "{'metadata': {'name': 'n2', 'labels': {'cloud.google.com/gke-nodepool': 'cpu-np'}}}]}}]"

typedef struct outcome {
    int rc;
    gc_error err;
    gc_deploy_report report;
    gc_buf events; /* one line per event: "<kind> <text>" */
} outcome;

static void record_event(void *ctx, gc_event_kind kind, const char *text)
{
    gc_buf_printf(ctx, "%d %s\n", (int)kind, text);
}

static void run_deploy(outcome *o, const gc_deploy_request *r)
{
    memset(o, 0, sizeof(*o));
    char path[512];
    snprintf(path, sizeof(path), "%s/kubeconfig", tmp);
    kube_test_write(path,
                    "current-context: t\n"
                    "clusters: [{name: c, cluster: {server: '%s', certificate-authority: '%s'}}]\n"
                    "users: [{name: u, user: {token: T}}]\n"
                    "contexts: [{name: t, context: {cluster: c, user: u}}]\n",
                    server.url, pki.ca);
    gc_blueprint bp;
    if (gc_blueprint_load(BLUEPRINT, NULL, 0, &bp, &o->err))
        fail_msg("%s", o->err.message);
    gc_kube *kube;
    gc_kube_options opts = {.kubeconfig = path};
    if (gc_kube_open(&opts, &kube, &o->err))
        fail_msg("%s", o->err.message);
    gc_buf_init(&o->events);
    gc_events events = {.emit = record_event, .ctx = &o->events};
    o->rc = gc_deploy(kube, &bp, r, &events, &o->report, &o->err);
    gc_kube_close(kube);
    gc_blueprint_free(&bp);
}

static void outcome_free(outcome *o)
{
    gc_deploy_report_free(&o->report);
    gc_buf_free(&o->events);
}

static const gc_deploy_pool *find_pool(const gc_deploy_report *r, const char *name)
{
    for (size_t i = 0; i < r->pool_count; i++)
        if (!strcmp(r->pools[i].name, name))
            return &r->pools[i];
    fail_msg("no pool %s in the report", name);
    return NULL;
}

/* How many requests had this method (and a path starting with `prefix`). */
static int count_requests(const char *method, const char *prefix)
{
    json_t *log = kube_test_server_log(&server);
    int n = 0;
    size_t i;
    json_t *req;
    json_array_foreach(log, i, req)
    {
        if (!strcmp(json_string_value(json_object_get(req, "method")), method) &&
            !strncmp(json_string_value(json_object_get(req, "path")), prefix, strlen(prefix)))
            n++;
    }
    json_decref(log);
    return n;
}

static void cluster_without_kueue_or_jobset(void **state)
{
    (void)state;
    script("{" NODES "}"); /* /apis/kueue.x-k8s.io and /apis/jobset.x-k8s.io answer 404 */
    outcome o;
    gc_deploy_request r = {.cluster = "c", .location = "us-east5"};
    run_deploy(&o, &r);
    assert_int_equal(o.rc, GC_EXIT_RUNTIME);
    assert_non_null(strstr(o.err.message, "lacks Kueue or JobSet"));
    const gc_deploy_report *rep = &o.report;
    assert_true(rep->started);
    assert_string_equal(rep->cluster, "c");
    assert_string_equal(rep->location, "us-east5");
    assert_string_equal(rep->head_pool, "cpu-np");
    assert_int_equal(rep->missing_count, 2);
    assert_string_equal(rep->missing[0].name, "Kueue");
    assert_string_equal(rep->missing[0].install_command,
                        "kubectl apply --server-side -f https://github.com/"
                        "kubernetes-sigs/kueue/releases/download/v0.17.1/manifests.yaml");
    assert_string_equal(rep->missing[1].name, "JobSet");
    /* The node-pool report still says what is missing and how to create it. */
    assert_true(rep->pools_listed);
    assert_int_equal(find_pool(rep, "cpu-np")->nodes, 2);
    const gc_deploy_pool *tpu = find_pool(rep, "tpu-v6e-np-0");
    assert_int_equal(tpu->nodes, -1);
    assert_false(tpu->created);
    assert_non_null(strstr(tpu->create_command, "gcloud container node-pools create tpu-v6e-np-0 "
                                                "--project=my-project --cluster=c "
                                                "--location=us-east5"));
    assert_null(find_pool(rep, "cpu-np")->create_command);
    /* Nothing was applied, and nothing was said to be. */
    assert_null(rep->kueue_api);
    assert_int_equal(rep->object_count, 0);
    assert_int_equal(count_requests("PATCH", "/"), 0);
    outcome_free(&o);
}

static void kueue_serving_only_v1beta1(void **state)
{
    (void)state;
    script("{" NODES ","
           "'GET /apis/kueue.x-k8s.io': [{'json': {'kind': 'APIGroup', 'name': 'kueue.x-k8s.io',"
           " 'versions': [{'groupVersion': 'kueue.x-k8s.io/v1beta1', 'version': 'v1beta1'}]}}],"
           "'GET /apis/jobset.x-k8s.io': [{'json': {'kind': 'APIGroup', 'versions': "
           "[{'groupVersion': 'jobset.x-k8s.io/v1alpha2', 'version': 'v1alpha2'}]}}],"
           "'GET /apis/kueue.x-k8s.io/v1beta1': [{'json': {'kind': 'APIResourceList', "
           "'resources': [{'name': 'resourceflavors', 'kind': 'ResourceFlavor', 'namespaced': "
           "false}]}}]}");
    outcome o;
    gc_deploy_request r = {.plan = true};
    run_deploy(&o, &r);
    /* The first object is a v1beta1 ResourceFlavor; its dry-run apply is unscripted (404). */
    assert_int_not_equal(o.rc, 0);
    assert_true(o.report.plan);
    assert_string_equal(o.report.kueue_api, "kueue.x-k8s.io/v1beta1");
    /* The object that failed is reported by the error, not as applied. */
    assert_int_equal(o.report.object_count, 0);
    assert_non_null(
        strstr(o.err.message, "applying resourceflavor.kueue.x-k8s.io/pathways-flavor"));
    json_t *log = kube_test_server_log(&server);
    const json_t *patch = NULL, *req;
    size_t i;
    json_array_foreach(log, i, req)
    {
        if (!strcmp(json_string_value(json_object_get(req, "method")), "PATCH"))
            patch = req;
    }
    assert_non_null(patch);
    assert_string_equal(json_string_value(json_object_get(patch, "path")),
                        "/apis/kueue.x-k8s.io/v1beta1/resourceflavors/pathways-flavor");
    assert_non_null(strstr(json_string_value(json_object_get(patch, "query")), "dryRun=All"));
    assert_non_null(
        strstr(json_string_value(json_object_get(patch, "query")), "fieldManager=gcluster"));
    assert_non_null(strstr(json_string_value(json_object_get(patch, "body")),
                           "\"apiVersion\":\"kueue.x-k8s.io/v1beta1\""));
    json_decref(log);
    outcome_free(&o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(cluster_without_kueue_or_jobset, reset),
        cmocka_unit_test_setup(kueue_serving_only_v1beta1, reset),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
