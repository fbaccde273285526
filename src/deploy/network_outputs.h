/*
 * The outputs of Cluster Toolkit's network modules (vpc, multivpc, gpu-rdma-vpc), modelled from
 * their settings so that expressions over them ($(net.instance_additional_networks),
 * $(concat([{network = net.network_name, ...}], rdma.subnetwork_interfaces_gke))) evaluate to
 * what Terraform would compute, and the cluster module's network objects follow from them.
 */
#ifndef GCLUSTER_DEPLOY_NETWORK_OUTPUTS_H
#define GCLUSTER_DEPLOY_NETWORK_OUTPUTS_H

#include "gcluster/deploy.h"

#include <jansson.h>
#include <stdbool.h>

/* Whether a module source ("modules/x/y", "github.com/...//modules/x/y?ref=v1") is module
 * `path` ("modules/network/vpc"). */
bool deploy_source_is(const char *source, const char *path);

/* A blueprint variable's value (a new reference), or NULL when it has none. */
typedef json_t *(*deploy_var_fn)(void *ctx, const char *name);

/* Output `name` of network module `m` (settings evaluated; a setting it leaves out is the
 * variable of that name, as the toolkit wires variables): a new reference, or NULL when `m` is
 * not a network module, the output is not modelled or an input it needs is not known. */
json_t *deploy_network_output(const gc_bp_module *m, const char *name, deploy_var_fn var,
                              void *ctx);

#endif
