/*
 * REST paths and URLs: "/api/v1/..." for the core group, "/apis/<group>/<version>/..." for the
 * others, and the query string the verbs add.
 */
#include "kube/internal.h"

#include <ctype.h>
#include <string.h>

void kube_url_encode(gc_buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
            gc_buf_putc(out, (char)c);
        else
            gc_buf_printf(out, "%%%c%c", hex[c >> 4], hex[c & 15]);
    }
}

static void append_query(gc_buf *url, const char *const *pairs, bool *first)
{
    for (size_t i = 0; pairs && pairs[i] && pairs[i + 1]; i += 2) {
        gc_buf_putc(url, *first ? '?' : '&');
        *first = false;
        kube_url_encode(url, pairs[i]);
        gc_buf_putc(url, '=');
        kube_url_encode(url, pairs[i + 1]);
    }
}

static char *url_with_base(const char *base, const kube_request *req)
{
    gc_buf url;
    gc_buf_init(&url);
    size_t blen = strlen(base);
    while (blen && base[blen - 1] == '/')
        blen--;
    gc_buf_append(&url, base, blen);
    gc_buf_puts(&url, req->path);
    bool first = !strchr(req->path, '?');
    append_query(&url, req->query, &first);
    append_query(&url, req->extra, &first);
    return gc_buf_detach(&url);
}

char *kube_url(const gc_kube *k, const kube_request *req)
{
    return url_with_base(k->base_url, req);
}

char *kube_trace_url(const gc_kube *k, const kube_request *req)
{
    return url_with_base(k->sel.cluster->server, req);
}

/* Names are DNS subdomains in practice, but a segment is encoded anyway, so that a stray
 * character can only produce a 404, never a different path. */
static void segment(gc_buf *b, const char *s)
{
    gc_buf_putc(b, '/');
    kube_url_encode(b, s);
}

char *gc_kube_path(const char *group, const char *version, const char *ns, const char *resource,
                   const char *name)
{
    gc_buf b;
    gc_buf_init(&b);
    if (group && group[0]) {
        gc_buf_puts(&b, "/apis");
        segment(&b, group);
    } else {
        gc_buf_puts(&b, "/api");
    }
    segment(&b, version);
    if (ns && ns[0]) {
        gc_buf_puts(&b, "/namespaces");
        segment(&b, ns);
    }
    segment(&b, resource);
    if (name && name[0])
        segment(&b, name);
    return gc_buf_detach(&b);
}
