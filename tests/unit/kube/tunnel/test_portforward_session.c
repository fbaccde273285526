/*
 * The port-forward session against a scripted kubelet: the test plays the server side with its
 * own SPDY codec, reads back every frame the session queued (unwrapping and unmasking the
 * WebSocket frames), and answers with hand-built server frames. Covers stream pairs and their
 * headers, bytes held until the SYN_REPLY, half-close both ways, error text, resets, many
 * connections at once, PING, GOAWAY, the WebSocket's own ping and close, protocol errors, the
 * transport ending, callbacks that act on the session while it reports, and mutated server
 * byte streams (fixed seed, bounded), which must end in a clean error or be taken, never crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "kube/tunnel/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SEEN   1024
#define MAX_EVENTS 2048
#define MAX_CONNS  128

/* A frame the session sent, as the server read it. */
typedef struct sent {
    int type;
    uint8_t flags;
    uint32_t stream_id, value;
    char headers[256];
    size_t len; /* DATA: payload bytes, joined into the test's per-stream buffer */
} sent;

typedef struct event {
    kube_pf_event_type type;
    uint32_t conn;
    void *user;
    char text[256];
    bool has_text;
} event;

typedef struct harness {
    kube_tunnel_kind kind;
    kube_pf *pf;
    kube_spdy_codec server; /* the kubelet's end */
    gc_buf client_spdy;     /* SPDY bytes unwrapped from the session's WebSocket frames */
    sent frames[MAX_SEEN];  /* every frame the session sent, in order */
    size_t nframes;
    gc_buf stream_data[2 * MAX_CONNS + 8]; /* DATA payload per client stream id / 2 */
    int ws_close_code;                     /* the close frame the session sent, or 0 */
    gc_buf ws_pong;                        /* the payload of the last pong the session sent */
    event events[MAX_EVENTS];
    size_t nevents;
    gc_buf received[MAX_CONNS]; /* KUBE_PF_DATA bytes per connection */
    size_t feed_step;           /* feed the session this many bytes at a time */
    /* What the event callback does besides recording. */
    bool reset_on_data;
    bool open_on_peer_fin;
    bool send_on_opened;
} harness;

static void on_event(void *ctx, const kube_pf_event *ev)
{
    harness *h = ctx;
    assert_true(h->nevents < MAX_EVENTS);
    event *e = &h->events[h->nevents++];
    memset(e, 0, sizeof(*e));
    e->type = ev->type;
    e->conn = ev->conn;
    e->user = ev->user;
    if (ev->text) {
        e->has_text = true;
        snprintf(e->text, sizeof(e->text), "%s", ev->text);
    }
    if (ev->type == KUBE_PF_DATA) {
        assert_true(ev->conn < MAX_CONNS);
        gc_buf_append(&h->received[ev->conn], ev->data, ev->len);
        if (h->reset_on_data)
            kube_pf_reset(h->pf, ev->conn);
    }
    if (ev->type == KUBE_PF_PEER_FIN && h->open_on_peer_fin) {
        uint32_t id;
        gc_error err = {0};
        assert_int_equal(kube_pf_open(h->pf, NULL, &id, &err), 0);
    }
    if (ev->type == KUBE_PF_OPENED && h->send_on_opened) {
        gc_error err = {0};
        assert_int_equal(kube_pf_send(h->pf, ev->conn, "+late", 5, &err), 0);
    }
}

static int setup_kind(void **state, kube_tunnel_kind kind)
{
    harness *h = calloc(1, sizeof(*h));
    h->kind = kind;
    h->pf = kube_pf_new(kind, 29000, on_event, h);
    kube_spdy_codec_init(&h->server);
    gc_buf_init(&h->client_spdy);
    gc_buf_init(&h->ws_pong);
    for (size_t i = 0; i < sizeof(h->stream_data) / sizeof(*h->stream_data); i++)
        gc_buf_init(&h->stream_data[i]);
    for (size_t i = 0; i < MAX_CONNS; i++)
        gc_buf_init(&h->received[i]);
    h->feed_step = 1 << 20;
    *state = h;
    return 0;
}

static int setup_ws(void **state)
{
    return setup_kind(state, KUBE_TUNNEL_WEBSOCKET);
}

static int setup_spdy(void **state)
{
    return setup_kind(state, KUBE_TUNNEL_SPDY);
}

static int teardown(void **state)
{
    harness *h = *state;
    kube_pf_free(h->pf);
    kube_spdy_codec_free(&h->server);
    gc_buf_free(&h->client_spdy);
    gc_buf_free(&h->ws_pong);
    for (size_t i = 0; i < sizeof(h->stream_data) / sizeof(*h->stream_data); i++)
        gc_buf_free(&h->stream_data[i]);
    for (size_t i = 0; i < MAX_CONNS; i++)
        gc_buf_free(&h->received[i]);
    free(h);
    return 0;
}

/* --- the server side ---------------------------------------------------------------------- */

/* Reads the client's WebSocket frames: every one must be masked; binary payloads are SPDY. */
static void unwrap_ws(harness *h, const uint8_t *p, size_t len)
{
    size_t pos = 0;
    while (pos < len) {
        assert_true(len - pos >= 6);
        uint8_t b0 = p[pos], b1 = p[pos + 1];
        assert_true(b0 & 0x80); /* the session sends whole messages */
        assert_true(b1 & 0x80); /* masked */
        uint64_t n = b1 & 0x7f;
        size_t at = pos + 2;
        if (n == 126) {
            n = (uint64_t)p[at] << 8 | p[at + 1];
            at += 2;
        } else if (n == 127) {
            n = 0;
            for (size_t i = 0; i < 8; i++)
                n = n << 8 | p[at + i];
            at += 8;
        }
        const uint8_t *mask = p + at;
        at += 4;
        assert_true(len - at >= n);
        uint8_t *payload = malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++)
            payload[i] = p[at + i] ^ mask[i & 3];
        int opcode = b0 & 0x0f;
        if (opcode == KUBE_WS_BINARY) {
            gc_buf_append(&h->client_spdy, payload, n);
        } else if (opcode == KUBE_WS_CLOSE) {
            h->ws_close_code = n >= 2 ? payload[0] << 8 | payload[1] : KUBE_WS_CLOSE_NO_STATUS;
        } else {
            assert_int_equal(opcode, KUBE_WS_PONG);
            gc_buf_reset(&h->ws_pong);
            gc_buf_append(&h->ws_pong, payload, n);
        }
        free(payload);
        pos = at + n;
    }
}

/* Takes everything the session queued (in uneven pieces, as a socket would) and decodes it. */
static void pump(harness *h)
{
    gc_buf wire;
    gc_buf_init(&wire);
    for (size_t piece = 1;; piece = piece * 3 + 1) {
        size_t len;
        const uint8_t *out = kube_pf_output(h->pf, &len);
        if (!len)
            break;
        size_t n = len < piece ? len : piece;
        gc_buf_append(&wire, out, n);
        kube_pf_output_done(h->pf, n);
    }
    if (h->kind == KUBE_TUNNEL_WEBSOCKET)
        unwrap_ws(h, (const uint8_t *)wire.data, wire.len);
    else
        gc_buf_append(&h->client_spdy, wire.data, wire.len);
    gc_buf_free(&wire);

    const uint8_t *in = (const uint8_t *)h->client_spdy.data;
    size_t left = h->client_spdy.len;
    for (;;) {
        kube_spdy_frame f;
        gc_error err = {0};
        assert_int_equal(kube_spdy_decode(&h->server, &in, &left, &f, &err), 0);
        if (f.type == KUBE_SPDY_NONE)
            break;
        if (f.type == KUBE_SPDY_DATA) {
            assert_true(f.stream_id / 2 < sizeof(h->stream_data) / sizeof(*h->stream_data));
            gc_buf_append(&h->stream_data[f.stream_id / 2], f.data, f.len);
            if (!f.data_end)
                continue;
        }
        assert_true(h->nframes < MAX_SEEN);
        sent *s = &h->frames[h->nframes++];
        memset(s, 0, sizeof(*s));
        s->type = f.type;
        s->flags = f.flags;
        s->stream_id = f.stream_id;
        s->value = f.value;
        s->len = f.len;
        for (size_t i = 0; i < f.header_count; i++) {
            size_t used = strlen(s->headers);
            snprintf(s->headers + used, sizeof(s->headers) - used, "%s=%s;", f.headers[i].name,
                     f.headers[i].value);
        }
    }
    gc_buf_reset(&h->client_spdy);
}

/* One unmasked binary WebSocket message carrying spdy[from, to). */
static void ws_message(gc_buf *wire, const gc_buf *spdy, size_t from, size_t to)
{
    size_t n = to - from;
    assert_true(n <= 0xffff);
    uint8_t head[4] = {0x80 | KUBE_WS_BINARY, (uint8_t)n};
    if (n < 126) {
        gc_buf_append(wire, head, 2);
    } else {
        head[1] = 126;
        head[2] = (uint8_t)(n >> 8);
        head[3] = (uint8_t)n;
        gc_buf_append(wire, head, 4);
    }
    gc_buf_append(wire, spdy->data + from, n);
}

/* Sends a server frame to the session; returns what kube_pf_feed returned. */
static int serve(harness *h, const kube_spdy_frame *f, gc_error *err)
{
    gc_buf spdy, wire;
    gc_buf_init(&spdy);
    gc_buf_init(&wire);
    kube_spdy_encode(&h->server, &spdy, f);
    if (h->kind == KUBE_TUNNEL_WEBSOCKET) {
        /* Split across two binary messages, as the API server may: SPDY frames and WebSocket
         * messages need not line up. */
        ws_message(&wire, &spdy, 0, spdy.len / 2);
        ws_message(&wire, &spdy, spdy.len / 2, spdy.len);
    } else {
        gc_buf_append(&wire, spdy.data, spdy.len);
    }
    int rc = 0;
    for (size_t off = 0; off < wire.len && !rc; off += h->feed_step) {
        size_t n = wire.len - off < h->feed_step ? wire.len - off : h->feed_step;
        rc = kube_pf_feed(h->pf, wire.data + off, n, err);
    }
    gc_buf_free(&spdy);
    gc_buf_free(&wire);
    return rc;
}

static void serve_ok(harness *h, const kube_spdy_frame *f)
{
    gc_error err = {0};
    int rc = serve(h, f, &err);
    if (rc)
        fail_msg("feed failed: %s", err.message);
}

static void reply(harness *h, uint32_t stream)
{
    kube_spdy_frame f = {.type = KUBE_SPDY_SYN_REPLY, .stream_id = stream};
    serve_ok(h, &f);
}

static void server_data(harness *h, uint32_t stream, const char *text, bool fin)
{
    kube_spdy_frame f = {.type = KUBE_SPDY_DATA,
                         .stream_id = stream,
                         .data = (const uint8_t *)text,
                         .len = strlen(text),
                         .flags = fin ? KUBE_SPDY_FLAG_FIN : 0};
    serve_ok(h, &f);
}

static void server_control(harness *h, int type, uint32_t stream, uint32_t value)
{
    kube_spdy_frame f = {.type = type, .stream_id = stream, .value = value};
    serve_ok(h, &f);
}

static uint32_t open_conn(harness *h, void *user)
{
    uint32_t id = 999;
    gc_error err = {0};
    assert_int_equal(kube_pf_open(h->pf, user, &id, &err), 0);
    return id;
}

/* Opens a connection and lets the server accept both its streams. */
static uint32_t open_accepted(harness *h)
{
    uint32_t id = open_conn(h, NULL);
    pump(h);
    uint32_t error_stream = 1 + 4 * id;
    reply(h, error_stream);
    reply(h, error_stream + 2);
    return id;
}

static size_t count_events(const harness *h, kube_pf_event_type type)
{
    size_t n = 0;
    for (size_t i = 0; i < h->nevents; i++)
        n += h->events[i].type == type;
    return n;
}

static const event *last_event(const harness *h, kube_pf_event_type type, uint32_t conn)
{
    for (size_t i = h->nevents; i-- > 0;)
        if (h->events[i].type == type && h->events[i].conn == conn)
            return &h->events[i];
    return NULL;
}

static const sent *last_frame(const harness *h, int type)
{
    for (size_t i = h->nframes; i-- > 0;)
        if (h->frames[i].type == type)
            return &h->frames[i];
    return NULL;
}

/* --- tests -------------------------------------------------------------------------------- */

static void a_connection_is_an_error_and_a_data_stream(void **state)
{
    harness *h = *state;
    int user = 7;
    assert_int_equal(open_conn(h, &user), 0);
    assert_int_equal(open_conn(h, NULL), 1);
    assert_int_equal(kube_pf_count(h->pf), 2);
    pump(h);
    assert_int_equal(h->nframes, 4);
    static const char *const want[] = {
        "streamtype=error;port=29000;requestid=0;", "streamtype=data;port=29000;requestid=0;",
        "streamtype=error;port=29000;requestid=1;", "streamtype=data;port=29000;requestid=1;"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(h->frames[i].type, KUBE_SPDY_SYN_STREAM);
        assert_int_equal(h->frames[i].stream_id, 1 + 2 * i);
        /* The error stream is one-way (FIN at once); the data stream stays open. */
        assert_int_equal(h->frames[i].flags, i % 2 == 0 ? KUBE_SPDY_FLAG_FIN : 0);
        assert_string_equal(h->frames[i].headers, want[i]);
    }
    reply(h, 1);
    assert_int_equal(h->nevents, 0); /* the error stream's reply opens nothing */
    reply(h, 3);
    assert_int_equal(h->nevents, 1);
    assert_int_equal(h->events[0].type, KUBE_PF_OPENED);
    assert_int_equal(h->events[0].conn, 0);
    assert_ptr_equal(h->events[0].user, &user);
}

static void bytes_wait_for_the_data_streams_reply(void **state)
{
    harness *h = *state;
    gc_error err = {0};
    uint32_t id = open_conn(h, NULL);
    assert_int_equal(kube_pf_send(h->pf, id, "early ", 6, &err), 0);
    assert_int_equal(kube_pf_send(h->pf, id, "bytes", 5, &err), 0);
    pump(h);
    assert_int_equal(h->nframes, 2);
    assert_int_equal(h->stream_data[1].len, 0);
    h->send_on_opened = true; /* sent from the OPENED callback: must come after the held bytes */
    reply(h, 3);
    pump(h);
    assert_string_equal(h->stream_data[1].data, "early bytes+late");

    /* A large write goes out as several DATA frames of at most 64 KiB, bytes intact. */
    size_t big = 200 * 1024 + 17;
    uint8_t *payload = malloc(big);
    for (size_t i = 0; i < big; i++)
        payload[i] = (uint8_t)(i * 31 + 5);
    size_t before = h->nframes;
    assert_int_equal(kube_pf_send(h->pf, id, payload, big, &err), 0);
    pump(h);
    assert_int_equal(h->nframes - before, 4);
    for (size_t i = before; i < h->nframes; i++) {
        assert_int_equal(h->frames[i].type, KUBE_SPDY_DATA);
        assert_true(h->frames[i].len <= 64 * 1024);
    }
    assert_int_equal(h->stream_data[1].len, 16 + big);
    assert_memory_equal(h->stream_data[1].data + 16, payload, big);
    free(payload);
}

static void echo_with_half_close_both_ways(void **state)
{
    harness *h = *state;
    gc_error err = {0};
    uint32_t id = open_accepted(h);
    assert_int_equal(kube_pf_send(h->pf, id, "ping?", 5, &err), 0);
    server_data(h, 3, "hello", false);
    server_data(h, 3, " world", false);
    assert_string_equal(h->received[id].data, "hello world");

    /* We half-close first: FIN goes out, the pod side can still send. */
    assert_int_equal(kube_pf_shutdown(h->pf, id, &err), 0);
    pump(h);
    const sent *fin = last_frame(h, KUBE_SPDY_DATA);
    assert_int_equal(fin->stream_id, 3);
    assert_int_equal(fin->flags, KUBE_SPDY_FLAG_FIN);
    assert_string_equal(h->stream_data[1].data, "ping?");
    assert_int_equal(kube_pf_send(h->pf, id, "x", 1, &err), GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "already shut down"));
    server_data(h, 3, "!", true);
    assert_string_equal(h->received[id].data, "hello world!");
    assert_int_equal(count_events(h, KUBE_PF_PEER_FIN), 1);
    assert_int_equal(count_events(h, KUBE_PF_CLOSED), 0); /* the error stream is still open */
    server_data(h, 1, "", true);
    const event *closed = last_event(h, KUBE_PF_CLOSED, id);
    assert_non_null(closed);
    assert_false(closed->has_text);
    assert_int_equal(kube_pf_count(h->pf), 0);

    /* The other order: the pod side finishes first; our FIN then completes the connection at
     * once, from kube_pf_shutdown. */
    id = open_accepted(h);
    server_data(h, 7, "bye", true);
    server_data(h, 5, "", true);
    assert_non_null(last_event(h, KUBE_PF_PEER_FIN, id));
    assert_null(last_event(h, KUBE_PF_CLOSED, id));
    assert_int_equal(kube_pf_send(h->pf, id, "last words", 10, &err), 0);
    assert_int_equal(kube_pf_shutdown(h->pf, id, &err), 0);
    assert_non_null(last_event(h, KUBE_PF_CLOSED, id));
    pump(h);
    assert_string_equal(h->stream_data[3].data, "last words");

    /* A FIN before the reply is held like bytes are, and sent after them. */
    id = open_conn(h, NULL);
    assert_int_equal(kube_pf_send(h->pf, id, "q", 1, &err), 0);
    assert_int_equal(kube_pf_shutdown(h->pf, id, &err), 0);
    pump(h);
    assert_int_equal(h->stream_data[5].len, 0);
    reply(h, 11);
    pump(h);
    assert_string_equal(h->stream_data[5].data, "q");
    fin = last_frame(h, KUBE_SPDY_DATA);
    assert_int_equal(fin->stream_id, 11);
    assert_int_equal(fin->flags, KUBE_SPDY_FLAG_FIN);
}

static void kubelet_errors_close_the_connection_with_their_text(void **state)
{
    harness *h = *state;
    /* What the kubelet does when the pod port does not answer: text, then both resets. */
    uint32_t id = open_accepted(h);
    server_data(h, 1, "error forwarding port 29000 to pod p-0, uid : ", false);
    server_data(h, 1, "dial tcp 127.0.0.1:29000: connect: connection refused", false);
    server_control(h, KUBE_SPDY_RST_STREAM, 3, KUBE_SPDY_RST_CANCEL);
    server_control(h, KUBE_SPDY_RST_STREAM, 1, KUBE_SPDY_RST_CANCEL);
    const event *closed = last_event(h, KUBE_PF_CLOSED, id);
    assert_non_null(closed);
    assert_string_equal(closed->text, "error forwarding port 29000 to pod p-0, uid : dial tcp "
                                      "127.0.0.1:29000: connect: connection refused");
    assert_int_equal(count_events(h, KUBE_PF_CLOSED), 1);

    /* A reset without text says so, even before the stream was answered. */
    id = open_conn(h, NULL);
    server_control(h, KUBE_SPDY_RST_STREAM, 7, KUBE_SPDY_RST_REFUSED);
    closed = last_event(h, KUBE_PF_CLOSED, id);
    assert_non_null(closed);
    assert_string_equal(closed->text, "the pod side reset the connection (RST_STREAM status 3)");
    assert_int_equal(kube_pf_count(h->pf), 0);

    /* Frames for connections that are gone are late, not wrong. */
    server_data(h, 3, "late", true);
    server_control(h, KUBE_SPDY_RST_STREAM, 7, KUBE_SPDY_RST_CANCEL);
    reply(h, 5);
    assert_int_equal(count_events(h, KUBE_PF_CLOSED), 2);
    assert_int_equal(count_events(h, KUBE_PF_DATA), 0);

    /* A reset of our own sends RST_STREAM on the data stream and reports nothing. */
    id = open_accepted(h);
    size_t before = h->nevents;
    kube_pf_reset(h->pf, id);
    kube_pf_reset(h->pf, id);
    pump(h);
    const sent *rst = last_frame(h, KUBE_SPDY_RST_STREAM);
    assert_int_equal(rst->stream_id, 11);
    assert_int_equal(rst->value, KUBE_SPDY_RST_CANCEL);
    assert_int_equal(h->nevents, before);
    gc_error err = {0};
    assert_int_equal(kube_pf_send(h->pf, id, "x", 1, &err), GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "is not open"));
}

static void a_hundred_connections_at_once(void **state)
{
    harness *h = *state;
    gc_error err = {0};
    enum { N = 100 };
    for (uint32_t i = 0; i < N; i++) {
        assert_int_equal(open_conn(h, NULL), i);
        char msg[32];
        snprintf(msg, sizeof(msg), "from %u;", i);
        assert_int_equal(kube_pf_send(h->pf, i, msg, strlen(msg), &err), 0);
    }
    pump(h);
    /* The server answers in reverse order, then talks to every connection interleaved. */
    for (uint32_t i = N; i-- > 0;) {
        reply(h, 1 + 4 * i);
        reply(h, 3 + 4 * i);
    }
    pump(h);
    assert_int_equal(count_events(h, KUBE_PF_OPENED), N);
    for (int round = 0; round < 3; round++)
        for (uint32_t i = 0; i < N; i++) {
            char msg[32];
            snprintf(msg, sizeof(msg), "%u.%d;", i, round);
            server_data(h, 3 + 4 * i, msg, round == 2 && i % 2 == 0);
        }
    for (uint32_t i = 0; i < N; i++) {
        char want[64], sent_text[32];
        snprintf(want, sizeof(want), "%u.0;%u.1;%u.2;", i, i, i);
        assert_string_equal(h->received[i].data, want);
        snprintf(sent_text, sizeof(sent_text), "from %u;", i);
        assert_string_equal(h->stream_data[(3 + 4 * i) / 2].data, sent_text);
    }
    assert_int_equal(count_events(h, KUBE_PF_PEER_FIN), N / 2);
    /* Even connections end cleanly, odd ones are reset by the pod side. */
    for (uint32_t i = 0; i < N; i++) {
        if (i % 2 == 0) {
            assert_int_equal(kube_pf_shutdown(h->pf, i, &err), 0);
            server_data(h, 1 + 4 * i, "", true);
        } else {
            server_control(h, KUBE_SPDY_RST_STREAM, 3 + 4 * i, KUBE_SPDY_RST_CANCEL);
        }
    }
    assert_int_equal(count_events(h, KUBE_PF_CLOSED), N);
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(last_event(h, KUBE_PF_CLOSED, i)->has_text, i % 2 == 1);
    assert_int_equal(kube_pf_count(h->pf), 0);
}

static void pings_both_ways(void **state)
{
    harness *h = *state;
    kube_pf_ping(h->pf);
    pump(h);
    const sent *ping = last_frame(h, KUBE_SPDY_PING);
    assert_int_equal(ping->value, 1);
    server_control(h, KUBE_SPDY_PING, 0, 1);
    assert_int_equal(count_events(h, KUBE_PF_PONG), 1);
    server_control(h, KUBE_SPDY_PING, 0, 1); /* answered already: nothing more */
    assert_int_equal(count_events(h, KUBE_PF_PONG), 1);
    kube_pf_ping(h->pf);
    pump(h);
    assert_int_equal(last_frame(h, KUBE_SPDY_PING)->value, 3);

    /* The server's pings (even ids) are echoed. */
    size_t before = h->nframes;
    server_control(h, KUBE_SPDY_PING, 0, 2);
    pump(h);
    assert_int_equal(h->nframes, before + 1);
    assert_int_equal(h->frames[before].type, KUBE_SPDY_PING);
    assert_int_equal(h->frames[before].value, 2);

    /* SETTINGS and WINDOW_UPDATE change nothing: the kubelet does no flow control. */
    kube_spdy_setting window = {0, 7, 1};
    kube_spdy_frame settings = {
        .type = KUBE_SPDY_SETTINGS, .settings = &window, .settings_count = 1};
    serve_ok(h, &settings);
    server_control(h, KUBE_SPDY_WINDOW_UPDATE, 3, 1000);
    uint32_t id = open_accepted(h);
    gc_error err = {0};
    char big[5000];
    memset(big, 'w', sizeof(big));
    assert_int_equal(kube_pf_send(h->pf, id, big, sizeof(big), &err), 0);
    pump(h);
    assert_int_equal(h->stream_data[1].len, sizeof(big));
}

static void goaway_ends_new_connections_not_open_ones(void **state)
{
    harness *h = *state;
    gc_error err = {0};
    uint32_t a = open_accepted(h);
    uint32_t b = open_conn(h, NULL);
    pump(h);
    /* The server took streams up to 3 (connection a), not b's 5 and 7. */
    server_control(h, KUBE_SPDY_GOAWAY, 3, KUBE_SPDY_GOAWAY_OK);
    assert_int_equal(count_events(h, KUBE_PF_GOAWAY), 1);
    const event *closed = last_event(h, KUBE_PF_CLOSED, b);
    assert_non_null(closed);
    assert_non_null(strstr(closed->text, "GOAWAY"));
    assert_null(last_event(h, KUBE_PF_CLOSED, a));
    uint32_t c;
    assert_int_equal(kube_pf_open(h->pf, NULL, &c, &err), GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "open a new session"));
    /* a goes on until it ends. */
    server_data(h, 3, "still here", false);
    assert_string_equal(h->received[a].data, "still here");
    assert_int_equal(kube_pf_send(h->pf, a, "me too", 6, &err), 0);
    pump(h);
    assert_string_equal(h->stream_data[1].data, "me too");
}

static void server_streams_are_refused(void **state)
{
    harness *h = *state;
    kube_spdy_pair headers[] = {{"streamtype", "data"}};
    kube_spdy_frame syn = {
        .type = KUBE_SPDY_SYN_STREAM, .stream_id = 2, .headers = headers, .header_count = 1};
    serve_ok(h, &syn);
    pump(h);
    const sent *rst = last_frame(h, KUBE_SPDY_RST_STREAM);
    assert_non_null(rst);
    assert_int_equal(rst->stream_id, 2);
    assert_int_equal(rst->value, KUBE_SPDY_RST_REFUSED);
    assert_int_equal(h->nevents, 0);
}

static int feed_ws(harness *h, const char *bytes, size_t len, gc_error *err)
{
    return kube_pf_feed(h->pf, bytes, len, err);
}

static void websocket_ping_and_close(void **state)
{
    harness *h = *state;
    gc_error err = {0};
    uint32_t id = open_accepted(h);
    assert_int_equal(feed_ws(h, "\x89\x04ping", 6, &err), 0);
    assert_int_equal(feed_ws(h, "\x8a\x00", 2, &err), 0); /* an unasked pong is ignored */
    pump(h);
    assert_int_equal(h->ws_pong.len, 4);
    assert_memory_equal(h->ws_pong.data, "ping", 4);

    assert_int_equal(feed_ws(h, "\x88\x0f\x03\xe9shutting down", 17, &err), GC_EXIT_RUNTIME);
    assert_string_equal(err.message,
                        "the API server closed the port-forward tunnel (code 1001: shutting down)");
    const event *closed = last_event(h, KUBE_PF_CLOSED, id);
    assert_non_null(closed);
    assert_string_equal(closed->text, err.message);
    pump(h);
    assert_int_equal(h->ws_close_code, 1001); /* the close is answered with its code */
    assert_int_equal(feed_ws(h, "\x82\x00", 2, &err), GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "has ended"));
    assert_int_equal(kube_pf_open(h->pf, NULL, &id, &err), GC_EXIT_RUNTIME);
}

static void broken_streams_end_the_session(void **state)
{
    harness *h = *state;
    gc_error err = {0};
    /* A text message: the tunnel is binary only. */
    uint32_t id = open_accepted(h);
    assert_int_equal(feed_ws(h, "\x81\x02hi", 4, &err), GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "text message"));
    assert_non_null(strstr(last_event(h, KUBE_PF_CLOSED, id)->text, "text message"));
    assert_int_equal(kube_pf_count(h->pf), 0);
}

static void broken_spdy_inside_websocket(void **state)
{
    harness *h = *state;
    gc_error err = {0};
    uint32_t a = open_accepted(h);
    uint32_t b = open_accepted(h);
    /* A SPDY/2 control frame inside a good binary message. */
    assert_int_equal(
        feed_ws(h, "\x82\x0c\x80\x02\x00\x06\x00\x00\x00\x04\x00\x00\x00\x01", 14, &err),
        GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "not SPDY version 3"));
    assert_non_null(last_event(h, KUBE_PF_CLOSED, a));
    assert_non_null(last_event(h, KUBE_PF_CLOSED, b));
    /* A masked server frame breaks the WebSocket layer itself. */
    teardown(state);
    setup_ws(state);
    h = *state;
    a = open_accepted(h);
    assert_int_equal(feed_ws(h, "\x82\x81\0\0\0\0x", 7, &err), GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "masked"));
    assert_non_null(last_event(h, KUBE_PF_CLOSED, a));
}

static void transport_end_closes_everything(void **state)
{
    harness *h = *state;
    uint32_t a = open_accepted(h);
    uint32_t b = open_conn(h, NULL);
    kube_pf_eof(h->pf, "the connection to the API server was reset");
    assert_string_equal(last_event(h, KUBE_PF_CLOSED, a)->text,
                        "the connection to the API server was reset");
    assert_non_null(last_event(h, KUBE_PF_CLOSED, b));
    assert_int_equal(kube_pf_count(h->pf), 0);
    kube_pf_eof(h->pf, "again");
    assert_int_equal(count_events(h, KUBE_PF_CLOSED), 2);
}

static void closing_politely(void **state)
{
    harness *h = *state;
    open_accepted(h);
    open_accepted(h);
    pump(h);
    size_t before = h->nframes;
    kube_pf_close(h->pf);
    pump(h);
    assert_int_equal(h->nframes, before + 3);
    assert_int_equal(h->frames[before].type, KUBE_SPDY_RST_STREAM);
    assert_int_equal(h->frames[before].stream_id, 3);
    assert_int_equal(h->frames[before + 1].stream_id, 7);
    assert_int_equal(h->frames[before + 2].type, KUBE_SPDY_GOAWAY);
    assert_int_equal(h->frames[before + 2].stream_id, 0);
    assert_int_equal(h->ws_close_code, KUBE_WS_CLOSE_NORMAL);
    assert_int_equal(kube_pf_count(h->pf), 0);
    assert_int_equal(h->nevents, 2); /* the OPENED ones only: closing reports nothing */
    /* Late frames change nothing; the server's answering close ends the session. */
    server_data(h, 3, "late", false);
    gc_error err = {0};
    assert_int_equal(feed_ws(h, "\x88\x02\x03\xe8", 4, &err), GC_EXIT_RUNTIME);
    assert_int_equal(h->nevents, 2);
}

static void callbacks_may_act_on_the_session(void **state)
{
    harness *h = *state;
    uint32_t a = open_accepted(h);
    /* Resetting a connection from its own DATA event: the FIN in the same frame is dropped
     * with it. */
    h->reset_on_data = true;
    server_data(h, 3, "one", true);
    assert_null(last_event(h, KUBE_PF_PEER_FIN, a));
    assert_int_equal(kube_pf_count(h->pf), 0);
    h->reset_on_data = false;
    /* Opening a connection from a PEER_FIN event. */
    uint32_t b = open_accepted(h);
    h->open_on_peer_fin = true;
    server_data(h, 7, "", true);
    assert_non_null(last_event(h, KUBE_PF_PEER_FIN, b));
    assert_int_equal(kube_pf_count(h->pf), 2);
    pump(h);
    assert_string_equal(last_frame(h, KUBE_SPDY_SYN_STREAM)->headers,
                        "streamtype=data;port=29000;requestid=2;");
}

static void raw_spdy_fed_a_byte_at_a_time(void **state)
{
    harness *h = *state;
    h->feed_step = 1;
    gc_error err = {0};
    uint32_t id = open_accepted(h);
    assert_int_equal(kube_pf_send(h->pf, id, "GET", 3, &err), 0);
    server_data(h, 3, "response bytes", true);
    assert_int_equal(kube_pf_shutdown(h->pf, id, &err), 0);
    server_data(h, 1, "", true);
    pump(h);
    assert_string_equal(h->received[id].data, "response bytes");
    assert_string_equal(h->stream_data[1].data, "GET");
    assert_non_null(last_event(h, KUBE_PF_CLOSED, id));
    kube_pf_close(h->pf);
    pump(h);
    assert_int_equal(last_frame(h, KUBE_SPDY_GOAWAY)->value, KUBE_SPDY_GOAWAY_OK);
    assert_int_equal(h->ws_close_code, 0); /* no WebSocket, no close frame */
}

/* --- mutation fuzzing --------------------------------------------------------------------- */

static unsigned long long fuzz_state = 0x9e3779b97f4a7c15ULL;

static unsigned fuzz_next(unsigned bound)
{
    fuzz_state ^= fuzz_state << 13;
    fuzz_state ^= fuzz_state >> 7;
    fuzz_state ^= fuzz_state << 17;
    return (unsigned)(fuzz_state % bound);
}

/* A server's side of a busy session, as WebSocket bytes: replies for two connections, data,
 * FINs, a reset, pings, SETTINGS, HEADERS, GOAWAY, a WebSocket ping, and the close. */
static void fuzz_seed(gc_buf *wire)
{
    kube_spdy_codec c;
    kube_spdy_codec_init(&c);
    gc_buf spdy;
    gc_buf_init(&spdy);
    kube_spdy_pair pair = {"x", "y"};
    kube_spdy_setting setting = {0, 7, 1024};
    uint8_t blob[300];
    for (size_t i = 0; i < sizeof(blob); i++)
        blob[i] = (uint8_t)i;
    const kube_spdy_frame frames[] = {
        {.type = KUBE_SPDY_SYN_REPLY, .stream_id = 1},
        {.type = KUBE_SPDY_SYN_REPLY, .stream_id = 3, .headers = &pair, .header_count = 1},
        {.type = KUBE_SPDY_SYN_REPLY, .stream_id = 5},
        {.type = KUBE_SPDY_SYN_REPLY, .stream_id = 7},
        {.type = KUBE_SPDY_DATA, .stream_id = 3, .data = (const uint8_t *)"hello", .len = 5},
        {.type = KUBE_SPDY_DATA, .stream_id = 7, .data = blob, .len = sizeof(blob)},
        {.type = KUBE_SPDY_PING, .value = 2},
        {.type = KUBE_SPDY_SETTINGS, .settings = &setting, .settings_count = 1},
        {.type = KUBE_SPDY_DATA, .stream_id = 1, .data = (const uint8_t *)"oops", .len = 4},
        {.type = KUBE_SPDY_DATA, .stream_id = 3, .flags = KUBE_SPDY_FLAG_FIN},
        {.type = KUBE_SPDY_RST_STREAM, .stream_id = 7, .value = KUBE_SPDY_RST_CANCEL},
        {.type = KUBE_SPDY_HEADERS, .stream_id = 5, .flags = KUBE_SPDY_FLAG_FIN},
        {.type = KUBE_SPDY_PING, .value = 1},
        {.type = KUBE_SPDY_GOAWAY, .stream_id = 5},
    };
    for (size_t i = 0; i < sizeof(frames) / sizeof(*frames); i++)
        kube_spdy_encode(&c, &spdy, &frames[i]);
    /* Messages cut at uneven places, with a WebSocket ping between two of them. */
    size_t cut = 0;
    for (size_t i = 0; cut < spdy.len; i++) {
        size_t next = cut + 37 + 23 * (i % 5);
        if (next > spdy.len)
            next = spdy.len;
        ws_message(wire, &spdy, cut, next);
        if (i == 2)
            gc_buf_append(wire, "\x89\x02hi", 4);
        cut = next;
    }
    gc_buf_append(wire, "\x88\x02\x03\xe8", 4);
    gc_buf_free(&spdy);
    kube_spdy_codec_free(&c);
}

static void mutated_streams_never_crash(void **state)
{
    (void)state;
    gc_buf seed, input;
    gc_buf_init(&seed);
    gc_buf_init(&input);
    fuzz_seed(&seed);
    int accepted = 0, rejected = 0;
    for (int iteration = 0; iteration < 3000; iteration++) {
        gc_buf_reset(&input);
        gc_buf_append(&input, seed.data, seed.len);
        for (unsigned edits = 1 + fuzz_next(4); edits-- > 0;) {
            size_t at = fuzz_next((unsigned)input.len);
            switch (fuzz_next(4)) {
            case 0: /* flip a byte */
                input.data[at] = (char)((unsigned char)input.data[at] ^ (1u + fuzz_next(255)));
                break;
            case 1: /* drop a byte */
                memmove(input.data + at, input.data + at + 1, input.len - at - 1);
                input.len--;
                break;
            case 2: /* cut the stream short */
                input.len = at;
                break;
            default: /* a byte from elsewhere */
                input.data[at] = seed.data[fuzz_next((unsigned)seed.len)];
                break;
            }
            if (!input.len)
                break;
        }
        void *st = NULL;
        setup_ws(&st);
        harness *h = st;
        open_accepted(h);
        open_accepted(h);
        h->nevents = 0;
        gc_error err = {0};
        int rc = 0;
        for (size_t off = 0; off < input.len && !rc;) {
            size_t n = 1 + fuzz_next(64);
            if (n > input.len - off)
                n = input.len - off;
            rc = kube_pf_feed(h->pf, input.data + off, n, &err);
            off += n;
        }
        if (rc) {
            assert_int_equal(rc, GC_EXIT_RUNTIME);
            assert_true(err.message[0] != '\0');
            assert_int_equal(kube_pf_count(h->pf), 0);
            rejected++;
        } else {
            accepted++;
        }
        size_t len;
        kube_pf_output(h->pf, &len);
        kube_pf_output_done(h->pf, len);
        teardown(&st);
    }
    /* Both outcomes must occur, or the mutations test nothing. */
    assert_true(accepted > 0);
    assert_true(rejected > 0);
    gc_buf_free(&seed);
    gc_buf_free(&input);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_connection_is_an_error_and_a_data_stream, setup_ws,
                                        teardown),
        cmocka_unit_test_setup_teardown(bytes_wait_for_the_data_streams_reply, setup_ws, teardown),
        cmocka_unit_test_setup_teardown(echo_with_half_close_both_ways, setup_ws, teardown),
        cmocka_unit_test_setup_teardown(kubelet_errors_close_the_connection_with_their_text,
                                        setup_ws, teardown),
        cmocka_unit_test_setup_teardown(a_hundred_connections_at_once, setup_ws, teardown),
        cmocka_unit_test_setup_teardown(pings_both_ways, setup_ws, teardown),
        cmocka_unit_test_setup_teardown(goaway_ends_new_connections_not_open_ones, setup_ws,
                                        teardown),
        cmocka_unit_test_setup_teardown(server_streams_are_refused, setup_ws, teardown),
        cmocka_unit_test_setup_teardown(websocket_ping_and_close, setup_ws, teardown),
        cmocka_unit_test_setup_teardown(broken_streams_end_the_session, setup_ws, teardown),
        cmocka_unit_test_setup_teardown(broken_spdy_inside_websocket, setup_ws, teardown),
        cmocka_unit_test_setup_teardown(transport_end_closes_everything, setup_ws, teardown),
        cmocka_unit_test_setup_teardown(closing_politely, setup_ws, teardown),
        cmocka_unit_test_setup_teardown(callbacks_may_act_on_the_session, setup_ws, teardown),
        cmocka_unit_test_setup_teardown(raw_spdy_fed_a_byte_at_a_time, setup_spdy, teardown),
        cmocka_unit_test(mutated_streams_never_crash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
