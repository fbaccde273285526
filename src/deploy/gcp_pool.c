/*
 * The node pools of gke-node-pool modules: one `gcloud container node-pools create` each, with
 * the module's settings (reservation affinity, flex-start, queued provisioning, placement,
 * taints, labels, additional networks), and the flags every pool the toolkit makes shares.
 */
#include "deploy/gcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void pool_step_check(planner *p, gc_cloud_step *s, const char *pool)
{
    s->check = deploy_gcp_describe(p, &(gcp_ref){.kind = GC_CLOUD_NODE_POOL, .name = pool});
}

/* The service account a module's nodes run as: service_account_email, or the account of a used
 * service-account module; NULL for the project's default compute account. */
char *deploy_gcp_node_service_account(const planner *p, const gc_bp_module *m)
{
    const char *email = deploy_gcp_string(p, m, "service_account_email", NULL);
    if (email)
        return gc_xstrdup(email);
    const gc_bp_module *sa = deploy_gcp_used(p->bp, m, SOURCE_SERVICE_ACCOUNT);
    return sa ? deploy_gcp_account_email(p, sa) : NULL;
}

/* The flags every node pool the toolkit creates shares: Workload Identity's metadata server,
 * shielded boot, gVNIC on Container-Optimized OS. */
void deploy_gcp_node_basics(deploy_argv *b, const char *image_type, bool secure_boot,
                            const char *service_account, const char *scopes)
{
    deploy_argv_flag(b, "image-type", image_type);
    if (!strcmp(image_type, "COS_CONTAINERD"))
        deploy_argv_words(b, "--enable-gvnic", NULL);
    deploy_argv_words(b, secure_boot ? "--shielded-secure-boot" : "--no-shielded-secure-boot",
                      "--shielded-integrity-monitoring", "--workload-metadata=GKE_METADATA",
                      "--metadata=disable-legacy-endpoints=true", NULL);
    deploy_argv_flag(b, "service-account", service_account);
    deploy_argv_flag(b, "scopes", scopes);
}

char *deploy_gcp_taints(const json_t *taints)
{
    gc_buf b;
    gc_buf_init(&b);
    size_t i;
    const json_t *t;
    json_array_foreach(taints, i, t)
    {
        const char *key = json_string_value(json_object_get(t, "key"));
        const json_t *value = json_object_get(t, "value");
        const char *effect = json_string_value(json_object_get(t, "effect"));
        if (!key || !effect)
            continue;
        /* NO_SCHEDULE → NoSchedule, as gcloud spells effects */
        char spelled[32];
        size_t n = 0;
        bool upper = true;
        for (const char *c = effect; *c && n < sizeof(spelled) - 1; c++) {
            if (*c == '_') {
                upper = true;
                continue;
            }
            spelled[n++] = upper ? *c : (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
            upper = false;
        }
        spelled[n] = '\0';
        char text[64];
        if (json_is_string(value))
            snprintf(text, sizeof(text), "%s", json_string_value(value));
        else if (json_is_boolean(value))
            snprintf(text, sizeof(text), "%s", json_is_true(value) ? "true" : "false");
        else if (json_is_integer(value))
            snprintf(text, sizeof(text), "%lld", (long long)json_integer_value(value));
        else
            text[0] = '\0';
        gc_buf_printf(&b, "%s%s=%s:%s", b.len ? "," : "", key, text, spelled);
    }
    return gc_buf_detach(&b);
}

/* Node pools of gke-node-pool modules */

/* The placement of a pool: its placement_policy, or the policy of a used resource-policy
 * module (type COMPACT, its name, its accelerator topology). */
static void placement_of(const planner *p, const gc_bp_module *m, const char **type,
                         const char **name)
{
    const json_t *policy = deploy_gcp_setting(p, m, "placement_policy");
    *type = json_string_value(json_object_get(policy, "type"));
    *name = json_string_value(json_object_get(policy, "name"));
    const gc_bp_module *rp = deploy_gcp_used(p->bp, m, SOURCE_RESOURCE_POLICY);
    if (!*type && rp &&
        json_string_value(json_object_get(deploy_gcp_setting(p, rp, "workload_policy"), "type"))) {
        *type = "COMPACT";
        *name = deploy_gcp_string(p, rp, "name", NULL);
    }
}

void deploy_gcp_upgrade_settings(const planner *p, const gc_bp_module *m, deploy_argv *b)
{
    const json_t *u = deploy_gcp_setting(p, m, "upgrade_settings");
    const json_t *surge = json_object_get(u, "max_surge");
    const json_t *unavailable = json_object_get(u, "max_unavailable");
    deploy_argv_count(b, "max-surge-upgrade",
                      json_is_integer(surge) ? (long)json_integer_value(surge) : 0);
    deploy_argv_count(b, "max-unavailable-upgrade",
                      json_is_integer(unavailable) ? (long)json_integer_value(unavailable) : 1);
}

char **deploy_gcp_head_pool_argv(const planner *p, const gc_bp_module *m)
{
    deploy_argv d = deploy_gcp_command(
        p, &(gcp_ref){.kind = GC_CLOUD_NODE_POOL, .name = p->head_pool}, "create");
    char *zones = deploy_gcp_join(deploy_gcp_setting(p, m, "system_node_pool_zones"), NULL);
    deploy_argv_flag(&d, "node-locations", *zones ? zones : NULL);
    free(zones);
    deploy_argv_flag(&d, "machine-type", GC_PATHWAYS_HEAD_MACHINE);
    deploy_argv_count(&d, "num-nodes", 0);
    deploy_argv_words(&d, "--enable-autoscaling", NULL);
    deploy_argv_count(&d, "total-min-nodes", 0);
    deploy_argv_count(&d, "total-max-nodes", GC_PATHWAYS_HEAD_MAX);
    deploy_argv_words(&d, "--enable-autorepair", "--enable-autoupgrade", NULL);
    char *sa = deploy_gcp_node_service_account(p, m);
    deploy_gcp_node_basics(&d,
                           deploy_gcp_string(p, m, "system_node_pool_image_type", "COS_CONTAINERD"),
                           deploy_gcp_bool(p, m, "system_node_pool_enable_secure_boot", true), sa,
                           SCOPE_CLOUD_PLATFORM);
    free(sa);
    char *labels = deploy_gcp_labels(p, m, "gke-cluster", "scheduler");
    deploy_argv_flag(&d, "labels", labels);
    free(labels);
    return d.items;
}

/* A YAML double-quoted scalar: backslash, quote and line breaks escaped. */
static void yaml_quoted(gc_buf *b, const char *text)
{
    gc_buf_putc(b, '"');
    for (const char *c = text; *c; c++) {
        if (*c == '"' || *c == '\\' || *c == '\n')
            gc_buf_putc(b, '\\');
        gc_buf_putc(b, *c == '\n' ? 'n' : *c);
    }
    gc_buf_putc(b, '"');
}

/* linux_node_config.sysctls (the module's default: the TCP buffers), as the file gcloud reads
 * with --system-config-from-file; NULL when there are none. */
static char *system_config(const planner *p, const gc_bp_module *m)
{
    const json_t *config = deploy_gcp_setting(p, m, "linux_node_config");
    const json_t *sysctls = json_object_get(config, "sysctls");
    json_t *own = NULL;
    if (!json_is_object(sysctls))
        sysctls = own = json_pack("{s:s, s:s}", "net.ipv4.tcp_rmem", "4096 87380 16777216",
                                  "net.ipv4.tcp_wmem", "4096 16384 16777216");
    gc_buf b;
    gc_buf_init(&b);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)sysctls, key, value)
    {
        if (!json_is_string(value))
            continue;
        gc_buf_puts(&b, b.len ? "    " : "linuxConfig:\n  sysctl:\n    ");
        yaml_quoted(&b, key);
        gc_buf_puts(&b, ": ");
        yaml_quoted(&b, json_string_value(value));
        gc_buf_putc(&b, '\n');
    }
    json_decref(own);
    if (!b.len) {
        gc_buf_free(&b);
        return NULL;
    }
    return gc_buf_detach(&b);
}

char **deploy_pool_create_argv(const gc_blueprint *bp, const gc_pool_spec *pool,
                               const gc_cloud_target *t)
{
    planner pl = {0};
    deploy_gcp_planner_init(&pl, bp, t);
    planner *p = &pl;
    const gc_bp_module *m = deploy_blueprint_module(bp, pool->module_id);
    if (!m && pl.cluster_module && !strcmp(pool->name, pl.head_pool))
        return deploy_gcp_head_pool_argv(p, pl.cluster_module);
    deploy_argv b =
        deploy_gcp_command(p, &(gcp_ref){.kind = GC_CLOUD_NODE_POOL, .name = pool->name}, "create");
    deploy_argv_flag(&b, "node-locations", pool->zones ? pool->zones : bp->zone);
    deploy_argv_flag(&b, "machine-type", pool->machine_type);
    const json_t *disk = deploy_gcp_setting(p, m, "disk_size_gb");
    deploy_argv_count(&b, "disk-size",
                      json_is_integer(disk) ? (long)json_integer_value(disk) : 100);
    deploy_argv_flag(&b, "disk-type", deploy_gcp_string(p, m, "disk_type", NULL));

    const char *placement_type, *placement_name;
    placement_of(p, m, &placement_type, &placement_name);
    if (pool->topology) {
        deploy_argv_flag(&b, "tpu-topology", pool->topology);
        /* a multi-host slice's hosts must sit together */
        if (!placement_type && !placement_name && pool->static_nodes > 1)
            placement_type = "COMPACT";
    }
    if (placement_name)
        deploy_argv_flag(&b, "placement-policy", placement_name);
    else
        deploy_argv_flag(&b, "placement-type", placement_type);

    bool queued = deploy_gcp_bool(p, m, "enable_queued_provisioning", false);
    bool flex = deploy_gcp_bool(p, m, "enable_flex_start", false);
    if (pool->static_nodes >= 0 && !queued && !flex) {
        deploy_argv_count(&b, "num-nodes", pool->static_nodes);
    } else {
        long min = pool->static_nodes >= 0 ? 0 : pool->min_nodes;
        long max = pool->static_nodes >= 0 ? pool->static_nodes : pool->max_nodes;
        deploy_argv_count(&b, "num-nodes", min && !pool->zones ? min : 0);
        deploy_argv_words(&b, "--enable-autoscaling", NULL);
        deploy_argv_count(&b, "total-min-nodes", min);
        deploy_argv_count(&b, "total-max-nodes", max);
        deploy_argv_flag(&b, "location-policy", "ANY");
    }
    /* Dynamic Workload Scheduler: queued provisioning takes no reservation; flex-start nodes
     * come when capacity does. */
    if (queued)
        deploy_argv_words(&b, "--enable-queued-provisioning", NULL);
    if (flex)
        deploy_argv_words(&b, "--flex-start", NULL);
    const json_t *affinity = deploy_gcp_setting(p, m, "reservation_affinity");
    const char *consume = json_string_value(json_object_get(affinity, "consume_reservation_type"));
    if (queued || (consume && !strcmp(consume, "NO_RESERVATION"))) {
        deploy_argv_flag(&b, "reservation-affinity", "none");
    } else if (consume && !strcmp(consume, "ANY_RESERVATION")) {
        deploy_argv_flag(&b, "reservation-affinity", "any");
    } else if (consume && !strcmp(consume, "SPECIFIC_RESERVATION")) {
        const json_t *r = json_array_get(json_object_get(affinity, "specific_reservations"), 0);
        const char *name = json_string_value(json_object_get(r, "name"));
        const char *project = json_string_value(json_object_get(r, "project"));
        deploy_argv_flag(&b, "reservation-affinity", "specific");
        if (project && name && strcmp(project, p->project ? p->project : "")) {
            char *shared = gc_xasprintf("projects/%s/reservations/%s", project, name);
            deploy_argv_flag(&b, "reservation", shared);
            free(shared);
        } else {
            deploy_argv_flag(&b, "reservation", name);
        }
    }
    if (pool->spot)
        deploy_argv_words(&b, "--spot", NULL);
    deploy_argv_words(&b,
                      deploy_gcp_bool(p, m, "auto_repair", true) ? "--enable-autorepair"
                                                                 : "--no-enable-autorepair",
                      deploy_gcp_bool(p, m, "auto_upgrade", false) ? "--enable-autoupgrade"
                                                                   : "--no-enable-autoupgrade",
                      NULL);
    char *sa = deploy_gcp_node_service_account(p, m);
    char *scopes = deploy_gcp_join(deploy_gcp_setting(p, m, "service_account_scopes"), NULL);
    deploy_gcp_node_basics(&b, deploy_gcp_string(p, m, "image_type", "COS_CONTAINERD"),
                           deploy_gcp_bool(p, m, "enable_secure_boot", true), sa,
                           *scopes ? scopes : SCOPE_CLOUD_PLATFORM);
    free(scopes);
    free(sa);
    char *taints = deploy_gcp_taints(deploy_gcp_setting(p, m, "taints"));
    deploy_argv_flag(&b, "node-taints", *taints ? taints : NULL);
    free(taints);
    /* Kubernetes labels: the user's, and gke-queued for queued provisioning (GKE adds it to the
     * nodes, and the module writes it so Terraform sees no drift). */
    json_t *k8s = json_object();
    const json_t *user = deploy_gcp_setting(p, m, "kubernetes_labels");
    if (json_is_object(user))
        json_object_update(k8s, (json_t *)user);
    if (queued)
        json_object_set_new(k8s, "cloud.google.com/gke-queued", json_string("true"));
    char *node_labels = deploy_gcp_key_values(k8s);
    deploy_argv_flag(&b, "node-labels", *node_labels ? node_labels : NULL);
    free(node_labels);
    json_decref(k8s);
    char *labels = deploy_gcp_labels(p, m, "gke-node-pool", "compute");
    deploy_argv_flag(&b, "labels", labels);
    free(labels);
    const char *unknown_networks;
    json_t *extra_networks = m ? deploy_gcp_additional_networks(p, m, &unknown_networks) : NULL;
    size_t ni;
    const json_t *extra;
    json_array_foreach(extra_networks, ni, extra)
    {
        char *attachment = gc_xasprintf("network=%s,subnetwork=%s",
                                        json_string_value(json_object_get(extra, "network")),
                                        json_string_value(json_object_get(extra, "subnetwork")));
        deploy_argv_flag(&b, "additional-node-network", attachment);
        free(attachment);
    }
    json_decref(extra_networks);
    deploy_gcp_upgrade_settings(p, m, &b);
    char *sysctls = m ? system_config(p, m) : NULL;
    if (sysctls)
        deploy_argv_flag(&b, "system-config-from-file", "/dev/stdin");
    free(sysctls);
    const json_t *run = deploy_gcp_setting(p, m, "max_run_duration");
    if (json_is_integer(run)) {
        char *d = gc_xasprintf("%llds", (long long)json_integer_value(run));
        deploy_argv_flag(&b, "max-run-duration", d);
        free(d);
    }
    return b.items;
}

char *deploy_pool_create_command(const gc_blueprint *bp, const gc_pool_spec *pool,
                                 const gc_cloud_target *t)
{
    planner pl = {0};
    deploy_gcp_planner_init(&pl, bp, t);
    const gc_bp_module *m = deploy_blueprint_module(bp, pool->module_id);
    gc_cloud_step s = {.create = deploy_pool_create_argv(bp, pool, t),
                       .input = m ? system_config(&pl, m) : NULL};
    char *line = deploy_cloud_step_line(&s);
    deploy_argv_free(s.create);
    free(s.input);
    return line;
}

/* A pool that exists is compared on what a rerun can see and deploy decides: an autoscaled
 * pool's largest size (updated in place), a fixed pool's machine type (reported: GKE cannot
 * change it; the pool has to be made again). */
static void pool_settings(const planner *p, gc_cloud_step *s, const gc_pool_spec *pool,
                          const gc_bp_module *m)
{
    gcp_ref ref = {.kind = GC_CLOUD_NODE_POOL, .name = pool->name};
    deploy_argv c = deploy_gcp_command(p, &ref, "describe");
    /* autoscaled as deploy_pool_create_argv makes it: flex-start and queued pools of a fixed size
     * scale from 0 up to it */
    bool fixed = pool->static_nodes >= 0;
    if (!fixed || deploy_gcp_bool(p, m, "enable_queued_provisioning", false) ||
        deploy_gcp_bool(p, m, "enable_flex_start", false)) {
        long min = fixed ? 0 : pool->min_nodes, max = fixed ? pool->static_nodes : pool->max_nodes;
        deploy_argv_flag(&c, "format", "value(autoscaling.totalMaxNodeCount)");
        s->expect = gc_xasprintf("%ld", max);
        deploy_argv u = deploy_gcp_command(p, &ref, "update");
        deploy_argv_words(&u, "--enable-autoscaling", NULL);
        deploy_argv_count(&u, "total-min-nodes", min);
        deploy_argv_count(&u, "total-max-nodes", max);
        s->update = u.items;
    } else {
        deploy_argv_flag(&c, "format", "value(config.machineType)");
        s->expect = gc_xstrdup(pool->machine_type);
    }
    deploy_argv_free(s->check);
    s->check = c.items;
}

int deploy_gcp_plan_pools(planner *p)
{
    const gc_blueprint *bp = p->bp;
    for (size_t i = 0; i < bp->pool_count; i++) {
        const gc_pool_spec *pool = &bp->pools[i];
        if (bp->pathways && !strcmp(pool->name, p->head_pool))
            continue; /* the cluster module's cpu-np */
        const gc_bp_module *m = deploy_blueprint_module(bp, pool->module_id);
        /* A pool without zones gets the cluster's node locations, as gke-node-pool passes
         * node_locations = null; an empty $(vars.zone) in zones is refused where it is read. */
        const json_t *affinity = deploy_gcp_setting(p, m, "reservation_affinity");
        const char *consume =
            json_string_value(json_object_get(affinity, "consume_reservation_type"));
        const json_t *first = json_array_get(json_object_get(affinity, "specific_reservations"), 0);
        if (consume && !strcmp(consume, "SPECIFIC_RESERVATION") &&
            !json_is_string(json_object_get(first, "name"))) {
            const json_t *raw = json_object_get(
                json_array_get(json_object_get(json_object_get(m->raw, "reservation_affinity"),
                                               "specific_reservations"),
                               0),
                "name");
            return deploy_gcp_empty(p, raw, m, "reservation_affinity.specific_reservations[0].name",
                                    "RESERVATION-NAME");
        }
        gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_NODE_POOL, pool->name, m);
        pool_step_check(p, s, pool->name);
        s->create = deploy_pool_create_argv(bp, pool,
                                            &(gc_cloud_target){.project = p->project,
                                                               .cluster = p->cluster,
                                                               .location = p->location});
        s->input = m ? system_config(p, m) : NULL;
        pool_settings(p, s, pool, m);
        const char *unknown_networks = NULL;
        json_decref(m ? deploy_gcp_additional_networks(p, m, &unknown_networks) : NULL);
        if (unknown_networks)
            deploy_gcp_note(p, m,
                            "additional_networks of pool %s waits for %s, which is known only once "
                            "Terraform runs; attach it with `gcloud container node-pools update %s "
                            "--additional-node-network=network=NET,subnetwork=SUBNET`",
                            pool->name, unknown_networks, pool->name);
    }
    return 0;
}
