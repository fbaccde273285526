/*
 * job connect's extra ports (--port LOCAL:REMOTE): a Jupyter or VS Code server in the head pod,
 * reached like the proxy. Each has its own local listener and its own tunnel to the same pod as
 * the proxy's; a tunnel that breaks is reopened on its own, and all follow the proxy's target
 * (dropped when the pod goes, opened to its successor).
 */
#ifndef GCLUSTER_CONNECT_PORTS_H
#define GCLUSTER_CONNECT_PORTS_H

#include "gcluster/connect.h"
#include "gcluster/portforward.h"

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct connect_port {
    long local;  /* as asked; 0: any free port */
    long remote; /* in the pod */
    gc_kube_forwarder *fwd;
    char listen[96]; /* "127.0.0.1:8888" as bound */
    long long reopen_at_ms;
    int reopen_failures;
    bool healing;
    long long failure_reported_ms;
} connect_port;

typedef struct connect_ports {
    connect_port *items;
    size_t count;
} connect_ports;

/* Checks r->ports (the --port values): each [LOCAL:]REMOTE or :REMOTE, ports in range, no local
 * port twice nor the proxy's --local-port. `out` (NULL: only check) gets them. GC_EXIT_USAGE. */
int connect_ports_parse(const gc_connect_request *r, connect_ports *out, gc_error *err);

/* Binds every listener (before anything is waited for). GC_EXIT_RUNTIME when one cannot. */
int connect_ports_listen(connect_ports *p, const struct sockaddr *addr, socklen_t len,
                         const char *address, gc_error *err);

/* Opens a tunnel to `pod` for every port that has none and is due (`all`: every one, now), and
 * says so. Non-zero only for a refusal the API server will not change its mind about. */
int connect_ports_open(connect_ports *p, gc_kube *kube, const char *pod, const char *what,
                       int cancel_fd, bool all, const gc_events *ev, gc_error *err);
/* The target pod is gone: every tunnel ends. Returns the connections they carried. */
size_t connect_ports_drop(connect_ports *p);

void connect_ports_poll(connect_ports *p, struct pollfd **fds, size_t *count, size_t *cap);
/* The longest wait before connect_ports_serve or _open must run again, at most `t`. */
int connect_ports_timeout(const connect_ports *p, bool forwarding, long long now, int t);
/* Moves the bytes; a tunnel that broke is reopened soon. */
void connect_ports_serve(connect_ports *p, const struct pollfd *fds, const char *pod,
                         const char *what, const gc_events *ev);
void connect_ports_free(connect_ports *p);

#endif
