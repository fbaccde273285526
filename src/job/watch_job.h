/*
 * Following one job to its end with a watch (not polling), for --await-job-completion, and
 * gathering the facts a job's status is derived from. Internal to job/.
 */
#ifndef GCLUSTER_JOB_WATCH_JOB_H
#define GCLUSTER_JOB_WATCH_JOB_H

#include "gcluster/events.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"

/* Watches JobSet `name` until it finishes, disappears or `timeout_seconds` (> 0; <= 0 waits
 * forever) pass. Each change of state (queued → admitted → running n/m → finished) is reported
 * as progress on `ev` ("NAME: Running 3/9"), ended by GC_EVENT_PROGRESS_END. `final` receives the
 * last status seen (all zero when the job was never seen). Returns 0 when the job succeeded,
 * GC_EXIT_JOB_FAILED when it failed (the message names the failing pod, container and exit code),
 * GC_EXIT_RUNTIME when it was deleted first or the time ran out (err->reason "Timeout"). */
int job_watch_to_end(gc_kube *kube, const char *name, long timeout_seconds, const gc_events *ev,
                     gc_job_status *final, gc_error *err);

/* Gathers a job's facts: the JobSet given, plus its Kueue Workload or its pods from the API,
 * whichever its state needs. */
int job_facts_fetch(gc_kube *kube, const json_t *jobset, gc_job_facts *facts, gc_error *err);

#endif
