/*
 * Opening a port-forward tunnel over the client's real TLS connection and credentials, against
 * the scripted loopback HTTPS server: the WebSocket upgrade and the fall back to SPDY, what the
 * requests carry (and what their -v trace does not show), the answers that end it (a missing pod,
 * RBAC, rejected credentials, no server); and the background reads a poll loop runs beside its
 * own descriptors. The bytes of a working tunnel are tested against the real API-server and
 * kubelet code in the peer tier.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/portforward.h"
#include "gcluster/sys.h"
#include "kube/tunnel/internal.h"
#include "kube_test.h"
#include "test_events.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define POD_PATH "/api/v1/namespaces/ns1/pods/p-0/portforward"
#define WAIT_MS  20000

static kube_test_env *env;
static gc_kube *kube;
static test_events events;

static int open_client(void **state)
{
    env = *state;
    if (kube_test_env_reset(state))
        return -1;
    test_events_init(&events);
    return kube_test_open_client(&env->server, &env->pki, env->tmp, &events.events, 2, &kube);
}

static int close_client(void **state)
{
    (void)state;
    gc_kube_close(kube);
    test_events_free(&events);
    return 0;
}

static int open_tunnel(gc_kube_tunnel **t, gc_error *err)
{
    gc_tunnel_options o = {
        .pod = "p-0", .port = 29000, .deadline_ms = gc_clock_ms() + WAIT_MS, .cancel_fd = -1};
    return kube_tunnel_open(kube, &o, t, err);
}

static const char *header(json_t *log, size_t i, const char *name)
{
    return json_string_value(
        json_object_get(json_object_get(json_array_get(log, i), "headers"), name));
}

static const char *field(json_t *log, size_t i, const char *name)
{
    return json_string_value(json_object_get(json_array_get(log, i), name));
}

#define FORBIDDEN                                                                                  \
    "{'status': 403, 'json': {'kind': 'Status', 'status': 'Failure', 'reason': 'Forbidden', "      \
    "'code': 403, 'message': 'pods \\\"p-0\\\" is forbidden: cannot get resource "                 \
    "\\\"pods/portforward\\\"'}}"

/* RBAC that predates the WebSocket tunnel (create, no get) refuses the GET; the SPDY POST is
 * what kubectl falls back to, and it works. Both carry the credential; neither trace shows it. */
static void test_websocket_refused_falls_back_to_spdy(void **state)
{
    kube_test_env_script(env, "{'GET " POD_PATH "': [" FORBIDDEN "],"
                              " 'POST " POD_PATH "': [{'status': 101, 'headers': {"
                              "'Connection': 'Upgrade', 'Upgrade': 'SPDY/3.1',"
                              " 'X-Stream-Protocol-Version': 'portforward.k8s.io'}}]}");
    (void)state;
    gc_kube_tunnel *t;
    gc_error err = {0};
    if (open_tunnel(&t, &err))
        fail_msg("%s", err.message);
    assert_string_equal(kube_tunnel_kind_name(t), "SPDY");
    assert_int_equal(kube_tunnel_count(t), 0);
    assert_true(kube_tunnel_accepting(t));
    kube_tunnel_close(t);

    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 2);
    assert_string_equal(field(log, 0, "method"), "GET");
    assert_string_equal(field(log, 0, "query"), "ports=29000");
    assert_string_equal(header(log, 0, "upgrade"), "websocket");
    assert_string_equal(header(log, 0, "sec-websocket-protocol"), "SPDY/3.1+portforward.k8s.io");
    assert_string_equal(header(log, 0, "authorization"), "Bearer tok");
    assert_string_equal(field(log, 1, "method"), "POST");
    assert_string_equal(header(log, 1, "upgrade"), "SPDY/3.1");
    assert_string_equal(header(log, 1, "x-stream-protocol-version"), "portforward.k8s.io");
    assert_string_equal(header(log, 1, "authorization"), "Bearer tok");
    json_decref(log);

    assert_int_equal(test_events_count(&events, "> Authorization: Bearer <redacted>"), 2);
    assert_int_equal(test_events_count(&events, "Bearer tok"), 0);
    assert_int_equal(test_events_count(&events, "-> 403 Forbidden ("), 1);
    assert_int_equal(test_events_count(&events, "-> 101 Switching Protocols ("), 1);
    assert_int_equal(test_events_count(&events, "SPDY tunnel)"), 1);
    assert_int_equal(test_events_count(&events, "trace: < HTTP/1.1 101 Switching Protocols"), 1);
}

static void test_missing_pod_is_not_retried(void **state)
{
    (void)state;
    kube_test_env_script(env, "{'GET " POD_PATH "': [{'status': 404, 'json': {'kind': 'Status',"
                              " 'status': 'Failure', 'reason': 'NotFound', 'code': 404,"
                              " 'message': 'pods \\\"p-0\\\" not found'}}]}");
    gc_kube_tunnel *t;
    gc_error err = {0};
    assert_int_equal(open_tunnel(&t, &err), GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 404);
    assert_string_equal(err.message, "pods \"p-0\" not found");
    assert_null(t);
    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 1);
    json_decref(log);
}

static void test_refused_both_ways_names_the_rbac_rule(void **state)
{
    (void)state;
    kube_test_env_script(env, "{'GET " POD_PATH "': [" FORBIDDEN "], 'POST " POD_PATH
                              "': [" FORBIDDEN "]}");
    gc_kube_tunnel *t;
    gc_error err = {0};
    assert_int_equal(open_tunnel(&t, &err), GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 403);
    assert_true(kube_test_contains(err.message, "forwarding a port needs RBAC permission to "
                                                "create pods/portforward in namespace ns1"));
}

/* A 101 whose answer is not the WebSocket asked for (a proxy answering instead of the API
 * server) is not trusted: SPDY is tried, and here refused too. */
static void test_wrong_websocket_answer(void **state)
{
    (void)state;
    kube_test_env_script(env, "{'GET " POD_PATH "': [{'status': 101, 'headers': {"
                              "'Connection': 'Upgrade', 'Upgrade': 'websocket',"
                              " 'Sec-WebSocket-Accept': 'bm90IHRoZSByaWdodCBrZXk='}}],"
                              " 'POST " POD_PATH "': [" FORBIDDEN "]}");
    gc_kube_tunnel *t;
    gc_error err = {0};
    assert_int_equal(open_tunnel(&t, &err), GC_EXIT_RUNTIME);
    assert_int_equal(test_events_count(&events, "the WebSocket upgrade failed (the API server's "
                                                "WebSocket answer does not match the key sent"),
                     1);
    assert_int_equal(err.http_status, 403);
}

static void test_no_server(void **state)
{
    (void)state;
    char *path = gc_xasprintf("%s/closed-kubeconfig", env->tmp);
    kube_test_server closed = env->server;
    snprintf(closed.url, sizeof(closed.url), "https://127.0.0.1:%d", kube_test_closed_port());
    kube_test_write_kubeconfig(path, &closed, env->pki.ca, "ns1");
    gc_kube *other;
    gc_error err = {0};
    assert_int_equal(gc_kube_open(&(gc_kube_options){.kubeconfig = path}, &other, &err), 0);
    gc_tunnel_options o = {
        .pod = "p-0", .port = 29000, .deadline_ms = gc_clock_ms() + WAIT_MS, .cancel_fd = -1};
    gc_kube_tunnel *t;
    assert_int_equal(kube_tunnel_open(other, &o, &t, &err), GC_EXIT_RUNTIME);
    assert_true(kube_test_contains(err.message, "cannot reach the API server"));
    gc_kube_close(other);
    free(path);
}

/* --- background reads ----------------------------------------------------------------------- */

static void test_background_reads_beside_the_callers_fds(void **state)
{
    (void)state;
    kube_test_env_script(env, "{'GET /apis/x.io/v1/namespaces/ns1/things/a': [{'json': "
                              "{'kind': 'Thing', 'metadata': {'name': 'a'}}}],"
                              " 'GET /api/v1/namespaces/ns1/pods': [{'when': {'labelSelector': "
                              "'app=x'}, 'json': {'kind': 'PodList', 'items': [{'metadata': "
                              "{'name': 'p-1'}}]}}]}");
    json_t *thing = NULL, *pods = NULL, *missing = NULL;
    gc_kube_list_options selector = {.label_selector = "app=x"};
    gc_kube_read reads[] = {
        {.path = "/apis/x.io/v1/namespaces/ns1/things/a", .object = &thing},
        {.path = "/api/v1/namespaces/ns1/pods", .opts = &selector, .object = &pods},
        {.path = "/api/v1/namespaces/ns1/pods/nope", .object = &missing},
    };
    gc_kube_background *b = gc_kube_background_new(kube);
    gc_error err = {0};
    assert_int_equal(gc_kube_background_start(b, reads, 3, &err), 0);
    assert_int_equal(gc_kube_background_start(b, reads, 3, &err), GC_EXIT_RUNTIME);

    int fds[2];
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(write(fds[1], "x", 1), 1);
    struct pollfd mine = {.fd = fds[0], .events = POLLIN};
    long long deadline = gc_clock_ms() + WAIT_MS;
    bool saw_mine = false;
    while (!gc_kube_background_done(b)) {
        assert_true(gc_clock_ms() < deadline);
        int n = gc_kube_background_poll(b, &mine, 1, 100);
        assert_true(n >= 0);
        saw_mine = saw_mine || (mine.revents & POLLIN);
    }
    assert_true(saw_mine);
    assert_int_equal(reads[0].rc, 0);
    assert_string_equal(json_string_value(json_object_get(thing, "kind")), "Thing");
    assert_int_equal(reads[1].rc, 0);
    assert_int_equal(json_array_size(json_object_get(pods, "items")), 1);
    assert_int_equal(reads[2].rc, GC_EXIT_RUNTIME);
    assert_int_equal(reads[2].err.http_status, 404);
    assert_null(missing);
    json_decref(thing);
    json_decref(pods);

    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 3);
    json_decref(log);
    gc_kube_background_free(b);
    close(fds[0]);
    close(fds[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_websocket_refused_falls_back_to_spdy, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_missing_pod_is_not_retried, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_refused_both_ways_names_the_rbac_rule, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_wrong_websocket_answer, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_no_server, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_background_reads_beside_the_callers_fds, open_client,
                                        close_client),
    };
    return cmocka_run_group_tests(tests, kube_test_env_setup, kube_test_env_teardown);
}
