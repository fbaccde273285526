/*
 * One HTTP request to the API server, on libcurl.
 *
 * Every sequential request goes through the client's one easy handle, so its connection (and
 * TLS session) is reused, over HTTP/2 when the server offers it. Independent requests can go
 * out together (kube_request_run_all) as streams on that same connection: one round trip
 * instead of one each. Idempotent requests are
 * retried a bounded number of times with exponential backoff and jitter on 429, 5xx and
 * connection resets, honouring Retry-After; a POST is only re-sent when the server certainly
 * did not act on it (429, or it never reached the server). A 401 refreshes the credential
 * (exec plugin, token file) once. Below all this, libcurl itself re-sends a request once when
 * a reused keep-alive connection turns out to be closed before any byte of the answer (the
 * usual keep-alive race); that attempt is invisible here and not counted.
 */
#include "kube/internal.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define BACKOFF_BASE_MS    250
#define BACKOFF_MAX_MS     8000
#define RETRY_AFTER_MAX_MS 30000
#define ERROR_BODY_MAX     (1 << 20)

static void set_tls(gc_kube *k, CURL *e)
{
    if (k->sel.cluster->insecure_skip_tls_verify) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        return;
    }
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    if (k->ca.data) {
        /* Only the cluster's CA is trusted, as with kubectl; not the system roots as well. */
        struct curl_blob ca = {.data = k->ca.data, .len = k->ca.len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &ca);
        curl_easy_setopt(e, CURLOPT_CAINFO, NULL);
        curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
    }
}

static void set_method(CURL *e, const kube_request *req)
{
    bool get = !strcmp(req->method, "GET");
    if (get) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        return;
    }
    if (!strcmp(req->method, "POST"))
        curl_easy_setopt(e, CURLOPT_POST, 1L);
    else
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
    if (req->body || !strcmp(req->method, "POST")) {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, req->body ? req->body : "");
    }
}

void kube_curl_configure(gc_kube *k, CURL *e, const char *url, const kube_request *req,
                         struct curl_slist **headers)
{
    const kube_cluster *c = k->sel.cluster;
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "gcluster/" GCLUSTER_VERSION);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 15000L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, 15L);
    if (!c->disable_compression)
        curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_NOPROXY, k->noproxy);
    if (c->proxy_url)
        curl_easy_setopt(e, CURLOPT_PROXY, c->proxy_url);
    if (k->connect_to)
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, k->connect_to);
    set_tls(k, e);
    kube_auth_apply(k, e, headers);
    const char *accept = req->accept                                   ? req->accept
                         : req->streaming && strstr(req->path, "/log") ? "*/*"
                                                                       : "application/json";
    char *h = gc_xasprintf("Accept: %s", accept);
    *headers = curl_slist_append(*headers, h);
    free(h);
    if (req->content_type) {
        h = gc_xasprintf("Content-Type: %s", req->content_type);
        *headers = curl_slist_append(*headers, h);
        free(h);
    }
    *headers = curl_slist_append(*headers, "Expect:"); /* no 100-continue round trip */
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, *headers);
    set_method(e, req);
}

/* Header lists hold the Authorization value: wipe them before freeing. */
static void free_headers(struct curl_slist *headers)
{
    for (struct curl_slist *h = headers; h; h = h->next)
        explicit_bzero(h->data, strlen(h->data));
    curl_slist_free_all(headers);
}

/* State of one transfer, seen by the curl callbacks. */
typedef struct transfer {
    gc_kube *k;
    kube_exchange *x;
    CURL *e;
    char *url; /* for traces */
    struct curl_slist *headers;
    long long start;
    bool traced;
} transfer;

static bool header_is(const char *line, size_t len, const char *name, const char **value,
                      size_t *vlen)
{
    size_t n = strlen(name);
    if (len <= n || strncasecmp(line, name, n) || line[n] != ':')
        return false;
    const char *v = line + n + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    *value = v;
    *vlen = (size_t)(end - v);
    return true;
}

static long parse_retry_after(const char *v, size_t len)
{
    char text[64];
    snprintf(text, sizeof(text), "%.*s", (int)(len < 63 ? len : 63), v);
    char *end;
    long seconds = strtol(text, &end, 10);
    if (end != text && !*end && seconds >= 0)
        return seconds * 1000;
    time_t when = curl_getdate(text, NULL);
    if (when < 0)
        return -1;
    long diff = (long)(when - time(NULL));
    return diff > 0 ? diff * 1000 : 0;
}

static size_t on_header(char *line, size_t size, size_t n, void *userdata)
{
    transfer *t = userdata;
    kube_exchange *x = t->x;
    size_t len = size * n;
    const char *v;
    size_t vlen;
    if (len >= 5 && !strncmp(line, "HTTP/", 5)) {
        x->retry_after_ms = -1; /* a new response (after a 100 or a redirect) starts */
    } else if (header_is(line, len, "Retry-After", &v, &vlen)) {
        x->retry_after_ms = parse_retry_after(v, vlen);
    } else if (header_is(line, len, "Date", &v, &vlen)) {
        snprintf(x->date, sizeof(x->date), "%.*s", (int)vlen, v);
    } else if (header_is(line, len, "Warning", &v, &vlen)) {
        kube_notice_warning(t->k, v, vlen);
    }
    if (t->k->verbose >= 2)
        kube_trace_header(t->k, line, len);
    bool end_of_headers = len <= 2 && (line[0] == '\r' || line[0] == '\n');
    if (end_of_headers && x->req->streaming && !t->traced) {
        long status = 0;
        curl_easy_getinfo(t->e, CURLINFO_RESPONSE_CODE, &status);
        if (status >= 200) {
            t->traced = true;
            kube_trace_result(t->k, t->e, x->req, t->url, status, CURLE_OK,
                              kube_now_ms() - t->start);
        }
    }
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *userdata)
{
    transfer *t = userdata;
    kube_exchange *x = t->x;
    size_t len = size * n;
    long status = 0;
    curl_easy_getinfo(t->e, CURLINFO_RESPONSE_CODE, &status);
    if (x->on_data && status >= 200 && status < 300) {
        if (x->on_data(data, len, x->ctx))
            return len;
        x->stopped = true;
        return CURL_WRITEFUNC_ERROR;
    }
    size_t max = x->on_data ? ERROR_BODY_MAX : (size_t)KUBE_MAX_BODY;
    if (x->body.len + len > max) {
        x->too_large = true;
        return CURL_WRITEFUNC_ERROR;
    }
    gc_buf_append(&x->body, data, len);
    return len;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    transfer *t = userdata;
    if (t->x->deadline_ms && kube_now_ms() >= t->x->deadline_ms) {
        t->x->past_deadline = true;
        return 1;
    }
    return 0;
}

void kube_exchange_init(kube_exchange *x, const kube_request *req)
{
    memset(x, 0, sizeof(*x));
    x->req = req;
    x->retry_after_ms = -1;
    gc_buf_init(&x->body);
}

void kube_exchange_free(kube_exchange *x)
{
    gc_buf_free(&x->body);
}

static void reset_outcome(kube_exchange *x)
{
    gc_buf_reset(&x->body);
    x->status = 0;
    x->result = CURLE_OK;
    x->curl_error[0] = '\0';
    x->stopped = x->past_deadline = x->too_large = x->sent = false;
    x->retry_after_ms = -1;
    x->date[0] = '\0';
    if (x->on_restart)
        x->on_restart(x->ctx);
}

/* Learns the server's clock from its Date header (create checks compare server times). */
static void note_server_clock(gc_kube *k, const kube_exchange *x)
{
    time_t server = x->date[0] ? curl_getdate(x->date, NULL) : -1;
    if (server > 0) {
        k->clock_offset_s = (long long)(server - time(NULL));
        k->clock_known = true;
    }
}

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
        return true;
    default:
        return false;
    }
}

static void finish_exchange(transfer *t, CURLcode rc)
{
    kube_exchange *x = t->x;
    x->result = rc;
    curl_easy_getinfo(t->e, CURLINFO_RESPONSE_CODE, &x->status);
    curl_off_t pretransfer = 0;
    curl_easy_getinfo(t->e, CURLINFO_PRETRANSFER_TIME_T, &pretransfer);
    /* A request that failed before it was handed to the connection was never seen. */
    x->sent = rc == CURLE_OK || (!connect_phase_failure(rc) && pretransfer > 0);
    if (rc == CURLE_WRITE_ERROR && x->stopped)
        x->result = CURLE_OK; /* the consumer had enough */
}

/* The easy handle for a request at the current nesting depth (see gc_kube.easy). */
static CURL *nesting_handle(gc_kube *k, gc_error *err)
{
    if (k->depth >= KUBE_MAX_NESTING) {
        gc_fail(err, GC_EXIT_RUNTIME, "API requests nested %d deep from callbacks", k->depth);
        return NULL;
    }
    if (!k->easy[k->depth])
        k->easy[k->depth] = curl_easy_init();
    if (!k->easy[k->depth])
        gc_fail(err, GC_EXIT_RUNTIME, "cannot create a libcurl handle");
    return k->easy[k->depth];
}

/* The connection cache shared by the level-0 handle and concurrent batches, so a batch's
 * connection serves the requests after it (and the other way round). Nested handles and log
 * streams stay out of it: they run while a level-0 transfer may be using that connection, and
 * one connection must never be driven from two transfers' loops at once. */
static CURLSH *shared_connections(gc_kube *k)
{
    if (!k->share) {
        k->share = curl_share_init();
        if (k->share)
            curl_share_setopt(k->share, CURLSHOPT_SHARE, (long)CURL_LOCK_DATA_CONNECT);
    }
    return k->share;
}

/* Sets up one attempt on `e`; the transfer owns what end_transfer releases. */
static void begin_transfer(gc_kube *k, kube_exchange *x, CURL *e, transfer *t)
{
    const kube_request *req = x->req;
    char *url = kube_url(k, req);
    *t = (transfer){.k = k, .x = x, .e = e, .url = kube_trace_url(k, req), .start = kube_now_ms()};
    curl_easy_reset(e);
    kube_curl_configure(k, e, url, req, &t->headers);
    x->credential = k->credential_generation;
    free(url);
    if (k->depth == 0)
        curl_easy_setopt(e, CURLOPT_SHARE, shared_connections(k));
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->curl_error);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(e, CURLOPT_XFERINFODATA, t);
    if (!req->streaming)
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, k->request_timeout_ms);
    if (x->stall_seconds > 0) {
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, x->stall_seconds);
    }
    if (k->verbose >= 2)
        kube_trace_request(k, req, t->url, t->headers);
    k->request_count++;
}

static void end_transfer(transfer *t, CURLcode result)
{
    gc_kube *k = t->k;
    kube_exchange *x = t->x;
    finish_exchange(t, result);
    note_server_clock(k, x);
    if (!t->traced)
        kube_trace_result(k, t->e, x->req, t->url, x->status, x->result, kube_now_ms() - t->start);
    if (k->verbose >= 2)
        kube_trace_response_body(k, x->body.data, x->body.len);
    free_headers(t->headers);
    curl_easy_setopt(t->e, CURLOPT_HTTPHEADER, NULL);
    free(t->url);
    t->headers = NULL;
    t->url = NULL;
}

int kube_exchange_run(gc_kube *k, kube_exchange *x, gc_error *err)
{
    reset_outcome(x);
    int rc = kube_auth_ensure(k, err);
    if (rc)
        return rc;
    CURL *e = nesting_handle(k, err);
    if (!e)
        return err->code;
    transfer t;
    begin_transfer(k, x, e, &t);
    k->depth++;
    CURLcode result = curl_easy_perform(e);
    k->depth--;
    end_transfer(&t, result);
    return 0;
}

static bool transient_transport_failure(CURLcode rc)
{
    switch (rc) {
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR: /* a reset during the handshake, e.g. a restarting server */
        return true;
    default:
        return false;
    }
}

static long backoff(gc_kube *k, int attempt)
{
    long delay = BACKOFF_BASE_MS;
    for (int i = 1; i < attempt && delay < BACKOFF_MAX_MS; i++)
        delay *= 2;
    if (delay > BACKOFF_MAX_MS)
        delay = BACKOFF_MAX_MS;
    /* "Equal jitter": half fixed, half random, so clients that failed together spread out. */
    return delay / 2 + (long)kube_random(k, (unsigned)(delay / 2 + 1));
}

long kube_retry_delay(gc_kube *k, const kube_exchange *x, int attempt)
{
    if (attempt >= KUBE_MAX_ATTEMPTS || x->stopped || x->past_deadline || x->acted_on)
        return -1;
    const kube_request *req = x->req;
    if (x->result != CURLE_OK) {
        bool resend_ok = req->idempotent || !x->sent;
        return resend_ok && transient_transport_failure(x->result) ? backoff(k, attempt) : -1;
    }
    /* 429 means the request was turned away before anything was done: safe for any verb. */
    bool retryable =
        x->status == 429 || (req->idempotent && (x->status == 500 || x->status == 502 ||
                                                 x->status == 503 || x->status == 504));
    if (!retryable)
        return -1;
    if (x->retry_after_ms >= 0)
        return (x->retry_after_ms > RETRY_AFTER_MAX_MS ? RETRY_AFTER_MAX_MS : x->retry_after_ms) +
               (long)kube_random(k, 100);
    return backoff(k, attempt);
}

int kube_transport_error(const gc_kube *k, const kube_exchange *x, gc_error *err)
{
    const kube_cluster *c = k->sel.cluster;
    const char *detail = x->curl_error[0] ? x->curl_error : curl_easy_strerror(x->result);
    char where[768];
    snprintf(where, sizeof(where), "the API server %s (cluster \"%s\" of context \"%s\"%s%s)",
             c->server, c->id.name, k->sel.context->id.name, c->proxy_url ? ", through proxy " : "",
             c->proxy_url ? c->proxy_url : "");
    switch (x->result) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "cannot reach %s: %s; check that the cluster is "
                       "running and reachable from here, or choose another with --context or "
                       "--cluster/--location",
                       where, detail);
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
        return gc_fail(
            err, GC_EXIT_RUNTIME,
            "cannot verify the TLS certificate of %s against %s "
            "(%s): %s; fix certificate-authority or certificate-authority-data of the "
            "cluster (for GKE, run `gcloud container clusters get-credentials` again)",
            where, k->ca.data ? "the cluster's certificate-authority" : "the system's trusted CAs",
            c->id.where, detail);
    case CURLE_SSL_CERTPROBLEM:
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "the client certificate or key of user \"%s\" "
                       "cannot be used: %s",
                       k->sel.user ? k->sel.user->id.name : "", detail);
    case CURLE_OPERATION_TIMEDOUT:
        return gc_fail(err, GC_EXIT_RUNTIME, "no answer from %s in time: %s", where, detail);
    default:
        break;
    }
    if (x->past_deadline)
        return gc_fail(err, GC_EXIT_RUNTIME, "%s %s: gave up waiting for %s", x->req->method,
                       x->req->path, where);
    if (x->too_large)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "%s %s: the answer of %s is larger than %ld MiB; "
                       "list it in pages",
                       x->req->method, x->req->path, where, KUBE_MAX_BODY >> 20);
    return gc_fail(err, GC_EXIT_RUNTIME, "%s %s to %s failed: %s", x->req->method, x->req->path,
                   where, detail);
}

/* The retry loop of kube_request_run; `attempted`: the first attempt has already run (in a
 * batch) and only its outcome is to be judged. */
static int run_with_retries(gc_kube *k, kube_exchange *x, bool attempted, gc_error *err)
{
    bool refreshed = false;
    for (int attempt = 1;; attempt++) {
        if (!attempted) {
            int rc = kube_exchange_run(k, x, err);
            if (rc)
                return rc;
        }
        attempted = false;
        if (x->result == CURLE_OK && x->status == 401 && !refreshed && kube_auth_refreshable(k)) {
            refreshed = true;
            kube_auth_rejected(k, x->credential);
            if (k->verbose)
                kube_trace(k, "401 Unauthorized: getting a fresh credential and retrying");
            continue;
        }
        long delay = kube_retry_delay(k, x, attempt);
        if (delay < 0)
            break;
        if (k->verbose)
            kube_trace(k, "retrying in %ld ms (attempt %d of %d)", delay, attempt + 1,
                       KUBE_MAX_ATTEMPTS);
        kube_sleep_ms(delay);
        x->retried_after_send =
            x->retried_after_send || (x->sent && x->result != CURLE_OK) || x->status >= 500;
    }
    return x->result == CURLE_OK ? 0 : kube_transport_error(k, x, err);
}

int kube_request_run(gc_kube *k, kube_exchange *x, gc_error *err)
{
    x->retried_after_send = false;
    return run_with_retries(k, x, false, err);
}

/* First attempts of a batch, all at once on one multi handle. PIPEWAIT makes the later ones wait
 * for the first connection and share it as HTTP/2 streams instead of opening their own. */
static void run_first_attempts(gc_kube *k, kube_batch_entry *batch, size_t n)
{
    CURLM *multi = curl_multi_init();
    curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    transfer *transfers = gc_xcalloc(n, sizeof(*transfers));
    for (size_t i = 0; i < n; i++) {
        kube_exchange *x = batch[i].x;
        x->retried_after_send = false;
        reset_outcome(x);
        CURL *e = curl_easy_init();
        if (!e) {
            x->result = CURLE_OUT_OF_MEMORY; /* reported like any failed transfer */
            continue;
        }
        begin_transfer(k, x, e, &transfers[i]);
        curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
        curl_easy_setopt(e, CURLOPT_PRIVATE, &transfers[i]);
        curl_multi_add_handle(multi, e);
    }
    k->depth++; /* requests made from the batch's callbacks use the nesting handles */
    for (int running = 1; running;) {
        curl_multi_perform(multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left))) {
            transfer *t = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
            if (msg->msg == CURLMSG_DONE && t)
                end_transfer(t, msg->data.result);
        }
        if (running)
            curl_multi_poll(multi, NULL, 0, 1000, NULL);
    }
    k->depth--;
    for (size_t i = 0; i < n; i++) {
        if (!transfers[i].e)
            continue;
        if (transfers[i].url) /* never reported done: cannot happen unless libcurl fails */
            end_transfer(&transfers[i], CURLE_RECV_ERROR);
        curl_multi_remove_handle(multi, transfers[i].e);
        curl_easy_cleanup(transfers[i].e);
    }
    free(transfers);
    curl_multi_cleanup(multi);
}

void kube_request_run_all(gc_kube *k, kube_batch_entry *batch, size_t n)
{
    if (n < 2 || k->depth > 0) { /* nothing to overlap, or called from a callback */
        for (size_t i = 0; i < n; i++)
            batch[i].rc = kube_request_run(k, batch[i].x, batch[i].err);
        return;
    }
    int rc = kube_auth_ensure(k, batch[0].err);
    for (size_t i = 1; i < n && rc; i++)
        *batch[i].err = *batch[0].err;
    if (rc) {
        for (size_t i = 0; i < n; i++)
            batch[i].rc = rc;
        return;
    }
    run_first_attempts(k, batch, n);
    /* Retries (rare) go one at a time, like any single request. */
    for (size_t i = 0; i < n; i++)
        batch[i].rc = run_with_retries(k, batch[i].x, true, batch[i].err);
}
