/*
 * job connect's view of its job, from one round of reads (connect.c runs the rounds). Internal
 * to connect/.
 */
#ifndef GCLUSTER_CONNECT_CONNECT_STATUS_H
#define GCLUSTER_CONNECT_CONNECT_STATUS_H

#include <jansson.h>
#include <stdbool.h>

typedef enum connect_state {
    JOB_CONNECT_WAIT,  /* no head pod whose proxy is ready (yet): `text` says what is awaited */
    JOB_CONNECT_READY, /* `pod` is the head pod, its proxy ready */
    JOB_CONNECT_ENDED, /* the job is over, or never had a proxy: `text` says why */
} connect_state;

/* How the head pod's IFRT proxy serves gRPC, from its pathways-proxy container's environment.
 * The proxy server (like jaxlib's client) uses plaintext gRPC only when
 * IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS is exactly "true"; otherwise ALTS, which only works
 * between machines on Google Cloud. */
typedef enum connect_proxy_credentials {
    JOB_PROXY_ALTS,      /* the variable is not set, or not to "true" */
    JOB_PROXY_PLAINTEXT, /* IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS=true */
    JOB_PROXY_UNKNOWN,   /* it may come from a ConfigMap or Secret (valueFrom, envFrom) */
} connect_proxy_credentials;

typedef struct connect_view {
    connect_state state;
    char pod[256];
    char uid[64];
    connect_proxy_credentials credentials; /* of `pod`'s proxy, when READY */
    bool queued;                           /* waiting for Kueue: its Workload says why */
    char text[1024];
} connect_view;

/* Judges the job `name` by its JobSet (NULL: there is none), the pods of its pathways-head
 * replicated job (a PodList) and, when it is queued, its Kueue Workloads (a list, or NULL). Of
 * several head pods (a restart's old one still terminating) the newest that is not going away
 * counts. */
void connect_judge(const char *name, const json_t *jobset, const json_t *head_pods,
                   const json_t *workloads, connect_view *view);

/* Judges an SPS client's proxy Job `job` (NULL: there is none) and its pods the same way. */
void connect_judge_proxy(const char *job, const json_t *proxy_job, const json_t *pods,
                         connect_view *view);

/* The credentials the IFRT proxy of `pod` (a head pod) serves with. */
connect_proxy_credentials connect_proxy_credentials_of(const json_t *pod);

#endif
