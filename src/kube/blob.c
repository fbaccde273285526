/*
 * Byte blobs for certificates and keys: base64 for the kubeconfig's *-data fields and for
 * Basic auth, file reading with a size bound, and wiping on release (blobs hold private keys).
 */
#include "kube/kubeconfig.h"

#include "gcluster/buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void kube_blob_free(kube_blob *b)
{
    if (b->data) {
        explicit_bzero(b->data, b->len);
        free(b->data);
    }
    b->data = NULL;
    b->len = 0;
}

static int b64_value(unsigned char c)
{
    const char *p = c ? strchr(b64_alphabet, c) : NULL;
    return p ? (int)(p - b64_alphabet) : -1;
}

bool kube_base64_decode(const char *text, size_t len, kube_blob *out)
{
    out->data = gc_xmalloc(len / 4 * 3 + 4);
    out->len = 0;
    unsigned acc = 0;
    int bits = 0;
    size_t padding = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        if (c == '=') {
            padding++;
            continue;
        }
        int v = b64_value(c);
        if (v < 0 || padding) {
            kube_blob_free(out);
            return false;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out->data[out->len++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    /* Six leftover bits cannot come from any byte sequence. */
    if (bits >= 6 || padding > 2) {
        kube_blob_free(out);
        return false;
    }
    out->data[out->len] = '\0';
    return true;
}

char *kube_base64_encode(const void *data, size_t len)
{
    const unsigned char *in = data;
    char *out = gc_xmalloc((len + 2) / 3 * 4 + 1);
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[o++] = b64_alphabet[(v >> 18) & 63];
        out[o++] = b64_alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? b64_alphabet[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? b64_alphabet[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

bool kube_read_file(const char *path, size_t max, kube_blob *out)
{
    out->data = NULL;
    out->len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    gc_buf b;
    gc_buf_init(&b);
    char chunk[8192];
    size_t n;
    bool ok = true;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (b.len + n > max) {
            errno = EFBIG;
            ok = false;
            break;
        }
        gc_buf_append(&b, chunk, n);
    }
    if (ok && ferror(f)) {
        errno = EIO;
        ok = false;
    }
    explicit_bzero(chunk, sizeof(chunk));
    int saved = errno;
    fclose(f);
    if (!ok) {
        explicit_bzero(b.data, b.len);
        gc_buf_free(&b);
        errno = saved;
        return false;
    }
    out->len = b.len;
    out->data = (unsigned char *)gc_buf_detach(&b);
    return true;
}
