/*
 * WebSocket (RFC 6455) frames as a client sees them: every frame it sends is masked with a
 * fresh key, and the server's frames are never masked. A message may come in fragments (a
 * TEXT or BINARY frame without FIN, then CONTINUATION frames), with control frames (PING,
 * PONG, CLOSE; at most 125 bytes, never fragmented) allowed between the fragments. The Go
 * server the API server uses writes a large message as several frames of a few KiB each.
 */
#include "kube/tunnel/internal.h"

#include "gcluster/sys.h"

#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

/* Appended to the key before hashing it, so that only a server that read the handshake can
 * produce the answer (RFC 6455, section 1.3). */
#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

void kube_ws_key(char key[KUBE_WS_KEY_LEN + 1])
{
    uint8_t nonce[16];
    if (RAND_bytes(nonce, sizeof(nonce)) != 1)
        gc_fatal("libcrypto failed in RAND_bytes");
    char *text = gc_base64_encode(nonce, sizeof(nonce));
    memcpy(key, text, KUBE_WS_KEY_LEN + 1);
    free(text);
}

void kube_ws_accept(const char *key, char out[KUBE_WS_ACCEPT_LEN + 1])
{
    gc_buf input;
    gc_buf_init(&input);
    gc_buf_puts(&input, key);
    gc_buf_puts(&input, WS_GUID);
    uint8_t digest[EVP_MAX_MD_SIZE];
    unsigned digest_len = 0;
    if (EVP_Digest(input.data, input.len, digest, &digest_len, EVP_sha1(), NULL) != 1 ||
        digest_len != 20)
        gc_fatal("libcrypto failed in EVP_Digest (SHA-1)");
    gc_buf_free(&input);
    char *text = gc_base64_encode(digest, digest_len);
    memcpy(out, text, KUBE_WS_ACCEPT_LEN + 1);
    free(text);
}

void kube_ws_frame(gc_buf *out, int opcode, bool fin, const void *payload, size_t len,
                   const uint8_t mask[4])
{
    uint8_t head[14];
    size_t n = 0;
    head[n++] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0f));
    /* The length takes 7 bits, or 126 and 16 bits, or 127 and 64 bits; 0x80 says "masked". */
    if (len < 126) {
        head[n++] = (uint8_t)(0x80 | len);
    } else if (len <= 0xffff) {
        head[n++] = 0x80 | 126;
        head[n++] = (uint8_t)(len >> 8);
        head[n++] = (uint8_t)len;
    } else {
        head[n++] = 0x80 | 127;
        for (int shift = 56; shift >= 0; shift -= 8)
            head[n++] = (uint8_t)((uint64_t)len >> shift);
    }
    memcpy(head + n, mask, 4);
    n += 4;
    gc_buf_append(out, head, n);

    size_t start = out->len;
    gc_buf_append(out, payload, len);
    uint8_t *p = (uint8_t *)out->data + start;
    /* Eight bytes at a time: masking is the one per-byte cost of every byte sent. */
    uint8_t mask8[8];
    for (int i = 0; i < 8; i++)
        mask8[i] = mask[i & 3];
    uint64_t m;
    memcpy(&m, mask8, 8);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        v ^= m;
        memcpy(p + i, &v, 8);
    }
    for (; i < len; i++)
        p[i] ^= mask[i & 3];
}

void kube_ws_decoder_init(kube_ws_decoder *d)
{
    memset(d, 0, sizeof(*d));
}

static bool is_control(int opcode)
{
    return opcode >= KUBE_WS_CLOSE;
}

/* How long the header is, once its first two bytes are known. */
static size_t header_size(const uint8_t *head)
{
    size_t len7 = head[1] & 0x7f;
    size_t extended = len7 == 126 ? 2u : len7 == 127 ? 8u : 0u;
    return 2 + extended + (head[1] & 0x80 ? 4u : 0u);
}

static int broken(gc_error *err, const char *what)
{
    return gc_fail(err, GC_EXIT_RUNTIME, "the API server's WebSocket stream is broken: %s", what);
}

/* Checks a complete frame header and sets up the decoder to read its payload. */
static int start_frame(kube_ws_decoder *d, gc_error *err)
{
    const uint8_t *h = d->head;
    int opcode = h[0] & 0x0f;
    bool fin = (h[0] & 0x80) != 0;
    if (h[0] & 0x70)
        return broken(err, "a frame uses reserved bits, but no extension was negotiated");
    if (h[1] & 0x80)
        return broken(err, "a frame from the server is masked");
    uint64_t len = h[1] & 0x7f;
    if (len == 126) {
        len = (uint64_t)h[2] << 8 | h[3];
    } else if (len == 127) {
        len = 0;
        for (int i = 2; i < 10; i++)
            len = len << 8 | h[i];
        if (len >> 63)
            return broken(err, "a frame length has its top bit set");
    }
    if (is_control(opcode)) {
        if (opcode != KUBE_WS_CLOSE && opcode != KUBE_WS_PING && opcode != KUBE_WS_PONG)
            return broken(err, "a frame has an unknown control opcode");
        if (!fin)
            return broken(err, "a control frame is fragmented");
        if (len > KUBE_WS_CONTROL_MAX)
            return broken(err, "a control frame is longer than 125 bytes");
        if (opcode == KUBE_WS_CLOSE && len == 1)
            return broken(err, "a close frame has a one-byte payload");
    } else if (opcode == KUBE_WS_CONTINUATION) {
        if (!d->message_opcode)
            return broken(err, "a continuation frame arrived outside a fragmented message");
    } else if (opcode == KUBE_WS_TEXT || opcode == KUBE_WS_BINARY) {
        if (d->message_opcode)
            return broken(err, "a new message began before the fragmented one ended");
        d->message_opcode = opcode;
    } else {
        return broken(err, "a frame has an unknown data opcode");
    }
    d->in_payload = true;
    d->frame_opcode = opcode;
    d->frame_fin = fin;
    d->remaining = len;
    d->control_len = 0;
    return 0;
}

/* The event of a complete control frame. */
static void control_event(kube_ws_decoder *d, kube_ws_event *ev)
{
    ev->data = d->control;
    ev->len = d->control_len;
    if (d->frame_opcode == KUBE_WS_PING) {
        ev->type = KUBE_WS_PING_RECEIVED;
    } else if (d->frame_opcode == KUBE_WS_PONG) {
        ev->type = KUBE_WS_PONG_RECEIVED;
    } else {
        ev->type = KUBE_WS_CLOSE_RECEIVED;
        ev->close_code = KUBE_WS_CLOSE_NO_STATUS;
        if (d->control_len >= 2) {
            ev->close_code = d->control[0] << 8 | d->control[1];
            ev->data = d->control + 2;
            ev->len = d->control_len - 2;
        }
        d->closed = true;
    }
}

/* Hands out payload of the current frame (possibly none, for an empty frame). */
static void payload_event(kube_ws_decoder *d, const uint8_t **in, size_t *len, kube_ws_event *ev)
{
    size_t take = d->remaining < *len ? (size_t)d->remaining : *len;
    if (is_control(d->frame_opcode)) {
        memcpy(d->control + d->control_len, *in, take);
        d->control_len += take;
        ev->type = KUBE_WS_NEED_MORE;
    } else {
        ev->type = KUBE_WS_DATA;
        ev->opcode = d->message_opcode;
        ev->data = *in;
        ev->len = take;
    }
    *in += take;
    *len -= take;
    d->remaining -= take;
    if (d->remaining)
        return;
    d->in_payload = false;
    d->head_len = 0;
    if (is_control(d->frame_opcode)) {
        control_event(d, ev);
    } else if (d->frame_fin) {
        ev->message_end = true;
        d->message_opcode = 0;
    }
}

int kube_ws_decode(kube_ws_decoder *d, const uint8_t **in, size_t *len, kube_ws_event *ev,
                   gc_error *err)
{
    memset(ev, 0, sizeof(*ev));
    while (!d->closed) {
        if (d->in_payload) {
            /* A data piece is worth reporting only if it carries bytes or ends the frame. */
            if (!*len && d->remaining)
                break;
            payload_event(d, in, len, ev);
            if (ev->type != KUBE_WS_NEED_MORE)
                return 0;
            continue;
        }
        if (!*len)
            break;
        size_t want = d->head_len < 2 ? 2 : header_size(d->head);
        size_t take = want - d->head_len < *len ? want - d->head_len : *len;
        memcpy(d->head + d->head_len, *in, take);
        d->head_len += take;
        *in += take;
        *len -= take;
        if (d->head_len == 2 && header_size(d->head) > 2)
            continue;
        if (d->head_len < want)
            continue;
        int rc = start_frame(d, err);
        if (rc)
            return rc;
    }
    /* Nothing a server sends after its close frame counts (RFC 6455, section 5.5.1). */
    if (d->closed) {
        *in += *len;
        *len = 0;
    }
    ev->type = KUBE_WS_NEED_MORE;
    return 0;
}
