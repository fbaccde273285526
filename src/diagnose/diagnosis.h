/*
 * Writing the diagnosis (gcluster/diagnose.h's gc_diagnosis): the parts of the engine and the
 * commands that add a line of their own use these. Internal to diagnose/.
 */
#ifndef GCLUSTER_DIAGNOSE_DIAGNOSIS_H
#define GCLUSTER_DIAGNOSE_DIAGNOSIS_H

#include "gcluster/diagnose.h"

#include <jansson.h>
#include <stddef.h>

/* Each line is cut to GC_DIAGNOSIS_LINE; evidence past the last slot is dropped (the first
 * lines are the ones that decided). */
void diagnose_set(gc_diagnosis *d, gc_job_phase state, const char *reason);
void diagnose_cause(gc_diagnosis *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diagnose_fix(gc_diagnosis *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void diagnose_evidence(gc_diagnosis *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The `gcluster job logs` flags that pick this pod and container (" --role worker ..."). */
void diagnose_logs_flags(const json_t *pod, const char *container, char *out, size_t size);

/* Diagnoses one job; never fails (an input of the wrong shape counts as missing). */
void diagnose_job(const gc_diagnose_input *in, gc_diagnosis *out);

#endif
