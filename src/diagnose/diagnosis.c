/*
 * Writing the diagnosis: its lines (one line each, cut to fit on a character boundary), the
 * words for the job's roles, the `job logs` flags that show a pod, and its JSON.
 *
 * Words: cause and fix lines speak of jobs, queues, quota, hosts and node pools, and name our
 * own flags and commands; the Kubernetes objects and fields that said so go to the evidence.
 */
#include "diagnose/diagnosis.h"

#include "gcluster/kube.h"

#include "gcluster/manifest.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void vline(char *out, const char *fmt, va_list ap)
{
    int n = vsnprintf(out, GC_DIAGNOSIS_LINE, fmt, ap);
    /* One line each: a server message with a newline (or another control character) must not
     * break the two-line answer or the terminal it is printed on. */
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
    /* Cut to fit, the line may end inside a UTF-8 character: drop the partial one, or the
     * line is no longer valid text (and JSON refuses it). */
    if (n >= GC_DIAGNOSIS_LINE) {
        size_t len = strlen(out), start = len;
        while (start > 0 && ((unsigned char)out[start - 1] & 0xC0) == 0x80)
            start--;
        if (start > 0 && (unsigned char)out[start - 1] >= 0xC0) {
            unsigned char lead = (unsigned char)out[start - 1];
            size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
            if (len - (start - 1) < need)
                out[start - 1] = '\0';
        }
    }
}

void diagnose_set(gc_diagnosis *d, gc_job_phase state, const char *reason)
{
    d->state = state;
    snprintf(d->reason, sizeof(d->reason), "%s", reason);
}

void diagnose_cause(gc_diagnosis *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(d->cause, fmt, ap);
    va_end(ap);
}

void diagnose_fix(gc_diagnosis *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(d->fix, fmt, ap);
    va_end(ap);
}

void diagnose_evidence(gc_diagnosis *d, const char *fmt, ...)
{
    if (d->evidence_count == GC_DIAGNOSIS_EVIDENCE)
        return;
    va_list ap;
    va_start(ap, fmt);
    vline(d->evidence[d->evidence_count++], fmt, ap);
    va_end(ap);
}

json_t *gc_diagnosis_json(const gc_diagnosis *d)
{
    json_t *evidence = json_array();
    for (size_t i = 0; i < d->evidence_count; i++)
        json_array_append_new(evidence, json_string(d->evidence[i]));
    return json_pack("{s:s, s:s, s:s, s:s, s:o}", "state", gc_job_phase_name(d->state), "reason",
                     d->reason, "cause", d->cause, "fix", d->fix, "evidence", evidence);
}

/* "--role worker --slice 0 --host 1" for `job logs`, from the pod's JobSet labels. */
void diagnose_logs_flags(const json_t *pod, const char *container, char *out, size_t size)
{
    const char *role = gc_job_pod_role(pod);
    const char *slice = gc_kube_field(pod, "labels", "jobset.sigs.k8s.io/job-index");
    const char *host = gc_kube_field(pod, "labels", "batch.kubernetes.io/job-completion-index");
    if (gc_kube_same(role, GC_PATHWAYS_HEAD))
        snprintf(out, size, "%s%s",
                 container && strcmp(container, "workload-container") ? " --container " : "",
                 container && strcmp(container, "workload-container") ? container : "");
    else if (gc_kube_same(role, GC_PATHWAYS_WORKER))
        snprintf(out, size, " --role worker --slice %s --host %s", slice ? slice : "0",
                 host ? host : "0");
    else
        snprintf(out, size, "%s%s", container ? " --container " : "", container ? container : "");
}
