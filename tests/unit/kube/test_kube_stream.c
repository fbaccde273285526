/*
 * Lists in pages, list+watch (resume, bookmarks, 410 re-list, timeout) and multiplexed pod
 * logs, against the scripted loopback HTTPS server; and streams that outlive their connections:
 * log streams resumed from their last line's time stamp with the repeated lines dropped (after
 * a cut, a stall, a container restart), a resume that cannot be made, and watches that
 * reconnect with backoff, re-list through failures and give up only at the caller's timeout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/kube.h"
#include "kube/internal.h"
#include "kube_test.h"
#include "test_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH "/api/v1/namespaces/ns1/configmaps"

static kube_test_env *env; /* the program's directory, PKI and scripted server */
static gc_kube *kube;
static test_events notices; /* what the client reported */

static int setup(void **state)
{
    int rc = kube_test_env_setup(state);
    env = *state;
    setenv("HOME", env->tmp, 1);
    return rc;
}

/* A fresh client and an empty server for every test. */
static int open_client(void **state)
{
    if (kube_test_env_reset(state))
        return -1;
    test_events_init(&notices);
    return kube_test_open_client(&env->server, &env->pki, env->tmp, &notices.events, 1, &kube);
}

static int close_client(void **state)
{
    (void)state;
    gc_kube_close(kube);
    test_events_free(&notices);
    return 0;
}

static void script(const char *text)
{
    kube_test_env_script(env, text);
}

static const char *param(json_t *log, size_t i, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_array_get(log, i), "params"), key));
}

/* Collects "kind/name" of every item, or "EVENT name" for watch events. */
typedef struct seen {
    gc_buf names;
    int stop_after; /* return GC_KUBE_STOP after this many; 0: never */
    int count;
    const char *stop_on; /* stop at the event with this text */
} seen;

static int on_item(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    seen *s = ctx;
    const char *kind = json_string_value(json_object_get(item, "kind"));
    const char *name =
        json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
    gc_buf_printf(&s->names, "%s/%s ", kind ? kind : "?", name ? name : "?");
    return ++s->count == s->stop_after ? GC_KUBE_STOP : 0;
}

static void test_list_pages(void **state)
{
    (void)state;
    script("{'GET " PATH "': ["
           "{'when': {'continue': null}, 'json': {'kind': 'ConfigMapList', 'apiVersion': 'v1', "
           "'metadata': {'resourceVersion': '77', 'continue': 'c1'}, 'items': [{'metadata': "
           "{'name': 'a'}}, {'metadata': {'name': 'b'}}]}},"
           "{'when': {'continue': 'c1'}, 'json': {'kind': 'ConfigMapList', 'metadata': "
           "{'resourceVersion': '77', 'continue': 'c2'}, 'items': [{'metadata': {'name': 'c'}}, "
           "{'metadata': {'name': 'd'}}]}},"
           "{'when': {'continue': 'c2'}, 'json': {'kind': 'ConfigMapList', 'metadata': "
           "{'resourceVersion': '77'}, 'items': [{'metadata': {'name': 'e'}}]}}]}");
    seen s = {0};
    gc_buf_init(&s.names);
    char rv[64] = "";
    gc_error err;
    gc_kube_list_options opts = {.label_selector = "app=x", .page_size = 2};
    assert_int_equal(gc_kube_list(kube, PATH, &opts, on_item, &s, rv, &err), 0);
    assert_string_equal(s.names.data,
                        "ConfigMap/a ConfigMap/b ConfigMap/c ConfigMap/d ConfigMap/e ");
    assert_string_equal(rv, "77");
    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 3);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(param(log, i, "limit"), "2");
        assert_string_equal(param(log, i, "labelSelector"), "app=x");
    }
    assert_null(param(log, 0, "continue"));
    assert_string_equal(param(log, 2, "continue"), "c2");
    json_decref(log);
    gc_buf_free(&s.names);
}

static void test_list_restarts_on_expired_continue(void **state)
{
    (void)state;
    script("{'GET " PATH "': ["
           "{'when': {'continue': null}, 'json': {'kind': 'ConfigMapList', 'metadata': "
           "{'continue': 'old'}, 'items': [{'metadata': {'name': 'a'}}]}},"
           "{'when': {'continue': 'old'}, 'status': 410, 'json': {'kind': 'Status', 'code': 410, "
           "'reason': 'Expired', 'message': 'The provided continue parameter is too old'}},"
           "{'when': {'continue': null}, 'json': {'kind': 'ConfigMapList', 'metadata': "
           "{'continue': 'new', 'resourceVersion': '90'}, 'items': [{'metadata': {'name': "
           "'a'}}]}},"
           "{'when': {'continue': 'new'}, 'json': {'kind': 'ConfigMapList', 'metadata': "
           "{'resourceVersion': '90'}, 'items': [{'metadata': {'name': 'b'}}]}}]}");
    seen s = {0};
    gc_buf_init(&s.names);
    char rv[64];
    gc_error err;
    gc_kube_list_options opts = {.page_size = 1};
    assert_int_equal(gc_kube_list(kube, PATH, &opts, on_item, &s, rv, &err), 0);
    assert_string_equal(s.names.data, "ConfigMap/a ConfigMap/a ConfigMap/b ");
    assert_string_equal(rv, "90");
    gc_buf_free(&s.names);
}

static int failing_item(json_t *item, void *ctx, gc_error *err)
{
    (void)item, (void)ctx;
    return gc_fail(err, GC_EXIT_JOB_FAILED, "the callback said no");
}

static void test_list_stops_when_asked(void **state)
{
    (void)state;
    script("{'GET " PATH "': [{'repeat': true, 'json': {'kind': 'ConfigMapList', 'metadata': "
           "{'continue': 'more'}, 'items': [{'metadata': {'name': 'a'}}, {'metadata': {'name': "
           "'b'}}]}}]}");
    seen s = {.stop_after = 1};
    gc_buf_init(&s.names);
    gc_error err;
    assert_int_equal(gc_kube_list(kube, PATH, NULL, on_item, &s, NULL, &err), 0);
    assert_string_equal(s.names.data, "ConfigMap/a ");
    assert_int_equal(gc_kube_request_count(kube), 1);
    assert_int_equal(gc_kube_list(kube, PATH, NULL, failing_item, NULL, NULL, &err),
                     GC_EXIT_JOB_FAILED);
    assert_string_equal(err.message, "the callback said no");
    gc_buf_free(&s.names);

    /* A list that fails says why. */
    assert_int_equal(
        gc_kube_list(kube, "/api/v1/namespaces/ns1/nothing", NULL, on_item, &s, NULL, &err),
        GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 404);
}

/* Queues one list answer streamed in `chunks` (NULL-terminated), each sent `delay` seconds after
 * the one before, cut off without its end when `abort` is set. */
/* Scripts the server with `doc` (released). */
static void script_doc(json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    if (!kube_test_server_script(&env->server, text))
        fail_msg("bad script: %s", text);
    free(text);
    json_decref(doc);
}

static void script_chunked_page(const char *when_continue, const char *const *chunks, bool abort,
                                double delay)
{
    json_t *parts = json_array();
    for (size_t i = 0; chunks[i]; i++)
        json_array_append_new(parts, json_pack("{s:s, s:f}", "data", chunks[i], "delay", delay));
    json_t *answer = json_pack("{s:{s:s?}, s:o, s:b}", "when", "continue", when_continue, "chunks",
                               parts, "abort", abort);
    script_doc(json_pack("{s:[o]}", "GET " PATH, answer));
}

/* Records names, and whether a field the shape leaves out came through anyway. */
static int on_shaped_item(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    seen *s = ctx;
    const json_t *metadata = json_object_get(item, "metadata");
    gc_buf_printf(&s->names, "%s%s ", json_string_value(json_object_get(metadata, "name")),
                  json_object_get(metadata, "managedFields") ? "+managedFields" : "");
    s->count++;
    return 0;
}

/* A custom resource list: the API server writes its members in alphabetical order, so the
 * continue token comes after the items; pieces end mid-name and mid-escape. */
static void test_list_reads_items_as_they_arrive(void **state)
{
    (void)state;
    const char *page1[] = {
        "{\"apiVersion\":\"x.dev/v1\",\"items\":[{\"kind\":\"Thing\",\"metadata\":{\"na",
        "me\":\"a\",\"managedFields\":[{\"manager\":\"k\\",
        "\"]}\"}]}},{\"kind\":\"Thing\",\"metadata\":{\"name\":\"b\"}}",
        "],\"kind\":\"ThingList\",\"metadata\":{\"continue\":\"c1\",\"resourceVersion\":\"5\"}}",
        NULL};
    const char *page2[] = {"{\"items\":[{\"metadata\":{\"name\":\"c\",\"managedFields\":[]}}],"
                           "\"kind\":\"ThingList\",\"metadata\":{\"resourceVersion\":\"5\"}}",
                           NULL};
    script_chunked_page(NULL, page1, false, 0.05);
    script_chunked_page("c1", page2, false, 0.05);
    json_t *fields = json_loads("{\"metadata\": {\"name\": true}}", 0, NULL);
    seen s = {0};
    gc_buf_init(&s.names);
    char rv[64] = "";
    gc_error err;
    gc_kube_list_options opts = {.page_size = 2, .fields = fields};
    assert_int_equal(gc_kube_list(kube, PATH, &opts, on_shaped_item, &s, rv, &err), 0);
    assert_string_equal(s.names.data, "a b c ");
    assert_string_equal(rv, "5");
    assert_int_equal(gc_kube_request_count(kube), 2);

    /* Without a shape, items come whole (and get the list's kind when they have none). */
    gc_buf_reset(&s.names);
    script_chunked_page(NULL, page2, false, 0.05);
    assert_int_equal(gc_kube_list(kube, PATH, NULL, on_shaped_item, &s, NULL, &err), 0);
    assert_string_equal(s.names.data, "c+managedFields ");
    json_decref(fields);
    gc_buf_free(&s.names);
}

/* Items already handed out must not be handed out again: a page cut off after its first item
 * fails instead of being requested again; one cut off before any item is retried. */
static void test_list_page_cut_off(void **state)
{
    (void)state;
    const char *cut_after_item[] = {
        "{\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"na", NULL};
    const char *whole[] = {
        "{\"items\":[{\"metadata\":{\"name\":\"a\"}}],\"kind\":\"ThingList\",\"metadata\":{}}",
        NULL};
    script_chunked_page(NULL, cut_after_item, true, 0.05);
    script_chunked_page(NULL, whole, false, 0.05);
    seen s = {0};
    gc_buf_init(&s.names);
    gc_error err;
    assert_int_equal(gc_kube_list(kube, PATH, NULL, on_item, &s, NULL, &err), GC_EXIT_RUNTIME);
    assert_string_equal(s.names.data, "?/a ");
    assert_int_equal(gc_kube_request_count(kube), 1);
    assert_true(kube_test_contains(err.message, "GET " PATH));

    const char *cut_before_items[] = {"{\"items\":[{\"metadata\":", NULL};
    kube_test_server_reset(&env->server);
    script_chunked_page(NULL, cut_before_items, true, 0.05);
    script_chunked_page(NULL, whole, false, 0.05);
    gc_buf_reset(&s.names);
    assert_int_equal(gc_kube_list(kube, PATH, NULL, on_item, &s, NULL, &err), 0);
    assert_string_equal(s.names.data, "?/a "); /* the list's kind comes after its items */
    assert_int_equal(gc_kube_request_count(kube), 3);
    gc_buf_free(&s.names);
}

/* A consumer that collects items and can forget them (gc_kube_list_options.on_restart). */
static void forget_items(void *ctx)
{
    seen *s = ctx;
    gc_buf_reset(&s->names);
    gc_buf_puts(&s->names, "| ");
}

/* A cut after items were handed out starts the list over from its first page when the consumer
 * can forget them: the second page breaks after "b", and the consumer ends with every item once
 * (the "| " marks where it forgot). */
static void test_list_cut_restarts_for_a_consumer_that_can_forget(void **state)
{
    (void)state;
    const char *page1[] = {"{\"items\":[{\"metadata\":{\"name\":\"a\"}}],\"kind\":\"ThingList\","
                           "\"metadata\":{\"continue\":\"c1\"}}",
                           NULL};
    const char *page2_cut[] = {"{\"items\":[{\"metadata\":{\"name\":\"b\"}},{\"metadata\":{\"na",
                               NULL};
    const char *page2[] = {"{\"items\":[{\"metadata\":{\"name\":\"b\"}},{\"metadata\":{\"name\":"
                           "\"c\"}}],\"kind\":\"ThingList\",\"metadata\":{}}",
                           NULL};
    script_chunked_page(NULL, page1, false, 0);
    script_chunked_page("c1", page2_cut, true, 0.05);
    script_chunked_page(NULL, page1, false, 0);
    script_chunked_page("c1", page2, false, 0);
    seen s = {0};
    gc_buf_init(&s.names);
    gc_error err;
    gc_kube_list_options opts = {.page_size = 1, .on_restart = forget_items};
    assert_int_equal(gc_kube_list(kube, PATH, &opts, on_item, &s, NULL, &err), 0);
    assert_string_equal(s.names.data, "| ?/a ?/b ?/c ");
    assert_int_equal(gc_kube_request_count(kube), 4);
    assert_true(kube_test_contains(notices.lines.data, "the answer broke after some items"));

    /* A cut on every attempt: a bounded number of restarts, then the error. */
    kube_test_server_reset(&env->server);
    for (int i = 0; i < 5; i++)
        script_chunked_page(NULL, page2_cut, true, 0);
    gc_buf_reset(&s.names);
    unsigned before = gc_kube_request_count(kube);
    assert_int_equal(gc_kube_list(kube, PATH, &opts, on_item, &s, NULL, &err), GC_EXIT_RUNTIME);
    assert_int_equal(gc_kube_request_count(kube) - before, 4); /* the first and 3 restarts */
    assert_true(kube_test_contains(err.message, "GET " PATH));
    gc_buf_free(&s.names);
}

/* A value that never ends (a hostile or broken server) stops at 64 MiB with a clear error,
 * rather than taking all memory. */
static void test_list_item_without_end(void **state)
{
    (void)state;
    char filler[4097];
    memset(filler, 'x', sizeof(filler) - 1);
    filler[sizeof(filler) - 1] = '\0';
    json_t *doc = json_pack("{s:[{s:[{s:s}], s:s}]}", "GET " PATH, "chunks", "data",
                            "{\"items\":[{\"metadata\":{\"name\":\"", "forever", filler);
    script_doc(doc);
    seen s = {0};
    gc_buf_init(&s.names);
    gc_error err;
    assert_int_equal(gc_kube_list(kube, PATH, NULL, on_item, &s, NULL, &err), GC_EXIT_RUNTIME);
    assert_true(kube_test_contains(err.message, "a list item larger than 64 MiB"));
    assert_int_equal(s.count, 0);
    assert_int_equal(gc_kube_request_count(kube), 1);
    gc_buf_free(&s.names);
}

/* Who ended the streamed answer to request `i`: "client" or "server". */
static const char *ended_by(json_t *log, size_t i)
{
    const char *who = json_string_value(json_object_get(json_array_get(log, i), "ended_by"));
    return who ? who : "(not recorded)";
}

#define SECRETS  "/api/v1/namespaces/ns1/secrets"
#define SERVICES "/api/v1/namespaces/ns1/services"

/* Independent reads go out together: each has its own outcome (pages, a 404, a retried 503, a
 * get), and the later ones do not wait for the first: the server holds the first answer back
 * until it has all five requests (at most 30 s), and says which of the two ended the hold. */
static void test_lists_sent_together(void **state)
{
    (void)state;
    json_t *slow = json_pack(
        "{s:[{s:{s:n}, s:[{s:s, s:f, s:i}]}]}", "GET " PATH, "when", "continue", "chunks", "data",
        "{\"kind\": \"ConfigMapList\", \"metadata\": {\"continue\": \"c1\"}, \"items\": "
        "[{\"metadata\": {\"name\": \"a\"}}]}",
        "delay", 30.0, "until_requests", 5);
    script_doc(slow);
    script("{'GET " PATH "': [{'when': {'continue': 'c1'}, 'json': {'kind': 'ConfigMapList', "
           "'metadata': {}, 'items': [{'metadata': {'name': 'b'}}]}}],"
           "'GET " SERVICES "': [{'status': 503, 'json': {'kind': 'Status', 'code': 503}}, "
           "{'json': {'kind': 'ServiceList', 'metadata': {}, 'items': [{'metadata': {'name': "
           "'s'}}]}}],"
           "'GET " SERVICES "/web': [{'json': {'kind': 'Service', 'metadata': {'name': 'web'}}}]}");
    seen configmaps = {0}, secrets = {0}, services = {0};
    json_t *web = NULL, *gone = json_true(); /* a failed get leaves NULL there */
    gc_buf_init(&configmaps.names);
    gc_buf_init(&secrets.names);
    gc_buf_init(&services.names);
    gc_kube_list_options paged = {.page_size = 1};
    gc_kube_read reads[] = {
        {.path = PATH, .opts = &paged, .on_item = on_item, .ctx = &configmaps},
        {.path = SECRETS, .on_item = on_item, .ctx = &secrets},
        {.path = SERVICES, .on_item = on_item, .ctx = &services},
        {.path = SERVICES "/web", .object = &web},
        {.path = SERVICES "/gone", .object = &gone},
    };
    assert_int_equal(gc_kube_read_all(kube, reads, 5), GC_EXIT_RUNTIME);
    assert_int_equal(reads[0].rc, 0);
    assert_string_equal(configmaps.names.data, "ConfigMap/a ConfigMap/b ");
    assert_int_equal(reads[1].rc, GC_EXIT_RUNTIME);
    assert_int_equal(reads[1].err.http_status, 404);
    assert_true(kube_test_contains(reads[1].err.message, "secrets"));
    assert_int_equal(secrets.count, 0);
    assert_int_equal(reads[2].rc, 0);
    assert_string_equal(services.names.data, "Service/s ");
    assert_int_equal(reads[3].rc, 0);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(web, "metadata"), "name")), "web");
    assert_int_equal(reads[4].rc, GC_EXIT_RUNTIME);
    assert_int_equal(reads[4].err.http_status, 404);
    assert_null(gone);
    assert_int_equal(gc_kube_request_count(kube), 7); /* 5 at once, the 503's retry, page 2 */

    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 7);
    /* The other four arrived while the first answer was held back, not after it. */
    const json_t *first = NULL;
    for (size_t i = 0; !first && i < json_array_size(log); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(log, i), "path")), PATH))
            first = json_array_get(log, i);
    assert_non_null(first);
    assert_string_equal(json_string_value(json_object_get(first, "waited_for")), "requests");
    json_decref(log);
    json_decref(web);
    gc_buf_free(&configmaps.names);
    gc_buf_free(&secrets.names);
    gc_buf_free(&services.names);
}

static void test_list_that_is_not_json(void **state)
{
    (void)state;
    json_t *doc =
        json_pack("{s:[{s:s}]}", "GET " PATH, "body", "{\"items\": [{\"metadata\": {]}]}");
    script_doc(doc);
    seen s = {0};
    gc_buf_init(&s.names);
    gc_error err;
    assert_int_equal(gc_kube_list(kube, PATH, NULL, on_item, &s, NULL, &err), GC_EXIT_RUNTIME);
    assert_true(kube_test_contains(err.message, "the API server's list is not valid JSON"));
    assert_true(kube_test_contains(err.message, "at byte 25"));
    assert_int_equal(s.count, 0);
    gc_buf_free(&s.names);
}

static int on_event(enum gc_kube_event_type type, json_t *obj, void *ctx, gc_error *err)
{
    (void)err;
    seen *s = ctx;
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "SYNCED"};
    const json_t *meta = json_object_get(obj, "metadata");
    char text[160];
    if (type == GC_KUBE_SYNCED)
        snprintf(text, sizeof(text), "SYNCED%s", obj ? " with an object" : "");
    else
        snprintf(text, sizeof(text), "%s %s", names[type],
                 json_string_value(json_object_get(meta, "name")));
    gc_buf_printf(&s->names, "%s%s", s->names.len ? ", " : "", text);
    return s->stop_on && !strcmp(text, s->stop_on) ? GC_KUBE_STOP : 0;
}

/* An event line for a chunked watch answer. */
#define EVENT(type, name, rv)                                                                      \
    "{\\'type\\': \\'" type "\\', \\'object\\': {\\'kind\\': \\'ConfigMap\\', \\'metadata\\': "    \
    "{\\'name\\': \\'" name "\\', \\'namespace\\': \\'ns1\\', \\'resourceVersion\\': \\'" rv       \
    "\\'}}}\\n"

static void test_watch_events_bookmarks_and_resume(void **state)
{
    (void)state;
    script(
        "{'GET " PATH "': ["
        "{'when': {'watch': null}, 'json': {'kind': 'ConfigMapList', 'metadata': "
        "{'resourceVersion': '100'}, 'items': [{'metadata': {'name': 'a', 'namespace': 'ns1', "
        "'resourceVersion': '90'}}, {'metadata': {'name': 'b', 'namespace': 'ns1'}}]}},"
        "{'when': {'watch': '1', 'resourceVersion': '100'}, 'headers': {'Content-Type': "
        "'application/json'}, 'chunks': ["
        "{'data': '" EVENT(
            "ADDED", "c",
            "110") "'},"
                   "{'data': '{\\'type\\': \\'BOOKMARK\\', \\'object\\': {\\'kind\\': "
                   "\\'ConfigMap\\', "
                   "\\'metadata\\': {\\'resourceVersion\\': \\'150\\'}}}\\n', 'delay': 0.05},"
                   "{'data': '" EVENT(
                       "MODIFIED", "a",
                       "160") "', 'delay': 0.05}]},"
                              "{'when': {'watch': '1', 'resourceVersion': '160'}, 'chunks': ["
                              "{'data': '" EVENT(
                                  "MODIFIED", "c",
                                  "170") "'},"
                                         "{'data': '" EVENT(
                                             "DELETED", "b",
                                             "180") "', 'delay': 0.05}], 'abort': true},"
                                                    "{'when': {'watch': '1', 'resourceVersion': "
                                                    "'180'}, 'chunks': ["
                                                    "{'data': '" EVENT("ADDED", "d",
                                                                       "190") "'}], 'hold': 30}]}");
    seen s = {.stop_on = "ADDED d"};
    gc_buf_init(&s.names);
    gc_error err;
    gc_kube_list_options opts = {.label_selector = "team=ml"};
    assert_int_equal(gc_kube_list_watch(kube, PATH, &opts, 20, on_event, &s, &err), 0);
    assert_string_equal(s.names.data, "ADDED a, ADDED b, SYNCED, ADDED c, MODIFIED a, "
                                      "MODIFIED c, DELETED b, ADDED d");
    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 4);
    for (size_t i = 1; i < 4; i++) {
        assert_string_equal(param(log, i, "watch"), "1");
        assert_string_equal(param(log, i, "allowWatchBookmarks"), "true");
        assert_string_equal(param(log, i, "labelSelector"), "team=ml");
        assert_non_null(param(log, i, "timeoutSeconds"));
    }
    /* Resumed after the normal end from the newest version (past the bookmark), and after the
     * dropped connection from the last event. */
    assert_string_equal(param(log, 2, "resourceVersion"), "160");
    assert_string_equal(param(log, 3, "resourceVersion"), "180");
    json_decref(log);
    gc_buf_free(&s.names);
}

static void test_watch_relists_after_410(void **state)
{
    (void)state;
    script("{'GET " PATH "': ["
           "{'when': {'watch': null}, 'json': {'kind': 'ConfigMapList', 'metadata': "
           "{'resourceVersion': '100'}, 'items': [{'metadata': {'name': 'a', 'namespace': "
           "'ns1'}}, {'metadata': {'name': 'b', 'namespace': 'ns1'}}]}},"
           "{'when': {'watch': '1', 'resourceVersion': '100'}, 'chunks': [{'data': "
           "'{\\'type\\': \\'ERROR\\', \\'object\\': {\\'kind\\': \\'Status\\', \\'code\\': 410, "
           "\\'reason\\': \\'Expired\\', \\'message\\': \\'too old resource version\\'}}\\n'}], "
           "'hold': 30},"
           "{'when': {'watch': null}, 'json': {'kind': 'ConfigMapList', 'metadata': "
           "{'resourceVersion': '200'}, 'items': [{'metadata': {'name': 'a', 'namespace': "
           "'ns1'}}]}},"
           "{'when': {'watch': '1', 'resourceVersion': '200'}, 'status': 410, 'json': {'kind': "
           "'Status', 'code': 410, 'reason': 'Gone'}},"
           "{'when': {'watch': null}, 'json': {'kind': 'ConfigMapList', 'metadata': "
           "{'resourceVersion': '300'}, 'items': [{'metadata': {'name': 'a', 'namespace': "
           "'ns1'}}, {'metadata': {'name': 'z', 'namespace': 'ns1'}}]}},"
           "{'when': {'watch': '1', 'resourceVersion': '300'}, 'chunks': [{'data': '" EVENT(
               "DELETED", "a", "310") "'}], 'hold': 30}]}");
    seen s = {.stop_on = "DELETED a"};
    gc_buf_init(&s.names);
    gc_error err;
    assert_int_equal(gc_kube_list_watch(kube, PATH, NULL, 20, on_event, &s, &err), 0);
    /* b vanished while the watch was behind: the re-list says so. */
    assert_string_equal(s.names.data, "ADDED a, ADDED b, SYNCED, ADDED a, DELETED b, SYNCED, "
                                      "ADDED a, ADDED z, SYNCED, DELETED a");
    gc_buf_free(&s.names);
}

static void test_watch_times_out(void **state)
{
    (void)state;
    script(
        "{'GET " PATH "': ["
        "{'when': {'watch': null}, 'json': {'kind': 'ConfigMapList', 'metadata': "
        "{'resourceVersion': '5'}, 'items': []}},"
        "{'when': {'watch': '1'}, 'chunks': [{'data': '" EVENT("ADDED", "x", "6") "'}], "
                                                                                  "'hold': 30}]}");
    seen s = {0};
    gc_buf_init(&s.names);
    gc_error err;
    assert_int_equal(gc_kube_list_watch(kube, PATH, NULL, 1, on_event, &s, &err), GC_EXIT_RUNTIME);
    if (strcmp(err.reason, "Timeout"))
        fail_msg("%s\n%s", err.message, notices.lines.data);
    assert_true(kube_test_contains(err.message, "gave up after 1 s"));
    assert_string_equal(s.names.data, "SYNCED, ADDED x");
    /* The time limit ended the watch the server held open (the client hung up), and no second
     * watch was started. */
    json_t *log = kube_test_server_log_ended(&env->server, 1);
    assert_int_equal(json_array_size(log), 2);
    assert_string_equal(ended_by(log, 1), "client");
    json_decref(log);
    gc_buf_free(&s.names);
}

/* Metadata-only lists ask for PartialObjectMetadataList, and their watch for PartialObjectMetadata
 * events. */
static void test_metadata_only_list_and_watch(void **state)
{
    (void)state;
    script("{'GET " PATH "': ["
           "{'when': {'watch': null}, 'json': {'kind': 'PartialObjectMetadataList', 'apiVersion': "
           "'meta.k8s.io/v1', 'metadata': {'resourceVersion': '5'}, 'items': [{'kind': "
           "'PartialObjectMetadata', 'apiVersion': 'meta.k8s.io/v1', 'metadata': {'name': 'm', "
           "'namespace': 'ns1'}}]}},"
           "{'when': {'watch': '1'}, 'chunks': [{'data': '" EVENT("MODIFIED", "m",
                                                                  "6") "'}], "
                                                                       "'hold': 30}]}");
    seen s = {.stop_on = "MODIFIED m"};
    gc_buf_init(&s.names);
    gc_error err;
    gc_kube_list_options opts = {.accept = GC_KUBE_ACCEPT_METADATA};
    assert_int_equal(gc_kube_list_watch(kube, PATH, &opts, 20, on_event, &s, &err), 0);
    assert_string_equal(s.names.data, "ADDED m, SYNCED, MODIFIED m");
    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 2);
    const char *list_accept = json_string_value(
        json_object_get(json_object_get(json_array_get(log, 0), "headers"), "accept"));
    const char *watch_accept = json_string_value(
        json_object_get(json_object_get(json_array_get(log, 1), "headers"), "accept"));
    assert_string_equal(list_accept, GC_KUBE_ACCEPT_METADATA);
    assert_string_equal(watch_accept,
                        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
                        "application/json");
    json_decref(log);
    gc_buf_free(&s.names);
}

static void test_watch_error_status(void **state)
{
    (void)state;
    script("{'GET " PATH "': ["
           "{'when': {'watch': null}, 'json': {'kind': 'ConfigMapList', 'metadata': "
           "{'resourceVersion': '5'}, 'items': []}},"
           "{'when': {'watch': '1'}, 'status': 403, 'json': {'kind': 'Status', 'code': 403, "
           "'reason': 'Forbidden', 'message': 'configmaps is forbidden: User \\'x\\' cannot "
           "watch'}}]}");
    seen s = {0};
    gc_buf_init(&s.names);
    gc_error err;
    assert_int_equal(gc_kube_list_watch(kube, PATH, NULL, 10, on_event, &s, &err), GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 403);
    assert_string_equal(err.reason, "Forbidden");
    assert_true(kube_test_contains(err.message, "cannot watch"));
    gc_buf_free(&s.names);
}

#define MAX_POLLS 20

typedef struct lines {
    gc_buf text[3];
    int count;
    int polls;
    int want;  /* > 0: keep_going returns false once this many lines came (or after MAX_POLLS) */
    int stops; /* how often keep_going returned false */
} lines;

static int on_line(size_t index, const char *line, size_t len, void *ctx)
{
    lines *l = ctx;
    gc_buf_append(&l->text[index], line, len);
    gc_buf_putc(&l->text[index], '|');
    l->count++;
    return 0;
}

static bool keep_going(void *ctx)
{
    lines *l = ctx;
    l->polls++;
    bool go = !l->want || (l->count < l->want && l->polls < MAX_POLLS);
    if (!go)
        l->stops++;
    return go;
}

static void lines_init(lines *l)
{
    memset(l, 0, sizeof(*l));
    for (int i = 0; i < 3; i++)
        gc_buf_init(&l->text[i]);
}

static void lines_free(lines *l)
{
    for (int i = 0; i < 3; i++)
        gc_buf_free(&l->text[i]);
}

static void test_logs_of_several_containers(void **state)
{
    (void)state;
    script("{'GET /api/v1/namespaces/ns1/pods/head-0/log': [{'chunks': ["
           "{'data': 'line1\\nli'}, {'data': 'ne2\\n', 'delay': 0.1}, {'data': 'last', 'delay': "
           "0.1}]}],"
           "'GET /api/v1/namespaces/other/pods/worker-0/log': [{'status': 500, 'body': 'oops'}, "
           "{'chunks': [{'data': 'w1\\nw2\\n'}]}],"
           "'GET /api/v1/namespaces/ns1/pods/worker-1/log': [{'status': 400, 'json': {'kind': "
           "'Status', 'code': 400, 'reason': 'BadRequest', 'message': 'container \\'tpu\\' in "
           "pod \\'worker-1\\' is waiting to start: ContainerCreating'}}]}");
    gc_kube_log_source sources[] = {
        {.pod = "head-0", .container = "jax"},
        {.ns = "other", .pod = "worker-0", .container = "tpu"},
        {.pod = "worker-1", .container = "tpu"},
    };
    gc_kube_log_options opts = {
        .follow = true, .tail_lines = 10, .since_seconds = 60, .timestamps = true};
    lines l;
    lines_init(&l);
    gc_error err;
    assert_int_equal(gc_kube_logs(kube, sources, 3, &opts, on_line, keep_going, &l, &err), 0);
    assert_string_equal(l.text[0].data, "line1|line2|last|");
    assert_string_equal(l.text[1].data, "w1|w2|"); /* after one retry of the 500 */
    assert_string_equal(l.text[2].data, "");
    assert_int_equal(test_events_count(&notices, "notice: no logs from worker-1/tpu: container "
                                                 "\"tpu\" in pod \"worker-1\" is waiting to start"),
                     1);
    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 4);
    for (size_t i = 0; i < json_array_size(log); i++) {
        assert_string_equal(param(log, i, "follow"), "true");
        assert_string_equal(param(log, i, "tailLines"), "10");
        assert_string_equal(param(log, i, "sinceSeconds"), "60");
        assert_string_equal(param(log, i, "timestamps"), "true");
        assert_non_null(param(log, i, "container"));
    }
    json_decref(log);
    lines_free(&l);
}

#define MANY_STREAMS 250

typedef struct many_lines {
    int per_stream[MANY_STREAMS];
    int wrong; /* lines that are not the stream's own */
} many_lines;

static int count_line(size_t index, const char *line, size_t len, void *ctx)
{
    many_lines *m = ctx;
    char want[32];
    int n = snprintf(want, sizeof(want), "p%zu line", index);
    if (len < (size_t)n || memcmp(line, want, (size_t)n))
        m->wrong++;
    m->per_stream[index]++;
    return 0;
}

/* More streams than libcurl puts on one connection (100) or the kube-apiserver allows on one
 * (250): every line of every stream arrives once, with its own stream, a stream that fails
 * (p7: 404) does not stop the others, and never more than GC_KUBE_LOGS_MAX_OPEN are open at
 * once (each answer stays open a moment, so the streams overlap), though several are. */
static void test_logs_of_many_containers(void **state)
{
    (void)state;
    json_t *doc = json_object();
    gc_kube_log_source sources[MANY_STREAMS];
    char names[MANY_STREAMS][16];
    for (int i = 0; i < MANY_STREAMS; i++) {
        snprintf(names[i], sizeof(names[i]), "p%d", i);
        sources[i] = (gc_kube_log_source){.pod = names[i], .container = "c"};
        char *key = gc_xasprintf("GET /api/v1/namespaces/ns1/pods/p%d/log", i);
        char *text = gc_xasprintf("2026-01-02T03:04:05.000000001Z p%d line 1\n"
                                  "2026-01-02T03:04:05.000000002Z p%d line 2\n",
                                  i, i);
        json_object_set_new(
            doc, key,
            i == 7 ? json_pack("[{s:i, s:s}]", "status", 404, "body", "gone")
                   : json_pack("[{s:[{s:s}], s:f}]", "chunks", "data", text, "hold", 1.0));
        free(key);
        free(text);
    }
    char *script_text = json_dumps(doc, JSON_COMPACT);
    assert_true(kube_test_server_script(&env->server, script_text));
    free(script_text);
    json_decref(doc);

    many_lines m = {0};
    gc_kube_log_options opts = {.tail_lines = -1};
    gc_error err;
    assert_int_equal(gc_kube_logs(kube, sources, MANY_STREAMS, &opts, count_line, NULL, &m, &err),
                     0);
    assert_int_equal(m.wrong, 0);
    for (int i = 0; i < MANY_STREAMS; i++)
        assert_int_equal(m.per_stream[i], i == 7 ? 0 : 2);
    assert_int_equal(test_events_count(&notices, "notice: no logs from p7/c:"), 1);
    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), MANY_STREAMS);
    json_int_t most = 0;
    size_t i;
    json_t *r;
    json_array_foreach(log, i, r)
    {
        json_int_t n = json_integer_value(json_object_get(r, "in_flight"));
        most = n > most ? n : most;
    }
    assert_true(most <= GC_KUBE_LOGS_MAX_OPEN);
    assert_true(most >= 2);
    json_decref(log);
}

static void test_logs_all_failing_is_an_error(void **state)
{
    (void)state;
    script("{'GET /api/v1/namespaces/ns1/pods/p/log': [{'status': 400, 'json': {'kind': "
           "'Status', 'code': 400, 'reason': 'BadRequest', 'message': 'a container name must be "
           "specified for pod p, choose one of: [a b]'}}]}");
    gc_kube_log_source source = {.pod = "p"};
    gc_kube_log_options opts = {.tail_lines = -1};
    lines l;
    lines_init(&l);
    gc_error err;
    assert_int_equal(gc_kube_logs(kube, &source, 1, &opts, on_line, NULL, &l, &err),
                     GC_EXIT_RUNTIME);
    assert_int_equal(err.http_status, 400);
    assert_true(kube_test_contains(err.message, "a container name must be specified"));
    json_t *log = kube_test_server_log(&env->server);
    assert_null(param(log, 0, "tailLines"));
    assert_null(param(log, 0, "follow"));
    json_decref(log);
    lines_free(&l);
}

/* The server keeps following a finished pod's log open; keep_going ends it. */
static void test_logs_stop_when_caller_says_so(void **state)
{
    (void)state;
    script("{'GET /api/v1/namespaces/ns1/pods/p/log': [{'chunks': [{'data': 'only line\\n'}], "
           "'hold': 30}]}");
    gc_kube_log_source source = {.pod = "p", .container = "c"};
    gc_kube_log_options opts = {.follow = true, .tail_lines = -1};
    lines l;
    lines_init(&l);
    l.want = 1; /* "stop" once the line came, whenever that is */
    gc_error err;
    assert_int_equal(gc_kube_logs(kube, &source, 1, &opts, on_line, keep_going, &l, &err), 0);
    assert_int_equal(l.count, 1);
    assert_string_equal(l.text[0].data, "only line|");
    /* It ended at the first "stop", hanging up on the stream the server held for 30 s. */
    assert_int_equal(l.stops, 1);
    json_t *log = kube_test_server_log_ended(&env->server, 0);
    assert_int_equal(json_array_size(log), 1);
    assert_string_equal(ended_by(log, 0), "client");
    json_decref(log);
    lines_free(&l);
}

/* --- streams that outlive their connections -------------------------------------------- */

#define LOG      "GET /api/v1/namespaces/ns1/pods/p/log"
#define POD      "GET /api/v1/namespaces/ns1/pods/p"
#define T0       "2026-01-01T00:00:00.500000000Z "
#define T1       "2026-01-01T00:00:01.100000000Z "
#define T2       "2026-01-01T00:00:01.500000000Z "
#define T3       "2026-01-01T00:00:02.000000000Z "
#define U1       "2026-01-01T00:00:06.000000000Z "
#define SECOND_1 "2026-01-01T00:00:01Z"

/* A pod whose container c runs since `since`, after an instance that started at `before`. */
#define RUNNING_POD(since)                                                                         \
    "{'json': {'kind': 'Pod', 'metadata': {'name': 'p'}, 'status': {'phase': 'Running', "          \
    "'containerStatuses': [{'name': 'c', 'restartCount': 0, 'state': {'running': {'startedAt': "   \
    "'" since "'}}}]}}}"
#define RESTARTED_POD(since, before)                                                               \
    "{'json': {'kind': 'Pod', 'metadata': {'name': 'p'}, 'status': {'phase': 'Running', "          \
    "'containerStatuses': [{'name': 'c', 'restartCount': 1, 'state': {'running': {'startedAt': "   \
    "'" since "'}}, 'lastState': {'terminated': {'startedAt': '" before "', 'exitCode': 1}}}]}}}"

static int read_logs(const gc_kube_log_options *opts, lines *l, gc_error *err)
{
    gc_kube_log_source source = {.pod = "p", .container = "c"};
    return gc_kube_logs(kube, &source, 1, opts, on_line, opts->follow ? keep_going : NULL, l, err);
}

/* A cut mid-line: the second request asks from the last line's second, and of what comes
 * again only what was not delivered is kept (three lines share one time stamp, two of them
 * were delivered). */
static void resume_after_cut(bool timestamps, const char *want)
{
    script("{'" LOG "': ["
           "{'when': {'sinceTime': null}, 'chunks': [{'data': '" T0 "zero\\n" T1 "one\\n" T2
           "two-a\\n" T2 "two-b\\n" T2 "two-"
           "'}], 'abort': true},"
           "{'when': {'sinceTime': '" SECOND_1 "'}, 'chunks': [{'data': '" T1 "one\\n" T2
           "two-a\\n" T2 "two-b\\n'}, {'data': '" T2 "two-c\\n" T3 "three\\n'}]}],"
           "'" POD "': [" RUNNING_POD("2026-01-01T00:00:00Z") "]}");
    gc_kube_log_options opts = {.tail_lines = 100, .timestamps = timestamps};
    lines l;
    lines_init(&l);
    gc_error err = {0};
    assert_int_equal(read_logs(&opts, &l, &err), 0);
    assert_string_equal(l.text[0].data, want);
    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 3);
    assert_string_equal(param(log, 0, "tailLines"), "100");
    assert_string_equal(param(log, 0, "timestamps"), "true");
    assert_null(param(log, 0, "sinceTime"));
    assert_string_equal(json_string_value(json_object_get(json_array_get(log, 1), "path")),
                        "/api/v1/namespaces/ns1/pods/p");
    assert_string_equal(param(log, 2, "sinceTime"), SECOND_1);
    assert_string_equal(param(log, 2, "timestamps"), "true");
    assert_string_equal(param(log, 2, "container"), "c");
    assert_null(param(log, 2, "tailLines"));
    assert_null(param(log, 2, "follow"));
    json_decref(log);
    lines_free(&l);
}

static void test_resume_drops_repeated_lines(void **state)
{
    (void)state;
    resume_after_cut(false, "zero|one|two-a|two-b|two-c|three|");
}

static void test_resume_keeps_asked_for_timestamps(void **state)
{
    (void)state;
    resume_after_cut(true, T0 "zero|" T1 "one|" T2 "two-a|" T2 "two-b|" T2 "two-c|" T3 "three|");
}

/* A stream that stops sending mid-answer (without follow) is taken as broken and resumed. */
static void test_stalled_stream_is_resumed(void **state)
{
    (void)state;
    script("{'" LOG "': ["
           "{'when': {'sinceTime': null}, 'chunks': [{'data': '" T1 "one\\n'}], 'hold': 30},"
           "{'when': {'sinceTime': '" SECOND_1 "'}, 'chunks': [{'data': '" T1 "one\\n" T2
           "two\\n'}]}],"
           "'" POD "': [" RUNNING_POD("2026-01-01T00:00:00Z") "]}");
    gc_kube_log_options opts = {.tail_lines = -1, .stall_seconds = 1};
    lines l;
    lines_init(&l);
    gc_error err = {0};
    assert_int_equal(read_logs(&opts, &l, &err), 0);
    assert_string_equal(l.text[0].data, "one|two|");
    assert_int_equal(test_events_count(&notices, "log stream p/c broke"), 1);
    lines_free(&l);
}

/* The pod is gone when the stream is to be resumed: lines after the last one may be missing,
 * and the error says which. */
static void test_unresumable_stream_is_incomplete(void **state)
{
    (void)state;
    script("{'" LOG "': [{'chunks': [{'data': '" T1 "one\\n" T2 "two\\n'}], 'abort': true}],"
           "'" POD "': [{'status': 404, 'json': {'kind': 'Status', 'code': "
           "404, 'reason': 'NotFound', 'message': 'pods \\'p\\' not found'}}]}");
    gc_kube_log_options opts = {.tail_lines = -1};
    lines l;
    lines_init(&l);
    gc_error err = {0};
    assert_int_equal(read_logs(&opts, &l, &err), GC_EXIT_INCOMPLETE);
    assert_string_equal(l.text[0].data, "one|two|");
    if (!kube_test_contains(err.message, "p/c: reading the pod after the stream broke failed") ||
        !kube_test_contains(err.message, "not found") ||
        !kube_test_contains(err.message,
                            "lines after 2026-01-01T00:00:01.500000000Z may be missing"))
        fail_msg("%s", err.message);
    lines_free(&l);
}

/* Following, the container restarts: its previous instance is read to its end, then the new
 * one from its first line, with a notice. */
static void test_follow_across_a_container_restart(void **state)
{
    (void)state;
    script(
        "{'" LOG "': ["
        "{'when': {'sinceTime': null, 'previous': null}, 'chunks': [{'data': '" T1 "old-1\\n" T2
        "old-2\\n'}]},"
        "{'when': {'previous': 'true', 'sinceTime': '" SECOND_1 "'}, 'chunks': [{'data': '" T1
        "old-1\\n" T2 "old-2\\n" T3 "old-3\\n'}]},"
        "{'when': {'sinceTime': null, 'previous': null, 'follow': 'true'}, 'chunks': [{'data': '" U1
        "new-1\\n'}], 'hold': 30}],"
        "'" POD "': [" RESTARTED_POD("2026-01-01T00:00:05Z", "2026-01-01T00:00:00Z") "]}");
    gc_kube_log_options opts = {.follow = true, .tail_lines = -1};
    lines l;
    lines_init(&l);
    l.want = 4;
    gc_error err = {0};
    assert_int_equal(read_logs(&opts, &l, &err), 0);
    assert_string_equal(l.text[0].data, "old-1|old-2|old-3|new-1|");
    assert_int_equal(test_events_count(&notices, "p/c: the container restarted"), 1);
    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 4);
    assert_string_equal(param(log, 0, "follow"), "true");
    assert_string_equal(param(log, 2, "previous"), "true");
    assert_null(param(log, 2, "follow"));
    assert_string_equal(param(log, 3, "follow"), "true");
    assert_null(param(log, 3, "sinceTime"));
    json_decref(log);
    lines_free(&l);
}

/* Following through an API server that answers 503 for a while: reconnecting, said as a
 * notice, then every line once. */
static void test_follow_reconnects_through_errors(void **state)
{
    (void)state;
    script("{'" LOG "': ["
           "{'when': {'sinceTime': null}, 'chunks': [{'data': '" T1 "one\\n'}], 'abort': true},"
           "{'when': {'sinceTime': '" SECOND_1 "'}, 'chunks': [{'data': '" T1 "one\\n" T2
           "two\\n'}], 'hold': 30}],"
           "'" POD "': [{'status': 503, 'body': 'restarting'}, {'status': 503, 'body': "
           "'restarting'}, " RUNNING_POD("2026-01-01T00:00:00Z") "]}");
    gc_kube_log_options opts = {.follow = true, .tail_lines = -1};
    lines l;
    lines_init(&l);
    l.want = 2;
    gc_error err = {0};
    assert_int_equal(read_logs(&opts, &l, &err), 0);
    assert_string_equal(l.text[0].data, "one|two|");
    if (test_events_count(&notices, "notice: log stream p/c: connection lost (HTTP 503 Service "
                                    "Unavailable); reconnecting in") < 1 ||
        test_events_count(&notices, "notice: log stream p/c: reconnected") != 1)
        fail_msg("%s", notices.lines.data);
    lines_free(&l);
}

/* --- watches ---------------------------------------------------------------------------- */

#define LIST_ANSWER(rv)                                                                            \
    "{'when': {'watch': null}, 'json': {'kind': 'ConfigMapList', 'metadata': {'resourceVersion': " \
    "'" rv "'}, 'items': []}}"
#define ADDED_X                                                                                    \
    "{'when': {'watch': '1'}, 'chunks': [{'data': '{\\'type\\': \\'ADDED\\', \\'object\\': "       \
    "{\\'kind\\': \\'ConfigMap\\', \\'metadata\\': {\\'name\\': \\'x\\', \\'namespace\\': "        \
    "\\'ns1\\', \\'resourceVersion\\': \\'9\\'}}}\\n'}], 'hold': 30}"

static int until_added(enum gc_kube_event_type type, json_t *obj, void *ctx, gc_error *err)
{
    (void)obj, (void)ctx, (void)err;
    return type == GC_KUBE_ADDED ? GC_KUBE_STOP : 0;
}

/* Reset connections and 503s: the watch says it is reconnecting and carries on. (libcurl
 * itself sends a request again, unseen, when a reused connection is reset before answering, so
 * not every reset is an attempt.) */
static void test_watch_reconnects_with_backoff(void **state)
{
    (void)state;
    script("{'GET " PATH
           "': [" LIST_ANSWER("5") ","
                                   "{'when': {'watch': '1'}, 'action': 'reset'},"
                                   "{'when': {'watch': '1'}, 'action': 'reset'},"
                                   "{'when': {'watch': '1'}, 'status': 503, 'body': 'busy'},"
                                   "{'when': {'watch': '1'}, 'status': 503, 'body': 'busy'},"
                                   " " ADDED_X "]}");
    gc_error err = {0};
    assert_int_equal(gc_kube_list_watch(kube, PATH, NULL, 60, until_added, NULL, &err), 0);
    size_t lost = test_events_count(&notices, "notice: connection to the API server lost");
    if (lost < 3 || test_events_count(&notices, "(attempt 1)") != 1 ||
        test_events_count(&notices, "(attempt 3)") != 1 ||
        test_events_count(&notices, "HTTP 503 Service Unavailable); reconnecting in") != 2 ||
        test_events_count(&notices, "notice: reconnected to the API server") != 1)
        fail_msg("%s", notices.lines.data);
    json_t *log = kube_test_server_log(&env->server);
    assert_true(json_array_size(log) >= lost + 2);
    for (size_t i = 1; i < json_array_size(log); i++) {
        assert_string_equal(param(log, i, "resourceVersion"), "5");
        /* short server-side timeouts: a silent connection is noticed in half a minute */
        assert_in_range(atol(param(log, i, "timeoutSeconds")), 1, 20);
    }
    json_decref(log);
}

/* The list after a 410 fails more often than a single request retries: the watch lists again
 * after a pause instead of giving up. */
static void test_watch_relists_through_failures(void **state)
{
    (void)state;
    script("{'GET " PATH "': [" LIST_ANSWER(
        "5") ","
             "{'when': {'watch': '1'}, 'status': 410, 'json': {'kind': 'Status', "
             "'code': 410, 'reason': 'Gone'}},"
             "{'when': {'watch': null}, 'status': 503, 'body': 'busy'},"
             "{'when': {'watch': null}, 'status': 503, 'body': 'busy'},"
             "{'when': {'watch': null}, 'status': 503, 'body': 'busy'},"
             "{'when': {'watch': null}, 'status': 503, 'body': 'busy'},"
             "{'when': {'watch': null}, 'status': 503, 'body': 'busy'}," LIST_ANSWER(
                 "7") ", " ADDED_X "]}");
    gc_error err = {0};
    int rc = gc_kube_list_watch(kube, PATH, NULL, 60, until_added, NULL, &err);
    if (rc)
        fail_msg("%s\n%s", err.message, notices.lines.data);
    assert_int_equal(test_events_count(&notices, "notice: connection to the API server lost"), 1);
    json_t *log = kube_test_server_log(&env->server);
    assert_string_equal(param(log, json_array_size(log) - 1, "resourceVersion"), "7");
    json_decref(log);
}

/* A server that never lets the watch through: the watch ends at the caller's timeout, as a
 * timeout, not as a connection error. */
static void test_watch_gives_up_only_at_the_timeout(void **state)
{
    (void)state;
    script("{'GET " PATH "': [" LIST_ANSWER("5") ","
                                                 "{'when': {'watch': '1'}, "
                                                 "'action': 'reset', 'repeat': "
                                                 "true}]}");
    gc_error err = {0};
    assert_int_equal(gc_kube_list_watch(kube, PATH, NULL, 2, until_added, NULL, &err),
                     GC_EXIT_RUNTIME);
    assert_string_equal(err.reason, "Timeout");
    assert_true(kube_test_contains(err.message, "gave up after 2 s"));
    assert_true(test_events_count(&notices, "reconnecting in") >= 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_list_pages, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_list_restarts_on_expired_continue, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_list_stops_when_asked, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_list_reads_items_as_they_arrive, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_list_page_cut_off, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_list_cut_restarts_for_a_consumer_that_can_forget,
                                        open_client, close_client),
        cmocka_unit_test_setup_teardown(test_list_item_without_end, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_list_that_is_not_json, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_lists_sent_together, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_watch_events_bookmarks_and_resume, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_watch_relists_after_410, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_watch_times_out, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_metadata_only_list_and_watch, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_watch_error_status, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_logs_of_several_containers, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_logs_of_many_containers, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_logs_all_failing_is_an_error, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_logs_stop_when_caller_says_so, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_resume_drops_repeated_lines, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_resume_keeps_asked_for_timestamps, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_stalled_stream_is_resumed, open_client, close_client),
        cmocka_unit_test_setup_teardown(test_unresumable_stream_is_incomplete, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_follow_across_a_container_restart, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_follow_reconnects_through_errors, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_watch_reconnects_with_backoff, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_watch_relists_through_failures, open_client,
                                        close_client),
        cmocka_unit_test_setup_teardown(test_watch_gives_up_only_at_the_timeout, open_client,
                                        close_client),
    };
    return cmocka_run_group_tests(tests, setup, kube_test_env_teardown);
}
