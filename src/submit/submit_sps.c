/*
 * `job submit --pathways-deploy-sps` (submit/submit_sps.h): the Shared Pathways Service as
 * pathways-utils' deploy_pathways_service.py shapes it, queued through Kueue like every job.
 */
#include "submit/submit_sps.h"

#include <string.h>

/* pathways-utils' --max_restarts default: the service is recreated after a head failure (a
 * crash, a node upgrade) this many times before it is marked failed. */
#define SPS_DEFAULT_RESTARTS 30

static int refuse(const char *flag, bool given, const char *why, gc_error *err)
{
    if (!given)
        return 0;
    return gc_fail(err, GC_EXIT_USAGE, "%s does not go with --pathways-deploy-sps: %s", flag, why);
}

int submit_sps_request(const gc_submit_request *r, gc_submit_request *out, gc_error *err)
{
    static const char no_program[] =
        "a Shared Pathways Service runs no program of its own; run yours against it with "
        "--pathways-run-sps-workload --pathways-service NAME --command CMD";
    static const char no_proxy[] = "the service has no proxy; each client's proxy takes it with "
                                   "--pathways-run-sps-workload";
    int rc = refuse("--command", r->command != NULL, no_program, err);
    if (!rc)
        rc = refuse("--base-image", r->base_image != NULL, no_program, err);
    if (!rc)
        rc = refuse("--build-context", r->build_context != NULL, no_program, err);
    if (!rc)
        rc =
            refuse("--pathways-proxy-server-image", r->pathways_proxy_image != NULL, no_proxy, err);
    if (!rc)
        rc = refuse("--pathways-proxy-args", r->pathways_proxy_args != NULL, no_proxy, err);
    if (!rc)
        rc = refuse("--pathways-proxy-env", r->pathways_proxy_env_count > 0, no_proxy, err);
    if (!rc)
        rc = refuse("--pathways-elastic-slices", r->pathways_elastic_slices_set,
                    "clients ask the service for some of its slices instead", err);
    if (!rc)
        rc = refuse("--await-job-completion/--timeout", r->await_completion || r->timeout,
                    "a service runs until you cancel it", err);
    if (rc)
        return rc;
    *out = *r;
    out->pathways = true;
    out->pathways_headless = true;
    return 0;
}

void submit_sps_workload(const gc_submit_request *r, gc_workload *w)
{
    w->sps = true;
    /* pathways-utils' workers log at INFO with TPU and XLA logging on (its worker env); a
     * service's workers serve many clients, whose problems show only there. */
    w->verbose = true;
    if (!r->restarts_set)
        w->restarts = SPS_DEFAULT_RESTARTS;
}
