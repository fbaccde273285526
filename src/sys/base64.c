/*
 * Base64 (RFC 4648, standard alphabet): the kubeconfig's *-data fields, Basic credentials, the
 * Docker config's "auth" entries.
 */
#include "gcluster/sys.h"

#include <stdlib.h>
#include <string.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *gc_base64_encode(const void *data, size_t len)
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
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? alphabet[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

static int value_of(unsigned char c)
{
    const char *p = c ? strchr(alphabet, c) : NULL;
    return p ? (int)(p - alphabet) : -1;
}

static unsigned char *rejected(unsigned char *out, size_t len)
{
    explicit_bzero(out, len);
    free(out);
    return NULL;
}

unsigned char *gc_base64_decode(const char *text, size_t len, size_t *out_len)
{
    size_t cap = len / 4 * 3 + 4;
    unsigned char *out = gc_xmalloc(cap);
    size_t o = 0;
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
        int v = value_of(c);
        if (v < 0 || padding) /* a foreign character, or data after the padding */
            return rejected(out, cap);
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    /* Six leftover bits cannot come from any byte sequence. */
    if (bits >= 6 || padding > 2)
        return rejected(out, cap);
    out[o] = '\0';
    if (out_len)
        *out_len = o;
    return out;
}
