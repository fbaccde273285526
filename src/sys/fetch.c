/*
 * One file from an HTTPS URL into memory, for release artefacts fetched at run time.
 *
 * The certificate store is the system's, or the file SSL_CERT_FILE names when that is set (as
 * OpenSSL's own tools and curl read it): a site with its own mirror and its own CA sets it.
 */
#include "gcluster/http.h"

#include <stdlib.h>

int gc_http_fetch(const char *url, size_t max, long timeout_ms, const gc_http_trace *trace,
                  gc_buf *out, gc_error *err)
{
    int rc = gc_http_init(err);
    if (rc)
        return rc;
    CURL *e = curl_easy_init();
    if (!e)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot create a libcurl handle for %s", url);
    gc_http_transfer t;
    gc_http_transfer_init(&t);
    gc_http_request req = {.method = "GET",
                           .url = url,
                           .follow_redirects = true,
                           .timeout_ms = timeout_ms,
                           .connect_timeout_ms = 15000,
                           .body_max = max,
                           .trace = trace};
    gc_http_start(&t, e, &req);
    const char *ca = getenv("SSL_CERT_FILE");
    if (ca && *ca)
        curl_easy_setopt(e, CURLOPT_CAINFO, ca);
    gc_http_finish(&t, curl_easy_perform(e));
    if (t.result != CURLE_OK)
        rc = gc_fail(err, GC_EXIT_RUNTIME, "downloading %s: %s", url,
                     t.error[0] ? t.error : curl_easy_strerror(t.result));
    else if (t.too_large)
        rc = gc_fail(err, GC_EXIT_RUNTIME, "downloading %s: larger than %zu bytes", url, max);
    else if (t.status / 100 != 2)
        rc = gc_fail(err, GC_EXIT_RUNTIME, "downloading %s: HTTP %ld %s", url, t.status,
                     gc_http_reason_phrase(t.status));
    if (!rc) {
        gc_buf_append(out, t.body.data, t.body.len);
    }
    gc_http_transfer_free(&t);
    curl_easy_cleanup(e);
    return rc;
}
