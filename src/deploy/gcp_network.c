/*
 * Networks: the outputs of the toolkit's network modules (vpc, multivpc, gpu-rdma-vpc) as their
 * Terraform computes them, the resources of all three as plan steps (one builder, plan_vpc, for
 * every network), and the GKENetworkParamSet and Network objects the gke-cluster module applies
 * for each additional network.
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

/* One network as the toolkit's network modules make it: the vpc module directly, each of
 * multivpc's networks through it, gpu-rdma-vpc through the network module underneath without
 * firewall rules or Cloud NAT. */
typedef struct vpc_spec {
    const char *network;
    long mtu;
    bool regional;         /* network_routing_mode REGIONAL */
    const char *profile;   /* network_profile, or NULL */
    const json_t *subnets; /* [{subnet_name, subnet_ip, subnet_region}] */
    const json_t *secondary;
    bool private_access;
    bool iap_ssh, internal;
    const char *internal_range; /* the internal-traffic rule's source */
    const json_t *rules;        /* firewall_rules */
    bool router, nat;
    bool drop_default_routes; /* delete_default_internet_gateway_routes */
} vpc_spec;

/* network_profile is a URL ending in ".../networkProfiles/NAME" (or NAME itself); gcloud takes
 * the name and finds it in the project. */
static const char *profile_name(const char *profile)
{
    const char *slash = profile ? strrchr(profile, '/') : NULL;
    return slash ? slash + 1 : profile;
}

static int plan_vpc(planner *p, const gc_bp_module *m, const vpc_spec *v)
{
    const char *net = v->network;
    gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_NETWORK, net, m);
    gcp_ref ref = {.kind = GC_CLOUD_NETWORK, .name = net};
    s->check = deploy_gcp_describe(p, &ref);
    deploy_argv b = deploy_gcp_command(p, &ref, "create");
    deploy_argv_flag(&b, "subnet-mode", "custom");
    deploy_argv_count(&b, "mtu", v->mtu);
    deploy_argv_flag(&b, "bgp-routing-mode", v->regional ? "regional" : "global");
    if (v->profile && *v->profile)
        deploy_argv_flag(&b, "network-profile", profile_name(v->profile));
    s->create = b.items;

    json_t *regions = json_array();
    size_t i;
    const json_t *subnet;
    int rc = 0;
    json_array_foreach(v->subnets, i, subnet)
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
        char *ranges = secondary_ranges(v->secondary, name);
        deploy_argv_flag(&d, "secondary-range", ranges);
        free(ranges);
        if (v->private_access)
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
        if (v->iap_ssh)
            firewall(p, m, net, name, IAP_RANGE, "tcp:22");
        free(name);
        name = gc_xasprintf("%s-fw-allow-internal-traffic", net);
        if (v->internal)
            firewall(p, m, net, name, v->internal_range, "tcp:0-65535,udp:0-65535,icmp");
        free(name);
        const json_t *rule;
        json_array_foreach(v->rules, i, rule)
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
    const json_t *region;
    json_array_foreach(rc ? NULL : regions, i, region)
        router_and_nat(p, m, net, json_string_value(region), v->router, v->router && v->nat);
    json_decref(regions);
    if (!rc && v->drop_default_routes)
        deploy_gcp_note(p, m,
                        "delete_default_internet_gateway_routes is not planned; after deploy run: "
                        "gcloud compute routes list --project=%s --filter='network~/%s$ AND "
                        "name~^default-route AND nextHopGateway~/default-internet-gateway$' "
                        "--format='value(name)' | xargs -r gcloud compute routes delete "
                        "--project=%s --quiet",
                        p->project, net, p->project);
    return rc;
}

static int plan_vpc_module(planner *p, const gc_bp_module *m)
{
    char *net = deploy_gcp_network_name(p, m);
    json_t *subnets = subnetworks_of(p, m);
    bool router = deploy_gcp_bool(p, m, "enable_cloud_router", true);
    vpc_spec v = {
        .network = net,
        .mtu = deploy_gcp_long(p, m, "mtu", 8896),
        .regional = !strcmp(deploy_gcp_string(p, m, "network_routing_mode", "GLOBAL"), "REGIONAL"),
        .profile = deploy_gcp_string(p, m, "network_profile", NULL),
        .subnets = subnets,
        .drop_default_routes =
            deploy_gcp_bool(p, m, "delete_default_internet_gateway_routes", false),
        .secondary = deploy_gcp_setting(p, m, "secondary_ranges_list"),
        .private_access = deploy_gcp_bool(p, m, "subnetwork_private_access", true),
        .iap_ssh = deploy_gcp_bool(p, m, "enable_iap_ssh_ingress", true),
        .internal = deploy_gcp_bool(p, m, "enable_internal_traffic", true),
        .internal_range = deploy_gcp_string(p, m, "network_address_range", "10.0.0.0/9"),
        .rules = deploy_gcp_setting(p, m, "firewall_rules"),
        .router = router,
        .nat = router && deploy_gcp_bool(p, m, "enable_cloud_nat", true),
    };
    int rc = plan_vpc(p, m, &v);
    if (!rc && v.nat)
        deploy_gcp_note(
            p, m,
            "Cloud NAT uses automatically allocated addresses (the module reserves %ld static "
            "ones per region)",
            deploy_gcp_long(p, m, "ips_per_nat", 2));
    json_decref(subnets);
    free(net);
    return rc;
}

/* cidrsubnet(RANGE, NEWBITS, NUM) of IPv4 RANGE "a.b.c.d/n" as Terraform computes it; NULL when
 * RANGE is not one or NUM does not fit. */
static char *cidrsubnet(const char *range, long newbits, long num)
{
    unsigned a, b, c, d, n;
    char tail;
    if (!range || sscanf(range, "%u.%u.%u.%u/%u%c", &a, &b, &c, &d, &n, &tail) != 5 || a > 255 ||
        b > 255 || c > 255 || d > 255 || n > 32 || newbits < 0 || n + newbits > 32 || num < 0 ||
        (newbits < 31 && num >= (1L << newbits)))
        return NULL;
    unsigned long addr = ((unsigned long)a << 24) | (b << 16) | (c << 8) | d;
    unsigned len = n + (unsigned)newbits;
    unsigned long mask = n ? (0xFFFFFFFFUL << (32 - n)) & 0xFFFFFFFFUL : 0;
    addr = (addr & mask) | (len < 32 ? (unsigned long)num << (32 - len) : (unsigned long)num);
    return gc_xasprintf("%lu.%lu.%lu.%lu/%u", (addr >> 24) & 255, (addr >> 16) & 255,
                        (addr >> 8) & 255, addr & 255, len);
}

/* A string output of a network module at index i (names as network_outputs.c computes them,
 * the same names the node pools and the cluster's network objects use). */
static const char *output_at(const json_t *list, size_t i, const char *field)
{
    const json_t *v = json_array_get(list, i);
    return json_string_value(field ? json_object_get(v, field) : v);
}

/* multivpc: network_count networks "<prefix>-N", each through the vpc module with one
 * subnetwork "<prefix>-N-subnet" spanning its share of global_ip_address_range. */
static int plan_multivpc(planner *p, const gc_bp_module *m)
{
    json_t *nets = deploy_network_output(m, "network_names", bp_var, (void *)p->bp);
    json_t *subs = deploy_network_output(m, "subnetwork_names", bp_var, (void *)p->bp);
    const char *global = deploy_gcp_string(p, m, "global_ip_address_range", "172.16.0.0/12");
    long suffix = deploy_gcp_long(p, m, "subnetwork_cidr_suffix", 16);
    const char *slash = strchr(global, '/');
    long newbits = slash ? suffix - strtol(slash + 1, NULL, 10) : -1;
    size_t count = json_array_size(nets);
    int rc = 0;
    if (!json_is_array(nets) || json_array_size(subs) != count) {
        rc = gc_fail(p->err, GC_EXIT_USAGE,
                     "module %s: the network names are not known before Terraform runs; set "
                     "network_name_prefix, network_count and project_id to plain values",
                     m->id);
    } else if (count > 8) {
        rc = gc_fail(p->err, GC_EXIT_USAGE,
                     "module %s: network_count is %zu; the module creates at most 8 networks",
                     m->id, count);
    }
    bool router = deploy_gcp_bool(p, m, "enable_cloud_router", true);
    for (size_t i = 0; !rc && i < count; i++) {
        char *range = cidrsubnet(global, newbits, (long)i);
        if (!range) {
            rc = gc_fail(p->err, GC_EXIT_USAGE,
                         "module %s: global_ip_address_range %s and subnetwork_cidr_suffix %ld "
                         "leave no room for %zu networks; use a larger range or suffix",
                         m->id, global, suffix, count);
            break;
        }
        json_t *subnets = json_pack("[{s:s, s:s, s:s?}]", "subnet_name", output_at(subs, i, NULL),
                                    "subnet_ip", range, "subnet_region", p->region);
        vpc_spec v = {
            .network = output_at(nets, i, NULL),
            .mtu = deploy_gcp_long(p, m, "mtu", 8896),
            .regional =
                !strcmp(deploy_gcp_string(p, m, "network_routing_mode", "REGIONAL"), "REGIONAL"),
            .profile = deploy_gcp_string(p, m, "network_profile", NULL),
            .subnets = subnets,
            .drop_default_routes =
                deploy_gcp_bool(p, m, "delete_default_internet_gateway_routes", false),
            .private_access = deploy_gcp_bool(p, m, "subnetwork_private_access", true),
            .iap_ssh = deploy_gcp_bool(p, m, "enable_iap_ssh_ingress", true),
            .internal = deploy_gcp_bool(p, m, "enable_internal_traffic", true),
            .internal_range = range,
            .rules = deploy_gcp_setting(p, m, "firewall_rules"),
            .router = router,
            .nat = router && deploy_gcp_bool(p, m, "enable_cloud_nat", true),
        };
        rc = plan_vpc(p, m, &v);
        json_decref(subnets);
        free(range);
    }
    if (!rc && count && router && deploy_gcp_bool(p, m, "enable_cloud_nat", true))
        deploy_gcp_note(
            p, m,
            "Cloud NAT uses automatically allocated addresses (the module reserves %ld static "
            "ones per region and network)",
            deploy_gcp_long(p, m, "ips_per_nat", 2));
    json_decref(nets);
    json_decref(subs);
    return rc;
}

/* gpu-rdma-vpc: one network with the RDMA network profile and subnetworks_template.count
 * subnetworks "<name_prefix>-N" splitting ip_range evenly (no firewall rules: RoCE networks
 * take none; no Cloud Router). A vpc-roce-metal profile makes its own subnetwork. */
static int plan_rdma_vpc(planner *p, const gc_bp_module *m)
{
    char *net = deploy_gcp_network_name(p, m);
    const char *profile = deploy_gcp_string(p, m, "network_profile", NULL);
    if (!profile || !*profile) {
        free(net);
        return deploy_gcp_missing(p, m, "network_profile", "ZONE-vpc-roce");
    }
    bool metal = strstr(profile, "vpc-roce-metal") != NULL;
    json_t *ifaces = deploy_network_output(m, "subnetwork_interfaces_gke", bp_var, (void *)p->bp);
    const json_t *tmpl = deploy_gcp_setting(p, m, "subnetworks_template");
    const char *ip_range =
        json_string_value(json_object_get(tmpl, "ip_range")) ?: (tmpl ? NULL : "192.168.0.0/16");
    const char *region = json_string_value(json_object_get(tmpl, "region"));
    size_t count = metal ? 0 : json_array_size(ifaces);
    long newbits = 0;
    while ((1L << newbits) < (long)count) /* ceil(log(count, 2)) */
        newbits++;
    json_t *subnets = json_array();
    int rc = 0;
    if (!metal && !json_is_array(ifaces))
        rc = gc_fail(p->err, GC_EXIT_USAGE,
                     "module %s: the subnetwork names are not known before Terraform runs; set "
                     "subnetworks_template to plain values",
                     m->id);
    for (size_t i = 0; !rc && i < count; i++) {
        char *range = cidrsubnet(ip_range, newbits, (long)i);
        if (!range) {
            rc = gc_fail(p->err, GC_EXIT_USAGE,
                         "module %s: subnetworks_template.ip_range %s cannot hold %zu "
                         "subnetworks; give an IPv4 range in CIDR form",
                         m->id, ip_range ? ip_range : "(unset)", count);
            break;
        }
        json_array_append_new(subnets,
                              json_pack("{s:s?, s:s, s:s?}", "subnet_name",
                                        output_at(ifaces, i, "subnetwork"), "subnet_ip", range,
                                        "subnet_region", region ? region : p->region));
        free(range);
    }
    vpc_spec v = {
        .network = net,
        .mtu = deploy_gcp_long(p, m, "mtu", 8896),
        .regional =
            !strcmp(deploy_gcp_string(p, m, "network_routing_mode", "REGIONAL"), "REGIONAL"),
        .profile = profile,
        .subnets = subnets,
        .drop_default_routes =
            deploy_gcp_bool(p, m, "delete_default_internet_gateway_routes", false),
    };
    if (!rc)
        rc = plan_vpc(p, m, &v);
    if (!rc && metal)
        deploy_gcp_note(p, m,
                        "network %s: the %s profile makes its own subnetwork "
                        "default-subnet-1-%s; none is planned",
                        net, profile_name(profile), net);
    json_decref(subnets);
    json_decref(ifaces);
    free(net);
    return rc;
}

int deploy_gcp_plan_networks(planner *p)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < p->bp->module_count; i++) {
        const gc_bp_module *m = &p->bp->modules[i];
        if (deploy_gcp_source_is(m, SOURCE_VPC))
            rc = plan_vpc_module(p, m);
        else if (deploy_gcp_source_is(m, SOURCE_MULTIVPC))
            rc = plan_multivpc(p, m);
        else if (deploy_gcp_source_is(m, SOURCE_RDMA_VPC))
            rc = plan_rdma_vpc(p, m);
    }
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
