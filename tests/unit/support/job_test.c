#include "job_test.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kube_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kube_test_env env;
static gc_kube *kube;
static gc_buf recorded;

static void record(void *ctx, gc_event_kind kind, const char *text)
{
    (void)ctx;
    static const char *const names[] = {"trace", "notice", "warning", "progress", "end"};
    if (kind == GC_EVENT_PROGRESS_END)
        gc_buf_printf(&recorded, "end\n");
    else if (kind != GC_EVENT_TRACE)
        gc_buf_printf(&recorded, "%s: %s\n", names[kind], text);
}

static const gc_events recorder = {.emit = record};

int jt_start(const char *server_script)
{
    bool started = kube_test_env_start(&env, server_script);
    setenv("HOME", env.tmp, 1);
    return started ? 0 : -1;
}

int jt_stop(void **state)
{
    (void)state;
    kube_test_env_stop(&env);
    return 0;
}

int jt_open(void **state)
{
    (void)state;
    if (!kube_test_server_reset_for_new_client(&env.server))
        return -1;
    gc_buf_init(&recorded);
    return kube_test_open_client(&env.server, &env.pki, env.tmp, NULL, 0, &kube);
}

int jt_close(void **state)
{
    (void)state;
    gc_kube_close(kube);
    kube = NULL;
    gc_buf_free(&recorded);
    return 0;
}

const char *jt_kubeconfig(void)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/kubeconfig", env.tmp);
    return path;
}

gc_kube *jt_kube(void)
{
    return kube;
}

const gc_events *jt_events(void)
{
    return &recorder;
}

const char *jt_recorded(void)
{
    return recorded.len ? recorded.data : "";
}

json_t *jt_json(const char *quoted)
{
    char *text = gc_xstrdup(quoted);
    for (char *p = text; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t jerr;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!v)
        fail_msg("bad test JSON at %d:%d (%s): %s", jerr.line, jerr.column, jerr.text, text);
    free(text);
    return v;
}

void jt_answer(const char *method_path, json_t *answer)
{
    json_t *script = json_pack("{s:[o]}", method_path, answer);
    char *text = json_dumps(script, JSON_COMPACT);
    if (!kube_test_server_script(&env.server, text))
        fail_msg("the test server refused the script %s", text);
    free(text);
    json_decref(script);
}

void jt_get(const char *path, json_t *object)
{
    char *key = gc_xasprintf("GET %s", path);
    jt_answer(key, json_pack("{s:o}", "json", object));
    free(key);
}

void jt_list(const char *path, const char *kind, json_t *items)
{
    char *key = gc_xasprintf("GET %s", path);
    jt_answer(key, json_pack("{s:{s:n}, s:{s:s, s:s, s:{s:s}, s:o}}", "when", "watch", "json",
                             "kind", kind, "apiVersion", "v1", "metadata", "resourceVersion", "10",
                             "items", items));
    free(key);
}

void jt_list_pages(const char *path, const char *kind, json_t *items, size_t page)
{
    char *key = gc_xasprintf("GET %s", path);
    size_t count = json_array_size(items), pages = count ? (count + page - 1) / page : 1;
    for (size_t p = 0; p < pages; p++) {
        json_t *part = json_array();
        for (size_t i = p * page; i < count && i < (p + 1) * page; i++)
            json_array_append(part, json_array_get(items, i));
        char token[24], next[24];
        snprintf(token, sizeof(token), "p%zu", p);
        snprintf(next, sizeof(next), "p%zu", p + 1);
        json_t *when =
            json_pack("{s:n, s:o}", "watch", "continue", p ? json_string(token) : json_null());
        json_t *meta = json_pack("{s:s}", "resourceVersion", "10");
        if (p + 1 < pages)
            json_object_set_new(meta, "continue", json_string(next));
        jt_answer(key, json_pack("{s:o, s:{s:s, s:s, s:o, s:o}}", "when", when, "json", "kind",
                                 kind, "apiVersion", "v1", "metadata", meta, "items", part));
    }
    json_decref(items);
    free(key);
}

void jt_script_big_job(const char *name, int slices, int hosts, int pending, int crashing)
{
    json_t *js = jt_jobset(name, slices);
    json_t *worker =
        json_array_get(json_object_get(json_object_get(js, "spec"), "replicatedJobs"), 1);
    json_object_set_new(json_object_get(json_object_get(worker, "template"), "spec"), "parallelism",
                        json_integer(hosts));
    char *path = gc_xasprintf(JT_JOBSETS "/%s", name);
    jt_get(path, js);
    free(path);
    json_t *pods = json_array();
    for (int slice = slices - 1; slice >= 0; slice--) {
        for (int host = 0; host < hosts; host++) {
            char node[64];
            snprintf(node, sizeof(node), "tpu-%d-%d", slice, host);
            bool unscheduled = slice == pending && host == 3;
            json_t *pod = jt_pod(name, "worker", slice, host, unscheduled ? "Pending" : "Running",
                                 unscheduled ? NULL : node);
            json_t *status = json_object_get(pod, "status");
            if (unscheduled)
                json_object_set_new(status, "conditions",
                                    jt_json("[{'type': 'PodScheduled', 'status': 'False',"
                                            " 'reason': 'Unschedulable',"
                                            " 'message': '0/2000 nodes are available'}]"));
            if (slice == crashing && host == 0)
                json_object_set_new(
                    status, "containerStatuses",
                    jt_json("[{'name': 'pathways-worker', 'restartCount': 5,"
                            " 'state': {'waiting': {'reason': 'CrashLoopBackOff'}}}]"));
            json_array_append_new(pods, pod);
        }
    }
    json_array_append_new(pods, jt_pod(name, "pathways-head", 0, 0, "Running", "cpu-np-0"));
    jt_list_pages(JT_PODS, "PodList", pods, 2000);
    jt_list(JT_EVENTS, "EventList", json_array());
    jt_list(JT_WORKLOADS, "WorkloadList", json_array());
}

void jt_watch(const char *path, json_t *events)
{
    json_t *chunks = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        json_t *event =
            json_pack("{s:O, s:O}", "type", json_array_get(e, 0), "object", json_array_get(e, 1));
        char *line = json_dumps(event, JSON_COMPACT);
        char *data = gc_xasprintf("%s\n", line);
        json_array_append_new(chunks, json_pack("{s:s, s:f}", "data", data, "delay", 0.02));
        free(data);
        free(line);
        json_decref(event);
    }
    json_decref(events);
    char *key = gc_xasprintf("GET %s", path);
    jt_answer(key, json_pack("{s:{s:s}, s:{s:s}, s:o, s:i}", "when", "watch", "1", "headers",
                             "Content-Type", "application/json", "chunks", chunks, "hold", 20));
    free(key);
}

json_t *jt_requests(void)
{
    return kube_test_server_log(&env.server);
}

size_t jt_request_count(void)
{
    json_t *log = kube_test_server_log(&env.server);
    size_t n = json_array_size(log);
    json_decref(log);
    return n;
}

const char *jt_param(json_t *requests, size_t i, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_array_get(requests, i), "params"), key));
}

json_t *jt_jobset(const char *name, int slices)
{
    char *uid = gc_xasprintf("uid-%s", name);
    char *slices_text = gc_xasprintf("%d", slices);
    json_t *js = json_pack(
        "{s:s, s:s,"
        " s:{s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s}},"
        " s:{s:b, s:{s:i}, s:[{s:s, s:i, s:{s:{s:i}}}, {s:s, s:i, s:{s:{s:i}}}]},"
        " s:{}}",
        "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind", "JobSet", "metadata", "name", name,
        "namespace", "ns1", "uid", uid, "creationTimestamp", "2026-01-02T03:04:05Z", "labels",
        "kueue.x-k8s.io/queue-name", "user-queue", "gcluster.google.com/workload", name,
        "annotations", "gcluster.google.com/compute-type", "v6e-16",
        "gcluster.google.com/num-slices", slices_text, "gcluster.google.com/topology", "4x4",
        "gcluster.google.com/pathways", "yes", "spec", "suspend", 0, "failurePolicy", "maxRestarts",
        2, "replicatedJobs", "name", "pathways-head", "replicas", 1, "template", "spec",
        "parallelism", 1, "name", "worker", "replicas", slices, "template", "spec", "parallelism",
        4, "status");
    free(uid);
    free(slices_text);
    return js;
}

void jt_condition(json_t *object, const char *type, const char *reason, const char *message)
{
    json_t *status = json_object_get(object, "status");
    json_t *conditions = json_object_get(status, "conditions");
    if (!conditions) {
        conditions = json_array();
        json_object_set_new(status, "conditions", conditions);
    }
    json_array_append_new(conditions, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status",
                                                "True", "reason", reason, "message", message,
                                                "lastTransitionTime", "2026-01-02T04:00:00Z"));
}

json_t *jt_pod(const char *jobset, const char *role, int slice, int host, const char *phase,
               const char *node)
{
    bool head = !strcmp(role, "pathways-head");
    char *name = gc_xasprintf("%s-%s-%d-%d-x%d", jobset, role, slice, host, slice * 10 + host);
    char *slice_text = gc_xasprintf("%d", slice);
    char *host_text = gc_xasprintf("%d", host);
    json_t *spec =
        head ? jt_json("{'initContainers': [{'name': 'pathways-proxy', 'restartPolicy': 'Always'},"
                       " {'name': 'pathways-rm', 'restartPolicy': 'Always'}],"
                       " 'containers': [{'name': 'workload-container'}]}")
             : jt_json("{'containers': [{'name': 'pathways-worker'}]}");
    if (node)
        json_object_set_new(spec, "nodeName", json_string(node));
    json_t *pod =
        json_pack("{s:{s:s, s:s, s:{s:s, s:s, s:s, s:s}}, s:o, s:{s:s}}", "metadata", "name", name,
                  "namespace", "ns1", "labels", "jobset.sigs.k8s.io/jobset-name", jobset,
                  "jobset.sigs.k8s.io/replicatedjob-name", role, "jobset.sigs.k8s.io/job-index",
                  slice_text, "batch.kubernetes.io/job-completion-index", host_text, "spec", spec,
                  "status", "phase", phase);
    free(name);
    free(slice_text);
    free(host_text);
    return pod;
}

void jt_pod_exit(json_t *pod, const char *container, int exit_code)
{
    json_t *status = json_object_get(pod, "status");
    json_object_set_new(status, "containerStatuses",
                        json_pack("[{s:s, s:i, s:{s:{s:i}}}]", "name", container, "restartCount", 1,
                                  "state", "terminated", "exitCode", exit_code));
}

json_t *jt_workload(const char *jobset, bool admitted, const char *reason, const char *message)
{
    char *name = gc_xasprintf("jobset-%s-1a2b3", jobset);
    char *uid = gc_xasprintf("uid-%s", jobset);
    json_t *wl = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:[]}}", "apiVersion",
                           "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", "name", name,
                           "namespace", "ns1", "labels", "kueue.x-k8s.io/job-uid", uid, "status",
                           "conditions");
    json_t *conditions = json_object_get(json_object_get(wl, "status"), "conditions");
    const char *truth = admitted ? "True" : "False";
    json_array_append_new(conditions,
                          json_pack("{s:s, s:s, s:s, s:s}", "type", "QuotaReserved", "status",
                                    truth, "reason", reason, "message", message));
    json_array_append_new(conditions,
                          json_pack("{s:s, s:s, s:s, s:s}", "type", "Admitted", "status", truth,
                                    "reason", reason, "message", message));
    if (admitted)
        json_object_set_new(
            json_object_get(wl, "status"), "admission",
            jt_json("{'clusterQueue': 'cluster-queue', 'podSetAssignments': ["
                    "{'name': 'pathways-head', 'flavors': {'cpu': 'pathways-flavor', 'memory': "
                    "'pathways-flavor'}},"
                    "{'name': 'worker', 'flavors': {'google.com/tpu': 'tpu-flavor'}}]}"));
    free(name);
    free(uid);
    return wl;
}

json_t *jt_warning(const char *kind, const char *object, const char *reason, const char *message,
                   int count)
{
    return json_pack("{s:s, s:{s:s, s:s}, s:s, s:s, s:i, s:s, s:s}", "type", "Warning",
                     "involvedObject", "kind", kind, "name", object, "reason", reason, "message",
                     message, "count", count, "lastTimestamp", "2026-01-02T05:00:00Z", "kind",
                     "Event");
}
