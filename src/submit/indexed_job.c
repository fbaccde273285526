/*
 * A job without JobSet: when the cluster has no JobSet API, or GCLUSTER_DISABLE_JOBSET=1 says not
 * to use it, a single-slice job without Pathways runs as the one Job its JobSet would have made
 * (a batch/v1 Indexed Job, which Kueue queues as it queues JobSets) and a headless Service that
 * gives its pods stable host names, as Google's gcluster falls back (manifest/indexed_job.c
 * builds both).
 */
#include "gcluster/kube.h"
#include "gcluster/manifest.h"
#include "gcluster/submit.h"
#include "submit/submit_checks.h"

#include <stdlib.h>
#include <string.h>

bool submit_jobset_disabled(void)
{
    const char *v = getenv("GCLUSTER_DISABLE_JOBSET");
    return v && !strcmp(v, "1");
}

int submit_indexed_job(gc_kube *kube, const gc_submit_plan *plan, bool dry_run, const gc_events *ev,
                       gc_error *err)
{
    const gc_workload *w = &plan->workload;
    json_t *objects = NULL;
    int rc = gc_workload_indexed_job(w, &objects, err);
    const char *ns = gc_kube_namespace(kube);
    size_t i;
    json_t *object;
    json_array_foreach(rc ? NULL : objects, i, object)
    {
        bool service = !strcmp(gc_kube_string(object, "kind"), "Service");
        submit_overlay_apply(plan->overlays,
                             service ? GC_TEMPLATE_INDEXED_SERVICE : GC_TEMPLATE_INDEXED_JOB,
                             object);
        char *path = service ? gc_kube_path(NULL, "v1", ns, "services", NULL)
                             : gc_kube_path("batch", "v1", ns, "jobs", NULL);
        rc = gc_kube_create(kube, path, object, (dry_run ? GC_KUBE_DRY_RUN : 0) | GC_KUBE_STRICT,
                            NULL, err);
        free(path);
        if (rc) {
            gc_error_prefix(err, "the cluster rejected the %s %s of the JobSet-less job: ",
                            service ? "headless Service" : "Indexed Job", w->name);
            break;
        }
    }
    if (!rc && !dry_run)
        gc_notice(ev, "created %s as a batch/v1 Indexed Job and a headless Service (no JobSet: %s)",
                  w->name,
                  submit_jobset_disabled() ? "GCLUSTER_DISABLE_JOBSET=1"
                                           : "the cluster does not serve jobset.x-k8s.io");
    json_decref(objects);
    return rc;
}
