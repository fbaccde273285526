/*
 * `job why` on a client of a Shared Pathways Service (a proxy Job, not a JobSet): whether it
 * holds its slices or waits for them, and then who holds them and where it is in line.
 */
#include "diagnose/why.h"

#include "gcluster/diagnose.h"
#include "gcluster/sps.h"

#include <stdio.h>
#include <string.h>

int diagnose_why_sps_client(gc_kube *kube, const char *job, gc_diagnosis *out, gc_error *err)
{
    memset(out, 0, sizeof(*out));
    gc_sps_usage u;
    int rc = gc_sps_read_client(kube, job, &u, err);
    if (rc)
        return rc;
    const gc_sps_client *me = gc_sps_find(&u, job);
    if (!me) {
        out->state = GC_JOB_TERMINATING;
        snprintf(out->reason, sizeof(out->reason), "SpsClientEnded");
        snprintf(out->cause, sizeof(out->cause),
                 "proxy job %s has ended or is being deleted: its client is gone", job);
        gc_sps_usage_free(&u);
        return 0;
    }
    gc_sps_wait_reason(&u, job, out->cause, sizeof(out->cause));
    if (me->waiting) {
        out->state = GC_JOB_QUEUED;
        snprintf(out->reason, sizeof(out->reason), "SpsSlicesHeld");
        snprintf(out->fix, sizeof(out->fix),
                 "wait: it starts when enough of service %s's slices are free, in the order the "
                 "clients came; ask a holder's owner to end their client (it deletes its proxy "
                 "job), or deploy a bigger service",
                 u.service);
    } else {
        out->state = GC_JOB_RUNNING;
        snprintf(out->reason, sizeof(out->reason), "SpsHolding");
    }
    for (size_t i = 0; i < u.count && out->evidence_count < GC_DIAGNOSIS_EVIDENCE; i++) {
        const gc_sps_client *c = &u.clients[i];
        snprintf(out->evidence[out->evidence_count++], GC_DIAGNOSIS_LINE,
                 "proxy job %s (%s): %d slice%s, %s since %s", c->job, c->user, c->slices,
                 c->slices == 1 ? "" : "s", c->waiting ? "waiting" : "holding", c->created);
    }
    gc_sps_usage_free(&u);
    return 0;
}
