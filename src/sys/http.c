/*
 * One HTTP request on a libcurl easy handle (see gcluster/http.h).
 */
#include "gcluster/http.h"

#include "gcluster/sys.h"
#include "sys/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_BODY_MAX (1u << 20)
#define MAX_REDIRECTS    5L

/* libcurl's global initialisation is the library's only global state, done once per process. */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static CURLcode init_result;

static void init_curl(void)
{
    init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int gc_http_init(gc_error *err)
{
    int rc = sys_curl_load(err);
    if (rc)
        return rc;
    pthread_once(&init_once, init_curl);
    if (init_result != CURLE_OK)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot initialise libcurl: %s",
                       curl_easy_strerror(init_result));
    return 0;
}

void gc_http_cleanup(void)
{
    curl_global_cleanup();
}

void gc_http_transfer_init(gc_http_transfer *t)
{
    memset(t, 0, sizeof(*t));
    gc_buf_init(&t->body);
    gc_buf_init(&t->headers);
}

void gc_http_transfer_free(gc_http_transfer *t)
{
    gc_buf_free(&t->body);
    gc_buf_free(&t->headers);
    free(t->shown_url);
    t->shown_url = NULL;
}

const char *gc_http_header(const gc_http_transfer *t, const char *name)
{
    const char *p = t->headers.data, *end = p + t->headers.len;
    while (p < end) {
        const char *value = p + strlen(p) + 1;
        if (!strcasecmp(p, name))
            return value;
        p = value + strlen(value) + 1;
    }
    return NULL;
}

/* --- libcurl callbacks ------------------------------------------------------------------ */

static bool is_2xx(long status)
{
    return status >= 200 && status < 300;
}

static long response_status(const gc_http_transfer *t)
{
    long status = 0;
    curl_easy_getinfo(t->e, CURLINFO_RESPONSE_CODE, &status);
    return status;
}

/* Keeps one "Name: value" line of the current response and hands it to on_header. */
static void take_header(gc_http_transfer *t, const char *line, size_t len)
{
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line)
        return;
    const char *value = colon + 1, *end = line + len;
    while (value < end && (*value == ' ' || *value == '\t'))
        value++;
    while (end > value && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    size_t name_at = t->headers.len;
    gc_buf_append(&t->headers, line, (size_t)(colon - line));
    gc_buf_putc(&t->headers, '\0');
    size_t value_at = t->headers.len;
    gc_buf_append(&t->headers, value, (size_t)(end - value));
    gc_buf_putc(&t->headers, '\0');
    if (t->req.on_header)
        t->req.on_header(t->headers.data + name_at, t->headers.data + value_at, t->req.ctx);
}

static size_t on_header(char *line, size_t size, size_t n, void *userdata)
{
    gc_http_transfer *t = userdata;
    size_t len = size * n;
    t->progress_ms = gc_clock_ms();
    if (len >= 5 && !strncmp(line, "HTTP/", 5))
        gc_buf_reset(&t->headers); /* a new response (after a 100 or a redirect) */
    else
        take_header(t, line, len);
    sys_http_trace_header(t, line, len);
    bool end_of_headers = len <= 2 && (line[0] == '\r' || line[0] == '\n');
    if (end_of_headers && t->req.streaming && !t->traced && response_status(t) >= 200) {
        t->status = response_status(t);
        t->elapsed_ms = gc_clock_ms() - t->started_ms;
        sys_http_trace_result(t, CURLE_OK);
    }
    return len;
}

/* Progress for the stall check is a byte that says something: blanks between JSON tokens are
 * legal in any number, so a server sending only them is treated as sending nothing. */
static bool has_content(const char *data, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (data[i] != ' ' && data[i] != '\t' && data[i] != '\r' && data[i] != '\n')
            return true;
    return false;
}

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
    gc_http_transfer *t = userdata;
    size_t len = size * n;
    if (has_content(data, len))
        t->progress_ms = gc_clock_ms();
    if (t->req.on_data && is_2xx(response_status(t))) {
        if (t->req.on_data(data, len, t->req.ctx))
            return len;
        t->stopped = true;
        return CURL_WRITEFUNC_ERROR;
    }
    size_t max = t->req.body_max ? t->req.body_max : DEFAULT_BODY_MAX;
    if (t->body.len + len > max) {
        /* What fits is kept: the start of an oversized error body still says what went wrong. */
        gc_buf_append(&t->body, data, max - t->body.len);
        t->too_large = true;
        return CURL_WRITEFUNC_ERROR;
    }
    gc_buf_append(&t->body, data, len);
    return len;
}

/* Called by libcurl each time it is about to send the request, on a new connection or a reused
 * one: more than once when it re-sent the request by itself (see gc_http_transfer.resent). */
static int on_send(void *userdata, char *remote_ip, char *local_ip, int remote_port, int local_port)
{
    (void)remote_ip, (void)local_ip, (void)remote_port, (void)local_port;
    gc_http_transfer *t = userdata;
    t->sends++;
    return CURL_PREREQFUNC_OK;
}

static size_t on_read(char *buffer, size_t size, size_t nitems, void *userdata)
{
    gc_http_transfer *t = userdata;
    const gc_http_body *body = t->req.body;
    long long left = body->size - t->body_offset;
    size_t room = size * nitems;
    size_t want = left < (long long)room ? (size_t)left : room;
    size_t got = want ? body->read(buffer, want, body->read_ctx) : 0;
    if (got == GC_HTTP_READ_ABORT || got > want)
        return CURL_READFUNC_ABORT;
    t->body_offset += (long long)got;
    return got;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    gc_http_transfer *t = userdata;
    long long now = gc_clock_ms();
    if (t->req.deadline_ms && now >= t->req.deadline_ms) {
        t->past_deadline = true;
        return 1;
    }
    if (t->req.stall_seconds > 0 && now - t->progress_ms >= t->req.stall_seconds * 1000LL) {
        t->stalled = true;
        return 1;
    }
    return 0;
}

/* --- setting up a transfer --------------------------------------------------------------- */

static bool method_is(const gc_http_transfer *t, const char *method)
{
    return !strcmp(t->req.method, method);
}

static void set_method(gc_http_transfer *t)
{
    CURL *e = t->e;
    const gc_http_body *body = t->req.body;
    if (method_is(t, "GET")) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (method_is(t, "HEAD")) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (body && body->read) {
        if (method_is(t, "POST")) {
            curl_easy_setopt(e, CURLOPT_POST, 1L);
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->size);
        } else {
            curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)body->size);
            if (!method_is(t, "PUT"))
                curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, t->req.method);
        }
        curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(e, CURLOPT_READDATA, t);
    } else {
        if (method_is(t, "POST"))
            curl_easy_setopt(e, CURLOPT_POST, 1L);
        else
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, t->req.method);
        if (body || method_is(t, "POST") || method_is(t, "PUT")) {
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body->len : 0));
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, body && body->data ? body->data : "");
        }
    }
}

static bool sends_body(const gc_http_transfer *t)
{
    return t->req.body || method_is(t, "POST") || method_is(t, "PUT");
}

static void set_headers(gc_http_transfer *t)
{
    /* No "Expect: 100-continue" round trip before a body: servers here answer at once. */
    t->header_list = curl_slist_append(NULL, "Expect:");
    for (const char *const *h = t->req.headers; h && *h; h++)
        t->header_list = curl_slist_append(t->header_list, *h);
    const char *type = t->req.body ? t->req.body->content_type : NULL;
    if (type) {
        char *line = gc_xasprintf("Content-Type: %s", type);
        t->header_list = curl_slist_append(t->header_list, line);
        free(line);
    } else if (sends_body(t)) {
        /* Not libcurl's default application/x-www-form-urlencoded: the body is not a form. */
        t->header_list = curl_slist_append(t->header_list, "Content-Type:");
    }
    curl_easy_setopt(t->e, CURLOPT_HTTPHEADER, t->header_list);
}

void gc_http_start(gc_http_transfer *t, CURL *e, const gc_http_request *req)
{
    gc_buf_reset(&t->body);
    gc_buf_reset(&t->headers);
    free(t->shown_url);
    t->req = *req;
    t->e = e;
    t->status = 0;
    t->result = CURLE_OK;
    t->error[0] = '\0';
    t->stopped = t->too_large = t->past_deadline = t->stalled = t->sent = t->resent = t->traced =
        false;
    t->sends = 0;
    t->body_offset = 0;
    t->elapsed_ms = 0;
    t->started_ms = t->progress_ms = gc_clock_ms();
    t->shown_url = gc_http_redact_url(req->trace_url ? req->trace_url : req->url);

    curl_easy_reset(e);
    const char *protocols = req->protocols ? req->protocols : "https";
    curl_easy_setopt(e, CURLOPT_URL, req->url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, protocols);
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
    if (req->follow_redirects) {
        curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(e, CURLOPT_MAXREDIRS, MAX_REDIRECTS);
    }
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "gcluster/" GCLUSTER_VERSION);
    if (req->connect_timeout_ms > 0)
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, req->connect_timeout_ms);
    if (req->timeout_ms > 0)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, req->timeout_ms);
    if (req->stall_seconds > 0) {
        long rate = req->stall_bytes_per_second > 0 ? req->stall_bytes_per_second : 1;
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, rate);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, req->stall_seconds);
    }
    if (req->deadline_ms || req->stall_seconds > 0) {
        curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(e, CURLOPT_XFERINFODATA, t);
    }
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->error);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_send);
    curl_easy_setopt(e, CURLOPT_PREREQDATA, t);
    set_method(t);
    set_headers(t);
    sys_http_trace_request(t);
    /* Copied by now (libcurl keeps its own URL, the header list is ours): the caller's strings
     * need not outlive this call. */
    t->req.url = t->req.trace_url = NULL;
    t->req.headers = NULL;
}

/* Failures that happen before a request is handed to a connection: it was never seen. */
static bool connect_phase_failure(CURLcode rc)
{
    switch (rc) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_FAILED_INIT:
        return true;
    default:
        return false;
    }
}

void gc_http_finish(gc_http_transfer *t, CURLcode result)
{
    t->result = result == CURLE_WRITE_ERROR && t->stopped ? CURLE_OK : result;
    if (result == CURLE_ABORTED_BY_CALLBACK && t->stalled) {
        /* A stall by blanks is a stall: the same outcome as libcurl's own low-speed limit. */
        t->result = CURLE_OPERATION_TIMEDOUT;
        snprintf(t->error, sizeof(t->error), "nothing but blanks for %ld s", t->req.stall_seconds);
    }
    t->status = response_status(t);
    curl_off_t pretransfer = 0;
    curl_easy_getinfo(t->e, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
    t->sent = result == CURLE_OK || (!connect_phase_failure(result) && pretransfer > 0);
    t->resent = t->sends > 1;
    t->elapsed_ms = gc_clock_ms() - t->started_ms;
    if (!t->traced)
        sys_http_trace_result(t, t->result);
    sys_http_trace_response_body(t);
    for (struct curl_slist *h = t->header_list; h; h = h->next)
        explicit_bzero(h->data, strlen(h->data));
    curl_slist_free_all(t->header_list);
    t->header_list = NULL;
    curl_easy_setopt(t->e, CURLOPT_HTTPHEADER, NULL);
}

void gc_http_perform(gc_http_transfer *t, CURL *e, const gc_http_request *req)
{
    gc_http_start(t, e, req);
    gc_http_finish(t, curl_easy_perform(e));
}
