/*
 * The port-forward session against the real Kubernetes code: tests/kube/portforward-peer runs
 * the kube-apiserver's pods/portforward handlers (the WebSocket-to-SPDY tunneling handler and
 * the upgrade-aware proxy) in front of the kubelet's port-forward server, whose pod port 29000
 * echoes until the client half-closes. First the session on a plain TCP socket (both tunnel
 * kinds, many connections at once, half-close, the kubelet's error text, PING, a polite close, a
 * refused upgrade); then the whole client, gc_kube_tunnel on libcurl, opened from a kubeconfig
 * like any request, with the same echo and half-close end to end (testenv's kwok does not pass a
 * half-close on, so this is where it is proven).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/portforward.h"
#include "gcluster/process.h"
#include "gcluster/sys.h"
#include "kube/tunnel/internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUILD_TIMEOUT_MS 280000 /* a first build compiles the Kubernetes libraries */
#define WAIT_MS          20000  /* any one exchange with the peer */
#define POD_PATH         "/api/v1/namespaces/ns/pods/p-0/portforward?ports=29000"
#define CONNS            24
#define PAYLOAD          (96 * 1024)

typedef struct peer {
    pid_t pid;
    int stdin_fd; /* the peer exits when this closes */
    int port;
    char log_path[64]; /* the peer's stderr (Kubernetes' own log lines) */
} peer;

static peer P;

/* --- the peer process --------------------------------------------------------------------- */

static int start_peer(void **state)
{
    (void)state;
    char *argv[] = {GCLUSTER_SOURCE_DIR "/tests/kube/build-portforward-peer", NULL};
    gc_process build = {.argv = argv, .timeout_ms = BUILD_TIMEOUT_MS};
    gc_process_result r;
    gc_error err = {0};
    if (gc_process_run(&build, &r, &err) != 0 || !gc_process_succeeded(&r)) {
        char why[1024];
        gc_process_explain(&r, &build, why, sizeof(why));
        fprintf(stderr, "tests/kube/build-portforward-peer %s (needs Go and the module proxy)\n",
                why);
        gc_process_result_free(&r);
        return -1;
    }
    char *binary = gc_xstrndup(r.out.data, strcspn(r.out.data, "\n"));
    gc_process_result_free(&r);

    int in[2], out[2];
    if (pipe(in) || pipe(out))
        return -1;
    snprintf(P.log_path, sizeof(P.log_path), "/tmp/gcluster-portforward-peer-%d.log",
             (int)getpid());
    int log_fd = open(P.log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log_fd < 0)
        return -1;
    P.pid = fork();
    if (P.pid < 0)
        return -1;
    if (P.pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* dies with the test, however the test ends */
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        close(in[1]);
        close(out[0]);
        execl(binary, binary, (char *)NULL);
        _exit(127);
    }
    free(binary);
    close(log_fd);
    close(in[0]);
    close(out[1]);
    P.stdin_fd = in[1];
    /* The peer prints "127.0.0.1:PORT" once it listens. */
    char line[64] = "";
    size_t len = 0;
    long long deadline = gc_clock_ms() + WAIT_MS;
    while (!strchr(line, '\n') && len < sizeof(line) - 1 && gc_clock_ms() < deadline) {
        struct pollfd pfd = {.fd = out[0], .events = POLLIN};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        ssize_t n = read(out[0], line + len, sizeof(line) - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        line[len] = '\0';
    }
    close(out[0]);
    const char *colon = strrchr(line, ':');
    P.port = colon ? atoi(colon + 1) : 0;
    if (P.port <= 0) {
        fprintf(stderr,
                "the port-forward peer did not say where it listens (said \"%s\"); see %s\n", line,
                P.log_path);
        return -1;
    }
    return 0;
}

static int stop_peer(void **state)
{
    (void)state;
    if (P.pid <= 0)
        return 0;
    close(P.stdin_fd);
    long long deadline = gc_clock_ms() + 5000;
    while (waitpid(P.pid, NULL, WNOHANG) == 0) {
        if (gc_clock_ms() > deadline) {
            kill(P.pid, SIGKILL);
            waitpid(P.pid, NULL, 0);
            break;
        }
        usleep(10000);
    }
    unlink(P.log_path);
    return 0;
}

/* --- a plain socket transport ------------------------------------------------------------- */

typedef struct tunnel {
    int fd;
    kube_pf *pf;
    bool eof;
    int feed_rc;
    gc_error err;
    /* per connection: what came back, whether it ended, and how */
    gc_buf received[CONNS];
    bool opened[CONNS], peer_fin[CONNS], closed[CONNS];
    char close_text[CONNS][512];
    int pongs;
} tunnel;

static void on_event(void *ctx, const kube_pf_event *ev)
{
    tunnel *t = ctx;
    if (ev->type == KUBE_PF_PONG) {
        t->pongs++;
        return;
    }
    assert_true(ev->conn < CONNS);
    switch (ev->type) {
    case KUBE_PF_OPENED:
        t->opened[ev->conn] = true;
        break;
    case KUBE_PF_DATA:
        gc_buf_append(&t->received[ev->conn], ev->data, ev->len);
        break;
    case KUBE_PF_PEER_FIN:
        t->peer_fin[ev->conn] = true;
        break;
    case KUBE_PF_CLOSED:
        t->closed[ev->conn] = true;
        snprintf(t->close_text[ev->conn], sizeof(t->close_text[0]), "%s", ev->text ? ev->text : "");
        break;
    default:
        fail_msg("unexpected event %d", ev->type);
    }
}

static int dial(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)P.port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

static void write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        assert_true(n > 0);
        p += n;
        len -= (size_t)n;
    }
}

/* Sends the upgrade request for `path` and reads the answer head; bytes after it are left in
 * `rest`. */
static void upgrade(int fd, kube_tunnel_kind kind, const char *path, const char *key,
                    kube_http_head *head, gc_buf *rest)
{
    static const char *const lines[] = {"User-Agent: gcluster-test", NULL};
    gc_buf req;
    gc_buf_init(&req);
    kube_pf_upgrade_request(&req, kind, "127.0.0.1", path, lines, key);
    write_all(fd, req.data, req.len);
    gc_buf_free(&req);
    long long deadline = gc_clock_ms() + WAIT_MS;
    long head_len = 0;
    while (!head_len) {
        assert_true(gc_clock_ms() < deadline);
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        char chunk[4096];
        ssize_t n = read(fd, chunk, sizeof(chunk));
        assert_true(n > 0);
        gc_buf_append(rest, chunk, (size_t)n);
        head_len = kube_http_head_length(rest->data, rest->len);
        assert_true(head_len >= 0);
    }
    gc_error err = {0};
    assert_int_equal(kube_http_head_parse(head, rest->data, (size_t)head_len, &err), 0);
    memmove(rest->data, rest->data + head_len, rest->len - (size_t)head_len + 1);
    rest->len -= (size_t)head_len;
}

static void tunnel_open(tunnel *t, kube_tunnel_kind kind, uint16_t port)
{
    memset(t, 0, sizeof(*t));
    for (int i = 0; i < CONNS; i++)
        gc_buf_init(&t->received[i]);
    t->fd = dial();
    char key[KUBE_WS_KEY_LEN + 1];
    kube_ws_key(key);
    kube_http_head head;
    gc_buf rest;
    gc_buf_init(&rest);
    upgrade(t->fd, kind, POD_PATH, key, &head, &rest);
    gc_error err = {0};
    if (kube_pf_upgrade_check(&head, kind, key, &err))
        fail_msg("the upgrade failed: %s", err.message);
    kube_http_head_free(&head);
    t->pf = kube_pf_new(kind, port, on_event, t);
    if (rest.len)
        assert_int_equal(kube_pf_feed(t->pf, rest.data, rest.len, &t->err), 0);
    gc_buf_free(&rest);
}

static void tunnel_close(tunnel *t)
{
    kube_pf_free(t->pf);
    close(t->fd);
    for (int i = 0; i < CONNS; i++)
        gc_buf_free(&t->received[i]);
}

/* Moves bytes both ways until `done(t)` holds, the peer ends the connection, or the session
 * ends; fails after WAIT_MS. */
static void run_until(tunnel *t, bool (*done)(const tunnel *t))
{
    long long deadline = gc_clock_ms() + WAIT_MS;
    while (!done(t) && !t->eof && !t->feed_rc) {
        if (gc_clock_ms() > deadline)
            fail_msg("the exchange with the port-forward peer did not finish in %d ms; see %s",
                     WAIT_MS, P.log_path);
        size_t pending;
        kube_pf_output(t->pf, &pending);
        struct pollfd pfd = {.fd = t->fd, .events = POLLIN | (pending ? POLLOUT : 0)};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        if (pfd.revents & POLLOUT) {
            const uint8_t *out = kube_pf_output(t->pf, &pending);
            ssize_t n = send(t->fd, out, pending, MSG_NOSIGNAL);
            if (n > 0)
                kube_pf_output_done(t->pf, (size_t)n);
        }
        if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
            uint8_t chunk[65536];
            ssize_t n = read(t->fd, chunk, sizeof(chunk));
            if (n <= 0) {
                t->eof = true;
                kube_pf_eof(t->pf, "the peer closed the connection");
            } else {
                t->feed_rc = kube_pf_feed(t->pf, chunk, (size_t)n, &t->err);
            }
        }
    }
}

static int conns_in_use;

static bool all_closed(const tunnel *t)
{
    for (int i = 0; i < conns_in_use; i++)
        if (!t->closed[i])
            return false;
    return true;
}

static bool got_pong(const tunnel *t)
{
    return t->pongs > 0;
}

static bool never(const tunnel *t)
{
    (void)t;
    return false;
}

static void pattern(uint8_t *buf, size_t len, int conn)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 7 + (size_t)conn * 13 + i / 251);
}

/* Opens a forwarded connection and queues `text` on it. */
static uint32_t open_and_send(tunnel *t, const char *text)
{
    gc_error err = {0};
    uint32_t id;
    assert_int_equal(kube_pf_open(t->pf, NULL, &id, &err), 0);
    assert_int_equal(kube_pf_send(t->pf, id, text, strlen(text), &err), 0);
    return id;
}

/* --- tests -------------------------------------------------------------------------------- */

/* Many connections at once, each sending its own bytes and half-closing; the echo answers
 * with exactly those bytes, then the kubelet ends both streams. */
static void echo_many(kube_tunnel_kind kind, int conns)
{
    tunnel t;
    tunnel_open(&t, kind, 29000);
    conns_in_use = conns;
    uint8_t *payload = malloc(PAYLOAD);
    gc_error err = {0};
    for (int i = 0; i < conns; i++) {
        uint32_t id;
        assert_int_equal(kube_pf_open(t.pf, NULL, &id, &err), 0);
        assert_int_equal(id, (uint32_t)i);
        pattern(payload, PAYLOAD, i);
        assert_int_equal(kube_pf_send(t.pf, id, payload, PAYLOAD, &err), 0);
        assert_int_equal(kube_pf_shutdown(t.pf, id, &err), 0);
    }
    run_until(&t, all_closed);
    if (t.feed_rc)
        fail_msg("the session ended: %s", t.err.message);
    for (int i = 0; i < conns; i++) {
        assert_true(t.opened[i]);
        assert_true(t.peer_fin[i]);
        assert_string_equal(t.close_text[i], "");
        pattern(payload, PAYLOAD, i);
        assert_int_equal(t.received[i].len, PAYLOAD);
        assert_memory_equal(t.received[i].data, payload, PAYLOAD);
    }
    assert_int_equal(kube_pf_count(t.pf), 0);
    free(payload);
    tunnel_close(&t);
}

static void websocket_tunnel_echoes_many_connections(void **state)
{
    (void)state;
    echo_many(KUBE_TUNNEL_WEBSOCKET, CONNS);
}

static void direct_spdy_echoes_many_connections(void **state)
{
    (void)state;
    echo_many(KUBE_TUNNEL_SPDY, 8);
}

static void bytes_sent_before_the_answer_arrive_in_order(void **state)
{
    (void)state;
    tunnel t;
    tunnel_open(&t, KUBE_TUNNEL_WEBSOCKET, 29000);
    conns_in_use = 1;
    gc_error err = {0};
    /* Sent before the kubelet answered: held, then delivered in order. */
    uint32_t id = open_and_send(&t, "first ");
    assert_int_equal(kube_pf_send(t.pf, id, "second", 6, &err), 0);
    assert_int_equal(kube_pf_shutdown(t.pf, id, &err), 0);
    run_until(&t, all_closed);
    assert_string_equal(t.received[id].data, "first second");
    assert_true(t.peer_fin[id]);
    assert_string_equal(t.close_text[id], "");
    tunnel_close(&t);
}

static void kubelet_error_text_arrives(void **state)
{
    (void)state;
    tunnel t;
    tunnel_open(&t, KUBE_TUNNEL_WEBSOCKET, 1); /* nothing answers port 1 in the pod */
    conns_in_use = 2;
    for (int i = 0; i < 2; i++)
        open_and_send(&t, "hello?");
    run_until(&t, all_closed);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(t.received[i].len, 0);
        if (!strstr(t.close_text[i], "error forwarding port 1 to pod p-0") ||
            !strstr(t.close_text[i], "connection refused"))
            fail_msg("connection %d closed with \"%s\"", i, t.close_text[i]);
    }
    tunnel_close(&t);
}

static void pings_reach_the_kubelet(void **state)
{
    (void)state;
    tunnel t;
    tunnel_open(&t, KUBE_TUNNEL_WEBSOCKET, 29000);
    kube_pf_ping(t.pf);
    run_until(&t, got_pong);
    assert_int_equal(t.pongs, 1);
    tunnel_close(&t);
}

static void closing_politely_ends_the_connection(void **state)
{
    (void)state;
    tunnel t;
    tunnel_open(&t, KUBE_TUNNEL_WEBSOCKET, 29000);
    conns_in_use = 1;
    open_and_send(&t, "x");
    kube_pf_close(t.pf);
    /* GOAWAY and the WebSocket close make the API server end the connection: it answers the
     * close (the session reports it) or just hangs up. */
    run_until(&t, never);
    assert_true(t.eof || t.feed_rc);
    if (t.feed_rc)
        assert_non_null(strstr(t.err.message, "closed the port-forward tunnel (code 1000"));
    tunnel_close(&t);
}

static void refused_upgrades_are_plain_answers(void **state)
{
    (void)state;
    int fd = dial();
    char key[KUBE_WS_KEY_LEN + 1];
    kube_ws_key(key);
    kube_http_head head;
    gc_buf rest;
    gc_buf_init(&rest);
    upgrade(fd, KUBE_TUNNEL_WEBSOCKET, "/api/v1/namespaces/ns/pods/gone/portforward?ports=29000",
            key, &head, &rest);
    gc_error err = {0};
    assert_int_equal(kube_pf_upgrade_check(&head, KUBE_TUNNEL_WEBSOCKET, key, &err),
                     GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 404);
    assert_string_equal(kube_http_head_get(&head, "content-type"), "application/json");
    kube_http_head_free(&head);
    gc_buf_free(&rest);
    close(fd);
}

/* --- the whole client: gc_kube_tunnel ----------------------------------------------------- */

typedef struct forwarded {
    gc_kube_tunnel *t;
    gc_buf received[CONNS];
    bool opened[CONNS], peer_fin[CONNS], closed[CONNS];
    char close_text[CONNS][512];
} forwarded;

static void on_tunnel_event(void *ctx, const gc_tunnel_event *ev)
{
    forwarded *f = ctx;
    size_t i = (size_t)(uintptr_t)ev->user;
    assert_true(i < CONNS);
    switch (ev->type) {
    case GC_TUNNEL_OPENED:
        f->opened[i] = true;
        break;
    case GC_TUNNEL_DATA:
        gc_buf_append(&f->received[i], ev->data, ev->len);
        break;
    case GC_TUNNEL_PEER_FIN:
        f->peer_fin[i] = true;
        break;
    case GC_TUNNEL_CLOSED:
        f->closed[i] = true;
        snprintf(f->close_text[i], sizeof(f->close_text[0]), "%s", ev->text ? ev->text : "");
        break;
    }
}

/* A client of the peer's API server, from a kubeconfig as a user would have it (plain HTTP:
 * the peer has no TLS; the cluster tier runs the same over TLS). */
static gc_kube *peer_client(char path[64])
{
    snprintf(path, 64, "/tmp/gcluster-portforward-peer-%d.kubeconfig", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "apiVersion: v1\nkind: Config\ncurrent-context: peer\n"
            "clusters:\n- name: peer\n  cluster: {server: \"http://127.0.0.1:%d\"}\n"
            "contexts:\n- name: peer\n  context: {cluster: peer, user: peer, namespace: ns}\n"
            "users:\n- name: peer\n  user: {}\n",
            P.port);
    fclose(f);
    gc_kube *kube;
    gc_error err = {0};
    if (gc_kube_open(&(gc_kube_options){.kubeconfig = path}, &kube, &err))
        fail_msg("%s", err.message);
    return kube;
}

static bool all_forwarded_closed(const forwarded *f, int conns)
{
    for (int i = 0; i < conns; i++)
        if (!f->closed[i])
            return false;
    return true;
}

static void tunnel_echoes_and_half_closes(void **state)
{
    (void)state;
    char path[64];
    gc_kube *kube = peer_client(path);
    forwarded f;
    memset(&f, 0, sizeof(f));
    for (int i = 0; i < CONNS; i++)
        gc_buf_init(&f.received[i]);
    gc_tunnel_options o = {.pod = "p-0",
                           .port = 29000,
                           .deadline_ms = gc_clock_ms() + WAIT_MS,
                           .cancel_fd = -1,
                           .on_event = on_tunnel_event,
                           .ctx = &f};
    gc_error err = {0};
    if (kube_tunnel_open(kube, &o, &f.t, &err))
        fail_msg("%s; see %s", err.message, P.log_path);
    assert_string_equal(kube_tunnel_kind_name(f.t), "WebSocket");
    uint8_t *payload = malloc(PAYLOAD);
    for (int i = 0; i < CONNS; i++) {
        uint32_t id;
        assert_int_equal(kube_tunnel_connect(f.t, (void *)(uintptr_t)i, &id, &err), 0);
        pattern(payload, PAYLOAD, i);
        assert_int_equal(kube_tunnel_send(f.t, id, payload, PAYLOAD, &err), 0);
        assert_int_equal(kube_tunnel_shutdown(f.t, id, &err), 0);
    }
    long long deadline = gc_clock_ms() + WAIT_MS;
    while (!all_forwarded_closed(&f, CONNS)) {
        if (gc_clock_ms() > deadline)
            fail_msg("the forwarded connections did not end in %d ms; see %s", WAIT_MS, P.log_path);
        struct pollfd p = {.fd = kube_tunnel_fd(f.t), .events = kube_tunnel_poll_events(f.t)};
        int timeout = kube_tunnel_timeout_ms(f.t);
        poll(&p, 1, timeout < 100 ? timeout : 100);
        if (kube_tunnel_pump(f.t, p.revents, &err))
            fail_msg("the tunnel ended: %s", err.message);
    }
    for (int i = 0; i < CONNS; i++) {
        assert_true(f.opened[i]);
        assert_true(f.peer_fin[i]); /* the echo saw our end of file, and ended its side */
        assert_string_equal(f.close_text[i], "");
        pattern(payload, PAYLOAD, i);
        assert_int_equal(f.received[i].len, PAYLOAD);
        assert_memory_equal(f.received[i].data, payload, PAYLOAD);
        gc_buf_free(&f.received[i]);
    }
    assert_int_equal(kube_tunnel_count(f.t), 0);
    free(payload);
    kube_tunnel_close(f.t);
    gc_kube_close(kube);
    unlink(path);
}

static void tunnel_to_a_missing_pod_says_so(void **state)
{
    (void)state;
    char path[64];
    gc_kube *kube = peer_client(path);
    gc_tunnel_options o = {
        .pod = "gone", .port = 29000, .deadline_ms = gc_clock_ms() + WAIT_MS, .cancel_fd = -1};
    gc_kube_tunnel *t;
    gc_error err = {0};
    assert_int_equal(kube_tunnel_open(kube, &o, &t, &err), GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 404);
    gc_kube_close(kube);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(websocket_tunnel_echoes_many_connections),
        cmocka_unit_test(direct_spdy_echoes_many_connections),
        cmocka_unit_test(bytes_sent_before_the_answer_arrive_in_order),
        cmocka_unit_test(kubelet_error_text_arrives),
        cmocka_unit_test(pings_reach_the_kubelet),
        cmocka_unit_test(closing_politely_ends_the_connection),
        cmocka_unit_test(refused_upgrades_are_plain_answers),
        cmocka_unit_test(tunnel_echoes_and_half_closes),
        cmocka_unit_test(tunnel_to_a_missing_pod_says_so),
    };
    return cmocka_run_group_tests(tests, start_peer, stop_peer);
}
