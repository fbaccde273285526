/*
 * Helpers for the tests of the job commands (inspect, list, logs, cancel, the watch): a client
 * in namespace ns1 of the scripted loopback server (tests/unit/support/test_server.py), objects
 * shaped like the ones JobSet, Kueue and the kubelet write, and a gc_events that records what it is
 * told. One server per test program; every test starts with an empty script and request log.
 */
#ifndef GCLUSTER_TEST_JOB_TEST_H
#define GCLUSTER_TEST_JOB_TEST_H

#include "gcluster/buf.h"
#include "gcluster/events.h"
#include "gcluster/kube.h"

#include <jansson.h>
#include <stdbool.h>

#define JT_JOBSETS     "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns1/jobsets"
#define JT_ALL_JOBSETS "/apis/jobset.x-k8s.io/v1alpha2/jobsets"
#define JT_PODS        "/api/v1/namespaces/ns1/pods"
#define JT_EVENTS      "/api/v1/namespaces/ns1/events"
#define JT_JOBS        "/apis/batch/v1/namespaces/ns1/jobs"
#define JT_WORKLOADS   "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns1/workloads"

/* Group setup: the PKI and the server (tests pass GCLUSTER_SOURCE_DIR
 * "/tests/unit/support/test_server.py", the one loopback server). jt_stop is the group teardown. */
int jt_start(const char *server_script);
int jt_stop(void **state);
/* cmocka test setup and teardown: an empty server, a fresh client, an empty event record. */
int jt_open(void **state);
int jt_close(void **state);

gc_kube *jt_kube(void);
/* The kubeconfig jt_kube() was opened from, for running ./gcluster against the server. */
const char *jt_kubeconfig(void);
/* Records every event as "warning: TEXT", "notice: TEXT", "progress: TEXT" or "end" lines. */
const gc_events *jt_events(void);
const char *jt_recorded(void);

/* JSON written with ' for " (test text stays readable). Aborts the test on bad JSON. */
json_t *jt_json(const char *quoted);

/* Queues one answer (stolen) for "METHOD /path" (see test_server.py for its fields). */
void jt_answer(const char *method_path, json_t *answer);
/* GET `path` answers `object` (stolen) with 200. */
void jt_get(const char *path, json_t *object);
/* GET `path` (a collection) answers a list of `items` (stolen), kind `kind` ("PodList"), at
 * resourceVersion 10; only for requests without watch=1. */
void jt_list(const char *path, const char *kind, json_t *items);

/* The same list in pages of `page` items linked by continue tokens ("p1", "p2", ...), as the
 * API server answers a request with limit=page. Takes `items`. */
void jt_list_pages(const char *path, const char *kind, json_t *items, size_t page);

/* A Pathways JobSet `name` of `slices` slices of `hosts` hosts, with every pod Running on its
 * node, except that slice `pending` host 3 is unschedulable and slice `crashing` host 0's
 * container is in CrashLoopBackOff; scripted (JobSet, pods in pages of 2,000 as inspect asks,
 * no events or Workload) as inspect reads it. */
void jt_script_big_job(const char *name, int slices, int hosts, int pending, int crashing);
/* GET `path` with watch=1 streams `events` (stolen: [[type, object], ...]), then holds the
 * stream open for a while. */
void jt_watch(const char *path, json_t *events);

/* The requests received so far (caller decrefs), and their count. */
json_t *jt_requests(void);
size_t jt_request_count(void);
/* The query parameter `key` of request `i`, or NULL. */
const char *jt_param(json_t *requests, size_t i, const char *key);

/* A Pathways JobSet as gcluster makes it, in ns1, uid "uid-NAME", queued on user-queue: the
 * head (1 pod) and `slices` worker Jobs of 4 pods, v6e-16; not suspended, no conditions. */
json_t *jt_jobset(const char *name, int slices);
/* Sets a JobSet's condition `type` to True, with a reason and message. */
void jt_condition(json_t *object, const char *type, const char *reason, const char *message);
/* A pod of JobSet `jobset`: role "pathways-head" or "worker", its Job index and completion
 * index, phase, node (NULL: unscheduled). Head pods have the proxy and resource manager as
 * native sidecars and workload-container; workers have pathways-worker. */
json_t *jt_pod(const char *jobset, const char *role, int slice, int host, const char *phase,
               const char *node);
/* Marks the pod's `container` terminated with `exit_code`. */
void jt_pod_exit(json_t *pod, const char *container, int exit_code);
/* The Kueue Workload of JobSet `jobset`: admitted to cluster-queue (with flavors for both pod
 * sets), or pending with `reason` and `message`. */
json_t *jt_workload(const char *jobset, bool admitted, const char *reason, const char *message);
/* A Warning event about `kind`/`object`. */
json_t *jt_warning(const char *kind, const char *object, const char *reason, const char *message,
                   int count);

#endif
