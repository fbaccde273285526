/*
 * SPDY/3.1 frames: every frame type round-trips through the encoder and the decoder (one zlib
 * stream per direction shared by all header blocks), byte streams recorded from the Go SPDY
 * library the kubelet uses decode to the frames it wrote, unknown control frames are skipped,
 * and malformed frames (bad lengths, bad zlib, lying header blocks) are refused.
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
#include <zlib.h>

/* Written by github.com/moby/spdystream@v0.5.1/spdy's Framer, as the kubelet's port-forward
 * server writes them: SYN_REPLY for streams 1 and 3 (no headers), DATA "hello" on 3, FIN on 3,
 * FIN on 1, the answer to PING 1, and GOAWAY (last good stream 3, status OK). */
static const uint8_t go_server_stream[] = {
    0x80, 0x03, 0x00, 0x02, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x01, 0x78, 0xf9, 0xe3,
    0xc6, 0xa7, 0xc2, 0x62, 0x60, 0x60, 0x60, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x80, 0x03,
    0x00, 0x02, 0x00, 0x00, 0x00, 0x0c, 0x00, 0x00, 0x00, 0x03, 0x02, 0x61, 0x00, 0x00, 0x00,
    0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x05, 0x68, 0x65, 0x6c, 0x6c,
    0x6f, 0x00, 0x00, 0x00, 0x03, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00,
    0x00, 0x00, 0x80, 0x03, 0x00, 0x06, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, 0x80,
    0x03, 0x00, 0x07, 0x00, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00,
};

/* The same library opening an error stream the way kubectl does (headers streamType=error,
 * port=29000, requestID=0; Go canonicalises and lower-cases the names). */
static const uint8_t go_client_syn_stream[] = {
    0x80, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x78, 0xf9, 0xe3, 0xc6, 0xa7, 0xc2, 0x02, 0x25, 0x3a, 0x70, 0x3a, 0x2b,
    0x29, 0x4a, 0x4d, 0xcc, 0x85, 0x16, 0x25, 0xac, 0xa9, 0xa0, 0x80, 0x86, 0x14, 0xcb, 0x45,
    0xa0, 0x24, 0xcc, 0x6a, 0x64, 0x69, 0x60, 0x60, 0xc0, 0xc0, 0xc0, 0xc0, 0x59, 0x04, 0x89,
    0xc7, 0x4c, 0x50, 0xfa, 0x66, 0x34, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff,
};

/* --- helpers ------------------------------------------------------------------------------ */

/* A decoded frame, copied out of the decoder (whose pointers live until its next call). DATA
 * pieces of one frame are joined. */
typedef struct seen {
    int type;
    uint8_t flags;
    uint32_t stream_id, value;
    uint8_t priority;
    bool ended; /* DATA: the last piece arrived */
    gc_buf data;
    char headers[512]; /* "name=value;" for each pair */
    size_t settings_count;
    kube_spdy_setting settings[4];
} seen;

typedef struct decoding {
    seen frames[32];
    size_t count;
    int rc;
    gc_error err;
} decoding;

static void record(decoding *d, const kube_spdy_frame *f)
{
    seen *last = d->count ? &d->frames[d->count - 1] : NULL;
    /* A DATA piece continues the previous record when that one has not ended yet. */
    bool continues = last && f->type == KUBE_SPDY_DATA && last->type == KUBE_SPDY_DATA &&
                     last->stream_id == f->stream_id && !last->ended;
    if (!continues) {
        assert_true(d->count < 32);
        last = &d->frames[d->count++];
        memset(last, 0, sizeof(*last));
        gc_buf_init(&last->data);
        last->type = f->type;
        last->stream_id = f->stream_id;
        last->priority = f->priority;
        last->value = f->value;
    }
    last->flags |= f->flags;
    if (f->len)
        gc_buf_append(&last->data, f->data, f->len);
    last->ended = f->data_end;
    for (size_t i = 0; i < f->header_count; i++) {
        size_t used = strlen(last->headers);
        snprintf(last->headers + used, sizeof(last->headers) - used, "%s=%s;", f->headers[i].name,
                 f->headers[i].value);
    }
    last->settings_count = f->settings_count;
    for (size_t i = 0; i < f->settings_count && i < 4; i++)
        last->settings[i] = f->settings[i];
}

/* Decodes `len` bytes fed `step` at a time with a fresh codec. */
static void decode_all(decoding *d, const void *bytes, size_t len, size_t step)
{
    memset(d, 0, sizeof(*d));
    kube_spdy_codec c;
    kube_spdy_codec_init(&c);
    const uint8_t *p = bytes;
    for (size_t off = 0; off < len && !d->rc; off += step) {
        const uint8_t *in = p + off;
        size_t left = len - off < step ? len - off : step;
        for (int guard = 0; guard < 100000; guard++) {
            kube_spdy_frame f;
            d->rc = kube_spdy_decode(&c, &in, &left, &f, &d->err);
            if (d->rc || f.type == KUBE_SPDY_NONE)
                break;
            record(d, &f);
        }
    }
    kube_spdy_codec_free(&c);
}

static void decoding_free(decoding *d)
{
    for (size_t i = 0; i < d->count; i++)
        gc_buf_free(&d->frames[i].data);
}

static void assert_refused(const void *bytes, size_t len, const char *why)
{
    static const size_t steps[] = {1, 5, 1 << 20};
    for (size_t i = 0; i < 3; i++) {
        decoding d;
        decode_all(&d, bytes, len, steps[i]);
        assert_int_equal(d.rc, GC_EXIT_RUNTIME);
        if (!strstr(d.err.message, why))
            fail_msg("\"%s\" does not say \"%s\"", d.err.message, why);
        decoding_free(&d);
    }
}

static void put32(gc_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    gc_buf_append(b, x, 4);
}

static void control_head(gc_buf *b, int version, int type, uint8_t flags, uint32_t len)
{
    uint8_t h[8] = {(uint8_t)(0x80 | version >> 8),
                    (uint8_t)version,
                    (uint8_t)(type >> 8),
                    (uint8_t)type,
                    flags,
                    (uint8_t)(len >> 16),
                    (uint8_t)(len >> 8),
                    (uint8_t)len};
    gc_buf_append(b, h, 8);
}

/* A SYN_REPLY for stream 1 whose header block is `raw` compressed with `dict` (NULL: none),
 * ended with a sync flush (or, with `finish`, ending the zlib stream). */
static void reply_with_block(gc_buf *out, const void *raw, size_t raw_len, const uint8_t *dict,
                             size_t dict_len, bool finish)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    assert_int_equal(deflateInit(&z, Z_DEFAULT_COMPRESSION), Z_OK);
    if (dict)
        assert_int_equal(deflateSetDictionary(&z, dict, (uInt)dict_len), Z_OK);
    uint8_t block[4096];
    z.next_in = (Bytef *)raw;
    z.avail_in = (uInt)raw_len;
    z.next_out = block;
    z.avail_out = sizeof(block);
    int rc = deflate(&z, finish ? Z_FINISH : Z_SYNC_FLUSH);
    assert_true(rc == Z_OK || rc == Z_STREAM_END);
    size_t n = sizeof(block) - z.avail_out;
    deflateEnd(&z);
    if (finish) { /* looks like a flushed block, but the zlib stream is over */
        memcpy(block + n, "\0\0\xff\xff", 4);
        n += 4;
    }
    control_head(out, 3, KUBE_SPDY_SYN_REPLY, 0, (uint32_t)(4 + n));
    put32(out, 1);
    gc_buf_append(out, block, n);
}

/* --- tests -------------------------------------------------------------------------------- */

static void dictionary_is_spdy3s(void **state)
{
    (void)state;
    size_t len;
    const uint8_t *dict = kube_spdy_dictionary(&len);
    assert_int_equal(len, 1423);
    /* The id every SPDY/3 zlib stream carries in its header (0x78 0xf9 e3 c6 a7 c2 above). */
    assert_int_equal(adler32(adler32(0, NULL, 0), dict, (uInt)len), 0xe3c6a7c2);
    assert_memory_equal(dict, "\0\0\0\x07options\0\0\0\x04head", 19);
    assert_memory_equal(dict + len - 7, ",enq=0.", 7);
}

static void every_frame_type_round_trips(void **state)
{
    (void)state;
    kube_spdy_codec enc;
    kube_spdy_codec_init(&enc);
    gc_buf out;
    gc_buf_init(&out);
    kube_spdy_pair open_headers[] = {
        {"streamtype", "data"}, {"port", "29000"}, {"requestid", "41"}};
    kube_spdy_pair reply_headers[] = {{"x", ""}};
    kube_spdy_setting settings[] = {{1, 7, 65536}, {0, 4, 100}};
    uint8_t payload[3000];
    for (size_t i = 0; i < sizeof(payload); i++)
        payload[i] = (uint8_t)(i * 13);
    const kube_spdy_frame frames[] = {
        {.type = KUBE_SPDY_SYN_STREAM,
         .flags = KUBE_SPDY_FLAG_FIN,
         .stream_id = 5,
         .value = 1,
         .priority = 7,
         .headers = open_headers,
         .header_count = 3},
        {.type = KUBE_SPDY_SYN_STREAM, .stream_id = 7, .headers = open_headers, .header_count = 2},
        {.type = KUBE_SPDY_SYN_REPLY, .stream_id = 7, .headers = reply_headers, .header_count = 1},
        {.type = KUBE_SPDY_HEADERS, .flags = KUBE_SPDY_FLAG_FIN, .stream_id = 7},
        {.type = KUBE_SPDY_DATA, .stream_id = 7, .data = payload, .len = sizeof(payload)},
        {.type = KUBE_SPDY_DATA, .flags = KUBE_SPDY_FLAG_FIN, .stream_id = 7},
        {.type = KUBE_SPDY_RST_STREAM, .stream_id = 5, .value = KUBE_SPDY_RST_CANCEL},
        {.type = KUBE_SPDY_SETTINGS, .settings = settings, .settings_count = 2},
        {.type = KUBE_SPDY_PING, .value = 0x7ffffffe},
        {.type = KUBE_SPDY_GOAWAY, .stream_id = 7, .value = 2},
        {.type = KUBE_SPDY_WINDOW_UPDATE, .stream_id = 7, .value = 1 << 20},
    };
    size_t n = sizeof(frames) / sizeof(*frames);
    for (size_t i = 0; i < n; i++)
        kube_spdy_encode(&enc, &out, &frames[i]);

    static const size_t steps[] = {1, 3, 8, 9, 100, 1 << 20};
    for (size_t s = 0; s < sizeof(steps) / sizeof(*steps); s++) {
        decoding d;
        decode_all(&d, out.data, out.len, steps[s]);
        assert_int_equal(d.rc, 0);
        assert_int_equal(d.count, n);
        for (size_t i = 0; i < n; i++) {
            const seen *g = &d.frames[i];
            assert_int_equal(g->type, frames[i].type);
            assert_int_equal(g->flags, frames[i].flags);
            assert_int_equal(g->stream_id, frames[i].stream_id);
            assert_int_equal(g->value, frames[i].value);
            assert_int_equal(g->data.len, frames[i].len);
            if (frames[i].len)
                assert_memory_equal(g->data.data, frames[i].data, frames[i].len);
        }
        assert_int_equal(d.frames[0].priority, 7);
        assert_string_equal(d.frames[0].headers, "streamtype=data;port=29000;requestid=41;");
        assert_string_equal(d.frames[1].headers, "streamtype=data;port=29000;");
        assert_string_equal(d.frames[2].headers, "x=;");
        assert_string_equal(d.frames[3].headers, "");
        assert_int_equal(d.frames[7].settings_count, 2);
        assert_int_equal(d.frames[7].settings[0].flags, 1);
        assert_int_equal(d.frames[7].settings[0].id, 7);
        assert_int_equal(d.frames[7].settings[0].value, 65536);
        assert_int_equal(d.frames[7].settings[1].id, 4);
        decoding_free(&d);
    }
    gc_buf_free(&out);
    kube_spdy_codec_free(&enc);
}

static void go_framer_streams_decode(void **state)
{
    (void)state;
    static const size_t steps[] = {1, 4, 13, 1 << 20};
    for (size_t s = 0; s < sizeof(steps) / sizeof(*steps); s++) {
        decoding d;
        decode_all(&d, go_server_stream, sizeof(go_server_stream), steps[s]);
        assert_int_equal(d.rc, 0);
        assert_int_equal(d.count, 7);
        assert_int_equal(d.frames[0].type, KUBE_SPDY_SYN_REPLY);
        assert_int_equal(d.frames[0].stream_id, 1);
        assert_string_equal(d.frames[0].headers, "");
        assert_int_equal(d.frames[1].type, KUBE_SPDY_SYN_REPLY);
        assert_int_equal(d.frames[1].stream_id, 3);
        assert_int_equal(d.frames[2].type, KUBE_SPDY_DATA);
        assert_int_equal(d.frames[2].data.len, 5);
        assert_memory_equal(d.frames[2].data.data, "hello", 5);
        assert_int_equal(d.frames[2].flags, 0);
        assert_int_equal(d.frames[3].stream_id, 3);
        assert_int_equal(d.frames[3].flags, KUBE_SPDY_FLAG_FIN);
        assert_int_equal(d.frames[3].data.len, 0);
        assert_int_equal(d.frames[4].stream_id, 1);
        assert_int_equal(d.frames[4].flags, KUBE_SPDY_FLAG_FIN);
        assert_int_equal(d.frames[5].type, KUBE_SPDY_PING);
        assert_int_equal(d.frames[5].value, 1);
        assert_int_equal(d.frames[6].type, KUBE_SPDY_GOAWAY);
        assert_int_equal(d.frames[6].stream_id, 3);
        assert_int_equal(d.frames[6].value, KUBE_SPDY_GOAWAY_OK);
        decoding_free(&d);
    }
    decoding d;
    decode_all(&d, go_client_syn_stream, sizeof(go_client_syn_stream), 1 << 20);
    assert_int_equal(d.rc, 0);
    assert_int_equal(d.count, 1);
    assert_int_equal(d.frames[0].type, KUBE_SPDY_SYN_STREAM);
    assert_int_equal(d.frames[0].stream_id, 1);
    /* Go writes the pairs in map order; all three must be there. */
    assert_non_null(strstr(d.frames[0].headers, "streamtype=error;"));
    assert_non_null(strstr(d.frames[0].headers, "port=29000;"));
    assert_non_null(strstr(d.frames[0].headers, "requestid=0;"));
    decoding_free(&d);
}

static void unknown_control_frames_are_skipped(void **state)
{
    (void)state;
    gc_buf b;
    gc_buf_init(&b);
    control_head(&b, 3, 5, 0, 3); /* NOOP, from older drafts */
    gc_buf_append(&b, "abc", 3);
    control_head(&b, 3, 0x7fff, 0xff, 0);
    control_head(&b, 3, KUBE_SPDY_PING, 0, 4);
    put32(&b, 9);
    decoding d;
    decode_all(&d, b.data, b.len, 2);
    assert_int_equal(d.rc, 0);
    assert_int_equal(d.count, 1);
    assert_int_equal(d.frames[0].type, KUBE_SPDY_PING);
    assert_int_equal(d.frames[0].value, 9);
    decoding_free(&d);
    gc_buf_free(&b);
}

static void malformed_frames_are_refused(void **state)
{
    (void)state;
    gc_buf b;
    gc_buf_init(&b);
    control_head(&b, 2, KUBE_SPDY_PING, 0, 4);
    put32(&b, 1);
    assert_refused(b.data, b.len, "not SPDY version 3");

    static const struct {
        int type;
        uint32_t len;
    } wrong_lengths[] = {{KUBE_SPDY_RST_STREAM, 4}, {KUBE_SPDY_PING, 8},
                         {KUBE_SPDY_GOAWAY, 4},     {KUBE_SPDY_WINDOW_UPDATE, 12},
                         {KUBE_SPDY_SYN_STREAM, 9}, {KUBE_SPDY_SYN_REPLY, 3},
                         {KUBE_SPDY_SETTINGS, 2}};
    for (size_t i = 0; i < sizeof(wrong_lengths) / sizeof(*wrong_lengths); i++) {
        gc_buf_reset(&b);
        control_head(&b, 3, wrong_lengths[i].type, 0, wrong_lengths[i].len);
        for (uint32_t k = 0; k < wrong_lengths[i].len; k++)
            gc_buf_putc(&b, 1);
        assert_refused(b.data, b.len, "wrong length");
    }

    gc_buf_reset(&b);
    control_head(&b, 3, KUBE_SPDY_RST_STREAM, 0, 8);
    put32(&b, 1);
    put32(&b, 0);
    assert_refused(b.data, b.len, "status 0");

    gc_buf_reset(&b);
    control_head(&b, 3, KUBE_SPDY_RST_STREAM, 0, 8);
    put32(&b, 0);
    put32(&b, 5);
    assert_refused(b.data, b.len, "stream 0");

    gc_buf_reset(&b);
    put32(&b, 0);
    put32(&b, 1);
    gc_buf_putc(&b, 'x');
    assert_refused(b.data, b.len, "DATA frame names stream 0");

    gc_buf_reset(&b);
    control_head(&b, 3, KUBE_SPDY_SETTINGS, 0, 12);
    put32(&b, 2); /* two settings would take 16 bytes */
    put32(&b, 1);
    put32(&b, 1);
    assert_refused(b.data, b.len, "SETTINGS frame's count");

    gc_buf_reset(&b);
    control_head(&b, 3, KUBE_SPDY_HEADERS, 0, KUBE_SPDY_MAX_CONTROL + 1);
    assert_refused(b.data, b.len, "larger than 1 MiB");

    size_t dict_len;
    const uint8_t *dict = kube_spdy_dictionary(&dict_len);

    /* Bytes that are not zlib at all. */
    gc_buf_reset(&b);
    control_head(&b, 3, KUBE_SPDY_SYN_REPLY, 0, 17);
    put32(&b, 1);
    gc_buf_append(&b, "\x13\x37garbage\0\0\xff\xff", 13);
    assert_refused(b.data, b.len, "not valid zlib");

    /* zlib primed with another dictionary. */
    gc_buf_reset(&b);
    static const uint8_t empty_block[4] = {0};
    reply_with_block(&b, empty_block, 4, (const uint8_t *)"another dictionary", 18, false);
    assert_refused(b.data, b.len, "dictionary other than SPDY/3's");

    /* A block that ends the zlib stream, which the session needs for later blocks. */
    gc_buf_reset(&b);
    reply_with_block(&b, empty_block, 4, dict, dict_len, true);
    assert_refused(b.data, b.len, "compression stream ended");

    /* A SYN_REPLY cut short: its length leaves out the end of the compressed block, so the
     * block lacks the sync flush that ends every block. */
    gc_buf_reset(&b);
    reply_with_block(&b, "\0\0\0\1\0\0\0\4port\0\0\0\00529000", 21, dict, dict_len, false);
    uint8_t *len_byte = (uint8_t *)b.data + 7;
    *len_byte = (uint8_t)(*len_byte - 6);
    b.len -= 6;
    assert_refused(b.data, b.len, "does not end with a zlib sync flush");

    /* Blocks that lie about their contents. */
    static const struct {
        const char *raw;
        size_t len;
        const char *why;
    } lies[] = {
        {"\0\0\x03\xe8\0\0\0\1a\0\0\0\0", 13, "counts more pairs"},
        {"\0\0\0\1\0\0\0\0\0\0\0\0", 12, "empty name"},
        {"\0\0\0\1\0\0\0\1a\0\0\0\x09xy", 15, "runs past its block"},
        {"\0\0\0\1\0\0\0\1a\0\0\0\1b!!", 15, "bytes after its last pair"},
        {"\0\0", 2, "shorter than its count"},
        {"\0\0\0\2\0\0\0\1a\0\0\0\7bcdefgh\0\0", 22, "ends inside a length"},
    };
    for (size_t i = 0; i < sizeof(lies) / sizeof(*lies); i++) {
        gc_buf_reset(&b);
        reply_with_block(&b, lies[i].raw, lies[i].len, dict, dict_len, false);
        assert_refused(b.data, b.len, lies[i].why);
    }

    /* A frame cut short is no error: the decoder waits for the rest. */
    decoding d;
    decode_all(&d, go_server_stream, 30, 7);
    assert_int_equal(d.rc, 0);
    assert_int_equal(d.count, 1);
    decoding_free(&d);
    gc_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dictionary_is_spdy3s),
        cmocka_unit_test(every_frame_type_round_trips),
        cmocka_unit_test(go_framer_streams_decode),
        cmocka_unit_test(unknown_control_frames_are_skipped),
        cmocka_unit_test(malformed_frames_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
