/*
 * What the files of job/ share beyond gcluster/job.h and gcluster/sps.h. Internal to job/.
 */
#ifndef GCLUSTER_JOB_INTERNAL_H
#define GCLUSTER_JOB_INTERNAL_H

#include "gcluster/sps.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether `jobset` is a Shared Pathways Service. */
bool job_sps_is_service(const json_t *jobset);

/* Where `job` stands: its place among the waiting clients (1 = first), 0 when it is not
 * waiting. */
size_t job_sps_position(const gc_sps_usage *u, const char *job);

#endif
