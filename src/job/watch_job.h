/*
 * Following one job to its end with a watch (not polling), for --await-job-completion.
 * Internal to job/.
 */
#ifndef GCLUSTER_JOB_WATCH_JOB_H
#define GCLUSTER_JOB_WATCH_JOB_H

#include "gcluster/job.h"
#include "gcluster/kube.h"

/* Watches JobSet `name` until it succeeds (0), fails (GC_EXIT_JOB_FAILED, with the failing pod
 * and exit code), disappears, or `timeout` (a duration, or NULL for none) passes. Progress
 * (queued → admitted → running n/m → finished) redraws one line when o->tty. */
int gc_watch_job_to_end(gc_kube *kube, const char *name, const char *timeout, const gc_output *o,
                        gc_error *err);

/* Gathers a job's facts: the JobSet given, plus its Kueue Workload and pods from the API. */
int gc_job_facts_fetch(gc_kube *kube, const json_t *jobset, gc_job_facts *facts, gc_error *err);

#endif
