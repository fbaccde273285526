/*
 * The compute type of a submit (submit_compute.c). Internal to submit/.
 */
#ifndef GCLUSTER_SUBMIT_SUBMIT_COMPUTE_H
#define GCLUSTER_SUBMIT_SUBMIT_COMPUTE_H

#include "gcluster/error.h"
#include "gcluster/submit.h"

/* Resolves the compute flags of `r` offline into p->compute and the workload, with everything
 * that follows from them; p->compute.pending when only the cluster's nodes can finish it.
 * GC_EXIT_USAGE naming the flag when the flags name no known type. */
int submit_resolve_compute(const gc_submit_request *r, gc_submit_plan *p, gc_error *err);

#endif
