/*
 * What the files of job/ share beyond gcluster/job.h and gcluster/sps.h. Internal to job/.
 */
#ifndef GCLUSTER_JOB_INTERNAL_H
#define GCLUSTER_JOB_INTERNAL_H

#include "gcluster/job.h"
#include "gcluster/sps.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether `jobset` is a Shared Pathways Service. */
bool job_sps_is_service(const json_t *jobset);

/* Where `job` stands: its place among the waiting clients (1 = first), 0 when it is not
 * waiting. */
size_t job_sps_position(const gc_sps_usage *u, const char *job);

/* JobSet-less jobs (indexed_view.c, gcluster/job.h's gc_job_indexed_view): whether `job` is
 * one's Indexed Job; a view's replicatedJobsStatus entry's ready pods (-1 for a real JobSet's);
 * the label selector of a job's pods (the JobSet's label, or the Job's for a view); the path of
 * such a Job in the client's namespace (name may be NULL). */
bool job_is_indexed_job(const json_t *job);
long job_indexed_ready_pods(const json_t *replicated_status);
void job_pods_selector(const json_t *jobset, const char *name, char *out, size_t size);
char *job_indexed_path(gc_kube *kube, const char *name);

#endif
