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

#include "deploy/internal.h"
#include "gcluster/deploy.h"
#include "gcluster/kube.h"
#include "kube_test.h"
#include "run_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BLUEPRINT GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml"

static kube_test_env *env; /* the program's directory, PKI and scripted server */

static int setup(void **state)
{
    int rc = kube_test_env_setup(state);
    env = *state;
    return rc;
}

/* Scripts the server; the text uses ' for " to stay readable. */
static void script(const char *text)
{
    kube_test_env_script(env, text);
}

/* The cluster has the head pool only (three cpu-np nodes). */
#define NODES                                                                                      \
    "'GET /api/v1/nodes': [{'json': {'kind': 'List', 'metadata': {}, 'items': ["                   \
    "{'metadata': {'name': 'n1', 'labels': {'cloud.google.com/gke-nodepool': 'cpu-np'}}},"         \
    "{'metadata': {'name': 'n2', 'labels': {'cloud.google.com/gke-nodepool': 'cpu-np'}}}]}}]"

typedef struct outcome {
    int rc;
    gc_error err;
    gc_deploy_result result; /* the pipeline's, its report below */
    gc_deploy_report *report;
    gc_buf events; /* one line per event: "<kind> <text>" */
} outcome;

static void record_event(void *ctx, gc_event_kind kind, const char *text)
{
    gc_buf_printf(ctx, "%d %s\n", (int)kind, text);
}

static char *write_kubeconfig(void)
{
    char *path = gc_xasprintf("%s/kubeconfig", env->tmp);
    kube_test_write_kubeconfig(path, &env->server, env->pki.ca, NULL);
    return path;
}

/* The pipeline's way to the scripted server. */
static int open_scripted(void *ctx, bool may_write, gc_kube **kube, gc_error *err)
{
    (void)may_write;
    gc_kube_options opts = {.kubeconfig = ctx};
    return gc_kube_open(&opts, kube, err);
}

/* The whole pipeline, its Google Cloud stage answered by /bin/true (every resource there). */
static void run_deploy(outcome *o, const gc_deploy_request *r)
{
    memset(o, 0, sizeof(*o));
    char *path = write_kubeconfig();
    gc_blueprint bp;
    if (deploy_blueprint_load(BLUEPRINT, NULL, 0, &bp, &o->err))
        fail_msg("%s", o->err.message);
    gc_buf_init(&o->events);
    gc_events events = {.emit = record_event, .ctx = &o->events};
    o->rc = gc_deploy_run(&bp, r, false, "/bin/true", &(gc_deploy_connect){open_scripted, path},
                          &events, &o->result, &o->err);
    o->report = &o->result.report;
    free(path);
    gc_blueprint_free(&bp);
}

static void outcome_free(outcome *o)
{
    gc_deploy_result_free(&o->result);
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
    json_t *log = kube_test_server_log(&env->server);
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

/* A file in --manifests-dir named like the release it stands for. */
static char *write_release(const char *dir, const char *name, const char *text)
{
    char *path = gc_xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* Kueue and JobSet are missing, so deploy installs them from their release files; a file
 * whose SHA-256 is not the release's is refused before any object is sent. */
static void cluster_without_kueue_or_jobset(void **state)
{
    (void)state;
    script("{" NODES "}"); /* /apis/kueue.x-k8s.io and /apis/jobset.x-k8s.io answer 404 */
    char *dir = gc_xasprintf("%s/manifests", env->tmp);
    mkdir(dir, 0700);
    free(write_release(dir, "jobset-v0.10.1.yaml", "kind: Namespace\n"));
    free(write_release(dir, "kueue-v0.17.1.yaml", "kind: Namespace\n"));
    outcome o;
    gc_deploy_request r = {.cluster = "c", .location = "us-east5", .manifests_dir = dir};
    run_deploy(&o, &r);
    assert_int_equal(o.rc, GC_EXIT_RUNTIME);
    assert_non_null(strstr(o.err.message, "jobset-v0.10.1.yaml: SHA-256 "));
    assert_non_null(
        strstr(o.err.message, "but JobSet v0.10.1 is 41ad53ab43555e4adc92b3e59c01d1cb"));
    assert_non_null(strstr(o.err.message, "nothing was applied"));
    assert_int_equal(count_requests("PATCH", "/"), 0);
    assert_int_equal(o.report->install_count, 2);
    assert_string_equal(o.report->installs[0].name, "JobSet");
    assert_int_equal(o.report->installs[0].state, GC_INSTALL_MISSING);
    assert_string_equal(o.report->installs[1].name, "Kueue");
    assert_string_equal(o.report->installs[1].version, "v0.17.1");
    assert_non_null(strstr(o.report->installs[1].source, "/manifests/kueue-v0.17.1.yaml"));
    outcome_free(&o);
    free(dir);

    /* With --plan nothing is fetched: the report says what would be installed from where. */
    r = (gc_deploy_request){.cluster = "c", .location = "us-east5", .plan = true};
    run_deploy(&o, &r);
    assert_int_equal(o.rc, 0);
    const gc_deploy_report *rep = o.report;
    assert_true(rep->started);
    assert_string_equal(rep->cluster, "c");
    assert_string_equal(rep->location, "us-east5");
    assert_string_equal(rep->head_pool, "cpu-np");
    assert_int_equal(rep->install_count, 2);
    assert_string_equal(rep->installs[1].source, "https://github.com/kubernetes-sigs/kueue/"
                                                 "releases/download/v0.17.1/manifests.yaml");
    assert_int_equal(rep->installs[1].state, GC_INSTALL_MISSING);
    assert_int_equal(rep->object_count, 9);
    assert_int_equal(rep->objects[0].outcome, GC_APPLY_NOT_CHECKED);
    /* The node-pool report still says what is missing and how to create it. */
    assert_true(rep->pools_listed);
    assert_int_equal(find_pool(rep, "cpu-np")->nodes, 2);
    const gc_deploy_pool *tpu = find_pool(rep, "tpu-v6e-np-0");
    assert_int_equal(tpu->nodes, -1);
    assert_non_null(strstr(tpu->create_command, "gcloud container node-pools create tpu-v6e-np-0 "
                                                "--project=my-project --cluster=c "
                                                "--location=us-east5"));
    assert_null(find_pool(rep, "cpu-np")->create_command);
    /* Nothing was applied: the objects are listed as what would be applied. */
    assert_string_equal(rep->kueue_api, "kueue.x-k8s.io/v1beta2");
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
    assert_true(o.report->plan);
    assert_string_equal(o.report->kueue_api, "kueue.x-k8s.io/v1beta1");
    /* The object that failed is reported by the error, not as applied. */
    assert_int_equal(o.report->object_count, 0);
    assert_non_null(
        strstr(o.err.message, "applying resourceflavor.kueue.x-k8s.io/flavor-tpu-v6e-slice"));
    json_t *log = kube_test_server_log(&env->server);
    const json_t *patch = NULL, *req;
    size_t i;
    json_array_foreach(log, i, req)
    {
        if (!strcmp(json_string_value(json_object_get(req, "method")), "PATCH"))
            patch = req;
    }
    assert_non_null(patch);
    assert_string_equal(json_string_value(json_object_get(patch, "path")),
                        "/apis/kueue.x-k8s.io/v1beta1/resourceflavors/flavor-tpu-v6e-slice");
    assert_non_null(strstr(json_string_value(json_object_get(patch, "query")), "dryRun=All"));
    assert_non_null(
        strstr(json_string_value(json_object_get(patch, "query")), "fieldManager=gcluster"));
    assert_non_null(strstr(json_string_value(json_object_get(patch, "body")),
                           "\"apiVersion\":\"kueue.x-k8s.io/v1beta1\""));
    json_decref(log);
    outcome_free(&o);
}

/* A cluster with Kueue and JobSet, the head pool and one of the two TPU pools. flavor-tpu-v6e-slice
 * is already there as deploy would write it; everything else is new, and Kueue makes the
 * ClusterQueue Active at once. */
static bool serve_jobset = true; /* false: /apis/jobset.x-k8s.io answers 404 */
static bool typeless_condition;

static void serve_cluster_with_versions(const char *kueue_tag, const char *jobset_tag)
{
    json_t *script = json_object();
    /* The controllers' Deployments, whose first container's image tag is the version. */
    const char *const tags[][3] = {
        {"kueue-system", "kueue-controller-manager", kueue_tag},
        {"jobset-system", "jobset-controller-manager", jobset_tag},
    };
    for (size_t i = 0; i < 2; i++) {
        if (!tags[i][2])
            continue;
        char key[256], image[128];
        snprintf(key, sizeof(key), "GET /apis/apps/v1/namespaces/%s/deployments/%s", tags[i][0],
                 tags[i][1]);
        snprintf(image, sizeof(image), "registry.k8s.io/%s:%s", tags[i][1], tags[i][2]);
        json_object_set_new(script, key,
                            json_pack("[{s:{s:{s:{s:{s:[{s:s, s:s}]}}}}}]", "json", "spec",
                                      "template", "spec", "containers", "name", "manager", "image",
                                      image));
    }
    json_t *nodes = json_array();
    static const char *const node_pools[] = {"cpu-np",       "cpu-np",       "tpu-v6e-np-0",
                                             "tpu-v6e-np-0", "tpu-v6e-np-0", "tpu-v6e-np-0"};
    for (size_t i = 0; i < sizeof(node_pools) / sizeof(*node_pools); i++)
        json_array_append_new(nodes, json_pack("{s:{s:{s:s}}}", "metadata", "labels",
                                               "cloud.google.com/gke-nodepool", node_pools[i]));
    json_object_set_new(
        script, "GET /api/v1/nodes",
        json_pack("[{s:{s:s, s:{}, s:o}}]", "json", "kind", "List", "metadata", "items", nodes));
    json_object_set_new(script, "GET /apis/kueue.x-k8s.io",
                        json_pack("[{s:{s:[{s:s}]}}]", "json", "versions", "version", "v1beta2"));
    if (serve_jobset)
        json_object_set_new(
            script, "GET /apis/jobset.x-k8s.io",
            json_pack("[{s:{s:[{s:s}]}}]", "json", "versions", "version", "v1alpha2"));
    json_object_set_new(script, "GET /apis/kueue.x-k8s.io/v1beta2",
                        json_pack("[{s:{s:[{s:s, s:s, s:b}, {s:s, s:s, s:b}, {s:s, s:s, s:b}]}}]",
                                  "json", "resources", "name", "resourceflavors", "kind",
                                  "ResourceFlavor", "namespaced", 0, "name", "clusterqueues",
                                  "kind", "ClusterQueue", "namespaced", 0, "name", "localqueues",
                                  "kind", "LocalQueue", "namespaced", 1));
    json_object_set_new(script, "GET /apis/scheduling.k8s.io/v1",
                        json_pack("[{s:{s:[{s:s, s:s, s:b}]}}]", "json", "resources", "name",
                                  "priorityclasses", "kind", "PriorityClass", "namespaced", 0));
    static const char *const objects[] = {
        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors/flavor-tpu-v6e-slice",
        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors/pathways-flavor",
        "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cluster-queue",
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/localqueues/user-queue",
        "/apis/scheduling.k8s.io/v1/priorityclasses/very-low",
        "/apis/scheduling.k8s.io/v1/priorityclasses/low",
        "/apis/scheduling.k8s.io/v1/priorityclasses/medium",
        "/apis/scheduling.k8s.io/v1/priorityclasses/high",
        "/apis/scheduling.k8s.io/v1/priorityclasses/very-high",
    };
    for (size_t i = 0; i < sizeof(objects) / sizeof(*objects); i++) {
        const char *name = strrchr(objects[i], '/') + 1;
        json_t *applied = json_pack("{s:{s:s}}", "metadata", "name", name);
        char key[256];
        snprintf(key, sizeof(key), "PATCH %s", objects[i]);
        json_object_set_new(script, key, json_pack("[{s:O}]", "json", applied));
        snprintf(key, sizeof(key), "GET %s", objects[i]);
        if (!strcmp(name, "flavor-tpu-v6e-slice"))
            json_object_set_new(script, key, json_pack("[{s:O}]", "json", applied));
        else if (!strcmp(name, "cluster-queue"))
            json_object_set_new(
                script, key,
                json_pack("[{s:i}, {s:{s:{s:[o, {s:s, s:s, s:s}]}}}]", "status", 404, "json",
                          "status", "conditions",
                          /* A condition without a type (a malformed reply) comes first when
                           * the test asks for one: it is skipped, not read. */
                          typeless_condition
                              ? json_pack("{s:s, s:s}", "status", "False", "reason", "Odd")
                              : json_pack("{s:s, s:s}", "type", "Progressing", "status", "True"),
                          "type", "Active", "status", "True", "reason", "Ready"));
        json_decref(applied);
    }
    char *text = json_dumps(script, JSON_COMPACT);
    if (!kube_test_server_script(&env->server, text))
        fail_msg("bad script: %s", text);
    free(text);
    json_decref(script);
}

static void serve_cluster_with_kueue(void)
{
    serve_cluster_with_versions(NULL, NULL);
}

/* The installed versions are read from the controllers' images and checked against what jobs
 * need: Kueue 0.15.0 or later (kueue.x-k8s.io/v1beta2), JobSet 0.9.0 or later. */
static void installed_versions_are_checked(void **state)
{
    (void)state;
    serve_cluster_with_versions("v0.13.4", "v0.10.1");
    outcome o;
    gc_deploy_request r = {0};
    run_deploy(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_string_equal(o.report->kueue_version, "v0.13.4");
    assert_string_equal(o.report->jobset_version, "v0.10.1");
    assert_int_equal(o.report->warnings.count, 1);
    assert_non_null(strstr(o.report->warnings.items[0],
                           "Kueue v0.13.4 is installed, older than the blueprint's v0.17.1; it "
                           "is left as it is (deploy --upgrade installs v0.17.1)"));
    outcome_free(&o);

    assert_true(kube_test_server_reset(&env->server));
    serve_cluster_with_versions("v0.17.1", "v0.8.0");
    run_deploy(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_int_equal(o.report->warnings.count, 1);
    assert_non_null(strstr(o.report->warnings.items[0], "JobSet v0.8.0 is installed, older than "
                                                        "the blueprint's v0.10.1"));
    outcome_free(&o);

    assert_true(kube_test_server_reset(&env->server));
    serve_cluster_with_versions("v0.17.1", "v0.10.1");
    run_deploy(&o, &r);
    assert_int_equal(o.report->warnings.count, 0);
    outcome_free(&o);
}

/* Kueue is there and JobSet is not: the plan installs JobSet and applies the configuration
 * (as a dry run), and nothing says the configuration was not applied. */
static void kueue_present_jobset_missing(void **state)
{
    (void)state;
    serve_jobset = false;
    serve_cluster_with_versions("v0.17.1", NULL);
    serve_jobset = true;
    outcome o;
    gc_deploy_request r = {.plan = true};
    run_deploy(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_int_equal(o.report->install_count, 2);
    assert_string_equal(o.report->installs[0].name, "JobSet");
    assert_int_equal(o.report->installs[0].state, GC_INSTALL_MISSING);
    assert_string_equal(o.report->installs[1].name, "Kueue");
    assert_int_equal(o.report->installs[1].state, GC_INSTALL_PRESENT);
    assert_string_equal(o.report->installs[1].installed, "v0.17.1");
    assert_int_equal(o.report->object_count, 9);
    assert_int_equal(o.report->objects[2].outcome, GC_APPLY_CREATED);
    assert_int_equal(o.report->warnings.count, 0);
    assert_null(strstr(o.events.data ? o.events.data : "", "not applied"));
    outcome_free(&o);
}

/* A server reply whose ClusterQueue has a condition without `type` is read past, not trusted:
 * the queue is still found Active by its Active condition. */
static void a_condition_without_type_is_handled(void **state)
{
    (void)state;
    typeless_condition = true;
    serve_cluster_with_kueue();
    typeless_condition = false;
    outcome o;
    gc_deploy_request r = {0};
    run_deploy(&o, &r);
    assert_int_equal(o.rc, 0);
    bool seen = false;
    for (size_t i = 0; i < o.report->object_count; i++) {
        const gc_deploy_object *obj = &o.report->objects[i];
        if (strcmp(obj->kind, "ClusterQueue"))
            continue;
        seen = true;
        assert_true(obj->queue_checked);
        assert_true(obj->queue_active);
    }
    assert_true(seen);
    outcome_free(&o);
}

static void deploy_reports_each_object_and_the_queue_state(void **state)
{
    (void)state;
    serve_cluster_with_kueue();
    outcome o;
    gc_deploy_request r = {0};
    run_deploy(&o, &r);
    assert_int_equal(o.rc, 0);
    const gc_deploy_report *rep = o.report;
    assert_string_equal(rep->blueprint, "gke-tpu-v6e-pathways");
    assert_true(rep->pathways);
    assert_int_equal(rep->install_count, 2);
    assert_int_equal(rep->installs[0].state, GC_INSTALL_PRESENT);
    assert_string_equal(rep->kueue_api, "kueue.x-k8s.io/v1beta2");
    assert_int_equal(rep->object_count, 9);
    for (size_t i = 0; i < rep->object_count; i++) {
        const gc_deploy_object *obj = &rep->objects[i];
        bool existing = !strcmp(obj->name, "flavor-tpu-v6e-slice");
        assert_int_equal(obj->outcome, existing ? GC_APPLY_UNCHANGED : GC_APPLY_CREATED);
        bool queue = !strcmp(obj->kind, "ClusterQueue");
        assert_int_equal(obj->queue_checked, queue);
        assert_int_equal(obj->queue_active, queue);
    }
    assert_string_equal(rep->objects[3].label, "localqueue.kueue.x-k8s.io/user-queue");
    assert_string_equal(rep->objects[3].ns, "default");
    assert_null(rep->objects[0].ns);
    assert_int_equal(find_pool(rep, "cpu-np")->nodes, 2);
    assert_int_equal(find_pool(rep, "tpu-v6e-np-0")->nodes, 4);
    assert_int_equal(find_pool(rep, "tpu-v6e-np-1")->nodes, -1);
    assert_non_null(find_pool(rep, "tpu-v6e-np-1")->create_command);
    assert_int_equal(rep->warnings.count, 0);
    assert_int_equal(count_requests("PATCH", "/"), 9);
    outcome_free(&o);
}

static void plan_changes_nothing_and_says_what_would(void **state)
{
    (void)state;
    serve_cluster_with_kueue();
    outcome o;
    gc_deploy_request r = {.plan = true};
    run_deploy(&o, &r);
    assert_int_equal(o.rc, 0);
    assert_true(o.report->plan);
    assert_int_equal(o.report->object_count, 9);
    assert_false(o.report->objects[2].queue_checked); /* a plan does not wait for Kueue */
    json_t *log = kube_test_server_log(&env->server);
    size_t i;
    const json_t *req;
    json_array_foreach(log, i, req)
    {
        if (!strcmp(json_string_value(json_object_get(req, "method")), "PATCH"))
            assert_non_null(strstr(json_string_value(json_object_get(req, "query")), "dryRun=All"));
    }
    json_decref(log);
    outcome_free(&o);
}

static void run_deploy_cli(cli_result *res, const char *const *extra)
{
    char *kubeconfig = write_kubeconfig();
    const char *argv[16] = {"deploy", BLUEPRINT, "--kubeconfig", kubeconfig, "--context", "t"};
    size_t n = 6;
    for (size_t i = 0; extra[i]; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    char *home = gc_xasprintf("HOME=%s", env->tmp);
    const char *environment[] = {home, NULL};
    run_cli(res, argv, environment);
    free(home);
    free(kubeconfig);
}

static void text_report_is_as_before(void **state)
{
    (void)state;
    serve_cluster_with_kueue();
    cli_result res;
    run_deploy_cli(&res, (const char *[]){NULL});
    assert_int_equal(res.exit_code, 0);
    static const char *const lines[] = {
        "Blueprint gke-tpu-v6e-pathways: cluster gke-tpu-v6e (project my-project, location "
        "us-east5), Pathways enabled (head pool cpu-np)\n",
        "Node pools:\n  cpu-np               n4-standard-64       autoscaling 0-100                "
        "  "
        "present, 2 nodes\n",
        "Kueue configuration (kueue.x-k8s.io/v1beta2):\n"
        "  resourceflavor.kueue.x-k8s.io/flavor-tpu-v6e-slice unchanged\n"
        "  resourceflavor.kueue.x-k8s.io/pathways-flavor created\n"
        "  clusterqueue.kueue.x-k8s.io/cluster-queue created\n"
        "  clusterqueue.kueue.x-k8s.io/cluster-queue is Active\n",
        "\nOne node pool has no nodes (a pool that scales from zero has none until a job needs "
        "it); if missing, create with:\n  printf ",
        /* the TCP buffer sysctls, piped into --system-config-from-file */
        " linuxConfig: '  sysctl:' ",
        " | gcloud container node-pools create tpu-v6e-np-1 ",
        " --max-surge-upgrade=0 --max-unavailable-upgrade=1 "
        "--system-config-from-file=/dev/stdin",
        "(or run gcluster deploy again with --auto-approve)\n",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(*lines); i++)
        if (!strstr(res.out.data, lines[i]))
            fail_msg("no \"%s\" in:\n%s", lines[i], res.out.data);
    cli_result_free(&res);
}

static void json_report_follows_the_documented_schema(void **state)
{
    (void)state;
    serve_cluster_with_kueue();
    cli_result res;
    run_deploy_cli(&res, (const char *[]){"-o", "json", NULL});
    assert_int_equal(res.exit_code, 0);
    json_error_t error;
    json_t *doc = json_loads(res.out.data, 0, &error);
    if (!doc)
        fail_msg("not JSON (%s): %s", error.text, res.out.data);
    assert_int_equal(json_object_size(doc), 17); /* nothing undocumented */
    assert_string_equal(json_string_value(json_object_get(doc, "blueprint")),
                        "gke-tpu-v6e-pathways");
    assert_string_equal(json_string_value(json_object_get(doc, "cluster")), "gke-tpu-v6e");
    assert_string_equal(json_string_value(json_object_get(doc, "project")), "my-project");
    assert_string_equal(json_string_value(json_object_get(doc, "location")), "us-east5");
    assert_true(json_is_true(json_object_get(doc, "pathways")));
    assert_string_equal(json_string_value(json_object_get(doc, "head_pool")), "cpu-np");
    /* The vpc module is the cloud plan's now. */
    assert_int_equal(json_array_size(json_object_get(doc, "unhandled_modules")), 0);
    const json_t *cloud = json_object_get(doc, "cloud");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(cloud, "steps"), 0), "kind")),
                        "network");
    assert_true(json_is_false(json_object_get(cloud, "applied")));
    assert_int_equal(json_array_size(json_object_get(doc, "installs")), 2);
    assert_true(json_is_false(json_object_get(doc, "plan")));
    const json_t *pools = json_object_get(doc, "node_pools");
    assert_int_equal(json_array_size(pools), 3);
    const json_t *head = json_array_get(pools, 0), *missing = json_array_get(pools, 2);
    assert_string_equal(json_string_value(json_object_get(head, "name")), "cpu-np");
    assert_string_equal(json_string_value(json_object_get(head, "machine_type")), "n4-standard-64");
    assert_string_equal(json_string_value(json_object_get(head, "size")), "autoscaling 0-100");
    assert_true(json_is_true(json_object_get(head, "present")));
    assert_int_equal(json_integer_value(json_object_get(head, "nodes")), 2);
    assert_true(json_is_null(json_object_get(head, "create_command")));
    assert_true(json_is_false(json_object_get(missing, "present")));
    assert_true(json_is_null(json_object_get(missing, "nodes")));
    assert_non_null(strstr(json_string_value(json_object_get(missing, "create_command")),
                           "gcloud container node-pools create tpu-v6e-np-1"));
    assert_int_equal(json_object_size(missing), 6);
    assert_string_equal(json_string_value(json_object_get(doc, "kueue_api")),
                        "kueue.x-k8s.io/v1beta2");
    const json_t *objects = json_object_get(doc, "kueue_objects");
    assert_int_equal(json_array_size(objects), 9);
    const json_t *cq = json_array_get(objects, 2), *lq = json_array_get(objects, 3);
    assert_string_equal(json_string_value(json_object_get(cq, "api_version")),
                        "kueue.x-k8s.io/v1beta2");
    assert_string_equal(json_string_value(json_object_get(cq, "kind")), "ClusterQueue");
    assert_string_equal(json_string_value(json_object_get(cq, "name")), "cluster-queue");
    assert_true(json_is_null(json_object_get(cq, "namespace")));
    assert_string_equal(json_string_value(json_object_get(cq, "label")),
                        "clusterqueue.kueue.x-k8s.io/cluster-queue");
    assert_string_equal(json_string_value(json_object_get(cq, "outcome")), "created");
    const json_t *queue_state = json_object_get(cq, "cluster_queue_state");
    assert_true(json_is_true(json_object_get(queue_state, "active")));
    assert_string_equal(json_string_value(json_object_get(queue_state, "reason")), "Ready");
    assert_string_equal(json_string_value(json_object_get(lq, "namespace")), "default");
    assert_true(json_is_null(json_object_get(lq, "cluster_queue_state")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(objects, 0), "outcome")),
                        "unchanged");
    assert_int_equal(json_array_size(json_object_get(doc, "warnings")), 0);
    json_decref(doc);
    cli_result_free(&res);
}

/* A failed deploy still reports what it found, and exits with the error. */
static void json_report_of_a_failed_deploy(void **state)
{
    (void)state;
    script("{" NODES "}");
    cli_result res;
    run_deploy_cli(&res, (const char *[]){"--output", "json", "--manifests-mirror",
                                          "https://no-such-host.invalid/", NULL});
    assert_int_equal(res.exit_code, GC_EXIT_RUNTIME);
    json_t *doc = json_loads(res.out.data, 0, NULL);
    assert_non_null(doc);
    const json_t *installs = json_object_get(doc, "installs");
    assert_int_equal(json_array_size(installs), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(installs, 0), "name")),
                        "JobSet");
    assert_string_equal(json_string_value(json_object_get(json_array_get(installs, 1), "state")),
                        "missing");
    assert_true(json_is_null(json_object_get(doc, "kueue_api")));
    assert_non_null(strstr(res.err.data, "/no-such-host.invalid/kubernetes-sigs/jobset/releases/"
                                         "download/v0.10.1/manifests.yaml"));
    json_decref(doc);
    cli_result_free(&res);
}

/* destroy's guard: a JobSet runs until its Completed or Failed condition is True (a False
 * one, or one without a type, does not end it). */
static void destroy_finds_the_running_jobsets(void **state)
{
    (void)state;
    script("{'GET /apis/jobset.x-k8s.io/v1alpha2/jobsets': [{'json': {'kind': 'List', "
           "'metadata': {}, 'items': ["
           "{'metadata': {'namespace': 'ns', 'name': 'done'}, 'status': {'conditions': "
           "[{'type': 'Completed', 'status': 'True'}]}},"
           "{'metadata': {'namespace': 'ns', 'name': 'failed'}, 'status': {'conditions': "
           "[{'type': 'Failed', 'status': 'True'}]}},"
           "{'metadata': {'namespace': 'ns', 'name': 'running'}, 'status': {'conditions': "
           "[{'status': 'True'}, {'type': 'Completed', 'status': 'False'}]}},"
           "{'metadata': {'namespace': 'default', 'name': 'new'}}]}}]}");
    char *path = write_kubeconfig();
    gc_kube *kube;
    gc_error err = {0};
    gc_kube_options opts = {.kubeconfig = path};
    if (gc_kube_open(&opts, &kube, &err))
        fail_msg("%s", err.message);
    free(path);
    gc_strings names;
    assert_int_equal(deploy_destroy_running_jobs(kube, &names, &err), 0);
    assert_int_equal(names.count, 2);
    assert_string_equal(names.items[0], "ns/running");
    assert_string_equal(names.items[1], "default/new");
    gc_strings_free(&names);
    gc_kube_close(kube);
}

/* destroy on the cluster: the gcsfuse claims and volumes deploy applied, in the reverse of
 * deploy's order, each read first: one already gone is left, the others deleted; nothing else
 * is deleted. */
static void destroy_deletes_the_volumes_in_reverse(void **state)
{
    (void)state;
    script("{'GET /api/v1': [{'json': {'resources': ["
           "{'name': 'persistentvolumes', 'kind': 'PersistentVolume', 'namespaced': false},"
           "{'name': 'persistentvolumeclaims', 'kind': 'PersistentVolumeClaim', "
           "'namespaced': true}]}}],"
           "'GET /api/v1/namespaces/team/persistentvolumeclaims/zonal-claim': [{'json': {}}],"
           "'DELETE /api/v1/namespaces/team/persistentvolumeclaims/zonal-claim': [{'json': {}}],"
           "'GET /api/v1/persistentvolumes/zonal-pv': [{'status': 404, 'json': {'kind': "
           "'Status', 'code': 404}}],"
           "'GET /api/v1/namespaces/default/persistentvolumeclaims/data-st-bb5d3e77-pvc': "
           "[{'json': {}}],"
           "'DELETE /api/v1/namespaces/default/persistentvolumeclaims/data-st-bb5d3e77-pvc': "
           "[{'json': {}}],"
           "'GET /api/v1/persistentvolumes/data-st-bb5d3e77-pv': [{'json': {}}],"
           "'DELETE /api/v1/persistentvolumes/data-st-bb5d3e77-pv': [{'json': {}}]}");
    char *path = write_kubeconfig();
    gc_kube *kube;
    gc_error err = {0};
    gc_kube_options opts = {.kubeconfig = path};
    if (gc_kube_open(&opts, &kube, &err))
        fail_msg("%s", err.message);
    free(path);
    gc_blueprint bp;
    if (deploy_blueprint_load(GCLUSTER_SOURCE_DIR "/tests/fixtures/deploy/storage.yaml", NULL, 0,
                              &bp, &err))
        fail_msg("%s", err.message);
    gc_destroy_object *objects;
    size_t count;
    if (deploy_destroy_objects(kube, &bp, true, &objects, &count, &err))
        fail_msg("%s", err.message);
    assert_int_equal(count, 4);
    assert_string_equal(objects[0].label, "persistentvolumeclaim/zonal-claim");
    assert_int_equal(objects[0].state, GC_CLOUD_CREATED);
    assert_string_equal(objects[1].label, "persistentvolume/zonal-pv");
    assert_int_equal(objects[1].state, GC_CLOUD_PRESENT);
    assert_string_equal(objects[3].label, "persistentvolume/data-st-bb5d3e77-pv");
    assert_int_equal(objects[3].state, GC_CLOUD_CREATED);
    assert_int_equal(count_requests("DELETE", "/"), 3);
    json_t *log = kube_test_server_log(&env->server);
    size_t i;
    json_t *req;
    const char *order[3] = {0};
    size_t n = 0;
    json_array_foreach(log, i, req)
    {
        if (!strcmp(json_string_value(json_object_get(req, "method")), "DELETE") && n < 3)
            order[n++] = strrchr(json_string_value(json_object_get(req, "path")), '/') + 1;
    }
    assert_string_equal(order[0], "zonal-claim");
    assert_string_equal(order[1], "data-st-bb5d3e77-pvc");
    assert_string_equal(order[2], "data-st-bb5d3e77-pv");
    json_decref(log);
    deploy_destroy_objects_free(objects, count);
    gc_blueprint_free(&bp);
    gc_kube_close(kube);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(cluster_without_kueue_or_jobset, kube_test_env_reset),
        cmocka_unit_test_setup(kueue_serving_only_v1beta1, kube_test_env_reset),
        cmocka_unit_test_setup(kueue_present_jobset_missing, kube_test_env_reset),
        cmocka_unit_test_setup(a_condition_without_type_is_handled, kube_test_env_reset),
        cmocka_unit_test_setup(deploy_reports_each_object_and_the_queue_state, kube_test_env_reset),
        cmocka_unit_test_setup(installed_versions_are_checked, kube_test_env_reset),
        cmocka_unit_test_setup(plan_changes_nothing_and_says_what_would, kube_test_env_reset),
        cmocka_unit_test_setup(text_report_is_as_before, kube_test_env_reset),
        cmocka_unit_test_setup(json_report_follows_the_documented_schema, kube_test_env_reset),
        cmocka_unit_test_setup(json_report_of_a_failed_deploy, kube_test_env_reset),
        cmocka_unit_test_setup(destroy_finds_the_running_jobsets, kube_test_env_reset),
        cmocka_unit_test_setup(destroy_deletes_the_volumes_in_reverse, kube_test_env_reset),
    };
    return cmocka_run_group_tests(tests, setup, kube_test_env_teardown);
}
