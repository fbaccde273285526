/*
 * The Google Cloud half of deploy, as data: what Cluster Toolkit's modules would create in a
 * project, in dependency order, each step a describe argv (is it there?) and a create argv.
 *
 * The settings and defaults are the modules' own (Cluster Toolkit v1.98.0):
 *   modules/network/vpc           a custom-mode network (MTU 8896, global routing), its
 *                                 subnetworks with secondary ranges and Private Google Access,
 *                                 the IAP and internal-traffic firewall rules, the user's rules,
 *                                 a Cloud Router "<network>-router" and NAT "cloud-nat-<region>"
 *                                 per subnetwork region (gcp_network.c)
 *   modules/network/multivpc      network_count networks "<prefix>-N" through the vpc module,
 *                                 each one subnetwork "<prefix>-N-subnet" of its share of
 *                                 global_ip_address_range (regional routing)
 *   modules/network/gpu-rdma-vpc  one network with the RDMA network profile and the template's
 *                                 subnetworks "<name_prefix>-N" (no firewall rules, no NAT)
 *   modules/project/service-account  the account "<deployment>-<name>" and its project roles
 *   modules/scheduler/gke-cluster the cluster (private nodes, Workload Identity, shielded nodes,
 *                                 Dataplane V2 with multi-networking, the CSI add-ons asked for),
 *                                 its "system" pool and, with Pathways, "cpu-np" (gcp_cluster.c)
 *   modules/compute/resource-policy  the workload policy (tpu7x: HIGH_THROUGHPUT)
 *   modules/compute/gke-node-pool the pools (reservation affinity, flex-start, queued
 *                                 provisioning, placement policy, taints, labels) (gcp_pool.c)
 * Terraform deletes the cluster's bootstrap pool ("default-pool", remove_default_node_pool);
 * here that is a step of its own after the system pool exists.
 *
 * This file orders the parts; what they share is gcp_common.c.
 */
#include "deploy/gcp.h"
#include "deploy/network_outputs.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int plan_service_account(planner *p, const gc_bp_module *m)
{
    const char *name = deploy_gcp_string(p, m, "name", NULL);
    if (!name)
        return deploy_gcp_missing(p, m, "name", "my-sa");
    char *email = deploy_gcp_account_email(p, m);
    char *id = gc_xasprintf("%s-%s", p->deployment, name);
    gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_SERVICE_ACCOUNT, email, m);
    s->check = deploy_gcp_describe(p, &(gcp_ref){.kind = GC_CLOUD_SERVICE_ACCOUNT, .name = email});
    deploy_argv d =
        deploy_gcp_command(p, &(gcp_ref){.kind = GC_CLOUD_SERVICE_ACCOUNT, .name = id}, "create");
    char *display = gc_xasprintf(
        "%s (%s)", deploy_gcp_string(p, m, "display_name", "Service Account"), p->deployment);
    deploy_argv_flag(&d, "display-name", display);
    free(display);
    char *description = gc_xasprintf(
        "%s (%s)", deploy_gcp_string(p, m, "description", "Service Account"), p->deployment);
    deploy_argv_flag(&d, "description", description);
    free(description);
    s->create = d.items;
    free(id);
    size_t i;
    const json_t *role;
    json_array_foreach(deploy_gcp_setting(p, m, "project_roles"), i, role)
    {
        if (!json_is_string(role))
            continue;
        char *full = gc_xasprintf("roles/%s", json_string_value(role));
        char *step_name = gc_xasprintf("%s %s", email, full);
        s = deploy_gcp_step(p, GC_CLOUD_ROLE_BINDING, step_name, m);
        /* Added only when the policy lacks it, so a rerun needs no IAM-admin rights. */
        deploy_argv b = deploy_gcp_command(p, &(gcp_ref){.kind = GC_CLOUD_ROLE_BINDING},
                                           "add-iam-policy-binding");
        char *member = gc_xasprintf("serviceAccount:%s", email);
        deploy_argv_flag(&b, "member", member);
        deploy_argv_flag(&b, "role", full);
        deploy_argv_flag(&b, "condition", "None");
        deploy_argv_flag(&b, "format", "none");
        s->create = b.items;
        s->check =
            deploy_gcp_binding_check(p, &(gcp_ref){.kind = GC_CLOUD_ROLE_BINDING}, member, full);
        s->present_output = gc_xstrdup(full);
        free(member);
        free(step_name);
        free(full);
    }
    free(email);
    return 0;
}

int deploy_cloud_plan_build(const gc_blueprint *bp, const gc_cloud_target *t, gc_cloud_plan *plan,
                            gc_error *err)
{
    memset(plan, 0, sizeof(*plan));
    planner p = {.plan = plan, .err = err};
    deploy_gcp_planner_init(&p, bp, t);
    bool any = false;
    for (size_t i = 0; i < bp->module_count; i++)
        any = any || deploy_cloud_handles(bp->modules[i].source);
    if (!any)
        return 0; /* only Kubernetes objects: nothing to create in Google Cloud */
    if (!p.project)
        return gc_fail(err, GC_EXIT_USAGE,
                       "the blueprint does not say which project to deploy to; pass --vars "
                       "project_id=MY-PROJECT (or --project)");
    if (!p.location)
        return gc_fail(err, GC_EXIT_USAGE,
                       "the blueprint does not say where the cluster is; pass --vars "
                       "region=us-east5 (or --location)");
    int rc = 0;
    /* Networks, then accounts, then buckets and Filestore instances, then the cluster and its own
     * pools, then policies and pools. */
    rc = deploy_gcp_plan_networks(&p);
    for (size_t i = 0; !rc && i < bp->module_count; i++)
        if (deploy_gcp_source_is(&bp->modules[i], SOURCE_SERVICE_ACCOUNT))
            rc = plan_service_account(&p, &bp->modules[i]);
    if (!rc)
        rc = deploy_gcp_plan_buckets(&p);
    if (!rc)
        rc = deploy_gcp_plan_filestores(&p);
    if (!rc && p.cluster_module)
        rc = deploy_gcp_plan_cluster(&p, p.cluster_module);
    for (size_t i = 0; !rc && i < bp->module_count; i++)
        if (deploy_gcp_source_is(&bp->modules[i], SOURCE_RESOURCE_POLICY))
            rc = deploy_gcp_plan_workload_policy(&p, &bp->modules[i]);
    if (!rc)
        rc = deploy_gcp_plan_pools(&p);
    if (rc)
        deploy_cloud_plan_free(plan);
    return rc;
}

void deploy_cloud_plan_free(gc_cloud_plan *plan)
{
    for (size_t i = 0; i < plan->count; i++) {
        free(plan->steps[i].name);
        free(plan->steps[i].module_id);
        free(plan->steps[i].present_output);
        deploy_argv_free(plan->steps[i].check);
        deploy_argv_free(plan->steps[i].create);
        free(plan->steps[i].input);
        free(plan->steps[i].expect);
        deploy_argv_free(plan->steps[i].update);
    }
    free(plan->steps);
    gc_strings_free(&plan->notes);
    memset(plan, 0, sizeof(*plan));
}

bool deploy_cloud_handles(const char *source)
{
    static const char *const handled[] = {
        SOURCE_VPC,      SOURCE_MULTIVPC,        SOURCE_RDMA_VPC,  SOURCE_SERVICE_ACCOUNT,
        SOURCE_CLUSTER,  SOURCE_RESOURCE_POLICY, SOURCE_NODE_POOL, SOURCE_BUCKET,
        SOURCE_FILESTORE};
    for (size_t i = 0; i < sizeof(handled) / sizeof(*handled); i++)
        if (deploy_source_is(source, handled[i]))
            return true;
    return false;
}

const char *gc_cloud_step_kind_name(gc_cloud_step_kind kind)
{
    static const char *const names[] = {
        "network",
        "subnetwork",
        "firewall rule",
        "router",
        "NAT",
        "service account",
        "role binding",
        "cluster",
        "workload policy",
        "node pool",
        "bootstrap pool removal",
        "cluster add-on",
        "service account binding",
        "bucket",
        "bucket settings",
        "Filestore instance",
    };
    _Static_assert(sizeof(names) / sizeof(*names) == GC_CLOUD_FILESTORE + 1,
                   "a name for every step kind");
    return names[kind];
}
