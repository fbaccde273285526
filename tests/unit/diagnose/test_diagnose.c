/*
 * `job why`: the diagnosis engine on objects the real controllers wrote.
 *
 * Every fixture in tests/fixtures/diagnose/ was captured from the local control plane (real
 * kube-apiserver, scheduler, JobSet and Kueue controllers, kwok nodes) by capture.py there; its
 * "how" field says how each situation was made. The tests assert the exact cause and fix lines,
 * so a wording change shows up here, and a few assert that the engine asks for the reads it
 * lacks instead of guessing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "diagnose/diagnosis.h"
#include "gcluster/diagnose.h"
#include "gcluster/sys.h"

#include <stdio.h>
#include <string.h>

#define FIXTURES GCLUSTER_SOURCE_DIR "/tests/fixtures/diagnose/"

typedef struct fixture {
    json_t *root;
    gc_diagnose_input in;
} fixture;

static const json_t *object_or_null(const json_t *root, const char *key)
{
    const json_t *v = json_object_get(root, key);
    return json_is_null(v) ? NULL : v;
}

/* Every input the fixture holds, as a caller that read everything would pass it. */
static void load(fixture *f, const char *name)
{
    char path[512];
    snprintf(path, sizeof(path), FIXTURES "%s.json", name);
    json_error_t error;
    f->root = json_load_file(path, 0, &error);
    if (!f->root)
        fail_msg("%s: %s", path, error.text);
    const json_t *r = f->root;
    f->in = (gc_diagnose_input){
        .jobset = json_object_get(r, "jobset"),
        .workload = object_or_null(r, "workload"),
        .pods = json_object_get(r, "pods"),
        .jobs = json_object_get(r, "jobs"),
        .events = json_object_get(r, "events"),
        .queues_read = true,
        .local_queues = json_object_get(r, "local_queues"),
        .cluster_queues = json_object_get(r, "cluster_queues"),
        .flavors = json_object_get(r, "flavors"),
        .workloads = json_object_get(r, "workloads"),
        .nodes = json_object_get(r, "nodes"),
        .node_pods = json_object_get(r, "node_pods"),
        .log_tail = json_string_value(json_object_get(r, "log_tail")),
        .now = gc_clock_timestamp(json_string_value(json_object_get(r, "now"))),
    };
}

static void expect(const gc_diagnosis *d, const char *state, const char *reason, const char *cause,
                   const char *fix)
{
    assert_string_equal(gc_job_phase_name(d->state), state);
    assert_string_equal(d->reason, reason);
    assert_string_equal(d->cause, cause);
    assert_string_equal(d->fix, fix);
}

static bool has_evidence(const gc_diagnosis *d, const char *text)
{
    for (size_t i = 0; i < d->evidence_count; i++)
        if (strstr(d->evidence[i], text))
            return true;
    return false;
}

/* Loads a fixture, diagnoses it with every input, and frees it. */
static void diagnose(const char *name, gc_diagnosis *d)
{
    fixture f;
    load(&f, name);
    diagnose_job(&f.in, d);
    json_decref(f.root);
}

/* Each captured situation diagnosed with every input: the exact state, reason, cause and fix. */
typedef struct case_expectation {
    const char *fixture;
    const char *state;
    const char *reason;
    const char *cause;
    const char *fix;
} case_expectation;

static const case_expectation cases[] = {
    {"cluster_queue_inactive_flavor", "Queued", "ClusterQueueInactive",
     "cluster queue broken-cq is inactive: it names flavor no-such-flavor, which does not exist",
     "create the missing flavor (gcluster deploy BLUEPRINT creates the ones it names) or take "
     "it out of the queue: kubectl edit clusterqueue broken-cq"},
    {"image_pull", "Running", "ImagePull",
     "4 worker pods cannot pull image "
     "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:no-such-tag: no such image or tag",
     "gcluster job cancel pw-pull, then submit again with --pathways-worker-image (or "
     "--pathways-server-image) set to an image that exists"},
    {"succeeded", "Succeeded", "Succeeded",
     "finished successfully at 2026-12-04T12:11:53Z (3s ago)",
     "nothing to do; its output: gcluster job logs pw-done (the job is deleted 1h after it "
     "finished)"},
    {"cluster_queue_missing", "Queued", "ClusterQueueMissing",
     "queue orphan-queue sends its jobs to cluster queue no-such-cq, which does not exist",
     "gcluster job cancel pw-orphan, then submit it again with --queue user-queue"},
    {"cluster_queue_stopped", "Queued", "ClusterQueueInactive",
     "cluster queue held-cq is stopped (stopPolicy Hold): it admits no job",
     "kubectl patch clusterqueue held-cq --type=merge -p "
     "'{\"spec\":{\"stopPolicy\":\"None\"}}'"},
    {"disrupted", "Running", "Disrupted",
     "worker pod pw-maint-worker-0-0-wb2j8 was stopped: its host shut down or ran short of "
     "resources (host maintenance) (container pathways-worker exited 143, SIGTERM); it is "
     "replaced and the job goes on (job restarts so far: 0 of at most 2)",
     "nothing to do: host maintenance ends and the job goes on; gcluster job inspect "
     "pw-maint shows the replacement"},
    {"failed_max_restarts", "Failed", "Failed",
     "the head failed 2s ago: container workload-container of pod "
     "pw-fail-pathways-head-0-0-45fhb exited with code 1; no restarts were left (0 of at "
     "most 0)",
     "see why: gcluster job logs pw-fail; fix it, then submit again"},
    {"failed_pod_failure_policy", "Failed", "Failed",
     "the head failed 3s ago: container workload-container of pod "
     "pw-pfp-pathways-head-0-0-v9dcz exited with code 2; exit code 2 is not one of "
     "--restart-on-exit-codes 42, so the job failed at once",
     "see why: gcluster job logs pw-pfp; fix it, then submit again"},
    {"failed_worker_backoff", "Failed", "Failed",
     "the workers failed 3s ago: container pathways-worker of pod pw-wfail-worker-0-1-nlpm7 "
     "exited with code 1; no restarts were left (0 of at most 0)",
     "see why: gcluster job logs pw-wfail --role worker --slice 0 --host 1; fix it, then "
     "submit again"},
    {"head_pool_missing", "Queued", "NoFlavor",
     "the head asks for nodes with cloud.google.com/gke-nodepool=head-np, and no flavor of "
     "cluster queue cluster-queue is for such nodes",
     "submit with --pathways-head-np set to a pool the queue has a flavor for, or add a "
     "flavor for head-np: gcluster deploy BLUEPRINT --pathways-head-np head-np"},
    {"preempted", "Queued", "Preempted",
     "preempted 4s ago by pw-high (priority high (750), above this job's low (250)): its "
     "pods were stopped and it waits in line again; now the workers need 32 google.com/tpu "
     "in tpu-flavor; quota 32, 16 used by pw-high",
     "nothing to do: it starts again from the beginning when quota frees up; submit with a "
     "higher --priority to keep it from being preempted"},
    {"queue_label_missing", "Suspended", "QueueLabelMissing",
     "suspended and in no queue, so nothing will start it: it has no "
     "kueue.x-k8s.io/queue-name label",
     "gcluster job cancel pw-nolabel, then submit it again with --queue user-queue"},
    {"queue_missing", "Queued", "QueueMissing",
     "queue no-such-queue does not exist in namespace default (queues there: user-queue)",
     "gcluster job cancel pw-nq, then submit it again with --queue user-queue"},
    {"quota_below_slice", "Queued", "QuotaShort",
     "the workers need 16 google.com/tpu in tpu-flavor; the quota of cluster queue small-cq "
     "is 8, less than the job needs even when the queue is empty",
     "raise small-cq's google.com/tpu quota for tpu-flavor to at least 16 (tpu_quota in the "
     "blueprint, then gcluster deploy BLUEPRINT), or submit a smaller job (--num-slices, "
     "--compute-type)"},
    {"quota_short", "Queued", "QuotaShort",
     "the workers need 16 google.com/tpu in tpu-flavor; quota 32, 32 used by pw-a",
     "wait for pw-a to finish, or free its quota: gcluster job cancel pw-a; or submit with a "
     "--priority (such as high), which lets the queue preempt it"},
    {"quota_short_priority", "Queued", "QuotaShort",
     "the workers need 16 google.com/tpu in tpu-flavor; quota 32, 32 used by pw-p2",
     "wait for pw-p2 to finish, or free its quota: gcluster job cancel pw-p2; or submit with "
     "a --priority above high, which lets the queue preempt it"},
    {"running", "Running", "Running",
     "running: 9/9 pods (head 1/1, workers 8/8); no restarts so far (at most 1)",
     "nothing to do; follow it with gcluster job logs pw-run -f"},
    {"running_restarted", "Running", "Running",
     "running: 5/5 pods (head 1/1, workers 4/4); restarted 1 time (of at most 3)",
     "nothing to do; follow it with gcluster job logs pw-again -f"},
    {"stuck_creating", "Running", "Starting",
     "starting: 1/5 pods running (head 1/1, workers 0/4), 5 created; no restarts so far (at "
     "most 1)",
     "nothing to do yet; gcluster job inspect pw-creating shows each pod"},
    {"unschedulable_busy", "Running", "Unschedulable",
     "1 worker pod waits for free hosts: all 8 tpu-v6e-slice 4x4 hosts are busy, held by "
     "pw-outside (8 hosts)",
     "wait for pw-outside to end, or free its hosts: gcluster job cancel pw-outside"},
    {"unschedulable_selector", "Running", "Unschedulable",
     "1 worker pod asks for nodes with cloud.google.com/gke-tpu-topology=8x8, and no node "
     "has it (the nodes have 4x4, 2x2x2)",
     "gcluster job cancel pw-8x8, then submit again with a --compute-type (and --topology) "
     "the cluster has: tpu-v6e-slice 4x4 (8 hosts), tpu7x 2x2x2 (2 hosts)"},
    {"waiting_strict_fifo", "Queued", "WaitingBehind",
     "waiting behind pw-f2 (queued earlier), which needs 32 google.com/tpu in tpu-flavor (16 "
     "free); cluster queue fifo-cq is StrictFIFO, so nothing behind it starts",
     "wait for pw-f2 to start, cancel it (gcluster job cancel pw-f2), or submit with a "
     "--priority (such as high)"},
};

static void test_case(void **state)
{
    const case_expectation *c = *state;
    gc_diagnosis d;
    diagnose(c->fixture, &d);
    expect(&d, c->state, c->reason, c->cause, c->fix);
}

/* Kueue names the head ("couldn't assign flavors to pod set pathways-head") when the workers
 * are what do not fit; the cause must name the workers and the numbers. */
static void test_quota_short_is_not_kueues_wording(void **state)
{
    (void)state;
    gc_diagnosis d;
    diagnose("quota_short", &d);
    assert_true(has_evidence(&d, "couldn't assign flavors to pod set pathways-head"));
    assert_non_null(strstr(d.cause, "the workers need 16 google.com/tpu"));
    assert_null(strstr(d.cause, "pathways-head"));
    assert_true(
        has_evidence(&d, "ClusterQueue cluster-queue: tpu-flavor google.com/tpu nominalQuota 32, "
                         "reserved 32"));
}

/* Memory below one slice: the amounts in the quota's own unit, the blueprint's variable. */
static void test_quota_short_memory(void **state)
{
    (void)state;
    fixture f;
    load(&f, "quota_below_slice");
    size_t i, j, k;
    json_t *cq, *group, *flavor, *r;
    json_array_foreach((json_t *)f.in.cluster_queues, i, cq)
        json_array_foreach(json_object_get(json_object_get(cq, "spec"), "resourceGroups"), j, group)
            json_array_foreach(json_object_get(group, "flavors"), k, flavor)
    {
        size_t n;
        json_array_foreach(json_object_get(flavor, "resources"), n, r)
        {
            const char *res = json_string_value(json_object_get(r, "name"));
            if (!strcmp(res, "google.com/tpu"))
                json_object_set_new(r, "nominalQuota", json_string("64"));
            if (!strcmp(res, "memory"))
                json_object_set_new(r, "nominalQuota", json_string("1000Gi"));
        }
    }
    gc_diagnosis d;
    diagnose_job(&f.in, &d);
    expect(&d, "Queued", "QuotaShort",
           "the workers need 1440Gi memory in tpu-flavor; the quota of cluster queue small-cq is "
           "1000Gi, less than the job needs even when the queue is empty",
           "raise small-cq's memory quota for tpu-flavor to at least 1440Gi "
           "(tpu_flavor_memory_quota in the blueprint, then gcluster deploy BLUEPRINT), or submit "
           "a smaller job (--num-slices, --compute-type)");
    json_decref(f.root);
}

/* Without a kubelet nothing changes on those hosts: five minutes on, the pods are stuck. */
static void test_stuck_creating_later(void **state)
{
    (void)state;
    fixture f;
    load(&f, "stuck_creating");
    f.in.now += 300;
    gc_diagnosis d;
    diagnose_job(&f.in, &d);
    expect(&d, "Running", "StuckCreating",
           "4 worker pods have been on their nodes for 5m without starting a container",
           "kubectl describe pod pw-creating-worker-0-0-qlbhd shows what the node waits for "
           "(image, volumes, network)");
    json_decref(f.root);
}

/* Pathways deletes every pod when a job fails: the Job's status still names the container,
 * the pod and the exit code. */
static void test_failed_pod_failure_policy_without_pods(void **state)
{
    (void)state;
    fixture f;
    load(&f, "failed_pod_failure_policy");
    f.in.pods = NULL;
    gc_diagnosis d;
    diagnose_job(&f.in, &d);
    expect(&d, "Failed", "Failed",
           "the head failed 3s ago: container workload-container of pod "
           "pw-pfp-pathways-head-0-0-v9dcz exited with code 2; exit code 2 is not one of "
           "--restart-on-exit-codes 42, so the job failed at once",
           "its pods are gone; fix the cause, then submit again (gcluster job inspect pw-pfp "
           "shows the Warning events)");
    assert_int_equal(d.wants, 0);
    json_decref(f.root);
}

static void test_failed_worker_backoff_without_pods(void **state)
{
    (void)state;
    fixture f;
    load(&f, "failed_worker_backoff");
    f.in.pods = json_array();
    gc_diagnosis d;
    diagnose_job(&f.in, &d);
    expect(&d, "Failed", "Failed",
           "the workers failed 3s ago: its pods failed more often than its backoff limit allows "
           "(the pods are gone, so the exit code is not known); no restarts were left (0 of at "
           "most 0)",
           "its pods are gone; fix the cause, then submit again (gcluster job inspect pw-wfail "
           "shows the Warning events)");
    json_decref((json_t *)f.in.pods);
    json_decref(f.root);
}

static void test_failed_log_tail(void **state)
{
    (void)state;
    gc_diagnosis d;
    diagnose("failed_max_restarts", &d);
    assert_int_equal(d.wants, 0);
    assert_true(has_evidence(&d, "log pw-fail-pathways-head-0-0-45fhb/workload-container: "
                                 "ValueError: batch size 0"));
    assert_true(
        has_evidence(&d, "Job pw-fail-pathways-head-0: Failed=True (BackoffLimitExceeded)"));
}

/* Without the log, the engine says whose log would tell. */
static void test_failed_wants_log(void **state)
{
    (void)state;
    fixture f;
    load(&f, "failed_max_restarts");
    f.in.log_tail = NULL;
    gc_diagnosis d;
    diagnose_job(&f.in, &d);
    assert_int_equal(d.wants, GC_DIAGNOSE_WANT_LOG);
    assert_string_equal(d.log_pod, "pw-fail-pathways-head-0-0-45fhb");
    assert_string_equal(d.log_container, "workload-container");
    json_decref(f.root);
}

/* The first stage (inspect's reads only): Kueue's words, and a request for the queues. */
static void test_queued_wants_queues(void **state)
{
    (void)state;
    fixture f;
    load(&f, "quota_short");
    f.in.queues_read = false;
    f.in.local_queues = f.in.cluster_queues = f.in.flavors = f.in.workloads = NULL;
    gc_diagnosis d;
    diagnose_job(&f.in, &d);
    expect(&d, "Queued", "Pending",
           "waiting for Kueue to admit it: couldn't assign flavors to pod set pathways-head: "
           "flavor tpu-flavor doesn't match node affinity",
           "kubectl describe workload jobset-pw-b-e0c2a -n default shows what Kueue waits for");
    assert_int_equal(d.wants, GC_DIAGNOSE_WANT_QUEUES);
    json_decref(f.root);
}

static void test_unschedulable_wants_nodes(void **state)
{
    (void)state;
    fixture f;
    load(&f, "unschedulable_busy");
    f.in.nodes = f.in.node_pods = NULL;
    gc_diagnosis d;
    diagnose_job(&f.in, &d);
    assert_string_equal(d.reason, "Unschedulable");
    assert_int_equal(d.wants, GC_DIAGNOSE_WANT_NODES);
    assert_non_null(strstr(d.cause, "8 node(s) didn't have free ports"));
    json_decref(f.root);
}

/* A healthy running job needs nothing beyond what inspect reads. */
static void test_running_wants_nothing(void **state)
{
    (void)state;
    fixture f;
    load(&f, "running");
    f.in.queues_read = false;
    f.in.local_queues = f.in.cluster_queues = f.in.flavors = f.in.workloads = NULL;
    f.in.nodes = f.in.node_pods = NULL;
    gc_diagnosis d;
    diagnose_job(&f.in, &d);
    assert_string_equal(d.reason, "Running");
    assert_int_equal(d.wants, 0);
    assert_true(has_evidence(&d, "JobSet pw-run: restarts 0 of 1; Jobs ready: pathways-head 1/1, "
                                 "worker 2/2"));
    json_decref(f.root);
}

/* A job of higher priority is ahead even when it was queued later. */
static void test_waiting_behind_higher_priority(void **state)
{
    (void)state;
    fixture f;
    load(&f, "waiting_strict_fifo");
    size_t i;
    json_t *w;
    json_array_foreach((json_t *)f.in.workloads, i, w)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(w, "metadata"), "name"));
        if (strncmp(name, "jobset-pw-f2-", 13))
            continue;
        json_t *spec = json_object_get(w, "spec");
        json_object_set_new(spec, "priority", json_integer(750));
        json_object_set_new(spec, "priorityClassRef", json_pack("{s:s}", "name", "high"));
        json_object_set_new(json_object_get(w, "metadata"), "creationTimestamp",
                            json_string("2026-12-04T12:30:00Z"));
    }
    gc_diagnosis d;
    diagnose_job(&f.in, &d);
    expect(&d, "Queued", "WaitingBehind",
           "waiting behind pw-f2 (priority high (750), above this job's 0), which "
           "needs 32 google.com/tpu in tpu-flavor (16 free); cluster queue fifo-cq is "
           "StrictFIFO, so nothing behind it starts",
           "wait for pw-f2 to start, cancel it (gcluster job cancel pw-f2), or submit with a "
           "--priority above high");
    json_decref(f.root);
}

/* Kueue v1beta1 names the class in spec.priorityClassName. */
static void test_preempted_v1beta1(void **state)
{
    (void)state;
    fixture f;
    load(&f, "preempted");
    json_t *all[16];
    size_t n = 0, i;
    json_t *w;
    all[n++] = (json_t *)f.in.workload;
    json_array_foreach((json_t *)f.in.workloads, i, w) if (n < 16) all[n++] = w;
    for (i = 0; i < n; i++) {
        json_t *spec = json_object_get(all[i], "spec");
        json_t *ref = json_object_get(spec, "priorityClassRef");
        if (ref) {
            json_object_set(spec, "priorityClassName", json_object_get(ref, "name"));
            json_object_del(spec, "priorityClassRef");
        }
    }
    gc_diagnosis d;
    diagnose_job(&f.in, &d);
    assert_non_null(
        strstr(d.cause, "by pw-high (priority high (750), above this job's low (250))"));
    json_decref(f.root);
}

static void test_preempted_without_workloads(void **state)
{
    (void)state;
    fixture f;
    load(&f, "preempted");
    f.in.queues_read = false;
    f.in.local_queues = f.in.cluster_queues = f.in.flavors = f.in.workloads = NULL;
    gc_diagnosis d;
    diagnose_job(&f.in, &d);
    assert_string_equal(d.reason, "Preempted");
    assert_non_null(strstr(d.cause, "preempted 4s ago by a job of higher priority"));
    assert_int_equal(d.wants, GC_DIAGNOSE_WANT_QUEUES);
    json_decref(f.root);
}

/* Only the JobSet: the engine still answers. */
static void test_jobset_only(void **state)
{
    (void)state;
    fixture f;
    load(&f, "queue_missing");
    gc_diagnose_input in = {.jobset = f.in.jobset};
    gc_diagnosis d;
    diagnose_job(&in, &d);
    expect(&d, "Queued", "NoWorkload", "queued on no-such-queue, but Kueue has not picked it up",
           "check that Kueue runs and manages JobSets: kubectl get pods -n kueue-system (its "
           "configuration must list jobset.x-k8s.io/jobset under integrations.frameworks)");
    json_decref(f.root);
}

static void test_json_shape(void **state)
{
    (void)state;
    gc_diagnosis d;
    diagnose("quota_short", &d);
    json_t *j = gc_diagnosis_json(&d);
    assert_string_equal(json_string_value(json_object_get(j, "state")), "Queued");
    assert_string_equal(json_string_value(json_object_get(j, "reason")), "QuotaShort");
    assert_string_equal(json_string_value(json_object_get(j, "cause")), d.cause);
    assert_string_equal(json_string_value(json_object_get(j, "fix")), d.fix);
    json_t *evidence = json_object_get(j, "evidence");
    assert_int_equal(json_array_size(evidence), d.evidence_count);
    assert_string_equal(json_string_value(json_array_get(evidence, 0)), d.evidence[0]);
    assert_int_equal(json_object_size(j), 5);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quota_short_is_not_kueues_wording),
        cmocka_unit_test(test_quota_short_memory),
        cmocka_unit_test(test_stuck_creating_later),
        cmocka_unit_test(test_failed_pod_failure_policy_without_pods),
        cmocka_unit_test(test_failed_worker_backoff_without_pods),
        cmocka_unit_test(test_failed_log_tail),
        cmocka_unit_test(test_failed_wants_log),
        cmocka_unit_test(test_queued_wants_queues),
        cmocka_unit_test(test_unschedulable_wants_nodes),
        cmocka_unit_test(test_running_wants_nothing),
        cmocka_unit_test(test_waiting_behind_higher_priority),
        cmocka_unit_test(test_preempted_v1beta1),
        cmocka_unit_test(test_preempted_without_workloads),
        cmocka_unit_test(test_jobset_only),
        cmocka_unit_test(test_json_shape),
    };
    const size_t n = sizeof(cases) / sizeof(cases[0]);
    struct CMUnitTest all[sizeof(cases) / sizeof(cases[0]) + sizeof(tests) / sizeof(tests[0])];
    for (size_t i = 0; i < n; i++) {
        all[i] = (struct CMUnitTest)cmocka_unit_test_prestate(test_case, (void *)&cases[i]);
        all[i].name = cases[i].fixture;
    }
    memcpy(all + n, tests, sizeof(tests));
    return _cmocka_run_group_tests("test_diagnose", all, sizeof(all) / sizeof(all[0]), NULL, NULL);
}
