/*
 * Who holds a Shared Pathways Service's slices and who waits, read from the service JobSet and
 * its proxy Jobs as gcluster makes them: the line, the turn, and the reason `job why` gives.
 */
#include "gcluster/catalog.h"
#include "gcluster/manifest.h"
#include "gcluster/sps.h"
#include "job/internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static json_t *service(void)
{
    gc_compute compute;
    gc_error err = {0};
    assert_int_equal(gc_catalog_resolve("v6e-16", NULL, NULL, &compute, &err), 0);
    gc_workload w = {0};
    w.name = "sps";
    w.compute = compute;
    w.num_slices = 2;
    w.queue = "lq";
    w.restarts = 30;
    w.pathways = w.headless = w.sps = true;
    w.gcs_location = "gs://b/sps";
    w.head_pool = "cpu-np";
    w.server_image = w.worker_image = "r/pathways/server:jax-0.9.0";
    json_t *jobset = NULL;
    assert_int_equal(gc_workload_jobset(&w, &jobset, &err), 0);
    return jobset;
}

static json_t *proxy(const char *name, const char *user, int slices, const char *created,
                     const char *state)
{
    gc_sps_proxy p = {.name = name,
                      .service = "sps",
                      .user = user,
                      .image = "r/pathways/proxy_server:jax-0.9.0",
                      .gcs_location = "gs://b/sps",
                      .instance_type = "tpuv6e:4x4",
                      .slices = slices,
                      .head_pool = "cpu-np",
                      .deadline_seconds = 60};
    json_t *job = gc_sps_proxy_job(&p);
    json_t *metadata = json_object_get(job, "metadata");
    json_object_set_new(metadata, "creationTimestamp", json_string(created));
    if (state)
        json_object_set_new(json_object_get(metadata, "annotations"), GC_ANNOTATION_SPS_STATE,
                            json_string(state));
    return job;
}

static json_t *job_list(json_t *a, json_t *b, json_t *c)
{
    json_t *items = json_array();
    json_array_append_new(items, a);
    json_array_append_new(items, b);
    if (c)
        json_array_append_new(items, c);
    return json_pack("{s:o}", "items", items);
}

static void test_service_facts(void **state)
{
    (void)state;
    json_t *js = service();
    gc_sps_usage u;
    gc_error err = {0};
    assert_true(job_sps_is_service(js));
    assert_int_equal(gc_sps_usage_read(js, NULL, &u, &err), 0);
    assert_int_equal(u.slices, 2);
    assert_string_equal(u.instance_type, "tpuv6e:4x4");
    assert_string_equal(u.server_image, "r/pathways/server:jax-0.9.0");
    assert_string_equal(u.gcs_location, "gs://b/sps");
    assert_string_equal(u.head_pool, "cpu-np");
    assert_string_equal(u.address, "sps-pathways-head-0-0.sps:29001");
    assert_int_equal(u.count, 0);
    gc_sps_usage_free(&u);
    json_decref(js);
}

static void test_not_a_service(void **state)
{
    (void)state;
    json_t *js = json_pack("{s:{s:s}}", "metadata", "name", "train");
    gc_sps_usage u;
    gc_error err = {0};
    assert_int_equal(gc_sps_usage_read(js, NULL, &u, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message, "job train is not a Shared Pathways Service (deploy one with "
                                     "job submit --pathways-deploy-sps)");
    json_decref(js);
}

static void test_third_client_waits_and_names_holders(void **state)
{
    (void)state;
    json_t *js = service();
    /* Listed out of order: the line is by creation time. */
    json_t *jobs =
        job_list(proxy("isc-proxy-cy-00003", "cy", 1, "2026-12-07T10:00:03Z", NULL),
                 proxy("isc-proxy-ada-00001", "ada", 1, "2026-12-07T10:00:01Z", "holding"),
                 proxy("isc-proxy-bob-00002", "bob", 1, "2026-12-07T10:00:02Z", "holding"));
    gc_sps_usage u;
    gc_error err = {0};
    assert_int_equal(gc_sps_usage_read(js, jobs, &u, &err), 0);
    assert_int_equal(u.count, 3);
    assert_string_equal(u.clients[0].job, "isc-proxy-ada-00001");
    assert_int_equal(u.held, 2);
    assert_int_equal(job_sps_position(&u, "isc-proxy-cy-00003"), 1);
    assert_false(gc_sps_may_start(&u, "isc-proxy-cy-00003"));
    char why[512];
    gc_sps_wait_reason(&u, "isc-proxy-cy-00003", why, sizeof(why));
    assert_string_equal(why, "waiting for 1 tpuv6e:4x4 slice of service sps: 0 of its 2 free; "
                             "held by isc-proxy-ada-00001 (ada, 1 slice), isc-proxy-bob-00002 "
                             "(bob, 1 slice); first in line");
    gc_sps_wait_reason(&u, "isc-proxy-ada-00001", why, sizeof(why));
    assert_string_equal(why, "isc-proxy-ada-00001 holds 1 of service sps's 2 slices");
    gc_sps_usage_free(&u);
    json_decref(jobs);
    json_decref(js);
}

static void test_line_order_and_turn(void **state)
{
    (void)state;
    json_t *js = service();
    json_t *jobs =
        job_list(proxy("isc-proxy-ada-00001", "ada", 1, "2026-12-07T10:00:01Z", "holding"),
                 proxy("isc-proxy-bob-00002", "bob", 2, "2026-12-07T10:00:02Z", NULL),
                 proxy("isc-proxy-cy-00003", "cy", 1, "2026-12-07T10:00:03Z", NULL));
    gc_sps_usage u;
    gc_error err = {0};
    assert_int_equal(gc_sps_usage_read(js, jobs, &u, &err), 0);
    /* bob is first but needs both slices; cy fits but must not pass bob. */
    assert_false(gc_sps_may_start(&u, "isc-proxy-bob-00002"));
    assert_false(gc_sps_may_start(&u, "isc-proxy-cy-00003"));
    char why[512];
    gc_sps_wait_reason(&u, "isc-proxy-cy-00003", why, sizeof(why));
    assert_string_equal(why, "waiting for 1 tpuv6e:4x4 slice of service sps: 1 of its 2 free; "
                             "held by isc-proxy-ada-00001 (ada, 1 slice); 2 of 2 in line, behind "
                             "isc-proxy-bob-00002");
    gc_sps_usage_free(&u);
    json_decref(jobs);

    /* ada's proxy finished (its client ended): bob's turn. */
    jobs = job_list(proxy("isc-proxy-ada-00001", "ada", 1, "2026-12-07T10:00:01Z", "holding"),
                    proxy("isc-proxy-bob-00002", "bob", 2, "2026-12-07T10:00:02Z", NULL), NULL);
    json_t *ada = json_array_get(json_object_get(jobs, "items"), 0);
    json_object_set_new(json_object_get(ada, "metadata"), "deletionTimestamp",
                        json_string("2026-12-07T10:01:00Z"));
    assert_int_equal(gc_sps_usage_read(js, jobs, &u, &err), 0);
    assert_int_equal(u.count, 1);
    assert_true(gc_sps_may_start(&u, "isc-proxy-bob-00002"));
    gc_sps_usage_free(&u);
    json_decref(jobs);
    json_decref(js);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_service_facts),
        cmocka_unit_test(test_not_a_service),
        cmocka_unit_test(test_third_client_waits_and_names_holders),
        cmocka_unit_test(test_line_order_and_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
