/*
 * The port-forward tunnel's outer layers: the HTTP upgrade (request head, answer head, answer
 * checks) and WebSocket frames (masked client frames out; server frames in, fragmented, with
 * control frames between fragments, fed in any split; malformed frames refused).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/sys.h"
#include "kube/tunnel/internal.h"

#include <stdlib.h>
#include <string.h>

/* --- helpers ------------------------------------------------------------------------------ */

/* A server frame: never masked. */
static void server_frame(gc_buf *out, int opcode, bool fin, const void *payload, size_t len)
{
    uint8_t head[10];
    size_t n = 0;
    head[n++] = (uint8_t)((fin ? 0x80 : 0) | opcode);
    if (len < 126) {
        head[n++] = (uint8_t)len;
    } else if (len <= 0xffff) {
        head[n++] = 126;
        head[n++] = (uint8_t)(len >> 8);
        head[n++] = (uint8_t)len;
    } else {
        head[n++] = 127;
        for (int shift = 56; shift >= 0; shift -= 8)
            head[n++] = (uint8_t)((uint64_t)len >> shift);
    }
    gc_buf_append(out, head, n);
    gc_buf_append(out, payload, len);
}

/* What a decoder made of a byte stream fed `step` bytes at a time: message bytes in `data`,
 * and one letter per event in `trace` (D data piece, E message end, P ping, O pong, C close). */
typedef struct decoded {
    gc_buf data;
    gc_buf trace;
    gc_buf control; /* the last control payload */
    int close_code;
    int opcode;
    int rc;
    gc_error err;
} decoded;

static void decode_all(decoded *d, const void *bytes, size_t len, size_t step)
{
    memset(d, 0, sizeof(*d));
    gc_buf_init(&d->data);
    gc_buf_init(&d->trace);
    gc_buf_init(&d->control);
    kube_ws_decoder dec;
    kube_ws_decoder_init(&dec);
    const uint8_t *p = bytes;
    for (size_t off = 0; off < len && !d->rc;) {
        size_t n = len - off < step ? len - off : step;
        const uint8_t *in = p + off;
        size_t left = n;
        for (int guard = 0; guard < 100000; guard++) {
            kube_ws_event ev;
            d->rc = kube_ws_decode(&dec, &in, &left, &ev, &d->err);
            if (d->rc || ev.type == KUBE_WS_NEED_MORE)
                break;
            if (ev.type == KUBE_WS_DATA) {
                gc_buf_append(&d->data, ev.data, ev.len);
                d->opcode = ev.opcode;
                gc_buf_putc(&d->trace, ev.message_end ? 'E' : 'D');
                continue;
            }
            gc_buf_reset(&d->control);
            gc_buf_append(&d->control, ev.data, ev.len);
            gc_buf_putc(&d->trace, ev.type == KUBE_WS_PING_RECEIVED   ? 'P'
                                   : ev.type == KUBE_WS_PONG_RECEIVED ? 'O'
                                                                      : 'C');
            if (ev.type == KUBE_WS_CLOSE_RECEIVED)
                d->close_code = ev.close_code;
        }
        off += n;
    }
}

static void decoded_free(decoded *d)
{
    gc_buf_free(&d->data);
    gc_buf_free(&d->trace);
    gc_buf_free(&d->control);
}

/* The trace with every run of data pieces folded into the event that ends it, so that it does
 * not depend on how the input was split. */
static char *folded(const char *trace)
{
    char *s = gc_xstrdup(trace);
    size_t o = 0;
    for (size_t i = 0; s[i]; i++) {
        if (o && s[o - 1] == 'D' && (s[i] == 'D' || s[i] == 'E'))
            o--;
        s[o++] = s[i];
    }
    s[o] = '\0';
    return s;
}

/* Decodes `stream` whole (its trace must be `want_trace`) and split in many ways (the same
 * events, the same bytes). */
static void assert_decodes_alike(const gc_buf *stream, const char *want_trace,
                                 const void *want_data, size_t want_len)
{
    decoded whole;
    decode_all(&whole, stream->data, stream->len, stream->len);
    assert_int_equal(whole.rc, 0);
    assert_string_equal(whole.trace.data, want_trace);
    char *want_folded = folded(whole.trace.data);
    static const size_t steps[] = {1, 2, 3, 7, 64};
    for (size_t i = 0; i < sizeof(steps) / sizeof(*steps); i++) {
        decoded d;
        decode_all(&d, stream->data, stream->len, steps[i]);
        assert_int_equal(d.rc, 0);
        char *trace = folded(d.trace.data);
        assert_string_equal(trace, want_folded);
        free(trace);
        assert_int_equal(d.data.len, want_len);
        assert_memory_equal(d.data.data, want_data, want_len);
        decoded_free(&d);
    }
    free(want_folded);
    decoded_free(&whole);
}

static void assert_refused(const void *bytes, size_t len, const char *why)
{
    decoded d;
    decode_all(&d, bytes, len, 100000);
    assert_int_equal(d.rc, GC_EXIT_RUNTIME);
    assert_non_null(strstr(d.err.message, why));
    decoded_free(&d);
    /* Fed a byte at a time, the same bytes are refused for the same reason. */
    decode_all(&d, bytes, len, 1);
    assert_int_equal(d.rc, GC_EXIT_RUNTIME);
    assert_non_null(strstr(d.err.message, why));
    decoded_free(&d);
}

/* --- handshake ---------------------------------------------------------------------------- */

static void accept_value_is_rfc6455s(void **state)
{
    (void)state;
    char accept[KUBE_WS_ACCEPT_LEN + 1];
    /* The example of RFC 6455, section 1.3. */
    kube_ws_accept("dGhlIHNhbXBsZSBub25jZQ==", accept);
    assert_string_equal(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
}

static void keys_are_random_16_byte_nonces(void **state)
{
    (void)state;
    char a[KUBE_WS_KEY_LEN + 1], b[KUBE_WS_KEY_LEN + 1];
    kube_ws_key(a);
    kube_ws_key(b);
    assert_int_equal(strlen(a), KUBE_WS_KEY_LEN);
    assert_string_not_equal(a, b);
    size_t len = 0;
    unsigned char *nonce = gc_base64_decode(a, strlen(a), &len);
    assert_non_null(nonce);
    assert_int_equal(len, 16);
    free(nonce);
}

static void request_heads(void **state)
{
    (void)state;
    static const char *const lines[] = {"Authorization: Bearer t0k3n", "User-Agent: gcluster",
                                        NULL};
    const char *path = "/api/v1/namespaces/ns/pods/p-0/portforward?ports=29000";
    gc_buf b;
    gc_buf_init(&b);
    kube_pf_upgrade_request(&b, KUBE_TUNNEL_WEBSOCKET, "10.0.0.1:6443", path, lines,
                            "dGhlIHNhbXBsZSBub25jZQ==");
    assert_string_equal(b.data, "GET /api/v1/namespaces/ns/pods/p-0/portforward?ports=29000 "
                                "HTTP/1.1\r\n"
                                "Host: 10.0.0.1:6443\r\n"
                                "Connection: Upgrade\r\n"
                                "Upgrade: websocket\r\n"
                                "Sec-WebSocket-Version: 13\r\n"
                                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                "Sec-WebSocket-Protocol: SPDY/3.1+portforward.k8s.io\r\n"
                                "Authorization: Bearer t0k3n\r\n"
                                "User-Agent: gcluster\r\n"
                                "\r\n");
    gc_buf_reset(&b);
    kube_pf_upgrade_request(&b, KUBE_TUNNEL_SPDY, "h", path, NULL, NULL);
    assert_string_equal(b.data, "POST /api/v1/namespaces/ns/pods/p-0/portforward?ports=29000 "
                                "HTTP/1.1\r\n"
                                "Host: h\r\n"
                                "Content-Length: 0\r\n"
                                "Connection: Upgrade\r\n"
                                "Upgrade: SPDY/3.1\r\n"
                                "X-Stream-Protocol-Version: portforward.k8s.io\r\n"
                                "\r\n");
    gc_buf_free(&b);
}

static const char ws_answer[] = "HTTP/1.1 101 Switching Protocols\r\n"
                                "Upgrade: websocket\r\n"
                                "Connection: Upgrade\r\n"
                                "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                                "Sec-WebSocket-Protocol: SPDY/3.1+portforward.k8s.io\r\n"
                                "\r\n";

static void answer_head_length_and_fields(void **state)
{
    (void)state;
    size_t full = strlen(ws_answer);
    gc_buf b;
    gc_buf_init(&b);
    gc_buf_puts(&b, ws_answer);
    gc_buf_puts(&b, "\x82\x05hello"); /* the first frame may arrive with the head */
    for (size_t n = 0; n < full; n++)
        assert_int_equal(kube_http_head_length(b.data, n), 0);
    assert_int_equal(kube_http_head_length(b.data, b.len), (long)full);
    assert_int_equal(kube_http_head_length("HTTP/1.1 101 OK\nA: b\n\nrest", 26), 22);

    kube_http_head h;
    gc_error err = {0};
    assert_int_equal(kube_http_head_parse(&h, b.data, full, &err), 0);
    assert_int_equal(h.status, 101);
    assert_int_equal(h.count, 4);
    assert_string_equal(kube_http_head_get(&h, "UPGRADE"), "websocket");
    assert_string_equal(kube_http_head_get(&h, "sec-websocket-protocol"), KUBE_PF_WS_PROTOCOL);
    assert_null(kube_http_head_get(&h, "content-length"));
    assert_int_equal(
        kube_pf_upgrade_check(&h, KUBE_TUNNEL_WEBSOCKET, "dGhlIHNhbXBsZSBub25jZQ==", &err), 0);
    kube_http_head_free(&h);
    gc_buf_free(&b);

    /* A head that never ends is refused once it passes the limit. */
    char *endless = gc_xmalloc(KUBE_HTTP_HEAD_MAX + 1);
    memset(endless, 'x', KUBE_HTTP_HEAD_MAX + 1);
    assert_int_equal(kube_http_head_length(endless, KUBE_HTTP_HEAD_MAX + 1), -1);
    free(endless);
}

static int check_answer(const char *text, kube_tunnel_kind kind, gc_error *err)
{
    kube_http_head h;
    int rc = kube_http_head_parse(&h, text, strlen(text), err);
    if (rc)
        return rc;
    rc = kube_pf_upgrade_check(&h, kind, "dGhlIHNhbXBsZSBub25jZQ==", err);
    kube_http_head_free(&h);
    return rc;
}

static void answer_checks_refuse_what_is_not_the_upgrade(void **state)
{
    (void)state;
    gc_error err = {0};
    assert_int_equal(check_answer("HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
                                  "Content-Length: 10\r\n\r\n",
                                  KUBE_TUNNEL_WEBSOCKET, &err),
                     GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 403);
    assert_non_null(strstr(err.message, "refused the port-forward upgrade (HTTP 403)"));

    gc_error_clear(&err);
    assert_int_equal(check_answer("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                  "Connection: Upgrade\r\nSec-WebSocket-Accept: "
                                  "AAAAAAAAAAAAAAAAAAAAAAAAAAA=\r\n\r\n",
                                  KUBE_TUNNEL_WEBSOCKET, &err),
                     GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "does not match the key sent"));

    /* An API server without the tunneling subprotocol picks none (or the channel protocol). */
    gc_error_clear(&err);
    assert_int_equal(check_answer("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                                  "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Accept: "
                                  "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
                                  "Sec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n",
                                  KUBE_TUNNEL_WEBSOCKET, &err),
                     GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "PortForwardWebsockets"));
    assert_non_null(strstr(err.message, "v4.channel.k8s.io"));

    gc_error_clear(&err);
    assert_int_equal(check_answer("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n"
                                  "Connection: Upgrade\r\n\r\n",
                                  KUBE_TUNNEL_WEBSOCKET, &err),
                     GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "did not upgrade to websocket"));

    /* The direct SPDY upgrade: accepted with the protocol named, refused without. */
    gc_error_clear(&err);
    assert_int_equal(check_answer("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                                  "Upgrade: SPDY/3.1\r\n"
                                  "X-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n",
                                  KUBE_TUNNEL_SPDY, &err),
                     0);
    assert_int_equal(check_answer("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
                                  "Upgrade: SPDY/3.1\r\n\r\n",
                                  KUBE_TUNNEL_SPDY, &err),
                     GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "X-Stream-Protocol-Version: missing"));

    /* Not HTTP at all, or a header line without a colon. */
    gc_error_clear(&err);
    assert_int_equal(check_answer("SSH-2.0-OpenSSH\r\n\r\n", KUBE_TUNNEL_SPDY, &err),
                     GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "status line"));
    assert_int_equal(
        check_answer("HTTP/1.1 101 OK\r\nno colon here\r\n\r\n", KUBE_TUNNEL_SPDY, &err),
        GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "malformed header line"));
}

/* --- client frames ------------------------------------------------------------------------ */

static void client_frames_are_masked(void **state)
{
    (void)state;
    static const uint8_t mask[4] = {0x37, 0xfa, 0x21, 0x3d};
    gc_buf b;
    gc_buf_init(&b);
    /* RFC 6455, section 5.7: a single-frame masked text message "Hello". */
    kube_ws_frame(&b, KUBE_WS_TEXT, true, "Hello", 5, mask);
    static const uint8_t hello[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                    0x7f, 0x9f, 0x4d, 0x51, 0x58};
    assert_int_equal(b.len, sizeof(hello));
    assert_memory_equal(b.data, hello, sizeof(hello));

    /* The three length forms, and a payload long enough for the eight-byte masking path. */
    static const size_t lens[] = {0, 125, 126, 65535, 65536, 70001};
    static const size_t heads[] = {6, 6, 8, 8, 14, 14};
    uint8_t *payload = gc_xmalloc(70001);
    for (size_t i = 0; i < 70001; i++)
        payload[i] = (uint8_t)(i * 7 + 3);
    for (size_t t = 0; t < sizeof(lens) / sizeof(*lens); t++) {
        gc_buf_reset(&b);
        kube_ws_frame(&b, KUBE_WS_BINARY, t % 2 == 0, payload, lens[t], mask);
        assert_int_equal(b.len, heads[t] + lens[t]);
        const uint8_t *f = (const uint8_t *)b.data;
        assert_int_equal(f[0], (t % 2 == 0 ? 0x80 : 0) | KUBE_WS_BINARY);
        assert_true(f[1] & 0x80);
        uint64_t len = f[1] & 0x7f;
        if (len == 126)
            len = (uint64_t)f[2] << 8 | f[3];
        else if (len == 127)
            for (int k = 2, first = 1; k < 10; k++, first = 0)
                len = (first ? 0 : len << 8) | f[k];
        assert_int_equal(len, lens[t]);
        assert_memory_equal(f + heads[t] - 4, mask, 4);
        for (size_t k = 0; k < lens[t]; k++)
            assert_int_equal(f[heads[t] + k] ^ mask[k & 3], payload[k]);
    }
    free(payload);
    gc_buf_free(&b);
}

/* --- server frames ------------------------------------------------------------------------ */

static void single_and_fragmented_messages(void **state)
{
    (void)state;
    gc_buf s;
    gc_buf_init(&s);
    /* RFC 6455, section 5.7: unmasked "Hello", then "Hel" + "lo" in two fragments. */
    static const uint8_t rfc[] = {0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x01,
                                  0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f};
    gc_buf_append(&s, rfc, sizeof(rfc));
    assert_decodes_alike(&s, "EDE", "HelloHello", 10);

    /* A binary message in three fragments with a ping and a pong between them, as the API
     * server's Go library writes large messages: the data comes out whole and in order. */
    gc_buf_reset(&s);
    uint8_t *big = gc_xmalloc(70000);
    for (size_t i = 0; i < 70000; i++)
        big[i] = (uint8_t)(i % 251);
    server_frame(&s, KUBE_WS_BINARY, false, big, 300);
    server_frame(&s, KUBE_WS_PING, true, "are you there", 13);
    server_frame(&s, KUBE_WS_CONTINUATION, false, big + 300, 65000);
    server_frame(&s, KUBE_WS_PONG, true, "", 0);
    server_frame(&s, KUBE_WS_CONTINUATION, true, big + 65300, 4700);
    assert_decodes_alike(&s, "DPDOE", big, 70000);

    decoded d;
    decode_all(&d, s.data, s.len, 5);
    assert_int_equal(d.opcode, KUBE_WS_BINARY);
    decoded_free(&d);
    free(big);

    /* Empty messages and an empty final fragment still end their message. */
    gc_buf_reset(&s);
    server_frame(&s, KUBE_WS_BINARY, true, "", 0);
    server_frame(&s, KUBE_WS_BINARY, false, "ab", 2);
    server_frame(&s, KUBE_WS_CONTINUATION, true, "", 0);
    assert_decodes_alike(&s, "EDE", "ab", 2);
    gc_buf_free(&s);
}

static void close_frames(void **state)
{
    (void)state;
    gc_buf s;
    gc_buf_init(&s);
    server_frame(&s, KUBE_WS_BINARY, true, "x", 1);
    server_frame(&s, KUBE_WS_CLOSE, true, "\x03\xe8going away", 12);
    /* Nothing after the close frame counts, not even garbage. */
    gc_buf_append(&s, "\xff\xff\xff", 3);
    decoded d;
    decode_all(&d, s.data, s.len, 4);
    assert_int_equal(d.rc, 0);
    assert_string_equal(d.trace.data, "EC");
    assert_int_equal(d.close_code, 1000);
    assert_int_equal(d.control.len, 10);
    assert_memory_equal(d.control.data, "going away", 10);
    decoded_free(&d);

    gc_buf_reset(&s);
    server_frame(&s, KUBE_WS_CLOSE, true, "", 0);
    decode_all(&d, s.data, s.len, 1);
    assert_string_equal(d.trace.data, "C");
    assert_int_equal(d.close_code, KUBE_WS_CLOSE_NO_STATUS);
    decoded_free(&d);
    gc_buf_free(&s);
}

static void malformed_frames_are_refused(void **state)
{
    (void)state;
    assert_refused("\x82\x85\x01\x02\x03\x04hello", 11, "masked");
    assert_refused("\xc2\x01x", 3, "reserved bits");
    assert_refused("\x83\x01x", 3, "unknown data opcode");
    assert_refused("\x8b\x00", 2, "unknown control opcode");
    assert_refused("\x09\x00", 2, "control frame is fragmented");
    assert_refused("\x89\x7e\x00\x7e", 4, "longer than 125");
    assert_refused("\x88\x01\x03", 3, "one-byte payload");
    assert_refused("\x80\x01x", 3, "continuation frame arrived outside");
    assert_refused("\x02\x01x\x82\x01y", 6, "new message began");
    assert_refused("\x82\x7f\x80\x00\x00\x00\x00\x00\x00\x00", 10, "top bit");

    /* A truncated frame is no error: the decoder waits for the rest. */
    decoded d;
    decode_all(&d, "\x82\x7e\x01\x00partial", 11, 3);
    assert_int_equal(d.rc, 0);
    assert_string_equal(d.data.data, "partial");
    assert_null(strchr(d.trace.data, 'E'));
    decoded_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accept_value_is_rfc6455s),
        cmocka_unit_test(keys_are_random_16_byte_nonces),
        cmocka_unit_test(request_heads),
        cmocka_unit_test(answer_head_length_and_fields),
        cmocka_unit_test(answer_checks_refuse_what_is_not_the_upgrade),
        cmocka_unit_test(client_frames_are_masked),
        cmocka_unit_test(single_and_fragmented_messages),
        cmocka_unit_test(close_frames),
        cmocka_unit_test(malformed_frames_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
