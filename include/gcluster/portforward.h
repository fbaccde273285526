/*
 * portforward: a pod's port reached through the API server, as `kubectl port-forward` does it,
 * for a caller that runs its own poll loop (job connect forwards many local connections while it
 * keeps an eye on its job). Nothing here blocks but opening a tunnel: the tunnel's socket and the
 * client's background reads (gcluster/kube.h) are waited on together with the caller's own file
 * descriptors.
 *
 * A tunnel is one connection to the API server, opened with the client's TLS, proxy and
 * credentials like every request and traced the same way (-v, credentials redacted):
 * GET .../pods/POD/portforward?ports=PORT upgraded to a WebSocket that carries SPDY/3.1
 * (Kubernetes >= 1.31), or, when the API server refuses the WebSocket, POST upgraded to SPDY/3.1
 * directly. One tunnel carries many forwarded TCP connections at once, each byte for byte in
 * both directions, with half-close. Creating one needs RBAC `create` on pods/portforward.
 *
 * The server side has no flow control: whatever is sent is buffered by the API server and the
 * kubelet, and a connection whose reader is slow holds up every other connection of its tunnel.
 * So the forwarder below bounds both directions: it reads its local sockets only while the
 * tunnel's send queue is small, and holds the tunnel while one of its local sockets does not
 * take the bytes the pod sends. The tunnel's own functions are kube/'s (kube/tunnel/internal.h):
 * only the forwarder calls them.
 */
#ifndef GCLUSTER_PORTFORWARD_H
#define GCLUSTER_PORTFORWARD_H

#include "gcluster/error.h"
#include "gcluster/kube.h"

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct gc_kube_tunnel gc_kube_tunnel;

typedef enum gc_tunnel_event_type {
    GC_TUNNEL_OPENED,   /* the pod side took the connection: its bytes may be sent now */
    GC_TUNNEL_DATA,     /* bytes from the pod side */
    GC_TUNNEL_PEER_FIN, /* the pod side sends nothing more (half-close) */
    GC_TUNNEL_CLOSED,   /* the connection is over and its id is gone */
} gc_tunnel_event_type;

typedef struct gc_tunnel_event {
    gc_tunnel_event_type type;
    uint32_t conn;    /* the connection, as kube_tunnel_connect returned it */
    void *user;       /* what the caller gave kube_tunnel_connect */
    const void *data; /* DATA: valid during the callback only */
    size_t len;
    /* CLOSED: why it failed (the pod side's error text, a reset, the tunnel ending), or NULL
     * after a clean end in both directions. */
    const char *text;
} gc_tunnel_event;

/* Called from kube_tunnel_pump, and with CLOSED from kube_tunnel_shutdown when that
 * completes a connection. It may call kube_tunnel_connect, _send, _shutdown and _reset, but
 * not _pump or _close. */
typedef void (*gc_tunnel_event_fn)(void *ctx, const gc_tunnel_event *ev);

typedef struct gc_tunnel_options {
    const char *pod; /* in the client's namespace */
    uint16_t port;
    long long deadline_ms; /* gc_clock_ms() time by which the API server must have answered */
    int cancel_fd;         /* opening gives up once this is readable (Ctrl-C); -1: none */
    gc_tunnel_event_fn on_event;
    void *ctx;
} gc_tunnel_options;

/* --- the forwarder: a local listener whose connections a tunnel carries -------------------- */

/* What `kubectl port-forward` does with a tunnel, for a caller that runs its own poll loop and
 * decides itself where the tunnel goes and when a new one is needed: it accepts local TCP
 * connections, forwards each through the tunnel as its own connection, byte for byte in both
 * directions with half-close, and bounds the bytes both ways (a local client is read only while
 * the tunnel's send queue is short; the tunnel is held while a local client falls behind). */
typedef struct gc_kube_forwarder gc_kube_forwarder;

/* Listens on `addr` (bound before anything else is waited for, so a port in use fails at once).
 * 0, or the errno of what failed (EADDRINUSE: the port is taken). */
int gc_kube_forwarder_listen(const struct sockaddr *addr, socklen_t len, gc_kube_forwarder **out);
/* The listener's address as bound (a port 0 is the port the system chose). */
void gc_kube_forwarder_bound(const gc_kube_forwarder *f, struct sockaddr_storage *bound);

/* Opens a tunnel (kube_tunnel_open with `o`, whose on_event and ctx are the forwarder's own)
 * for the connections accepted from now on; there is none before, and none after a drop. */
int gc_kube_forwarder_open(gc_kube_forwarder *f, gc_kube *kube, const gc_tunnel_options *o,
                           gc_error *err);
bool gc_kube_forwarder_has_tunnel(const gc_kube_forwarder *f);
/* Ends the tunnel; its connections are closed once the bytes for them are delivered. Returns how
 * many were open. */
size_t gc_kube_forwarder_drop(gc_kube_forwarder *f);

/* Appends the forwarder's descriptors to the caller's poll set (*fds grows, *cap with it): the
 * listener while a tunnel takes connections, the local connections, the tunnel's socket. */
void gc_kube_forwarder_poll(gc_kube_forwarder *f, struct pollfd **fds, size_t *count, size_t *cap);
/* The longest wait before gc_kube_forwarder_serve must run again; -1: nothing is due. */
int gc_kube_forwarder_timeout_ms(const gc_kube_forwarder *f);
/* After poll over that set: moves the bytes, accepts new connections. Returns GC_EXIT_RUNTIME
 * when the tunnel broke or the server is going away (err says which; *open is how many
 * connections it carried), after dropping it; 0 otherwise. */
int gc_kube_forwarder_serve(gc_kube_forwarder *f, const struct pollfd *fds, size_t *open,
                            gc_error *err);
/* Connections the pod side refused or broke since the last call (not those a broken tunnel
 * took with it), and the last one's reason in `last`. */
unsigned gc_kube_forwarder_failures(gc_kube_forwarder *f, char *last, size_t size);
/* Closes the connections, the tunnel and the listener. */
void gc_kube_forwarder_free(gc_kube_forwarder *f);

#endif
