/*
 * Renderers of the cluster reports (render_cluster.c).
 */
#ifndef GCLUSTER_CLI_RENDER_CLUSTER_H
#define GCLUSTER_CLI_RENDER_CLUSTER_H

#include "gcluster/cluster.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

/* `cluster list`: NAME LOCATION STATUS VERSION NODES; as JSON {project, clusters: [...]}. */
void cli_render_cluster_list(FILE *out, const gc_cluster_list *list);
json_t *cli_cluster_list_json(const gc_cluster_list *list);

/* `cluster describe` (and `job inspect` without a name, with `workloads`): the JobSet and Kueue
 * releases, the node pools, the queues with their usage. */
void cli_render_cluster(FILE *out, const gc_cluster_report *r, bool workloads);
/* `cluster info`: the queues' usage only. */
void cli_render_cluster_usage(FILE *out, const gc_cluster_report *r);
/* The report as one document: {jobset, kueue, nodes, nodePools, clusterQueues, localQueues,
 * workloads}, the node pools and workloads only when asked. */
json_t *cli_cluster_json(const gc_cluster_report *r, bool pools, bool workloads);

/* `cluster volume` (render_cluster_volume.c): NAME TYPE CLUSTER NAMESPACE STATUS; as JSON
 * {volumes: [...]}. */
void cli_render_cluster_volumes(FILE *out, const gc_cluster_volume_list *list, const char *cluster);
json_t *cli_cluster_volumes_json(const gc_cluster_volume_list *list);

#endif
