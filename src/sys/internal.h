/*
 * The parts of sys/ shared between its files (private to sys/).
 *
 *   clock.c   monotonic time, RFC 3339        base64.c  encode, decode
 *   file.c    whole files, wiping growth
 *   process.c the subprocess runner           curl_lazy.c  libcurl loaded on first use
 *   http.c    one request on libcurl          http_trace.c  -v lines, redaction
 */
#ifndef GCLUSTER_SYS_INTERNAL_H
#define GCLUSTER_SYS_INTERNAL_H

#include "gcluster/buf.h"
#include "gcluster/error.h"
#include "gcluster/http.h"

#include <stddef.h>

/* Appends to `b`, growing it by copy-and-wipe instead of realloc, so that no copy of what it
 * holds (a key, a token) is left in freed memory. */
void sys_append_wiping(gc_buf *b, const void *data, size_t len);

/* Loads libcurl.so.4 and every function gcluster uses from it, once per process; an error with
 * the fix when it cannot be (see curl_lazy.c). */
int sys_curl_load(gc_error *err);

/* http_trace.c: the -v lines of one transfer (each does nothing below its verbosity). */
void sys_http_trace_request(const gc_http_transfer *t);
void sys_http_trace_header(const gc_http_transfer *t, const char *line, size_t len);
/* The one line per request; marks the transfer traced. */
void sys_http_trace_result(gc_http_transfer *t, CURLcode result);
void sys_http_trace_response_body(const gc_http_transfer *t);
/* A body as traces show it (caller frees): every credential replaced by "<redacted>", control
 * characters as '?', cut to `max` bytes. */
char *sys_http_redact_body(const char *body, size_t len, size_t max);

#endif
