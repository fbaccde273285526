/*
 * Networks: the outputs of the toolkit's network modules (vpc, multivpc, gpu-rdma-vpc) as their
 * Terraform computes them, the vpc module's resources as plan steps, and the GKENetworkParamSet
 * and Network objects the gke-cluster module applies for each additional network.
 */
#include "deploy/gcp.h"
#include "deploy/network_outputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IAP_RANGE "35.235.240.0/20" /* where Identity-Aware Proxy TCP forwarding comes from */

static json_t *bp_var(void *ctx, const char *name)
{
    const json_t *v = json_object_get(((const gc_blueprint *)ctx)->vars, name);
    return v ? json_incref((json_t *)v) : NULL;
}

json_t *deploy_gcp_additional_networks(const planner *p, const gc_bp_module *m,
                                       const char **unknown)
{
    *unknown = NULL;
    const json_t *own = json_object_get(m->settings, "additional_networks");
    if (own) {
        *unknown = deploy_blueprint_unknown(own);
        return !*unknown && json_array_size(own) ? json_deep_copy(own) : NULL;
    }
    json_t *all = NULL;
    for (size_t i = 0; i < m->use_count; i++) {
        const gc_bp_module *used = deploy_blueprint_module(p->bp, m->use[i]);
        json_t *out = deploy_network_output(used, "additional_networks", bp_var, (void *)p->bp);
        if (!out && deploy_gcp_source_is(used, SOURCE_MULTIVPC))
            *unknown = used->id;
        if (json_is_array(out)) {
            if (!all)
                all = json_array();
            json_array_extend(all, out);
        }
        json_decref(out);
    }
    return all;
}

/* The vpc module's resources */

static json_t *subnetworks_of(const planner *p, const gc_bp_module *m)
{
    const json_t *list = deploy_gcp_setting(p, m, "subnetworks");
    if (json_array_size(list))
        return json_deep_copy(list);
    const char *given = deploy_gcp_string(p, m, "subnetwork_name", NULL);
    char *name = given ? gc_xstrdup(given) : gc_xasprintf("%s-primary-subnet", p->deployment);
    /* cidrsubnet("10.0.0.0/9", 15, 0) */
    json_t *subnet = json_pack("{s:s, s:s, s:s?}", "subnet_name", name, "subnet_ip", "10.0.0.0/24",
                               "subnet_region", p->region);
    free(name);
    return json_pack("[o]", subnet);
}

char *deploy_gcp_network_name(const planner *p, const gc_bp_module *m)
{
    json_t *name = deploy_network_output(m, "network_name", bp_var, (void *)p->bp);
    char *out = gc_xstrdup(json_is_string(name) ? json_string_value(name) : p->deployment);
    json_decref(name);
    return out;
}

char *deploy_gcp_subnetwork_name(const planner *p, const gc_bp_module *m)
{
    json_t *name = deploy_network_output(m, "subnetwork_name", bp_var, (void *)p->bp);
    char *out = json_is_string(name) ? gc_xstrdup(json_string_value(name)) : NULL;
    json_decref(name);
    return out;
}

static void firewall(planner *p, const gc_bp_module *m, const char *network, const char *name,
                     const char *ranges, const char *allow)
{
    gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_FIREWALL, name, m);
    gcp_ref ref = {.kind = GC_CLOUD_FIREWALL, .name = name};
    s->check = deploy_gcp_describe(p, &ref);
    deploy_argv b = deploy_gcp_command(p, &ref, "create");
    deploy_argv_flag(&b, "network", network);
    deploy_argv_flag(&b, "direction", "INGRESS");
    deploy_argv_flag(&b, "source-ranges", ranges);
    deploy_argv_flag(&b, "allow", allow);
    s->create = b.items;
}

/* "tcp" + ["0-65535"] → "tcp:0-65535" pieces of --allow. */
static char *allow_list(const json_t *allow)
{
    gc_buf b;
    gc_buf_init(&b);
    size_t i, j;
    const json_t *rule, *port;
    json_array_foreach(allow, i, rule)
    {
        const char *protocol = json_string_value(json_object_get(rule, "protocol"));
        const json_t *ports = json_object_get(rule, "ports");
        if (!protocol)
            continue;
        if (!json_array_size(ports))
            gc_buf_printf(&b, "%s%s", b.len ? "," : "", protocol);
        json_array_foreach(ports, j, port)
        {
            if (json_is_string(port))
                gc_buf_printf(&b, "%s%s:%s", b.len ? "," : "", protocol, json_string_value(port));
        }
    }
    if (!b.data)
        return gc_xstrdup("");
    return gc_buf_detach(&b);
}

static char *secondary_ranges(const json_t *secondary, const char *subnet)
{
    gc_buf r;
    gc_buf_init(&r);
    size_t j, k;
    const json_t *entry, *range;
    json_array_foreach(secondary, j, entry)
    {
        if (strcmp(json_string_value(json_object_get(entry, "subnetwork_name")) ?: "", subnet))
            continue;
        json_array_foreach(json_object_get(entry, "ranges"), k, range)
        {
            gc_buf_printf(&r, "%s%s=%s", r.len ? "," : "",
                          json_string_value(json_object_get(range, "range_name")) ?: "",
                          json_string_value(json_object_get(range, "ip_cidr_range")) ?: "");
        }
    }
    if (!r.len) {
        gc_buf_free(&r);
        return NULL;
    }
    return gc_buf_detach(&r);
}

static void router_and_nat(planner *p, const gc_bp_module *m, const char *net, const char *region,
                           bool router, bool nat)
{
    char *router_name = gc_xasprintf("%s-router", net);
    if (router) {
        gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_ROUTER, router_name, m);
        gcp_ref ref = {.kind = GC_CLOUD_ROUTER, .name = router_name, .region = region};
        s->check = deploy_gcp_describe(p, &ref);
        deploy_argv d = deploy_gcp_command(p, &ref, "create");
        deploy_argv_flag(&d, "network", net);
        s->create = d.items;
    }
    if (nat) {
        char *nat_name = gc_xasprintf("cloud-nat-%s", region);
        gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_NAT, nat_name, m);
        gcp_ref ref = {
            .kind = GC_CLOUD_NAT, .name = nat_name, .region = region, .router = router_name};
        s->check = deploy_gcp_describe(p, &ref);
        deploy_argv d = deploy_gcp_command(p, &ref, "create");
        deploy_argv_words(&d, "--auto-allocate-nat-external-ips", "--nat-all-subnet-ip-ranges",
                          NULL);
        s->create = d.items;
        free(nat_name);
    }
    free(router_name);
}

int deploy_gcp_plan_network(planner *p, const gc_bp_module *m)
{
    char *net = deploy_gcp_network_name(p, m);
    gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_NETWORK, net, m);
    gcp_ref ref = {.kind = GC_CLOUD_NETWORK, .name = net};
    s->check = deploy_gcp_describe(p, &ref);
    deploy_argv b = deploy_gcp_command(p, &ref, "create");
    deploy_argv_flag(&b, "subnet-mode", "custom");
    deploy_argv_count(&b, "mtu", deploy_gcp_long(p, m, "mtu", 8896));
    deploy_argv_flag(&b, "bgp-routing-mode",
                     strcmp(deploy_gcp_string(p, m, "network_routing_mode", "GLOBAL"), "REGIONAL")
                         ? "global"
                         : "regional");
    s->create = b.items;

    json_t *subnets = subnetworks_of(p, m);
    const json_t *secondary = deploy_gcp_setting(p, m, "secondary_ranges_list");
    json_t *regions = json_array();
    size_t i;
    json_t *subnet;
    int rc = 0;
    json_array_foreach(subnets, i, subnet)
    {
        const char *name = json_string_value(json_object_get(subnet, "subnet_name"));
        const char *ip = json_string_value(json_object_get(subnet, "subnet_ip"));
        const char *region = json_string_value(json_object_get(subnet, "subnet_region"));
        if (!region)
            region = p->region;
        if (!name || !ip) {
            rc = gc_fail(p->err, GC_EXIT_USAGE,
                         "module %s: subnetworks[%zu] needs subnet_name and subnet_ip", m->id, i);
            break;
        }
        if (!region) {
            rc = deploy_gcp_missing(p, m, "region", "us-east5");
            break;
        }
        s = deploy_gcp_step(p, GC_CLOUD_SUBNETWORK, name, m);
        gcp_ref sref = {.kind = GC_CLOUD_SUBNETWORK, .name = name, .region = region};
        s->check = deploy_gcp_describe(p, &sref);
        deploy_argv d = deploy_gcp_command(p, &sref, "create");
        deploy_argv_flag(&d, "network", net);
        deploy_argv_flag(&d, "range", ip);
        char *ranges = secondary_ranges(secondary, name);
        deploy_argv_flag(&d, "secondary-range", ranges);
        free(ranges);
        if (deploy_gcp_bool(p, m, "subnetwork_private_access", true))
            deploy_argv_words(&d, "--enable-private-ip-google-access", NULL);
        s->create = d.items;
        bool seen = false;
        size_t k;
        const json_t *r;
        json_array_foreach(regions, k, r) seen = seen || !strcmp(json_string_value(r), region);
        if (!seen)
            json_array_append_new(regions, json_string(region));
    }

    if (!rc) {
        char *name = gc_xasprintf("%s-fw-allow-iap-ingress", net);
        if (deploy_gcp_bool(p, m, "enable_iap_ssh_ingress", true))
            firewall(p, m, net, name, IAP_RANGE, "tcp:22");
        free(name);
        name = gc_xasprintf("%s-fw-allow-internal-traffic", net);
        if (deploy_gcp_bool(p, m, "enable_internal_traffic", true))
            firewall(p, m, net, name,
                     deploy_gcp_string(p, m, "network_address_range", "10.0.0.0/9"),
                     "tcp:0-65535,udp:0-65535,icmp");
        free(name);
        const json_t *rule;
        json_array_foreach(deploy_gcp_setting(p, m, "firewall_rules"), i, rule)
        {
            const char *rule_name = json_string_value(json_object_get(rule, "name"));
            char *ranges = deploy_gcp_join(json_object_get(rule, "ranges"), NULL);
            char *allow = allow_list(json_object_get(rule, "allow"));
            if (rule_name && *ranges && *allow)
                firewall(p, m, net, rule_name, ranges, allow);
            else if (rule_name)
                deploy_gcp_note(
                    p, m,
                    "firewall rule %s is not planned (only ingress rules with ranges and "
                    "allow are)",
                    rule_name);
            free(ranges);
            free(allow);
        }
    }

    /* Private nodes reach the internet (image pulls) through Cloud NAT. */
    bool router = deploy_gcp_bool(p, m, "enable_cloud_router", true);
    bool nat = router && deploy_gcp_bool(p, m, "enable_cloud_nat", true);
    const json_t *region;
    json_array_foreach(rc ? NULL : regions, i, region)
        router_and_nat(p, m, net, json_string_value(region), router, nat);
    if (!rc && nat)
        deploy_gcp_note(
            p, m,
            "Cloud NAT uses automatically allocated addresses (the module reserves %d static "
            "ones per region)",
            2);
    json_decref(regions);
    json_decref(subnets);
    free(net);
    return rc;
}

/* The cluster module's network objects */

/* k8s_network_names: an object whose unset attributes take their optional() defaults (an empty
 * prefix, start 1 for gVNIC and 0 for RDMA); unset as a whole, gvnic-1.. and rdma-0.. */
static void network_names(const planner *p, const gc_bp_module *m, const char **prefix, long *start,
                          const char **postfix, bool rdma)
{
    const json_t *names = deploy_gcp_setting(p, m, "k8s_network_names");
    const char *kind = rdma ? "rdma" : "gvnic";
    char key[32];
    if (!json_is_object(names)) {
        *prefix = rdma ? "rdma-" : "gvnic-";
        *start = rdma ? 0 : 1;
        *postfix = "";
        return;
    }
    snprintf(key, sizeof(key), "%s_prefix", kind);
    *prefix = json_string_value(json_object_get(names, key)) ?: "";
    snprintf(key, sizeof(key), "%s_start_index", kind);
    const json_t *s = json_object_get(names, key);
    *start = json_is_integer(s) ? (long)json_integer_value(s) : rdma ? 0 : 1;
    snprintf(key, sizeof(key), "%s_postfix", kind);
    *postfix = json_string_value(json_object_get(names, key)) ?: "";
}

static bool nic_contains(const json_t *net, const char *what)
{
    const char *nic = json_string_value(json_object_get(net, "nic_type"));
    char upper[64];
    size_t n = 0;
    for (; nic && nic[n] && n < sizeof(upper) - 1; n++)
        upper[n] = (char)(nic[n] >= 'a' && nic[n] <= 'z' ? nic[n] - 32 : nic[n]);
    upper[n] = '\0';
    return strstr(upper, what) != NULL;
}

/* Per additional network a GKENetworkParamSet and a Network of one name (the module's
 * templates/gke-network-paramset.yaml.tftpl and network-object.yaml.tftpl): the gVNIC networks
 * first, numbered from their start index, then the RDMA ones (deviceMode RDMA), so that pods
 * can ask for them by name. */
void deploy_gcp_network_objects(const planner *p, const gc_bp_module *m, json_t *objects)
{
    const char *unknown;
    json_t *networks = deploy_gcp_additional_networks(p, m, &unknown);
    for (int rdma = 0; rdma < 2; rdma++) {
        const char *prefix, *postfix;
        long index;
        network_names(p, m, &prefix, &index, &postfix, rdma);
        size_t i;
        const json_t *net;
        json_array_foreach(networks, i, net)
        {
            if (!nic_contains(net, rdma ? "RDMA" : "GVNIC"))
                continue;
            char *name = gc_xasprintf("%s%ld%s", prefix, index++, postfix);
            json_array_append_new(
                objects, json_pack("{s:s, s:s, s:{s:s}, s:{s:O, s:O, s:s}}", "apiVersion",
                                   "networking.gke.io/v1", "kind", "GKENetworkParamSet", "metadata",
                                   "name", name, "spec", "vpc", json_object_get(net, "network"),
                                   "vpcSubnet", json_object_get(net, "subnetwork"), "deviceMode",
                                   rdma ? "RDMA" : "NetDevice"));
            json_array_append_new(
                objects, json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s, s:s, s:s}, s:s}}", "apiVersion",
                                   "networking.gke.io/v1", "kind", "Network", "metadata", "name",
                                   name, "spec", "parametersRef", "group", "networking.gke.io",
                                   "kind", "GKENetworkParamSet", "name", name, "type", "Device"));
            free(name);
        }
    }
    json_decref(networks);
}
