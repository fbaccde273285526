/*
 * The gke-cluster module's resources: the cluster itself, the add-ons gcloud enables only by an
 * update, its system pool and (with Pathways) the head pool "cpu-np", the removal of the
 * bootstrap pool, and the resource-policy module's workload policy.
 */
#include "deploy/gcp.h"

#include "gcluster/sys.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void pool_step_check(planner *p, gc_cloud_step *s, const char *pool)
{
    s->check = deploy_gcp_describe(p, &(gcp_ref){.kind = GC_CLOUD_NODE_POOL, .name = pool});
}

static const char *release_channel(const char *channel)
{
    static const char *const names[][2] = {
        {"RAPID", "rapid"}, {"REGULAR", "regular"}, {"STABLE", "stable"}, {"EXTENDED", "extended"}};
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
        if (!strcmp(channel, names[i][0]))
            return names[i][1];
    return "None";
}

/* monitoring_components as gcloud spells them (SYSTEM_COMPONENTS is SYSTEM, APISERVER is
 * API_SERVER), DCGM added with enable_dcgm_monitoring; the module's default list ends with
 * JOBSET. An empty list turns monitoring off (NONE). */
static char *monitoring_components(const planner *p, const gc_bp_module *m)
{
    static const char *const defaults[] = {
        "SYSTEM_COMPONENTS", "POD", "DAEMONSET", "DEPLOYMENT", "STATEFULSET",
        "STORAGE",           "HPA", "CADVISOR",  "KUBELET",    "JOBSET"};
    static const char *const spelled[][2] = {
        {"SYSTEM_COMPONENTS", "SYSTEM"}, {"WORKLOADS", "WORKLOAD"}, {"APISERVER", "API_SERVER"}};
    json_t *list = json_array();
    const json_t *given = deploy_gcp_setting(p, m, "monitoring_components");
    if (json_is_array(given))
        json_array_extend(list, (json_t *)given);
    else
        for (size_t i = 0; i < sizeof(defaults) / sizeof(*defaults); i++)
            json_array_append_new(list, json_string(defaults[i]));
    if (deploy_gcp_bool(p, m, "enable_dcgm_monitoring", false))
        json_array_append_new(list, json_string("DCGM"));
    gc_buf b;
    gc_buf_init(&b);
    size_t i;
    const json_t *c;
    json_array_foreach(list, i, c)
    {
        const char *name = json_string_value(c);
        if (!name)
            continue;
        for (size_t k = 0; k < sizeof(spelled) / sizeof(*spelled); k++)
            if (!strcmp(name, spelled[k][0]))
                name = spelled[k][1];
        if (!strstr(b.data ? b.data : "", name) || strcmp(name, "DCGM"))
            gc_buf_printf(&b, "%s%s", b.len ? "," : "", name);
    }
    json_decref(list);
    if (!b.len) {
        gc_buf_free(&b);
        return gc_xstrdup("NONE");
    }
    return gc_buf_detach(&b);
}

/* The cluster's maintenance exclusions: gcloud adds one per `clusters update` and wants an end
 * time; an exclusion until the version's end of support (exclusion_end_time_behavior) gets
 * MAX_EXCLUSION_DAYS from now, the longest GKE takes for a minor version in support, and a
 * note says how to renew it. Present when describe reads its scope back. */
#define MAX_EXCLUSION_DAYS 180

static void maintenance_exclusions(planner *p, const gc_bp_module *m)
{
    size_t i;
    const json_t *x;
    json_array_foreach(deploy_gcp_setting(p, m, "maintenance_exclusions"), i, x)
    {
        const char *name = json_string_value(json_object_get(x, "name"));
        const char *scope = json_string_value(json_object_get(x, "exclusion_scope"));
        if (!name || !scope)
            continue;
        char now[32], later[32];
        time_t t = gc_clock_wall();
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
        t += (time_t)MAX_EXCLUSION_DAYS * 24 * 3600;
        gmtime_r(&t, &tm);
        strftime(later, sizeof(later), "%Y-%m-%dT%H:%M:%SZ", &tm);
        const char *start = json_string_value(json_object_get(x, "start_time"));
        const char *end = json_string_value(json_object_get(x, "end_time"));
        char *step_name = gc_xasprintf("maintenance exclusion %s", name);
        gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_CLUSTER_ADDON, step_name, m);
        free(step_name);
        gcp_ref ref = {.kind = GC_CLOUD_CLUSTER_ADDON, .name = p->cluster};
        deploy_argv d = deploy_gcp_command(p, &ref, "describe");
        char *format = gc_xasprintf(
            "value(maintenancePolicy.window.maintenanceExclusions.%s.maintenanceExclusionOptions."
            "scope)",
            name);
        deploy_argv_flag(&d, "format", format);
        free(format);
        s->check = d.items;
        s->present_output = gc_xstrdup(scope);
        deploy_argv u = deploy_gcp_command(p, &ref, "update");
        deploy_argv_flag(&u, "add-maintenance-exclusion-name", name);
        char *lower = gc_xstrdup(scope);
        for (char *c = lower; *c; c++)
            *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
        deploy_argv_flag(&u, "add-maintenance-exclusion-scope", lower);
        free(lower);
        deploy_argv_flag(&u, "add-maintenance-exclusion-start", start ? start : now);
        deploy_argv_flag(&u, "add-maintenance-exclusion-end", end ? end : later);
        s->create = u.items;
        if (!end)
            deploy_gcp_note(p, m,
                            "maintenance exclusion %s runs until the version's end of support in "
                            "the module; gcloud takes an end time, so it ends %s (%d days): "
                            "renew it with `gcloud container clusters update %s --project=%s "
                            "--location=%s --remove-maintenance-exclusion=%s` and deploy again",
                            name, later, MAX_EXCLUSION_DAYS, p->cluster, p->project, p->location,
                            name);
    }
}

bool deploy_gcp_workload_identity(const planner *p, const gc_bp_module *m, const char **ksa,
                                  const char **ns, char **gsa)
{
    if (!deploy_gcp_bool(p, m, "configure_workload_identity_sa", false))
        return false;
    *ksa = deploy_gcp_string(p, m, "k8s_service_account_name", "workload-identity-k8s-sa");
    *ns = deploy_gcp_string(p, m, "namespace", "default");
    *gsa = deploy_gcp_node_service_account(p, m);
    if (!*gsa) /* the project's default compute account: its number is not known here */
        *gsa = gc_xasprintf("PROJECT_NUMBER-compute@developer.gserviceaccount.com");
    return true;
}

/* Workload Identity: the Kubernetes service account acts as the cluster's Google one through
 * roles/iam.workloadIdentityUser on it (the workload-identity module with an existing account);
 * the Kubernetes half is an object (deploy_cluster_objects). */
static void workload_identity_binding(planner *p, const gc_bp_module *m)
{
    const char *ksa, *ns;
    char *gsa;
    if (!deploy_gcp_workload_identity(p, m, &ksa, &ns, &gsa))
        return;
    if (!strchr(gsa, '@') || !strncmp(gsa, "PROJECT_NUMBER", 14)) {
        deploy_gcp_note(p, m,
                        "configure_workload_identity_sa with the default compute account: bind "
                        "it with `gcloud iam service-accounts add-iam-policy-binding "
                        "PROJECT_NUMBER-compute@developer.gserviceaccount.com --project=%s "
                        "--role=roles/iam.workloadIdentityUser "
                        "--member=serviceAccount:%s.svc.id.goog[%s/%s]`",
                        p->project, p->project, ns, ksa);
        free(gsa);
        return;
    }
    char *member = gc_xasprintf("serviceAccount:%s.svc.id.goog[%s/%s]", p->project, ns, ksa);
    char *name = gc_xasprintf("%s roles/iam.workloadIdentityUser %s/%s", gsa, ns, ksa);
    gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_ACCOUNT_BINDING, name, m);
    gcp_ref on = {.kind = GC_CLOUD_ACCOUNT_BINDING, .name = gsa};
    deploy_argv b = deploy_gcp_command(p, &on, "add-iam-policy-binding");
    deploy_argv_flag(&b, "role", "roles/iam.workloadIdentityUser");
    deploy_argv_flag(&b, "member", member);
    deploy_argv_flag(&b, "format", "none");
    s->create = b.items;
    s->check = deploy_gcp_binding_check(p, &on, member, "roles/iam.workloadIdentityUser");
    s->present_output = gc_xstrdup("roles/iam.workloadIdentityUser");
    free(name);
    free(member);
    free(gsa);
}

int deploy_gcp_plan_cluster(planner *p, const gc_bp_module *m)
{
    size_t ni;
    const json_t *network;
    json_array_foreach(deploy_gcp_setting(p, m, "master_authorized_networks"), ni, network)
    {
        if (!json_is_string(json_object_get(network, "cidr_block")))
            return deploy_gcp_empty(
                p,
                json_object_get(
                    json_array_get(json_object_get(m->raw, "master_authorized_networks"), ni),
                    "cidr_block"),
                m, "master_authorized_networks[].cidr_block", "YOUR-IP/32");
    }
    gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_CLUSTER, p->cluster, m);
    gcp_ref cluster = {.kind = GC_CLOUD_CLUSTER, .name = p->cluster};
    s->check = deploy_gcp_describe(p, &cluster);

    deploy_argv b = deploy_gcp_command(p, &cluster, "create");
    const gc_bp_module *vpc = deploy_gcp_used(p->bp, m, SOURCE_VPC);
    char *net = vpc ? deploy_gcp_network_name(p, vpc) : NULL;
    char *subnet = vpc ? deploy_gcp_subnetwork_name(p, vpc) : NULL;
    deploy_argv_flag(&b, "network", deploy_gcp_string(p, m, "network_id", net));
    deploy_argv_flag(&b, "subnetwork", deploy_gcp_string(p, m, "subnetwork_self_link", subnet));
    deploy_argv_words(&b, "--enable-ip-alias", NULL);
    deploy_argv_flag(&b, "cluster-secondary-range-name",
                     deploy_gcp_string(p, m, "pods_ip_range_name", "pods"));
    deploy_argv_flag(&b, "services-secondary-range-name",
                     deploy_gcp_string(p, m, "services_ip_range_name", "services"));
    deploy_argv_flag(&b, "release-channel",
                     release_channel(deploy_gcp_string(p, m, "release_channel", "UNSPECIFIED")));
    /* The module picks the newest version with version_prefix; GKE takes "1.35" to mean the
     * same. */
    const char *min_version = deploy_gcp_string(p, m, "min_master_version", NULL);
    char *version = min_version ? gc_xstrdup(min_version)
                                : gc_xstrdup(deploy_gcp_string(p, m, "version_prefix", "1.31."));
    size_t vlen = strlen(version);
    if (vlen && version[vlen - 1] == '.')
        version[vlen - 1] = '\0';
    deploy_argv_flag(&b, "cluster-version", version);
    free(version);
    char *pool = gc_xasprintf("%s.svc.id.goog", p->project);
    deploy_argv_flag(&b, "workload-pool", pool);
    free(pool);
    if (deploy_gcp_bool(p, m, "enable_shielded_nodes", true))
        deploy_argv_words(&b, "--enable-shielded-nodes", NULL);
    if (deploy_gcp_bool(p, m, "enable_private_nodes", true)) {
        deploy_argv_words(&b, "--enable-private-nodes", NULL);
        deploy_argv_flag(&b, "master-ipv4-cidr",
                         deploy_gcp_string(p, m, "master_ipv4_cidr_block", "172.16.0.32/28"));
    }
    if (deploy_gcp_bool(p, m, "enable_private_endpoint", true))
        deploy_argv_words(&b, "--enable-private-endpoint", NULL);
    /* The module always writes master_authorized_networks_config, which turns the feature on. */
    deploy_argv_words(&b, "--enable-master-authorized-networks", NULL);
    char *cidrs =
        deploy_gcp_join(deploy_gcp_setting(p, m, "master_authorized_networks"), "cidr_block");
    if (*cidrs)
        deploy_argv_flag(&b, "master-authorized-networks", cidrs);
    else if (json_array_size(deploy_gcp_setting(p, m, "master_authorized_networks")) ||
             deploy_gcp_unknown(m, "master_authorized_networks"))
        deploy_gcp_note(p, m,
                        "master_authorized_networks has no value (set authorized_cidr with --vars "
                        "authorized_cidr=YOUR-IP/32)");
    free(cidrs);
    const char *unknown_networks;
    json_t *extra_networks = deploy_gcp_additional_networks(p, m, &unknown_networks);
    bool multi_network = json_array_size(extra_networks) || unknown_networks;
    json_decref(extra_networks);
    const json_t *dataplane = deploy_gcp_setting(p, m, "enable_dataplane_v2");
    if (json_is_true(dataplane) || (!dataplane && multi_network))
        deploy_argv_words(&b, "--enable-dataplane-v2", NULL);
    if (multi_network)
        deploy_argv_words(&b, "--enable-multi-networking", NULL);
    /* --addons enables these and disables the rest; GKE's defaults stay on, as under Terraform. */
    gc_buf addons;
    gc_buf_init(&addons);
    gc_buf_puts(&addons, "HttpLoadBalancing,HorizontalPodAutoscaling");
    static const char *const addon_settings[][3] = {
        {"enable_persistent_disk_csi", "GcePersistentDiskCsiDriver", "1"},
        {"enable_filestore_csi", "GcpFilestoreCsiDriver", "0"},
        {"enable_gcsfuse_csi", "GcsFuseCsiDriver", "0"},
        {"enable_parallelstore_csi", "ParallelstoreCsiDriver", "0"},
        {"enable_node_local_dns_cache", "NodeLocalDNS", "0"},
        {"enable_ray_operator", "RayOperator", "0"},
    };
    for (size_t i = 0; i < sizeof(addon_settings) / sizeof(*addon_settings); i++)
        if (deploy_gcp_bool(p, m, addon_settings[i][0], addon_settings[i][2][0] == '1'))
            gc_buf_printf(&addons, ",%s", addon_settings[i][1]);
    deploy_argv_flag(&b, "addons", addons.data);
    gc_buf_free(&addons);
    char *labels = deploy_gcp_labels(p, m, "gke-cluster", "scheduler");
    deploy_argv_flag(&b, "labels", labels);
    free(labels);
    deploy_argv_flag(&b, "maintenance-window",
                     deploy_gcp_string(p, m, "maintenance_start_time", "09:00"));
    deploy_argv_flag(&b, "logging", "SYSTEM,WORKLOAD");
    char *monitoring = monitoring_components(p, m);
    deploy_argv_flag(&b, "monitoring", monitoring);
    free(monitoring);
    /* The module always turns managed collection on, with auto-monitoring's scope. */
    deploy_argv_words(&b, "--enable-managed-prometheus", NULL);
    deploy_argv_flag(&b, "auto-monitoring-scope",
                     deploy_gcp_string(p, m, "auto_monitoring_scope", "NONE"));
    const json_t *max_pods = deploy_gcp_setting(p, m, "default_max_pods_per_node");
    if (json_is_integer(max_pods))
        deploy_argv_count(&b, "default-max-pods-per-node", (long)json_integer_value(max_pods));
    /* The bootstrap pool, deleted once the system pool exists (remove_default_node_pool). */
    deploy_argv_count(&b, "num-nodes", 1);
    char *sa = deploy_gcp_node_service_account(p, m);
    deploy_argv_flag(&b, "service-account", sa);
    deploy_argv_words(&b, "--workload-metadata=GKE_METADATA", NULL);
    s->create = b.items;

    /* What gcloud cannot set at creation (Terraform sets it in the same resource). */
    /* Add-ons `clusters create --addons` does not take but `clusters update --update-addons`
     * does; Cluster Toolkit enables HighScaleCheckpointing the same way (a gcloud update after
     * the cluster exists). Each is present when describe says its config is enabled. */
    static const char *const update_addons[][3] = {
        {"enable_managed_lustre_csi", "LustreCsiDriver", "lustreCsiDriverConfig"},
        {"enable_multi_tier_checkpointing", "HighScaleCheckpointing",
         "highScaleCheckpointingConfig"},
    };
    for (size_t i = 0; i < sizeof(update_addons) / sizeof(*update_addons); i++) {
        if (!deploy_gcp_bool(p, m, update_addons[i][0], false))
            continue;
        s = deploy_gcp_step(p, GC_CLOUD_CLUSTER_ADDON, update_addons[i][1], m);
        gcp_ref addon_ref = {.kind = GC_CLOUD_CLUSTER_ADDON, .name = p->cluster};
        deploy_argv d = deploy_gcp_command(p, &addon_ref, "describe");
        char *format = gc_xasprintf("value(addonsConfig.%s.enabled)", update_addons[i][2]);
        deploy_argv_flag(&d, "format", format);
        free(format);
        s->check = d.items;
        s->present_output = gc_xstrdup("True");
        deploy_argv u = deploy_gcp_command(p, &addon_ref, "update");
        char *addon = gc_xasprintf("%s=ENABLED", update_addons[i][1]);
        deploy_argv_flag(&u, "update-addons", addon);
        free(addon);
        s->create = u.items;
    }
    static const char *const unsupported[][2] = {
        {"enable_slice_controller", "the slice controller add-on (TPU dynamic slicing)"},
        {"enable_ml_diagnostics", "managed ML diagnostics"},
    };
    for (size_t i = 0; i < sizeof(unsupported) / sizeof(*unsupported); i++)
        if (deploy_gcp_bool(p, m, unsupported[i][0], false))
            deploy_gcp_note(
                p, m,
                "%s is true: gcloud (528) has no flag for %s; enable it in the console or "
                "with a newer gcloud",
                unsupported[i][0], unsupported[i][1]);
    maintenance_exclusions(p, m);
    if (unknown_networks)
        deploy_gcp_note(
            p, m,
            "additional_networks waits for %s, which is known only once Terraform runs: "
            "its network objects are not applied",
            unknown_networks);
    workload_identity_binding(p, m);

    /* The system pool, exactly as the module makes it. */
    const char *system_name = deploy_gcp_string(p, m, "system_node_pool_name", "system");
    const char *image = deploy_gcp_string(p, m, "system_node_pool_image_type", "COS_CONTAINERD");
    bool secure_boot = deploy_gcp_bool(p, m, "system_node_pool_enable_secure_boot", true);
    char *pool_labels = deploy_gcp_labels(p, m, "gke-cluster", "scheduler");
    char *zones = deploy_gcp_join(deploy_gcp_setting(p, m, "system_node_pool_zones"), NULL);
    if (deploy_gcp_bool(p, m, "system_node_pool_enabled", true)) {
        s = deploy_gcp_step(p, GC_CLOUD_NODE_POOL, system_name, m);
        pool_step_check(p, s, system_name);
        deploy_argv d = deploy_gcp_command(
            p, &(gcp_ref){.kind = GC_CLOUD_NODE_POOL, .name = system_name}, "create");
        deploy_argv_flag(&d, "node-locations", *zones ? zones : NULL);
        deploy_argv_flag(&d, "machine-type",
                         deploy_gcp_string(p, m, "system_node_pool_machine_type", "e2-standard-4"));
        const json_t *size = deploy_gcp_setting(p, m, "system_node_pool_disk_size_gb");
        deploy_argv_count(&d, "disk-size",
                          json_is_integer(size) ? (long)json_integer_value(size) : 100);
        deploy_argv_flag(&d, "disk-type",
                         deploy_gcp_string(p, m, "system_node_pool_disk_type", NULL));
        const json_t *count = deploy_gcp_setting(p, m, "system_node_pool_node_count");
        long min = 2, max = 10;
        if (json_is_integer(json_object_get(count, "total_min_nodes")))
            min = (long)json_integer_value(json_object_get(count, "total_min_nodes"));
        if (json_is_integer(json_object_get(count, "total_max_nodes")))
            max = (long)json_integer_value(json_object_get(count, "total_max_nodes"));
        deploy_argv_count(&d, "num-nodes", *zones ? min : 1);
        deploy_argv_words(&d, "--enable-autoscaling", NULL);
        deploy_argv_count(&d, "total-min-nodes", min);
        deploy_argv_count(&d, "total-max-nodes", max);
        const json_t *taints = deploy_gcp_setting(p, m, "system_node_pool_taints");
        char *t = taints ? deploy_gcp_taints(taints)
                         : gc_xstrdup("components.gke.io/gke-managed-components=true:NoSchedule");
        deploy_argv_flag(&d, "node-taints", *t ? t : NULL);
        free(t);
        deploy_argv_words(&d, "--enable-autorepair", "--enable-autoupgrade", NULL);
        deploy_gcp_upgrade_settings(p, m, &d);
        char *scopes = deploy_gcp_join(deploy_gcp_setting(p, m, "service_account_scopes"), NULL);
        deploy_gcp_node_basics(&d, image, secure_boot, sa, *scopes ? scopes : SCOPE_CLOUD_PLATFORM);
        free(scopes);
        deploy_argv_flag(&d, "labels", pool_labels);
        s->create = d.items;
    }

    /* cpu-np: the Pathways head pool the module adds with enable_pathways_for_tpus. */
    if (p->bp->pathways) {
        s = deploy_gcp_step(p, GC_CLOUD_NODE_POOL, p->head_pool, m);
        pool_step_check(p, s, p->head_pool);
        s->create = deploy_gcp_head_pool_argv(p, m);
    }
    free(zones);
    free(pool_labels);

    s = deploy_gcp_step(p, GC_CLOUD_REMOVE_DEFAULT_POOL, "default-pool", m);
    pool_step_check(p, s, "default-pool");
    s->removes = true;
    deploy_argv d = deploy_gcp_command(
        p, &(gcp_ref){.kind = GC_CLOUD_REMOVE_DEFAULT_POOL, .name = "default-pool"}, "delete");
    deploy_argv_words(&d, "--quiet", NULL);
    s->create = d.items;

    free(sa);
    free(net);
    free(subnet);
    return 0;
}

/* The workload policy of a resource-policy module; the name is the module's, without the random
 * suffix Terraform adds, so that a rerun finds it. */
int deploy_gcp_plan_workload_policy(planner *p, const gc_bp_module *m)
{
    const json_t *policy = deploy_gcp_setting(p, m, "workload_policy");
    const char *type = json_string_value(json_object_get(policy, "type"));
    if (!type)
        return 0;
    const char *name = deploy_gcp_string(p, m, "name", NULL);
    if (!name)
        return deploy_gcp_missing(p, m, "name", "tpu7x-workload-policy");
    const char *topology = json_string_value(json_object_get(policy, "accelerator_topology"));
    if (json_object_get(policy, "accelerator_topology") && !topology)
        return deploy_gcp_missing(p, m, "tpu_topology", "2x2x1");
    const char *region = deploy_gcp_string(p, m, "region", p->region);
    if (!region)
        return deploy_gcp_missing(p, m, "region", "us-central1");
    gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_WORKLOAD_POLICY, name, m);
    gcp_ref ref = {.kind = GC_CLOUD_WORKLOAD_POLICY, .name = name, .region = region};
    s->check = deploy_gcp_describe(p, &ref);
    deploy_argv d = deploy_gcp_command(p, &ref, "create");
    deploy_argv_flag(&d, "type", type);
    deploy_argv_flag(&d, "accelerator-topology", topology);
    deploy_argv_flag(&d, "max-topology-distance",
                     json_string_value(json_object_get(policy, "max_topology_distance")));
    s->create = d.items;
    if (json_string_value(json_object_get(policy, "accelerator_topology_mode")))
        deploy_gcp_note(
            p, m, "workload_policy.accelerator_topology_mode %s is not planned (no gcloud flag)",
            json_string_value(json_object_get(policy, "accelerator_topology_mode")));
    return 0;
}
