/*
 * The HTTP request layer against the scripted loopback server (tests/unit/support/test_server.py):
 * methods and bodies as sent, responses into a buffer or a callback, the headers of the answer,
 * and the -v trace, which must never show a credential.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/http.h"
#include "gcluster/sys.h"
#include "kube_test.h"
#include "run_cli.h"
#include "sys/internal.h"
#include "test_events.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* One request to the test server, trusting its CA. */
static void perform(const kube_test_env *env, gc_http_transfer *t, const gc_http_request *req)
{
    gc_error err = {0};
    assert_int_equal(gc_http_init(&err), 0);
    CURL *e = curl_easy_init();
    assert_non_null(e);
    gc_http_start(t, e, req);
    curl_easy_setopt(e, CURLOPT_CAINFO, env->pki.ca);
    gc_http_finish(t, curl_easy_perform(e));
    curl_easy_cleanup(e);
}

static char *url(const kube_test_env *env, const char *path_and_query)
{
    return gc_xasprintf("%s%s", env->server.url, path_and_query);
}

/* The one request the server recorded (the caller decrefs the log). */
static json_t *only_request(kube_test_env *env, json_t **log)
{
    *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(*log), 1);
    return json_array_get(*log, 0);
}

static const char *request_field(json_t *r, const char *key)
{
    return json_string_value(json_object_get(r, key));
}

static const char *request_header(json_t *r, const char *name)
{
    return json_string_value(json_object_get(json_object_get(r, "headers"), name));
}

static void get_into_a_buffer_with_the_answers_headers(void **state)
{
    kube_test_env *env = *state;
    kube_test_env_script(
        env, "{'GET /things': [{'headers': {'X-Thing': 'seven', 'Docker-Content-Digest': "
             "'sha256:abc'}, 'json': {'n': 7}}]}");
    char *u = url(env, "/things?a=1");
    const char *headers[] = {"Accept: application/json", "X-Asked: yes", NULL};
    gc_http_request req = {.method = "GET", .url = u, .headers = headers};
    gc_http_transfer t;
    gc_http_transfer_init(&t);
    perform(env, &t, &req);
    assert_int_equal(t.result, CURLE_OK);
    assert_int_equal(t.status, 200);
    assert_true(t.sent);
    assert_string_equal(t.body.data, "{\"n\": 7}");
    assert_string_equal(gc_http_header(&t, "x-thing"), "seven");
    assert_string_equal(gc_http_header(&t, "Content-Type"), "application/json");
    assert_string_equal(gc_http_header(&t, "docker-content-digest"), "sha256:abc");
    assert_null(gc_http_header(&t, "X-Missing"));
    json_t *log;
    json_t *r = only_request(env, &log);
    assert_string_equal(request_field(r, "method"), "GET");
    assert_string_equal(request_field(r, "query"), "a=1");
    assert_string_equal(request_header(r, "x-asked"), "yes");
    assert_string_equal(request_header(r, "accept"), "application/json");
    assert_null(request_header(r, "expect"));
    json_decref(log);
    gc_http_transfer_free(&t);
    free(u);
}

/* A streamed body: the letters a to z, as libcurl asks for them. */
static size_t alphabet(char *buf, size_t size, void *ctx)
{
    size_t *offset = ctx;
    size_t n = 0;
    while (n < size && *offset < 26)
        buf[n++] = (char)('a' + (*offset)++);
    return n;
}

static void bodies_from_memory_and_from_a_callback(void **state)
{
    kube_test_env *env = *state;
    kube_test_env_script(env,
                         "{'PATCH /m': [{'json': {}}], 'PUT /r': [{'status': 201, 'body': ''}], "
                         "'POST /empty': [{'json': {}}]}");
    char *u = url(env, "/m");
    gc_http_body memory = {.data = "{\"a\":1}", .len = 7, .content_type = "application/json"};
    gc_http_request req = {.method = "PATCH", .url = u, .body = &memory};
    gc_http_transfer t;
    gc_http_transfer_init(&t);
    perform(env, &t, &req);
    assert_int_equal(t.status, 200);
    free(u);

    u = url(env, "/r");
    size_t offset = 0;
    gc_http_body streamed = {
        .read = alphabet, .read_ctx = &offset, .size = 26, .content_type = "text/plain"};
    req = (gc_http_request){.method = "PUT", .url = u, .body = &streamed};
    perform(env, &t, &req);
    assert_int_equal(t.status, 201);
    free(u);

    u = url(env, "/empty");
    req = (gc_http_request){.method = "POST", .url = u};
    perform(env, &t, &req);
    assert_int_equal(t.status, 200);
    free(u);

    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 3);
    json_t *patch = json_array_get(log, 0), *put = json_array_get(log, 1),
           *post = json_array_get(log, 2);
    assert_string_equal(request_field(patch, "method"), "PATCH");
    assert_string_equal(request_field(patch, "body"), "{\"a\":1}");
    assert_string_equal(request_header(patch, "content-type"), "application/json");
    assert_string_equal(request_field(put, "method"), "PUT");
    assert_string_equal(request_field(put, "body"), "abcdefghijklmnopqrstuvwxyz");
    assert_string_equal(request_header(put, "content-type"), "text/plain");
    assert_string_equal(request_field(post, "body"), "");
    /* Not libcurl's default form type: these bodies are no forms. */
    assert_null(request_header(post, "content-type"));
    json_decref(log);
    gc_http_transfer_free(&t);
}

typedef struct received {
    gc_buf data;
    int calls;
    int stop_after; /* 0: never stop */
} received;

static bool on_data(const char *data, size_t len, void *ctx)
{
    received *r = ctx;
    gc_buf_append(&r->data, data, len);
    return !r->stop_after || ++r->calls < r->stop_after;
}

static void data_callback_limits_and_stopping(void **state)
{
    kube_test_env *env = *state;
    kube_test_env_script(
        env, "{'GET /stream': [{'chunks': [{'data': 'one,'}, {'data': 'two,', 'delay': 0.05}, "
             "{'data': 'three', 'delay': 0.05}]}, {'chunks': [{'data': 'a'}, {'data': 'b', "
             "'delay': 0.05}], 'hold': 30}], "
             "'GET /missing': [{'status': 404, 'body': 'no such thing'}], "
             "'GET /big': [{'body': '0123456789012345678901234567890123456789'}]}");
    char *u = url(env, "/stream");
    received got = {0};
    gc_buf_init(&got.data);
    gc_http_request req = {.method = "GET", .url = u, .on_data = on_data, .ctx = &got};
    gc_http_transfer t;
    gc_http_transfer_init(&t);
    perform(env, &t, &req);
    assert_int_equal(t.result, CURLE_OK);
    assert_string_equal(got.data.data, "one,two,three");
    assert_int_equal(t.body.len, 0);

    /* The callback ends a stream the server would hold open: not an error. */
    gc_buf_reset(&got.data);
    got.stop_after = 2;
    perform(env, &t, &req);
    assert_int_equal(t.result, CURLE_OK);
    assert_true(t.stopped);
    assert_string_equal(got.data.data, "ab");
    free(u);

    /* An error answer is kept for the message, not handed to the callback. */
    u = url(env, "/missing");
    gc_buf_reset(&got.data);
    req.url = u;
    perform(env, &t, &req);
    assert_int_equal(t.status, 404);
    assert_string_equal(t.body.data, "no such thing");
    assert_int_equal(got.data.len, 0);
    free(u);

    u = url(env, "/big");
    req = (gc_http_request){.method = "GET", .url = u, .body_max = 16};
    perform(env, &t, &req);
    assert_true(t.too_large);
    assert_int_not_equal(t.result, CURLE_OK);
    free(u);
    gc_buf_free(&got.data);
    gc_http_transfer_free(&t);
}

static void one_trace_line_per_request(void **state)
{
    kube_test_env *env = *state;
    kube_test_env_script(env,
                         "{'GET /a': [{'json': {}}], 'DELETE /b': [{'status': 404, 'json': {}}]}");
    test_events ev;
    test_events_init(&ev);
    gc_http_trace trace = {.events = &ev.events, .verbose = 1};
    char *a = url(env, "/a?labelSelector=app%3Dx"), *b = url(env, "/b");
    gc_http_request req = {.method = "GET", .url = a, .trace = &trace};
    gc_http_transfer t;
    gc_http_transfer_init(&t);
    perform(env, &t, &req);
    req = (gc_http_request){.method = "DELETE", .url = b, .trace = &trace};
    perform(env, &t, &req);
    char *want =
        gc_xasprintf("trace: GET %s/a?labelSelector=app%%3Dx -> 200 OK (", env->server.url);
    assert_int_equal(test_events_count(&ev, want), 1);
    free(want);
    want = gc_xasprintf("trace: DELETE %s/b -> 404 Not Found (", env->server.url);
    assert_int_equal(test_events_count(&ev, want), 1);
    free(want);
    assert_int_equal(test_events_count(&ev, "\n"), 2); /* nothing else at -v */
    assert_int_equal(test_events_count(&ev, "new connection"), 2);
    test_events_free(&ev);
    gc_http_transfer_free(&t);
    free(a);
    free(b);
}

/* -v -v shows headers and bodies, and no credential: not a bearer token, not Basic
 * credentials, not a password in the URL, not a cookie, not secrets in bodies or queries. */
static void traces_at_two_redact_every_credential(void **state)
{
    kube_test_env *env = *state;
    kube_test_env_script(
        env, "{'POST /login': [{'headers': {'Set-Cookie': 'session=SECRET-COOKIE; HttpOnly', "
             "'X-Visible': 'shown-header'}, 'json': {'token': 'SECRET-ANSWER-TOKEN', 'user': "
             "'shown-user'}}], 'GET /basic': [{'body': 'Authorization: Basic SECRET-ECHOED'}]}");
    test_events ev;
    test_events_init(&ev);
    gc_http_trace trace = {.events = &ev.events, .verbose = 2};
    char *login = gc_xasprintf("https://alice:SECRET-URL-PASSWORD@127.0.0.1:%d/login?"
                               "access_token=SECRET-QUERY-TOKEN&labelSelector=app%%3Dshown",
                               env->server.port);
    const char *bearer[] = {"Authorization: Bearer SECRET-BEARER-TOKEN", "Cookie: id=SECRET-SENT",
                            NULL};
    static const char body[] = "{\"user\":\"shown-body\",\"password\":\"SECRET-BODY-PASSWORD\","
                               "\"env\":[{\"name\":\"API_KEY\",\"value\":\"SECRET-ENV\"}]}";
    gc_http_body json = {.data = body, .len = strlen(body), .content_type = "application/json"};
    gc_http_request req = {
        .method = "POST", .url = login, .headers = bearer, .body = &json, .trace = &trace};
    gc_http_transfer t;
    gc_http_transfer_init(&t);
    perform(env, &t, &req);
    assert_int_equal(t.status, 200);

    char *basic_value = gc_base64_encode("bob:SECRET-BASIC-PASSWORD", 25);
    char *basic = gc_xasprintf("Authorization: Basic %s", basic_value);
    const char *basic_headers[] = {basic, NULL};
    char *u = url(env, "/basic");
    req = (gc_http_request){.method = "GET", .url = u, .headers = basic_headers, .trace = &trace};
    perform(env, &t, &req);
    assert_int_equal(t.status, 200);

    const char *log = ev.lines.data;
    static const char *const secrets[] = {"SECRET-URL-PASSWORD",  "SECRET-QUERY-TOKEN",
                                          "SECRET-BEARER-TOKEN",  "SECRET-SENT",
                                          "SECRET-BODY-PASSWORD", "SECRET-ENV",
                                          "SECRET-COOKIE",        "SECRET-ANSWER-TOKEN",
                                          "SECRET-ECHOED",        "SECRET-BASIC-PASSWORD"};
    for (size_t i = 0; i < sizeof(secrets) / sizeof(*secrets); i++)
        if (strstr(log, secrets[i]))
            fail_msg("%s leaked into the trace:\n%s", secrets[i], log);
    assert_null(strstr(log, basic_value));
    /* ...while everything else is there to read. */
    char *line = gc_xasprintf("trace: > POST https://<redacted>@127.0.0.1:%d/login?"
                              "access_token=<redacted>&labelSelector=app%%3Dshown\n",
                              env->server.port);
    assert_int_equal(test_events_count(&ev, line), 1);
    free(line);
    assert_int_equal(test_events_count(&ev, "trace: > Authorization: Bearer <redacted>\n"), 1);
    assert_int_equal(test_events_count(&ev, "trace: > Authorization: Basic <redacted>\n"), 1);
    assert_int_equal(test_events_count(&ev, "trace: > Cookie: <redacted>\n"), 1);
    assert_int_equal(test_events_count(&ev, "trace: < Set-Cookie: <redacted>\n"), 1);
    assert_int_equal(test_events_count(&ev, "trace: < X-Visible: shown-header\n"), 1);
    assert_int_equal(test_events_count(&ev, "trace: > Content-Type: application/json\n"), 1);
    assert_non_null(strstr(log, "shown-body"));
    assert_non_null(strstr(log, "shown-user"));
    assert_non_null(strstr(log, "labelSelector=app%3Dshown"));
    assert_int_equal(test_events_count(&ev, " -> 200 OK ("), 2);
    /* The server did get what the trace hides. */
    json_t *requests = kube_test_server_log(&env->server);
    json_t *first = json_array_get(requests, 0);
    assert_string_equal(request_header(first, "authorization"), "Bearer SECRET-BEARER-TOKEN");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(first, "params"), "access_token")),
        "SECRET-QUERY-TOKEN");
    json_decref(requests);
    test_events_free(&ev);
    gc_http_transfer_free(&t);
    free(u);
    free(basic);
    free(basic_value);
    free(login);
}

static void urls_are_redacted(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"https://h:6443/api?limit=5", "https://h:6443/api?limit=5"},
        {"https://u:p@h/x", "https://<redacted>@h/x"},
        {"https://TOKEN@h", "https://<redacted>@h"},
        {"http://h/up?_state=abc&digest=sha256:1", "http://h/up?_state=<redacted>&digest=sha256:1"},
        {"https://s/o?X-Goog-Signature=1&X-Goog-Credential=2&sig=3&key=4&keep=5",
         "https://s/o?X-Goog-Signature=<redacted>&X-Goog-Credential=<redacted>&sig=<redacted>"
         "&key=<redacted>&keep=5"},
        {"https://h/p?a=1#fragment", "https://h/p?a=1"},
        {"https://h/p@q", "https://h/p@q"},
        {"/v2/x?token=t", "/v2/x?token=<redacted>"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *shown = gc_http_redact_url(cases[i][0]);
        if (strcmp(shown, cases[i][1]))
            fail_msg("%s shown as %s, not %s", cases[i][0], shown, cases[i][1]);
        free(shown);
    }
}

static void bodies_are_redacted(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"{\"kind\":\"Secret\",\"data\":{\"a\":\"c2VjcmV0\"},\"metadata\":{\"name\":\"s\"}}",
         "{\"kind\":\"Secret\",\"data\":\"<redacted>\",\"metadata\":{\"name\":\"s\"}}"},
        {"{\"client-key-data\":\"x\",\"tokenFile\":\"/t\",\"auth\":\"y\"}",
         "{\"client-key-data\":\"<redacted>\",\"tokenFile\":\"/t\",\"auth\":\"<redacted>\"}"},
        {"a\n-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\nb",
         "a\n<redacted>\nb"},
        {"Authorization: Bearer abc.def\x01", "Authorization: Bearer <redacted>"},
        {"{not json: Bearer x", "{not json: Bearer <redacted>"},
        /* A server's message that quotes the request's Authorization header. */
        {"{\"kind\":\"Status\",\"message\":\"bad header Authorization: Bearer tok.en-1\"}",
         "{\"kind\":\"Status\",\"message\":\"bad header Authorization: Bearer <redacted>\"}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *shown = sys_http_redact_body(cases[i][0], strlen(cases[i][0]), 4096);
        if (strcmp(shown, cases[i][1]))
            fail_msg("%s shown as %s, not %s", cases[i][0], shown, cases[i][1]);
        free(shown);
    }
    char *cut = sys_http_redact_body("abcdefghij", 10, 4);
    assert_string_equal(cut, "abcd... (10 bytes)");
    free(cut);
}

/* libcurl is loaded when first needed; one that lacks what gcluster calls is an error that
 * says what to install, not a crash. zlib stands in for such a library here. */
static void a_libcurl_without_its_functions_is_an_error(void **state)
{
    const kube_test_env *env = *state;
    Dl_info zlib;
    assert_true(dladdr((void *)zlibVersion, &zlib) && zlib.dli_fname);
    char *dir = gc_xasprintf("%s/not-libcurl", env->tmp);
    char *fake = gc_xasprintf("%s/libcurl.so.4", dir);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(symlink(zlib.dli_fname, fake), 0);
    char *library_path = gc_xasprintf("LD_LIBRARY_PATH=%s", dir);
    const char *args[] = {"job", "list", NULL};
    const char *env_vars[] = {library_path, "HOME=/nonexistent-home-for-tests", NULL};
    cli_result r;
    run_cli(&r, args, env_vars);
    assert_int_equal(r.exit_code, 1);
    assert_string_equal(r.err.data,
                        "gcluster: error: libcurl.so.4 has no curl_global_init; libcurl "
                        "7.80 or newer is needed (install Debian's libcurl4 package)\n");
    cli_result_free(&r);
    free(library_path);
    free(fake);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(get_into_a_buffer_with_the_answers_headers, kube_test_env_reset),
        cmocka_unit_test_setup(bodies_from_memory_and_from_a_callback, kube_test_env_reset),
        cmocka_unit_test_setup(data_callback_limits_and_stopping, kube_test_env_reset),
        cmocka_unit_test_setup(one_trace_line_per_request, kube_test_env_reset),
        cmocka_unit_test_setup(traces_at_two_redact_every_credential, kube_test_env_reset),
        cmocka_unit_test(urls_are_redacted),
        cmocka_unit_test(bodies_are_redacted),
        cmocka_unit_test(a_libcurl_without_its_functions_is_an_error),
    };
    return cmocka_run_group_tests(tests, kube_test_env_setup, kube_test_env_teardown);
}
