/*
 * `job submit --pathways-deploy-sps`: a Shared Pathways Service is a headless Pathways job whose
 * head runs the resource manager alone (gcluster/sps.h). Internal to submit/.
 */
#ifndef GCLUSTER_SUBMIT_SUBMIT_SPS_H
#define GCLUSTER_SUBMIT_SUBMIT_SPS_H

#include "gcluster/error.h"
#include "gcluster/manifest.h"
#include "gcluster/submit.h"

/* Refuses what a service does not take (a command, its own proxy's flags) and writes to `out`
 * the request the rest of submit plans: `r` as a headless Pathways job. GC_EXIT_USAGE. */
int submit_sps_request(const gc_submit_request *r, gc_submit_request *out, gc_error *err);

/* Makes the planned headless job a service: the head without a proxy, pathways-utils'
 * defaults (30 JobSet restarts unless --restarts, the workers' TPU logging). */
void submit_sps_workload(const gc_submit_request *r, gc_workload *w);

#endif
