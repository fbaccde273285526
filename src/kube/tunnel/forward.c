/*
 * The forwarder (gcluster/portforward.h): a local listener whose connections are carried by a
 * tunnel, for a caller that runs its own poll loop. It knows sockets and the tunnel, nothing of
 * what is on the other side.
 *
 * Bytes are bounded both ways, because the server side has no flow control: a local client is
 * read only while the tunnel's send queue is short, and the tunnel is held (not read) while a
 * local client lets the bytes for it pile up. A client's end of file is passed on as a
 * half-close; the pod side's as shutdown(SHUT_WR) once its bytes are delivered.
 */
#include "gcluster/portforward.h"
#include "kube/tunnel/internal.h"

#include "gcluster/buf.h"
#include "gcluster/error.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHUNK            (64 * 1024)
#define TUNNEL_QUEUE_MAX (1024 * 1024) /* local clients are not read above this */
#define READS_PER_TURN   4             /* chunks from one local client per turn */
/* The tunnel is held while a local client is this far behind. */
#define CLIENT_BACKLOG_MAX (4 * 1024 * 1024)
#define ACCEPT_PER_TURN    64
#define LISTEN_BACKLOG     512

typedef struct client {
    int fd;
    uint32_t conn;
    bool linked;     /* conn is a connection of the current tunnel */
    bool opened;     /* the pod side took it: the local socket may be read */
    bool local_eof;  /* the local client sends nothing more (passed on) */
    bool remote_fin; /* the pod side sends nothing more: shut our write side once flushed */
    bool write_shut;
    bool done;  /* the forwarded connection is over: close once flushed */
    bool fresh; /* bytes arrived for it in this turn */
    bool dead;  /* closed: to be swept */
    gc_buf out; /* bytes from the pod side not yet taken by the local socket */
    size_t out_at;
} client;

struct gc_kube_forwarder {
    int listen_fd;
    gc_kube_tunnel *tunnel;
    client **clients;
    size_t client_count, client_cap;
    unsigned failures;
    char failure[256];

    /* The entries of the caller's poll set added by gc_kube_forwarder_poll. */
    size_t first;
    client **owner; /* per entry: its client, or NULL */
    size_t owner_count, owner_cap;
    long listener, tunnel_at; /* their entries, or -1 */
};

int gc_kube_forwarder_listen(const struct sockaddr *addr, socklen_t len, gc_kube_forwarder **out)
{
    *out = NULL;
    int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, addr, len) != 0 || listen(fd, LISTEN_BACKLOG) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return e ? e : EINVAL;
    }
    gc_kube_forwarder *f = gc_xcalloc(1, sizeof(*f));
    f->listen_fd = fd;
    f->listener = f->tunnel_at = -1;
    *out = f;
    return 0;
}

void gc_kube_forwarder_bound(const gc_kube_forwarder *f, struct sockaddr_storage *bound)
{
    socklen_t len = sizeof(*bound);
    memset(bound, 0, sizeof(*bound));
    getsockname(f->listen_fd, (struct sockaddr *)bound, &len);
}

static void client_close(gc_kube_forwarder *f, client *cl)
{
    if (cl->linked && f->tunnel)
        kube_tunnel_reset(f->tunnel, cl->conn);
    cl->linked = false;
    if (cl->fd >= 0)
        close(cl->fd);
    cl->fd = -1;
    cl->dead = true;
}

/* Hands the local client what it takes now; false when it is gone. */
static bool flush(gc_kube_forwarder *f, client *cl)
{
    while (cl->out_at < cl->out.len) {
        ssize_t n = send(cl->fd, cl->out.data + cl->out_at, cl->out.len - cl->out_at,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return true;
        if (n <= 0) {
            client_close(f, cl);
            return false;
        }
        cl->out_at += (size_t)n;
    }
    gc_buf_reset(&cl->out);
    cl->out_at = 0;
    if (cl->done) {
        client_close(f, cl);
        return false;
    }
    if (cl->remote_fin && !cl->write_shut) {
        shutdown(cl->fd, SHUT_WR);
        cl->write_shut = true;
    }
    return true;
}

static void on_tunnel_event(void *ctx, const gc_tunnel_event *ev)
{
    gc_kube_forwarder *f = ctx;
    client *cl = ev->user;
    switch (ev->type) {
    case GC_TUNNEL_OPENED:
        cl->opened = true;
        break;
    case GC_TUNNEL_DATA:
        /* Sent once the tunnel's input is read (flush_fresh): one send for many frames. */
        gc_buf_append(&cl->out, ev->data, ev->len);
        cl->fresh = true;
        break;
    case GC_TUNNEL_PEER_FIN:
        cl->remote_fin = true;
        flush(f, cl);
        break;
    case GC_TUNNEL_CLOSED:
        cl->linked = false;
        cl->done = true;
        if (ev->text) {
            f->failures++;
            snprintf(f->failure, sizeof(f->failure), "%s", ev->text);
        }
        if (!cl->dead)
            flush(f, cl);
        break;
    }
}

int gc_kube_forwarder_open(gc_kube_forwarder *f, gc_kube *kube, const gc_tunnel_options *o,
                           gc_error *err)
{
    gc_tunnel_options mine = *o;
    mine.on_event = on_tunnel_event;
    mine.ctx = f;
    return kube_tunnel_open(kube, &mine, &f->tunnel, err);
}

bool gc_kube_forwarder_has_tunnel(const gc_kube_forwarder *f)
{
    return f->tunnel != NULL;
}

/* The closed clients stay in the list until the turn ends (sweep_clients): the turn's poll set
 * still points at them. */
size_t gc_kube_forwarder_drop(gc_kube_forwarder *f)
{
    size_t open = 0;
    for (size_t i = 0; i < f->client_count; i++) {
        client *cl = f->clients[i];
        if (cl->dead)
            continue;
        open++;
        if (cl->linked && f->tunnel)
            kube_tunnel_reset(f->tunnel, cl->conn);
        cl->linked = false;
        cl->done = true;
        flush(f, cl);
    }
    kube_tunnel_close(f->tunnel);
    f->tunnel = NULL;
    return open;
}

/* Reads what the local client sent, a few chunks at most and while the tunnel has room, so that
 * a busy client costs few turns of the loop and the others still get theirs. */
static void client_read(gc_kube_forwarder *f, client *cl)
{
    char buf[CHUNK];
    gc_error err = {0};
    for (int i = 0; i < READS_PER_TURN && kube_tunnel_queued(f->tunnel) < TUNNEL_QUEUE_MAX; i++) {
        ssize_t n = recv(cl->fd, buf, sizeof(buf), 0);
        if (n > 0 && !kube_tunnel_send(f->tunnel, cl->conn, buf, (size_t)n, &err)) {
            if ((size_t)n < sizeof(buf))
                return; /* it had no more */
            continue;
        }
        if (n == 0) {
            cl->local_eof = true;
            if (kube_tunnel_shutdown(f->tunnel, cl->conn, &err))
                client_close(f, cl);
        } else if (n > 0 || (errno != EAGAIN && errno != EINTR)) {
            client_close(f, cl);
        }
        return;
    }
}

static void accept_clients(gc_kube_forwarder *f)
{
    for (int i = 0; i < ACCEPT_PER_TURN; i++) {
        int fd = accept4(f->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        /* Each write is a frame's payload, already as large as it gets: waiting for more
         * (Nagle) only adds a delayed ACK's time to the tail of every one. */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        client *cl = gc_xcalloc(1, sizeof(*cl));
        cl->fd = fd;
        gc_buf_init(&cl->out);
        gc_error err = {0};
        if (kube_tunnel_connect(f->tunnel, cl, &cl->conn, &err)) {
            close(fd);
            gc_buf_free(&cl->out);
            free(cl);
            return;
        }
        cl->linked = true;
        if (f->client_count == f->client_cap) {
            f->client_cap = f->client_cap ? f->client_cap * 2 : 64;
            f->clients = gc_xrealloc(f->clients, f->client_cap * sizeof(*f->clients));
        }
        f->clients[f->client_count++] = cl;
    }
}

static void sweep_clients(gc_kube_forwarder *f)
{
    size_t kept = 0;
    for (size_t i = 0; i < f->client_count; i++) {
        client *cl = f->clients[i];
        if (cl->dead) {
            gc_buf_free(&cl->out);
            free(cl);
        } else {
            f->clients[kept++] = cl;
        }
    }
    f->client_count = kept;
}

static long add_fd(gc_kube_forwarder *f, struct pollfd **fds, size_t *count, size_t *cap, int fd,
                   short events, client *owner)
{
    if (*count == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *fds = gc_xrealloc(*fds, *cap * sizeof(**fds));
    }
    if (f->owner_count == f->owner_cap) {
        f->owner_cap = f->owner_cap ? f->owner_cap * 2 : 64;
        f->owner = gc_xrealloc(f->owner, f->owner_cap * sizeof(*f->owner));
    }
    (*fds)[*count] = (struct pollfd){.fd = fd, .events = events};
    f->owner[f->owner_count++] = owner;
    return (long)(*count)++;
}

void gc_kube_forwarder_poll(gc_kube_forwarder *f, struct pollfd **fds, size_t *count, size_t *cap)
{
    f->first = *count;
    f->owner_count = 0;
    bool forwarding = f->tunnel && kube_tunnel_accepting(f->tunnel);
    f->listener = forwarding ? add_fd(f, fds, count, cap, f->listen_fd, POLLIN, NULL) : -1;
    bool behind = false;
    bool room = f->tunnel && kube_tunnel_queued(f->tunnel) < TUNNEL_QUEUE_MAX;
    for (size_t i = 0; i < f->client_count; i++) {
        client *cl = f->clients[i];
        size_t pending = cl->out.len - cl->out_at;
        behind = behind || pending > CLIENT_BACKLOG_MAX;
        short events = (short)((pending ? POLLOUT : 0) |
                               (room && cl->linked && cl->opened && !cl->local_eof ? POLLIN : 0));
        if (events)
            add_fd(f, fds, count, cap, cl->fd, events, cl);
    }
    if (f->tunnel) {
        kube_tunnel_hold(f->tunnel, behind);
        f->tunnel_at = add_fd(f, fds, count, cap, kube_tunnel_fd(f->tunnel),
                              kube_tunnel_poll_events(f->tunnel), NULL);
    } else {
        f->tunnel_at = -1;
    }
}

int gc_kube_forwarder_timeout_ms(const gc_kube_forwarder *f)
{
    return f->tunnel ? kube_tunnel_timeout_ms(f->tunnel) : -1;
}

/* A break closes every connection of the tunnel: the caller says so in one line, so the
 * connections it closed are not counted as failures one by one. */
static int pump(gc_kube_forwarder *f, short revents, size_t *open, gc_error *err)
{
    if (!f->tunnel)
        return 0;
    unsigned failures = f->failures;
    size_t carried = kube_tunnel_count(f->tunnel);
    gc_error why = {0};
    if (kube_tunnel_pump(f->tunnel, revents, &why)) {
        f->failures = failures;
        gc_kube_forwarder_drop(f);
        *open = carried;
        return gc_fail(err, GC_EXIT_RUNTIME, "%s", why.message);
    }
    if (!kube_tunnel_accepting(f->tunnel)) {
        *open = gc_kube_forwarder_drop(f);
        return gc_fail(err, GC_EXIT_RUNTIME, "the server is going away (GOAWAY)");
    }
    return 0;
}

int gc_kube_forwarder_serve(gc_kube_forwarder *f, const struct pollfd *fds, size_t *open,
                            gc_error *err)
{
    *open = 0;
    int rc = pump(f, f->tunnel_at >= 0 ? fds[f->tunnel_at].revents : 0, open, err);
    for (size_t i = 0; i < f->client_count; i++) {
        client *cl = f->clients[i];
        if (cl->fresh && !cl->dead)
            flush(f, cl);
        cl->fresh = false;
    }
    for (size_t i = 0; i < f->owner_count; i++) {
        client *cl = f->owner[i];
        short re = fds[f->first + i].revents;
        if (!cl || cl->dead || !re)
            continue;
        if ((re & POLLOUT) && !flush(f, cl))
            continue;
        if ((re & (POLLIN | POLLHUP | POLLERR)) && f->tunnel && cl->linked && cl->opened &&
            !cl->local_eof)
            client_read(f, cl);
        else if ((re & (POLLHUP | POLLERR)) && !(re & POLLIN))
            client_close(f, cl);
    }
    /* What the clients just gave goes out now, not after the next poll. */
    if (!rc && f->tunnel && kube_tunnel_queued(f->tunnel))
        rc = pump(f, POLLOUT, open, err);
    if (f->tunnel && f->listener >= 0 && (fds[f->listener].revents & POLLIN))
        accept_clients(f);
    f->owner_count = 0;
    f->listener = f->tunnel_at = -1;
    sweep_clients(f);
    return rc;
}

unsigned gc_kube_forwarder_failures(gc_kube_forwarder *f, char *last, size_t size)
{
    unsigned n = f->failures;
    if (size)
        snprintf(last, size, "%s", f->failure);
    f->failures = 0;
    return n;
}

void gc_kube_forwarder_free(gc_kube_forwarder *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->client_count; i++)
        if (!f->clients[i]->dead)
            client_close(f, f->clients[i]);
    sweep_clients(f);
    free(f->clients);
    free(f->owner);
    kube_tunnel_close(f->tunnel);
    if (f->listen_fd >= 0)
        close(f->listen_fd);
    free(f);
}
