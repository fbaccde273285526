/*
 * Finding a job by name and reading a JobSet's self-description. Internal to job/.
 */
#ifndef GCLUSTER_JOB_LOOKUP_H
#define GCLUSTER_JOB_LOOKUP_H

#include "gcluster/job.h"
#include "gcluster/kube.h"

#include <jansson.h>

/* The JobSet path in the client's namespace (name may be NULL for the collection). */
char *job_jobset_path(gc_kube *kube, const char *name);

/* GETs the JobSet together with up to 4 other reads (one round trip; see gc_kube_read_all).
 * A missing JobSet becomes one clear line that also says in which other namespace a job of that
 * name exists, if any; otherwise it fails with the first failing read's error. Each read's own
 * outcome is in others[i].rc and .err. */
int job_find_jobset_with(gc_kube *kube, const char *name, json_t **jobset, gc_kube_read *others,
                         size_t count, gc_error *err);
int job_not_found(gc_kube *kube, const char *name, gc_error *err);

const json_t *job_replicated_job(const json_t *jobset, const char *name);

/* From our annotation, else from the JobSet's shape. */
gc_pathways_mode job_pathways_mode(const json_t *jobset);
/* "v6e-16 x2" (from our annotations, else from the worker node selectors); false when the
 * JobSet names no accelerator. */
bool job_compute(const json_t *jobset, char *out, size_t size);

/* A copy of `s`, or NULL for NULL or "". */
char *job_strdup_or_null(const char *s);

#endif
