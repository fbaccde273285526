/*
 * The port-forward tunnel on a socket (see gcluster/portforward.h).
 *
 * libcurl opens the connection with everything a request of this client gets
 * (kube_set_connection: proxy, TLS trust, client certificate) and stops there
 * (CURLOPT_CONNECT_ONLY); this file writes the upgrade request itself, reads the answer, and
 * from then on moves bytes between the socket (curl_easy_send and curl_easy_recv, so TLS stays
 * libcurl's) and the session of portforward.c. libcurl's own WebSocket support is no help:
 * Debian's libcurl 7.88 is built without it, and the tunnel is SPDY inside the WebSocket anyway.
 * HTTP/1.1 is forced, because an upgrade does not exist in HTTP/2.
 */
#include "gcluster/portforward.h"

#include "gcluster/sys.h"
#include "kube/internal.h"
#include "kube/tunnel/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONNECT_TIMEOUT_MS 15000L
#define READ_CHUNK         (64 * 1024)
#define READ_BUDGET        (1024 * 1024) /* per pump, so the caller's other sockets get a turn */
#define PING_EVERY_MS      10000         /* as kubectl: keeps idle proxies from dropping it */
#define DEAD_AFTER_MS      30000         /* a ping unanswered and nothing received for this long */
#define ERROR_BODY_MAX     (64 * 1024)
#define ERROR_BODY_WAIT_MS 2000
#define CLOSE_LINGER_MS    200
#define SEND_CHUNK         (128 * 1024)

struct gc_kube_tunnel {
    CURL *e;
    int fd;
    kube_pf *pf;
    kube_tunnel_kind kind;
    gc_tunnel_event_fn on_event;
    void *ctx;
    bool held;
    bool buffered; /* reading stopped before the socket ran dry: TLS may hold received bytes */
    bool goaway;
    bool over;
    long long last_input_ms;
    long long next_ping_ms;
    long long ping_sent_ms; /* 0: no ping waiting for its answer */
    uint8_t chunk[READ_CHUNK];
    /* Bytes on their way into TLS. OpenSSL wants a write it could not finish retried with the
     * same buffer and length, and the session's output buffer moves as it grows: so they are
     * copied here first, and stay put until sent. */
    uint8_t sending[SEND_CHUNK];
    size_t sending_len, sending_at;
};

/* --- the session's events, as the caller sees them ------------------------------------------ */

static void on_session_event(void *ctx, const kube_pf_event *ev)
{
    gc_kube_tunnel *t = ctx;
    gc_tunnel_event out = {
        .conn = ev->conn, .user = ev->user, .data = ev->data, .len = ev->len, .text = ev->text};
    switch (ev->type) {
    case KUBE_PF_OPENED:
        out.type = GC_TUNNEL_OPENED;
        break;
    case KUBE_PF_DATA:
        out.type = GC_TUNNEL_DATA;
        break;
    case KUBE_PF_PEER_FIN:
        out.type = GC_TUNNEL_PEER_FIN;
        break;
    case KUBE_PF_CLOSED:
        out.type = GC_TUNNEL_CLOSED;
        break;
    case KUBE_PF_PONG:
        t->ping_sent_ms = 0;
        return;
    case KUBE_PF_GOAWAY:
        t->goaway = true;
        return;
    }
    if (t->on_event)
        t->on_event(t->ctx, &out);
}

/* --- opening -------------------------------------------------------------------------------- */

/* One try at the upgrade: the request, the connection it goes out on and what came back. */
typedef struct attempt {
    gc_kube *k;
    const gc_tunnel_options *o;
    kube_tunnel_kind kind;
    char port[8];
    const char *query[3];
    char *path;
    kube_request req;
    kube_exchange x; /* the outcome, as kube_transport_error and kube_http_error read it */
    char *url;
    char *shown_url; /* redacted, for traces */
    CURL *e;
    int fd;
    long long started_ms;
    gc_buf in; /* the answer as received: its head, then whatever followed it */
    long head_len;
    kube_http_head head;
} attempt;

static bool cancelled(const gc_tunnel_options *o)
{
    struct pollfd p = {.fd = o->cancel_fd, .events = POLLIN};
    return o->cancel_fd >= 0 && poll(&p, 1, 0) > 0;
}

/* libcurl's progress callback while it connects: Ctrl-C and the deadline end the wait. */
static int connect_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                            curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    const attempt *a = ctx;
    return cancelled(a->o) || gc_clock_ms() >= a->o->deadline_ms;
}

static int transport_failure(attempt *a, CURLcode result, gc_error *err)
{
    a->x.http.result = result;
    if (cancelled(a->o))
        return gc_fail(err, GC_EXIT_RUNTIME, "stopped while connecting to the API server");
    a->x.http.past_deadline = gc_clock_ms() >= a->o->deadline_ms;
    return kube_transport_error(a->k, &a->x, err);
}

/* TCP, the proxy's CONNECT and TLS, all by libcurl. */
static int connect_socket(attempt *a, gc_error *err)
{
    a->e = curl_easy_init();
    if (!a->e)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot create a libcurl handle");
    CURL *e = a->e;
    long left = (long)(a->o->deadline_ms - gc_clock_ms());
    curl_easy_setopt(e, CURLOPT_URL, a->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, a->x.http.error);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                     left < CONNECT_TIMEOUT_MS ? (left > 1 ? left : 1L) : CONNECT_TIMEOUT_MS);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, connect_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, a);
    kube_set_connection(a->k, e);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    /* Also an http:// server is reached through the proxy's CONNECT, so the upgrade passes. */
    if (a->k->sel.cluster->proxy_url)
        curl_easy_setopt(e, CURLOPT_HTTPPROXYTUNNEL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
    a->k->request_count++;
    CURLcode result = curl_easy_perform(e);
    if (result != CURLE_OK)
        return transport_failure(a, result, err);
    curl_socket_t fd = CURL_SOCKET_BAD;
    curl_easy_getinfo(e, CURLINFO_ACTIVESOCKET, &fd);
    if (fd == CURL_SOCKET_BAD)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "libcurl connected to the API server but has no socket");
    a->fd = fd;
    return 0;
}

/* Waits until the socket is ready for `events`, the deadline passes or Ctrl-C. */
static int wait_socket(attempt *a, short events, long long deadline, gc_error *err)
{
    for (;;) {
        if (cancelled(a->o))
            return gc_fail(err, GC_EXIT_RUNTIME, "stopped while waiting for the API server");
        long long left = deadline - gc_clock_ms();
        if (left <= 0) {
            a->x.http.past_deadline = true;
            return kube_transport_error(a->k, &a->x, err);
        }
        struct pollfd p[2] = {{.fd = a->fd, .events = events},
                              {.fd = a->o->cancel_fd, .events = POLLIN}};
        int n = poll(p, a->o->cancel_fd >= 0 ? 2 : 1, left < 1000 ? (int)left : 1000);
        if (n > 0 && p[0].revents)
            return 0;
        if (n < 0 && errno != EINTR)
            return gc_fail(err, GC_EXIT_RUNTIME, "poll: %s", strerror(errno));
    }
}

static int send_all(attempt *a, const char *data, size_t len, gc_error *err)
{
    while (len) {
        size_t n = 0;
        CURLcode result = curl_easy_send(a->e, data, len, &n);
        if (result == CURLE_AGAIN) {
            int rc = wait_socket(a, POLLOUT, a->o->deadline_ms, err);
            if (rc)
                return rc;
            continue;
        }
        if (result != CURLE_OK)
            return transport_failure(a, result, err);
        data += n;
        len -= n;
    }
    return 0;
}

/* Waits for bytes and appends what is there, up to `max` bytes in a->in; a connection that
 * ends first is an error. */
static int receive_some(attempt *a, size_t max, long long deadline, gc_error *err)
{
    char chunk[4096];
    for (;;) {
        size_t want = max - a->in.len < sizeof(chunk) ? max - a->in.len : sizeof(chunk);
        size_t n = 0;
        CURLcode result = curl_easy_recv(a->e, chunk, want, &n);
        if (result == CURLE_AGAIN) {
            int rc = wait_socket(a, POLLIN, deadline, err);
            if (rc)
                return rc;
            continue;
        }
        if (result != CURLE_OK)
            return transport_failure(a, result, err);
        if (!n)
            return transport_failure(a, CURLE_GOT_NOTHING, err);
        gc_buf_append(&a->in, chunk, n);
        return 0;
    }
}

/* The request head: the client's credential and user agent, as on every request. */
static void write_head(attempt *a, gc_buf *out, const char *ws_key)
{
    CURLU *u = curl_url();
    char *host = NULL, *port = NULL, *path = NULL, *query = NULL;
    curl_url_set(u, CURLUPART_URL, a->url, 0);
    curl_url_get(u, CURLUPART_HOST, &host, 0);
    curl_url_get(u, CURLUPART_PORT, &port, 0);
    curl_url_get(u, CURLUPART_PATH, &path, 0);
    curl_url_get(u, CURLUPART_QUERY, &query, 0);
    char *authority = gc_xasprintf("%s%s%s", host ? host : "", port ? ":" : "", port ? port : "");
    char *target = gc_xasprintf("%s%s%s", path ? path : "/", query ? "?" : "", query ? query : "");
    char *auth = kube_auth_header(a->k);
    const char *lines[] = {"User-Agent: gcluster/" GCLUSTER_VERSION, auth, NULL};
    kube_pf_upgrade_request(out, a->kind, authority, target, lines, ws_key);
    if (auth) {
        explicit_bzero(auth, strlen(auth));
        free(auth);
    }
    free(authority);
    free(target);
    curl_free(host);
    curl_free(port);
    curl_free(path);
    curl_free(query);
    curl_url_cleanup(u);
}

static void trace_result(attempt *a)
{
    const gc_http_trace *tr = &a->k->trace;
    if (tr->verbose < 1)
        return;
    gc_trace(tr->events, "%s %s -> %d %s (%lld ms, HTTP/1.1, new connection, %s tunnel)",
             a->req.method, a->shown_url, a->head.status, gc_http_reason_phrase(a->head.status),
             gc_clock_ms() - a->started_ms,
             a->kind == KUBE_TUNNEL_WEBSOCKET ? "WebSocket" : "SPDY");
}

/* A refused upgrade comes with a body, usually a Status that says why. */
static void read_error_body(attempt *a)
{
    const char *length = kube_http_head_get(&a->head, "content-length");
    size_t want = length ? (size_t)strtoul(length, NULL, 10) : ERROR_BODY_MAX;
    want = want < ERROR_BODY_MAX ? want : ERROR_BODY_MAX;
    long long deadline = gc_clock_ms() + ERROR_BODY_WAIT_MS;
    size_t max = (size_t)a->head_len + want;
    while (a->in.len < max) {
        gc_error ignored = {0};
        if (receive_some(a, max, deadline, &ignored))
            break;
    }
    size_t body = a->in.len - (size_t)a->head_len;
    gc_buf_append(&a->x.http.body, a->in.data + a->head_len, body < want ? body : want);
}

static int refused(attempt *a, gc_error *err)
{
    read_error_body(a);
    a->x.http.status = a->head.status;
    kube_http_error(a->k, &a->x, err);
    if (a->head.status == 403) {
        size_t len = strlen(err->message);
        snprintf(err->message + len, sizeof(err->message) - len,
                 "; forwarding a port needs RBAC permission to create pods/portforward in "
                 "namespace %s (and to get it, for the WebSocket tunnel of Kubernetes 1.31 and "
                 "later); check with `kubectl auth can-i create pods --subresource=portforward "
                 "-n %s`",
                 a->k->ns, a->k->ns);
    }
    return GC_EXIT_RUNTIME;
}

static int upgrade(attempt *a, gc_error *err)
{
    char ws_key[KUBE_WS_KEY_LEN + 1];
    kube_ws_key(ws_key);
    gc_buf head;
    gc_buf_init(&head);
    write_head(a, &head, ws_key);
    if (a->k->trace.verbose >= 2) {
        gc_trace(a->k->trace.events, "> %s %s", a->req.method, a->shown_url);
        const char *fields = strstr(head.data, "\r\n");
        gc_http_trace_head(&a->k->trace, '>', fields + 2,
                           head.len - (size_t)(fields + 2 - head.data));
    }
    int rc = send_all(a, head.data, head.len, err);
    explicit_bzero(head.data, head.len);
    gc_buf_free(&head);
    while (!rc && !a->head_len) {
        rc = receive_some(a, KUBE_HTTP_HEAD_MAX, a->o->deadline_ms, err);
        long n = rc ? 0 : kube_http_head_length(a->in.data, a->in.len);
        if (n < 0)
            return gc_fail(err, GC_EXIT_RUNTIME,
                           "the API server's answer to the port-forward upgrade has no end of its "
                           "head within %d bytes",
                           KUBE_HTTP_HEAD_MAX);
        a->head_len = n;
    }
    if (rc)
        return rc;
    rc = kube_http_head_parse(&a->head, a->in.data, (size_t)a->head_len, err);
    if (rc)
        return rc;
    gc_http_trace_head(&a->k->trace, '<', a->in.data, (size_t)a->head_len);
    trace_result(a);
    if (a->head.status != 101)
        return refused(a, err);
    return kube_pf_upgrade_check(&a->head, a->kind, ws_key, err);
}

static void attempt_init(attempt *a, gc_kube *k, const gc_tunnel_options *o, kube_tunnel_kind kind)
{
    memset(a, 0, sizeof(*a));
    a->k = k;
    a->o = o;
    a->kind = kind;
    a->fd = -1;
    a->started_ms = gc_clock_ms();
    snprintf(a->port, sizeof(a->port), "%u", (unsigned)o->port);
    a->query[0] = "ports";
    a->query[1] = a->port;
    char *pod = gc_kube_path(NULL, "v1", k->ns, "pods", o->pod);
    a->path = gc_xasprintf("%s/portforward", pod);
    free(pod);
    /* What kubectl sends: GET for the WebSocket, POST for the SPDY upgrade. */
    a->req = (kube_request){.method = kind == KUBE_TUNNEL_WEBSOCKET ? "GET" : "POST",
                            .path = a->path,
                            .extra = a->query};
    kube_exchange_init(&a->x, &a->req);
    a->url = kube_url(k, &a->req);
    char *trace_url = kube_trace_url(k, &a->req);
    a->shown_url = gc_http_redact_url(trace_url);
    free(trace_url);
    gc_buf_init(&a->in);
}

static void attempt_free(attempt *a)
{
    if (a->e)
        curl_easy_cleanup(a->e);
    kube_http_head_free(&a->head);
    kube_exchange_free(&a->x);
    gc_buf_free(&a->in);
    free(a->path);
    free(a->url);
    free(a->shown_url);
}

static int try_upgrade(attempt *a, gc_error *err)
{
    int rc = kube_auth_ensure(a->k, err);
    if (!rc)
        rc = connect_socket(a, err);
    if (!rc)
        rc = upgrade(a, err);
    return rc;
}

/* Answers that would come back the same over SPDY: the pod, the credential. (A 403 would not:
 * the WebSocket's GET needs RBAC `get` on pods/portforward, SPDY's POST `create`, and roles
 * written before Kubernetes 1.31 grant only `create`.) */
static bool definite(int status)
{
    return status == 401 || status == 404;
}

static gc_kube_tunnel *tunnel_from(attempt *a, const gc_tunnel_options *o, gc_error *err)
{
    gc_kube_tunnel *t = gc_xcalloc(1, sizeof(*t));
    t->e = a->e;
    a->e = NULL;
    /* The handle outlives the attempt: nothing of the attempt may stay in it. libcurl writes
     * its message for a failed receive into the error buffer, which was the attempt's (the
     * tunnel says what failed from the result code). */
    curl_easy_setopt(t->e, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(t->e, CURLOPT_XFERINFOFUNCTION, NULL);
    curl_easy_setopt(t->e, CURLOPT_XFERINFODATA, NULL);
    curl_easy_setopt(t->e, CURLOPT_NOPROGRESS, 1L);
    t->fd = a->fd;
    t->kind = a->kind;
    t->on_event = o->on_event;
    t->ctx = o->ctx;
    t->pf = kube_pf_new(a->kind, o->port, on_session_event, t);
    t->last_input_ms = gc_clock_ms();
    t->next_ping_ms = t->last_input_ms + PING_EVERY_MS;
    size_t rest = a->in.len - (size_t)a->head_len;
    if (rest && kube_pf_feed(t->pf, a->in.data + a->head_len, rest, err)) {
        kube_pf_free(t->pf);
        curl_easy_cleanup(t->e);
        free(t);
        return NULL;
    }
    return t;
}

int kube_tunnel_open(gc_kube *kube, const gc_tunnel_options *o, gc_kube_tunnel **out, gc_error *err)
{
    *out = NULL;
    kube_tunnel_kind kind = KUBE_TUNNEL_WEBSOCKET;
    bool refreshed = false;
    for (;;) {
        attempt a;
        attempt_init(&a, kube, o, kind);
        unsigned credential = kube->credential_generation;
        int rc = try_upgrade(&a, err);
        int status = a.head.status;
        if (!rc)
            *out = tunnel_from(&a, o, err);
        attempt_free(&a);
        if (!rc)
            return *out ? 0 : err->code;
        if (status == 401 && !refreshed && kube_auth_refreshable(kube)) {
            refreshed = true;
            kube_auth_rejected(kube, credential);
            kube_trace(kube, "401 Unauthorized: getting a fresh credential and retrying");
            continue;
        }
        /* An API server older than 1.31, or one without PortForwardWebsockets, refuses the
         * WebSocket (or answers it without the tunneling subprotocol), and so does RBAC without
         * `get`: SPDY it is, as kubectl falls back. */
        if (kind == KUBE_TUNNEL_WEBSOCKET && status != 0 && !definite(status)) {
            kube_trace(kube, "the WebSocket upgrade failed (%s); trying SPDY", err->message);
            kind = KUBE_TUNNEL_SPDY;
            continue;
        }
        return rc;
    }
}

/* --- moving bytes --------------------------------------------------------------------------- */

/* The tunnel is over: every connection hears it, and the caller hears why. */
static int tunnel_over(gc_kube_tunnel *t, gc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int tunnel_over(gc_kube_tunnel *t, gc_error *err, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    t->over = true;
    kube_pf_eof(t->pf, why);
    return gc_fail(err, GC_EXIT_RUNTIME, "%s", why);
}

static int read_input(gc_kube_tunnel *t, gc_error *err)
{
    size_t total = 0;
    t->buffered = false;
    while (!t->held) {
        if (total >= READ_BUDGET) {
            t->buffered = true;
            return 0;
        }
        size_t n = 0;
        CURLcode result = curl_easy_recv(t->e, t->chunk, sizeof(t->chunk), &n);
        if (result == CURLE_AGAIN)
            return 0;
        if (result != CURLE_OK)
            return tunnel_over(t, err, "the connection to the API server broke (%s)",
                               curl_easy_strerror(result));
        if (!n)
            return tunnel_over(t, err, "the API server closed the connection");
        t->last_input_ms = gc_clock_ms();
        total += n;
        if (kube_pf_feed(t->pf, t->chunk, n, err)) {
            t->over = true;
            return err->code;
        }
    }
    t->buffered = true; /* held in the middle: there may be more */
    return 0;
}

static int write_output(gc_kube_tunnel *t, gc_error *err)
{
    for (;;) {
        if (t->sending_at == t->sending_len) {
            size_t len;
            const uint8_t *data = kube_pf_output(t->pf, &len);
            if (!len)
                return 0;
            t->sending_len = len < sizeof(t->sending) ? len : sizeof(t->sending);
            t->sending_at = 0;
            memcpy(t->sending, data, t->sending_len);
            kube_pf_output_done(t->pf, t->sending_len);
        }
        size_t n = 0;
        CURLcode result =
            curl_easy_send(t->e, t->sending + t->sending_at, t->sending_len - t->sending_at, &n);
        if (result == CURLE_AGAIN)
            return 0;
        if (result != CURLE_OK)
            return tunnel_over(t, err, "the connection to the API server broke (%s)",
                               curl_easy_strerror(result));
        t->sending_at += n;
    }
}

/* A ping every PING_EVERY_MS, one at a time; a tunnel that answers neither it nor anything else
 * for DEAD_AFTER_MS is gone (a dropped network path sends no reset). */
static int keep_alive(gc_kube_tunnel *t, gc_error *err)
{
    long long now = gc_clock_ms();
    if (t->held) /* not reading: silence says nothing about the server */
        return 0;
    if (t->ping_sent_ms && now - t->ping_sent_ms >= DEAD_AFTER_MS &&
        now - t->last_input_ms >= DEAD_AFTER_MS)
        return tunnel_over(t, err, "the API server has not answered for %d s",
                           DEAD_AFTER_MS / 1000);
    if (!t->ping_sent_ms && now >= t->next_ping_ms) {
        kube_pf_ping(t->pf);
        t->ping_sent_ms = now;
        t->next_ping_ms = now + PING_EVERY_MS;
    }
    return 0;
}

int kube_tunnel_pump(gc_kube_tunnel *t, short revents, gc_error *err)
{
    if (t->over)
        return gc_fail(err, GC_EXIT_RUNTIME, "the port-forward tunnel is over");
    int rc = 0;
    if (!t->held && ((revents & (POLLIN | POLLHUP | POLLERR)) || t->buffered))
        rc = read_input(t, err);
    if (!rc)
        rc = keep_alive(t, err);
    if (!rc)
        rc = write_output(t, err);
    return rc;
}

int kube_tunnel_fd(const gc_kube_tunnel *t)
{
    return t->fd;
}

short kube_tunnel_poll_events(const gc_kube_tunnel *t)
{
    return (short)((t->held ? 0 : POLLIN) | (kube_tunnel_queued(t) ? POLLOUT : 0));
}

int kube_tunnel_timeout_ms(const gc_kube_tunnel *t)
{
    if (t->buffered && !t->held)
        return 0;
    if (t->held)
        return -1; /* nothing is due until the caller lets it read again */
    long long now = gc_clock_ms();
    long long at = t->ping_sent_ms ? t->ping_sent_ms + DEAD_AFTER_MS : t->next_ping_ms;
    return at <= now ? 0 : (int)(at - now);
}

void kube_tunnel_hold(gc_kube_tunnel *t, bool hold)
{
    if (t->held && !hold) {
        /* The wait for an answer starts again now: the answer may be among what was not read. */
        long long now = gc_clock_ms();
        t->last_input_ms = now;
        if (t->ping_sent_ms)
            t->ping_sent_ms = now;
    }
    t->held = hold;
}

size_t kube_tunnel_queued(const gc_kube_tunnel *t)
{
    size_t pending;
    kube_pf_output(t->pf, &pending);
    return pending + t->sending_len - t->sending_at;
}

bool kube_tunnel_accepting(const gc_kube_tunnel *t)
{
    return !t->goaway && !t->over;
}

const char *kube_tunnel_kind_name(const gc_kube_tunnel *t)
{
    return t->kind == KUBE_TUNNEL_WEBSOCKET ? "WebSocket" : "SPDY";
}

int kube_tunnel_connect(gc_kube_tunnel *t, void *user, uint32_t *conn, gc_error *err)
{
    return kube_pf_open(t->pf, user, conn, err);
}

int kube_tunnel_send(gc_kube_tunnel *t, uint32_t conn, const void *data, size_t len, gc_error *err)
{
    return kube_pf_send(t->pf, conn, data, len, err);
}

int kube_tunnel_shutdown(gc_kube_tunnel *t, uint32_t conn, gc_error *err)
{
    return kube_pf_shutdown(t->pf, conn, err);
}

void kube_tunnel_reset(gc_kube_tunnel *t, uint32_t conn)
{
    kube_pf_reset(t->pf, conn);
}

size_t kube_tunnel_count(const gc_kube_tunnel *t)
{
    return kube_pf_count(t->pf);
}

void kube_tunnel_close(gc_kube_tunnel *t)
{
    if (!t)
        return;
    if (!t->over) {
        /* Reset, GOAWAY and the close frame go out if the socket takes them within a moment:
         * the API server would notice the closed connection anyway. */
        kube_pf_close(t->pf);
        long long deadline = gc_clock_ms() + CLOSE_LINGER_MS;
        gc_error ignored = {0};
        while (kube_tunnel_queued(t) && gc_clock_ms() < deadline) {
            struct pollfd p = {.fd = t->fd, .events = POLLOUT};
            if (poll(&p, 1, (int)(deadline - gc_clock_ms())) <= 0 || write_output(t, &ignored))
                break;
        }
    }
    kube_pf_free(t->pf);
    curl_easy_cleanup(t->e);
    free(t);
}
