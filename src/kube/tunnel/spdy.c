/*
 * SPDY/3.1 frames, as the kubelet's port-forward server reads and writes them.
 *
 * Every frame starts with 8 bytes. A control frame: a 1 bit, the version (15 bits, 3), the type
 * (16 bits), flags (8 bits) and the payload length (24 bits). A DATA frame: a 0 bit, the stream
 * id (31 bits), flags (8 bits, FIN = 1) and the length (24 bits). Integers are big-endian.
 *
 * SYN_STREAM, SYN_REPLY and HEADERS carry a name/value block (a count, then length-prefixed
 * names and values, all 32-bit lengths) compressed with zlib. Each direction of a session is one
 * zlib stream, primed with the dictionary below and flushed (Z_SYNC_FLUSH) at the end of every
 * block, so a block can only be read after all the blocks before it: a decoding error breaks
 * the whole session, not just one frame.
 */
#include "kube/tunnel/internal.h"

#include <stdlib.h>
#include <string.h>

#define SPDY_VERSION        3
#define MAX_HEADER_BLOCK    (1 << 20) /* decompressed; a port-forward block is a few bytes */
#define DEFLATE_WINDOW_BITS 11        /* 2 KiB: holds the dictionary, costs ~10 KiB a session */
#define DEFLATE_MEM_LEVEL   1

/* The SPDY/3 header compression dictionary (the SPDY/3 specification, section 2.6.10.1),
 * a protocol constant both ends must share byte for byte: 65 words, each with its 32-bit length,
 * then a run of common header values. Its Adler-32 (0xe3c6a7c2) is what the zlib stream names. */
#define W(len, word) "\0\0\0" len word
/* clang-format off */
static const char dictionary[] =
    W("\x07", "options") W("\x04", "head") W("\x04", "post") W("\x03", "put")
    W("\x06", "delete") W("\x05", "trace") W("\x06", "accept") W("\x0e", "accept-charset")
    W("\x0f", "accept-encoding") W("\x0f", "accept-language") W("\x0d", "accept-ranges")
    W("\x03", "age") W("\x05", "allow") W("\x0d", "authorization") W("\x0d", "cache-control")
    W("\x0a", "connection") W("\x0c", "content-base") W("\x10", "content-encoding")
    W("\x10", "content-language") W("\x0e", "content-length") W("\x10", "content-location")
    W("\x0b", "content-md5") W("\x0d", "content-range") W("\x0c", "content-type")
    W("\x04", "date") W("\x04", "etag") W("\x06", "expect") W("\x07", "expires")
    W("\x04", "from") W("\x04", "host") W("\x08", "if-match") W("\x11", "if-modified-since")
    W("\x0d", "if-none-match") W("\x08", "if-range") W("\x13", "if-unmodified-since")
    W("\x0d", "last-modified") W("\x08", "location") W("\x0c", "max-forwards")
    W("\x06", "pragma") W("\x12", "proxy-authenticate") W("\x13", "proxy-authorization")
    W("\x05", "range") W("\x07", "referer") W("\x0b", "retry-after") W("\x06", "server")
    W("\x02", "te") W("\x07", "trailer") W("\x11", "transfer-encoding") W("\x07", "upgrade")
    W("\x0a", "user-agent") W("\x04", "vary") W("\x03", "via") W("\x07", "warning")
    W("\x10", "www-authenticate") W("\x06", "method") W("\x03", "get") W("\x06", "status")
    W("\x06", "200 OK") W("\x07", "version") W("\x08", "HTTP/1.1") W("\x03", "url")
    W("\x06", "public") W("\x0a", "set-cookie") W("\x0a", "keep-alive") W("\x06", "origin")
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 "
    "Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 "
    "Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, "
    "Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.";
/* clang-format on */
#undef W

const uint8_t *kube_spdy_dictionary(size_t *len)
{
    *len = sizeof(dictionary) - 1;
    return (const uint8_t *)dictionary;
}

void kube_spdy_codec_init(kube_spdy_codec *c)
{
    memset(c, 0, sizeof(*c));
    gc_buf_init(&c->scratch);
    gc_buf_init(&c->pending);
    gc_buf_init(&c->strings);
    size_t dict_len;
    const uint8_t *dict = kube_spdy_dictionary(&dict_len);
    if (deflateInit2(&c->deflater, Z_DEFAULT_COMPRESSION, Z_DEFLATED, DEFLATE_WINDOW_BITS,
                     DEFLATE_MEM_LEVEL, Z_DEFAULT_STRATEGY) != Z_OK ||
        deflateSetDictionary(&c->deflater, dict, (uInt)dict_len) != Z_OK ||
        inflateInit(&c->inflater) != Z_OK)
        gc_fatal("zlib could not set up a SPDY header stream (out of memory)");
}

void kube_spdy_codec_free(kube_spdy_codec *c)
{
    deflateEnd(&c->deflater);
    inflateEnd(&c->inflater);
    gc_buf_free(&c->scratch);
    gc_buf_free(&c->pending);
    gc_buf_free(&c->strings);
    free(c->pairs);
    free(c->settings);
    memset(c, 0, sizeof(*c));
}

static void put32(gc_buf *out, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    gc_buf_append(out, b, 4);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Writes a control frame header whose length is filled in by end_control; returns where. */
static size_t begin_control(gc_buf *out, int type, uint8_t flags)
{
    size_t at = out->len;
    uint8_t head[8] = {0x80, SPDY_VERSION, 0, (uint8_t)type, flags, 0, 0, 0};
    gc_buf_append(out, head, 8);
    return at;
}

static void end_control(gc_buf *out, size_t at)
{
    size_t len = out->len - at - 8;
    if (len > KUBE_SPDY_MAX_LENGTH)
        gc_fatal("a SPDY control frame of %zu bytes does not fit its length field", len);
    uint8_t *p = (uint8_t *)out->data + at;
    p[5] = (uint8_t)(len >> 16);
    p[6] = (uint8_t)(len >> 8);
    p[7] = (uint8_t)len;
}

/* Appends the compressed name/value block of `f`'s headers. */
static void put_header_block(kube_spdy_codec *c, gc_buf *out, const kube_spdy_frame *f)
{
    gc_buf_reset(&c->scratch);
    put32(&c->scratch, (uint32_t)f->header_count);
    for (size_t i = 0; i < f->header_count; i++) {
        size_t n = strlen(f->headers[i].name), v = strlen(f->headers[i].value);
        put32(&c->scratch, (uint32_t)n);
        gc_buf_append(&c->scratch, f->headers[i].name, n);
        put32(&c->scratch, (uint32_t)v);
        gc_buf_append(&c->scratch, f->headers[i].value, v);
    }
    z_stream *z = &c->deflater;
    z->next_in = (Bytef *)c->scratch.data;
    z->avail_in = (uInt)c->scratch.len;
    uint8_t chunk[4096];
    do {
        z->next_out = chunk;
        z->avail_out = sizeof(chunk);
        if (deflate(z, Z_SYNC_FLUSH) == Z_STREAM_ERROR)
            gc_fatal("zlib's SPDY header stream is corrupt");
        gc_buf_append(out, chunk, sizeof(chunk) - z->avail_out);
    } while (z->avail_out == 0);
}

void kube_spdy_encode(kube_spdy_codec *c, gc_buf *out, const kube_spdy_frame *f)
{
    if (f->type == KUBE_SPDY_DATA) {
        put32(out, f->stream_id & KUBE_SPDY_MAX_STREAM_ID);
        put32(out, (uint32_t)f->flags << 24 | (uint32_t)f->len);
        if (f->len)
            gc_buf_append(out, f->data, f->len);
        return;
    }
    size_t at = begin_control(out, f->type, f->flags);
    switch (f->type) {
    case KUBE_SPDY_SYN_STREAM:
        put32(out, f->stream_id);
        put32(out, f->value);
        gc_buf_putc(out, (char)(f->priority << 5));
        gc_buf_putc(out, 0); /* the credential slot, unused */
        put_header_block(c, out, f);
        break;
    case KUBE_SPDY_SYN_REPLY:
    case KUBE_SPDY_HEADERS:
        put32(out, f->stream_id);
        put_header_block(c, out, f);
        break;
    case KUBE_SPDY_SETTINGS:
        put32(out, (uint32_t)f->settings_count);
        for (size_t i = 0; i < f->settings_count; i++) {
            put32(out, (uint32_t)f->settings[i].flags << 24 | (f->settings[i].id & 0xffffff));
            put32(out, f->settings[i].value);
        }
        break;
    case KUBE_SPDY_PING:
        put32(out, f->value);
        break;
    case KUBE_SPDY_GOAWAY:
        put32(out, f->stream_id);
        put32(out, f->value);
        break;
    default: /* RST_STREAM, WINDOW_UPDATE: a stream and a number */
        put32(out, f->stream_id);
        put32(out, f->value);
        break;
    }
    end_control(out, at);
}

static int broken(gc_error *err, const char *what)
{
    return gc_fail(err, GC_EXIT_RUNTIME, "the port-forward stream is broken: %s", what);
}

/* Decompresses one header block into c->scratch. */
static int inflate_block(kube_spdy_codec *c, const uint8_t *p, size_t n, gc_error *err)
{
    /* Every block ends with the empty stored block of a sync flush; one that does not was cut
     * short or was not written by a SPDY peer. */
    if (n < 4 || memcmp(p + n - 4, "\0\0\xff\xff", 4) != 0)
        return broken(err, "a header block does not end with a zlib sync flush");
    gc_buf_reset(&c->scratch);
    z_stream *z = &c->inflater;
    z->next_in = (Bytef *)p;
    z->avail_in = (uInt)n;
    uint8_t chunk[4096];
    for (;;) {
        z->next_out = chunk;
        z->avail_out = sizeof(chunk);
        int rc = inflate(z, Z_SYNC_FLUSH);
        if (rc == Z_NEED_DICT) {
            size_t dict_len;
            const uint8_t *dict = kube_spdy_dictionary(&dict_len);
            if (inflateSetDictionary(z, dict, (uInt)dict_len) != Z_OK)
                return broken(err, "a header block names a dictionary other than SPDY/3's");
            continue;
        }
        gc_buf_append(&c->scratch, chunk, sizeof(chunk) - z->avail_out);
        if (rc == Z_STREAM_END)
            return broken(err, "the header compression stream ended");
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return broken(err, "a header block is not valid zlib data");
        if (c->scratch.len > MAX_HEADER_BLOCK)
            return broken(err, "a header block is larger than 1 MiB");
        if (z->avail_out != 0) {
            /* Output room left over means zlib took all it could: every input byte, or it
             * stopped in the middle of the block. */
            if (z->avail_in != 0 || rc == Z_BUF_ERROR)
                return broken(err, "a header block ends in the middle of compressed data");
            return 0;
        }
    }
}

/* Parses the name/value block in c->scratch into c->pairs. */
static int parse_header_block(kube_spdy_codec *c, kube_spdy_frame *f, gc_error *err)
{
    const uint8_t *p = (const uint8_t *)c->scratch.data;
    size_t len = c->scratch.len, pos = 4;
    if (len < 4)
        return broken(err, "a header block is shorter than its count");
    uint32_t count = get32(p);
    if (count > (len - 4) / 8)
        return broken(err, "a header block counts more pairs than it holds");
    if (count > c->pairs_cap) {
        c->pairs_cap = count;
        c->pairs = gc_xrealloc(c->pairs, count * sizeof(*c->pairs));
    }
    /* Names and values are copied NUL-terminated into c->strings; the pointers are set once all
     * are copied, because the buffer may move while it grows. */
    gc_buf_reset(&c->strings);
    size_t *offsets = gc_xmalloc((2 * (size_t)count + 1) * sizeof(*offsets));
    for (uint32_t i = 0; i < 2 * count; i++) {
        if (len - pos < 4) {
            free(offsets);
            return broken(err, "a header block ends inside a length");
        }
        uint32_t n = get32(p + pos);
        pos += 4;
        if (n > len - pos || (i % 2 == 0 && n == 0)) {
            free(offsets);
            return broken(err, n ? "a header name or value runs past its block"
                                 : "a header block has an empty name");
        }
        offsets[i] = c->strings.len;
        gc_buf_append(&c->strings, p + pos, n);
        gc_buf_putc(&c->strings, '\0');
        pos += n;
    }
    for (uint32_t i = 0; i < count; i++) {
        c->pairs[i].name = c->strings.data + offsets[2 * i];
        c->pairs[i].value = c->strings.data + offsets[2 * i + 1];
    }
    free(offsets);
    if (pos != len)
        return broken(err, "a header block has bytes after its last pair");
    f->headers = c->pairs;
    f->header_count = count;
    return 0;
}

static int headers_of(kube_spdy_codec *c, kube_spdy_frame *f, const uint8_t *block, size_t n,
                      gc_error *err)
{
    int rc = inflate_block(c, block, n, err);
    return rc ? rc : parse_header_block(c, f, err);
}

static int parse_settings(kube_spdy_codec *c, kube_spdy_frame *f, const uint8_t *p, size_t n,
                          gc_error *err)
{
    if (n < 4 || get32(p) != (n - 4) / 8 || (n - 4) % 8)
        return broken(err, "a SETTINGS frame's count does not match its length");
    size_t count = get32(p);
    if (count > c->settings_cap) {
        c->settings_cap = count;
        c->settings = gc_xrealloc(c->settings, count * sizeof(*c->settings));
    }
    for (size_t i = 0; i < count; i++) {
        const uint8_t *e = p + 4 + 8 * i;
        c->settings[i].flags = e[0];
        c->settings[i].id = get32(e) & 0xffffff;
        c->settings[i].value = get32(e + 4);
    }
    f->settings = c->settings;
    f->settings_count = count;
    return 0;
}

/* Whether a control frame of `type` may carry `n` bytes of payload. */
static bool length_fits(int type, size_t n)
{
    switch (type) {
    case KUBE_SPDY_SYN_STREAM:
        return n >= 10;
    case KUBE_SPDY_PING:
        return n == 4;
    case KUBE_SPDY_RST_STREAM:
    case KUBE_SPDY_GOAWAY:
    case KUBE_SPDY_WINDOW_UPDATE:
        return n == 8;
    default: /* SYN_REPLY, HEADERS, SETTINGS */
        return n >= 4;
    }
}

/* Parses the complete control frame in c->pending. */
static int parse_control(kube_spdy_codec *c, kube_spdy_frame *f, gc_error *err)
{
    const uint8_t *h = (const uint8_t *)c->pending.data;
    const uint8_t *p = h + 8;
    size_t n = c->pending.len - 8;
    f->type = h[2] << 8 | h[3];
    f->flags = h[4];
    if (!length_fits(f->type, n))
        return broken(err, "a control frame has the wrong length for its type");
    if (f->type != KUBE_SPDY_SETTINGS && f->type != KUBE_SPDY_PING)
        f->stream_id = get32(p) & KUBE_SPDY_MAX_STREAM_ID;
    switch (f->type) {
    case KUBE_SPDY_SYN_STREAM:
        f->value = get32(p + 4) & KUBE_SPDY_MAX_STREAM_ID;
        f->priority = p[8] >> 5;
        break;
    case KUBE_SPDY_PING:
        f->value = get32(p);
        return 0;
    case KUBE_SPDY_SETTINGS:
        return parse_settings(c, f, p, n, err);
    case KUBE_SPDY_GOAWAY:
        f->value = get32(p + 4);
        return 0;
    case KUBE_SPDY_WINDOW_UPDATE:
        f->value = get32(p + 4) & 0x7fffffff;
        break;
    case KUBE_SPDY_RST_STREAM:
        f->value = get32(p + 4);
        if (!f->value)
            return broken(err, "a RST_STREAM frame has status 0");
        break;
    default: /* SYN_REPLY, HEADERS */
        break;
    }
    if (!f->stream_id)
        return broken(err, "a stream frame names stream 0");
    if (f->type == KUBE_SPDY_SYN_STREAM)
        return headers_of(c, f, p + 10, n - 10, err);
    if (f->type == KUBE_SPDY_SYN_REPLY || f->type == KUBE_SPDY_HEADERS)
        return headers_of(c, f, p + 4, n - 4, err);
    return 0;
}

static bool known_control(int type)
{
    return (type >= KUBE_SPDY_SYN_STREAM && type <= KUBE_SPDY_SETTINGS) ||
           (type >= KUBE_SPDY_PING && type <= KUBE_SPDY_WINDOW_UPDATE);
}

static size_t take_into(gc_buf *b, size_t want, const uint8_t **in, size_t *len)
{
    size_t take = want - b->len < *len ? want - b->len : *len;
    gc_buf_append(b, *in, take);
    *in += take;
    *len -= take;
    return b->len;
}

/* Starts the frame whose 8-byte header is in c->pending. */
static int start_frame(kube_spdy_codec *c, gc_error *err)
{
    const uint8_t *h = (const uint8_t *)c->pending.data;
    uint32_t length = get32(h + 4) & KUBE_SPDY_MAX_LENGTH;
    if (!(h[0] & 0x80)) {
        c->data_stream = get32(h) & KUBE_SPDY_MAX_STREAM_ID;
        if (!c->data_stream)
            return broken(err, "a DATA frame names stream 0");
        c->data_flags = h[4];
        c->data_remaining = length;
        gc_buf_reset(&c->pending);
        return 0;
    }
    int version = (h[0] & 0x7f) << 8 | h[1];
    if (version != SPDY_VERSION)
        return broken(err, "a control frame is not SPDY version 3");
    int type = h[2] << 8 | h[3];
    if (!known_control(type)) {
        c->skip_remaining = length;
        gc_buf_reset(&c->pending);
        return 0;
    }
    if (length > KUBE_SPDY_MAX_CONTROL)
        return broken(err, "a control frame is larger than 1 MiB");
    return 0;
}

int kube_spdy_decode(kube_spdy_codec *c, const uint8_t **in, size_t *len, kube_spdy_frame *f,
                     gc_error *err)
{
    memset(f, 0, sizeof(*f));
    f->type = KUBE_SPDY_NONE;
    for (;;) {
        if (c->data_stream) {
            /* A piece is worth reporting only if it carries bytes or ends the frame. */
            if (!*len && c->data_remaining)
                return 0;
            size_t take = c->data_remaining < *len ? c->data_remaining : *len;
            f->type = KUBE_SPDY_DATA;
            f->stream_id = c->data_stream;
            f->data = *in;
            f->len = take;
            *in += take;
            *len -= take;
            c->data_remaining -= (uint32_t)take;
            if (!c->data_remaining) {
                f->data_end = true;
                f->flags = c->data_flags;
                c->data_stream = 0;
            }
            return 0;
        }
        if (c->skip_remaining) {
            size_t take = c->skip_remaining < *len ? c->skip_remaining : *len;
            *in += take;
            *len -= take;
            c->skip_remaining -= (uint32_t)take;
            if (c->skip_remaining)
                return 0;
            continue;
        }
        if (c->pending.len < 8) {
            if (!*len || take_into(&c->pending, 8, in, len) < 8)
                return 0;
            int rc = start_frame(c, err);
            if (rc)
                return rc;
            continue;
        }
        size_t whole = 8 + (get32((const uint8_t *)c->pending.data + 4) & KUBE_SPDY_MAX_LENGTH);
        if (take_into(&c->pending, whole, in, len) < whole)
            return 0;
        int rc = parse_control(c, f, err);
        gc_buf_reset(&c->pending);
        return rc;
    }
}
