/*
 * Writing the diagnosis (gcluster/diagnose.h's gc_diagnosis): the parts of the engine and the
 * commands that add a line of their own use these. Internal to job/.
 */
#ifndef GCLUSTER_JOB_DIAGNOSIS_H
#define GCLUSTER_JOB_DIAGNOSIS_H

#include "gcluster/diagnose.h"

#include <jansson.h>
#include <stddef.h>

/* Each line is cut to GC_DIAGNOSIS_LINE; evidence past the last slot is dropped (the first
 * lines are the ones that decided). */
void job_diag_set(gc_diagnosis *d, gc_job_phase state, const char *reason);
void job_diag_cause(gc_diagnosis *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void job_diag_fix(gc_diagnosis *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void job_diag_evidence(gc_diagnosis *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The job's roles in words: "the head", "the workers" (Pathways), else the replicated job. */
const char *job_role_words(const char *replicated_job);
/* The verb ending that agrees with those words: "" after "the workers", "s" otherwise. */
const char *job_role_s(const char *replicated_job);
/* The `gcluster job logs` flags that pick this pod and container (" --role worker ..."). */
void job_logs_flags(const json_t *pod, const char *container, char *out, size_t size);

#endif
