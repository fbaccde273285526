/*
 * The diagnosis of an admitted job from its pods (diagnose_pods.c), called by the engine's entry
 * (diagnose.c). Internal to diagnose/.
 */
#ifndef GCLUSTER_DIAGNOSE_DIAGNOSE_PODS_H
#define GCLUSTER_DIAGNOSE_DIAGNOSE_PODS_H

#include "gcluster/diagnose.h"

#include <stdbool.h>

/* Admitted: a pod that cannot be placed, pulled or started. True when one was found. */
bool diagnose_pod_problem(const gc_diagnose_input *in, gc_diagnosis *d);
/* Running or restarting normally: n/m pods, restarts so far. */
void diagnose_running(const gc_diagnose_input *in, gc_diagnosis *d);

#endif
