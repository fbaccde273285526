/*
 * http: one HTTP request on a libcurl easy handle, for every client gcluster has (the Kubernetes
 * API server, OCI registries).
 *
 * The layer does what every request needs done the same way: the method and its body (from
 * memory or from a read callback), the headers, the response (into a buffer or to a data
 * callback, with the headers of the final response kept), time limits, and the -v trace with
 * every credential redacted. What belongs to one client stays with it: TLS and credentials (set
 * on the handle after gc_http_start), retries, what a status means.
 *
 * A transfer runs on the caller's handle, so the caller decides about connection reuse and may
 * drive many transfers at once on a multi handle: gc_http_start, then curl_easy_perform or a
 * multi loop, then gc_http_finish. gc_http_perform does the three in a row.
 *
 * Traces (through gc_events, kind GC_EVENT_TRACE): at verbose 1 one line per request when it ends
 * ("GET https://host/path -> 200 OK (12 ms, HTTP/2, new connection)"; a streaming request when
 * its headers arrive); at verbose 2 also the request and response headers and bodies. Nothing
 * traced shows a credential: Authorization, Proxy-Authorization, Cookie and Set-Cookie values,
 * passwords in URLs, credential-like query parameters (tokens, signatures, upload state), and in
 * bodies every credential-like JSON value, a Secret's data, and PEM private keys and bearer
 * tokens in text.
 */
#ifndef GCLUSTER_HTTP_H
#define GCLUSTER_HTTP_H

#include "gcluster/buf.h"
#include "gcluster/error.h"
#include "gcluster/events.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

/* Loads libcurl (on first use; see src/sys/curl_lazy.c) and initialises it, once per process.
 * Every client calls it before its first request; a missing libcurl is an error with the fix. */
int gc_http_init(gc_error *err);
/* Which libcurl gcluster loads: its version line ("libcurl/7.88.1 OpenSSL/3.0.17 ...") and its
 * file, for --version. Loads it (without initialising it); the reason when it cannot be. */
int gc_http_library(char *out, size_t size, gc_error *err);
/* Releases what gc_http_init set up; nothing when libcurl was never loaded. At process exit. */
void gc_http_cleanup(void);

/* Fills `buf` with up to `size` bytes of the body; returns how many (0 at its end), or
 * GC_HTTP_READ_ABORT to fail the transfer. */
typedef size_t (*gc_http_read_fn)(char *buf, size_t size, void *ctx);
#define GC_HTTP_READ_ABORT CURL_READFUNC_ABORT

typedef struct gc_http_body {
    const void *data; /* from memory: `len` bytes that live until gc_http_finish; or */
    size_t len;
    gc_http_read_fn read; /* `size` bytes from this callback */
    void *read_ctx;
    long long size;
    const char *content_type; /* NULL: no Content-Type header */
} gc_http_body;

/* A piece of a 2xx response body; return false to end the transfer (not an error). */
typedef bool (*gc_http_data_fn)(const char *data, size_t len, void *ctx);
/* A response header as it arrives, name and value trimmed (headers of every response, also of
 * redirects). */
typedef void (*gc_http_header_fn)(const char *name, const char *value, void *ctx);

typedef struct gc_http_trace {
    const gc_events *events;
    int verbose; /* 0: nothing; 1: a line per request; 2: headers and bodies too */
    /* The client's own redaction of a trace line (the secrets it knows: its token, password,
     * key material), after the layer's; NULL: none. */
    void (*redact)(gc_buf *line, const void *ctx);
    const void *redact_ctx;
} gc_http_trace;

typedef struct gc_http_request {
    const char *method; /* GET, HEAD, POST, PUT, PATCH, DELETE */
    const char *url;
    const char *trace_url;      /* the URL traces show (redacted all the same); NULL: url */
    const char *const *headers; /* "Name: value" lines, NULL-terminated; NULL: none */
    const gc_http_body *body;   /* NULL: none */
    const char *protocols;      /* allowed for the URL and redirects; NULL: "https" */
    bool follow_redirects;      /* for reads only: a body is not sent again */
    bool streaming;             /* a watch or a log follow: traced when the headers arrive */
    long timeout_ms;            /* the whole transfer; 0: no limit */
    long connect_timeout_ms;    /* 0: libcurl's default */
    long stall_seconds;         /* give up after this long below stall_bytes_per_second, or
                                   with nothing but blanks (spaces, tabs, line ends) arriving:
                                   JSON may hold any number of them, so a server dripping them
                                   would otherwise hold the request without end */
    long stall_bytes_per_second;
    long long deadline_ms;   /* gc_clock_ms() time to give up at; 0: none */
    gc_http_data_fn on_data; /* 2xx bodies go here; NULL: into the transfer's body */
    gc_http_header_fn on_header;
    void *ctx;                  /* of on_data and on_header */
    size_t body_max;            /* the most a body may take in memory: a collected one, or a
                                   non-2xx one when on_data is set; 0: 1 MiB */
    const gc_http_trace *trace; /* NULL: no trace */
} gc_http_request;

/* One request's state and outcome. */
typedef struct gc_http_transfer {
    long status;                 /* of the final response; 0: none arrived */
    gc_buf body;                 /* the body when not handed to on_data (then: a non-2xx body) */
    CURLcode result;             /* CURLE_OK also when on_data ended the transfer */
    char error[CURL_ERROR_SIZE]; /* libcurl's own words for a failure, or "" */
    bool stopped;                /* on_data returned false */
    bool too_large;              /* the body passed body_max (its first body_max bytes are kept) */
    bool past_deadline;          /* ended by deadline_ms */
    bool stalled; /* ended by stall_seconds without a byte but blanks (result: timed out) */
    bool sent;    /* the request may have reached the server */
    /* The request went out more than once: libcurl re-sends it by itself, on a fresh connection,
     * when a reused connection dies before any byte of the answer ("Connection died, retrying a
     * fresh connect"; an HTTP/2 REFUSED_STREAM too). The first copy may have been acted on, so
     * for a request that is not idempotent the answer is ambiguous: a 409 AlreadyExists or a 404
     * may be the answer to our own first copy. */
    bool resent;
    long long elapsed_ms;

    /* Private to the layer. */
    gc_http_request req;
    CURL *e;
    struct curl_slist *header_list;
    gc_buf headers;  /* the final response's headers: "name\0value\0" pairs */
    char *shown_url; /* the redacted URL of traces */
    long long body_offset;
    long long started_ms;
    long long progress_ms; /* when the last byte that is not a blank (or a header) arrived */
    unsigned sends;        /* times libcurl was about to send the request */
    bool traced;
} gc_http_transfer;

void gc_http_transfer_init(gc_http_transfer *t);
void gc_http_transfer_free(gc_http_transfer *t);

/* Resets `e` and sets it up for `req`; at verbose 2 traces the request. The URLs and headers
 * are copied; the body (and the method string) must live until gc_http_finish. Options the
 * caller sets on `e` afterwards (TLS, proxies, client certificates) are its own. */
void gc_http_start(gc_http_transfer *t, CURL *e, const gc_http_request *req);
/* Records how the transfer ended (libcurl's result for it), traces it, and releases the
 * request's headers (wiped: they may hold a credential). The handle may be reused after. */
void gc_http_finish(gc_http_transfer *t, CURLcode result);
/* gc_http_start, curl_easy_perform and gc_http_finish. */
void gc_http_perform(gc_http_transfer *t, CURL *e, const gc_http_request *req);

/* Traces an HTTP/1.1 head that went around this layer (the port-forward upgrade is written on a
 * connection libcurl only opened): at verbose 2, line by line, credentials redacted as in the
 * layer's own traces; `direction` is '>' for a head sent, '<' for one received. */
void gc_http_trace_head(const gc_http_trace *trace, char direction, const char *head, size_t len);

/* The value of a header of the final response (case-insensitive name), or NULL. */
const char *gc_http_header(const gc_http_transfer *t, const char *name);

/* "OK", "Not Found", ... for a status; "" for one without a usual phrase. */
const char *gc_http_reason_phrase(long status);

/* The form traces show, for anything else that must show a URL (caller frees): the URL without
 * a password or credential-like query values. */
char *gc_http_redact_url(const char *url);
/* Hides credentials in free text (a server's error message, a trace line): PEM private keys,
 * the value after "Bearer " and "Basic ", and every occurrence of each of `secrets`
 * (NULL-terminated, may be NULL; those shorter than 4 bytes are ignored). */
void gc_http_redact_text(gc_buf *text, const char *const *secrets);

/* GET `url` (https only; redirects followed) into `out`, at most `max` bytes, within
 * `timeout_ms`: a release file fetched at run time. The CA store is the system's, or the file
 * SSL_CERT_FILE names. Errors name the URL and what failed (connection, status, size). */
int gc_http_fetch(const char *url, size_t max, long timeout_ms, const gc_http_trace *trace,
                  gc_buf *out, gc_error *err);

#endif
