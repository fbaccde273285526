/*
 * The GKE fallback of cluster selection: when --cluster/--location name no context, gcloud
 * can write one (`gcloud container clusters get-credentials`), as a user would by hand.
 * It runs by argv with a time limit; its output carries no credentials (the token comes later
 * from gke-gcloud-auth-plugin), so its stderr may be quoted when it fails.
 */
#include "kube/internal.h"

#include "gcluster/process.h"

#include <stdlib.h>
#include <string.h>

#define GCLOUD_TIMEOUT_MS (180 * 1000)

int kube_gcloud_get_credentials(const gc_kube_options *opts, const char *gcloud,
                                const gc_events *events, gc_error *err)
{
    char *argv[] = {"gcloud",
                    "container",
                    "clusters",
                    "get-credentials",
                    (char *)opts->cluster,
                    "--location",
                    (char *)opts->location,
                    opts->project && opts->project[0] ? "--project" : NULL,
                    (char *)opts->project,
                    NULL};
    /* gcloud writes to the first $KUBECONFIG file; make that the file we read. */
    char *target = kube_config_primary_file(opts->kubeconfig);
    char *env[1] = {opts->kubeconfig && opts->kubeconfig[0]
                        ? gc_xasprintf("KUBECONFIG=%s", opts->kubeconfig)
                        : NULL};
    gc_buf shown;
    gc_buf_init(&shown);
    for (char **a = argv; *a; a++)
        gc_buf_printf(&shown, "%s%s", a == argv ? "" : " ", *a);
    gc_notice(events, "no kubeconfig context for cluster %s in %s; running `%s` to add one to %s",
              opts->cluster, opts->location, shown.data, target ? target : "kubeconfig");

    gc_process p = {.program = gcloud,
                    .argv = argv,
                    .env_add = env,
                    .env_add_count = env[0] ? 1 : 0,
                    .timeout_ms = GCLOUD_TIMEOUT_MS};
    gc_process_result r;
    int rc = gc_process_run(&p, &r, err);
    if (!rc && !gc_process_succeeded(&r)) {
        char how[1500];
        gc_process_explain(&r, &p, how, sizeof(how));
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "`%s` %s; check --cluster, --location and --project, or pass --context",
                     shown.data, how);
    }
    gc_process_result_free(&r);
    gc_buf_free(&shown);
    free(env[0]);
    free(target);
    return rc;
}
