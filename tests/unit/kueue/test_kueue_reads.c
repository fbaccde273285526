/*
 * The one read of Kueue's objects at the API version the cluster serves (src/kueue/reads.c),
 * against the scripted loopback API server: the preferred version goes out in the caller's
 * batch; only a 404 of it sends Kueue's reads again, alone, at the older version; a Kueue that
 * serves neither (or whose group the discovery does not find) is no Kueue. Paths not scripted
 * answer 404, as an API server answers for a version it does not serve.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/kube.h"
#include "gcluster/kueue.h"
#include "job_test.h"

#include <stdlib.h>
#include <string.h>

#define V2_QUEUES "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns1/localqueues"
#define V1_QUEUES "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns1/localqueues"
#define V2_CQS    "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
#define V1_CQS    "/apis/kueue.x-k8s.io/v1beta1/clusterqueues"
#define NODES     "/api/v1/nodes"
#define GROUP     "/apis/kueue.x-k8s.io"

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

static int collect(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    json_array_append(ctx, item);
    return 0;
}

static void forget(void *ctx)
{
    json_array_clear(ctx);
}

static json_t *named(const char *name)
{
    return json_pack("{s:{s:s}}", "metadata", "name", name);
}

static const char *first_name(const json_t *items)
{
    return json_string_value(
        json_object_get(json_object_get(json_array_get(items, 0), "metadata"), "name"));
}

static size_t count_path(const json_t *log, const char *path)
{
    size_t n = 0, i;
    const json_t *req;
    json_array_foreach(log, i, req) n +=
        !strcmp(json_string_value(json_object_get(req, "path")), path);
    return n;
}

/* The batch a caller makes: the nodes (not Kueue's), then the LocalQueues and ClusterQueues;
 * with `group`, also the discovery of Kueue's group. */
typedef struct batch {
    gc_kube_read reads[4];
    gc_kueue_read kueue[2];
    json_t *nodes, *queues, *cluster_queues, *group;
    char *nodes_path;
    size_t count;
    const char *version;
} batch;

static void run(batch *b, bool with_group)
{
    memset(b, 0, sizeof(*b));
    b->nodes = json_array();
    b->queues = json_array();
    b->cluster_queues = json_array();
    b->nodes_path = gc_kube_path(NULL, "v1", NULL, "nodes", NULL);
    b->reads[0] = (gc_kube_read){.path = b->nodes_path, .on_item = collect, .ctx = b->nodes};
    b->reads[1] = (gc_kube_read){.on_item = collect, .ctx = b->queues};
    b->reads[2] = (gc_kube_read){.on_item = collect, .ctx = b->cluster_queues};
    b->kueue[0] = (gc_kueue_read){.index = 1, .ns = "ns1", .resource = "localqueues"};
    b->kueue[1] = (gc_kueue_read){.index = 2, .resource = "clusterqueues", .forget = forget};
    b->count = 3;
    size_t group = 3;
    if (with_group)
        b->reads[b->count++] = (gc_kube_read){.path = GROUP, .object = &b->group};
    b->version =
        gc_kueue_read_all(jt_kube(), b->reads, b->count, b->kueue, 2, with_group ? &group : NULL);
}

static void batch_free(batch *b)
{
    gc_kueue_reads_free(b->kueue, 2);
    json_decref(b->nodes);
    json_decref(b->queues);
    json_decref(b->cluster_queues);
    json_decref(b->group);
    free(b->nodes_path);
}

/* A current Kueue: everything in one round trip, at v1beta2. */
static void current_kueue_costs_no_round_trip_of_its_own(void **state)
{
    (void)state;
    jt_list(NODES, "NodeList", json_pack("[o]", named("n1")));
    jt_list(V2_QUEUES, "LocalQueueList", json_pack("[o]", named("user-queue")));
    jt_list(V2_CQS, "ClusterQueueList", json_pack("[o]", named("cluster-queue")));
    batch b;
    run(&b, false);
    assert_non_null(b.version);
    assert_string_equal(b.version, "v1beta2");
    assert_int_equal(b.reads[1].rc, 0);
    assert_string_equal(first_name(b.queues), "user-queue");
    assert_string_equal(first_name(b.cluster_queues), "cluster-queue");
    assert_string_equal(b.reads[1].path, V2_QUEUES);
    assert_int_equal(jt_request_count(), 3);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 1);
    batch_free(&b);
}

/* Kueue up to 0.14 serves only v1beta1: Kueue's reads (and only they) go again, one more round
 * trip, and their answers are v1beta1's. */
static void older_kueue_is_read_at_v1beta1(void **state)
{
    (void)state;
    jt_list(NODES, "NodeList", json_pack("[o]", named("n1")));
    jt_list(V1_QUEUES, "LocalQueueList", json_pack("[o]", named("old-queue")));
    jt_list(V1_CQS, "ClusterQueueList", json_pack("[o]", named("old-cq")));
    batch b;
    run(&b, false);
    assert_non_null(b.version);
    assert_string_equal(b.version, "v1beta1");
    assert_int_equal(b.reads[0].rc, 0);
    assert_int_equal(b.reads[1].rc, 0);
    assert_int_equal(b.reads[2].rc, 0);
    assert_string_equal(first_name(b.queues), "old-queue");
    assert_int_equal(json_array_size(b.cluster_queues), 1);
    assert_string_equal(b.reads[2].path, V1_CQS);
    json_t *log = jt_requests();
    assert_int_equal(count_path(log, NODES), 1);
    assert_int_equal(count_path(log, V2_QUEUES), 1);
    assert_int_equal(count_path(log, V1_QUEUES), 1);
    assert_int_equal(count_path(log, V1_CQS), 1);
    json_decref(log);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 2);
    batch_free(&b);
}

/* Neither version: no Kueue; the reads keep their 404s, the others their answers. */
static void no_kueue_is_null(void **state)
{
    (void)state;
    jt_list(NODES, "NodeList", json_pack("[o]", named("n1")));
    batch b;
    run(&b, false);
    assert_null(b.version);
    assert_int_equal(b.reads[0].rc, 0);
    assert_true(gc_kueue_not_served(&b.reads[1]));
    assert_true(gc_kueue_not_served(&b.reads[2]));
    assert_int_equal(json_array_size(b.queues), 0);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 2);
    batch_free(&b);
}

/* The discovery of Kueue's group, read in the same batch, says Kueue is not installed: the older
 * version is not asked. */
static void group_not_found_asks_no_older_version(void **state)
{
    (void)state;
    jt_list(NODES, "NodeList", json_array());
    batch b;
    run(&b, true);
    assert_null(b.version);
    json_t *log = jt_requests();
    assert_int_equal(count_path(log, V1_QUEUES), 0);
    assert_int_equal(json_array_size(log), 4);
    json_decref(log);
    assert_int_equal(gc_kube_round_trip_count(jt_kube()), 1);
    batch_free(&b);
}

/* A failure that is not a 404 is no reason to try another version: it stays the read's. */
static void other_failures_are_not_a_fallback(void **state)
{
    (void)state;
    jt_answer("GET " V2_QUEUES,
              json_pack("{s:i, s:{s:s, s:s, s:s, s:i}}", "status", 403, "json", "kind", "Status",
                        "reason", "Forbidden", "message", "localqueues is forbidden", "code", 403));
    batch b;
    run(&b, false);
    assert_non_null(b.version);
    assert_string_equal(b.version, "v1beta2");
    assert_int_not_equal(b.reads[1].rc, 0);
    assert_int_equal(b.reads[1].err.http_status, 403);
    json_t *log = jt_requests();
    assert_int_equal(count_path(log, V1_QUEUES), 0);
    json_decref(log);
    batch_free(&b);
}

static void versions_in_preference_order(void **state)
{
    (void)state;
    assert_string_equal(gc_kueue_versions[0], "v1beta2");
    assert_string_equal(gc_kueue_older_version("v1beta2"), "v1beta1");
    assert_null(gc_kueue_older_version("v1beta1"));
    assert_null(gc_kueue_older_version("v1"));
    assert_null(gc_kueue_older_version(NULL));
    char *path = gc_kueue_path("v1beta1", "ns1", "workloads", "w");
    assert_string_equal(path, "/apis/kueue.x-k8s.io/v1beta1/namespaces/ns1/workloads/w");
    free(path);
}

static char *release_of(const char *containers)
{
    json_t *deployment = json_pack("{s:{s:{s:{s:o}}}}", "spec", "template", "spec", "containers",
                                   jt_json(containers));
    char *release = gc_kueue_controller_release(deployment);
    json_decref(deployment);
    return release;
}

/* What runs says which release is installed: the first image with a tag; a digest after it and
 * a registry's port are no tag. */
static void controller_release_is_the_image_tag(void **state)
{
    (void)state;
    char *r = release_of("[{'image': 'registry.k8s.io/kueue/kueue:v0.13.4'}]");
    assert_string_equal(r, "v0.13.4");
    free(r);
    r = release_of("[{'image': 'localhost:5000/kueue@sha256:ab'}, "
                   "{'image': 'registry.k8s.io/jobset/jobset:v0.10.1@sha256:cd'}]");
    assert_string_equal(r, "v0.10.1");
    free(r);
    assert_null(release_of("[{'name': 'manager'}, {'image': 'localhost:5000/kueue'}]"));
    assert_null(release_of("[]"));
    assert_null(gc_kueue_controller_release(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(current_kueue_costs_no_round_trip_of_its_own, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(older_kueue_is_read_at_v1beta1, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(no_kueue_is_null, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(group_not_found_asks_no_older_version, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(other_failures_are_not_a_fallback, jt_open, jt_close),
        cmocka_unit_test(versions_in_preference_order),
        cmocka_unit_test(controller_release_is_the_image_tag),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
