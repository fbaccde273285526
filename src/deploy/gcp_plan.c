/*
 * The Google Cloud half of deploy, as data: what Cluster Toolkit's modules would create in a
 * project, in dependency order, each step a describe argv (is it there?) and a create argv.
 *
 * The settings and defaults are the modules' own (Cluster Toolkit v1.98.0):
 *   modules/network/vpc           a custom-mode network (MTU 8896, global routing), its
 *                                 subnetworks with secondary ranges and Private Google Access,
 *                                 the IAP and internal-traffic firewall rules, the user's rules,
 *                                 a Cloud Router "<network>-router" and NAT "cloud-nat-<region>"
 *                                 per subnetwork region
 *   modules/project/service-account  the account and its project roles
 *   modules/scheduler/gke-cluster the cluster (private nodes, Workload Identity, shielded nodes,
 *                                 Dataplane V2 with multi-networking, the CSI add-ons asked for),
 *                                 its "system" pool and, with Pathways, "cpu-np"
 *   modules/compute/resource-policy  the workload policy (tpu7x: HIGH_THROUGHPUT)
 *   modules/compute/gke-node-pool the pools (reservation affinity, flex-start, queued
 *                                 provisioning, placement policy, taints, labels)
 * Terraform deletes the cluster's bootstrap pool ("default-pool", remove_default_node_pool);
 * here that is a step of its own after the system pool exists.
 */
#include "deploy/internal.h"

#include "gcluster/catalog.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SOURCE_VPC             "modules/network/vpc"
#define SOURCE_SERVICE_ACCOUNT "modules/project/service-account"
#define SOURCE_CLUSTER         "modules/scheduler/gke-cluster"
#define SOURCE_RESOURCE_POLICY "modules/compute/resource-policy"
#define SOURCE_NODE_POOL       "modules/compute/gke-node-pool"

#define SCOPE_CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"
#define IAP_RANGE            "35.235.240.0/20" /* where Identity-Aware Proxy TCP forwarding comes from */

typedef struct planner {
    const gc_blueprint *bp;
    gc_cloud_plan *plan;
    const char *project, *cluster, *location, *region, *head_pool;
    const json_t *cluster_module;
    const char *deployment;
    gc_error *err;
} planner;

/* Module lookups */

static bool source_is(const json_t *module, const char *path)
{
    const char *source = json_string_value(json_object_get(module, "source"));
    if (!source)
        return false;
    size_t len = strcspn(source, "?"), plen = strlen(path);
    while (len && source[len - 1] == '/')
        len--;
    return len >= plen && !strncmp(source + len - plen, path, plen) &&
           (len == plen || source[len - plen - 1] == '/');
}

static const json_t *module_by_id(const gc_blueprint *bp, const char *id)
{
    size_t i;
    const json_t *m;
    json_array_foreach(bp->module_json, i, m)
    {
        if (id && !strcmp(json_string_value(json_object_get(m, "id")), id))
            return m;
    }
    return NULL;
}

/* The first module `m` uses whose source is `path`. */
static const json_t *used_module(const gc_blueprint *bp, const json_t *m, const char *path)
{
    size_t i;
    const json_t *u;
    json_array_foreach(json_object_get(m, "use"), i, u)
    {
        const json_t *used = module_by_id(bp, json_string_value(u));
        if (used && source_is(used, path))
            return used;
    }
    return NULL;
}

/* A module's setting; absent, the variable of the same name (as Cluster Toolkit wires vars into
 * every module that declares them). NULL when neither has a value. */
static const json_t *setting(const planner *p, const json_t *m, const char *key)
{
    const json_t *v = json_object_get(json_object_get(m, "settings"), key);
    if (!v && !json_object_get(json_object_get(m, "unevaluated"), key))
        v = json_object_get(p->bp->vars, key);
    return json_is_null(v) ? NULL : v;
}

static const char *string_of(const planner *p, const json_t *m, const char *key, const char *dflt)
{
    const char *s = json_string_value(setting(p, m, key));
    return s && *s ? s : dflt;
}

static bool bool_of(const planner *p, const json_t *m, const char *key, bool dflt)
{
    const json_t *v = setting(p, m, key);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static const char *module_id(const json_t *m)
{
    return json_string_value(json_object_get(m, "id"));
}

/* Errors that say the fix */

static int missing_value(planner *p, const json_t *m, const char *key, const char *example)
{
    return gc_fail(p->err, GC_EXIT_USAGE,
                   "module %s needs %s, and the blueprint leaves it empty; pass --vars %s=%s",
                   module_id(m), key, key, example);
}

/* When the value the plan needs came from "$(vars.NAME)" and is empty: the fix is --vars NAME. */
static int empty_value(planner *p, const json_t *raw, const json_t *m, const char *what,
                       const char *example)
{
    const char *text = json_string_value(raw);
    size_t len = text ? strlen(text) : 0;
    if (len > 8 && !strncmp(text, "$(vars.", 7) && text[len - 1] == ')')
        return gc_fail(p->err, GC_EXIT_USAGE,
                       "module %s: %s is vars.%.*s, which is empty; pass --vars %.*s=%s",
                       module_id(m), what, (int)(len - 8), text + 7, (int)(len - 8), text + 7,
                       example);
    return gc_fail(p->err, GC_EXIT_USAGE, "module %s: %s is empty; set it (e.g. %s)", module_id(m),
                   what, example);
}

/* An object's string members as gcloud's KEY=VALUE,... list ("" when there are none). */
static char *key_value_list(const json_t *object)
{
    gc_buf b;
    gc_buf_init(&b);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)object, key, value)
    {
        if (json_is_string(value))
            gc_buf_printf(&b, "%s%s=%s", b.len ? "," : "", key, json_string_value(value));
    }
    if (!b.data)
        return gc_xstrdup("");
    return gc_buf_detach(&b);
}

/* Labels: Cluster Toolkit adds ghpc_blueprint and ghpc_deployment to vars.labels for every
 * module, and each module its own ghpc_module and ghpc_role. */
static char *labels_of(const planner *p, const json_t *m, const char *ghpc_module,
                       const char *ghpc_role)
{
    json_t *labels = json_object();
    const json_t *user = setting(p, m, "labels");
    if (json_is_object(user))
        json_object_update(labels, (json_t *)user);
    json_object_set_new(labels, "ghpc_blueprint", json_string(p->bp->name));
    json_object_set_new(labels, "ghpc_deployment", json_string(p->deployment));
    json_object_set_new(labels, "ghpc_module", json_string(ghpc_module));
    json_object_set_new(labels, "ghpc_role", json_string(ghpc_role));
    char *list = key_value_list(labels);
    json_decref(labels);
    return list;
}

/* Steps */

static gc_cloud_step *add_step(planner *p, gc_cloud_step_kind kind, const char *name,
                               const json_t *m)
{
    gc_cloud_plan *plan = p->plan;
    plan->steps = gc_xrealloc(plan->steps, (plan->count + 1) * sizeof(*plan->steps));
    gc_cloud_step *s = &plan->steps[plan->count++];
    memset(s, 0, sizeof(*s));
    s->kind = kind;
    s->name = gc_xstrdup(name);
    s->module_id = gc_xstrdup(m ? module_id(m) : "");
    return s;
}

static void note(planner *p, const json_t *m, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void note(planner *p, const json_t *m, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    char *line = gc_xasprintf("module %s: %s", module_id(m), text);
    gc_strings_push(&p->plan->notes, line);
    free(line);
}

/* gcloud WORDS... NAME --project=P --format=value(name): exit 0 when the resource exists. */
static char **describe(const char *what, const char *name, const char *project)
{
    deploy_argv b = {0};
    deploy_argv_words(&b, "gcloud", NULL);
    char *words = gc_xstrdup(what);
    for (char *save, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save))
        deploy_argv_push(&b, gc_xstrdup(w));
    free(words);
    deploy_argv_words(&b, "describe", name, NULL);
    deploy_argv_flag(&b, "project", project);
    deploy_argv_push(&b, gc_xstrdup("--format=value(name)"));
    return b.items;
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
    return gc_buf_detach(&b);
}

static char *join_strings(const json_t *list, const char *field)
{
    gc_buf b;
    gc_buf_init(&b);
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v)
    {
        const json_t *s = field ? json_object_get(v, field) : v;
        if (json_is_string(s))
            gc_buf_printf(&b, "%s%s", b.len ? "," : "", json_string_value(s));
    }
    return gc_buf_detach(&b);
}

static void firewall(planner *p, const json_t *m, const char *network, const char *name,
                     const char *ranges, const char *allow)
{
    gc_cloud_step *s = add_step(p, GC_CLOUD_FIREWALL, name, m);
    s->check = describe("compute firewall-rules", name, p->project);
    deploy_argv b = {0};
    deploy_argv_words(&b, "gcloud", "compute", "firewall-rules", "create", name, NULL);
    deploy_argv_flag(&b, "project", p->project);
    deploy_argv_flag(&b, "network", network);
    deploy_argv_flag(&b, "direction", "INGRESS");
    deploy_argv_flag(&b, "source-ranges", ranges);
    deploy_argv_flag(&b, "allow", allow);
    s->create = b.items;
}

/* The network's name as the vpc module derives it. */
static char *network_name(const planner *p, const json_t *m)
{
    const char *name = string_of(p, m, "network_name", NULL);
    if (name)
        return gc_xstrdup(name);
    char *auto_name = gc_xasprintf("%s-net", p->deployment);
    for (char *c = auto_name; *c; c++)
        if (*c == '_')
            *c = '-';
    return auto_name;
}

/* The vpc module's subnetworks: its `subnetworks` list, or one primary subnetwork. */
static json_t *subnetworks_of(const planner *p, const json_t *m)
{
    const json_t *list = setting(p, m, "subnetworks");
    if (json_array_size(list))
        return json_deep_copy(list);
    char *name = NULL;
    const char *given = string_of(p, m, "subnetwork_name", NULL);
    name = given ? gc_xstrdup(given) : gc_xasprintf("%s-primary-subnet", p->deployment);
    /* cidrsubnet("10.0.0.0/9", 15, 0) */
    json_t *subnet = json_pack("{s:s, s:s, s:s}", "subnet_name", name, "subnet_ip", "10.0.0.0/24",
                               "subnet_region", p->region);
    free(name);
    return json_pack("[o]", subnet);
}

/* The networks a module's additional_networks names: "$(ID.instance_additional_networks)" of a
 * vpc module is one gVNIC network per subnetwork of it (the vpc module's output), as
 * [{"network", "subnetwork"}]. Anything else the plan cannot follow: NULL, and *unknown says
 * whether there was something. */
static json_t *additional_networks(const planner *p, const json_t *m, bool *unknown)
{
    *unknown = false;
    const char *text = json_string_value(
        json_object_get(json_object_get(m, "unevaluated"), "additional_networks"));
    static const char output[] = ".instance_additional_networks)";
    size_t len = text ? strlen(text) : 0, olen = sizeof(output) - 1;
    if (!text) {
        *unknown = json_array_size(setting(p, m, "additional_networks")) > 0;
        return NULL;
    }
    const json_t *vpc = NULL;
    if (len > olen + 2 && !strncmp(text, "$(", 2) && !strcmp(text + len - olen, output)) {
        char *id = gc_xstrndup(text + 2, len - olen - 2);
        vpc = module_by_id(p->bp, id);
        free(id);
    }
    if (!vpc || !source_is(vpc, SOURCE_VPC)) {
        *unknown = true;
        return NULL;
    }
    json_t *list = json_array();
    char *net = network_name(p, vpc);
    json_t *subnets = subnetworks_of(p, vpc);
    size_t i;
    json_t *subnet;
    json_array_foreach(subnets, i, subnet)
    {
        json_array_append_new(list, json_pack("{s:s, s:O}", "network", net, "subnetwork",
                                              json_object_get(subnet, "subnet_name")));
    }
    json_decref(subnets);
    free(net);
    return list;
}

static int plan_network(planner *p, const json_t *m)
{
    char *net = network_name(p, m);
    gc_cloud_step *s = add_step(p, GC_CLOUD_NETWORK, net, m);
    s->check = describe("compute networks", net, p->project);
    deploy_argv b = {0};
    deploy_argv_words(&b, "gcloud", "compute", "networks", "create", net, NULL);
    deploy_argv_flag(&b, "project", p->project);
    deploy_argv_flag(&b, "subnet-mode", "custom");
    deploy_argv_count(&b, "mtu",
                      json_is_integer(setting(p, m, "mtu"))
                          ? (long)json_integer_value(setting(p, m, "mtu"))
                          : 8896);
    deploy_argv_flag(&b, "bgp-routing-mode",
                     strcmp(string_of(p, m, "network_routing_mode", "GLOBAL"), "REGIONAL")
                         ? "global"
                         : "regional");
    s->create = b.items;

    json_t *subnets = subnetworks_of(p, m);
    const json_t *secondary = setting(p, m, "secondary_ranges_list");
    json_t *regions = json_array();
    size_t i, j;
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
                         "module %s: subnetworks[%zu] needs subnet_name and subnet_ip",
                         module_id(m), i);
            break;
        }
        if (!region) {
            rc = missing_value(p, m, "region", "us-east5");
            break;
        }
        s = add_step(p, GC_CLOUD_SUBNETWORK, name, m);
        deploy_argv c = {0};
        deploy_argv_words(&c, "gcloud", "compute", "networks", "subnets", "describe", name, NULL);
        deploy_argv_flag(&c, "project", p->project);
        deploy_argv_flag(&c, "region", region);
        deploy_argv_push(&c, gc_xstrdup("--format=value(name)"));
        s->check = c.items;
        deploy_argv d = {0};
        deploy_argv_words(&d, "gcloud", "compute", "networks", "subnets", "create", name, NULL);
        deploy_argv_flag(&d, "project", p->project);
        deploy_argv_flag(&d, "network", net);
        deploy_argv_flag(&d, "region", region);
        deploy_argv_flag(&d, "range", ip);
        const json_t *entry;
        json_array_foreach(secondary, j, entry)
        {
            if (strcmp(json_string_value(json_object_get(entry, "subnetwork_name")) ?: "", name))
                continue;
            gc_buf r;
            gc_buf_init(&r);
            size_t k;
            const json_t *range;
            json_array_foreach(json_object_get(entry, "ranges"), k, range)
            {
                gc_buf_printf(&r, "%s%s=%s", r.len ? "," : "",
                              json_string_value(json_object_get(range, "range_name")) ?: "",
                              json_string_value(json_object_get(range, "ip_cidr_range")) ?: "");
            }
            if (r.len)
                deploy_argv_flag(&d, "secondary-range", r.data);
            gc_buf_free(&r);
        }
        if (bool_of(p, m, "subnetwork_private_access", true))
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
        if (bool_of(p, m, "enable_iap_ssh_ingress", true))
            firewall(p, m, net, name, IAP_RANGE, "tcp:22");
        free(name);
        name = gc_xasprintf("%s-fw-allow-internal-traffic", net);
        if (bool_of(p, m, "enable_internal_traffic", true))
            firewall(p, m, net, name, string_of(p, m, "network_address_range", "10.0.0.0/9"),
                     "tcp:0-65535,udp:0-65535,icmp");
        free(name);
        const json_t *rule;
        json_array_foreach(setting(p, m, "firewall_rules"), i, rule)
        {
            const char *rule_name = json_string_value(json_object_get(rule, "name"));
            char *ranges = join_strings(json_object_get(rule, "ranges"), NULL);
            char *allow = allow_list(json_object_get(rule, "allow"));
            if (rule_name && *ranges && *allow)
                firewall(p, m, net, rule_name, ranges, allow);
            else if (rule_name)
                note(p, m,
                     "firewall rule %s is not planned (only ingress rules with ranges and "
                     "allow are)",
                     rule_name);
            free(ranges);
            free(allow);
        }
    }

    /* Private nodes reach the internet (image pulls) through Cloud NAT. */
    const json_t *region;
    bool router = bool_of(p, m, "enable_cloud_router", true);
    bool nat = router && bool_of(p, m, "enable_cloud_nat", true);
    json_array_foreach(rc ? NULL : regions, i, region)
    {
        const char *r = json_string_value(region);
        char *router_name = gc_xasprintf("%s-router", net);
        if (router) {
            s = add_step(p, GC_CLOUD_ROUTER, router_name, m);
            deploy_argv c = {0};
            deploy_argv_words(&c, "gcloud", "compute", "routers", "describe", router_name, NULL);
            deploy_argv_flag(&c, "project", p->project);
            deploy_argv_flag(&c, "region", r);
            deploy_argv_push(&c, gc_xstrdup("--format=value(name)"));
            s->check = c.items;
            deploy_argv d = {0};
            deploy_argv_words(&d, "gcloud", "compute", "routers", "create", router_name, NULL);
            deploy_argv_flag(&d, "project", p->project);
            deploy_argv_flag(&d, "network", net);
            deploy_argv_flag(&d, "region", r);
            s->create = d.items;
        }
        if (nat) {
            char *nat_name = gc_xasprintf("cloud-nat-%s", r);
            s = add_step(p, GC_CLOUD_NAT, nat_name, m);
            deploy_argv c = {0};
            deploy_argv_words(&c, "gcloud", "compute", "routers", "nats", "describe", nat_name,
                              NULL);
            deploy_argv_flag(&c, "project", p->project);
            deploy_argv_flag(&c, "router", router_name);
            deploy_argv_flag(&c, "region", r);
            deploy_argv_push(&c, gc_xstrdup("--format=value(name)"));
            s->check = c.items;
            deploy_argv d = {0};
            deploy_argv_words(&d, "gcloud", "compute", "routers", "nats", "create", nat_name, NULL);
            deploy_argv_flag(&d, "project", p->project);
            deploy_argv_flag(&d, "router", router_name);
            deploy_argv_flag(&d, "region", r);
            deploy_argv_words(&d, "--auto-allocate-nat-external-ips", "--nat-all-subnet-ip-ranges",
                              NULL);
            s->create = d.items;
            free(nat_name);
        }
        free(router_name);
    }
    if (!rc && nat)
        note(p, m,
             "Cloud NAT uses automatically allocated addresses (the module reserves %d static "
             "ones per region)",
             2);
    json_decref(regions);
    json_decref(subnets);
    free(net);
    return rc;
}

static char *service_account_email(const planner *p, const json_t *m)
{
    return gc_xasprintf("%s@%s.iam.gserviceaccount.com", string_of(p, m, "name", "sa"), p->project);
}

static int plan_service_account(planner *p, const json_t *m)
{
    const char *name = string_of(p, m, "name", NULL);
    if (!name)
        return missing_value(p, m, "name", "my-sa");
    char *email = service_account_email(p, m);
    gc_cloud_step *s = add_step(p, GC_CLOUD_SERVICE_ACCOUNT, email, m);
    deploy_argv c = {0};
    deploy_argv_words(&c, "gcloud", "iam", "service-accounts", "describe", email, NULL);
    deploy_argv_flag(&c, "project", p->project);
    deploy_argv_push(&c, gc_xstrdup("--format=value(email)"));
    s->check = c.items;
    deploy_argv d = {0};
    deploy_argv_words(&d, "gcloud", "iam", "service-accounts", "create", name, NULL);
    deploy_argv_flag(&d, "project", p->project);
    char *display = gc_xasprintf("%s (%s)", string_of(p, m, "display_name", name), p->deployment);
    deploy_argv_flag(&d, "display-name", display);
    free(display);
    s->create = d.items;
    size_t i;
    const json_t *role;
    json_array_foreach(setting(p, m, "project_roles"), i, role)
    {
        if (!json_is_string(role))
            continue;
        char *full = gc_xasprintf("roles/%s", json_string_value(role));
        char *step_name = gc_xasprintf("%s %s", email, full);
        s = add_step(p, GC_CLOUD_ROLE_BINDING, step_name, m);
        /* Adding a binding that exists leaves the policy as it is, so this runs every time. */
        deploy_argv b = {0};
        deploy_argv_words(&b, "gcloud", "projects", "add-iam-policy-binding", p->project, NULL);
        char *member = gc_xasprintf("serviceAccount:%s", email);
        deploy_argv_flag(&b, "member", member);
        deploy_argv_flag(&b, "role", full);
        deploy_argv_flag(&b, "condition", "None");
        deploy_argv_flag(&b, "format", "none");
        s->create = b.items;
        free(member);
        free(step_name);
        free(full);
    }
    free(email);
    return 0;
}

/* The service account a module's nodes run as: service_account_email, or the account of a used
 * service-account module; NULL for the project's default compute account. */
static char *node_service_account(const planner *p, const json_t *m)
{
    const char *email = string_of(p, m, "service_account_email", NULL);
    if (email)
        return gc_xstrdup(email);
    const json_t *sa = used_module(p->bp, m, SOURCE_SERVICE_ACCOUNT);
    return sa ? service_account_email(p, sa) : NULL;
}

/* The flags every node pool the toolkit creates shares: Workload Identity's metadata server,
 * shielded boot, gVNIC on Container-Optimized OS. */
static void node_basics(deploy_argv *b, const char *image_type, bool secure_boot,
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

static char *taints_of(const json_t *taints)
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

static void pool_step_check(planner *p, gc_cloud_step *s, const char *pool)
{
    deploy_argv c = {0};
    deploy_argv_words(&c, "gcloud", "container", "node-pools", "describe", pool, NULL);
    deploy_argv_flag(&c, "project", p->project);
    deploy_argv_flag(&c, "cluster", p->cluster);
    deploy_argv_flag(&c, "location", p->location);
    deploy_argv_push(&c, gc_xstrdup("--format=value(name)"));
    s->check = c.items;
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

static int plan_cluster(planner *p, const json_t *m)
{
    size_t ni;
    const json_t *network;
    json_array_foreach(setting(p, m, "master_authorized_networks"), ni, network)
    {
        if (!json_is_string(json_object_get(network, "cidr_block")))
            return empty_value(
                p,
                json_object_get(json_array_get(json_object_get(json_object_get(m, "raw"),
                                                               "master_authorized_networks"),
                                               ni),
                                "cidr_block"),
                m, "master_authorized_networks[].cidr_block", "YOUR-IP/32");
    }
    gc_cloud_step *s = add_step(p, GC_CLOUD_CLUSTER, p->cluster, m);
    deploy_argv c = {0};
    deploy_argv_words(&c, "gcloud", "container", "clusters", "describe", p->cluster, NULL);
    deploy_argv_flag(&c, "project", p->project);
    deploy_argv_flag(&c, "location", p->location);
    deploy_argv_push(&c, gc_xstrdup("--format=value(name)"));
    s->check = c.items;

    deploy_argv b = {0};
    deploy_argv_words(&b, "gcloud", "container", "clusters", "create", p->cluster, NULL);
    deploy_argv_flag(&b, "project", p->project);
    deploy_argv_flag(&b, "location", p->location);
    const json_t *vpc = used_module(p->bp, m, SOURCE_VPC);
    char *net = vpc ? network_name(p, vpc) : NULL;
    json_t *subnets = vpc ? subnetworks_of(p, vpc) : NULL;
    deploy_argv_flag(&b, "network", string_of(p, m, "network_id", net));
    deploy_argv_flag(
        &b, "subnetwork",
        string_of(p, m, "subnetwork_self_link",
                  json_string_value(json_object_get(json_array_get(subnets, 0), "subnet_name"))));
    deploy_argv_words(&b, "--enable-ip-alias", NULL);
    deploy_argv_flag(&b, "cluster-secondary-range-name",
                     string_of(p, m, "pods_ip_range_name", "pods"));
    deploy_argv_flag(&b, "services-secondary-range-name",
                     string_of(p, m, "services_ip_range_name", "services"));
    deploy_argv_flag(&b, "release-channel",
                     release_channel(string_of(p, m, "release_channel", "UNSPECIFIED")));
    /* The module picks the newest version with version_prefix; GKE takes "1.35" to mean the
     * same. */
    const char *min_version = string_of(p, m, "min_master_version", NULL);
    char *version = min_version ? gc_xstrdup(min_version)
                                : gc_xstrdup(string_of(p, m, "version_prefix", "1.31."));
    size_t vlen = strlen(version);
    if (vlen && version[vlen - 1] == '.')
        version[vlen - 1] = '\0';
    deploy_argv_flag(&b, "cluster-version", version);
    free(version);
    char *pool = gc_xasprintf("%s.svc.id.goog", p->project);
    deploy_argv_flag(&b, "workload-pool", pool);
    free(pool);
    if (bool_of(p, m, "enable_shielded_nodes", true))
        deploy_argv_words(&b, "--enable-shielded-nodes", NULL);
    if (bool_of(p, m, "enable_private_nodes", true)) {
        deploy_argv_words(&b, "--enable-private-nodes", NULL);
        deploy_argv_flag(&b, "master-ipv4-cidr",
                         string_of(p, m, "master_ipv4_cidr_block", "172.16.0.32/28"));
    }
    if (bool_of(p, m, "enable_private_endpoint", true))
        deploy_argv_words(&b, "--enable-private-endpoint", NULL);
    /* The module always writes master_authorized_networks_config, which turns the feature on. */
    deploy_argv_words(&b, "--enable-master-authorized-networks", NULL);
    char *cidrs = join_strings(setting(p, m, "master_authorized_networks"), "cidr_block");
    if (*cidrs)
        deploy_argv_flag(&b, "master-authorized-networks", cidrs);
    else if (json_array_size(setting(p, m, "master_authorized_networks")) ||
             json_object_get(json_object_get(m, "unevaluated"), "master_authorized_networks"))
        note(p, m,
             "master_authorized_networks has no value (set authorized_cidr with --vars "
             "authorized_cidr=YOUR-IP/32)");
    free(cidrs);
    bool unknown_networks;
    json_t *extra_networks = additional_networks(p, m, &unknown_networks);
    bool multi_network = json_array_size(extra_networks) || unknown_networks;
    json_decref(extra_networks);
    const json_t *dataplane = setting(p, m, "enable_dataplane_v2");
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
        if (bool_of(p, m, addon_settings[i][0], addon_settings[i][2][0] == '1'))
            gc_buf_printf(&addons, ",%s", addon_settings[i][1]);
    deploy_argv_flag(&b, "addons", addons.data);
    gc_buf_free(&addons);
    char *labels = labels_of(p, m, "gke-cluster", "scheduler");
    deploy_argv_flag(&b, "labels", labels);
    free(labels);
    deploy_argv_flag(&b, "maintenance-window", string_of(p, m, "maintenance_start_time", "09:00"));
    deploy_argv_flag(&b, "logging", "SYSTEM,WORKLOAD");
    const json_t *max_pods = setting(p, m, "default_max_pods_per_node");
    if (json_is_integer(max_pods))
        deploy_argv_count(&b, "default-max-pods-per-node", (long)json_integer_value(max_pods));
    /* The bootstrap pool, deleted once the system pool exists (remove_default_node_pool). */
    deploy_argv_count(&b, "num-nodes", 1);
    char *sa = node_service_account(p, m);
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
        if (!bool_of(p, m, update_addons[i][0], false))
            continue;
        s = add_step(p, GC_CLOUD_CLUSTER_ADDON, update_addons[i][1], m);
        deploy_argv d = {0};
        deploy_argv_words(&d, "gcloud", "container", "clusters", "describe", p->cluster, NULL);
        deploy_argv_flag(&d, "project", p->project);
        deploy_argv_flag(&d, "location", p->location);
        char *format = gc_xasprintf("value(addonsConfig.%s.enabled)", update_addons[i][2]);
        deploy_argv_flag(&d, "format", format);
        free(format);
        s->check = d.items;
        s->present_output = gc_xstrdup("True");
        deploy_argv u = {0};
        deploy_argv_words(&u, "gcloud", "container", "clusters", "update", p->cluster, NULL);
        deploy_argv_flag(&u, "project", p->project);
        deploy_argv_flag(&u, "location", p->location);
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
        if (bool_of(p, m, unsupported[i][0], false))
            note(p, m,
                 "%s is true: gcloud (528) has no flag for %s; enable it in the console or "
                 "with a newer gcloud",
                 unsupported[i][0], unsupported[i][1]);
    if (json_array_size(setting(p, m, "maintenance_exclusions")))
        note(p, m,
             "maintenance_exclusions are not planned; add them with `gcloud container "
             "clusters update --add-maintenance-exclusion-name=...`");
    if (unknown_networks)
        note(p, m,
             "additional_networks: only $(VPC.instance_additional_networks) of a vpc "
             "module is planned, not this value");
    if (bool_of(p, m, "configure_workload_identity_sa", false))
        note(p, m,
             "configure_workload_identity_sa: the Kubernetes service account "
             "workload-identity-k8s-sa and its IAM binding are not planned");

    /* The system pool, exactly as the module makes it. */
    const char *system_name = string_of(p, m, "system_node_pool_name", "system");
    const char *image = string_of(p, m, "system_node_pool_image_type", "COS_CONTAINERD");
    bool secure_boot = bool_of(p, m, "system_node_pool_enable_secure_boot", true);
    char *pool_labels = labels_of(p, m, "gke-cluster", "scheduler");
    char *zones = join_strings(setting(p, m, "system_node_pool_zones"), NULL);
    if (bool_of(p, m, "system_node_pool_enabled", true)) {
        s = add_step(p, GC_CLOUD_NODE_POOL, system_name, m);
        pool_step_check(p, s, system_name);
        deploy_argv d = {0};
        deploy_argv_words(&d, "gcloud", "container", "node-pools", "create", system_name, NULL);
        deploy_argv_flag(&d, "project", p->project);
        deploy_argv_flag(&d, "cluster", p->cluster);
        deploy_argv_flag(&d, "location", p->location);
        deploy_argv_flag(&d, "node-locations", *zones ? zones : NULL);
        deploy_argv_flag(&d, "machine-type",
                         string_of(p, m, "system_node_pool_machine_type", "e2-standard-4"));
        const json_t *size = setting(p, m, "system_node_pool_disk_size_gb");
        deploy_argv_count(&d, "disk-size",
                          json_is_integer(size) ? (long)json_integer_value(size) : 100);
        deploy_argv_flag(&d, "disk-type", string_of(p, m, "system_node_pool_disk_type", NULL));
        const json_t *count = setting(p, m, "system_node_pool_node_count");
        long min = 2, max = 10;
        if (json_is_integer(json_object_get(count, "total_min_nodes")))
            min = (long)json_integer_value(json_object_get(count, "total_min_nodes"));
        if (json_is_integer(json_object_get(count, "total_max_nodes")))
            max = (long)json_integer_value(json_object_get(count, "total_max_nodes"));
        deploy_argv_count(&d, "num-nodes", *zones ? min : 1);
        deploy_argv_words(&d, "--enable-autoscaling", NULL);
        deploy_argv_count(&d, "total-min-nodes", min);
        deploy_argv_count(&d, "total-max-nodes", max);
        const json_t *taints = setting(p, m, "system_node_pool_taints");
        char *t = taints ? taints_of(taints)
                         : gc_xstrdup("components.gke.io/gke-managed-components=true:NoSchedule");
        deploy_argv_flag(&d, "node-taints", *t ? t : NULL);
        free(t);
        deploy_argv_words(&d, "--enable-autorepair", "--enable-autoupgrade", NULL);
        char *scopes = join_strings(setting(p, m, "service_account_scopes"), NULL);
        node_basics(&d, image, secure_boot, sa, *scopes ? scopes : SCOPE_CLOUD_PLATFORM);
        free(scopes);
        deploy_argv_flag(&d, "labels", pool_labels);
        s->create = d.items;
    }

    /* cpu-np: the Pathways head pool the module adds with enable_pathways_for_tpus. */
    if (p->bp->pathways) {
        s = add_step(p, GC_CLOUD_NODE_POOL, p->head_pool, m);
        pool_step_check(p, s, p->head_pool);
        deploy_argv d = {0};
        deploy_argv_words(&d, "gcloud", "container", "node-pools", "create", p->head_pool, NULL);
        deploy_argv_flag(&d, "project", p->project);
        deploy_argv_flag(&d, "cluster", p->cluster);
        deploy_argv_flag(&d, "location", p->location);
        deploy_argv_flag(&d, "node-locations", *zones ? zones : NULL);
        deploy_argv_flag(&d, "machine-type", GC_PATHWAYS_HEAD_MACHINE);
        deploy_argv_count(&d, "num-nodes", 0);
        deploy_argv_words(&d, "--enable-autoscaling", NULL);
        deploy_argv_count(&d, "total-min-nodes", 0);
        deploy_argv_count(&d, "total-max-nodes", GC_PATHWAYS_HEAD_MAX);
        deploy_argv_words(&d, "--enable-autorepair", "--enable-autoupgrade", NULL);
        node_basics(&d, image, secure_boot, sa, SCOPE_CLOUD_PLATFORM);
        deploy_argv_flag(&d, "labels", pool_labels);
        s->create = d.items;
    }
    free(zones);
    free(pool_labels);

    s = add_step(p, GC_CLOUD_REMOVE_DEFAULT_POOL, "default-pool", m);
    pool_step_check(p, s, "default-pool");
    deploy_argv d = {0};
    deploy_argv_words(&d, "gcloud", "container", "node-pools", "delete", "default-pool", NULL);
    deploy_argv_flag(&d, "project", p->project);
    deploy_argv_flag(&d, "cluster", p->cluster);
    deploy_argv_flag(&d, "location", p->location);
    deploy_argv_words(&d, "--quiet", NULL);
    s->create = d.items;

    free(sa);
    free(net);
    json_decref(subnets);
    return 0;
}

/* The workload policy of a resource-policy module; the name is the module's, without the random
 * suffix Terraform adds, so that a rerun finds it. */
static int plan_workload_policy(planner *p, const json_t *m)
{
    const json_t *policy = setting(p, m, "workload_policy");
    const char *type = json_string_value(json_object_get(policy, "type"));
    if (!type)
        return 0;
    const char *name = string_of(p, m, "name", NULL);
    if (!name)
        return missing_value(p, m, "name", "tpu7x-workload-policy");
    const char *topology = json_string_value(json_object_get(policy, "accelerator_topology"));
    if (json_object_get(policy, "accelerator_topology") && !topology)
        return missing_value(p, m, "tpu_topology", "2x2x1");
    const char *region = string_of(p, m, "region", p->region);
    if (!region)
        return missing_value(p, m, "region", "us-central1");
    gc_cloud_step *s = add_step(p, GC_CLOUD_WORKLOAD_POLICY, name, m);
    deploy_argv c = {0};
    deploy_argv_words(&c, "gcloud", "compute", "resource-policies", "describe", name, NULL);
    deploy_argv_flag(&c, "project", p->project);
    deploy_argv_flag(&c, "region", region);
    deploy_argv_push(&c, gc_xstrdup("--format=value(name)"));
    s->check = c.items;
    deploy_argv d = {0};
    deploy_argv_words(&d, "gcloud", "compute", "resource-policies", "create", "workload-policy",
                      name, NULL);
    deploy_argv_flag(&d, "project", p->project);
    deploy_argv_flag(&d, "region", region);
    deploy_argv_flag(&d, "type", type);
    deploy_argv_flag(&d, "accelerator-topology", topology);
    deploy_argv_flag(&d, "max-topology-distance",
                     json_string_value(json_object_get(policy, "max_topology_distance")));
    s->create = d.items;
    if (json_string_value(json_object_get(policy, "accelerator_topology_mode")))
        note(p, m, "workload_policy.accelerator_topology_mode %s is not planned (no gcloud flag)",
             json_string_value(json_object_get(policy, "accelerator_topology_mode")));
    return 0;
}

/* Node pools of gke-node-pool modules */

/* The placement of a pool: its placement_policy, or the policy of a used resource-policy
 * module (type COMPACT, its name, its accelerator topology). */
static void placement_of(const planner *p, const json_t *m, const char **type, const char **name)
{
    const json_t *policy = setting(p, m, "placement_policy");
    *type = json_string_value(json_object_get(policy, "type"));
    *name = json_string_value(json_object_get(policy, "name"));
    const json_t *rp = used_module(p->bp, m, SOURCE_RESOURCE_POLICY);
    if (!*type && rp &&
        json_string_value(json_object_get(setting(p, rp, "workload_policy"), "type"))) {
        *type = "COMPACT";
        *name = string_of(p, rp, "name", NULL);
    }
}

char **gc_pool_create_argv(const gc_blueprint *bp, const gc_pool_spec *pool,
                           const gc_cloud_target *t)
{
    planner pl = {.bp = bp,
                  .project = t->project ? t->project : bp->project,
                  .cluster = t->cluster ? t->cluster : bp->cluster,
                  .location = t->location ? t->location : bp->region};
    planner *p = &pl;
    const json_t *m = module_by_id(bp, pool->module_id);
    deploy_argv b = {0};
    deploy_argv_words(&b, "gcloud", "container", "node-pools", "create", pool->name, NULL);
    deploy_argv_flag(&b, "project", p->project);
    deploy_argv_flag(&b, "cluster", p->cluster);
    deploy_argv_flag(&b, "location", p->location);
    deploy_argv_flag(&b, "node-locations", pool->zones ? pool->zones : bp->zone);
    deploy_argv_flag(&b, "machine-type", pool->machine_type);
    const json_t *disk = setting(p, m, "disk_size_gb");
    deploy_argv_count(&b, "disk-size",
                      json_is_integer(disk) ? (long)json_integer_value(disk) : 100);
    deploy_argv_flag(&b, "disk-type", string_of(p, m, "disk_type", NULL));

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

    bool queued = bool_of(p, m, "enable_queued_provisioning", false);
    bool flex = bool_of(p, m, "enable_flex_start", false);
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
    const json_t *affinity = setting(p, m, "reservation_affinity");
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
    deploy_argv_words(
        &b, bool_of(p, m, "auto_repair", true) ? "--enable-autorepair" : "--no-enable-autorepair",
        bool_of(p, m, "auto_upgrade", false) ? "--enable-autoupgrade" : "--no-enable-autoupgrade",
        NULL);
    char *sa = node_service_account(p, m);
    char *scopes = join_strings(setting(p, m, "service_account_scopes"), NULL);
    node_basics(&b, string_of(p, m, "image_type", "COS_CONTAINERD"),
                bool_of(p, m, "enable_secure_boot", true), sa,
                *scopes ? scopes : SCOPE_CLOUD_PLATFORM);
    free(scopes);
    free(sa);
    char *taints = taints_of(setting(p, m, "taints"));
    deploy_argv_flag(&b, "node-taints", *taints ? taints : NULL);
    free(taints);
    /* Kubernetes labels: the user's, and gke-queued for queued provisioning (GKE adds it to the
     * nodes, and the module writes it so Terraform sees no drift). */
    json_t *k8s = json_object();
    const json_t *user = setting(p, m, "kubernetes_labels");
    if (json_is_object(user))
        json_object_update(k8s, (json_t *)user);
    if (queued)
        json_object_set_new(k8s, "cloud.google.com/gke-queued", json_string("true"));
    char *node_labels = key_value_list(k8s);
    deploy_argv_flag(&b, "node-labels", *node_labels ? node_labels : NULL);
    free(node_labels);
    json_decref(k8s);
    pl.deployment = json_string_value(json_object_get(bp->vars, "deployment_name"));
    if (!pl.deployment)
        pl.deployment = bp->cluster;
    char *labels = labels_of(p, m, "gke-node-pool", "compute");
    deploy_argv_flag(&b, "labels", labels);
    free(labels);
    bool unknown_networks;
    json_t *extra_networks = m ? additional_networks(p, m, &unknown_networks) : NULL;
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
    const json_t *run = setting(p, m, "max_run_duration");
    if (json_is_integer(run)) {
        char *d = gc_xasprintf("%llds", (long long)json_integer_value(run));
        deploy_argv_flag(&b, "max-run-duration", d);
        free(d);
    }
    return b.items;
}

static int plan_pools(planner *p)
{
    const gc_blueprint *bp = p->bp;
    for (size_t i = 0; i < bp->pool_count; i++) {
        const gc_pool_spec *pool = &bp->pools[i];
        if (bp->pathways && !strcmp(pool->name, p->head_pool))
            continue; /* the cluster module's cpu-np */
        const json_t *m = module_by_id(bp, pool->module_id);
        /* A pool without zones gets the cluster's node locations, as gke-node-pool passes
         * node_locations = null; an empty $(vars.zone) in zones is refused where it is read. */
        const json_t *affinity = setting(p, m, "reservation_affinity");
        const char *consume =
            json_string_value(json_object_get(affinity, "consume_reservation_type"));
        const json_t *first = json_array_get(json_object_get(affinity, "specific_reservations"), 0);
        if (consume && !strcmp(consume, "SPECIFIC_RESERVATION") &&
            !json_is_string(json_object_get(first, "name"))) {
            const json_t *raw = json_object_get(
                json_array_get(json_object_get(json_object_get(json_object_get(m, "raw"),
                                                               "reservation_affinity"),
                                               "specific_reservations"),
                               0),
                "name");
            return empty_value(p, raw, m, "reservation_affinity.specific_reservations[0].name",
                               "RESERVATION-NAME");
        }
        gc_cloud_step *s = add_step(p, GC_CLOUD_NODE_POOL, pool->name, m);
        pool_step_check(p, s, pool->name);
        s->create = gc_pool_create_argv(bp, pool,
                                        &(gc_cloud_target){.project = p->project,
                                                           .cluster = p->cluster,
                                                           .location = p->location});
        bool unknown_networks = false;
        json_decref(m ? additional_networks(p, m, &unknown_networks) : NULL);
        if (unknown_networks)
            note(p, m,
                 "additional_networks of pool %s is not planned (only "
                 "$(VPC.instance_additional_networks) of a vpc module is)",
                 pool->name);
    }
    return 0;
}

int gc_cloud_plan_build(const gc_blueprint *bp, const gc_cloud_target *t, gc_cloud_plan *plan,
                        gc_error *err)
{
    memset(plan, 0, sizeof(*plan));
    planner p = {.bp = bp,
                 .plan = plan,
                 .project = t->project ? t->project : bp->project,
                 .cluster = t->cluster ? t->cluster : bp->cluster,
                 .location = t->location ? t->location : bp->region,
                 .region = bp->region,
                 .head_pool = t->head_pool ? t->head_pool : GC_PATHWAYS_HEAD_POOL,
                 .err = err};
    p.deployment = json_string_value(json_object_get(bp->vars, "deployment_name"));
    if (!p.deployment)
        p.deployment = bp->cluster;
    size_t i;
    const json_t *m;
    json_array_foreach(bp->module_json, i, m)
    {
        if (source_is(m, SOURCE_CLUSTER))
            p.cluster_module = m;
    }
    bool any = false;
    json_array_foreach(bp->module_json, i, m)
    {
        any = any || gc_cloud_handles(json_string_value(json_object_get(m, "source")));
    }
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
    /* Networks, then accounts, then the cluster and its own pools, then policies and pools. */
    json_array_foreach(bp->module_json, i, m)
    {
        if (!rc && source_is(m, SOURCE_VPC))
            rc = plan_network(&p, m);
    }
    json_array_foreach(bp->module_json, i, m)
    {
        if (!rc && source_is(m, SOURCE_SERVICE_ACCOUNT))
            rc = plan_service_account(&p, m);
    }
    if (!rc && p.cluster_module)
        rc = plan_cluster(&p, p.cluster_module);
    json_array_foreach(bp->module_json, i, m)
    {
        if (!rc && source_is(m, SOURCE_RESOURCE_POLICY))
            rc = plan_workload_policy(&p, m);
    }
    if (!rc)
        rc = plan_pools(&p);
    if (rc)
        gc_cloud_plan_free(plan);
    return rc;
}

void gc_cloud_plan_free(gc_cloud_plan *plan)
{
    for (size_t i = 0; i < plan->count; i++) {
        free(plan->steps[i].name);
        free(plan->steps[i].module_id);
        free(plan->steps[i].present_output);
        gc_argv_free(plan->steps[i].check);
        gc_argv_free(plan->steps[i].create);
    }
    free(plan->steps);
    gc_strings_free(&plan->notes);
    memset(plan, 0, sizeof(*plan));
}

bool gc_cloud_handles(const char *source)
{
    static const char *const handled[] = {SOURCE_VPC, SOURCE_SERVICE_ACCOUNT, SOURCE_CLUSTER,
                                          SOURCE_RESOURCE_POLICY, SOURCE_NODE_POOL};
    json_t *m = json_pack("{s:s}", "source", source ? source : "");
    bool yes = false;
    for (size_t i = 0; i < sizeof(handled) / sizeof(*handled) && !yes; i++)
        yes = source_is(m, handled[i]);
    json_decref(m);
    return yes;
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
    };
    _Static_assert(sizeof(names) / sizeof(*names) == GC_CLOUD_CLUSTER_ADDON + 1,
                   "a name for every step kind");
    return names[kind];
}

/* The CheckpointConfiguration Cluster Toolkit's gke-cluster module applies for multi-tier
 * checkpointing (templates/mtc-config.yaml.tftpl on its cluster_mtc branch): named "default",
 * the in-memory volume size from mtc_cache_size (50Gi unless set) and the bucket checkpoints
 * go to. Without a bucket the module refuses the blueprint, so nothing is added then. */
void gc_cluster_objects(const gc_blueprint *bp, json_t *objects)
{
    planner p = {.bp = bp};
    p.deployment = json_string_value(json_object_get(bp->vars, "deployment_name"));
    if (!p.deployment)
        p.deployment = bp->cluster;
    size_t i;
    const json_t *m;
    /* Multi-networking: per additional gVNIC network a GKENetworkParamSet and a Network named
     * gvnic-1, gvnic-2, ... (templates/gke-network-paramset.yaml.tftpl and
     * network-object.yaml.tftpl of the gke-cluster module), so pods can ask for it. */
    json_array_foreach(bp->module_json, i, m)
    {
        if (!source_is(m, SOURCE_CLUSTER))
            continue;
        bool unknown;
        json_t *networks = additional_networks(&p, m, &unknown);
        size_t j;
        const json_t *net;
        json_array_foreach(networks, j, net)
        {
            char *name = gc_xasprintf("gvnic-%zu", j + 1);
            json_array_append_new(
                objects,
                json_pack("{s:s, s:s, s:{s:s}, s:{s:O, s:O, s:s}}", "apiVersion",
                          "networking.gke.io/v1", "kind", "GKENetworkParamSet", "metadata", "name",
                          name, "spec", "vpc", json_object_get(net, "network"), "vpcSubnet",
                          json_object_get(net, "subnetwork"), "deviceMode", "NetDevice"));
            json_array_append_new(
                objects, json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s, s:s, s:s}, s:s}}", "apiVersion",
                                   "networking.gke.io/v1", "kind", "Network", "metadata", "name",
                                   name, "spec", "parametersRef", "group", "networking.gke.io",
                                   "kind", "GKENetworkParamSet", "name", name, "type", "Device"));
            free(name);
        }
        json_decref(networks);
    }
    json_array_foreach(bp->module_json, i, m)
    {
        if (!source_is(m, SOURCE_CLUSTER) ||
            !bool_of(&p, m, "enable_multi_tier_checkpointing", false))
            continue;
        const char *bucket = string_of(&p, m, "mtc_target_bucket", NULL);
        if (!bucket)
            continue;
        json_array_append_new(objects, json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}}", "apiVersion",
                                                 "checkpointing.gke.io/v1", "kind",
                                                 "CheckpointConfiguration", "metadata", "name",
                                                 "default", "spec", "inMemoryVolumeSize",
                                                 string_of(&p, m, "mtc_cache_size", "50Gi"),
                                                 "cloudStorageBucketName", bucket));
    }
}
