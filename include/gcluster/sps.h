/*
 * sps: a Shared Pathways Service and the clients attached to it, as the cluster shows them.
 *
 * The service is a JobSet annotated gcluster.google.com/pathways=sps; each client is a proxy
 * Job labelled gcluster.google.com/sps-service=<service> (manifest.h). The resource manager
 * hands out the service's slices; gcluster keeps the line in front of it: a client's proxy pod
 * is created behind a scheduling gate, and its client lifts the gate (after marking its Job
 * "holding") only when it is first in line and enough slices are free. So who holds the TPUs
 * and who waits, in what order, is on the proxy Jobs themselves, for `job why`, `job list`,
 * `job inspect` and `job cancel` to read.
 */
#ifndef GCLUSTER_SPS_H
#define GCLUSTER_SPS_H

#include "gcluster/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* On a proxy Job: "waiting" (its pod is gated) or "holding" (it has its slices). */
#define GC_ANNOTATION_SPS_STATE "gcluster.google.com/sps-state"

/* How long a client's proxy outlives the client: the client moves the Job's deadline this far
 * ahead of now every GC_SPS_RENEW_SECONDS; a client that dies without cleaning up (SIGKILL)
 * leaves its proxy until the deadline passes, and Kubernetes deletes the Job right after
 * (ttlSecondsAfterFinished 0). */
#define GC_SPS_LEASE_SECONDS 60
#define GC_SPS_RENEW_SECONDS 15

typedef struct gc_sps_client {
    char job[64];     /* the proxy Job */
    char user[64];    /* who runs it */
    char created[40]; /* its creationTimestamp */
    int slices;       /* slices it asked for */
    bool waiting;     /* in line, not holding */
    bool ended;       /* finished or being deleted: holds nothing */
} gc_sps_client;

typedef struct gc_sps_usage {
    char service[64];
    int slices;             /* the service's slices (its worker replicas) */
    char instance_type[64]; /* "tpuv6e:4x4", from the resource manager's --instance_type */
    char server_image[512]; /* the resource manager's image */
    char gcs_location[512]; /* its --gcs_scratch_location */
    char head_pool[64];     /* the head pod's node pool */
    char address[160];      /* the resource manager: <service>-pathways-head-0-0.<service>:29001 */
    gc_sps_client *clients; /* oldest first; ended ones left out */
    size_t count;
    int held; /* slices held by clients that are not waiting */
} gc_sps_usage;

/* Reads a service JobSet and the list of its proxy Jobs (a JobList, or NULL). GC_EXIT_USAGE when
 * `jobset` is not a service. Free with gc_sps_usage_free. */
int gc_sps_usage_read(const json_t *jobset, const json_t *proxy_jobs, gc_sps_usage *u,
                      gc_error *err);
void gc_sps_usage_free(gc_sps_usage *u);

/* Only the clients of `service`, from the list of its proxy Jobs (a JobList, or NULL): u->count,
 * u->clients and u->held; the rest stays empty. */
void gc_sps_clients_of(const char *service, const json_t *proxy_jobs, gc_sps_usage *u);

/* The client whose Job is `job`, or NULL. */
const gc_sps_client *gc_sps_find(const gc_sps_usage *u, const char *job);

/* Whether `job`, waiting, may take its slices now: it is first in line and they are free. */
bool gc_sps_may_start(const gc_sps_usage *u, const char *job);

/* One line on why `job` waits: "1 of 2 slices asked for; both held by isc-proxy-ada-k2j4q (ada,
 * 1 slice) and isc-proxy-bob-77x1p (bob, 1 slice); first in line" (no trailing period). */
void gc_sps_wait_reason(const gc_sps_usage *u, const char *job, char *out, size_t size);

typedef struct gc_kube gc_kube;

/* Reads service `service` and its clients. GC_EXIT_USAGE when there is no such job or it is not
 * a service (err->http_status 404 when there is none). */
int gc_sps_read_service(gc_kube *kube, const char *service, gc_sps_usage *u, gc_error *err);

/* Reads client `job` (a proxy Job), its service and the service's clients; *service_out is
 * GC_EXIT_USAGE with err->http_status 404 when `job` is no proxy Job. */
int gc_sps_read_client(gc_kube *kube, const char *job, gc_sps_usage *u, gc_error *err);

#endif
