/*
 * job: the workload commands, joining the catalog, the manifest builders and the kube client.
 *
 * A submit starts from a gc_submit_request (what the user typed, as strings), which
 * gc_submit_prepare() validates completely (SPEC §3: every check that needs no cluster) and
 * resolves into a gc_workload. Nothing is sent to a cluster before that succeeds.
 */
#ifndef GCLUSTER_JOB_H
#define GCLUSTER_JOB_H

#include "gcluster/buf.h"
#include "gcluster/catalog.h"
#include "gcluster/error.h"
#include "gcluster/manifest.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define GC_REQUEST_LIST_MAX 64

/* `job submit` flags, as typed (SPEC §3; Google's gcluster names and short forms). */
typedef struct gc_submit_request {
    const char *name;
    const char *image;
    const char *base_image;
    const char *build_context;
    const char *platform;
    const char *command;
    const char *compute_type;
    const char *topology;
    const char *dry_run_out; /* file or "-" */
    const char *dry_run;     /* "server" or "client" */
    const char *mounts[GC_REQUEST_LIST_MAX];
    size_t mount_count;
    const char *queue;
    long num_nodes;
    bool num_nodes_set;
    long num_slices;
    long restarts;
    const char *ttl_after_finished;
    const char *grace_period;
    bool disable_parallel_containers;
    const char *placement_policy;
    const char *node_constraints[GC_REQUEST_LIST_MAX];
    size_t node_constraint_count;
    const char *cpu_affinity;
    const char *restart_on_exit_codes[GC_REQUEST_LIST_MAX];
    size_t restart_on_exit_code_count;
    const char *image_pull_secret;
    const char *service_account;
    const char *scheduler;
    bool await_completion;
    const char *timeout;
    const char *priority;
    bool verbose;
    const char *nap_provisioning;
    const char *nap_reservation;

    bool pathways;
    const char *pathways_proxy_image;
    const char *pathways_server_image;
    const char *pathways_worker_image;
    bool pathways_headless;
    const char *pathways_gcs_location;
    long pathways_elastic_slices;
    bool pathways_elastic_slices_set;
    long pathways_max_slice_restarts;
    bool pathways_max_slice_restarts_set;
    const char *pathways_proxy_args;
    const char *pathways_server_args;
    const char *pathways_worker_args;
    const char *pathways_sidecar_image;
    const char *pathways_head_np;
} gc_submit_request;

/* Google's defaults for the numeric and duration flags. */
void gc_submit_request_defaults(gc_submit_request *r);

/* Validates the request and resolves it into `w` (which the caller frees with
 * gc_workload_free). `cluster` describes the cluster's TPU nodes, or is NULL offline.
 * Returns GC_EXIT_USAGE with one clear message on bad input. */
int gc_submit_prepare(const gc_submit_request *r, const gc_cluster_shapes *cluster,
                      gc_workload *w, gc_error *err);

/* Parses "90s", "5m", "1h", "1h30m", "2h0m5s" or plain seconds ("3600"). */
int gc_parse_duration(const char *flag, const char *text, long *seconds, gc_error *err);

/* DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a
 * letter or digit. */
bool gc_is_dns1035_label(const char *s);

/* The YAML a dry run writes: a comment saying which values were defaulted rather than
 * discovered, then the JobSet. Byte-for-byte stable for a given request. */
int gc_submit_render_offline(const gc_workload *w, gc_buf *out, gc_error *err);

#endif
