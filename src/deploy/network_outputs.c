/*
 * The outputs of the toolkit's network modules as their Terraform computes them (see
 * network_outputs.h), and the one test of a module's source.
 */
#include "deploy/network_outputs.h"
#include "deploy/expr.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Sources may be local ("modules/x/y") or remote ("github.com/...//modules/x/y?ref=v1.50.0"). */
bool deploy_source_is(const char *source, const char *path)
{
    if (!source)
        return false;
    size_t len = strcspn(source, "?"), plen = strlen(path);
    while (len && source[len - 1] == '/')
        len--;
    return len >= plen && !strncmp(source + len - plen, path, plen) &&
           (len == plen || source[len - plen - 1] == '/');
}

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
    if (v && deploy_unknown_name(v)) {
        in->unknown = true;
        return NULL;
    }
    if (v)
        return json_is_null(v) ? NULL : json_incref(v);
    v = in->var ? in->var(in->ctx, key) : NULL;
    if (v && deploy_unknown_name(v)) {
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
    if (deploy_source_is(m->source, "modules/network/vpc"))
        out = vpc_output(&in, name);
    else if (deploy_source_is(m->source, "modules/network/multivpc"))
        out = multivpc_output(&in, name);
    else if (deploy_source_is(m->source, "modules/network/gpu-rdma-vpc"))
        out = rdma_vpc_output(&in, name);
    if (in.unknown) {
        json_decref(out);
        return NULL;
    }
    return out;
}
