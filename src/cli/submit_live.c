/*
 * `job submit` against the selected cluster.
 */
#include "cli/cli.h"

#include <stdio.h>

int cli_submit_live(const cli_globals *g, const gc_submit_request *r, gc_error *err)
{
    /* Bad input is reported before anything (credentials included) is touched. */
    int rc = gc_submit_check(r, err);
    if (rc)
        return rc;
    gc_kube *kube;
    rc = cli_open_kube(g, &kube, err);
    if (rc)
        return rc;
    gc_output o = cli_output();
    rc = gc_submit_live(kube, r, &o, err);
    if (g->verbose)
        fprintf(stderr, "gcluster: %u API requests\n", gc_kube_request_count(kube));
    gc_kube_close(kube);
    return rc;
}
