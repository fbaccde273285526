/*
 * Pod logs from many containers at once, on libcurl's multi interface, each line delivered
 * exactly once even when connections break.
 *
 * Every container is one GET .../pods/<pod>/log stream; with HTTP/2 they share connections,
 * STREAMS_PER_CONNECTION on each (see may_start). Without follow at most MAX_OPEN_STREAMS are
 * open at once. Bytes are cut into whole lines per stream before the caller sees them, so lines
 * of different containers never mix.
 *
 * Resuming: streams always ask for timestamps=true, so every line starts with the time the
 * container wrote it (stripped again unless the caller wants it). When a stream breaks (reset,
 * cut, an API server restart, no bytes for stall_seconds) it is asked again with sinceTime at
 * its last line's second: the API server hands sinceTime to the kubelet with whole seconds
 * only, so the answer repeats lines already delivered, and they are dropped as they arrive:
 * every line older than the last one delivered, and as many lines carrying exactly its time
 * stamp as were delivered (several lines can share one).
 *
 * A container that restarts starts a new log. Before a resume the pod's container status says
 * which instance wrote the last line: the current one (resume it), the previous one (read it to
 * its end with previous=true, then the new one from its start, with a notice), or an older one
 * (its rest is gone: the stream ends incomplete).
 *
 * Following, a quiet container is normal, so a followed stream has no stall limit; a dead
 * connection is found by TCP keepalive with a user timeout instead. A followed stream that ends
 * (its container exited, or the API server ended it) is asked again now and then until the
 * caller stops following; then every stream reads what is left without following, and ends.
 */
#include "kube/log_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RESUME_FAILURES 8 /* consecutive attempts without progress, when not following */
#define POLL_MS             1000
#define DEFAULT_STALL_S     20
#define POD_TIMEOUT_MS      10000
#define ENDED_RETRY_MAX_MS  5000 /* a followed log that ended is asked again at least this often */
#define CONNECTED_MS        1000 /* a connection that lived this long was working */
#define NOTICE_EVERY_MS     5000

/* HTTP/2 streams per connection. A server allows a number of concurrent streams per connection
 * (Go's HTTP/2 server, and so the kube-apiserver, 250 unless configured; others 100), and
 * libcurl keeps to 100 of its own (CURLMOPT_MAX_CONCURRENT_STREAMS); a log stream beyond both
 * needs another connection. libcurl shares a connection still being set up only with transfers
 * added while it knows of no other (PIPEWAIT): later ones each open their own, so a thousand
 * streams added at once opened ~900 TLS connections (~120 KiB each). So streams start in
 * waves: the first of a wave opens a connection and the rest of the wave starts once it is
 * set up, and finds it. */
#define STREAMS_PER_CONNECTION 100
#define WAVE_POLL_MS           5 /* how often a waiting wave looks at its opener */

/* Without follow every stream ends, so at most this many are open at once and the next starts
 * when one ends: memory then grows with this number, not with the number of containers (each
 * open stream holds a libcurl handle, its receive buffer and a line end, ~20-30 KiB), and one
 * HTTP/2 connection's worth keeps the API server busy enough to read a thousand containers in
 * seconds. Followed streams never end on their own, so all of them are open. */
#define MAX_OPEN_STREAMS GC_KUBE_LOGS_MAX_OPEN

/* --- attempts --------------------------------------------------------------------------- */

static bool following(const log_stream *s)
{
    return s->run->following && !s->final;
}

/* The query of the next log request: the caller's options the first time, sinceTime at the
 * last line's second when resuming, nothing but follow for a new instance's whole log. */
static void log_request(log_stream *s)
{
    const gc_kube_log_options *o = &s->run->opts;
    size_t n = 0;
    if (s->src->container && s->src->container[0]) {
        s->query[n++] = "container";
        s->query[n++] = s->src->container;
    }
    if (following(s) && !s->previous) {
        s->query[n++] = "follow";
        s->query[n++] = "true";
    }
    if (s->previous) {
        s->query[n++] = "previous";
        s->query[n++] = "true";
    }
    s->query[n++] = "timestamps";
    s->query[n++] = "true";
    s->resuming = false;
    if (s->original && o->tail_lines >= 0) {
        snprintf(s->tail, sizeof(s->tail), "%ld", o->tail_lines);
        s->query[n++] = "tailLines";
        s->query[n++] = s->tail;
    }
    if (s->original && o->since_seconds > 0) {
        snprintf(s->since, sizeof(s->since), "%ld", o->since_seconds);
        s->query[n++] = "sinceSeconds";
        s->query[n++] = s->since;
    }
    if (!s->original && !s->from_start && s->positioned) {
        kube_log_format_stamp(s->last, false, s->since_time, sizeof(s->since_time));
        s->query[n++] = "sinceTime";
        s->query[n++] = s->since_time;
        s->resuming = true;
        s->dropped = 0;
    }
    s->query[n] = NULL;
    s->req = (kube_request){.method = "GET",
                            .path = s->log_path,
                            .extra = s->query,
                            .idempotent = true,
                            .streaming = true};
    s->x.on_data = kube_log_on_log_data;
    s->x.ctx = s;
    s->stall_ms = following(s) && !s->previous ? 0 : s->run->opts.stall_seconds * 1000L;
}

static void pod_request(log_stream *s)
{
    s->req = (kube_request){.method = "GET", .path = s->pod_path, .idempotent = true};
    s->stall_ms = POD_TIMEOUT_MS;
}

static void stream_failed(log_stream *s);

/* Starts the next attempt: the pod first when resuming, else the log. */
static void start_attempt(log_stream *s)
{
    gc_kube *k = s->run->k;
    kube_exchange_free(&s->x);
    kube_exchange_init(&s->x, &s->req);
    s->locating = s->positioned && !s->original && !s->from_start && !s->located;
    if (s->locating)
        pod_request(s);
    else
        log_request(s);
    s->e = curl_easy_init();
    if (!s->e) {
        s->x.http.result = CURLE_OUT_OF_MEMORY;
        stream_failed(s);
        return;
    }
    kube_exchange_start(k, &s->x, s->e);
    curl_easy_setopt(s->e, CURLOPT_PIPEWAIT, 1L);
    /* A receive buffer per stream: 4 KiB instead of 16 saves 0.75 MiB over 64 streams, with
     * the same throughput on testenv (log lines are ~100 bytes). A followed stream, open for
     * as long as its container runs, alongside every other container's, takes libcurl's
     * smallest (1 KiB): 3 MiB less over a thousand. */
    curl_easy_setopt(s->e, CURLOPT_BUFFERSIZE, s->run->following ? 1024L : 4096L);
    curl_easy_setopt(s->e, CURLOPT_PRIVATE, s);
    s->running = true;
    s->progressed = false;
    s->continuing = s->dropping = false;
    s->start_at = 0;
    s->started_ms = s->last_bytes = gc_clock_ms();
    s->stalled = false;
    curl_multi_add_handle(s->run->multi, s->e);
}

/* Ends the stream's transfer (`result`: libcurl's word on it) and releases its handle. */
static void stop_stream(log_stream *s, CURLcode result)
{
    if (!s->e)
        return;
    kube_exchange_end(s->run->k, &s->x, result);
    curl_multi_remove_handle(s->run->multi, s->e);
    curl_easy_cleanup(s->e);
    s->e = NULL;
    s->running = false;
}

static void schedule(log_stream *s, long delay_ms)
{
    s->start_at = gc_clock_ms() + (delay_ms > 0 ? delay_ms : 0) + 1;
}

static gc_error *stream_error(log_stream *s)
{
    if (!s->error)
        s->error = gc_xcalloc(1, sizeof(*s->error));
    return s->error;
}

/* Records why a stream that never delivered a line gave up, as a single request would have
 * said it. */
static void stream_failed(log_stream *s)
{
    if (s->x.http.result != CURLE_OK)
        kube_transport_error(s->run->k, &s->x, stream_error(s));
    else
        kube_http_error(s->run->k, &s->x, stream_error(s));
    s->failed = true;
}

/* Lines of the stream may be missing (`why`): said once at the end, in the error. */
static void mark_incomplete(log_stream *s, const char *why)
{
    if (s->incomplete)
        return;
    char after[48] = "";
    if (s->positioned)
        kube_log_format_stamp(s->last, true, after, sizeof(after));
    gc_fail(stream_error(s), GC_EXIT_INCOMPLETE, "%s: %s; lines %s%s may be missing", s->name, why,
            after[0] ? "after " : "", after);
    s->incomplete = true;
    if (following(s)) /* the stream goes on: say it now, not only at the end */
        gc_warn(events(s), "%s", s->error->message);
}

/* The container restarted: from now on its new instance's log, from its first line. */
static void follow_new_instance(log_stream *s)
{
    gc_notice(events(s), "%s: the container restarted; its new instance's log follows", s->name);
    s->previous = false;
    s->from_start = true;
    s->positioned = false;
    s->last_count = 0;
    s->located = false;
    schedule(s, 0);
}

static void show_reconnecting(log_stream *s, const char *words, long delay)
{
    logs_run *run = s->run;
    long long now = gc_clock_ms();
    if (run->noticed && now - run->notice_at < NOTICE_EVERY_MS)
        return;
    run->notice_at = now;
    run->noticed = true;
    gc_notice(events(s), "log stream %s: connection lost (%s); reconnecting in %.1f s (attempt %d)",
              s->name, words, (double)delay / 1000, s->failures);
}

/* A broken connection, a stall, 429 or 5xx: try again (following: as long as the caller
 * follows; else a bounded number of times). */
static void broke(log_stream *s)
{
    const gc_http_transfer *h = &s->x.http;
    bool lived = h->sent && gc_clock_ms() - s->started_ms >= CONNECTED_MS;
    gc_buf_reset(&s->partial); /* its line comes again with the resume */
    s->ended = false;
    s->located = false;
    if (s->progressed || (following(s) && lived))
        s->failures = 0;
    s->failures++;
    char words[256];
    if (s->stalled)
        snprintf(words, sizeof(words), "no data for %ld s", s->stall_ms / 1000);
    else
        kube_failure_words(&s->x, words, sizeof(words));
    if (!following(s) && s->failures > MAX_RESUME_FAILURES) {
        if (!s->lines) {
            stream_failed(s);
            return;
        }
        char why[320];
        snprintf(why, sizeof(why),
                 "the stream broke and %d attempts to resume it failed (last: %s)",
                 MAX_RESUME_FAILURES, words);
        mark_incomplete(s, why);
        s->done = true;
        return;
    }
    if (s->lines && !s->positioned) {
        mark_incomplete(s, "the stream broke and its lines carry no time stamps to resume from");
        s->done = true;
        return;
    }
    /* A connection that broke after the request went out is tried again at once; one that
     * could not be made, or an error answer, after a pause. */
    bool cut = h->result != CURLE_OK && h->sent;
    long delay = cut && s->failures == 1 ? 0 : kube_reconnect_delay(s->run->k, &s->x, s->failures);
    if (cut)
        kube_trace(s->run->k, "log stream %s broke (%s); resuming in %ld ms", s->name, words,
                   delay);
    else
        show_reconnecting(s, words, delay);
    schedule(s, delay);
}

/* An answer that asking again would not change (404, 400, 403, a certificate problem). */
static void refused(log_stream *s, const char *what)
{
    if (s->ended) { /* asked again after it ended: the pod or container is gone, nothing missed */
        s->done = true;
        return;
    }
    if (!s->lines) {
        stream_failed(s);
        return;
    }
    gc_error why = {0};
    if (s->x.http.result != CURLE_OK)
        kube_transport_error(s->run->k, &s->x, &why);
    else
        kube_http_error(s->run->k, &s->x, &why);
    char text[sizeof(why.message) + 64];
    snprintf(text, sizeof(text), "%s after the stream broke failed: %s", what, why.message);
    mark_incomplete(s, text);
    s->done = true;
}

/* The log request ended without an error. */
static void ended(log_stream *s)
{
    kube_log_flush_partial(s);
    s->refreshed = false;
    s->failures = 0;
    s->located = false;
    if (s->previous) { /* the instance being read is done: now the new one, when following */
        s->previous = false;
        if (following(s))
            follow_new_instance(s);
        else
            s->done = true;
        return;
    }
    /* Lines without time stamps (not from a kubelet) cannot be asked for again without
     * repeating them. */
    if (!following(s) || !s->run->keep_going || (s->lines && !s->positioned)) {
        s->done = true;
        return;
    }
    /* The container exited (it may restart), or the API server ended the stream: ask again,
     * less often while nothing new comes. */
    s->ended = true;
    s->ended_streak = s->progressed ? 1 : s->ended_streak + 1;
    long delay = 500L << (s->ended_streak < 5 ? s->ended_streak - 1 : 4);
    schedule(s, delay < ENDED_RETRY_MAX_MS ? delay : ENDED_RETRY_MAX_MS);
}

/* --- which instance --------------------------------------------------------------------- */

static bool started_at(const json_t *state, const char *which, long long *sec)
{
    const char *t = json_string_value(json_object_get(json_object_get(state, which), "startedAt"));
    time_t v;
    if (!t || !gc_clock_parse_rfc3339(t, &v))
        return false;
    *sec = (long long)v;
    return true;
}

static const json_t *container_status(const json_t *pod, const char *name)
{
    const json_t *status = json_object_get(pod, "status");
    static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(status, lists[l]), i, c)
        {
            const char *n = json_string_value(json_object_get(c, "name"));
            if (!name || !name[0] || (n && !strcmp(n, name)))
                return c;
        }
    }
    return NULL;
}

enum instance { SAME_INSTANCE, PREVIOUS_INSTANCE, OLDER_INSTANCE };

/* Which instance of the container wrote a line at second `at`. A plain log request reads the
 * running instance (or, while the container waits to restart, the last one that ended);
 * previous=true the one before. Start times have whole seconds, so a restart within the second
 * of the last line counts as the same instance. */
static enum instance instance_of(const json_t *cs, long long at)
{
    long long cur = 0, prev = 0;
    const json_t *state = json_object_get(cs, "state");
    bool have_cur = started_at(state, "running", &cur) || started_at(state, "terminated", &cur);
    bool have_prev = started_at(json_object_get(cs, "lastState"), "terminated", &prev);
    if (!have_prev || (have_cur && at >= cur))
        return SAME_INSTANCE;
    if (at >= prev)
        return have_cur ? PREVIOUS_INSTANCE : SAME_INSTANCE;
    return OLDER_INSTANCE;
}

/* The pod's answer before a resume: which log to ask for, or that there is none. */
static void located(log_stream *s)
{
    json_t *pod = NULL;
    gc_error ignored = {0};
    if (kube_decode_body(&s->x, &pod, &ignored)) {
        broke(s);
        return;
    }
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
        s->final = true; /* nothing more will come: read the rest and end */
    enum instance which = instance_of(container_status(pod, s->src->container), s->last.sec);
    json_decref(pod);
    s->located = true;
    if (which == PREVIOUS_INSTANCE) {
        kube_trace(s->run->k, "%s restarted; reading its previous instance to its end", s->name);
        s->previous = true;
    } else if (which == OLDER_INSTANCE) {
        mark_incomplete(s, "the container restarted more than once while its stream was broken, "
                           "and the kubelet keeps only the last instance's log");
        if (!following(s)) {
            s->done = true;
            return;
        }
        follow_new_instance(s);
        return;
    }
    schedule(s, 0);
}

/* --- the loop --------------------------------------------------------------------------- */

static void finish_attempt(log_stream *s, CURLcode result)
{
    gc_kube *k = s->run->k;
    bool locating = s->locating;
    stop_stream(s, result);
    s->locating = false;
    const gc_http_transfer *h = &s->x.http;
    if (s->run->stop) {
        s->done = true;
    } else if (h->result == CURLE_OK && h->status == 401 && !s->refreshed &&
               kube_auth_refreshable(k)) {
        s->refreshed = true;
        kube_auth_rejected(k, s->x.credential);
        schedule(s, 0);
    } else if (h->result == CURLE_OK && h->status >= 200 && h->status < 300) {
        if (s->run->noticed && (locating || s->progressed)) {
            s->run->noticed = false;
            gc_notice(events(s), "log stream %s: reconnected", s->name);
        }
        if (locating)
            located(s);
        else
            ended(s);
    } else if (s->stalled || kube_reconnectable(&s->x)) {
        broke(s);
    } else {
        refused(s, locating ? "reading the pod" : "asking for the log again");
    }
}

static void drain_messages(logs_run *run)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(run->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        log_stream *s = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
        finish_attempt(s, msg->data.result);
    }
}

static bool pending(const log_stream *s)
{
    return !s->done && !s->failed;
}

/* A stream went silent: its connection may be dead without a word, and with HTTP/2 every
 * stream shares it and libcurl would hand it out again. So every stream starts over on fresh
 * connections (resuming where it was), and the stalled ones count it as a failure. */
static void reset_connections(logs_run *run)
{
    for (size_t i = 0; i < run->count; i++) {
        log_stream *s = &run->streams[i];
        if (!s->running)
            continue;
        if (s->stalled) {
            finish_attempt(s, CURLE_OPERATION_TIMEDOUT);
            continue;
        }
        stop_stream(s, CURLE_OK);
        gc_buf_reset(&s->partial);
        s->locating = s->located = false;
        schedule(s, 0);
    }
    curl_multi_cleanup(run->multi);
    run->multi = curl_multi_init();
    curl_multi_setopt(run->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    run->opener = NULL;
    run->room = 0;
}

/* Whether a stream may start now: not while the first of a wave is still connecting (see
 * STREAMS_PER_CONNECTION). A stream that has sent its request is past connecting. */
static bool may_start(logs_run *run)
{
    if (run->opener && run->opener->running) {
        curl_off_t sent = 0;
        curl_easy_getinfo(run->opener->e, CURLINFO_PRETRANSFER_TIME_T, &sent);
        if (!sent)
            return false;
    }
    run->opener = NULL;
    return true;
}

static void started(logs_run *run, log_stream *s)
{
    if (!run->room) {
        run->opener = s;
        run->room = STREAMS_PER_CONNECTION;
    }
    run->room--;
}

/* A stream about to start for the first time takes one of the open places, and its line
 * buffer. */
static void admit(log_stream *s)
{
    if (s->admitted)
        return;
    s->admitted = true;
    s->run->open++;
    gc_buf_init(&s->partial);
}

/* An ended stream gives its place to the next, and its memory back: only its counts and its
 * error stay for the report. */
static void release(log_stream *s)
{
    if (!s->admitted)
        return;
    s->admitted = false;
    s->run->open--;
    gc_buf_free(&s->partial);
    kube_exchange_free(&s->x);
}

/* Starts streams whose time has come (while fewer than max_open are open), and ends attempts that
 * received nothing for their stall limit. Returns ms until the next start or stall check, at most
 * POLL_MS. */
static int start_due(logs_run *run, gc_error *err, int *rc)
{
    long long now = gc_clock_ms(), next = now + POLL_MS;
    bool stalled = false;
    for (size_t i = 0; i < run->count; i++)
        if (!pending(&run->streams[i]))
            release(&run->streams[i]);
    for (size_t i = 0; i < run->count && !*rc; i++) {
        log_stream *s = &run->streams[i];
        if (!pending(s))
            continue;
        long long due = s->running ? (s->stall_ms ? s->last_bytes + s->stall_ms : 0) : s->start_at;
        if (!due || (!s->admitted && run->open >= run->max_open))
            continue;
        if (due > now) {
            next = due < next ? due : next;
        } else if (s->running) {
            s->stalled = stalled = true;
        } else if (!may_start(run)) {
            next = now + WAVE_POLL_MS < next ? now + WAVE_POLL_MS : next;
        } else {
            *rc = kube_auth_ensure(run->k, err);
            if (!*rc) {
                admit(s);
                start_attempt(s);
                started(run, s);
            }
        }
    }
    if (stalled) {
        reset_connections(run);
        next = now;
    }
    return (int)(next - now);
}

/* The caller stops following: connected streams end here (they are up to date); a stream
 * waiting to resume after a break reads what is left once more, without following. */
static void end_following(logs_run *run)
{
    run->following = false;
    for (size_t i = 0; i < run->count; i++) {
        log_stream *s = &run->streams[i];
        if (!pending(s))
            continue;
        if (s->running && !s->locating) {
            stop_stream(s, CURLE_OK);
            kube_log_flush_partial(s);
            s->done = true;
        } else if (s->ended && !s->running) {
            s->done = true;
        } else {
            s->final = true;
        }
    }
}

static bool all_finished(const logs_run *run)
{
    for (size_t i = 0; i < run->count; i++)
        if (pending(&run->streams[i]))
            return false;
    return true;
}

static int run_streams(logs_run *run, gc_error *err)
{
    long long last_poll = gc_clock_ms();
    int rc = 0;
    while (!rc && !run->stop && !all_finished(run)) {
        int running = 0;
        curl_multi_perform(run->multi, &running);
        drain_messages(run);
        if (run->following && run->keep_going && gc_clock_ms() - last_poll >= POLL_MS) {
            last_poll = gc_clock_ms();
            if (!run->keep_going(run->ctx))
                end_following(run);
        }
        int wait = start_due(run, err, &rc);
        if (!rc && !run->stop && !all_finished(run))
            kube_multi_wait(run->multi, &run->pace, wait);
    }
    return rc;
}

/* Incomplete streams make an error naming them; streams that never started are skipped with a
 * notice, or are the error when every stream is one. */
static int report(logs_run *run, gc_error *err)
{
    size_t failed = 0, incomplete = 0;
    const log_stream *first = NULL, *first_incomplete = NULL;
    for (size_t i = 0; i < run->count; i++) {
        const log_stream *s = &run->streams[i];
        if (s->incomplete && !incomplete++)
            first_incomplete = s;
        if (s->failed && !failed++)
            first = s;
    }
    for (size_t i = 0; i < run->count; i++) {
        const log_stream *s = &run->streams[i];
        if (s->failed && failed < run->count)
            gc_notice(run->k->trace.events, "no logs from %s: %s", s->name, s->error->message);
    }
    if (incomplete) {
        *err = *first_incomplete->error;
        if (incomplete > 1)
            gc_error_prefix(err, "%zu of %zu log streams are incomplete; the first: ", incomplete,
                            run->count);
        return GC_EXIT_INCOMPLETE;
    }
    if (failed && failed == run->count) {
        *err = *first->error;
        if (run->count > 1)
            gc_error_prefix(err, "none of the %zu log streams could be read; the first (%s) said: ",
                            run->count, first->name);
        return err->code ? err->code : GC_EXIT_RUNTIME;
    }
    return 0;
}

int gc_kube_logs(gc_kube *kube, const gc_kube_log_source *sources, size_t count,
                 const gc_kube_log_options *opts, gc_kube_log_line_fn on_line,
                 gc_kube_log_continue_fn keep_going, void *ctx, gc_error *err)
{
    if (!count)
        return 0;
    int rc = kube_auth_ensure(kube, err);
    if (rc)
        return rc;
    logs_run run = {.k = kube,
                    .multi = curl_multi_init(),
                    .count = count,
                    .opts = opts ? *opts : (gc_kube_log_options){.tail_lines = -1},
                    .on_line = on_line,
                    .keep_going = keep_going,
                    .ctx = ctx};
    if (run.opts.stall_seconds <= 0)
        run.opts.stall_seconds = DEFAULT_STALL_S;
    run.following = run.opts.follow;
    run.max_open = run.opts.follow ? count : MAX_OPEN_STREAMS;
    curl_multi_setopt(run.multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    run.streams = gc_xcalloc(count, sizeof(*run.streams));
    long long now = gc_clock_ms();
    for (size_t i = 0; i < count; i++) {
        log_stream *s = &run.streams[i];
        const gc_kube_log_source *src = &sources[i];
        const char *ns = src->ns ? src->ns : kube->ns;
        *s = (log_stream){.run = &run, .index = i, .src = src, .original = true, .start_at = now};
        s->name = gc_xasprintf("%s/%s", src->pod, src->container ? src->container : "");
        s->pod_path = gc_kube_path(NULL, "v1", ns, "pods", src->pod);
        s->log_path = gc_xasprintf("%s/log", s->pod_path);
    }
    rc = run_streams(&run, err);
    for (size_t i = 0; i < count; i++)
        stop_stream(&run.streams[i], CURLE_OK);
    if (!rc)
        rc = report(&run, err);
    for (size_t i = 0; i < count; i++) {
        log_stream *s = &run.streams[i];
        gc_buf_free(&s->partial);
        kube_exchange_free(&s->x);
        free(s->error);
        free(s->name);
        free(s->pod_path);
        free(s->log_path);
    }
    free(run.streams);
    curl_multi_cleanup(run.multi);
    return rc;
}
