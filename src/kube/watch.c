/*
 * Lists in pages, and list-then-watch like a client-go informer.
 *
 * A list reads one page (limit/continue) at a time and hands out its items, so memory stays
 * bounded by a page; an expired continue token (410) restarts it. A watch is a stream of
 * newline-separated JSON events. It resumes from the last resourceVersion it saw (objects and
 * BOOKMARKs carry one) when the connection ends, which the server does every few minutes, and
 * lists again when that version is too old (410, on connect or as an ERROR event). The watcher
 * remembers the last state of every object, so after a re-list it can announce objects that
 * vanished meanwhile as DELETED.
 */
#include "kube/internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_LIST_RESTARTS 3
#define MAX_EVENT_BYTES   (64L * 1024 * 1024)
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

static int list_page(gc_kube *k, const char *path, const gc_kube_list_options *opts,
                     const char *cont, gc_kube_item_fn on_item, void *ctx, json_t **head,
                     long *status, gc_error *err)
{
    kube_list_page p;
    kube_list_page_start(&p, path, opts, cont, on_item, ctx, err);
    int rc = kube_request_run(k, &p.x, err);
    return kube_list_page_end(k, &p, rc, head, status, err);
}

int kube_list_rest(gc_kube *kube, const char *path, const gc_kube_list_options *opts,
                   gc_kube_item_fn on_item, void *ctx, char resource_version[64], gc_error *err,
                   int rc, json_t *head, long status)
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
            rc = list_page(kube, path, opts, NULL, on_item, ctx, &head, &status, err);
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
        rc = list_page(kube, path, opts, cont, on_item, ctx, &head, &status, err);
    }
    free(cont);
    return rc == GC_KUBE_STOP ? 0 : rc;
}

int gc_kube_list(gc_kube *kube, const char *path, const gc_kube_list_options *opts,
                 gc_kube_item_fn on_item, void *ctx, char resource_version[64], gc_error *err)
{
    json_t *head = NULL;
    long status = 0;
    int rc = list_page(kube, path, opts, NULL, on_item, ctx, &head, &status, err);
    return kube_list_rest(kube, path, opts, on_item, ctx, resource_version, err, rc, head, status);
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
    int stop;       /* GC_KUBE_STOP, or an error code */
    bool expired;   /* an ERROR event said 410: list again */
    bool got_event; /* this connection delivered something */
    long long deadline;
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

static int relist(watcher *w)
{
    w->listed = json_object();
    w->expired = false;
    /* Whole objects, as the watch's events are. */
    gc_kube_list_options opts = w->opts ? *w->opts : (gc_kube_list_options){0};
    opts.fields = NULL;
    int rc = gc_kube_list(w->k, w->path, &opts, on_list_item, w, w->rv, w->err);
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
    w->got_event = true;
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

static bool on_watch_data(const char *data, size_t len, void *ctx)
{
    watcher *w = ctx;
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
    /* Like client-go, ask the server to end the watch after 5-10 minutes: a quiet, stuck
     * connection then costs at most that long. */
    long seconds = 300 + (long)kube_random(w->k, 300);
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
    /* The server ends the watch after timeoutSeconds; silence well beyond that means the
     * connection died without a word (a NAT dropped it), so give up on it and resume. */
    x->stall_seconds = atol(w->timeout) + 60;
    gc_buf_reset(&w->line);
    w->got_event = false;
    return kube_exchange_run(w->k, x, w->err);
}

static int timed_out(watcher *w, int timeout_seconds)
{
    gc_fail(w->err, GC_EXIT_RUNTIME, "watching %s: gave up after %d s", w->path, timeout_seconds);
    snprintf(w->err->reason, sizeof(w->err->reason), "Timeout");
    return GC_EXIT_RUNTIME;
}

/* Whether a broken watch connection is worth another try. Unlike a single request, a watch
 * also rides out a refused connection (API servers restart during control plane upgrades) and
 * a connection that went silent. */
static long reconnect_delay(watcher *w, const kube_exchange *x, int failures)
{
    if (w->got_event)
        return 0;
    if ((x->http.result == CURLE_COULDNT_CONNECT || x->http.result == CURLE_OPERATION_TIMEDOUT) &&
        failures < KUBE_MAX_ATTEMPTS)
        return 1000L * failures;
    return kube_retry_delay(w->k, x, failures);
}

/* What to do after one watch connection ended: 0 to watch again, LIST_AGAIN, or an error.
 * `failures` counts consecutive failed connections. */
static int after_watch(watcher *w, kube_exchange *x, int *failures, bool *refreshed)
{
    if (w->expired || (x->http.result == CURLE_OK && x->http.status == 410))
        return LIST_AGAIN;
    if (x->http.result == CURLE_OK && x->http.status == 401 && !*refreshed &&
        kube_auth_refreshable(w->k)) {
        *refreshed = true;
        kube_auth_rejected(w->k, x->credential);
        return 0;
    }
    if (x->http.result == CURLE_OK && x->http.status < 300) {
        *failures = 0; /* the server ended the watch normally */
        *refreshed = false;
        return 0;
    }
    long delay = reconnect_delay(w, x, ++*failures);
    if (w->got_event)
        *failures = 0;
    if (delay < 0)
        return x->http.result != CURLE_OK ? kube_transport_error(w->k, x, w->err)
                                          : kube_http_error(w->k, x, w->err);
    kube_trace(w->k, "watch of %s ended early; reconnecting in %ld ms", w->path, delay);
    gc_clock_sleep_ms(delay);
    return 0;
}

static int watch_loop(watcher *w, int timeout_seconds)
{
    int failures = 0, relists = 0;
    bool refreshed = false;
    for (;;) {
        if (w->deadline && gc_clock_ms() >= w->deadline)
            return timed_out(w, timeout_seconds);
        kube_exchange x;
        int rc = watch_once(w, &x);
        if (!rc && !w->stop && x.http.past_deadline)
            rc = timed_out(w, timeout_seconds);
        if (!rc && !w->stop)
            rc = after_watch(w, &x, &failures, &refreshed);
        kube_exchange_free(&x);
        if (w->stop)
            return w->stop == GC_KUBE_STOP ? 0 : w->stop;
        if (rc == LIST_AGAIN) {
            kube_trace(w->k, "resourceVersion %s is too old; listing %s again", w->rv, w->path);
            gc_clock_sleep_ms(relists++ > 2 ? 1000 : 0);
            rc = relist(w);
            if (!rc && w->stop)
                return w->stop == GC_KUBE_STOP ? 0 : w->stop;
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
    int rc = relist(&w);
    if (!rc && w.stop)
        rc = w.stop == GC_KUBE_STOP ? 0 : w.stop;
    else if (!rc)
        rc = watch_loop(&w, timeout_seconds);
    gc_buf_free(&w.line);
    json_decref(w.known);
    return rc;
}
