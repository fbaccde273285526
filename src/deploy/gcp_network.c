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

/* Module outputs */

typedef struct inputs {
    const gc_bp_module *m;
    deploy_var_fn var;
    void *ctx;
    bool unknown; /* an input the output needs is not known */
} inputs;

/* A module input: its setting, else the variable of that name. New reference or NULL. */
static json_t *input(inputs *in, const char *key)
{
    json_t *v = json_object_get(in->m->settings, key);
    if (v && gc_blueprint_unknown(v)) {
        in->unknown = true;
        return NULL;
    }
    if (v)
        return json_is_null(v) ? NULL : json_incref(v);
    v = in->var ? in->var(in->ctx, key) : NULL;
    if (v && gc_blueprint_unknown(v)) {
        in->unknown = true;
        json_decref(v);
        return NULL;
    }
    if (json_is_null(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

/* A string input (copied), or `dflt` (copied; may be NULL). */
static char *input_string(inputs *in, const char *key, const char *dflt)
{
    json_t *v = input(in, key);
    char *s = json_is_string(v) ? gc_xstrdup(json_string_value(v)) : dflt ? gc_xstrdup(dflt) : NULL;
    json_decref(v);
    return s;
}

static long input_long(inputs *in, const char *key, long dflt)
{
    json_t *v = input(in, key);
    long n = json_is_integer(v) ? (long)json_integer_value(v) : dflt;
    json_decref(v);
    return n;
}

/* replace(deployment_name, "_", "-"), as every network module names things. */
static char *autoname(inputs *in)
{
    char *name = input_string(in, "deployment_name", NULL);
    for (char *c = name; c && *c; c++)
        if (*c == '_')
            *c = '-';
    return name;
}

static json_t *interface(const char *network, const char *subnetwork, const char *project,
                         const char *nic_type, const char *stack_type)
{
    return json_pack("{s:s?, s:s?, s:s?, s:s?, s:n, s:n, s:s?, s:[], s:[], s:[]}", "network",
                     network, "subnetwork", subnetwork, "subnetwork_project", project, "nic_type",
                     nic_type, "queue_count", "network_ip", "stack_type", stack_type,
                     "access_config", "ipv6_access_config", "alias_ip_range");
}

static json_t *vpc_output(inputs *in, const char *name)
{
    char *auto_name = autoname(in);
    char *fallback = auto_name ? gc_xasprintf("%s-net", auto_name) : NULL;
    char *net = input_string(in, "network_name", fallback);
    free(fallback);
    json_t *subnets = input(in, "subnetworks");
    const json_t *first = json_array_get(subnets, 0);
    char *subnet = NULL;
    if (json_is_string(json_object_get(first, "subnet_name"))) {
        subnet = gc_xstrdup(json_string_value(json_object_get(first, "subnet_name")));
    } else {
        fallback = auto_name ? gc_xasprintf("%s-primary-subnet", auto_name) : NULL;
        subnet = input_string(in, "subnetwork_name", fallback);
        free(fallback);
    }
    json_t *out = NULL;
    if (!strcmp(name, "network_name") && net) {
        out = json_string(net);
    } else if (!strcmp(name, "subnetwork_name") && subnet) {
        out = json_string(subnet);
    } else if (!strcmp(name, "instance_additional_networks") && net && subnet) {
        char *project = input_string(in, "project_id", NULL);
        char *nic = input_string(in, "nic_type", "GVNIC");
        const char *stack = json_string_value(json_object_get(first, "stack_type"));
        char *stack_type = input_string(in, "subnetwork_stack_type", stack ? stack : "IPV4_ONLY");
        out = json_pack("[o]", interface(net, subnet, project, nic, stack_type));
        free(project);
        free(nic);
        free(stack_type);
    }
    json_decref(subnets);
    free(net);
    free(subnet);
    free(auto_name);
    return out;
}

static json_t *multivpc_output(inputs *in, const char *name)
{
    char *prefix = input_string(in, "network_name_prefix", "");
    for (char *c = prefix; *c; c++)
        if (*c == '_')
            *c = '-';
    if (!*prefix) {
        free(prefix);
        prefix = autoname(in);
    }
    long count = input_long(in, "network_count", 4);
    char *project = input_string(in, "project_id", NULL);
    /* network_interface_defaults: an object whose unset attributes take their optional()
     * defaults; unset as a whole, the variable's default (the same values). */
    json_t *given = input(in, "network_interface_defaults");
    json_t *defaults = json_pack("{s:n, s:n, s:n, s:s, s:s, s:s, s:n, s:[], s:[], s:[]}", "network",
                                 "subnetwork", "subnetwork_project", "network_ip", "", "nic_type",
                                 "GVNIC", "stack_type", "IPV4_ONLY", "queue_count", "access_config",
                                 "ipv6_access_config", "alias_ip_range");
    if (json_is_object(given))
        json_object_update(defaults, given);
    json_decref(given);
    json_t *out = NULL;
    if (prefix && count >= 0 && count <= 64) {
        bool networks = !strcmp(name, "network_names"), subnets = !strcmp(name, "subnetwork_names");
        bool interfaces = !strcmp(name, "additional_networks");
        out = networks || subnets || interfaces ? json_array() : NULL;
        for (long i = 0; out && i < count; i++) {
            char *net = gc_xasprintf("%s-%ld", prefix, i);
            char *subnet = gc_xasprintf("%s-%ld-subnet", prefix, i);
            if (networks) {
                json_array_append_new(out, json_string(net));
            } else if (subnets) {
                json_array_append_new(out, json_string(subnet));
            } else {
                json_t *entry = json_deep_copy(defaults);
                json_object_set_new(entry, "network", json_string(net));
                json_object_set_new(entry, "subnetwork", json_string(subnet));
                json_object_set_new(entry, "subnetwork_project",
                                    project ? json_string(project) : json_null());
                json_array_append_new(out, entry);
            }
            free(net);
            free(subnet);
        }
    }
    json_decref(defaults);
    free(project);
    free(prefix);
    return out;
}

static json_t *rdma_vpc_output(inputs *in, const char *name)
{
    char *auto_name = autoname(in);
    char *fallback = auto_name ? gc_xasprintf("%s-net", auto_name) : NULL;
    char *net = input_string(in, "network_name", fallback);
    free(fallback);
    char *profile = input_string(in, "network_profile", NULL);
    bool metal = profile && strstr(profile, "vpc-roce-metal");
    json_t *tmpl = input(in, "subnetworks_template");
    const char *given_prefix = json_string_value(json_object_get(tmpl, "name_prefix"));
    char *prefix = given_prefix ? gc_xstrdup(given_prefix)
                   : auto_name  ? gc_xasprintf("%s-subnet", auto_name)
                                : NULL;
    long count = json_is_integer(json_object_get(tmpl, "count"))
                     ? (long)json_integer_value(json_object_get(tmpl, "count"))
                     : 8;
    if (metal)
        count = 8; /* the profile makes its own subnetwork for the eight MRDMA interfaces */
    json_t *out = NULL;
    if (!strcmp(name, "network_name") && net) {
        out = json_string(net);
    } else if (!strcmp(name, "subnetwork_interfaces_gke") && net && prefix && count >= 0 &&
               count <= 64) {
        char *project = input_string(in, "project_id", NULL);
        char *nic = input_string(in, "nic_type", "MRDMA");
        out = json_array();
        for (long i = 0; i < count; i++) {
            char *subnet = metal ? gc_xasprintf("default-subnet-1-%s", net)
                                 : gc_xasprintf("%s-%ld", prefix, i);
            json_array_append_new(out, interface(net, subnet, project, metal ? "MRDMA" : nic,
                                                 metal ? "IPV6_ONLY" : NULL));
            free(subnet);
        }
        free(project);
        free(nic);
    }
    json_decref(tmpl);
    free(prefix);
    free(profile);
    free(net);
    free(auto_name);
    return out;
}

json_t *deploy_network_output(const gc_bp_module *m, const char *name, deploy_var_fn var, void *ctx)
{
    if (!m || !m->settings)
        return NULL;
    inputs in = {.m = m, .var = var, .ctx = ctx};
    json_t *out = NULL;
    if (deploy_gcp_source_is(m, SOURCE_VPC))
        out = vpc_output(&in, name);
    else if (deploy_gcp_source_is(m, SOURCE_MULTIVPC))
        out = multivpc_output(&in, name);
    else if (deploy_gcp_source_is(m, SOURCE_RDMA_VPC))
        out = rdma_vpc_output(&in, name);
    if (in.unknown) {
        json_decref(out);
        return NULL;
    }
    return out;
}

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
        *unknown = gc_blueprint_unknown(own);
        return !*unknown && json_array_size(own) ? json_deep_copy(own) : NULL;
    }
    json_t *all = NULL;
    for (size_t i = 0; i < m->use_count; i++) {
        const gc_bp_module *used = gc_blueprint_module(p->bp, m->use[i]);
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
static void network_objects(const planner *p, const gc_bp_module *m, json_t *objects)
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

/* The objects the gke-cluster module applies besides Kueue's: the network objects above, and
 * for multi-tier checkpointing the CheckpointConfiguration "default" (its
 * templates/mtc-config.yaml.tftpl): the in-memory volume size from mtc_cache_size (50Gi unless
 * set) and the bucket checkpoints go to. Without a bucket the module refuses the blueprint, so
 * nothing is added then. */
void gc_cluster_objects(const gc_blueprint *bp, json_t *objects)
{
    planner p = {0};
    deploy_gcp_planner_init(&p, bp, NULL);
    for (size_t i = 0; i < bp->module_count; i++) {
        const gc_bp_module *m = &bp->modules[i];
        if (deploy_gcp_source_is(m, SOURCE_CLUSTER))
            network_objects(&p, m, objects);
    }
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
