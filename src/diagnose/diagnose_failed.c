/*
 * Why a job ended badly, or was stopped by its hosts: the failed replicated job, pod, container
 * and exit code, and why the JobSet gave up (no restarts left, a failure policy); a pod its node
 * stopped (maintenance, shutdown: DisruptionTarget, exit 143) and whether the job restarts.
 *
 * Pathways deletes every pod when a job fails, so a failure is read from the JobSet's Failed
 * condition and its Jobs' status first; the pods only add the container and exit code when
 * they are still there.
 */
#include "diagnose/diagnose_failed.h"
#include "diagnose/diagnosis.h"
#include "gcluster/kube.h"
#include "gcluster/sys.h"

#include <stdio.h>
#include <string.h>

#define SIGTERM_EXIT 143
#define SIGKILL_EXIT 137

static const char *pod_name(const json_t *pod)
{
    return gc_kube_field(pod, NULL, "name");
}

static bool failed_container(const json_t *cs, void *ctx)
{
    (void)ctx;
    const json_t *terminated = gc_kube_last_termination(cs);
    return terminated && json_integer_value(json_object_get(terminated, "exitCode")) != 0;
}

/* ---- disruption ------------------------------------------------------------------------- */

static const char *disruption_words(const char *reason)
{
    if (gc_kube_same(reason, "TerminationByKubelet"))
        return "its host shut down or ran short of resources (host maintenance)";
    if (gc_kube_same(reason, "EvictionByEvictionAPI"))
        return "it was evicted from its host (the node was drained, e.g. for maintenance)";
    if (gc_kube_same(reason, "DeletionByTaintManager"))
        return "its host was marked unusable (NoExecute taint)";
    if (gc_kube_same(reason, "PreemptionByScheduler"))
        return "the scheduler preempted it for a pod of higher priority";
    if (gc_kube_same(reason, "DeletionByPodGC"))
        return "its host is gone";
    return "its host stopped it";
}

static bool sigterm_container(const json_t *cs, void *ctx)
{
    (void)ctx;
    return json_integer_value(json_object_get(gc_kube_last_termination(cs), "exitCode")) ==
           SIGTERM_EXIT;
}

/* The disrupted pod and its condition, if any. */
static const json_t *disrupted_pod(const gc_diagnose_input *in, const json_t **condition)
{
    size_t i;
    const json_t *pod;
    json_array_foreach(in->pods, i, pod)
    {
        *condition = gc_kube_condition(pod, "DisruptionTarget");
        if (*condition && gc_kube_condition_true(pod, "DisruptionTarget"))
            return pod;
    }
    *condition = NULL;
    return NULL;
}

static void disruption_cause(const gc_diagnose_input *in, const json_t *pod,
                             const json_t *condition, gc_diagnosis *d)
{
    const char *name = gc_kube_field(in->jobset, NULL, "name");
    long r = gc_job_restarts(in->jobset), max = gc_job_max_restarts(in->jobset);
    gc_kube_container_state c;
    bool sigterm = gc_kube_each_container(pod, sigterm_container, NULL, &c);
    char code[160] = "";
    if (sigterm)
        snprintf(code, sizeof(code), " (container %s exited %d, SIGTERM)", c.name, SIGTERM_EXIT);
    diagnose_set(d, d->state, "Disrupted");
    char tail[160];
    if (d->state == GC_JOB_FAILED)
        snprintf(tail, sizeof(tail),
                 "no restarts were left (%ld of at most %ld), so the job "
                 "failed",
                 r, max);
    else if (r < max || (d->state == GC_JOB_RESTARTING && r <= max))
        snprintf(tail, sizeof(tail),
                 "it is replaced and the job goes on (job restarts so far: %ld of at most %ld)", r,
                 max);
    else
        snprintf(tail, sizeof(tail),
                 "no restarts are left (%ld of at most %ld): the next failure "
                 "ends the job",
                 r, max);
    diagnose_cause(d, "%s %s was stopped: %s%s; %s",
                   gc_kube_same(gc_job_pod_role(pod), GC_PATHWAYS_HEAD) ? "head pod" : "worker pod",
                   pod_name(pod),
                   condition ? disruption_words(gc_kube_string(condition, "reason"))
                             : "it got SIGTERM, as on host maintenance",
                   code, tail);
    if (d->state == GC_JOB_FAILED || r >= max)
        diagnose_fix(d,
                     "submit it again; a larger --restarts (now %ld) lets it ride out host "
                     "maintenance",
                     max);
    else
        diagnose_fix(d,
                     "nothing to do: host maintenance ends and the job goes on; gcluster job "
                     "inspect %s shows the replacement",
                     name);
    if (condition)
        diagnose_evidence(d, "pod %s: DisruptionTarget=True (%s): %s", pod_name(pod),
                          gc_kube_string_or(condition, "reason", ""),
                          gc_kube_string_or(condition, "message", ""));
}

bool diagnose_disrupted(const gc_diagnose_input *in, gc_diagnosis *d)
{
    const json_t *condition;
    const json_t *pod = disrupted_pod(in, &condition);
    if (!pod)
        return false;
    disruption_cause(in, pod, condition, d);
    return true;
}

/* ---- failure ---------------------------------------------------------------------------- */

typedef struct failure {
    const json_t *job; /* the failed child Job, if known */
    const char *rjob;  /* its replicated job */
    const char *job_reason;
    const char *job_message;
    gc_kube_container_state c; /* the failed container, if a pod is left */
    bool have_container;
    char pod[254]; /* from the pod or from the Job's message */
    char container[64];
    int exit_code;
    bool have_exit_code;
} failure;

static const json_t *failed_job(const gc_diagnose_input *in)
{
    const json_t *first = NULL;
    size_t i;
    const json_t *job;
    json_array_foreach(in->jobs, i, job)
    {
        const json_t *c = gc_kube_condition(job, "Failed");
        if (!c || !gc_kube_condition_true(job, "Failed"))
            continue;
        if (!first || gc_clock_timestamp(gc_kube_string(c, "lastTransitionTime")) <
                          gc_clock_timestamp(gc_kube_string(gc_kube_condition(first, "Failed"),
                                                            "lastTransitionTime")))
            first = job;
    }
    return first;
}

/* The Job controller's PodFailurePolicy message: "Container C for pod NS/POD failed with exit
 * code N matching FailJob rule at index 0". */
static void from_job_message(failure *fl)
{
    const char *m = fl->job_message;
    if (!m || strncmp(m, "Container ", 10))
        return;
    char container[64], pod[254];
    int code;
    if (sscanf(m, "Container %63s for pod %253s failed with exit code %d", container, pod, &code) !=
        3)
        return;
    const char *slash = strchr(pod, '/');
    snprintf(fl->pod, sizeof(fl->pod), "%s", slash ? slash + 1 : pod);
    snprintf(fl->container, sizeof(fl->container), "%s", container);
    fl->exit_code = code;
    fl->have_exit_code = true;
}

static void find_failure(const gc_diagnose_input *in, failure *fl)
{
    memset(fl, 0, sizeof(*fl));
    fl->job = failed_job(in);
    if (fl->job) {
        const json_t *c = gc_kube_condition(fl->job, "Failed");
        fl->rjob = gc_kube_field(fl->job, "labels", "jobset.sigs.k8s.io/replicatedjob-name");
        fl->job_reason = gc_kube_string(c, "reason");
        fl->job_message = gc_kube_string(c, "message");
        from_job_message(fl);
    }
    /* The failed container: in the failed Job's pods first, then in any pod. */
    for (int pass = 0; pass < 2 && !fl->have_container; pass++) {
        size_t i;
        const json_t *pod;
        json_array_foreach(in->pods, i, pod)
        {
            const char *owner = gc_kube_field(pod, "labels", "job-name");
            if (pass == 0 &&
                (!fl->job || !gc_kube_same(owner, gc_kube_field(fl->job, NULL, "name"))))
                continue;
            if (gc_kube_each_container(pod, failed_container, NULL, &fl->c)) {
                fl->have_container = true;
                break;
            }
        }
    }
    if (fl->have_container) {
        snprintf(fl->pod, sizeof(fl->pod), "%s", pod_name(fl->c.pod));
        snprintf(fl->container, sizeof(fl->container), "%s", fl->c.name);
        fl->exit_code = fl->c.exit_code;
        fl->have_exit_code = true;
        if (!fl->rjob)
            fl->rjob = gc_job_pod_role(fl->c.pod);
    }
}

static const char *exit_words(int code, const char *reason)
{
    if (gc_kube_same(reason, "OOMKilled"))
        return " (out of memory)";
    if (code == SIGKILL_EXIT)
        return " (killed: SIGKILL, often out of memory)";
    if (code == SIGTERM_EXIT)
        return " (SIGTERM: stopped from outside, e.g. host maintenance)";
    return "";
}

/* The exit codes --restart-on-exit-codes allowed, from the Job's podFailurePolicy. */
static void restart_codes(const json_t *jobset, const char *rjob, char *out, size_t size)
{
    size_t i, j, len = 0;
    const json_t *r, *rule, *v;
    out[0] = '\0';
    json_array_foreach(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), i, r)
    {
        if (!gc_kube_same(gc_kube_string(r, "name"), rjob))
            continue;
        const json_t *policy = json_object_get(
            json_object_get(json_object_get(r, "template"), "spec"), "podFailurePolicy");
        json_array_foreach(json_object_get(policy, "rules"), j, rule)
        {
            size_t k;
            json_array_foreach(json_object_get(json_object_get(rule, "onExitCodes"), "values"), k,
                               v) if (len < size) len +=
                (size_t)snprintf(out + len, size - len, "%s%lld", len ? "," : "",
                                 (long long)json_integer_value(v));
        }
    }
}

static void why_it_gave_up(const gc_diagnose_input *in, const failure *fl, const char *js_reason,
                           char *out, size_t size)
{
    long r = gc_job_restarts(in->jobset), max = gc_job_max_restarts(in->jobset);
    if (gc_kube_same(fl->job_reason, "PodFailurePolicy") ||
        gc_kube_same(js_reason, "FailJobSetFailurePolicyAction")) {
        char codes[64];
        restart_codes(in->jobset, fl->rjob, codes, sizeof(codes));
        if (codes[0] && fl->have_exit_code)
            snprintf(out, size,
                     "exit code %d is not one of --restart-on-exit-codes %s, so the "
                     "job failed at once",
                     fl->exit_code, codes);
        else
            snprintf(out, size, "its failure policy fails the job at once");
    } else if (gc_kube_same(js_reason, "ReachedMaxRestarts") || r >= max) {
        snprintf(out, size, "no restarts were left (%ld of at most %ld)", r, max);
    } else {
        snprintf(out, size, "the job failed after %ld restart%s", r, r == 1 ? "" : "s");
    }
}

void diagnose_failed(const gc_diagnose_input *in, gc_diagnosis *d)
{
    const char *name = gc_kube_field(in->jobset, NULL, "name");
    const json_t *c = gc_kube_condition(in->jobset, "Failed");
    const char *js_reason = gc_kube_string(c, "reason");
    const char *js_message = gc_kube_string(c, "message");
    char age[16];
    gc_job_age(gc_kube_string(c, "lastTransitionTime"), in->now, age, sizeof(age));
    diagnose_set(d, GC_JOB_FAILED, "Failed");

    const json_t *condition;
    const json_t *disrupted = disrupted_pod(in, &condition);
    if (disrupted) {
        disruption_cause(in, disrupted, condition, d);
        return;
    }
    /* Which Job failed decides which container to name; without the Jobs, ask for them first
     * and leave the log for the next pass. */
    if (!in->jobs)
        d->wants |= GC_DIAGNOSE_WANT_JOBS;
    failure fl;
    find_failure(in, &fl);
    char gave_up[200];
    why_it_gave_up(in, &fl, js_reason, gave_up, sizeof(gave_up));
    char what[720];
    if (fl.have_exit_code)
        snprintf(what, sizeof(what), "container %s of pod %s exited with code %d%s", fl.container,
                 fl.pod, fl.exit_code,
                 exit_words(fl.exit_code, fl.have_container ? fl.c.reason : NULL));
    else if (fl.job_reason && gc_kube_same(fl.job_reason, "BackoffLimitExceeded"))
        snprintf(what, sizeof(what),
                 "its pods failed more often than its backoff limit allows "
                 "(the pods are gone, so the exit code is not known)");
    else
        snprintf(what, sizeof(what), "%s", js_message ? js_message : "no reason recorded");
    diagnose_cause(d, "%s failed%s%s%s: %s; %s", gc_job_role_words(fl.rjob), age[0] ? " " : "", age,
                   age[0] ? " ago" : "", what, gave_up);

    if (fl.have_exit_code && fl.exit_code == SIGTERM_EXIT)
        diagnose_set(d, GC_JOB_FAILED, "Disrupted");
    char flags[96] = "";
    if (fl.have_container)
        diagnose_logs_flags(fl.c.pod, fl.container, flags, sizeof(flags));
    if (fl.have_exit_code && fl.exit_code == SIGTERM_EXIT)
        diagnose_fix(d,
                     "submit it again; a larger --restarts (now %ld) lets it ride out host "
                     "maintenance",
                     gc_job_max_restarts(in->jobset));
    else if (fl.have_container)
        diagnose_fix(d, "see why: gcluster job logs %s%s; fix it, then submit again", name, flags);
    else
        diagnose_fix(d,
                     "its pods are gone; fix the cause, then submit again (gcluster job "
                     "inspect %s shows the Warning events)",
                     name);

    diagnose_evidence(d, "JobSet %s: Failed=True (%s): %s", name, js_reason ? js_reason : "",
                      js_message ? js_message : "");
    if (fl.job)
        diagnose_evidence(d, "Job %s: Failed=True (%s): %s", gc_kube_field(fl.job, NULL, "name"),
                          fl.job_reason ? fl.job_reason : "", fl.job_message ? fl.job_message : "");
    if (fl.have_container) {
        snprintf(d->log_pod, sizeof(d->log_pod), "%s", fl.pod);
        snprintf(d->log_container, sizeof(d->log_container), "%s", fl.container);
        if (!in->log_tail && in->jobs)
            d->wants |= GC_DIAGNOSE_WANT_LOG;
    }
    if (in->log_tail) {
        /* The last lines, oldest first, each as one evidence line. */
        const char *lines[GC_DIAGNOSIS_LOG_LINES];
        size_t n = 0;
        const char *end = in->log_tail + strlen(in->log_tail);
        while (end > in->log_tail && (end[-1] == '\n' || end[-1] == '\r'))
            end--;
        const char *p = end;
        while (p > in->log_tail && n < GC_DIAGNOSIS_LOG_LINES) {
            const char *start = p;
            while (start > in->log_tail && start[-1] != '\n')
                start--;
            lines[n++] = start;
            p = start > in->log_tail ? start - 1 : start;
        }
        for (size_t k = n; k-- > 0;) {
            size_t len = strcspn(lines[k], "\r\n");
            diagnose_evidence(d, "log %s/%s: %.*s", fl.pod, fl.container, (int)len, lines[k]);
        }
    }
}
