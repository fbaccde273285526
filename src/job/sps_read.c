/*
 * Reading a Shared Pathways Service and its clients from the cluster (gcluster/sps.h): the
 * service JobSet and the proxy Jobs labelled with its name, in one round trip.
 */
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"
#include "gcluster/sps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int append_item(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    json_array_append(ctx, item);
    return 0;
}

int gc_sps_read_service(gc_kube *kube, const char *service, gc_sps_usage *u, gc_error *err)
{
    memset(u, 0, sizeof(*u));
    const char *ns = gc_kube_namespace(kube);
    char *jobset_path = gc_job_jobset_path(kube, service);
    char *jobs_path = gc_kube_path("batch", "v1", ns, "jobs", NULL);
    char selector[128];
    snprintf(selector, sizeof(selector), "%s=%s", GC_LABEL_SPS_SERVICE, service);
    gc_kube_list_options opts = {.label_selector = selector};
    json_t *jobset = NULL, *items = json_array();
    gc_kube_read reads[] = {
        {.path = jobset_path, .object = &jobset},
        {.path = jobs_path, .opts = &opts, .on_item = append_item, .ctx = items},
    };
    int rc = gc_kube_read_all(kube, reads, 2);
    if (rc && reads[0].rc && reads[0].err.http_status == 404) {
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "no Shared Pathways Service %s in namespace %s (deploy one with job submit "
                     "--pathways-deploy-sps --name %s, or see job list)",
                     service, ns, service);
        err->http_status = 404;
    } else if (rc) {
        *err = reads[0].rc ? reads[0].err : reads[1].err;
    }
    json_t *jobs = json_pack("{s:o}", "items", items);
    if (!rc)
        rc = gc_sps_usage_read(jobset, jobs, u, err);
    json_decref(jobset);
    json_decref(jobs);
    free(jobset_path);
    free(jobs_path);
    return rc;
}

int gc_sps_read_client(gc_kube *kube, const char *job, gc_sps_usage *u, gc_error *err)
{
    memset(u, 0, sizeof(*u));
    char *path = gc_kube_path("batch", "v1", gc_kube_namespace(kube), "jobs", job);
    json_t *proxy = NULL;
    int rc = gc_kube_get(kube, path, NULL, &proxy, err);
    free(path);
    const char *service = rc ? NULL : gc_kube_field(proxy, "labels", GC_LABEL_SPS_SERVICE);
    if (!rc && !service) {
        rc = gc_fail(err, GC_EXIT_USAGE, "%s is a Job, not a client of a Shared Pathways Service",
                     job);
        err->http_status = 404;
    }
    if (!rc)
        rc = gc_sps_read_service(kube, service, u, err);
    json_decref(proxy);
    return rc;
}
