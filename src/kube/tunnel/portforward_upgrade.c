/*
 * The HTTP/1.1 upgrade that turns a request for a pod's portforward subresource into a tunnel:
 * the request head, the answer head, and the checks that the answer really is the upgrade asked
 * for. The API server answers 101 only when the kubelet accepted the port-forward; anything
 * else (403, 404, a 500 from an unreachable kubelet) is an ordinary answer, usually with a
 * Status body.
 */
#include "kube/tunnel/internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void kube_pf_upgrade_request(gc_buf *out, kube_tunnel_kind kind, const char *host, const char *path,
                             const char *const *header_lines, const char *ws_key)
{
    if (kind == KUBE_TUNNEL_WEBSOCKET) {
        gc_buf_printf(out,
                      "GET %s HTTP/1.1\r\nHost: %s\r\n"
                      "Connection: Upgrade\r\nUpgrade: websocket\r\n"
                      "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: %s\r\n"
                      "Sec-WebSocket-Protocol: " KUBE_PF_WS_PROTOCOL "\r\n",
                      path, host, ws_key);
    } else {
        /* What the kubelet and older API servers take: POST, upgraded to SPDY/3.1, with the
         * port-forward protocol named in X-Stream-Protocol-Version. */
        gc_buf_printf(out,
                      "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n"
                      "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                      "X-Stream-Protocol-Version: " KUBE_PF_PROTOCOL "\r\n",
                      path, host);
    }
    for (size_t i = 0; header_lines && header_lines[i]; i++) {
        gc_buf_puts(out, header_lines[i]);
        gc_buf_puts(out, "\r\n");
    }
    gc_buf_puts(out, "\r\n");
}

long kube_http_head_length(const void *data, size_t len)
{
    const char *p = data;
    size_t limit = len < KUBE_HTTP_HEAD_MAX ? len : KUBE_HTTP_HEAD_MAX;
    /* Lines end in CRLF; a bare LF is tolerated, as Go's server side does. */
    for (size_t i = 0; i < limit; i++) {
        if (p[i] != '\n')
            continue;
        if (i + 1 < len && p[i + 1] == '\n')
            return (long)(i + 2);
        if (i + 2 < len && p[i + 1] == '\r' && p[i + 2] == '\n')
            return (long)(i + 3);
    }
    return len >= KUBE_HTTP_HEAD_MAX ? -1 : 0;
}

static char *trimmed(const char *s, size_t len)
{
    while (len && (*s == ' ' || *s == '\t'))
        s++, len--;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        len--;
    return gc_xstrndup(s, len);
}

static int bad_head(kube_http_head *h, gc_error *err, const char *what)
{
    kube_http_head_free(h);
    return gc_fail(err, GC_EXIT_RUNTIME, "the API server's answer to the port-forward upgrade %s",
                   what);
}

int kube_http_head_parse(kube_http_head *h, const void *data, size_t len, gc_error *err)
{
    memset(h, 0, sizeof(*h));
    const char *p = data, *end = p + len;
    const char *eol = memchr(p, '\n', len);
    if (!eol || eol - p < 12 || strncmp(p, "HTTP/1.", 7) != 0 || p[8] != ' ' ||
        !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
        !isdigit((unsigned char)p[11]))
        return bad_head(h, err, "does not start with an HTTP/1.x status line");
    h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    size_t cap = 0;
    for (p = eol + 1; p < end; p = eol + 1) {
        eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        size_t line = (size_t)(eol - p);
        if (line && p[line - 1] == '\r')
            line--;
        if (!line)
            break; /* the blank line that ends the head */
        const char *colon = memchr(p, ':', line);
        if (!colon || colon == p || *p == ' ' || *p == '\t')
            return bad_head(h, err, "has a malformed header line");
        if (h->count == cap) {
            cap = cap ? cap * 2 : 16;
            h->names = gc_xrealloc(h->names, cap * sizeof(*h->names));
            h->values = gc_xrealloc(h->values, cap * sizeof(*h->values));
        }
        char *name = gc_xstrndup(p, (size_t)(colon - p));
        for (char *c = name; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        h->names[h->count] = name;
        h->values[h->count] = trimmed(colon + 1, line - (size_t)(colon + 1 - p));
        h->count++;
    }
    return 0;
}

const char *kube_http_head_get(const kube_http_head *h, const char *name)
{
    for (size_t i = 0; i < h->count; i++)
        if (!strcasecmp(h->names[i], name))
            return h->values[i];
    return NULL;
}

void kube_http_head_free(kube_http_head *h)
{
    for (size_t i = 0; i < h->count; i++) {
        free(h->names[i]);
        free(h->values[i]);
    }
    free(h->names);
    free(h->values);
    memset(h, 0, sizeof(*h));
}

/* Whether the comma-separated field `name` lists `token` (any case), in any of its lines. */
static bool has_token(const kube_http_head *h, const char *name, const char *token)
{
    size_t tlen = strlen(token);
    for (size_t i = 0; i < h->count; i++) {
        if (strcasecmp(h->names[i], name))
            continue;
        for (const char *p = h->values[i]; *p;) {
            while (*p == ' ' || *p == '\t' || *p == ',')
                p++;
            size_t n = strcspn(p, ",");
            size_t t = n;
            while (t && (p[t - 1] == ' ' || p[t - 1] == '\t'))
                t--;
            if (t == tlen && !strncasecmp(p, token, tlen))
                return true;
            p += n;
        }
    }
    return false;
}

int kube_pf_upgrade_check(const kube_http_head *h, kube_tunnel_kind kind, const char *ws_key,
                          gc_error *err)
{
    if (h->status != 101) {
        gc_fail(err, GC_EXIT_RUNTIME, "the API server refused the port-forward upgrade (HTTP %d)",
                h->status);
        err->http_status = h->status;
        return GC_EXIT_RUNTIME;
    }
    const char *wanted = kind == KUBE_TUNNEL_WEBSOCKET ? "websocket" : "SPDY/3.1";
    if (!has_token(h, "connection", "upgrade") || !has_token(h, "upgrade", wanted))
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "the API server answered 101 but did not upgrade to %s; a proxy between "
                       "here and the API server may not pass upgrades through",
                       wanted);
    if (kind == KUBE_TUNNEL_SPDY) {
        const char *protocol = kube_http_head_get(h, "x-stream-protocol-version");
        if (!protocol || strcmp(protocol, KUBE_PF_PROTOCOL) != 0)
            return gc_fail(err, GC_EXIT_RUNTIME,
                           "the API server did not agree to the port-forward protocol "
                           "(X-Stream-Protocol-Version: %s)",
                           protocol ? protocol : "missing");
        return 0;
    }
    char accept[KUBE_WS_ACCEPT_LEN + 1];
    kube_ws_accept(ws_key, accept);
    const char *got = kube_http_head_get(h, "sec-websocket-accept");
    if (!got || strcmp(got, accept) != 0)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "the API server's WebSocket answer does not match the key sent "
                       "(Sec-WebSocket-Accept %s); something between here and the API server "
                       "answered instead of it",
                       got ? "wrong" : "missing");
    /* Without the tunneling subprotocol the API server would speak the one-connection channel
     * protocol instead: it is older than 1.30 or runs without PortForwardWebsockets. */
    const char *protocol = kube_http_head_get(h, "sec-websocket-protocol");
    if (!protocol || strcmp(protocol, KUBE_PF_WS_PROTOCOL) != 0)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "the API server did not accept the " KUBE_PF_WS_PROTOCOL
                       " WebSocket subprotocol (it answered %s); it is older than Kubernetes "
                       "1.31 or runs without the PortForwardWebsockets feature",
                       protocol ? protocol : "none");
    return 0;
}
