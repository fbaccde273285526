#include "gcluster/buf.h"

#include "gcluster/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn static void out_of_memory(size_t size)
{
    gc_fatal("out of memory allocating %zu bytes", size);
}

void *gc_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        out_of_memory(size);
    return p;
}

void *gc_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        out_of_memory(count * size);
    return p;
}

void *gc_xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p)
        out_of_memory(size);
    return p;
}

char *gc_xstrdup(const char *s)
{
    return gc_xstrndup(s, strlen(s));
}

char *gc_xstrndup(const char *s, size_t n)
{
    char *p = gc_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *gc_xasprintf(const char *fmt, ...)
{
    gc_buf b;
    gc_buf_init(&b);
    va_list ap;
    va_start(ap, fmt);
    gc_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    return gc_buf_detach(&b);
}

void gc_buf_init(gc_buf *b)
{
    b->cap = 64;
    b->len = 0;
    b->data = gc_xmalloc(b->cap);
    b->data[0] = '\0';
}

void gc_buf_free(gc_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void gc_buf_reset(gc_buf *b)
{
    b->len = 0;
    b->data[0] = '\0';
}

static void reserve(gc_buf *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return;
    size_t cap = b->cap;
    while (cap < need)
        cap *= 2;
    b->data = gc_xrealloc(b->data, cap);
    b->cap = cap;
}

void gc_buf_append(gc_buf *b, const void *data, size_t len)
{
    reserve(b, len);
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

void gc_buf_puts(gc_buf *b, const char *s)
{
    gc_buf_append(b, s, strlen(s));
}

void gc_buf_putc(gc_buf *b, char c)
{
    gc_buf_append(b, &c, 1);
}

void gc_buf_vprintf(gc_buf *b, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        return;
    reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void gc_buf_printf(gc_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gc_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *gc_buf_detach(gc_buf *b)
{
    char *s = b->data;
    b->data = NULL;
    b->len = b->cap = 0;
    return s;
}
