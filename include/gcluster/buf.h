/*
 * gc_buf: a growable, always NUL-terminated byte string (in the spirit of redis' sds), and
 * gc_strings, a list of owned strings.
 *
 * Out-of-memory ends the process through gc_fatal (see gc_xmalloc): a CLI that cannot allocate a
 * few KiB has no useful way to continue, and checking every append would hide the logic that
 * matters.
 */
#ifndef GCLUSTER_BUF_H
#define GCLUSTER_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct gc_buf {
    char *data; /* NUL-terminated; never NULL after gc_buf_init */
    size_t len;
    size_t cap;
} gc_buf;

void gc_buf_init(gc_buf *b);
void gc_buf_free(gc_buf *b);
void gc_buf_reset(gc_buf *b);
void gc_buf_append(gc_buf *b, const void *data, size_t len);
void gc_buf_puts(gc_buf *b, const char *s);
void gc_buf_putc(gc_buf *b, char c);
void gc_buf_printf(gc_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gc_buf_vprintf(gc_buf *b, const char *fmt, va_list ap);
/* Hands the string to the caller (free() it); `b` must be re-initialised before reuse. */
char *gc_buf_detach(gc_buf *b);

void *gc_xmalloc(size_t size);
void *gc_xcalloc(size_t count, size_t size);
void *gc_xrealloc(void *ptr, size_t size);
char *gc_xstrdup(const char *s);
char *gc_xstrndup(const char *s, size_t n);
char *gc_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* gc_strings: a list of owned strings (util/strings.c), the one list every room collects
 * warnings, notes and words in. Zero-initialised is empty. */
typedef struct gc_strings {
    char **items;
    size_t count;
} gc_strings;

/* Appends a copy of `s`. */
void gc_strings_push(gc_strings *list, const char *s);
/* Frees the strings and the list, and leaves it empty. */
void gc_strings_free(gc_strings *list);
/* Appends the whitespace-separated words of `text` (NULL: none); runs of spaces never make empty
 * words. */
void gc_strings_split_words(const char *text, gc_strings *out);

#endif
