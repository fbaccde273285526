/*
 * REST paths: "/api/v1/..." for the core group, "/apis/<group>/<version>/..." for the others.
 */
#include "kube/internal.h"

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
