/*
 * The parts of the kube client shared between its files (private to kube/ and kube/tunnel/).
 *
 *   kubeconfig.c  files → kube_config        select.c  which context
 *   gcloud.c      get-credentials fallback   auth.c    tokens, certificates, credential cache
 *   exec.c        exec credential plugins    client.c  opening a client, retry jitter
 *   http.c        one request on sys/'s layer: endpoint, credentials, retries
 *   trace.c       -v lines and server warnings, through the client's gc_events
 *   status.c      Status bodies → messages   api.c     the verbs
 *   path.c        REST paths and URLs        blob.c    certificate and key bytes
 *   watch.c       list paging, list+watch    list_reader.c  a list page read item by item
 *   logs.c        many log streams on the multi interface
 *   batch.c       independent reads sent together
 *   background.c  reads moved along by the caller's own poll loop
 *   multi.c       what every loop over several transfers does alike (connections, waits)
 *   reconnect.c   what long-lived streams reconnect after, and how soon
 *   redact.c      server text made safe to show; the client's secrets kept out of it
 *   quantity.c    resource quantities
 *   tunnel/       the port-forward tunnel, behind its own header (tunnel/internal.h)
 */
#ifndef GCLUSTER_KUBE_INTERNAL_H
#define GCLUSTER_KUBE_INTERNAL_H

#include "gcluster/buf.h"
#include "gcluster/http.h"
#include "gcluster/json_scan.h"
#include "gcluster/kube.h"
#include "gcluster/sys.h"
#include "kube/kubeconfig.h"

#include <curl/curl.h>
#include <stdint.h>
#include <time.h>

#define KUBE_MAX_ATTEMPTS 5                    /* per idempotent request: 1 + 4 retries */
#define KUBE_MAX_NESTING  4                    /* requests made from inside request callbacks */
#define KUBE_MAX_BODY     (512L * 1024 * 1024) /* a response larger than this needs paging */

/* The credential sent with requests, cached until it expires or is rejected. */
typedef struct kube_credential {
    bool valid;
    char *authorization; /* Authorization header value ("Bearer ...", "Basic ..."), or NULL */
    kube_blob cert;      /* client certificate and key from an exec plugin */
    kube_blob key;
    time_t expiry; /* 0: valid for the life of the process */
} kube_credential;

struct gc_kube {
    kube_config cfg;
    kube_selection sel;
    char *ns;
    gc_http_trace trace; /* where traces, notices and warnings go, and how much is traced */
    int exec_timeout_ms;
    long request_timeout_ms;
    long list_timeout_ms;       /* the whole of one list read as it arrives (an attempt) */
    time_t (*wall_clock)(void); /* for credential expiry and Retry-After dates */

    char *base_url;                /* server URL, with tls-server-name as its host if set */
    struct curl_slist *connect_to; /* routes tls-server-name to the real server address */
    char *noproxy;
    kube_blob ca;          /* trusted CA bundle (PEM), or none: system roots */
    kube_blob client_cert; /* from the kubeconfig */
    kube_blob client_key;
    kube_credential cred;
    unsigned credential_generation; /* counts the credentials obtained so far */
    unsigned exec_runs;             /* exec plugin runs, for tests and traces */

    /* One handle per nesting level, each reused so its connection is kept: level 0 serves
     * sequential requests; a request made from inside another's callback (a watch event
     * handler that looks something up) gets the next level, because an easy handle cannot be
     * used again while it is transferring. */
    CURL *easy[KUBE_MAX_NESTING];
    int depth;
    CURLSH *share; /* level 0's connections, shared with concurrent batches (http.c) */
    unsigned request_count;
    unsigned round_trips;
    unsigned in_flight; /* requests started and not ended */
    uint64_t rng;
    gc_buf warnings_seen; /* Warning texts already shown, NUL-separated */
};

/* client.c: a random number below `bound` from the client's own generator, for jitter (the
 * library keeps no global state and never touches rand()). */
unsigned kube_random(gc_kube *k, unsigned bound);

/* auth.c */
int kube_auth_init(gc_kube *k, gc_error *err);
int kube_auth_ensure(gc_kube *k, gc_error *err);
bool kube_auth_refreshable(const gc_kube *k);
void kube_auth_invalidate(gc_kube *k);
/* The server answered 401 to a request sent with credential `generation`: drops the credential
 * unless a newer one was obtained meanwhile (requests that were in flight together must not
 * each run the exec plugin again). */
void kube_auth_rejected(gc_kube *k, unsigned generation);
/* The "Authorization: ..." header line of the current credential, or NULL (wipe and free it). */
char *kube_auth_header(const gc_kube *k);
/* The client certificate and key for TLS, from the credential or the kubeconfig. */
void kube_auth_apply_certificate(gc_kube *k, CURL *e);
void kube_credential_clear(kube_credential *c);
/* exec.c: runs the user's exec plugin and fills `cred`. */
int kube_exec_credential(gc_kube *k, kube_credential *cred, gc_error *err);
/* gcloud.c: runs `gcloud container clusters get-credentials` for opts. */
int kube_gcloud_get_credentials(const gc_kube_options *opts, const char *gcloud,
                                const gc_events *events, gc_error *err);

/* http.c */
typedef struct kube_request {
    const char *method; /* "GET", "POST", "PATCH", "DELETE" */
    const char *path;
    const char *const *query; /* the caller's key/value pairs, may be NULL */
    const char *const *extra; /* pairs the verb adds (limit, dryRun, ...), may be NULL */
    const char *content_type; /* of body */
    const char *body;
    size_t body_len;
    const char *accept; /* Accept header; NULL: JSON (logs: anything) */
    bool idempotent;    /* may be re-sent after a failure */
    bool streaming;     /* a watch or log follow: no total timeout, traced when headers arrive */
} kube_request;

/* Streamed body data; return false to end the transfer. */
typedef bool (*kube_data_fn)(const char *data, size_t len, void *ctx);
/* Before every attempt: a streaming consumer starts over. */
typedef void (*kube_restart_fn)(void *ctx);

/* One HTTP attempt: the request, and in `http` how it went (status, body, result, sent). */
typedef struct kube_exchange {
    const kube_request *req;
    kube_data_fn on_data;       /* NULL: collect the body in http.body */
    kube_restart_fn on_restart; /* may be NULL */
    void *ctx;                  /* of on_data and on_restart */
    long long deadline_ms;      /* gc_clock_ms() time; 0: none beyond the request timeout */
    long stall_seconds;         /* streaming: give up after this long without a byte; 0: never */

    gc_http_transfer http;   /* http.body: the body, or for streamed requests an error body */
    gc_http_body body;       /* the request's body as the layer takes it */
    gc_kube *k;              /* the client of the attempt under way (for server warnings) */
    bool retried_after_send; /* an earlier attempt may have been applied (kube_request_run) */
    bool acted_on;           /* on_data's consumer acted on part of the body (handed out list
                                items): a new attempt would repeat that, so there is none */
    long retry_after_ms;     /* Retry-After, or -1 */
    unsigned credential;     /* generation of the credential the attempt was sent with */
    bool list_deadline;      /* the attempt's deadline is the list timeout (not deadline_ms) */
} kube_exchange;

/* What reaching this API server takes on `e`, beyond the request itself: HTTP/2, keep-alive,
 * proxy, the TLS trust and the client certificate. */
void kube_set_connection(gc_kube *k, CURL *e);

void kube_exchange_init(kube_exchange *x, const kube_request *req);
void kube_exchange_free(kube_exchange *x);
/* Sets up an attempt on `e` (the request, the endpoint's TLS and proxy, the credential), and
 * after the transfer records how it went (Retry-After, the server's clock). Between the two the
 * caller runs the transfer, alone or on a multi handle. */
void kube_exchange_start(gc_kube *k, kube_exchange *x, CURL *e);
void kube_exchange_end(gc_kube *k, kube_exchange *x, CURLcode result);
/* Runs one attempt (credentials first). Non-zero only when credentials cannot be had; how
 * the exchange went is in x->http.result and x->http.status. */
int kube_exchange_run(gc_kube *k, kube_exchange *x, gc_error *err);

/* A request with retries (429, 5xx and connection resets for idempotent requests, a
 * credential refresh on 401). On success x->status is the final HTTP status, which may be an
 * error status: turn it into a message with kube_status_error. A transport failure returns
 * GC_EXIT_RUNTIME with x->sent telling whether the request may have been applied. */
int kube_request_run(gc_kube *k, kube_exchange *x, gc_error *err);

/* One request of a batch, with its own outcome. */
typedef struct kube_batch_entry {
    kube_exchange *x;
    gc_error *err;
    int rc; /* what kube_request_run returned for it */
} kube_batch_entry;

/* multi.c: a multi handle for requests made at the same time, each on a connection of its own
 * (libcurl 7.88's HTTP/2 streams on one connection can stall), or NULL. */
CURLM *kube_multi_new(void);
/* Waits for the transfers on `multi` (at most longest_ms), shortly again after their sockets
 * were busy: libcurl 7.88 may hold a stream's end in its HTTP/2 buffers until the next socket
 * event. A loop keeps one zeroed pace for all its waits. */
typedef struct {
    int quiet_wait; /* the next wait while the sockets stay quiet; 0: the caller's longest */
} kube_multi_pace;
void kube_multi_wait(CURLM *multi, kube_multi_pace *pace, int longest_ms);
/* The same for a loop with a poll of its own: the timeout to use instead of longest_ms (-1:
 * none), then whether libcurl's sockets had events. */
int kube_pace_wait(const kube_multi_pace *pace, int longest_ms);
void kube_pace_waited(kube_multi_pace *pace, bool busy);

/* Like kube_request_run for each entry, but the first attempts go out at once (kube_multi_new:
 * a connection each); retries then run one at a time.
 * Callbacks of different entries interleave. From inside a callback (nested) it runs them
 * in turn. */
void kube_request_run_all(gc_kube *k, kube_batch_entry *batch, size_t n);

/* err for an HTTP error status (a Status message, and a hint for rejected credentials). */
int kube_http_error(const gc_kube *k, const kube_exchange *x, gc_error *err);
/* Decodes a JSON body into *out (an empty body is an empty object); out may be NULL. */
int kube_decode_body(const kube_exchange *x, json_t **out, gc_error *err);

/* Milliseconds to wait before attempt `attempt` (1-based retry number) of this exchange, or -1
 * when it must not be retried. */
long kube_retry_delay(gc_kube *k, const kube_exchange *x, int attempt);
/* Fills err for a failed transfer (not reachable, TLS, timeout, ...). */
int kube_transport_error(const gc_kube *k, const kube_exchange *x, gc_error *err);

/* reconnect.c: whether a watch or log stream that ended this way is worth connecting again (a
 * broken or refused connection, a stall, 429 or 5xx), rather than an answer to report. */
bool kube_reconnectable(const kube_exchange *x);
/* Milliseconds before reconnect attempt `attempt` (1-based): Retry-After when x has one (capped),
 * else 0.5 s doubling up to 8 s, with jitter. x may be NULL. */
long kube_reconnect_delay(gc_kube *k, const kube_exchange *x, int attempt);
/* A few words on how the exchange failed, for notices ("HTTP 503 Service Unavailable",
 * "Connection refused", "no data for 20 s"). */
void kube_failure_words(const kube_exchange *x, char *out, size_t size);

/* path.c: the full URL for a request, and the URL traces show (the kubeconfig's server rather
 * than the tls-server-name the request goes to; the layer redacts it). Callers free. */
char *kube_url(const gc_kube *k, const kube_request *req);
char *kube_trace_url(const gc_kube *k, const kube_request *req);
/* Percent-encodes for a query value or a path segment. */
void kube_url_encode(gc_buf *out, const char *s);

/* trace.c: a -v line about what the client does (nothing without -v). */
void kube_trace(const gc_kube *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A Warning header's value, shown once per client as a warning. */
void kube_notice_warning(gc_kube *k, const char *value);

/* status.c: err from an HTTP error status and its body (a Kubernetes Status or anything); the
 * server's text in it made safe by kube_safe_text. */
int kube_status_error(const gc_kube *k, const kube_request *req, long status, const gc_buf *body,
                      gc_error *err);

/* redact.c: hides the client's secrets (its token, password, key material, a URL's password) and
 * anything credential-like in `text`. */
void kube_redact(const gc_kube *k, gc_buf *text);
/* kube_redact as a gc_http_trace.redact hook (ctx: the client). */
void kube_redact_trace(gc_buf *line, const void *ctx);
/* Appends server text to `out` safe to show: secrets redacted (k may be NULL: credential-like
 * text only), then escaped and cut to `max` columns by gc_text_escape. */
void kube_safe_text(const gc_kube *k, gc_buf *out, const char *text, size_t len, size_t max);

/* list_reader.c: one list page read as it arrives, item by item (see gc_kube_list). */
typedef struct kube_list_reader {
    kube_exchange *x;
    const json_t *fields; /* gc_json_load_fields shape of the items, or NULL */
    gc_kube_item_fn on_item;
    void *ctx;
    gc_error *err;
    gc_buf pending; /* received and not yet consumed: at most one partial value */
    size_t at;      /* consumed bytes at the start of `pending` */
    size_t bytes;   /* received in all */
    int state;
    gc_json_scan scan; /* the value being received */
    char *member;      /* name of the list member being read */
    json_t *head;      /* the list's members other than items (kind, apiVersion, metadata) */
    int rc;            /* on_item's non-zero answer: GC_KUBE_STOP or an error */
    char problem[160]; /* why the body is not a list */
    bool value_too_large;
} kube_list_reader;

void kube_list_reader_init(kube_list_reader *r, kube_exchange *x, const json_t *fields,
                           gc_kube_item_fn on_item, void *ctx, gc_error *err);
bool kube_list_reader_feed(const char *data, size_t len, void *ctx); /* a kube_data_fn */
void kube_list_reader_restart(void *ctx);                            /* a kube_restart_fn */
/* After the exchange: on_item's non-zero answer, an error for a body that is not a whole list,
 * or 0 (r->head then holds metadata). */
int kube_list_reader_finish(kube_list_reader *r, const kube_request *req, gc_error *err);
void kube_list_reader_free(kube_list_reader *r);
/* watch.c: one page of a list, for callers that run its request themselves (batch.c). Not
 * movable once started: the reader points at the exchange. */
typedef struct kube_list_page {
    char limit[32];
    const char *query[12];
    kube_request req;
    kube_exchange x;
    kube_list_reader reader;
} kube_list_page;

void kube_list_page_start(kube_list_page *p, const char *path, const gc_kube_list_options *opts,
                          const char *cont, gc_kube_item_fn on_item, void *ctx, gc_error *err);
/* How a page of a list went, for what follows it. */
typedef struct kube_page_outcome {
    json_t *head;    /* the list's members other than items (metadata with the continue token) */
    long status;     /* HTTP status; 0: none */
    bool transient;  /* failed in a way trying again may mend (the network's, a busy server) */
    bool handed_out; /* items were handed out before it ended */
    char words[256]; /* a few words on how it failed */
} kube_page_outcome;

/* After the request (rc: kube_request_run's answer): how the page went. Frees the page. */
int kube_list_page_end(gc_kube *k, kube_list_page *p, int rc, kube_page_outcome *out,
                       gc_error *err);
/* Given how the first page went (rc, *first), lists the rest of the pages (starting over when
 * gc_kube_list would): what gc_kube_list returns. */
int kube_list_rest(gc_kube *kube, const char *path, const gc_kube_list_options *opts,
                   gc_kube_item_fn on_item, void *ctx, char resource_version[64], gc_error *err,
                   int rc, kube_page_outcome *first);

/* Fills in kind ("Pod" for a "PodList") and apiVersion from the list when an item lacks them. */
void kube_complete_item(json_t *item, const json_t *list);

/* Only kube/ asks these (client.c, quantity.c). */
const char *kube_context_name(const gc_kube *kube);
const char *kube_server(const gc_kube *kube);

/* Kubernetes resource quantities ("32", "1.5k", "2000G", "512Gi", "500m", "1e3"): digits with an
 * optional fraction, then a decimal or binary suffix or an exponent. */
bool kube_quantity_valid(const char *text);

#endif
