/*
 * What job connect makes of its job at one moment: still waiting (and for what), ready (which
 * head pod), or over (and why). Pure: connect.c reads the objects, this judges them.
 *
 * The JobSet says whether the job is queued, running, restarting or over; the head pods say
 * where the proxy is. A JobSet restart (after the head pod was deleted or failed) recreates every
 * Job, so for a moment the old head pod is terminating while its replacement is pending; only a
 * pod that is not going away can be the target. The proxy is ready when its container is: the
 * pathways-proxy container of a headless job, the native sidecar of the same name in a full one.
 */
#include "connect/connect_status.h"

#include "gcluster/connect.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PROXY_CONTAINER "pathways-proxy"

static bool going_away(const json_t *pod)
{
    const char *phase = gc_kube_string_or(json_object_get(pod, "status"), "phase", "");
    return json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") ||
           !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed");
}

/* The newest head pod that is not going away, or NULL. */
static const json_t *head_pod(const json_t *pods)
{
    const json_t *best = NULL;
    size_t i;
    const json_t *pod;
    json_array_foreach(json_object_get(pods, "items"), i, pod)
    {
        if (going_away(pod))
            continue;
        const char *created =
            gc_kube_string_or(json_object_get(pod, "metadata"), "creationTimestamp", "");
        if (!best || strcmp(created, gc_kube_string_or(json_object_get(best, "metadata"),
                                                       "creationTimestamp", "")) > 0)
            best = pod;
    }
    return best;
}

static bool named(const json_t *cs, void *name)
{
    return !strcmp(gc_kube_string_or(cs, "name", ""), name);
}

static const json_t *container_status(const json_t *pod, const char *name)
{
    gc_kube_container_state found;
    return gc_kube_each_container(pod, named, (void *)name, &found) ? found.status : NULL;
}

/* "CrashLoopBackOff: back-off 10s restarting failed container (last exit code 1)" */
static void describe_waiting(const json_t *cs, char *out, size_t size)
{
    const json_t *waiting = json_object_get(json_object_get(cs, "state"), "waiting");
    const json_t *last = json_object_get(json_object_get(cs, "lastState"), "terminated");
    const char *reason = gc_kube_string_or(waiting, "reason", "");
    const char *message = gc_kube_string_or(waiting, "message", "");
    char code[48] = "";
    if (last)
        snprintf(code, sizeof(code), " (last exit code %lld)",
                 (long long)json_integer_value(json_object_get(last, "exitCode")));
    if (reason[0])
        snprintf(out, size, "%s%s%s%s", reason, message[0] ? ": " : "", message, code);
    else
        snprintf(out, size, "started, not ready yet%s", code);
}

static void say(connect_view *v, connect_state state, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(connect_view *v, connect_state state, const char *fmt, ...)
{
    v->state = state;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->text, sizeof(v->text), fmt, ap);
    va_end(ap);
}

/* The pathways-proxy container's spec: a regular container in a headless job, a native sidecar
 * (an init container) in a full one. */
static const json_t *proxy_container(const json_t *pod)
{
    static const char *const lists[] = {"containers", "initContainers"};
    const json_t *spec = json_object_get(pod, "spec");
    for (size_t l = 0; l < sizeof(lists) / sizeof(*lists); l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            if (!strcmp(gc_kube_string_or(c, "name", ""), PROXY_CONTAINER))
                return c;
        }
    }
    return NULL;
}

connect_proxy_credentials connect_proxy_credentials_of(const json_t *pod)
{
    const json_t *proxy = proxy_container(pod);
    size_t i;
    const json_t *e;
    /* An entry of env wins over envFrom, and a later entry of the same name over an earlier one
     * (Kubernetes' rule), so the last entry decides. */
    const json_t *last = NULL;
    json_array_foreach(json_object_get(proxy, "env"), i, e)
    {
        if (!strcmp(gc_kube_string_or(e, "name", ""), GC_CONNECT_INSECURE_ENV))
            last = e;
    }
    if (last && json_object_get(last, "valueFrom"))
        return JOB_PROXY_UNKNOWN;
    if (last)
        return !strcmp(gc_kube_string_or(last, "value", ""), "true") ? JOB_PROXY_PLAINTEXT
                                                                     : JOB_PROXY_ALTS;
    return json_array_size(json_object_get(proxy, "envFrom")) ? JOB_PROXY_UNKNOWN : JOB_PROXY_ALTS;
}

static void judge_pod(const json_t *pod, const char *what, connect_view *v)
{
    const json_t *metadata = json_object_get(pod, "metadata");
    const char *name = gc_kube_string_or(metadata, "name", "");
    const char *phase = gc_kube_string_or(json_object_get(pod, "status"), "phase", "");
    snprintf(v->pod, sizeof(v->pod), "%s", name);
    snprintf(v->uid, sizeof(v->uid), "%s", gc_kube_string_or(metadata, "uid", ""));
    char why[768];
    if (strcmp(phase, "Running") != 0) {
        const json_t *scheduled = gc_kube_condition(pod, "PodScheduled");
        if (!strcmp(gc_kube_string_or(scheduled, "status", ""), "False")) {
            say(v, JOB_CONNECT_WAIT, "waiting for %s %s to be scheduled: %s", what, name,
                gc_kube_string_or(scheduled, "message", ""));
            return;
        }
        const json_t *cs = container_status(pod, PROXY_CONTAINER);
        describe_waiting(cs, why, sizeof(why));
        say(v, JOB_CONNECT_WAIT, "%s %s is starting (%s)", what, name,
            cs         ? why
            : phase[0] ? phase
                       : "Pending");
        return;
    }
    const json_t *proxy = container_status(pod, PROXY_CONTAINER);
    bool ready =
        proxy ? json_is_true(json_object_get(proxy, "ready"))
              : !strcmp(gc_kube_string_or(gc_kube_condition(pod, "Ready"), "status", ""), "True");
    if (ready) {
        v->credentials = connect_proxy_credentials_of(pod);
        say(v, JOB_CONNECT_READY, "%s %s is running, its IFRT proxy ready", what, name);
        return;
    }
    describe_waiting(proxy, why, sizeof(why));
    say(v, JOB_CONNECT_WAIT, "%s %s is running; waiting for its IFRT proxy to be ready (%s)", what,
        name, why);
}

void connect_judge(const char *name, const json_t *jobset, const json_t *head_pods,
                   const json_t *workloads, connect_view *v)
{
    memset(v, 0, sizeof(*v));
    if (!jobset) {
        say(v, JOB_CONNECT_ENDED, "job %s no longer exists: it was cancelled (deleted)", name);
        return;
    }
    if (!gc_job_replicated_job(jobset, GC_PATHWAYS_HEAD)) {
        say(v, JOB_CONNECT_ENDED,
            "job %s is not a Pathways job: it has no " GC_PATHWAYS_HEAD
            " pod with an IFRT proxy to connect to",
            name);
        return;
    }
    gc_job_facts f;
    gc_job_facts_from_jobset(jobset, &f);
    size_t i;
    const json_t *w;
    json_array_foreach(json_object_get(workloads, "items"), i, w) gc_job_facts_add_workload(&f, w);
    gc_job_status st;
    gc_job_status_derive(&f, &st);
    switch (st.phase) {
    case GC_JOB_TERMINATING:
        say(v, JOB_CONNECT_ENDED, "job %s is being deleted (it was cancelled)", name);
        return;
    case GC_JOB_SUCCEEDED:
        say(v, JOB_CONNECT_ENDED, "job %s succeeded; its Pathways servers have stopped", name);
        return;
    case GC_JOB_FAILED:
        say(v, JOB_CONNECT_ENDED, "job %s failed: %s", name, st.detail[0] ? st.detail : st.text);
        return;
    case GC_JOB_QUEUED:
        v->queued = true;
        say(v, JOB_CONNECT_WAIT, "queued: %s", st.detail);
        return;
    case GC_JOB_SUSPENDED:
        say(v, JOB_CONNECT_WAIT,
            "suspended: spec.suspend is true and it has no Kueue queue to "
            "resume it");
        return;
    default:
        break;
    }
    const json_t *pod = head_pod(head_pods);
    if (pod)
        judge_pod(pod, "head pod", v);
    else if (st.phase == GC_JOB_RESTARTING)
        say(v, JOB_CONNECT_WAIT, "restarting (%s); waiting for the new head pod", st.detail);
    else
        say(v, JOB_CONNECT_WAIT, "admitted; waiting for the head pod to be created");
}

void connect_judge_proxy(const char *job, const json_t *proxy_job, const json_t *pods,
                         connect_view *v)
{
    memset(v, 0, sizeof(*v));
    if (!proxy_job || gc_kube_field(proxy_job, NULL, "deletionTimestamp")) {
        say(v, JOB_CONNECT_ENDED, "proxy job %s was deleted", job);
        return;
    }
    const json_t *failed = gc_kube_condition(proxy_job, "Failed");
    if (gc_kube_same(gc_kube_string_or(failed, "status", ""), "True")) {
        /* DeadlineExceeded: its client stopped moving the deadline (or could not reach the API
         * server for that long). */
        say(v, JOB_CONNECT_ENDED, "proxy job %s failed: %s%s%s", job,
            gc_kube_string_or(failed, "reason", ""),
            gc_kube_string_or(failed, "message", "")[0] ? ": " : "",
            gc_kube_string_or(failed, "message", ""));
        return;
    }
    if (gc_kube_condition_true(proxy_job, "Complete")) {
        say(v, JOB_CONNECT_ENDED, "proxy job %s ended (its proxy exited)", job);
        return;
    }
    const json_t *pod = head_pod(pods);
    if (pod)
        judge_pod(pod, "proxy pod", v);
    else
        say(v, JOB_CONNECT_WAIT, "waiting for proxy job %s's pod to be created", job);
}
