/*
 * The diagnosis of a job that failed or whose hosts stopped it (diagnose_failed.c), called by
 * the engine's entry (diagnose.c). Internal to diagnose/.
 */
#ifndef GCLUSTER_DIAGNOSE_DIAGNOSE_FAILED_H
#define GCLUSTER_DIAGNOSE_DIAGNOSE_FAILED_H

#include "gcluster/diagnose.h"

#include <stdbool.h>

/* Failed: which replicated job, pod, container and exit code, and why the JobSet gave up. */
void diagnose_failed(const gc_diagnose_input *in, gc_diagnosis *d);
/* A pod the node stopped (maintenance, shutdown, DisruptionTarget, exit 143): true if found. */
bool diagnose_disrupted(const gc_diagnose_input *in, gc_diagnosis *d);

#endif
