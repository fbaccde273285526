/*
 * Following one job to its end with a watch (not polling), for --await-job-completion, and
 * gathering the facts a job's status is derived from. Internal to job/.
 */
#ifndef GCLUSTER_JOB_WATCH_JOB_H
#define GCLUSTER_JOB_WATCH_JOB_H

#include "gcluster/events.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"

/* --timeout on wait, cancel --wait and submit's await: not given (JOB_NO_TIMEOUT) waits as long
 * as it takes; 0 looks once (the list a watch starts with, and no watch), so a script can ask
 * "is it there yet?" without waiting; N > 0 waits at most N seconds. */
#define JOB_NO_TIMEOUT (-1L)

/* gc_kube_list_watch with `timeout` as above: 0 lists once, announcing each item as ADDED and
 * then GC_KUBE_SYNCED to `on_event`, and when on_event has not said GC_KUBE_STOP by then, ends
 * like a watch whose time ran out (GC_EXIT_RUNTIME, err->reason "Timeout"). Durations beyond
 * what a watch takes are capped (about 68 years). */
int job_list_watch(gc_kube *kube, const char *path, const gc_kube_list_options *opts, long timeout,
                   gc_kube_event_fn on_event, void *ctx, gc_error *err);

/* "after 30s", or "at the one look (--timeout 0)": how a timed-out message says the time. */
const char *job_timeout_words(long timeout, char *buf, size_t size);

/* Gathers a job's facts: the JobSet given, plus its Kueue Workload or its pods from the API,
 * whichever its state needs. */
int job_facts_fetch(gc_kube *kube, const json_t *jobset, gc_job_facts *facts, gc_error *err);

#endif
