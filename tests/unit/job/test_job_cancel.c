/*
 * gc_job_cancel and the watch that follows a job to its end (--await-job-completion), against
 * the scripted API server: what they return, the progress they report, and their errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/job.h"
#include "gcluster/manifest.h"
#include "gcluster/sps.h"
#include "job/watch_job.h"
#include "job_test.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int setup(void **state)
{
    (void)state;
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

#define CLAIMS  "/api/v1/namespaces/ns1/persistentvolumeclaims"
#define VOLUMES "/api/v1/persistentvolumes"
#define GATEWAY                                                                                    \
    "gcluster.google.com/managed-by=cluster-toolkit,gcluster.google.com/storage-type=gcsfuse"

static void script_delete(void)
{
    json_t *js = jt_jobset("pw", 1);
    json_object_set_new(json_object_get(js, "metadata"), "deletionTimestamp",
                        json_string("2026-01-02T06:00:00Z"));
    jt_answer("DELETE " JT_JOBSETS "/pw", json_pack("{s:o}", "json", js));
    jt_list(CLAIMS, "PersistentVolumeClaimList", json_array()); /* no gateways */
}

/* A gateway claim made at `created`, bound to the volume <name>-ns1. */
static json_t *gateway_claim(const char *name, const char *created)
{
    char *volume = gc_xasprintf("%s-ns1", name);
    json_t *claim = json_pack("{s:{s:s, s:s, s:s}, s:{s:s}}", "metadata", "name", name, "namespace",
                              "ns1", "creationTimestamp", created, "spec", "volumeName", volume);
    free(volume);
    return claim;
}

/* A JobSet whose pods mount `claim`. */
static json_t *jobset_mounting(const char *name, const char *claim)
{
    json_t *js = jt_jobset(name, 1);
    json_object_set_new(json_object_get(js, "spec"), "volumesSeen",
                        json_pack("[{s:s, s:{s:s}}]", "name", "user-mount-0",
                                  "persistentVolumeClaim", "claimName", claim));
    return js;
}

/* Google's cancel: after the job, each gateway claim of the namespace that no other job mounts
 * goes, with its volume; one another job mounts stays, and so does one made in the last two
 * minutes (a submit may be about to mount it). */
static void test_cancel_removes_unused_gateways(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 1);
    jt_list(JT_JOBS, "JobList", json_array()); /* no Shared Pathways Service clients */
    jt_answer("DELETE " JT_JOBSETS "/pw", json_pack("{s:o}", "json", js));
    char young[32];
    time_t now = time(NULL);
    strftime(young, sizeof(young), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    jt_list(CLAIMS, "PersistentVolumeClaimList",
            json_pack("[o, o, o]", gateway_claim("gw-unused", "2026-01-02T06:00:00Z"),
                      gateway_claim("gw-shared", "2026-01-02T06:00:00Z"),
                      gateway_claim("gw-young", young)));
    jt_list(JT_JOBSETS, "JobSetList",
            json_pack("[o, o]", jobset_mounting("pw", "gw-unused"),
                      jobset_mounting("other", "gw-shared")));
    jt_list("/apis/batch/v1/namespaces/ns1/jobs", "JobList", json_array());
    jt_answer("DELETE " CLAIMS "/gw-unused", json_pack("{s:{s:s}}", "json", "kind", "Status"));
    jt_answer("DELETE " VOLUMES "/gw-unused-ns1", json_pack("{s:{s:s}}", "json", "kind", "Status"));
    gc_cancel_request r = {.name = "pw"};
    gc_cancel_result res;
    gc_error err;
    assert_int_equal(gc_job_cancel(jt_kube(), &r, jt_events(), &res, &err), 0);
    if (res.gateways_removed.count != 1)
        fail_msg("removed %zu; events: %s", res.gateways_removed.count, jt_recorded());
    assert_string_equal(res.gateways_removed.items[0], "gw-unused");
    gc_cancel_result_free(&res);
    assert_string_equal(jt_recorded(), "");
    json_t *req = jt_requests();
    /* 0: the look for Shared Pathways Service clients; 1: the JobSet; 2: the gateways. */
    assert_string_equal(jt_param(req, 2, "labelSelector"), GATEWAY);
    size_t deletes = 0;
    for (size_t i = 0; i < json_array_size(req); i++)
        deletes +=
            !strcmp(json_string_value(json_object_get(json_array_get(req, i), "method")), "DELETE");
    assert_int_equal(deletes, 3); /* the JobSet, gw-unused and its volume */
    json_decref(req);
}

static void test_cancel(void **state)
{
    (void)state;
    script_delete();
    gc_cancel_request r = {.name = "pw"};
    gc_cancel_result res;
    gc_error err;
    assert_int_equal(gc_job_cancel(jt_kube(), &r, jt_events(), &res, &err), 0);
    assert_string_equal(res.name, "pw");
    assert_string_equal(res.ns, "ns1");
    assert_string_equal(res.uid, "uid-pw");
    assert_false(res.gone);
    assert_int_equal(res.pods_deleted, 0);
    gc_cancel_result_free(&res);
    json_t *req = jt_requests();
    /* The look for Shared Pathways Service clients (none), the JobSet, then the gateways
     * (none). */
    assert_int_equal(json_array_size(req), 3);
    assert_string_equal(jt_param(req, 0, "labelSelector"), "gcluster.google.com/sps-service=pw");
    assert_string_equal(json_string_value(json_object_get(json_array_get(req, 1), "method")),
                        "DELETE");
    assert_string_equal(jt_param(req, 1, "propagationPolicy"), "Foreground");
    json_decref(req);
}

/* A proxy Job of service pw's client, as gc_sps_run makes it. */
static json_t *proxy_job(const char *name, const char *user, const char *state)
{
    gc_sps_proxy p = {.name = name,
                      .service = "pw",
                      .user = user,
                      .image = "r/proxy_server:1",
                      .gcs_location = "gs://b/pw",
                      .instance_type = "tpuv6e:4x4",
                      .slices = 1,
                      .head_pool = "cpu-np",
                      .deadline_seconds = 60};
    json_t *job = gc_sps_proxy_job(&p);
    json_object_set_new(json_object_get(json_object_get(job, "metadata"), "annotations"),
                        GC_ANNOTATION_SPS_STATE, json_string(state));
    return job;
}

static void test_cancel_of_a_service_with_clients(void **state)
{
    (void)state;
    json_t *list =
        json_pack("{s:[o, o]}", "items", proxy_job("isc-proxy-ada-aaaaa", "ada", "holding"),
                  proxy_job("isc-proxy-bob-bbbbb", "bob", "waiting"));
    jt_answer("GET " JT_JOBS, json_pack("{s:O}", "json", list));
    gc_cancel_request r = {.name = "pw"};
    gc_cancel_result res;
    gc_error err;
    assert_int_equal(gc_job_cancel(jt_kube(), &r, jt_events(), &res, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message,
                        "service pw has 2 clients attached: isc-proxy-ada-aaaaa (ada, 1 slice, "
                        "holding), isc-proxy-bob-bbbbb (bob, 1 slice, waiting); their programs "
                        "lose the service when it goes: let them finish, or cancel it anyway "
                        "with --force");
    assert_int_equal(jt_request_count(), 1); /* nothing deleted */

    /* --force: the proxy Jobs go first, then the service. */
    jt_answer("GET " JT_JOBS, json_pack("{s:O}", "json", list));
    jt_answer("DELETE " JT_JOBS "/isc-proxy-ada-aaaaa", json_pack("{s:{}}", "json"));
    jt_answer("DELETE " JT_JOBS "/isc-proxy-bob-bbbbb", json_pack("{s:{}}", "json"));
    script_delete();
    r.force = true;
    assert_int_equal(gc_job_cancel(jt_kube(), &r, jt_events(), &res, &err), 0);
    json_t *req = jt_requests();
    /* The refused cancel's look, then this one's, the two proxy Jobs, the service and the
     * look for gateways (none). */
    assert_int_equal(json_array_size(req), 6);
    static const char *const paths[] = {JT_JOBS, JT_JOBS "/isc-proxy-ada-aaaaa",
                                        JT_JOBS "/isc-proxy-bob-bbbbb", JT_JOBSETS "/pw"};
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(req, i + 1), "path")),
                            paths[i]);
    assert_non_null(strstr(jt_recorded(), "notice: --force: deleted the proxy jobs of service pw's "
                                          "clients: isc-proxy-ada-aaaaa"));
    json_decref(req);
    json_decref(list);
    gc_cancel_result_free(&res);
}

static json_t *metadata(const char *name)
{
    return json_pack("{s:s, s:s, s:{s:s, s:s}}", "kind", "PartialObjectMetadata", "apiVersion",
                     "meta.k8s.io/v1", "metadata", "name", name, "namespace", "ns1");
}

/* Cancels pw with --wait while its two pods and then the JobSet go; with `relist`, the first
 * pod watch is too far behind (410) and the pods are listed again. */
static void cancel_while_pods_go(bool relist)
{
    script_delete();
    jt_list(JT_PODS, "PartialObjectMetadataList",
            json_pack("[o, o]", metadata("p1"), metadata("p2")));
    if (relist) {
        jt_answer("GET " JT_PODS,
                  json_pack("{s:{s:s}, s:i, s:{s:s, s:i, s:s}}", "when", "watch", "1", "status",
                            410, "json", "kind", "Status", "code", 410, "reason", "Gone"));
        jt_list(JT_PODS, "PartialObjectMetadataList",
                json_pack("[o, o]", metadata("p1"), metadata("p2")));
    }
    jt_watch(JT_PODS,
             json_pack("[[s, o], [s, o]]", "DELETED", metadata("p1"), "DELETED", metadata("p2")));
    jt_list(JT_JOBSETS, "PartialObjectMetadataList", json_pack("[o]", metadata("pw")));
    jt_watch(JT_JOBSETS, json_pack("[[s, o]]", "DELETED", metadata("pw")));
    gc_cancel_request r = {.name = "pw", .wait = true, .timeout = "10s"};
    gc_cancel_result res;
    gc_error err;
    assert_int_equal(gc_job_cancel(jt_kube(), &r, jt_events(), &res, &err), 0);
    assert_true(res.gone);
    assert_int_equal(res.pods_deleted, 2);
    gc_cancel_result_free(&res);
}

static void test_cancel_waits_until_the_pods_are_gone(void **state)
{
    (void)state;
    cancel_while_pods_go(false);
    assert_string_equal(jt_recorded(), "progress: cancelling pw: 0/2 pods gone\n"
                                       "progress: cancelling pw: 1/2 pods gone\n"
                                       "progress: cancelling pw: 0/1 JobSet gone\n"
                                       "end\n");
    json_t *req = jt_requests();
    assert_int_equal(json_array_size(req), 7); /* the first: the look for SPS clients */
    assert_string_equal(jt_param(req, 2, "labelSelector"), "jobset.sigs.k8s.io/jobset-name=pw");
    assert_string_equal(jt_param(req, 4, "fieldSelector"), "metadata.name=pw");
    json_decref(req);
}

/* A re-list announces every pod once more: none is counted twice, so the wait ends when both
 * are gone. */
static void test_cancel_wait_survives_a_relist(void **state)
{
    (void)state;
    cancel_while_pods_go(true);
    /* The re-list's announcements redraw the same count: never 0/4. */
    assert_string_equal(jt_recorded(), "progress: cancelling pw: 0/2 pods gone\n"
                                       "progress: cancelling pw: 0/2 pods gone\n"
                                       "progress: cancelling pw: 0/2 pods gone\n"
                                       "progress: cancelling pw: 0/2 pods gone\n"
                                       "progress: cancelling pw: 1/2 pods gone\n"
                                       "progress: cancelling pw: 0/1 JobSet gone\n"
                                       "end\n");
}

static void test_cancel_wait_times_out(void **state)
{
    (void)state;
    script_delete();
    jt_list(JT_PODS, "PartialObjectMetadataList", json_pack("[o]", metadata("p1")));
    jt_watch(JT_PODS, json_array());
    gc_cancel_request r = {.name = "pw", .wait = true, .timeout = "1s"};
    gc_cancel_result res;
    gc_error err;
    assert_int_equal(gc_job_cancel(jt_kube(), &r, jt_events(), &res, &err), GC_EXIT_RUNTIME);
    assert_string_equal(err.message, "job pw is still being deleted after 1s (gcluster job "
                                     "inspect pw shows what is left)");
    assert_null(res.name);
}

static void test_cancel_of_a_missing_job(void **state)
{
    (void)state;
    gc_cancel_request r = {.name = "nope", .wait = true};
    gc_cancel_result res;
    gc_error err;
    assert_int_equal(gc_job_cancel(jt_kube(), &r, jt_events(), &res, &err), GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 404);
    assert_string_equal(err.message,
                        "no job named nope in namespace ns1 (gcluster job list shows the jobs)");
    assert_null(res.name);
    /* The look for SPS clients, the DELETE, the look for a JobSet-less Indexed Job of that
     * name, then where else a job of that name lives; nothing is waited for. */
    assert_int_equal(jt_request_count(), 4);
}

static void test_cancel_bad_flags_send_nothing(void **state)
{
    (void)state;
    gc_cancel_result res;
    gc_error err;
    gc_cancel_request no_wait = {.name = "pw", .timeout = "5m"};
    assert_int_equal(gc_job_cancel(jt_kube(), &no_wait, jt_events(), &res, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message, "--timeout only applies with --wait");
    gc_cancel_request duration = {.name = "pw", .wait = true, .timeout = "soon"};
    assert_int_equal(gc_job_cancel_check(&duration, &err), GC_EXIT_USAGE);
    assert_true(strstr(err.message, "--timeout") != NULL);
    gc_cancel_request name = {.name = "PW"};
    assert_int_equal(gc_job_cancel(jt_kube(), &name, jt_events(), &res, &err), GC_EXIT_USAGE);
    assert_int_equal(jt_request_count(), 0);
}

/* The watch: the JobSet as listed (`listed`, NULL for none), then `changes`. */
static void script_watch(json_t *listed, json_t *changes)
{
    jt_list(JT_JOBSETS, "JobSetList", listed ? json_pack("[o]", listed) : json_array());
    jt_watch(JT_JOBSETS, changes);
}

static json_t *running_jobset(void)
{
    json_t *js = jt_jobset("pw", 1);
    json_object_set_new(json_object_get(js, "status"), "replicatedJobsStatus",
                        jt_json("[{'name': 'pathways-head', 'ready': 1}]"));
    return js;
}

static void test_watch_to_success(void **state)
{
    (void)state;
    json_t *queued = jt_jobset("pw", 1);
    json_object_set_new(json_object_get(queued, "spec"), "suspend", json_true());
    json_t *done = running_jobset();
    jt_condition(done, "Completed", "AllJobsCompleted", "done");
    script_watch(queued,
                 json_pack("[[s, o], [s, o]]", "MODIFIED", running_jobset(), "MODIFIED", done));
    jt_list(JT_WORKLOADS, "WorkloadList",
            json_pack("[o]", jt_workload("pw", false, "Pending", "waiting for quota")));
    jt_list(JT_PODS, "PodList",
            json_pack("[o, o]", jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu-1"),
                      jt_pod("pw", "worker", 0, 0, "Pending", NULL)));
    gc_job_status final;
    gc_error err;
    assert_int_equal(gc_job_watch_to_end(jt_kube(), "pw", 30, jt_events(), &final, &err), 0);
    assert_int_equal(final.phase, GC_JOB_SUCCEEDED);
    assert_string_equal(jt_recorded(), "progress: pw: Queued - Pending: waiting for quota\n"
                                       "progress: pw: Running 1/5\n"
                                       "progress: pw: Succeeded\n"
                                       "end\n");
}

static void test_watch_to_failure(void **state)
{
    (void)state;
    json_t *failed = running_jobset();
    jt_condition(failed, "Failed", "FailedJobs", "jobset failed");
    script_watch(running_jobset(), json_pack("[[s, o]]", "MODIFIED", failed));
    jt_list(JT_PODS, "PodList",
            json_pack("[o]", jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu-1")));
    json_t *head = jt_pod("pw", "pathways-head", 0, 0, "Failed", "cpu-1");
    jt_pod_exit(head, "workload-container", 3);
    jt_list(JT_PODS, "PodList", json_pack("[o]", head));
    gc_job_status final;
    gc_error err;
    assert_int_equal(gc_job_watch_to_end(jt_kube(), "pw", 30, jt_events(), &final, &err),
                     GC_EXIT_JOB_FAILED);
    assert_int_equal(final.phase, GC_JOB_FAILED);
    assert_string_equal(err.message, "job pw failed: pod pw-pathways-head-0-0-x0: container "
                                     "workload-container exited with code 3; jobset failed");
}

static void test_watch_of_a_deleted_job(void **state)
{
    (void)state;
    script_watch(NULL, json_array());
    gc_job_status final;
    gc_error err;
    assert_int_equal(gc_job_watch_to_end(jt_kube(), "pw", 30, jt_events(), &final, &err),
                     GC_EXIT_RUNTIME);
    assert_string_equal(err.message, "job pw was deleted before it finished");
    assert_string_equal(final.text, "");
}

static void test_watch_times_out(void **state)
{
    (void)state;
    script_watch(running_jobset(), json_array());
    jt_list(JT_PODS, "PodList",
            json_pack("[o]", jt_pod("pw", "pathways-head", 0, 0, "Running", "cpu-1")));
    gc_job_status final;
    gc_error err;
    assert_int_equal(gc_job_watch_to_end(jt_kube(), "pw", 1, jt_events(), &final, &err),
                     GC_EXIT_RUNTIME);
    assert_string_equal(err.message,
                        "timed out after 1s waiting for job pw (Running 1/5); it keeps running: "
                        "follow it with gcluster job inspect pw");
    assert_int_equal(final.phase, GC_JOB_RUNNING);
    assert_string_equal(jt_recorded(), "progress: pw: Running 1/5\nend\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cancel, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_cancel_removes_unused_gateways, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_cancel_of_a_service_with_clients, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_cancel_wait_survives_a_relist, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_cancel_waits_until_the_pods_are_gone, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(test_cancel_wait_times_out, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_cancel_of_a_missing_job, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_cancel_bad_flags_send_nothing, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_watch_to_success, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_watch_to_failure, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_watch_of_a_deleted_job, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(test_watch_times_out, jt_open, jt_close),
    };
    return cmocka_run_group_tests(tests, setup, jt_stop);
}
