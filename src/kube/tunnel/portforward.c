/*
 * The port-forward session: many forwarded TCP connections at once over one SPDY/3.1 session
 * with the kubelet (through the API server), without a socket of its own.
 *
 * One forwarded connection is two client-opened streams sharing a "requestID" header: an error
 * stream (streamtype "error"), on which the kubelet writes a message if forwarding fails, and a
 * data stream (streamtype "data") carrying the bytes both ways; both name the pod's "port". The
 * kubelet answers each SYN_STREAM with a SYN_REPLY and starts forwarding once it holds both. The
 * client never writes on the error stream, so it opens it with FIN set. The kubelet drops DATA
 * on a stream it has not answered yet, so bytes wait for the data stream's SYN_REPLY.
 *
 * A side that is done sending says so with FIN (an empty DATA frame with the flag), which is the
 * TCP half-close; RST_STREAM aborts a stream. When forwarding fails the kubelet writes the
 * error text, then resets both streams; when it ends normally it sends FIN on both streams, in
 * either order. The kubelet's SPDY library ignores WINDOW_UPDATE and SETTINGS (it
 * neither enforces nor sends flow-control windows), so none are sent; it answers PINGs, and
 * once it has said GOAWAY it silently ignores new streams, so none are opened after one.
 */
#include "kube/tunnel/internal.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DATA_FRAME (64 * 1024) /* bytes per DATA frame: few frames, fair interleaving */
#define MAX_ERROR_TEXT 4096
#define OUTPUT_COMPACT (1024 * 1024)

typedef struct pf_conn {
    uint32_t id;           /* the requestID, and the caller's handle */
    uint32_t error_stream; /* the data stream is the next client stream id: error_stream + 2 */
    void *user;
    bool opened;     /* the data stream's SYN_REPLY arrived */
    bool local_fin;  /* kube_pf_shutdown was called (FIN sent, or waiting for `opened`) */
    bool remote_fin; /* the pod side sent FIN on the data stream */
    bool error_done; /* the pod side finished the error stream */
    gc_buf held;     /* bytes sent before `opened` */
    gc_buf error_text;
} pf_conn;

typedef enum pf_state {
    PF_OPEN,
    PF_GOING_AWAY, /* the server said GOAWAY: open connections go on, no new ones */
    PF_CLOSING,    /* kube_pf_close ran */
    PF_ENDED,
} pf_state;

struct kube_pf {
    kube_tunnel_kind kind;
    char port[8];
    kube_pf_event_fn on_event;
    void *ctx;
    pf_state state;
    kube_spdy_codec spdy;
    kube_ws_decoder ws;
    gc_buf out;
    size_t out_sent;
    gc_buf frame; /* one SPDY frame on its way into a WebSocket frame */
    uint8_t masks[256];
    size_t masks_used;
    pf_conn **conns; /* ordered by id, which is also the order of their stream ids */
    size_t count, cap;
    uint32_t next_stream; /* client streams are odd */
    uint32_t next_id;
    uint32_t next_ping; /* client pings are odd, the server's even */
    uint32_t ping_waiting;
};

kube_pf *kube_pf_new(kube_tunnel_kind kind, uint16_t port, kube_pf_event_fn on_event, void *ctx)
{
    kube_pf *pf = gc_xcalloc(1, sizeof(*pf));
    pf->kind = kind;
    snprintf(pf->port, sizeof(pf->port), "%u", (unsigned)port);
    pf->on_event = on_event;
    pf->ctx = ctx;
    kube_spdy_codec_init(&pf->spdy);
    kube_ws_decoder_init(&pf->ws);
    gc_buf_init(&pf->out);
    gc_buf_init(&pf->frame);
    pf->masks_used = sizeof(pf->masks);
    pf->next_stream = 1;
    pf->next_ping = 1;
    return pf;
}

static void conn_free(pf_conn *c)
{
    gc_buf_free(&c->held);
    gc_buf_free(&c->error_text);
    free(c);
}

void kube_pf_free(kube_pf *pf)
{
    if (!pf)
        return;
    for (size_t i = 0; i < pf->count; i++)
        conn_free(pf->conns[i]);
    free(pf->conns);
    kube_spdy_codec_free(&pf->spdy);
    gc_buf_free(&pf->out);
    gc_buf_free(&pf->frame);
    free(pf);
}

/* --- output ------------------------------------------------------------------------------- */

/* RFC 6455 wants each frame's mask unpredictable, so they come from the CSPRNG, 64 at a time. */
static const uint8_t *next_mask(kube_pf *pf)
{
    if (pf->masks_used == sizeof(pf->masks)) {
        if (RAND_bytes(pf->masks, sizeof(pf->masks)) != 1)
            gc_fatal("libcrypto failed in RAND_bytes");
        pf->masks_used = 0;
    }
    pf->masks_used += 4;
    return pf->masks + pf->masks_used - 4;
}

static void send_frame(kube_pf *pf, const kube_spdy_frame *f)
{
    if (pf->kind == KUBE_TUNNEL_SPDY) {
        kube_spdy_encode(&pf->spdy, &pf->out, f);
        return;
    }
    gc_buf_reset(&pf->frame);
    kube_spdy_encode(&pf->spdy, &pf->frame, f);
    kube_ws_frame(&pf->out, KUBE_WS_BINARY, true, pf->frame.data, pf->frame.len, next_mask(pf));
}

static void send_control(kube_pf *pf, int type, uint32_t stream, uint32_t value)
{
    kube_spdy_frame f = {.type = type, .stream_id = stream, .value = value};
    send_frame(pf, &f);
}

static void send_data(kube_pf *pf, uint32_t stream, const uint8_t *data, size_t len, bool fin)
{
    do {
        size_t n = len < MAX_DATA_FRAME ? len : MAX_DATA_FRAME;
        kube_spdy_frame f = {.type = KUBE_SPDY_DATA, .stream_id = stream, .data = data, .len = n};
        if (fin && n == len)
            f.flags = KUBE_SPDY_FLAG_FIN;
        send_frame(pf, &f);
        data += n;
        len -= n;
    } while (len);
}

const uint8_t *kube_pf_output(const kube_pf *pf, size_t *len)
{
    *len = pf->out.len - pf->out_sent;
    return (const uint8_t *)pf->out.data + pf->out_sent;
}

void kube_pf_output_done(kube_pf *pf, size_t n)
{
    pf->out_sent += n;
    if (pf->out_sent >= pf->out.len) {
        gc_buf_reset(&pf->out);
        pf->out_sent = 0;
    } else if (pf->out_sent > OUTPUT_COMPACT && pf->out_sent > pf->out.len / 2) {
        memmove(pf->out.data, pf->out.data + pf->out_sent, pf->out.len - pf->out_sent + 1);
        pf->out.len -= pf->out_sent;
        pf->out_sent = 0;
    }
}

/* --- connections -------------------------------------------------------------------------- */

size_t kube_pf_count(const kube_pf *pf)
{
    return pf->count;
}

/* The index of the first connection whose `key` is at least `want` (ids and stream ids both
 * grow with the index). */
static size_t lower_bound(const kube_pf *pf, uint32_t want, bool by_stream)
{
    size_t lo = 0, hi = pf->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t key = by_stream ? pf->conns[mid]->error_stream : pf->conns[mid]->id;
        if (key < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static pf_conn *find_by_id(const kube_pf *pf, uint32_t id)
{
    size_t i = lower_bound(pf, id, false);
    return i < pf->count && pf->conns[i]->id == id ? pf->conns[i] : NULL;
}

/* The connection owning client stream `stream` (its error stream, or the data stream after). */
static pf_conn *find_by_stream(const kube_pf *pf, uint32_t stream)
{
    size_t i = lower_bound(pf, stream > 2 ? stream - 2 : 0, true);
    for (; i < pf->count && pf->conns[i]->error_stream <= stream; i++)
        if (stream == pf->conns[i]->error_stream || stream == pf->conns[i]->error_stream + 2)
            return pf->conns[i];
    return NULL;
}

static void detach(kube_pf *pf, pf_conn *c)
{
    size_t i = lower_bound(pf, c->id, false);
    memmove(pf->conns + i, pf->conns + i + 1, (pf->count - i - 1) * sizeof(*pf->conns));
    pf->count--;
}

static void emit(kube_pf *pf, kube_pf_event_type type, const pf_conn *c, const void *data,
                 size_t len, const char *text)
{
    kube_pf_event ev = {.type = type, .data = data, .len = len, .text = text};
    if (c) {
        ev.conn = c->id;
        ev.user = c->user;
    }
    if (pf->on_event)
        pf->on_event(pf->ctx, &ev);
}

/* Reports the connection CLOSED and forgets it. It leaves the table first, so the callback can
 * neither find it nor reset it twice. */
static void close_conn(kube_pf *pf, pf_conn *c, const char *text)
{
    detach(pf, c);
    emit(pf, KUBE_PF_CLOSED, c, NULL, 0, text);
    conn_free(c);
}

/* A connection is over once both sides finished the data stream and the kubelet finished the
 * error stream (whose text, if any, says what went wrong). */
static void finish_if_done(kube_pf *pf, pf_conn *c)
{
    if (c->local_fin && c->remote_fin && c->error_done)
        close_conn(pf, c, c->error_text.len ? c->error_text.data : NULL);
}

static void end_session(kube_pf *pf, const char *why)
{
    pf->state = PF_ENDED;
    while (pf->count)
        close_conn(pf, pf->conns[0], why);
}

int kube_pf_open(kube_pf *pf, void *user, uint32_t *conn, gc_error *err)
{
    if (pf->state != PF_OPEN)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "the port-forward session takes no new connections (it is closing); "
                       "open a new session");
    if (pf->next_stream > KUBE_SPDY_MAX_STREAM_ID - 2)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "the port-forward session has used all its stream ids; open a new session");
    pf_conn *c = gc_xcalloc(1, sizeof(*c));
    c->id = pf->next_id++;
    c->error_stream = pf->next_stream;
    pf->next_stream += 4;
    c->user = user;
    gc_buf_init(&c->held);
    gc_buf_init(&c->error_text);

    char request_id[16];
    snprintf(request_id, sizeof(request_id), "%u", c->id);
    kube_spdy_pair headers[] = {
        {"streamtype", "error"}, {"port", pf->port}, {"requestid", request_id}};
    kube_spdy_frame f = {.type = KUBE_SPDY_SYN_STREAM,
                         .flags = KUBE_SPDY_FLAG_FIN,
                         .stream_id = c->error_stream,
                         .headers = headers,
                         .header_count = 3};
    send_frame(pf, &f);
    headers[0].value = "data";
    f.flags = 0;
    f.stream_id = c->error_stream + 2;
    send_frame(pf, &f);

    if (pf->count == pf->cap) {
        pf->cap = pf->cap ? pf->cap * 2 : 16;
        pf->conns = gc_xrealloc(pf->conns, pf->cap * sizeof(*pf->conns));
    }
    pf->conns[pf->count++] = c;
    *conn = c->id;
    return 0;
}

/* The connection `id`, if the caller may still send on it. */
static pf_conn *writable(kube_pf *pf, uint32_t id, gc_error *err)
{
    pf_conn *c = pf->state == PF_OPEN || pf->state == PF_GOING_AWAY ? find_by_id(pf, id) : NULL;
    if (!c) {
        gc_fail(err, GC_EXIT_RUNTIME, "forwarded connection %u is not open", id);
        return NULL;
    }
    if (c->local_fin) {
        gc_fail(err, GC_EXIT_RUNTIME, "forwarded connection %u was already shut down", id);
        return NULL;
    }
    return c;
}

int kube_pf_send(kube_pf *pf, uint32_t id, const void *data, size_t len, gc_error *err)
{
    pf_conn *c = writable(pf, id, err);
    if (!c)
        return GC_EXIT_RUNTIME;
    if (!len)
        return 0;
    if (!c->opened)
        gc_buf_append(&c->held, data, len);
    else
        send_data(pf, c->error_stream + 2, data, len, false);
    return 0;
}

int kube_pf_shutdown(kube_pf *pf, uint32_t id, gc_error *err)
{
    pf_conn *c = writable(pf, id, err);
    if (!c)
        return GC_EXIT_RUNTIME;
    c->local_fin = true;
    if (c->opened) {
        send_data(pf, c->error_stream + 2, NULL, 0, true);
        finish_if_done(pf, c);
    }
    return 0;
}

void kube_pf_reset(kube_pf *pf, uint32_t id)
{
    pf_conn *c = find_by_id(pf, id);
    if (!c)
        return;
    /* Like kubectl, only the data stream is reset: the kubelet then ends the error stream. */
    send_control(pf, KUBE_SPDY_RST_STREAM, c->error_stream + 2, KUBE_SPDY_RST_CANCEL);
    detach(pf, c);
    conn_free(c);
}

void kube_pf_ping(kube_pf *pf)
{
    if (pf->state != PF_OPEN && pf->state != PF_GOING_AWAY)
        return;
    pf->ping_waiting = pf->next_ping;
    send_control(pf, KUBE_SPDY_PING, 0, pf->next_ping);
    pf->next_ping = pf->next_ping >= KUBE_SPDY_MAX_STREAM_ID - 2 ? 1 : pf->next_ping + 2;
}

void kube_pf_close(kube_pf *pf)
{
    if (pf->state == PF_CLOSING || pf->state == PF_ENDED)
        return;
    while (pf->count)
        kube_pf_reset(pf, pf->conns[0]->id);
    /* The last stream accepted from the server: none, it never opens any. */
    send_control(pf, KUBE_SPDY_GOAWAY, 0, KUBE_SPDY_GOAWAY_OK);
    if (pf->kind == KUBE_TUNNEL_WEBSOCKET) {
        uint8_t code[2] = {KUBE_WS_CLOSE_NORMAL >> 8, KUBE_WS_CLOSE_NORMAL & 0xff};
        kube_ws_frame(&pf->out, KUBE_WS_CLOSE, true, code, 2, next_mask(pf));
    }
    pf->state = PF_CLOSING;
}

void kube_pf_eof(kube_pf *pf, const char *why)
{
    if (pf->state != PF_ENDED)
        end_session(pf, why);
}

/* --- input -------------------------------------------------------------------------------- */

static void flush_held(kube_pf *pf, pf_conn *c)
{
    uint32_t stream = c->error_stream + 2;
    if (c->held.len || c->local_fin)
        send_data(pf, stream, (const uint8_t *)c->held.data, c->held.len, c->local_fin);
    gc_buf_free(&c->held);
    gc_buf_init(&c->held);
}

/* The pod side finished `stream` of connection `c` (FIN on a DATA, SYN_REPLY or HEADERS). */
static void stream_finished(kube_pf *pf, pf_conn *c, uint32_t stream)
{
    if (stream == c->error_stream) {
        c->error_done = true;
    } else if (!c->remote_fin) {
        c->remote_fin = true;
        uint32_t id = c->id;
        emit(pf, KUBE_PF_PEER_FIN, c, NULL, 0, NULL);
        c = find_by_id(pf, id);
        if (!c)
            return;
    }
    finish_if_done(pf, c);
}

static void on_data(kube_pf *pf, pf_conn *c, const kube_spdy_frame *f)
{
    if (f->stream_id == c->error_stream) {
        size_t room = MAX_ERROR_TEXT - c->error_text.len;
        gc_buf_append(&c->error_text, f->data, f->len < room ? f->len : room);
    } else if (f->len && !c->remote_fin) {
        uint32_t id = c->id;
        emit(pf, KUBE_PF_DATA, c, f->data, f->len, NULL);
        c = find_by_id(pf, id);
    }
    if (c && f->data_end && (f->flags & KUBE_SPDY_FLAG_FIN))
        stream_finished(pf, c, f->stream_id);
}

static void on_reply(kube_pf *pf, pf_conn *c, const kube_spdy_frame *f)
{
    if (f->stream_id != c->error_stream && !c->opened) {
        /* Held bytes go out before the caller hears OPENED, so they stay first. */
        c->opened = true;
        flush_held(pf, c);
        uint32_t id = c->id;
        emit(pf, KUBE_PF_OPENED, c, NULL, 0, NULL);
        c = find_by_id(pf, id);
    }
    if (c && (f->flags & KUBE_SPDY_FLAG_FIN))
        stream_finished(pf, c, f->stream_id);
}

static void on_reset(kube_pf *pf, pf_conn *c, const kube_spdy_frame *f)
{
    if (f->stream_id == c->error_stream) {
        c->error_done = true;
        finish_if_done(pf, c);
        return;
    }
    char text[160];
    if (!c->error_text.len)
        snprintf(text, sizeof(text), "the pod side reset the connection (RST_STREAM status %u)",
                 f->value);
    close_conn(pf, c, c->error_text.len ? c->error_text.data : text);
}

static void on_goaway(kube_pf *pf, uint32_t last_good)
{
    if (pf->state == PF_OPEN)
        pf->state = PF_GOING_AWAY;
    /* Streams after the last one the server accepted were dropped unanswered. */
    while (pf->count && pf->conns[pf->count - 1]->error_stream > last_good)
        close_conn(pf, pf->conns[pf->count - 1],
                   "the server stopped taking connections (GOAWAY) before it took this one");
    emit(pf, KUBE_PF_GOAWAY, NULL, NULL, 0, NULL);
}

static void on_frame(kube_pf *pf, const kube_spdy_frame *f)
{
    if (pf->state == PF_CLOSING)
        return;
    switch (f->type) {
    case KUBE_SPDY_PING:
        if (!(f->value & 1))
            send_control(pf, KUBE_SPDY_PING, 0, f->value);
        else if (f->value == pf->ping_waiting) {
            pf->ping_waiting = 0;
            emit(pf, KUBE_PF_PONG, NULL, NULL, 0, NULL);
        }
        return;
    case KUBE_SPDY_GOAWAY:
        on_goaway(pf, f->stream_id);
        return;
    case KUBE_SPDY_SYN_STREAM:
        /* A port-forward server never opens streams. */
        send_control(pf, KUBE_SPDY_RST_STREAM, f->stream_id, KUBE_SPDY_RST_REFUSED);
        return;
    case KUBE_SPDY_SETTINGS:
    case KUBE_SPDY_WINDOW_UPDATE:
        return;
    default:
        break;
    }
    /* Frames for streams already closed or reset here are late, not wrong: ignore them. */
    pf_conn *c = find_by_stream(pf, f->stream_id);
    if (!c)
        return;
    if (f->type == KUBE_SPDY_DATA)
        on_data(pf, c, f);
    else if (f->type == KUBE_SPDY_SYN_REPLY)
        on_reply(pf, c, f);
    else if (f->type == KUBE_SPDY_RST_STREAM)
        on_reset(pf, c, f);
    else if (f->type == KUBE_SPDY_HEADERS && (f->flags & KUBE_SPDY_FLAG_FIN))
        stream_finished(pf, c, f->stream_id);
}

static int ended(kube_pf *pf, int rc, gc_error *err)
{
    end_session(pf, err->message);
    return rc;
}

static int feed_spdy(kube_pf *pf, const uint8_t *in, size_t len, gc_error *err)
{
    for (;;) {
        kube_spdy_frame f;
        int rc = kube_spdy_decode(&pf->spdy, &in, &len, &f, err);
        if (rc)
            return ended(pf, rc, err);
        if (f.type == KUBE_SPDY_NONE)
            return 0;
        on_frame(pf, &f);
    }
}

static int on_ws_close(kube_pf *pf, const kube_ws_event *ev, gc_error *err)
{
    if (pf->state != PF_CLOSING) {
        /* Answer with the same code, as RFC 6455 asks, then stop. */
        uint8_t code[2] = {(uint8_t)(ev->close_code >> 8), (uint8_t)ev->close_code};
        size_t n = ev->close_code == KUBE_WS_CLOSE_NO_STATUS ? 0 : 2;
        kube_ws_frame(&pf->out, KUBE_WS_CLOSE, true, code, n, next_mask(pf));
    }
    int reason = (int)(ev->len < 200 ? ev->len : 200);
    gc_fail(err, GC_EXIT_RUNTIME, "the API server closed the port-forward tunnel (code %d%s%.*s)",
            ev->close_code, reason ? ": " : "", reason, (const char *)ev->data);
    return ended(pf, GC_EXIT_RUNTIME, err);
}

int kube_pf_feed(kube_pf *pf, const void *data, size_t len, gc_error *err)
{
    if (pf->state == PF_ENDED)
        return gc_fail(err, GC_EXIT_RUNTIME, "the port-forward session has ended");
    const uint8_t *in = data;
    if (pf->kind == KUBE_TUNNEL_SPDY)
        return feed_spdy(pf, in, len, err);
    for (;;) {
        kube_ws_event ev;
        int rc = kube_ws_decode(&pf->ws, &in, &len, &ev, err);
        if (rc)
            return ended(pf, rc, err);
        switch (ev.type) {
        case KUBE_WS_NEED_MORE:
            return 0;
        case KUBE_WS_DATA:
            /* The API server fails the tunnel on anything but binary; so does this end. */
            if (ev.opcode != KUBE_WS_BINARY) {
                gc_fail(err, GC_EXIT_RUNTIME,
                        "the API server sent a text message in the port-forward tunnel, "
                        "which carries binary messages only");
                return ended(pf, GC_EXIT_RUNTIME, err);
            }
            rc = feed_spdy(pf, ev.data, ev.len, err);
            if (rc)
                return rc;
            break;
        case KUBE_WS_PING_RECEIVED:
            kube_ws_frame(&pf->out, KUBE_WS_PONG, true, ev.data, ev.len, next_mask(pf));
            break;
        case KUBE_WS_PONG_RECEIVED:
            break;
        case KUBE_WS_CLOSE_RECEIVED:
            return on_ws_close(pf, &ev, err);
        }
    }
}
