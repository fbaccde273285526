/*
 * The Kubernetes objects of the gke-cluster module (besides the Kueue configuration of
 * kubectl-apply): its network objects (gcp_network.c), the Workload Identity service account
 * and the multi-tier checkpointing configuration.
 */
#include "deploy/gcp.h"

#include <stdlib.h>
#include <string.h>

/* configure_workload_identity_sa: the Kubernetes service account, annotated with the Google
 * account it acts as, in its namespace (made when it is not "default"). */
static void identity_objects(const planner *p, const gc_bp_module *m, json_t *objects)
{
    const char *ksa, *ns;
    char *gsa;
    if (!deploy_gcp_workload_identity(p, m, &ksa, &ns, &gsa))
        return;
    if (strcmp(ns, "default"))
        json_array_append_new(objects, json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
                                                 "Namespace", "metadata", "name", ns));
    json_array_append_new(objects,
                          json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}}}", "apiVersion", "v1", "kind",
                                    "ServiceAccount", "metadata", "name", ksa, "namespace", ns,
                                    "annotations", "iam.gke.io/gcp-service-account", gsa));
    free(gsa);
}

/* The objects the gke-cluster module applies besides Kueue's: the network objects above, and
 * for multi-tier checkpointing the CheckpointConfiguration "default" (its
 * templates/mtc-config.yaml.tftpl): the in-memory volume size from mtc_cache_size (50Gi unless
 * set) and the bucket checkpoints go to. Without a bucket the module refuses the blueprint, so
 * nothing is added then. */
void deploy_cluster_objects(const gc_blueprint *bp, json_t *objects)
{
    planner p = {0};
    deploy_gcp_planner_init(&p, bp, NULL);
    for (size_t i = 0; i < bp->module_count; i++) {
        const gc_bp_module *m = &bp->modules[i];
        if (deploy_gcp_source_is(m, SOURCE_CLUSTER))
            deploy_gcp_network_objects(&p, m, objects);
    }
    for (size_t i = 0; i < bp->module_count; i++)
        if (deploy_gcp_source_is(&bp->modules[i], SOURCE_CLUSTER))
            identity_objects(&p, &bp->modules[i], objects);
    for (size_t i = 0; i < bp->module_count; i++) {
        const gc_bp_module *m = &bp->modules[i];
        if (!deploy_gcp_source_is(m, SOURCE_CLUSTER) ||
            !deploy_gcp_bool(&p, m, "enable_multi_tier_checkpointing", false))
            continue;
        const char *bucket = deploy_gcp_string(&p, m, "mtc_target_bucket", NULL);
        if (!bucket)
            continue;
        json_array_append_new(objects, json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}}", "apiVersion",
                                                 "checkpointing.gke.io/v1", "kind",
                                                 "CheckpointConfiguration", "metadata", "name",
                                                 "default", "spec", "inMemoryVolumeSize",
                                                 deploy_gcp_string(&p, m, "mtc_cache_size", "50Gi"),
                                                 "cloudStorageBucketName", bucket));
    }
}

int gc_deploy_objects(const gc_blueprint *bp, const char *head_pool, const char *kueue_api,
                      json_t **objects, gc_buf *warnings, gc_error *err)
{
    int rc = deploy_kueue_objects(bp, head_pool, kueue_api, objects, warnings, err);
    if (!rc) {
        deploy_cluster_objects(bp, *objects);
        deploy_storage_objects(bp, *objects);
    }
    return rc;
}
