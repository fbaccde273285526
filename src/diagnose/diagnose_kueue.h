/*
 * The diagnosis of a job Kueue has not admitted or took back (diagnose_kueue.c), called by the
 * engine's entry (diagnose.c). Internal to diagnose/.
 */
#ifndef GCLUSTER_DIAGNOSE_DIAGNOSE_KUEUE_H
#define GCLUSTER_DIAGNOSE_DIAGNOSE_KUEUE_H

#include "gcluster/diagnose.h"

#include <stdbool.h>

/* Queued by Kueue and not admitted: fills the diagnosis. */
void diagnose_queued(const gc_diagnose_input *in, gc_diagnosis *d);
/* Evicted or preempted by Kueue: true (and the diagnosis filled) when it was. */
bool diagnose_evicted(const gc_diagnose_input *in, gc_diagnosis *d);

#endif
