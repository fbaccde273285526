/*
 * Numbers from a hostile server or user are added and multiplied without overflowing: sums
 * saturate at LLONG_MAX (gcluster/checked.h) instead of wrapping to a negative chip total (and
 * signed overflow, undefined behaviour in C, never happens).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/checked.h"
#include "gcluster/cluster.h"
#include "gcluster/job.h"
#include "job_test.h"
#include "kube_test.h"

#include <limits.h>
#include <math.h>
#include <string.h>

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

static void the_helpers_saturate(void **state)
{
    (void)state;
    long long r = 0;
    assert_true(gc_checked_add(1, 2, &r));
    assert_int_equal(r, 3);
    assert_false(gc_checked_add(LLONG_MAX, 1, &r));
    assert_false(gc_checked_mul(LLONG_MAX / 2 + 1, 2, &r));
    assert_true(gc_checked_mul(-3, 4, &r));
    assert_int_equal(r, -12);
    assert_true(gc_saturating_add(5000000000000000000LL, 5000000000000000000LL) == LLONG_MAX);
    assert_true(gc_saturating_add(LLONG_MIN, -1) == LLONG_MIN);
    assert_true(gc_saturating_mul(LLONG_MAX, -2) == LLONG_MIN);
    assert_true(gc_saturating_mul(-4000000000LL, -4000000000LL) == LLONG_MAX);
    assert_true(gc_saturating_from_double(1e300) == LLONG_MAX);
    assert_true(gc_saturating_from_double(-1e300) == LLONG_MIN);
    assert_true(gc_saturating_from_double(9223372036854775808.0) == LLONG_MAX);
    assert_true(gc_saturating_from_double(NAN) == 0);
    assert_true(gc_saturating_from_double(16.9) == 16);
}

static json_t *tpu_node(const char *name, const char *tpus)
{
    json_t *n = jt_json("{'metadata': {'labels': {'cloud.google.com/gke-nodepool': 'tpu-np',"
                        " 'cloud.google.com/gke-tpu-accelerator': 'tpu-v6e-slice'}},"
                        " 'status': {'allocatable': {}, 'conditions': []}}");
    json_object_set_new(json_object_get(n, "metadata"), "name", json_string(name));
    json_object_set_new(json_object_get(json_object_get(n, "status"), "allocatable"),
                        "google.com/tpu", json_string(tpus));
    return n;
}

/* Two nodes of 5e18 TPUs each: the pool's chips are LLONG_MAX, not -8446744073709551616. A
 * third of 1e30 (past every integer type) is clamped before it is added. */
static void describe_chips_do_not_wrap(void **state)
{
    (void)state;
    jt_list("/api/v1/nodes", "NodeList",
            json_pack("[o, o]", tpu_node("a", "5e18"), tpu_node("b", "5e18")));
    gc_cluster_request req = {.pools = true};
    gc_cluster_report r;
    gc_error err = {0};
    assert_int_equal(gc_cluster_describe(jt_kube(), &req, &r, &err), 0);
    assert_int_equal(r.pool_count, 1);
    assert_true(r.pools[0].chips == LLONG_MAX);
    gc_cluster_report_free(&r);

    jt_list("/api/v1/nodes", "NodeList",
            json_pack("[o, o]", tpu_node("a", "1e30"), tpu_node("b", "-5e18")));
    assert_int_equal(gc_cluster_describe(jt_kube(), &req, &r, &err), 0);
    assert_true(r.pools[0].chips == LLONG_MAX);
    gc_cluster_report_free(&r);
}

/* A JobSet whose replicated jobs claim 5e18 replicas of 4 pods, and 5e18 of them ready: the
 * expected and running pod counts saturate instead of overflowing (the product alone is past
 * LLONG_MAX). */
static void job_counts_do_not_wrap(void **state)
{
    (void)state;
    json_t *js = jt_json("{'metadata': {'name': 'big', 'namespace': 'ns1'},"
                         " 'spec': {'replicatedJobs': ["
                         "  {'name': 'worker', 'replicas': 5000000000000000000,"
                         "   'template': {'spec': {'parallelism': 4}}},"
                         "  {'name': 'pathways-head', 'replicas': 5000000000000000000,"
                         "   'template': {'spec': {'parallelism': 5000000000000000000}}}]},"
                         " 'status': {'replicatedJobsStatus': ["
                         "  {'name': 'worker', 'ready': 5000000000000000000},"
                         "  {'name': 'pathways-head', 'ready': 5000000000000000000}]}}");
    gc_job_facts f;
    memset(&f, 0, sizeof(f));
    gc_job_facts_from_jobset(js, &f);
    assert_int_equal(f.pods_expected, INT_MAX);
    assert_true(f.pods_running >= 0);
    json_decref(js);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_helpers_saturate),
        cmocka_unit_test(job_counts_do_not_wrap),
        cmocka_unit_test_setup_teardown(describe_chips_do_not_wrap, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
