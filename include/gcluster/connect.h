/*
 * connect: `job connect`, the headless Pathways client path in one command.
 *
 * A JAX client outside the cluster talks to the IFRT proxy (port 29000) in the job's head pod.
 * gc_job_connect finds that pod from the JobSet's labels, waits until the proxy is ready, and
 * forwards every connection made to a local listener through the API server's port-forward to
 * it (gcluster/portforward.h), many at once. It heals: when the tunnel breaks (the API server
 * restarts, the network drops) a new one is opened, and when the head pod is replaced (the
 * JobSet restarted) new connections go to the new pod; connections that were open are closed,
 * and the client reconnects. It ends when the caller says so (stop_fd), when the command it runs
 * ends, or when the job ends.
 */
#ifndef GCLUSTER_CONNECT_H
#define GCLUSTER_CONNECT_H

#include "gcluster/error.h"
#include "gcluster/events.h"
#include "gcluster/kube.h"

#include <stdbool.h>

/* The IFRT proxy's port in the head pod, and the local port job connect listens on by default
 * (the client's JAX_BACKEND_TARGET then looks as it would inside the cluster). */
#define GC_CONNECT_PROXY_PORT 29000
/* How long the head pod may take to be ready: a cold head pool scales up from zero nodes, which
 * takes minutes on GKE. */
#define GC_CONNECT_DEFAULT_WAIT "20m"

/* The variable that makes jaxlib's IFRT proxy client (and the proxy server) use plaintext gRPC
 * instead of ALTS, when it is exactly "true". ALTS needs Google Cloud's metadata server, so a
 * client elsewhere fails with "Invalid credentials" before it sends a byte; and a plaintext
 * client cannot talk to an ALTS server, nor the other way round. job connect sets it for CMD (and
 * prints it) when the head pod's proxy container has it "true", and otherwise says what the
 * client needs. */
#define GC_CONNECT_INSECURE_ENV "IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS"

typedef struct gc_connect_request {
    const char *name;
    const char *address; /* --address: where to listen; NULL: 127.0.0.1 */
    long local_port;     /* --local-port (0: any free port) */
    /* --port [LOCAL:]REMOTE, repeatable: more ports of the same pod (a Jupyter or VS Code
     * server), each on its own local port (0, or :REMOTE: any free one) on --address. */
    const char *const *ports;
    size_t port_count;
    const char *wait;     /* --wait: a duration; NULL: GC_CONNECT_DEFAULT_WAIT */
    char *const *command; /* -- CMD [ARGS...], NULL-terminated, run with the JAX variables set;
                             NULL: none */
    /* Readable when the caller wants connect to end: one byte, the signal number (SIGINT,
     * SIGTERM). Without a command connect then closes everything and returns 0; with one, the
     * command is told (SIGINT reaches it from the terminal; other signals are passed on) and
     * connect ends with it. -1: none. */
    int stop_fd;
    /* A Shared Pathways Service client's proxy Job (gc_sps_run): connect forwards to its pod
     * instead of a JobSet's head pod, and the Job's end ends connect. NULL: `name` is a JobSet. */
    const char *proxy_job;
} gc_connect_request;

/* Where a JAX client finds the proxy once the tunnel works. */
typedef struct gc_connect_ready {
    const char *pod;    /* the head pod forwarded to */
    const char *listen; /* "127.0.0.1:29000", as bound */
    /* "JAX_PLATFORMS=proxy", "JAX_BACKEND_TARGET=grpc://HOST:PORT", and
     * "IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS=true" when the proxy serves plaintext gRPC;
     * NULL-terminated. */
    const char *const *env;
} gc_connect_ready;

typedef struct gc_connect_hooks {
    /* Once, when the first tunnel carries connections (before the command starts). */
    void (*ready)(void *ctx, const gc_connect_ready *ready);
    void *ctx;
    /* At every check on the job (every few seconds), with tick_ctx: a client's chores, such as
     * keeping its SPS proxy's deadline ahead. NULL: none. */
    void (*tick)(void *tick_ctx);
    void *tick_ctx;
} gc_connect_hooks;

typedef struct gc_connect_result {
    bool command_ran;
    int command_status; /* the command's exit status; 128 + N when signal N ended it */
} gc_connect_result;

/* Every check of the request before anything is sent: the name, --address, --local-port,
 * --port (the form, no local port twice nor the proxy's), --wait, that the command can be found.
 * GC_EXIT_USAGE. */
int gc_job_connect_check(const gc_connect_request *r, gc_error *err);

/* Runs connect until it ends (see above). Progress while waiting (queued, admitted, head pod
 * running, proxy ready) and one line per heal go to `ev`. Returns 0 when the caller stopped it
 * or the command ended (result->command_status says how); GC_EXIT_RUNTIME when the job ended
 * (succeeded, failed or cancelled: the message says which), the head pod was not ready within
 * --wait, or the local address cannot be used; GC_EXIT_USAGE for a bad request. */
int gc_job_connect(gc_kube *kube, const gc_connect_request *r, const gc_connect_hooks *hooks,
                   const gc_events *ev, gc_connect_result *result, gc_error *err);

/*
 * `job submit --pathways-run-sps-workload`: one client of a Shared Pathways Service (see
 * gcluster/sps.h and src/connect/sps_run.c). Its own proxy Job is created for it, waits its turn
 * for the service's slices, is reached through job connect's tunnel, and is deleted when the
 * client ends; a client killed outright leaves it for GC_SPS_LEASE_SECONDS at most.
 */
typedef struct gc_sps_run_request {
    const char *service; /* --pathways-service: the service's name, or its resource
                            manager's address (NAME-pathways-head-0-0.NAME:29001) */
    /* The slice shape asked for ("tpuv6e:4x4", resolved by the caller from --compute-type and
     * --topology, which `shape_flags` spells as given for messages): it must be the service's.
     * NULL: the service's shape. */
    const char *instance_type;
    const char *shape_flags;
    long slices;                  /* --num-slices: how many of the service's slices (default 1) */
    const char *proxy_image;      /* --pathways-proxy-server-image: of the server's release; NULL:
                                     the service's own */
    const char *user;             /* who asks ($USER): names the proxy Job */
    const char *const *proxy_env; /* --pathways-proxy-env KEY=VALUE */
    size_t proxy_env_count;
    const char *proxy_args; /* --pathways-proxy-args, split on whitespace */
    /* Where to listen, how long to wait, the command (NULL: keep the tunnel open until
     * stopped), the stop descriptor; name and proxy_job are filled in. */
    gc_connect_request connect;
} gc_sps_run_request;

/* Every check that needs no cluster. GC_EXIT_USAGE. */
int gc_sps_run_check(const gc_sps_run_request *r, gc_error *err);

/* Runs the client to its end. GC_EXIT_USAGE, before anything is created, when the service does
 * not exist or is not one, the slices asked for are of another shape or more than it has, or the
 * proxy image is of another release than its server; otherwise as gc_job_connect. */
int gc_sps_run(gc_kube *kube, const gc_sps_run_request *r, const gc_connect_hooks *hooks,
               const gc_events *ev, gc_connect_result *result, gc_error *err);

#endif
