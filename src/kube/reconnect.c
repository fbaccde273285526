/*
 * How long-lived streams (watches, followed logs) ride out broken connections: which failures
 * are the network's or a restarting API server's, worth connecting again after, and which are
 * answers to report; how long to wait between attempts; and the words notices use for them.
 */
#include "kube/internal.h"

#include <stdio.h>

#define RECONNECT_FIRST_MS 500
#define RECONNECT_MAX_MS   8000
#define RETRY_AFTER_MAX_MS 30000

bool kube_reconnectable(const kube_exchange *x)
{
    const gc_http_transfer *h = &x->http;
    if (h->past_deadline || h->stopped || h->too_large)
        return false;
    if (h->result == CURLE_OK)
        return h->status == 429 || h->status == 500 || h->status == 502 || h->status == 503 ||
               h->status == 504;
    switch (h->result) {
    case CURLE_COULDNT_RESOLVE_HOST: /* GKE's DNS endpoint can fail to resolve for a moment */
    case CURLE_COULDNT_CONNECT:      /* an API server restarting, or a control plane upgrade */
    case CURLE_OPERATION_TIMEDOUT:   /* no connection in time, or a stream that stalled */
    case CURLE_SSL_CONNECT_ERROR:    /* a reset during the TLS handshake */
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE: /* a chunked answer cut before its end */
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
        return true;
    default: /* certificates, a malformed URL, memory: connecting again cannot help */
        return false;
    }
}

long kube_reconnect_delay(gc_kube *k, const kube_exchange *x, int attempt)
{
    if (x && x->retry_after_ms >= 0)
        return (x->retry_after_ms > RETRY_AFTER_MAX_MS ? RETRY_AFTER_MAX_MS : x->retry_after_ms) +
               (long)kube_random(k, 100);
    long delay = RECONNECT_FIRST_MS;
    for (int i = 1; i < attempt && delay < RECONNECT_MAX_MS; i++)
        delay *= 2;
    if (delay > RECONNECT_MAX_MS)
        delay = RECONNECT_MAX_MS;
    /* Half fixed, half random: clients cut off together do not all come back at once. */
    return delay / 2 + (long)kube_random(k, (unsigned)(delay / 2 + 1));
}

void kube_failure_words(const kube_exchange *x, char *out, size_t size)
{
    const gc_http_transfer *h = &x->http;
    if (h->result == CURLE_OK)
        snprintf(out, size, "HTTP %ld %s", h->status, gc_http_reason_phrase(h->status));
    else if (h->result == CURLE_OPERATION_TIMEDOUT && x->stall_seconds > 0 && h->sent)
        snprintf(out, size, "no data for %ld s", x->stall_seconds);
    else
        snprintf(out, size, "%s", h->error[0] ? h->error : curl_easy_strerror(h->result));
}
