/*
 * Gathering what the diagnosis engine (gcluster/diagnose.h) reads about one job, for `job why`
 * and for the diagnosis at the top of `job inspect`. Internal to diagnose/.
 */
#ifndef GCLUSTER_DIAGNOSE_WHY_H
#define GCLUSTER_DIAGNOSE_WHY_H

#include "gcluster/diagnose.h"
#include "gcluster/kube.h"

#include <jansson.h>
#include <stdbool.h>

/* Everything read so far; NULL where nothing was read. */
typedef struct diagnose_why_inputs {
    /* What diagnose_why_read_job reads (and `job inspect` reports). */
    json_t *jobset;
    json_t *workload;          /* NULL: Kueue has none for the job */
    const char *kueue_version; /* the Workload API that answered; NULL: Kueue is not installed */
    json_t *pods;
    json_t *jobs;     /* NULL: not read (only a failed job's are) */
    json_t *warnings; /* the Warning events of the job's objects */

    /* What the engine asked for (diagnose_why_diagnose). */
    bool queues_read;
    json_t *local_queues, *cluster_queues, *flavors, *workloads;
    json_t *nodes, *node_pods;
    char *log_tail;
    int tried;             /* GC_DIAGNOSE_WANT_* reads already made (or refused) */
    gc_strings unreadable; /* why a wanted read was refused, as evidence lines */
} diagnose_why_inputs;

/* The JobSet, its pods and the namespace's Warning events in one round trip, then its Workload
 * (by the JobSet's UID; a Kueue serving only v1beta1 costs one more) and, for a failed job, its
 * child Jobs with it. A
 * missing job is GC_EXIT_RUNTIME with http_status 404 and a message naming the namespace where
 * a job of that name exists. */
int diagnose_why_read_job(gc_kube *kube, const char *name, diagnose_why_inputs *in, gc_error *err);

/* Diagnoses the job at `now` (seconds since the epoch), making the further reads the engine
 * asks for: the queues, the nodes and the child Jobs together in one round trip, the failed
 * container's last log lines in another. A read the cluster refuses (forbidden, not served) or a
 * log that is gone leaves the diagnosis with what was known, and says so in its evidence; other API
 * failures are returned. */
int diagnose_why_diagnose(gc_kube *kube, diagnose_why_inputs *in, long long now, gc_diagnosis *out,
                          gc_error *err);

void diagnose_why_inputs_free(diagnose_why_inputs *in);

/* `job why` on a Shared Pathways Service client (a proxy Job named `job`): GC_EXIT_USAGE with
 * err->http_status 404 when there is no such client. */
int diagnose_why_sps_client(gc_kube *kube, const char *job, gc_diagnosis *out, gc_error *err);

#endif
