/*
 * One HTTP request to the API server, on sys/'s request layer.
 *
 * Every sequential request goes through the client's one easy handle, so its connection (and
 * TLS session) is reused, over HTTP/2 when the server offers it. Independent requests can go
 * out together (kube_request_run_all), each on a connection of its own (multi.c says why not
 * as streams of one): one round trip instead of one each. Idempotent requests are retried a bounded
 * number of times with exponential backoff and jitter on 429, 5xx and connection resets, honouring
 * Retry-After; a POST is only re-sent when the server certainly did not act on it (429, or it never
 * reached the server). A 401 refreshes the credential (exec plugin, token file) once. Below all
 * this, libcurl itself re-sends a request when a reused connection turns out to be dead before any
 * byte of the answer (the usual keep-alive race); the layer notices (gc_http_transfer.resent), and
 * the verbs that are not idempotent treat the answer as ambiguous (api.c). A request that failed on
 * the wire takes its pooled connections with it, so its retry starts on a fresh one.
 */
#include "kube/internal.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#define BACKOFF_BASE_MS    250
#define BACKOFF_MAX_MS     8000
#define RETRY_AFTER_MAX_MS 30000
#define ERROR_BODY_MAX     (1 << 20)
#define CONNECT_TIMEOUT_MS 15000L
#define KEEPALIVE_IDLE_S   15L
#define KEEPALIVE_INTVL_S  5L
#define USER_TIMEOUT_MS    30000u

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

/* A dead peer (a dropped NAT entry, a vanished node, a server that lost power) never answers
 * TCP keepalive probes or acknowledges data: the kernel gives up on the connection after this
 * long, and the request fails (and is retried, or the stream resumed) instead of waiting on it. */
static int set_user_timeout(void *ctx, curl_socket_t fd, curlsocktype purpose)
{
    (void)ctx;
#ifdef TCP_USER_TIMEOUT
    unsigned timeout = USER_TIMEOUT_MS;
    if (purpose == CURLSOCKTYPE_IPCXN)
        setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof(timeout));
#else
    (void)fd, (void)purpose;
#endif
    return CURL_SOCKOPT_OK;
}

/* Every connection probes its peer when idle, so a pooled connection that died is found before
 * a request waits on it. */
void kube_set_connection(gc_kube *k, CURL *e)
{
    const kube_cluster *c = k->sel.cluster;
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE, KEEPALIVE_IDLE_S);
    curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL, KEEPALIVE_INTVL_S);
    curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, set_user_timeout);
    if (!c->disable_compression)
        curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_NOPROXY, k->noproxy);
    if (c->proxy_url)
        curl_easy_setopt(e, CURLOPT_PROXY, c->proxy_url);
    if (k->connect_to)
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, k->connect_to);
    set_tls(k, e);
    kube_auth_apply_certificate(k, e);
}

static long parse_retry_after(const gc_kube *k, const char *v)
{
    char *end;
    long seconds = strtol(v, &end, 10);
    if (end != v && !*end && seconds >= 0)
        return seconds * 1000;
    time_t when = curl_getdate(v, NULL);
    if (when < 0)
        return -1;
    long diff = (long)(when - k->wall_clock());
    return diff > 0 ? diff * 1000 : 0;
}

/* Warning headers are shown as they arrive: a watch may run for a long time after them. */
static void on_header(const char *name, const char *value, void *ctx)
{
    kube_exchange *x = ctx;
    if (!strcasecmp(name, "Warning"))
        kube_notice_warning(x->k, value);
}

static bool on_data(const char *data, size_t len, void *ctx)
{
    kube_exchange *x = ctx;
    return x->on_data(data, len, x->ctx);
}

void kube_exchange_init(kube_exchange *x, const kube_request *req)
{
    memset(x, 0, sizeof(*x));
    x->req = req;
    x->retry_after_ms = -1;
    gc_http_transfer_init(&x->http);
}

void kube_exchange_free(kube_exchange *x)
{
    gc_http_transfer_free(&x->http);
}

void kube_exchange_start(gc_kube *k, kube_exchange *x, CURL *e)
{
    const kube_request *req = x->req;
    x->k = k;
    x->retry_after_ms = -1;
    if (x->on_restart)
        x->on_restart(x->ctx);
    const char *accept = req->accept                                   ? req->accept
                         : req->streaming && strstr(req->path, "/log") ? "*/*"
                                                                       : "application/json";
    char *accept_line = gc_xasprintf("Accept: %s", accept);
    char *auth_line = kube_auth_header(k);
    const char *headers[] = {accept_line, auth_line, NULL};
    char *url = kube_url(k, req);
    char *trace_url = kube_trace_url(k, req);
    x->body =
        (gc_http_body){.data = req->body, .len = req->body_len, .content_type = req->content_type};
    /* A list read as it arrives may take longer than one request should (a million items) while
     * it keeps arriving: a stall bounds it instead of a total time. */
    bool paced = x->on_data && !req->streaming;
    long stall_seconds = x->stall_seconds;
    if (paced && !stall_seconds)
        stall_seconds = k->request_timeout_ms / 1000;
    /* ... and a deadline of its own, so a server that keeps sending (blanks, or items without
     * end) cannot hold it forever either. */
    long long deadline = x->deadline_ms;
    x->list_deadline = false;
    if (paced) {
        long long limit = gc_clock_ms() + k->list_timeout_ms;
        x->list_deadline = !deadline || limit < deadline;
        if (x->list_deadline)
            deadline = limit;
    }
    gc_http_request hr = {
        .method = req->method,
        .url = url,
        .trace_url = trace_url,
        .headers = headers,
        .body = req->body ? &x->body : NULL,
        .protocols = "https,http",
        .streaming = req->streaming,
        .timeout_ms = req->streaming || paced ? 0 : k->request_timeout_ms,
        .connect_timeout_ms = CONNECT_TIMEOUT_MS,
        .stall_seconds = stall_seconds,
        .deadline_ms = deadline,
        .on_data = x->on_data ? on_data : NULL,
        .on_header = on_header,
        .ctx = x,
        .body_max = x->on_data ? ERROR_BODY_MAX : (size_t)KUBE_MAX_BODY,
        .trace = &k->trace,
    };
    gc_http_start(&x->http, e, &hr);
    kube_set_connection(k, e);
    x->credential = k->credential_generation;
    k->request_count++;
    /* One sent alongside requests still in flight shares their round trip; one sent from a
     * callback waits while the others stand still, so it costs its own. */
    if (!k->in_flight || k->depth > 0)
        k->round_trips++;
    k->in_flight++;
    free(url);
    free(trace_url);
    free(accept_line);
    if (auth_line) {
        explicit_bzero(auth_line, strlen(auth_line));
        free(auth_line);
    }
}

void kube_exchange_end(gc_kube *k, kube_exchange *x, CURLcode result)
{
    gc_http_finish(&x->http, result);
    k->in_flight--;
    const char *retry_after = gc_http_header(&x->http, "Retry-After");
    x->retry_after_ms = retry_after ? parse_retry_after(k, retry_after) : -1;
    if (x->http.resent)
        kube_trace(k,
                   "%s %s went out more than once: its reused connection died and libcurl "
                   "sent it again on a fresh one",
                   x->req->method, x->req->path);
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

/* Closes the pooled connections a failed request may have used: libcurl keeps an HTTP/2
 * connection after one of its streams failed, and one that went silent still looks open, so the
 * retry would wait on it again. Level 0's pool is the share's (given up only when no batch
 * handle holds it); a nesting level's is its handle's own. */
static void drop_connections(gc_kube *k, int level)
{
    if (level == 0 && k->share) {
        if (k->easy[0])
            curl_easy_setopt(k->easy[0], CURLOPT_SHARE, NULL);
        if (curl_share_cleanup(k->share) == CURLSHE_OK)
            k->share = NULL;
    }
    if (k->easy[level]) {
        curl_easy_cleanup(k->easy[level]);
        k->easy[level] = NULL;
    }
    kube_trace(k, "the connection of the failed request is closed; the next one opens a new one");
}

/* Whether a transfer's failure says nothing about its connection (the caller ended it). */
static bool failed_on_the_wire(const kube_exchange *x)
{
    return x->http.result != CURLE_OK && !x->http.stopped;
}

int kube_exchange_run(gc_kube *k, kube_exchange *x, gc_error *err)
{
    int rc = kube_auth_ensure(k, err);
    if (rc)
        return rc;
    CURL *e = nesting_handle(k, err);
    if (!e)
        return err->code;
    kube_exchange_start(k, x, e);
    if (k->depth == 0)
        curl_easy_setopt(e, CURLOPT_SHARE, shared_connections(k));
    k->depth++;
    CURLcode result = curl_easy_perform(e);
    k->depth--;
    kube_exchange_end(k, x, result);
    if (failed_on_the_wire(x))
        drop_connections(k, k->depth);
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
    const gc_http_transfer *h = &x->http;
    if (attempt >= KUBE_MAX_ATTEMPTS || h->stopped || h->past_deadline || x->acted_on)
        return -1;
    const kube_request *req = x->req;
    if (h->result != CURLE_OK) {
        bool resend_ok = req->idempotent || !h->sent;
        return resend_ok && transient_transport_failure(h->result) ? backoff(k, attempt) : -1;
    }
    /* 429 means the request was turned away before anything was done: safe for any verb. */
    bool retryable =
        h->status == 429 || (req->idempotent && (h->status == 500 || h->status == 502 ||
                                                 h->status == 503 || h->status == 504));
    if (!retryable)
        return -1;
    if (x->retry_after_ms >= 0)
        return (x->retry_after_ms > RETRY_AFTER_MAX_MS ? RETRY_AFTER_MAX_MS : x->retry_after_ms) +
               (long)kube_random(k, 100);
    return backoff(k, attempt);
}

/* Where an HTTP error status becomes a message: beside the transport's errors, so the request
 * runner that retries both never calls back into the verbs. */
int kube_http_error(const gc_kube *k, const kube_exchange *x, gc_error *err)
{
    int rc = kube_status_error(k, x->req, x->http.status, &x->http.body, err);
    if (x->http.status == 401) {
        const kube_user *u = k->sel.user;
        size_t len = strlen(err->message);
        snprintf(err->message + len, sizeof(err->message) - len,
                 "; the API server rejected the credentials of %s%s%s%s; %s", u ? "user \"" : "",
                 u ? u->id.name : "anonymous requests", u ? "\" from " : "", u ? u->id.where : "",
                 u && u->exec ? "for GKE, run `gcloud auth login` and `gcloud container clusters "
                                "get-credentials` again"
                              : "refresh the credentials in the kubeconfig");
    }
    return rc;
}

int kube_transport_error(const gc_kube *k, const kube_exchange *x, gc_error *err)
{
    const kube_cluster *c = k->sel.cluster;
    const gc_http_transfer *h = &x->http;
    const char *detail = h->error[0] ? h->error : curl_easy_strerror(h->result);
    /* URLs as traces show them: a password in the server or proxy URL stays out of messages. */
    char *server = gc_http_redact_url(c->server);
    char *proxy = c->proxy_url ? gc_http_redact_url(c->proxy_url) : NULL;
    char where[768];
    snprintf(where, sizeof(where), "the API server %s (cluster \"%s\" of context \"%s\"%s%s)",
             server, c->id.name, k->sel.context->id.name, proxy ? ", through proxy " : "",
             proxy ? proxy : "");
    free(server);
    free(proxy);
    switch (h->result) {
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
    if (h->past_deadline && x->list_deadline)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "%s %s: the answer of %s did not end within %ld s; give it longer with "
                       "--request-timeout if the list is that large",
                       x->req->method, x->req->path, where, k->list_timeout_ms / 1000);
    if (h->past_deadline)
        return gc_fail(err, GC_EXIT_RUNTIME, "%s %s: gave up waiting for %s", x->req->method,
                       x->req->path, where);
    if (h->too_large && h->status >= 300) {
        /* An error answer is kept up to ERROR_BODY_MAX bytes: what it says is in its start. */
        kube_http_error(k, x, err);
        size_t len = strlen(err->message);
        snprintf(err->message + len, sizeof(err->message) - len,
                 " (the server's error answer was larger than %d KiB and was cut)",
                 ERROR_BODY_MAX >> 10);
        return err->code;
    }
    if (h->too_large)
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
        const gc_http_transfer *h = &x->http;
        if (h->result == CURLE_OK && h->status == 401 && !refreshed && kube_auth_refreshable(k)) {
            refreshed = true;
            kube_auth_rejected(k, x->credential);
            kube_trace(k, "401 Unauthorized: getting a fresh credential and retrying");
            continue;
        }
        long delay = kube_retry_delay(k, x, attempt);
        if (delay < 0)
            break;
        kube_trace(k, "retrying in %ld ms (attempt %d of %d)", delay, attempt + 1,
                   KUBE_MAX_ATTEMPTS);
        gc_clock_sleep_ms(delay);
        x->retried_after_send = x->retried_after_send || (h->sent && h->result != CURLE_OK) ||
                                h->status >= 500 || h->resent;
    }
    x->retried_after_send = x->retried_after_send || x->http.resent;
    return x->http.result == CURLE_OK ? 0 : kube_transport_error(k, x, err);
}

int kube_request_run(gc_kube *k, kube_exchange *x, gc_error *err)
{
    x->retried_after_send = false;
    return run_with_retries(k, x, false, err);
}

/* First attempts of a batch, all at once on one multi handle (kube_multi_new: a connection
 * each, idle ones from earlier requests reused). */
static void run_first_attempts(gc_kube *k, kube_batch_entry *batch, size_t n)
{
    CURLM *multi = kube_multi_new();
    CURL **handles = gc_xcalloc(n, sizeof(*handles));
    bool *done = gc_xcalloc(n, sizeof(*done));
    for (size_t i = 0; i < n; i++) {
        kube_exchange *x = batch[i].x;
        x->retried_after_send = false;
        handles[i] = curl_easy_init();
        if (!handles[i]) {
            x->http.result = CURLE_OUT_OF_MEMORY; /* reported like any failed transfer */
            done[i] = true;
            continue;
        }
        kube_exchange_start(k, x, handles[i]);
        curl_easy_setopt(handles[i], CURLOPT_SHARE, shared_connections(k));
        curl_easy_setopt(handles[i], CURLOPT_PRIVATE, (void *)&batch[i]);
        curl_multi_add_handle(multi, handles[i]);
    }
    k->depth++; /* requests made from the batch's callbacks use the nesting handles */
    kube_multi_pace pace = {0};
    for (int running = 1; running;) {
        curl_multi_perform(multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left))) {
            kube_batch_entry *entry = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&entry);
            if (msg->msg == CURLMSG_DONE && entry) {
                kube_exchange_end(k, entry->x, msg->data.result);
                done[entry - batch] = true;
            }
        }
        if (running)
            kube_multi_wait(multi, &pace, 1000);
    }
    k->depth--;
    bool failed = false;
    for (size_t i = 0; i < n; i++) {
        if (!handles[i])
            continue;
        if (!done[i]) /* never reported done: cannot happen unless libcurl fails */
            kube_exchange_end(k, batch[i].x, CURLE_RECV_ERROR);
        failed = failed || failed_on_the_wire(batch[i].x);
        curl_multi_remove_handle(multi, handles[i]);
        curl_easy_cleanup(handles[i]);
    }
    free(done);
    free(handles);
    curl_multi_cleanup(multi);
    if (failed)
        drop_connections(k, 0);
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
