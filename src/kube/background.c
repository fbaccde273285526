/*
 * Background reads (see gcluster/kube.h): GETs on a multi handle of their own, moved along
 * while gc_kube_background_poll waits on the caller's file descriptors and theirs together.
 *
 * The multi handle lives as long as the object, so its connections (one per GET of a round,
 * kube_multi_new) serve the next rounds too. libcurl's sockets are found with
 * curl_multi_fdset, which only reports descriptors below FD_SETSIZE; one above it (a process with
 * a thousand open connections) is still served, by the timeout that libcurl's own timers and the
 * 100 ms wait below give the poll.
 */
#include "gcluster/kube.h"

#include "kube/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NO_SOCKET_WAIT_MS 100 /* libcurl has no socket to wait on yet (resolving, a backoff) */

typedef struct background_read {
    gc_kube_read *read;
    const char *query[6];
    kube_request req;
    kube_exchange x;
    CURL *e;
    bool done;
} background_read;

struct gc_kube_background {
    gc_kube *k;
    CURLM *multi;
    background_read *reads;
    size_t count;
    size_t pending;
    kube_multi_pace pace; /* the waits of gc_kube_background_poll */
};

gc_kube_background *gc_kube_background_new(gc_kube *kube)
{
    gc_kube_background *b = gc_xcalloc(1, sizeof(*b));
    b->k = kube;
    b->multi = kube_multi_new();
    return b;
}

static void end_read(gc_kube_background *b, background_read *r)
{
    if (r->e) {
        curl_multi_remove_handle(b->multi, r->e);
        curl_easy_cleanup(r->e);
        r->e = NULL;
    }
    kube_exchange_free(&r->x);
    r->done = true;
}

static void end_round(gc_kube_background *b)
{
    for (size_t i = 0; i < b->count; i++) {
        background_read *r = &b->reads[i];
        if (r->done)
            continue;
        if (r->e) /* abandoned under way: the layer still holds its request headers */
            kube_exchange_end(b->k, &r->x, CURLE_ABORTED_BY_CALLBACK);
        end_read(b, r);
    }
    free(b->reads);
    b->reads = NULL;
    b->count = b->pending = 0;
}

void gc_kube_background_free(gc_kube_background *b)
{
    if (!b)
        return;
    end_round(b);
    if (b->multi)
        curl_multi_cleanup(b->multi);
    free(b);
}

bool gc_kube_background_done(const gc_kube_background *b)
{
    return b->pending == 0;
}

static void start_read(gc_kube_background *b, background_read *r, gc_kube_read *read)
{
    r->read = read;
    size_t n = 0;
    const gc_kube_list_options *opts = read->opts;
    if (opts && opts->label_selector && opts->label_selector[0]) {
        r->query[n++] = "labelSelector";
        r->query[n++] = opts->label_selector;
    }
    if (opts && opts->field_selector && opts->field_selector[0]) {
        r->query[n++] = "fieldSelector";
        r->query[n++] = opts->field_selector;
    }
    r->req = (kube_request){.method = "GET",
                            .path = read->path,
                            .extra = r->query,
                            .accept = opts ? opts->accept : NULL,
                            .idempotent = true};
    kube_exchange_init(&r->x, &r->req);
    read->rc = 0;
    gc_error_clear(&read->err);
    if (read->object)
        *read->object = NULL;
    r->e = curl_easy_init();
    if (!r->e) {
        read->rc = gc_fail(&read->err, GC_EXIT_RUNTIME, "cannot create a libcurl handle");
        end_read(b, r);
        return;
    }
    kube_exchange_start(b->k, &r->x, r->e);
    curl_easy_setopt(r->e, CURLOPT_PRIVATE, (void *)r);
    curl_multi_add_handle(b->multi, r->e);
    b->pending++;
}

int gc_kube_background_start(gc_kube_background *b, gc_kube_read *reads, size_t count,
                             gc_error *err)
{
    if (b->pending)
        return gc_fail(err, GC_EXIT_RUNTIME, "background reads are still under way");
    if (!b->multi)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot create a libcurl multi handle");
    end_round(b);
    int rc = kube_auth_ensure(b->k, err);
    if (rc)
        return rc;
    b->reads = gc_xcalloc(count, sizeof(*b->reads));
    b->count = count;
    for (size_t i = 0; i < count; i++)
        start_read(b, &b->reads[i], &reads[i]);
    int running;
    curl_multi_perform(b->multi, &running);
    return 0;
}

/* How a read ended, in its rc, err and object. */
static void finish_read(gc_kube_background *b, background_read *r, CURLcode result)
{
    gc_kube_read *read = r->read;
    kube_exchange_end(b->k, &r->x, result);
    if (r->x.http.result != CURLE_OK) {
        read->rc = kube_transport_error(b->k, &r->x, &read->err);
    } else if (r->x.http.status >= 300) {
        if (r->x.http.status == 401)
            kube_auth_rejected(b->k, r->x.credential);
        read->rc = kube_http_error(b->k, &r->x, &read->err);
    } else {
        read->rc = kube_decode_body(&r->x, read->object, &read->err);
    }
    end_read(b, r);
    b->pending--;
}

static void advance(gc_kube_background *b)
{
    int running;
    curl_multi_perform(b->multi, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(b->multi, &left))) {
        background_read *r = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        if (msg->msg == CURLMSG_DONE && r && !r->done)
            finish_read(b, r, msg->data.result);
    }
}

/* libcurl's sockets and what it waits for on each. */
typedef struct curl_wait {
    fd_set rd, wr, ex;
    int max_fd;
    size_t count;
} curl_wait;

static short wanted(const curl_wait *w, int fd)
{
    return (short)((FD_ISSET(fd, &w->rd) ? POLLIN : 0) | (FD_ISSET(fd, &w->wr) ? POLLOUT : 0) |
                   (FD_ISSET(fd, &w->ex) ? POLLPRI : 0));
}

static void curl_wants(gc_kube_background *b, curl_wait *w, int *timeout_ms)
{
    FD_ZERO(&w->rd);
    FD_ZERO(&w->wr);
    FD_ZERO(&w->ex);
    w->max_fd = -1;
    curl_multi_fdset(b->multi, &w->rd, &w->wr, &w->ex, &w->max_fd);
    long curl_timeout = -1;
    curl_multi_timeout(b->multi, &curl_timeout);
    if (w->max_fd < 0 && (curl_timeout < 0 || curl_timeout > NO_SOCKET_WAIT_MS))
        curl_timeout = NO_SOCKET_WAIT_MS;
    if (curl_timeout >= 0 && (*timeout_ms < 0 || curl_timeout < *timeout_ms))
        *timeout_ms = (int)curl_timeout;
    w->count = 0;
    for (int fd = 0; fd <= w->max_fd; fd++)
        w->count += wanted(w, fd) != 0;
}

int gc_kube_background_poll(gc_kube_background *b, struct pollfd *fds, size_t count, int timeout_ms)
{
    if (!b->pending)
        return poll(fds, count, timeout_ms);
    curl_wait w;
    curl_wants(b, &w, &timeout_ms);
    timeout_ms = kube_pace_wait(&b->pace, timeout_ms);
    struct pollfd *all = gc_xcalloc(count + w.count, sizeof(*all));
    if (count)
        memcpy(all, fds, count * sizeof(*fds));
    size_t total = count;
    for (int fd = 0; fd <= w.max_fd; fd++)
        if (wanted(&w, fd))
            all[total++] = (struct pollfd){.fd = fd, .events = wanted(&w, fd)};
    int n = poll(all, total, timeout_ms);
    int saved = errno;
    int mine = 0;
    for (size_t i = 0; i < count; i++) {
        fds[i].revents = all[i].revents;
        mine += all[i].revents != 0;
    }
    bool curl_busy = false;
    for (size_t i = count; i < total; i++)
        curl_busy = curl_busy || all[i].revents;
    kube_pace_waited(&b->pace, curl_busy);
    free(all);
    advance(b);
    if (n < 0) {
        errno = saved;
        return -1;
    }
    return mine;
}
