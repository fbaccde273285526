/*
 * Lists in pages, and list-then-watch like a client-go informer.
 *
 * A list reads one page (limit/continue) at a time and hands out its items, so memory stays
 * bounded by a page; an expired continue token (410) restarts it. A watch is a stream of
 * newline-separated JSON events. It resumes from the last resourceVersion it saw (objects and
 * BOOKMARKs carry one) when the connection ends, and lists again when that version is too old
 * (410, on connect or as an ERROR event). The watcher remembers the last state of every object,
 * so after a re-list it can announce objects that vanished meanwhile as DELETED.
 *
 * A watch outlives the network under it: a connection that breaks, is refused or answers
 * 429/5xx (an API server restarting during a control plane upgrade) is made again with capped,
 * jittered backoff until the caller's time is up, or forever without a limit, and the caller
 * hears "reconnecting" through its events while it cannot be. A connection that goes silent
 * without closing (a NAT that dropped it) is found within WATCH_STALL_S: each watch request asks
 * the server to end it after WATCH_TIMEOUT_S seconds and to send bookmarks, so a healthy one
 * never stays silent that long.
 */
#include "kube/internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_LIST_RESTARTS 3
#define MAX_EVENT_BYTES   (64L * 1024 * 1024)
#define WATCH_TIMEOUT_S   15 /* ... plus up to 5 s of jitter */
#define WATCH_STALL_S     30
#define CONNECTED_MS      1000   /* a watch connection that lived this long was working */
#define LIST_AGAIN        (-100) /* after_watch: the resourceVersion is gone, list again */

/* A metadata-only list (GC_KUBE_ACCEPT_METADATA) is watched as metadata-only events, which the
 * server sends as PartialObjectMetadata (without "List"). */
#define ACCEPT_METADATA_EVENTS                                                                     \
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

void kube_list_page_start(kube_list_page *p, const char *path, const gc_kube_list_options *opts,
                          const char *cont, gc_kube_item_fn on_item, void *ctx, gc_error *err)
{
    size_t n = 0;
    memset(p->query, 0, sizeof(p->query));
    if (opts && opts->label_selector && opts->label_selector[0]) {
        p->query[n++] = "labelSelector";
        p->query[n++] = opts->label_selector;
    }
    if (opts && opts->field_selector && opts->field_selector[0]) {
        p->query[n++] = "fieldSelector";
        p->query[n++] = opts->field_selector;
    }
    if (opts && opts->page_size > 0) {
        snprintf(p->limit, sizeof(p->limit), "%ld", opts->page_size);
        p->query[n++] = "limit";
        p->query[n++] = p->limit;
    }
    if (cont) {
        p->query[n++] = "continue";
        p->query[n++] = cont;
    }
    p->req = (kube_request){.method = "GET",
                            .path = path,
                            .extra = p->query,
                            .accept = opts ? opts->accept : NULL,
                            .idempotent = true};
    kube_exchange_init(&p->x, &p->req);
    kube_list_reader_init(&p->reader, &p->x, opts ? opts->fields : NULL, on_item, ctx, err);
    p->x.on_data = kube_list_reader_feed;
    p->x.on_restart = kube_list_reader_restart;
    p->x.ctx = &p->reader;
}

int kube_list_page_end(gc_kube *k, kube_list_page *p, int rc, json_t **head, long *status,
                       gc_error *err)
{
    *status = p->x.http.status;
    if (!rc && p->x.http.status >= 300)
        rc = kube_http_error(k, &p->x, err);
    if (!rc)
        rc = kube_list_reader_finish(&p->reader, &p->req, err);
    *head = json_incref(p->reader.head);
    kube_list_reader_free(&p->reader);
    kube_exchange_free(&p->x);
    return rc;
}

/* How a list failed, for a watch that rides out the network's failures. */
typedef struct list_failure {
    bool transient; /* the network's or a busy server's: try again */
    char words[256];
} list_failure;

/* One page; `deadline` (0: none) bounds its request, and `failure` (may be NULL) says how it
 * failed. */
static int list_page(gc_kube *k, const char *path, const gc_kube_list_options *opts,
                     const char *cont, gc_kube_item_fn on_item, void *ctx, long long deadline,
                     json_t **head, long *status, list_failure *failure, gc_error *err)
{
    kube_list_page p;
    kube_list_page_start(&p, path, opts, cont, on_item, ctx, err);
    p.x.deadline_ms = deadline;
    int rc = kube_request_run(k, &p.x, err);
    if (failure) {
        failure->transient = kube_reconnectable(&p.x);
        kube_failure_words(&p.x, failure->words, sizeof(failure->words));
    }
    return kube_list_page_end(k, &p, rc, head, status, err);
}

static int list_rest(gc_kube *kube, const char *path, const gc_kube_list_options *opts,
                     gc_kube_item_fn on_item, void *ctx, char resource_version[64],
                     long long deadline, list_failure *failure, gc_error *err, int rc, json_t *head,
                     long status)
{
    char *cont = NULL;
    int restarts = 0;
    for (;;) {
        if (rc && status == 410 && cont && restarts < MAX_LIST_RESTARTS) {
            /* The snapshot behind the continue token was compacted away. */
            json_decref(head);
            restarts++;
            free(cont);
            cont = NULL;
            kube_trace(kube, "the list's continue token expired; listing %s again", path);
            rc = list_page(kube, path, opts, NULL, on_item, ctx, deadline, &head, &status, failure,
                           err);
            continue;
        }
        const json_t *meta = json_object_get(head, "metadata");
        const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
        const char *next = json_string_value(json_object_get(meta, "continue"));
        if (resource_version && !rc)
            snprintf(resource_version, 64, "%s", rv ? rv : "");
        free(cont);
        cont = next && next[0] && !rc ? gc_xstrdup(next) : NULL;
        json_decref(head);
        if (rc || !cont)
            break;
        rc =
            list_page(kube, path, opts, cont, on_item, ctx, deadline, &head, &status, failure, err);
    }
    free(cont);
    return rc == GC_KUBE_STOP ? 0 : rc;
}

int kube_list_rest(gc_kube *kube, const char *path, const gc_kube_list_options *opts,
                   gc_kube_item_fn on_item, void *ctx, char resource_version[64], gc_error *err,
                   int rc, json_t *head, long status)
{
    return list_rest(kube, path, opts, on_item, ctx, resource_version, 0, NULL, err, rc, head,
                     status);
}

/* A whole list; see list_page for `deadline` and `failure`. */
static int list_all(gc_kube *kube, const char *path, const gc_kube_list_options *opts,
                    gc_kube_item_fn on_item, void *ctx, char resource_version[64],
                    long long deadline, list_failure *failure, gc_error *err)
{
    json_t *head = NULL;
    long status = 0;
    int rc =
        list_page(kube, path, opts, NULL, on_item, ctx, deadline, &head, &status, failure, err);
    return list_rest(kube, path, opts, on_item, ctx, resource_version, deadline, failure, err, rc,
                     head, status);
}

int gc_kube_list(gc_kube *kube, const char *path, const gc_kube_list_options *opts,
                 gc_kube_item_fn on_item, void *ctx, char resource_version[64], gc_error *err)
{
    return list_all(kube, path, opts, on_item, ctx, resource_version, 0, NULL, err);
}

typedef struct watcher {
    gc_kube *k;
    const char *path;
    const gc_kube_list_options *opts;
    gc_kube_event_fn on_event;
    void *ctx;
    gc_error *err;
    char rv[64];
    json_t *known;  /* "namespace/name" → the object as last seen */
    json_t *listed; /* keys seen by the list in progress */
    gc_buf line;
    kube_request req; /* the watch request being streamed */
    const char *query[14];
    char timeout[32];
    int stop;     /* GC_KUBE_STOP, or an error code */
    bool expired; /* an ERROR event said 410: list again */
    long long deadline;
    int failures; /* consecutive attempts that failed to connect or list */
    /* The watch's own handle, so its connection is its own: one that broke or went silent is
     * closed with the handle, never found again in the client's pool (HTTP/2 keeps a connection
     * after a stream fails, and a silently dropped one still looks open). */
    CURL *e;
} watcher;

static char *object_key(const json_t *obj)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    const char *name = json_string_value(json_object_get(meta, "name"));
    return gc_xasprintf("%s/%s", ns ? ns : "", name ? name : "");
}

static void remember_rv(watcher *w, const json_t *obj)
{
    const char *rv =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (rv && rv[0])
        snprintf(w->rv, sizeof(w->rv), "%s", rv);
}

/* Passes one event on, keeping `known` up to date. Returns non-zero to stop. */
static int emit(watcher *w, enum gc_kube_event_type type, json_t *obj)
{
    char *key = object_key(obj);
    if (type == GC_KUBE_DELETED)
        json_object_del(w->known, key);
    else
        json_object_set(w->known, key, obj);
    free(key);
    int rc = w->on_event(type, obj, w->ctx, w->err);
    if (rc)
        w->stop = rc;
    return rc;
}

static int on_list_item(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    watcher *w = ctx;
    char *key = object_key(item);
    json_object_set_new(w->listed, key, json_true());
    free(key);
    return emit(w, GC_KUBE_ADDED, item) ? GC_KUBE_STOP : 0;
}

static int announce_vanished(watcher *w)
{
    json_t *gone = json_array();
    const char *key;
    json_t *obj;
    json_object_foreach(w->known, key, obj)
    {
        if (!json_object_get(w->listed, key))
            json_array_append(gone, obj);
    }
    int rc = 0;
    for (size_t i = 0; i < json_array_size(gone) && !rc; i++)
        rc = emit(w, GC_KUBE_DELETED, json_array_get(gone, i));
    json_decref(gone);
    return rc;
}

/* After each list: everything that exists has been announced. */
static int announce_synced(watcher *w)
{
    int rc = w->on_event(GC_KUBE_SYNCED, NULL, w->ctx, w->err);
    if (rc)
        w->stop = rc;
    return rc;
}

/* Lists, announcing every object; `failure` says how a list that failed went. */
static int relist(watcher *w, list_failure *failure)
{
    w->listed = json_object();
    w->expired = false;
    /* Whole objects, as the watch's events are. */
    gc_kube_list_options opts = w->opts ? *w->opts : (gc_kube_list_options){0};
    opts.fields = NULL;
    int rc = list_all(w->k, w->path, &opts, on_list_item, w, w->rv, w->deadline, failure, w->err);
    if (!rc && !w->stop)
        rc = announce_vanished(w);
    if (!rc && !w->stop)
        rc = announce_synced(w);
    json_decref(w->listed);
    w->listed = NULL;
    /* A handler's answer (GC_KUBE_STOP or an error) travels in w->stop, not as a return. */
    return w->stop ? 0 : rc;
}

static int fail_event(watcher *w, const char *what)
{
    w->stop = gc_fail(w->err, GC_EXIT_RUNTIME, "watching %s: %s", w->path, what);
    return w->stop;
}

static int on_error_event(watcher *w, const json_t *status)
{
    json_int_t code = json_integer_value(json_object_get(status, "code"));
    if (code == 410) {
        w->expired = true;
        return 1;
    }
    kube_request req = {.method = "WATCH", .path = w->path};
    char *text = json_dumps(status, JSON_COMPACT);
    gc_buf body = {.data = text ? text : "", .len = text ? strlen(text) : 0};
    w->stop = kube_status_error(&req, code ? (long)code : 500, &body, w->err);
    free(text);
    return w->stop;
}

static int on_event_line(watcher *w, const char *line, size_t len)
{
    json_error_t jerr;
    json_t *ev = json_loadb(line, len, 0, &jerr);
    if (!ev)
        return fail_event(w, "the server sent an event that is not JSON");
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    int rc = 0;
    if (!type || !json_is_object(obj))
        rc = fail_event(w, "the server sent an event without type or object");
    else if (!strcmp(type, "BOOKMARK"))
        remember_rv(w, obj);
    else if (!strcmp(type, "ERROR"))
        rc = on_error_event(w, obj);
    else if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
        remember_rv(w, obj);
        enum gc_kube_event_type t = type[0] == 'A'   ? GC_KUBE_ADDED
                                    : type[0] == 'M' ? GC_KUBE_MODIFIED
                                                     : GC_KUBE_DELETED;
        rc = emit(w, t, obj);
    }
    json_decref(ev);
    return rc;
}

static void connected(watcher *w);

static bool on_watch_data(const char *data, size_t len, void *ctx)
{
    watcher *w = ctx;
    connected(w);
    gc_buf_append(&w->line, data, len);
    size_t start = 0;
    for (char *nl; (nl = memchr(w->line.data + start, '\n', w->line.len - start));) {
        size_t end = (size_t)(nl - w->line.data);
        int rc = end > start ? on_event_line(w, w->line.data + start, end - start) : 0;
        start = end + 1;
        if (rc)
            return false;
    }
    memmove(w->line.data, w->line.data + start, w->line.len - start + 1);
    w->line.len -= start;
    if (w->line.len > MAX_EVENT_BYTES)
        return fail_event(w, "an event larger than 64 MiB"), false;
    return true;
}

static long watch_timeout(watcher *w)
{
    long seconds = WATCH_TIMEOUT_S + (long)kube_random(w->k, 6);
    if (w->deadline) {
        long left = (long)((w->deadline - gc_clock_ms()) / 1000) + 1;
        if (left < seconds)
            seconds = left;
    }
    return seconds;
}

static void build_watch_request(watcher *w)
{
    snprintf(w->timeout, sizeof(w->timeout), "%ld", watch_timeout(w));
    const char *q[] = {
        "watch",          "1",       "resourceVersion", w->rv, "allowWatchBookmarks", "true",
        "timeoutSeconds", w->timeout};
    size_t n = sizeof(q) / sizeof(*q);
    memcpy(w->query, q, sizeof(q));
    if (w->opts && w->opts->label_selector && w->opts->label_selector[0]) {
        w->query[n++] = "labelSelector";
        w->query[n++] = w->opts->label_selector;
    }
    if (w->opts && w->opts->field_selector && w->opts->field_selector[0]) {
        w->query[n++] = "fieldSelector";
        w->query[n++] = w->opts->field_selector;
    }
    w->query[n] = NULL;
    bool metadata = w->opts && w->opts->accept && strstr(w->opts->accept, "PartialObjectMetadata");
    w->req = (kube_request){.method = "GET",
                            .path = w->path,
                            .extra = w->query,
                            .accept = metadata  ? ACCEPT_METADATA_EVENTS
                                      : w->opts ? w->opts->accept
                                                : NULL,
                            .idempotent = true,
                            .streaming = true};
}

static int watch_once(watcher *w, kube_exchange *x)
{
    build_watch_request(w);
    kube_exchange_init(x, &w->req);
    x->on_data = on_watch_data;
    x->ctx = w;
    x->deadline_ms = w->deadline;
    x->stall_seconds = WATCH_STALL_S;
    gc_buf_reset(&w->line);
    int rc = kube_auth_ensure(w->k, w->err);
    if (rc)
        return rc;
    if (!w->e && !(w->e = curl_easy_init()))
        return gc_fail(w->err, GC_EXIT_RUNTIME, "cannot create a libcurl handle");
    kube_exchange_start(w->k, x, w->e);
    w->k->depth++; /* requests made from event handlers use the nesting handles */
    CURLcode result = curl_easy_perform(w->e);
    w->k->depth--;
    kube_exchange_end(w->k, x, result);
    if (result != CURLE_OK && !x->http.stopped) {
        curl_easy_cleanup(w->e);
        w->e = NULL;
    }
    return 0;
}

static int timed_out(watcher *w, int timeout_seconds)
{
    gc_fail(w->err, GC_EXIT_RUNTIME, "watching %s: gave up after %d s", w->path, timeout_seconds);
    snprintf(w->err->reason, sizeof(w->err->reason), "Timeout");
    return GC_EXIT_RUNTIME;
}

static int stopped(const watcher *w)
{
    return w->stop == GC_KUBE_STOP ? 0 : w->stop;
}

/* Waits before the next attempt after a failed one (x, may be NULL, may say how long), saying
 * so; never past the deadline. */
static void pause_before_retry(watcher *w, const kube_exchange *x, const char *what)
{
    w->failures++;
    long delay = kube_reconnect_delay(w->k, x, w->failures);
    long long now = gc_clock_ms();
    if (w->deadline && now + delay > w->deadline)
        delay = (long)(w->deadline - now);
    gc_notice(w->k->trace.events,
              "connection to the API server lost (%s); reconnecting in %.1f s (attempt %d)", what,
              (double)(delay > 0 ? delay : 0) / 1000, w->failures);
    gc_clock_sleep_ms(delay);
}

/* The connection works again after failed attempts: say so once. */
static void connected(watcher *w)
{
    if (w->failures)
        gc_notice(w->k->trace.events, "reconnected to the API server");
    w->failures = 0;
}

static int watch_error(watcher *w, const kube_exchange *x)
{
    return x->http.result != CURLE_OK ? kube_transport_error(w->k, x, w->err)
                                      : kube_http_error(w->k, x, w->err);
}

/* What one watch connection's end means: 0 to watch again (after a pause when it failed),
 * LIST_AGAIN, or an error. */
static int after_watch(watcher *w, kube_exchange *x, long long started, bool *refreshed)
{
    const gc_http_transfer *h = &x->http;
    bool answered = h->result == CURLE_OK;
    if (w->expired || (answered && h->status == 410))
        return LIST_AGAIN;
    if (answered && h->status == 401 && !*refreshed && kube_auth_refreshable(w->k)) {
        *refreshed = true;
        kube_auth_rejected(w->k, x->credential);
        return 0;
    }
    if (answered && h->status < 300) { /* the server ended the watch at timeoutSeconds */
        *refreshed = false;
        connected(w);
        return 0;
    }
    if (!kube_reconnectable(x))
        return watch_error(w, x);
    char words[256];
    kube_failure_words(x, words, sizeof(words));
    /* A watch that was streaming and broke is resumed at once; one that could not even start
     * (refused, cut before its answer, 5xx) after a pause. */
    bool streaming = h->status >= 200 && h->status < 300;
    if (streaming && gc_clock_ms() - started >= CONNECTED_MS) {
        connected(w);
        kube_trace(w->k, "watch of %s broke (%s); resuming from resourceVersion %s", w->path, words,
                   w->rv);
        return 0;
    }
    pause_before_retry(w, x, words);
    return 0;
}

/* Lists until it works, riding out transient failures. */
static int list_until_done(watcher *w, int timeout_seconds)
{
    for (;;) {
        if (w->deadline && gc_clock_ms() >= w->deadline)
            return timed_out(w, timeout_seconds);
        list_failure failure = {0};
        int rc = relist(w, &failure);
        if (!rc && !w->stop)
            connected(w);
        if (!rc || w->stop || !failure.transient)
            return rc;
        pause_before_retry(w, NULL, failure.words);
        gc_error_clear(w->err);
    }
}

static int watch_loop(watcher *w, int timeout_seconds)
{
    int relists = 0;
    bool refreshed = false;
    for (;;) {
        if (w->deadline && gc_clock_ms() >= w->deadline)
            return timed_out(w, timeout_seconds);
        kube_exchange x;
        long long started = gc_clock_ms();
        int rc = watch_once(w, &x);
        if (!rc && !w->stop && x.http.past_deadline)
            rc = timed_out(w, timeout_seconds);
        if (!rc && !w->stop)
            rc = after_watch(w, &x, started, &refreshed);
        kube_exchange_free(&x);
        if (w->stop)
            return stopped(w);
        if (rc == LIST_AGAIN) {
            kube_trace(w->k, "resourceVersion %s is too old; listing %s again", w->rv, w->path);
            gc_clock_sleep_ms(relists++ > 2 ? 1000 : 0);
            rc = list_until_done(w, timeout_seconds);
            if (!rc && w->stop)
                return stopped(w);
        }
        if (rc)
            return rc;
    }
}

int gc_kube_list_watch(gc_kube *kube, const char *path, const gc_kube_list_options *opts,
                       int timeout_seconds, gc_kube_event_fn on_event, void *ctx, gc_error *err)
{
    watcher w = {.k = kube,
                 .path = path,
                 .opts = opts,
                 .on_event = on_event,
                 .ctx = ctx,
                 .err = err,
                 .known = json_object()};
    gc_buf_init(&w.line);
    if (timeout_seconds > 0)
        w.deadline = gc_clock_ms() + (long long)timeout_seconds * 1000;
    int rc = list_until_done(&w, timeout_seconds);
    if (!rc && w.stop)
        rc = stopped(&w);
    else if (!rc)
        rc = watch_loop(&w, timeout_seconds);
    if (w.e)
        curl_easy_cleanup(w.e);
    gc_buf_free(&w.line);
    json_decref(w.known);
    return rc;
}
