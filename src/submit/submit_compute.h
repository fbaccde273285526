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

/* Resolves the compute type once more, against the cluster's TPU and GPU nodes, when the offline
 * answer was pending or assumed a TPU host type; when that changes the answer, everything that
 * follows from it (hosts per slice, the Pathways instance type, the checks that depend on it) is
 * derived again. Otherwise the plan stays as it is. */
int submit_refine(gc_submit_plan *plan, const gc_cluster_shapes *cluster, gc_error *err);

#endif
