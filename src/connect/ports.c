/*
 * job connect's extra ports (see connect/ports.h). The proxy's tunnel decides when connect is
 * ready and when it heals; these follow it: opened to the pod the proxy's tunnel goes to, each
 * reopened on its own when it breaks, all dropped when that pod goes.
 */
#include "connect/ports.h"

#include "gcluster/buf.h"
#include "gcluster/sys.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPEN_TIMEOUT_MS  30000
#define REOPEN_DELAY_MS  250
#define REOPEN_DELAY_MAX 5000
#define REPORT_EVERY_MS  10000

/* A port number as written: digits only, 0 to 65535. */
static bool port_number(const char *s, size_t n, long *out)
{
    if (n == 0 || n > 5)
        return false;
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return v <= 65535;
}

static int bad_port(const char *spec, gc_error *err)
{
    return gc_fail(err, GC_EXIT_USAGE,
                   "--port %s: give REMOTE or LOCAL:REMOTE, ports 1 to 65535 (LOCAL 0, or "
                   ":REMOTE: any free local port), as in --port 8888 or --port 8080:8888",
                   spec);
}

int connect_ports_parse(const gc_connect_request *r, connect_ports *out, gc_error *err)
{
    connect_port *items = r->port_count ? gc_xcalloc(r->port_count, sizeof(*items)) : NULL;
    for (size_t i = 0; i < r->port_count; i++) {
        const char *spec = r->ports[i] ? r->ports[i] : "";
        const char *colon = strchr(spec, ':');
        long local = 0, remote = 0;
        bool ok = colon ? (colon == spec || port_number(spec, (size_t)(colon - spec), &local)) &&
                              port_number(colon + 1, strlen(colon + 1), &remote)
                        : port_number(spec, strlen(spec), &remote);
        if (ok && !colon)
            local = remote;
        int rc = 0;
        if (!ok || remote == 0)
            rc = bad_port(spec, err);
        else if (local && local == r->local_port)
            rc = gc_fail(err, GC_EXIT_USAGE,
                         "--port %s: local port %ld is the proxy's (--local-port); pick another "
                         "local port, as in --port %ld:%ld",
                         spec, local, local + 1, remote);
        for (size_t j = 0; !rc && local && j < i; j++)
            if (items[j].local == local)
                rc = gc_fail(err, GC_EXIT_USAGE,
                             "--port %s: local port %ld is given twice; each --port needs its "
                             "own local port",
                             spec, local);
        if (rc) {
            free(items);
            return rc;
        }
        items[i] = (connect_port){.local = local, .remote = remote};
    }
    if (out) {
        out->items = items;
        out->count = r->port_count;
    } else {
        free(items);
    }
    return 0;
}

static void set_port(struct sockaddr_storage *a, long port)
{
    if (a->ss_family == AF_INET)
        ((struct sockaddr_in *)a)->sin_port = htons((uint16_t)port);
    else if (a->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)a)->sin6_port = htons((uint16_t)port);
}

int connect_ports_listen(connect_ports *p, const struct sockaddr *addr, socklen_t len,
                         const char *address, gc_error *err)
{
    for (size_t i = 0; i < p->count; i++) {
        connect_port *cp = &p->items[i];
        struct sockaddr_storage a = {0};
        memcpy(&a, addr, len < sizeof(a) ? len : sizeof(a));
        set_port(&a, cp->local);
        int e = gc_kube_forwarder_listen((const struct sockaddr *)&a, len, &cp->fwd);
        if (e == EADDRINUSE)
            return gc_fail(err, GC_EXIT_RUNTIME,
                           "cannot listen on %s port %ld for --port %ld:%ld: it is in use; pick "
                           "another local port, as in --port 0:%ld (any free port)",
                           address, cp->local, cp->local, cp->remote, cp->remote);
        if (e)
            return gc_fail(err, GC_EXIT_RUNTIME, "cannot listen on %s port %ld: %s", address,
                           cp->local, strerror(e));
        struct sockaddr_storage bound;
        gc_kube_forwarder_bound(cp->fwd, &bound);
        char host[INET6_ADDRSTRLEN] = "", port[16] = "";
        getnameinfo((const struct sockaddr *)&bound, sizeof(bound), host, sizeof(host), port,
                    sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
        bool v6 = bound.ss_family == AF_INET6;
        snprintf(cp->listen, sizeof(cp->listen), "%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "",
                 port);
    }
    return 0;
}

int connect_ports_open(connect_ports *p, gc_kube *kube, const char *pod, const char *what,
                       int cancel_fd, bool all, const gc_events *ev, gc_error *err)
{
    long long now = gc_clock_ms();
    for (size_t i = 0; i < p->count; i++) {
        connect_port *cp = &p->items[i];
        if (gc_kube_forwarder_has_tunnel(cp->fwd) || (!all && now < cp->reopen_at_ms))
            continue;
        gc_tunnel_options o = {.pod = pod,
                               .port = (uint16_t)cp->remote,
                               .deadline_ms = gc_clock_ms() + OPEN_TIMEOUT_MS,
                               .cancel_fd = cancel_fd};
        gc_error e = {0};
        if (gc_kube_forwarder_open(cp->fwd, kube, &o, &e) == 0) {
            if (all || cp->healing)
                gc_notice(ev, "%s %s to port %ld of %s %s",
                          cp->healing ? "reconnected:" : "forwarding", cp->listen, cp->remote, what,
                          pod);
            cp->healing = false;
            cp->reopen_failures = 0;
            continue;
        }
        if (e.http_status == 401 || e.http_status == 403)
            return gc_fail(err, GC_EXIT_RUNTIME, "%s", e.message);
        long delay = REOPEN_DELAY_MS << (cp->reopen_failures < 5 ? cp->reopen_failures : 5);
        cp->reopen_at_ms = gc_clock_ms() + (delay < REOPEN_DELAY_MAX ? delay : REOPEN_DELAY_MAX);
        if (cp->reopen_failures++ == 0)
            gc_warn(ev, "cannot open a tunnel to port %ld of %s %s for %s: %s; retrying",
                    cp->remote, what, pod, cp->listen, e.message);
        cp->healing = true;
    }
    return 0;
}

size_t connect_ports_drop(connect_ports *p)
{
    size_t open = 0;
    for (size_t i = 0; i < p->count; i++) {
        open += gc_kube_forwarder_drop(p->items[i].fwd);
        p->items[i].healing = true; /* the next tunnel, to the successor, is said */
        p->items[i].reopen_failures = 0;
    }
    return open;
}

void connect_ports_poll(connect_ports *p, struct pollfd **fds, size_t *count, size_t *cap)
{
    for (size_t i = 0; i < p->count; i++)
        gc_kube_forwarder_poll(p->items[i].fwd, fds, count, cap);
}

int connect_ports_timeout(const connect_ports *p, bool forwarding, long long now, int t)
{
    for (size_t i = 0; i < p->count; i++) {
        const connect_port *cp = &p->items[i];
        int f = gc_kube_forwarder_timeout_ms(cp->fwd);
        if (f >= 0 && f < t)
            t = f;
        if (forwarding && !gc_kube_forwarder_has_tunnel(cp->fwd)) {
            long long left = cp->reopen_at_ms > now ? cp->reopen_at_ms - now : 0;
            if (left < t)
                t = (int)left;
        }
    }
    return t;
}

void connect_ports_serve(connect_ports *p, const struct pollfd *fds, const char *pod,
                         const char *what, const gc_events *ev)
{
    for (size_t i = 0; i < p->count; i++) {
        connect_port *cp = &p->items[i];
        size_t open = 0;
        gc_error why = {0};
        if (gc_kube_forwarder_serve(cp->fwd, fds, &open, &why)) {
            gc_warn(ev,
                    "the tunnel to port %ld of %s %s broke (%s); %zu open connection%s closed; "
                    "reconnecting",
                    cp->remote, what, pod, why.message, open, open == 1 ? "" : "s");
            cp->healing = true;
            cp->reopen_at_ms = gc_clock_ms();
        }
        char last[256];
        unsigned failed = gc_kube_forwarder_failures(cp->fwd, last, sizeof(last));
        long long t = gc_clock_ms();
        if (failed && t - cp->failure_reported_ms >= REPORT_EVERY_MS) {
            gc_warn(ev,
                    "a connection to port %ld of %s %s failed: %s (is a server listening "
                    "there?)",
                    cp->remote, what, pod, last);
            cp->failure_reported_ms = t;
        }
    }
}

void connect_ports_free(connect_ports *p)
{
    for (size_t i = 0; i < p->count; i++)
        gc_kube_forwarder_free(p->items[i].fwd);
    free(p->items);
    p->items = NULL;
    p->count = 0;
}
