/*
 * The kube client's HTTP behaviour against a real loopback HTTPS server
 * (tests/unit/support/test_server.py) with a throwaway PKI: verbs, retries, Status errors, create
 * recovery, credentials, TLS verification, and redaction in traces.
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

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PLUGIN GCLUSTER_TEST_PROGRAMS_DIR "/fake_exec_plugin"
#define TOKEN  "SECRET-TOKEN-0123456789"

static kube_test_env *env; /* the program's directory, PKI and scripted server */

static int setup(void **state)
{
    int rc = kube_test_env_setup(state);
    env = *state;
    setenv("HOME", env->tmp, 1);
    unsetenv("KUBECONFIG");
    int null = open("/dev/null", O_RDONLY);
    dup2(null, 0);
    close(null);
    return rc;
}

/* Scripts the server; the text uses ' for " to stay readable. */
static void script(const char *text)
{
    kube_test_env_script(env, text);
}

typedef struct client {
    gc_kube *k;
    gc_error err;
    test_events events;
} client;

typedef struct setup_opts {
    const char *user;    /* YAML lines under "user:" */
    const char *cluster; /* extra YAML lines under "cluster:" */
    const char *server;  /* default: the test server */
    const char *ca;      /* default: the test CA; "" for none */
    int verbose;
    int request_timeout;
} setup_opts;

static void connect_client(client *c, setup_opts o)
{
    memset(c, 0, sizeof(*c));
    char *path = gc_xasprintf("%s/kubeconfig-%d.yaml", env->tmp, rand());
    const char *ca = o.ca ? o.ca : env->pki.ca;
    kube_test_write(path,
                    "current-context: t\n"
                    "clusters:\n"
                    "- name: test\n"
                    "  cluster:\n"
                    "    server: %s\n"
                    "%s%s%s"
                    "%s"
                    "users:\n"
                    "- name: me\n"
                    "  user:\n"
                    "%s"
                    "contexts:\n"
                    "- {name: t, context: {cluster: test, user: me, namespace: ns1}}\n",
                    o.server ? o.server : env->server.url,
                    ca[0] ? "    certificate-authority: " : "", ca, ca[0] ? "\n" : "",
                    o.cluster ? o.cluster : "", o.user ? o.user : "    token: " TOKEN "\n");
    test_events_init(&c->events);
    gc_kube_options opts = {.kubeconfig = path,
                            .verbose = o.verbose,
                            .events = &c->events.events,
                            .request_timeout_seconds = o.request_timeout};
    int rc = gc_kube_open(&opts, &c->k, &c->err);
    if (rc)
        fail_msg("gc_kube_open: %s", c->err.message);
    free(path);
}

/* Everything the client reported, one "<kind>: <text>" line per event. */
static const char *log_text(client *c)
{
    return c->events.lines.data;
}

static void disconnect(client *c)
{
    gc_kube_close(c->k);
    test_events_free(&c->events);
}

static json_t *requests(void)
{
    return kube_test_server_log(&env->server);
}

static const char *field(json_t *log, size_t i, const char *key)
{
    return json_string_value(json_object_get(json_array_get(log, i), key));
}

static const char *param(json_t *log, size_t i, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_array_get(log, i), "params"), key));
}

static const char *header(json_t *log, size_t i, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_array_get(log, i), "headers"), key));
}

/* The delays the client chose before each retry, from its trace ("retrying in N ms"). */
static size_t retry_delays(const char *trace, long *delays, size_t max)
{
    size_t n = 0;
    for (const char *p = trace; n < max && (p = strstr(p, "retrying in ")) != NULL; p++)
        delays[n++] = strtol(p + strlen("retrying in "), NULL, 10);
    return n;
}

static void test_get_sends_what_the_api_expects(void **state)
{
    (void)state;
    script("{'GET /api/v1/namespaces/ns1/configmaps/cm': [{'json': {'kind': 'ConfigMap', "
           "'data': {'a': 'b'}}}]}");
    client c;
    connect_client(&c, (setup_opts){0});
    assert_string_equal(gc_kube_namespace(c.k), "ns1");
    char *path = gc_kube_path(NULL, "v1", gc_kube_namespace(c.k), "configmaps", "cm");
    assert_string_equal(path, "/api/v1/namespaces/ns1/configmaps/cm");
    json_t *obj = NULL;
    const char *query[] = {"labelSelector", "app in (a,b),tier=x", NULL};
    assert_int_equal(gc_kube_get(c.k, path, query, &obj, &c.err), 0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(obj, "data"), "a")), "b");
    json_decref(obj);

    json_t *log = requests();
    assert_int_equal(json_array_size(log), 1);
    assert_string_equal(field(log, 0, "method"), "GET");
    assert_string_equal(param(log, 0, "labelSelector"), "app in (a,b),tier=x");
    assert_string_equal(header(log, 0, "authorization"), "Bearer " TOKEN);
    assert_string_equal(header(log, 0, "accept"), "application/json");
    assert_string_equal(header(log, 0, "user-agent"), "gcluster/" GCLUSTER_VERSION);
    assert_int_equal(gc_kube_request_count(c.k), 1);
    json_decref(log);
    disconnect(&c);
    free(path);
}

static void test_sequential_requests_reuse_one_connection(void **state)
{
    (void)state;
    script("{'GET /api/v1/namespaces': [{'json': {}, 'repeat': true}]}");
    client c;
    connect_client(&c, (setup_opts){0});
    for (int i = 0; i < 4; i++)
        assert_int_equal(gc_kube_get(c.k, "/api/v1/namespaces", NULL, NULL, &c.err), 0);
    json_t *log = requests();
    assert_int_equal(json_array_size(log), 4);
    json_int_t first = json_integer_value(json_object_get(json_array_get(log, 0), "connection"));
    for (size_t i = 1; i < 4; i++)
        assert_int_equal(json_integer_value(json_object_get(json_array_get(log, i), "connection")),
                         first);
    json_decref(log);
    disconnect(&c);
}

static void test_429_retried_after_retry_after(void **state)
{
    (void)state;
    script("{'GET /api/v1/pods': ["
           "{'status': 429, 'headers': {'Retry-After': '1'}, 'json': {'kind': 'Status', "
           "'reason': 'TooManyRequests', 'message': 'slow down', 'code': 429}},"
           "{'status': 429, 'headers': {'Retry-After': '1'}, 'body': 'busy'},"
           "{'json': {'kind': 'PodList', 'items': []}}]}");
    client c;
    connect_client(&c, (setup_opts){.verbose = 1});
    assert_int_equal(gc_kube_get(c.k, "/api/v1/pods", NULL, NULL, &c.err), 0);
    assert_int_equal(gc_kube_request_count(c.k), 3);
    json_t *log = requests();
    assert_int_equal(json_array_size(log), 3);
    assert_true(kube_test_contains(log_text(&c), "-> 429 Too Many Requests"));
    /* Each retry waited for Retry-After (1 s), plus at most 100 ms of jitter. */
    long delays[3];
    assert_int_equal(retry_delays(log_text(&c), delays, 3), 2);
    for (size_t i = 0; i < 2; i++)
        if (delays[i] < 1000 || delays[i] > 1100)
            fail_msg("retry %zu after %ld ms, not Retry-After's 1 s", i, delays[i]);
    json_decref(log);
    disconnect(&c);
}

static void test_5xx_and_resets_retried_then_given_up(void **state)
{
    (void)state;
    /* The reset comes first, on a fresh connection: on a reused one libcurl would re-send the
     * request itself, below the retry logic tested here. */
    script("{'GET /api/v1/nodes': [{'action': 'reset'}, {'status': 503, 'body': 'x'},"
           "{'status': 500, 'body': 'y'}, {'json': {'kind': 'NodeList'}}]}");
    client c;
    connect_client(&c, (setup_opts){0});
    assert_int_equal(gc_kube_get(c.k, "/api/v1/nodes", NULL, NULL, &c.err), 0);
    assert_int_equal(gc_kube_request_count(c.k), 4);

    /* Always 503: five attempts, then the server's message. */
    script("{'GET /api/v1/services': [{'status': 503, 'repeat': true, 'json': {'kind': "
           "'Status', 'code': 503, 'reason': 'ServiceUnavailable', 'message': 'etcd is "
           "unhappy'}}]}");
    unsigned before = gc_kube_request_count(c.k);
    assert_int_equal(gc_kube_get(c.k, "/api/v1/services", NULL, NULL, &c.err), GC_EXIT_RUNTIME);
    assert_int_equal(gc_kube_request_count(c.k) - before, KUBE_MAX_ATTEMPTS);
    assert_int_equal(c.err.http_status, 503);
    assert_string_equal(c.err.reason, "ServiceUnavailable");
    assert_string_equal(c.err.message, "etcd is unhappy");
    disconnect(&c);
}

static void test_status_errors_become_one_message(void **state)
{
    (void)state;
    script("{'POST /apis/jobset.x-k8s.io/v1alpha2/namespaces/ns1/jobsets': [{'status': 422, "
           "'json': {'kind': 'Status', 'apiVersion': 'v1', 'status': 'Failure', 'message': "
           "'JobSet.jobset.x-k8s.io \\'demo\\' is invalid: spec.replicatedJobs[0].name: "
           "Invalid value: \\'Bad\\': must be lower case', 'reason': 'Invalid', 'details': "
           "{'causes': [{'reason': 'FieldValueInvalid', 'field': 'spec.replicatedJobs[0].name', "
           "'message': 'Invalid value: \\'Bad\\': must be lower case'}, {'reason': "
           "'FieldValueRequired', 'field': 'spec.network', 'message': 'Required value'}]}, "
           "'code': 422}}],"
           "'GET /apis/jobset.x-k8s.io/v1alpha2/namespaces/ns1/jobsets/x': [{'status': 404, "
           "'headers': {'Content-Type': 'text/html'}, 'body': '<html><body>\\nNot here\\n'}]}");
    client c;
    connect_client(&c, (setup_opts){0});
    json_t *js = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind",
                           "JobSet", "metadata", "name", "demo");
    assert_int_equal(gc_kube_create(c.k, "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns1/jobsets",
                                    js, GC_KUBE_STRICT, NULL, &c.err),
                     GC_EXIT_RUNTIME);
    assert_int_equal(c.err.http_status, 422);
    assert_string_equal(c.err.reason, "Invalid");
    /* The message once, and only the cause it did not already say. */
    assert_string_equal(c.err.message,
                        "JobSet.jobset.x-k8s.io \"demo\" is invalid: spec.replicatedJobs[0].name: "
                        "Invalid value: \"Bad\": must be lower case\n"
                        "  - spec.network: Required value");
    assert_int_equal(gc_kube_request_count(c.k), 1); /* 422 is final */

    /* A body that is not a Status is summarised, and the reason still follows the code. */
    assert_int_equal(gc_kube_get(c.k, "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns1/jobsets/x",
                                 NULL, NULL, &c.err),
                     GC_EXIT_RUNTIME);
    assert_int_equal(c.err.http_status, 404);
    assert_string_equal(c.err.reason, "NotFound");
    assert_true(kube_test_contains(c.err.message, "HTTP 404 Not Found: <html><body>"));
    assert_false(kube_test_contains(c.err.message, "Not here"));
    json_decref(js);
    disconnect(&c);
}

static json_t *config_map(const char *name)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
                     "metadata", "name", name, "data", "k", "v");
}

static void test_create_flags_and_body(void **state)
{
    (void)state;
    script("{'POST /api/v1/namespaces/ns1/configmaps': [{'status': 201, 'json': {'kind': "
           "'ConfigMap', 'metadata': {'name': 'cm', 'uid': 'u-1'}}}]}");
    client c;
    connect_client(&c, (setup_opts){0});
    json_t *cm = config_map("cm"), *out = NULL;
    assert_int_equal(gc_kube_create(c.k, "/api/v1/namespaces/ns1/configmaps", cm,
                                    GC_KUBE_STRICT | GC_KUBE_DRY_RUN, &out, &c.err),
                     0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "metadata"), "uid")),
                        "u-1");
    json_t *log = requests();
    assert_string_equal(field(log, 0, "method"), "POST");
    assert_string_equal(param(log, 0, "fieldValidation"), "Strict");
    assert_string_equal(param(log, 0, "dryRun"), "All");
    assert_string_equal(header(log, 0, "content-type"), "application/json");
    json_t *sent = json_loads(field(log, 0, "body"), 0, NULL);
    assert_true(json_equal(sent, cm));
    json_decref(sent);
    json_decref(log);
    json_decref(out);
    json_decref(cm);
    disconnect(&c);
}

static void test_create_retries_only_when_safe(void **state)
{
    (void)state;
    /* 429: nothing was done, so the POST is sent again. */
    script("{'POST /api/v1/namespaces/ns1/configmaps': [{'status': 429, 'headers': "
           "{'Retry-After': '0'}, 'body': ''}, {'status': 201, 'json': {'kind': 'ConfigMap'}}]}");
    client c;
    connect_client(&c, (setup_opts){0});
    json_t *cm = config_map("cm");
    assert_int_equal(gc_kube_create(c.k, "/api/v1/namespaces/ns1/configmaps", cm, 0, NULL, &c.err),
                     0);
    json_t *log = requests();
    assert_int_equal(json_array_size(log), 2);
    json_decref(log);

    /* 409 AlreadyExists from someone else's object (another submission id): an answer, never
     * a reason to send the POST again. */
    kube_test_server_reset(&env->server);
    script("{'POST /api/v1/namespaces/ns1/configmaps': [{'status': 409, 'json': {'kind': "
           "'Status', 'reason': 'AlreadyExists', 'code': 409, 'message': 'configmaps \\'cm\\' "
           "already exists'}}],"
           "'GET /api/v1/namespaces/ns1/configmaps/cm': [{'json': {'kind': 'ConfigMap', "
           "'metadata': {'name': 'cm', 'creationTimestamp': '2020-01-01T00:00:00Z', "
           "'annotations': {'gcluster.google.com/submission-id': 'someone-else'}}}}]}");
    assert_int_equal(gc_kube_create(c.k, "/api/v1/namespaces/ns1/configmaps", cm, 0, NULL, &c.err),
                     GC_EXIT_RUNTIME);
    assert_int_equal(c.err.http_status, 409);
    assert_string_equal(c.err.reason, "AlreadyExists");
    assert_true(kube_test_contains(c.err.message, "created 2020-01-01T00:00:00Z, not by this"));
    log = requests();
    assert_int_equal(json_array_size(log), 2); /* the POST and the look-up: no second POST */
    assert_string_equal(field(log, 1, "method"), "GET");
    json_decref(log);

    /* A 409 that is not AlreadyExists is the answer as it is. */
    kube_test_server_reset(&env->server);
    script("{'POST /api/v1/namespaces/ns1/configmaps': [{'status': 409, 'json': {'kind': "
           "'Status', 'reason': 'Conflict', 'code': 409, 'message': 'the object has been "
           "modified'}}]}");
    assert_int_equal(gc_kube_create(c.k, "/api/v1/namespaces/ns1/configmaps", cm, 0, NULL, &c.err),
                     GC_EXIT_RUNTIME);
    assert_string_equal(c.err.reason, "Conflict");
    log = requests();
    assert_int_equal(json_array_size(log), 1);
    json_decref(log);
    json_decref(cm);
    disconnect(&c);
}

/* The submission id the client put on the object it sent (request i of the log). */
static char *sent_submission_id(json_t *log, size_t i)
{
    json_t *body = json_loads(field(log, i, "body"), 0, NULL);
    const char *id = json_string_value(json_object_get(
        json_object_get(json_object_get(body, "metadata"), "annotations"), GC_KUBE_SUBMISSION_ID));
    char *copy = id ? gc_xstrdup(id) : NULL;
    json_decref(body);
    return copy;
}

/* The answer to a POST is lost: the object is read by name, and our submission id says the
 * create went through. */
static void test_create_lost_answer_found_by_name(void **state)
{
    (void)state;
    script("{'POST /api/v1/namespaces/ns1/configmaps': [{'action': 'reset', 'remember': "
           "'GET /api/v1/namespaces/ns1/configmaps/cm'}]}");
    client c;
    connect_client(&c, (setup_opts){0});
    json_t *cm = config_map("cm"), *out = NULL;
    assert_int_equal(gc_kube_create(c.k, "/api/v1/namespaces/ns1/configmaps", cm, 0, &out, &c.err),
                     0);
    assert_true(kube_test_contains(log_text(&c), "exists with this request's submission id"));
    json_t *log = requests();
    assert_int_equal(json_array_size(log), 2); /* one POST, one GET: never a second POST */
    assert_string_equal(field(log, 0, "method"), "POST");
    assert_string_equal(field(log, 1, "method"), "GET");
    char *id = sent_submission_id(log, 0);
    assert_non_null(id);
    assert_int_equal(strlen(id), 32);
    const json_t *annotations = json_object_get(json_object_get(out, "metadata"), "annotations");
    assert_string_equal(json_string_value(json_object_get(annotations, GC_KUBE_SUBMISSION_ID)), id);
    /* The caller's object is left as it was. */
    assert_null(json_object_get(json_object_get(cm, "metadata"), "annotations"));
    free(id);
    json_decref(log);
    json_decref(out);
    json_decref(cm);
    disconnect(&c);
}

static void test_create_lost_answer_not_created_is_resent(void **state)
{
    (void)state;
    script("{'POST /api/v1/namespaces/ns1/configmaps': [{'status': 504, 'json': {'kind': "
           "'Status', 'code': 504, 'reason': 'Timeout', 'message': 'request timed out'}},"
           "{'status': 201, 'json': {'kind': 'ConfigMap', 'metadata': {'uid': 'second'}}}]}");
    client c;
    connect_client(&c, (setup_opts){0});
    json_t *cm = config_map("cm"), *out = NULL;
    assert_int_equal(gc_kube_create(c.k, "/api/v1/namespaces/ns1/configmaps", cm, 0, &out, &c.err),
                     0);
    assert_string_equal(json_string_value(json_object_get(json_object_get(out, "metadata"), "uid")),
                        "second");
    json_t *log = requests();
    assert_int_equal(json_array_size(log), 3);
    assert_string_equal(field(log, 0, "method"), "POST");
    assert_string_equal(field(log, 1, "method"), "GET"); /* 404 from the script's default */
    assert_string_equal(field(log, 2, "method"), "POST");
    /* The same submission: the id is made once per create, not per attempt. */
    char *first = sent_submission_id(log, 0), *second = sent_submission_id(log, 2);
    assert_string_equal(first, second);
    free(first);
    free(second);
    json_decref(log);
    json_decref(out);

    /* An object without our id (made by someone else, even in the same second) is not ours. */
    disconnect(&c);
    connect_client(&c, (setup_opts){0});
    kube_test_server_reset(&env->server);
    char now[32], text[1024];
    kube_test_rfc3339(0, now);
    snprintf(text, sizeof(text),
             "{'POST /api/v1/namespaces/ns1/configmaps': [{'action': 'reset'}],"
             "'GET /api/v1/namespaces/ns1/configmaps/cm': [{'json': {'kind': 'ConfigMap', "
             "'metadata': {'name': 'cm', 'creationTimestamp': '%s'}}}]}",
             now);
    script(text);
    assert_int_equal(gc_kube_create(c.k, "/api/v1/namespaces/ns1/configmaps", cm, 0, &out, &c.err),
                     GC_EXIT_RUNTIME);
    assert_int_equal(c.err.http_status, 409);
    assert_string_equal(c.err.reason, "AlreadyExists");
    assert_true(kube_test_contains(c.err.message, "not by this request"));
    assert_non_null(out); /* the object found, for the caller to describe */
    json_decref(out);
    json_decref(cm);
    disconnect(&c);
}

/* libcurl re-sends a request by itself when the reused connection it went out on dies before
 * any byte of the answer: the server acted on the first copy (201) and answers the second
 * 409 AlreadyExists. The client notices, reads the object, finds its own id: success, and the
 * trace says what happened. */
static void test_create_resent_by_libcurl_then_409_is_ours(void **state)
{
    (void)state;
    script("{'GET /version': [{'json': {'major': '1'}}],"
           "'POST /apis/jobset.x-k8s.io/v1alpha2/namespaces/ns1/jobsets': [{'action': 'reset', "
           "'remember': 'GET /apis/jobset.x-k8s.io/v1alpha2/namespaces/ns1/jobsets/js'}, "
           "{'status': 409, 'json': {'kind': 'Status', 'code': 409, 'reason': 'AlreadyExists', "
           "'message': 'jobsets.jobset.x-k8s.io \\'js\\' already exists'}}]}");
    client c;
    connect_client(&c, (setup_opts){.verbose = 1});
    /* A first request, so the POST goes out on a reused connection. */
    assert_int_equal(gc_kube_get(c.k, "/version", NULL, NULL, &c.err), 0);
    json_t *js = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "jobset.x-k8s.io/v1alpha2", "kind",
                           "JobSet", "metadata", "name", "js");
    assert_int_equal(gc_kube_create(c.k, "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns1/jobsets",
                                    js, GC_KUBE_STRICT, NULL, &c.err),
                     0);
    json_t *log = requests();
    assert_int_equal(json_array_size(log), 4);
    assert_string_equal(field(log, 1, "method"), "POST");
    assert_string_equal(field(log, 2, "method"), "POST"); /* libcurl's own, on a new connection */
    assert_string_equal(field(log, 3, "method"), "GET");
    assert_true(kube_test_contains(log_text(&c), "went out more than once"));
    assert_true(kube_test_contains(log_text(&c), "libcurl sent the request again"));
    assert_true(kube_test_contains(log_text(&c), "it was created"));
    json_decref(log);
    json_decref(js);
    disconnect(&c);
}

static void test_apply_patch_and_delete(void **state)
{
    (void)state;
    script("{'PATCH /apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq': [{'action': 'reset'},"
           "{'json': {'kind': 'ClusterQueue'}}, {'json': {'kind': 'ClusterQueue'}}],"
           "'DELETE /apis/jobset.x-k8s.io/v1alpha2/namespaces/ns1/jobsets/js': [{'action': "
           "'reset'}, {'status': 404, 'json': {'kind': 'Status', 'code': 404, 'reason': "
           "'NotFound'}}]}");
    client c;
    connect_client(&c, (setup_opts){0});
    json_t *cq = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "kueue.x-k8s.io/v1beta2", "kind",
                           "ClusterQueue", "metadata", "name", "cq");
    assert_int_equal(gc_kube_apply(c.k, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq", cq,
                                   "gcluster-test", GC_KUBE_FORCE, NULL, &c.err),
                     0);
    json_t *patch = json_pack("{s:{s:b}}", "spec", "stopPolicy", 0);
    assert_int_equal(gc_kube_merge_patch(c.k, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq",
                                         patch, NULL, &c.err),
                     0);

    /* The first DELETE went through but its answer was lost: the 404 that follows is success,
     * also when libcurl itself sent it again (on the connection the PATCHes left open). */
    json_t *out = NULL;
    assert_int_equal(gc_kube_delete(c.k, "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns1/jobsets/js",
                                    "Foreground", &out, &c.err),
                     0);
    assert_string_equal(json_string_value(json_object_get(out, "status")), "Success");
    disconnect(&c);

    json_t *log = requests();
    assert_int_equal(json_array_size(log), 5);
    assert_string_equal(header(log, 1, "content-type"), "application/apply-patch+yaml");
    assert_string_equal(param(log, 1, "fieldManager"), "gcluster-test");
    assert_string_equal(param(log, 1, "force"), "true");
    json_t *sent = json_loads(field(log, 1, "body"), 0, NULL);
    assert_true(json_equal(sent, cq));
    json_decref(sent);
    assert_string_equal(header(log, 2, "content-type"), "application/merge-patch+json");
    assert_string_equal(field(log, 2, "body"), "{\"spec\":{\"stopPolicy\":false}}");
    assert_string_equal(field(log, 4, "method"), "DELETE");
    assert_string_equal(param(log, 4, "propagationPolicy"), "Foreground");
    json_decref(log);
    json_decref(out);
    json_decref(patch);
    json_decref(cq);

    /* A plain 404 on the first attempt stays an error callers can branch on. */
    connect_client(&c, (setup_opts){0});
    assert_int_equal(gc_kube_delete(c.k, "/api/v1/namespaces/ns1/pods/none", NULL, NULL, &c.err),
                     GC_EXIT_RUNTIME);
    assert_int_equal(c.err.http_status, 404);
    disconnect(&c);
}

static int ignore_item(json_t *item, void *ctx, gc_error *err)
{
    (void)item, (void)ctx, (void)err;
    return 0;
}

/* A 401 makes the exec plugin run again, once, and the request is repeated with the new token. */
static void test_401_reruns_the_exec_plugin(void **state)
{
    (void)state;
    char *count = gc_xasprintf("%s/count-401", env->tmp);
    unlink(count);
    char *user = gc_xasprintf("    exec:\n"
                              "      apiVersion: client.authentication.k8s.io/v1\n"
                              "      command: " PLUGIN "\n"
                              "      args: [--count-file=%s, --token-prefix=gen]\n"
                              "      interactiveMode: Never\n",
                              count);
    script("{'GET /api/v1/namespaces/ns1/pods': [{'require_auth': 'Bearer gen-2', 'json': "
           "{'kind': 'PodList'}}]}");
    client c;
    connect_client(&c, (setup_opts){.user = user});
    assert_int_equal(gc_kube_get(c.k, "/api/v1/namespaces/ns1/pods", NULL, NULL, &c.err), 0);
    assert_int_equal(kube_test_count(count), 2);
    json_t *log = requests();
    assert_int_equal(json_array_size(log), 2);
    assert_string_equal(header(log, 0, "authorization"), "Bearer gen-1");
    assert_string_equal(header(log, 1, "authorization"), "Bearer gen-2");
    json_decref(log);

    /* Still rejected after the refresh: one refresh only, then a message with the fix. */
    kube_test_server_reset(&env->server);
    script("{'GET /api/v1/namespaces/ns1/pods': [{'require_auth': 'Bearer never', 'json': {}}]}");
    assert_int_equal(gc_kube_get(c.k, "/api/v1/namespaces/ns1/pods", NULL, NULL, &c.err),
                     GC_EXIT_RUNTIME);
    assert_int_equal(c.err.http_status, 401);
    assert_true(kube_test_contains(c.err.message, "rejected the credentials of user \"me\""));
    assert_true(kube_test_contains(c.err.message, "gcloud auth login"));
    assert_int_equal(kube_test_count(count), 3);

    /* Two lists sent together are both rejected: one refresh serves both. */
    kube_test_server_reset(&env->server);
    script("{'GET /api/v1/namespaces/ns1/pods': [{'require_auth': 'Bearer gen-4', 'json': "
           "{'kind': 'PodList', 'items': []}}],"
           "'GET /api/v1/namespaces/ns1/services': [{'require_auth': 'Bearer gen-4', 'json': "
           "{'kind': 'ServiceList', 'items': []}}]}");
    gc_kube_read reads[] = {{.path = "/api/v1/namespaces/ns1/pods", .on_item = ignore_item},
                            {.path = "/api/v1/namespaces/ns1/services", .on_item = ignore_item}};
    assert_int_equal(gc_kube_read_all(c.k, reads, 2), 0);
    assert_int_equal(kube_test_count(count), 4);
    log = requests();
    assert_int_equal(json_array_size(log), 4);
    assert_string_equal(header(log, 2, "authorization"), "Bearer gen-4");
    assert_string_equal(header(log, 3, "authorization"), "Bearer gen-4");
    json_decref(log);
    disconnect(&c);

    /* A static token cannot be refreshed: no second request. */
    kube_test_server_reset(&env->server);
    script("{'GET /api/v1/namespaces/ns1/pods': [{'require_auth': 'Bearer other', 'json': {}}]}");
    connect_client(&c, (setup_opts){0});
    assert_int_equal(gc_kube_get(c.k, "/api/v1/namespaces/ns1/pods", NULL, NULL, &c.err),
                     GC_EXIT_RUNTIME);
    assert_int_equal(gc_kube_request_count(c.k), 1);
    assert_false(kube_test_contains(c.err.message, TOKEN));
    disconnect(&c);
    free(user);
    free(count);
}

static void test_tls_verification(void **state)
{
    (void)state;
    script("{'GET /version': [{'json': {'gitVersion': 'v1.99.0'}, 'repeat': true}]}");
    client c;

    /* The wrong CA: a clear message, and no retry. */
    connect_client(&c, (setup_opts){.ca = env->pki.other_ca});
    assert_int_equal(gc_kube_get(c.k, "/version", NULL, NULL, &c.err), GC_EXIT_RUNTIME);
    assert_true(kube_test_contains(c.err.message, "cannot verify the TLS certificate of the API "
                                                  "server https://127.0.0.1:"));
    assert_true(kube_test_contains(c.err.message, "cluster \"test\""));
    assert_true(kube_test_contains(c.err.message, "certificate-authority"));
    assert_int_equal(c.err.http_status, 0);
    assert_int_equal(gc_kube_request_count(c.k), 1);
    disconnect(&c);

    /* No CA at all: the system roots do not know the test CA either. */
    connect_client(&c, (setup_opts){.ca = ""});
    assert_int_equal(gc_kube_get(c.k, "/version", NULL, NULL, &c.err), GC_EXIT_RUNTIME);
    if (!kube_test_contains(c.err.message, "the system's trusted CAs"))
        fail_msg("%s", c.err.message);
    disconnect(&c);

    /* insecure-skip-tls-verify is the only way around verification. */
    connect_client(&c, (setup_opts){.ca = "", .cluster = "    insecure-skip-tls-verify: true\n"});
    assert_int_equal(gc_kube_get(c.k, "/version", NULL, NULL, &c.err), 0);
    disconnect(&c);

    /* certificate-authority-data works like the file. */
    char *data = kube_test_base64_file(env->pki.ca);
    char *cluster = gc_xasprintf("    certificate-authority-data: %s\n", data);
    connect_client(&c, (setup_opts){.ca = "", .cluster = cluster});
    assert_int_equal(gc_kube_get(c.k, "/version", NULL, NULL, &c.err), 0);
    disconnect(&c);
    free(cluster);
    free(data);
}

/* tls-server-name: the certificate is checked against that name, not the server address. */
static void test_tls_server_name(void **state)
{
    (void)state;
    script("{'GET /version': [{'json': {}, 'repeat': true}]}");
    client c;
    connect_client(&c, (setup_opts){.cluster = "    tls-server-name: kube.test.internal\n"});
    assert_int_equal(gc_kube_get(c.k, "/version", NULL, NULL, &c.err), 0);
    disconnect(&c);
    json_t *log = requests();
    char want[64];
    snprintf(want, sizeof(want), "kube.test.internal:%d", env->server.port);
    assert_string_equal(header(log, 0, "host"), want);
    json_decref(log);

    connect_client(&c, (setup_opts){.cluster = "    tls-server-name: other.test.internal\n"});
    assert_int_equal(gc_kube_get(c.k, "/version", NULL, NULL, &c.err), GC_EXIT_RUNTIME);
    assert_true(kube_test_contains(c.err.message, "cannot verify the TLS certificate"));
    disconnect(&c);
}

static void test_client_certificates(void **state)
{
    (void)state;
    script("{'GET /version': [{'json': {}, 'repeat': true}]}");
    char *cert = kube_test_base64_file(env->pki.client_cert);
    char *key = kube_test_base64_file(env->pki.client_key);
    char *user =
        gc_xasprintf("    client-certificate-data: %s\n    client-key-data: %s\n", cert, key);
    client c;
    connect_client(&c, (setup_opts){.user = user});
    assert_int_equal(gc_kube_get(c.k, "/version", NULL, NULL, &c.err), 0);
    disconnect(&c);
    char *files = gc_xasprintf("    client-certificate: %s\n    client-key: %s\n",
                               env->pki.client_cert, env->pki.client_key);
    connect_client(&c, (setup_opts){.user = files});
    assert_int_equal(gc_kube_get(c.k, "/version", NULL, NULL, &c.err), 0);
    disconnect(&c);
    json_t *log = requests();
    assert_int_equal(json_array_size(log), 2);
    for (size_t i = 0; i < 2; i++) {
        assert_string_equal(field(log, i, "client_cn"), "test-user");
        assert_null(header(log, i, "authorization"));
    }
    json_decref(log);
    free(files);
    free(user);
    free(cert);
    free(key);
}

static void test_unreachable_server(void **state)
{
    (void)state;
    char url[64];
    snprintf(url, sizeof(url), "https://127.0.0.1:%d", kube_test_closed_port());
    client c;
    connect_client(&c, (setup_opts){.server = url});
    assert_int_equal(gc_kube_get(c.k, "/version", NULL, NULL, &c.err), GC_EXIT_RUNTIME);
    assert_int_equal(gc_kube_request_count(c.k), 1); /* a refused connection is not retried */
    assert_true(kube_test_contains(c.err.message, "cannot reach the API server"));
    assert_true(kube_test_contains(c.err.message, url));
    assert_true(kube_test_contains(c.err.message, "context \"t\""));
    assert_true(kube_test_contains(c.err.message, "--context"));
    assert_int_equal(c.err.http_status, 0);
    disconnect(&c);
}

/* proxy-url carries every request (and loopback is never proxied from the environment). */
static void test_proxy_url(void **state)
{
    (void)state;
    char *cluster = gc_xasprintf("    proxy-url: http://proxy-user:proxy-pa55@127.0.0.1:%d\n",
                                 kube_test_closed_port());
    client c;
    connect_client(&c, (setup_opts){.cluster = cluster});
    assert_int_equal(gc_kube_get(c.k, "/version", NULL, NULL, &c.err), GC_EXIT_RUNTIME);
    /* The proxy is named, its password is not. */
    assert_true(kube_test_contains(c.err.message, "through proxy http://<redacted>@127.0.0.1:"));
    assert_false(kube_test_contains(c.err.message, "proxy-pa55"));
    disconnect(&c);
    free(cluster);

    script("{'GET /version': [{'json': {}}]}");
    setenv("https_proxy", "http://127.0.0.1:1", 1);
    connect_client(&c, (setup_opts){0});
    int rc = gc_kube_get(c.k, "/version", NULL, NULL, &c.err);
    unsetenv("https_proxy");
    assert_int_equal(rc, 0);
    disconnect(&c);
}

static void test_request_timeout(void **state)
{
    (void)state;
    script("{'GET /slow': [{'chunks': [{'data': '{', 'delay': 0}], 'hold': 5}]}");
    client c;
    connect_client(&c, (setup_opts){.request_timeout = 1});
    assert_int_equal(gc_kube_get(c.k, "/slow", NULL, NULL, &c.err), GC_EXIT_RUNTIME);
    /* curl's time limit ended the request: the client hung up on the answer the server held
     * for 5 s, and did not send it again. */
    assert_true(kube_test_contains(c.err.message, "no answer from the API server"));
    assert_true(kube_test_contains(c.err.message, "in time"));
    assert_int_equal(gc_kube_request_count(c.k), 1);
    json_t *log = kube_test_server_log_ended(&env->server, 0);
    const char *who = json_string_value(json_object_get(json_array_get(log, 0), "ended_by"));
    assert_string_equal(who ? who : "(not recorded)", "client");
    json_decref(log);
    disconnect(&c);
}

static void test_warnings_are_surfaced(void **state)
{
    (void)state;
    script("{'GET /apis/kueue.x-k8s.io/v1beta1/clusterqueues': [{'headers': {'Warning': "
           "['299 - \\'kueue.x-k8s.io/v1beta1 ClusterQueue is deprecated\\'', '299 - "
           "\\'second\\''] }, 'json': {'items': []}}]}");
    client c;
    connect_client(&c, (setup_opts){0});
    assert_int_equal(
        gc_kube_get(c.k, "/apis/kueue.x-k8s.io/v1beta1/clusterqueues", NULL, NULL, &c.err), 0);
    assert_true(kube_test_contains(log_text(&c),
                                   "warning: kueue.x-k8s.io/v1beta1 ClusterQueue is deprecated\n"));
    assert_true(kube_test_contains(log_text(&c), "warning: second\n"));
    /* Shown once, however many answers repeat it. */
    script("{'GET /apis/kueue.x-k8s.io/v1beta1/clusterqueues': [{'headers': {'Warning': "
           "'299 - \\'second\\''}, 'json': {'items': []}}]}");
    assert_int_equal(
        gc_kube_get(c.k, "/apis/kueue.x-k8s.io/v1beta1/clusterqueues", NULL, NULL, &c.err), 0);
    assert_int_equal(test_events_count(&c.events, "warning: second"), 1);
    disconnect(&c);
}

/* -v -v shows requests and answers, and never a credential. */
static void test_traces_redact_credentials(void **state)
{
    (void)state;
    script("{'POST /api/v1/namespaces/ns1/secrets': [{'status': 201, 'json': {'kind': 'Secret', "
           "'metadata': {'name': 's'}, 'data': {'password': 'U0VDUkVULURBVEE='}}}],"
           "'GET /api/v1/namespaces/ns1/configmaps': [{'json': {'items': [], 'token': "
           "'SECRET-IN-ANSWER'}}]}");
    client c;
    connect_client(&c, (setup_opts){.verbose = 2});
    json_t *secret = json_pack("{s:s, s:s, s:{s:s}, s:{s:s}, s:{s:s}}", "apiVersion", "v1", "kind",
                               "Secret", "metadata", "name", "s", "data", "password",
                               "U0VDUkVULURBVEE=", "stringData", "key", "SECRET-STRING-DATA");
    json_t *pod = json_pack("{s:s, s:{s:[{s:s, s:[{s:s, s:s}, {s:s, s:s}]}]}}", "kind", "Pod",
                            "spec", "containers", "name", "c", "env", "name", "API_TOKEN", "value",
                            "SECRET-ENV-VALUE", "name", "MODE", "value", "visible-value");
    json_object_set_new(secret, "pod", pod);
    assert_int_equal(gc_kube_create(c.k, "/api/v1/namespaces/ns1/secrets", secret, 0, NULL, &c.err),
                     0);
    assert_int_equal(gc_kube_get(c.k, "/api/v1/namespaces/ns1/configmaps", NULL, NULL, &c.err), 0);
    const char *log = log_text(&c);
    char line[160];
    snprintf(line, sizeof(line), "GET %s/api/v1/namespaces/ns1/configmaps -> 200 OK (",
             env->server.url);
    assert_true(kube_test_contains(log, line));
    assert_true(kube_test_contains(log, "POST "));
    assert_true(kube_test_contains(log, "-> 201 Created ("));
    assert_true(kube_test_contains(log, "> Authorization: Bearer <redacted>"));
    assert_true(kube_test_contains(log, "< Content-Type: application/json"));
    assert_true(kube_test_contains(log, "visible-value")); /* bodies are shown... */
    static const char *const secrets[] = {TOKEN, "U0VDUkVULURBVEE=", "SECRET-STRING-DATA",
                                          "SECRET-ENV-VALUE", "SECRET-IN-ANSWER"};
    for (size_t i = 0; i < sizeof(secrets) / sizeof(*secrets); i++)
        if (kube_test_contains(log, secrets[i]))
            fail_msg("%s leaked into the trace:\n%s", secrets[i], log);
    json_decref(secret);
    disconnect(&c);
}

/* Whether text holds a control character other than a newline (messages use newlines to list
 * causes) or a C1 control. */
static bool has_control(const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f ||
            (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0))
            return true;
    return false;
}

/* A hostile server's error: escape sequences, a bell, a carriage return and a C1 CSI in its
 * message and causes, and the request's own Authorization header echoed back. Nothing of it
 * reaches a message or the trace raw, and the token nowhere. */
static void test_server_text_is_made_safe(void **state)
{
    (void)state;
    script("{'GET /api/v1/namespaces/ns1/pods/p': [{'status': 400, 'json': {'kind': 'Status', "
           "'code': 400, 'reason': 'BadRequest', 'message': '\\u001b[2J\\u0007cleared\\rover "
           "\\u00c2\\u009b31m you sent Authorization: Bearer " TOKEN "', 'details': {'causes': "
           "[{'field': 'x\\u001b]0;title\\u0007', 'message': 'token " TOKEN " is bad'}]}}}],"
           "'GET /api/v1/namespaces/ns1/pods/q': [{'status': 403, 'body': 'proxy says \\u001b[31m"
           "Authorization: Bearer " TOKEN "\\n second line'}]}");
    client c;
    connect_client(&c, (setup_opts){.verbose = 2});
    assert_int_equal(gc_kube_get(c.k, "/api/v1/namespaces/ns1/pods/p", NULL, NULL, &c.err),
                     GC_EXIT_RUNTIME);
    if (has_control(c.err.message) || kube_test_contains(c.err.message, TOKEN))
        fail_msg("unsafe message: %s", c.err.message);
    assert_true(kube_test_contains(c.err.message, "\\x1b[2J\\x07cleared\\x0dover"));
    assert_true(kube_test_contains(c.err.message, "Authorization: Bearer <redacted>"));
    assert_true(kube_test_contains(c.err.message, "\n  - x\\x1b]0;title\\x07: token <redacted>"));
    assert_int_equal(gc_kube_get(c.k, "/api/v1/namespaces/ns1/pods/q", NULL, NULL, &c.err),
                     GC_EXIT_RUNTIME);
    if (has_control(c.err.message) || kube_test_contains(c.err.message, TOKEN))
        fail_msg("unsafe message: %s", c.err.message);
    if (!kube_test_contains(c.err.message, "HTTP 403 Forbidden: proxy says \\x1b[31m"))
        fail_msg("%s", c.err.message);
    if (kube_test_contains(log_text(&c), TOKEN))
        fail_msg("the token reached the trace:\n%s", log_text(&c));
    disconnect(&c);
}

/* An error answer to a list larger than the layer keeps (1 MiB): the Status' own message, and
 * what happened to the rest, not advice about paging. */
static void test_huge_status_on_a_list(void **state)
{
    (void)state;
    char *huge = gc_xmalloc(2u << 20);
    memset(huge, 'y', (2u << 20) - 1);
    huge[(2u << 20) - 1] = '\0';
    json_t *doc = json_pack("{s:[{s:i, s:{s:s, s:s, s:s, s:s, s:{s:[{s:s}]}}}]}",
                            "GET /api/v1/namespaces/ns1/pods", "status", 500, "json", "kind",
                            "Status", "status", "Failure", "reason", "InternalError", "message",
                            "etcd is on fire", "details", "causes", "message", huge);
    char *text = json_dumps(doc, JSON_COMPACT);
    assert_true(kube_test_server_script(&env->server, text));
    free(text);
    json_decref(doc);
    free(huge);
    client c;
    connect_client(&c, (setup_opts){0});
    assert_int_equal(
        gc_kube_list(c.k, "/api/v1/namespaces/ns1/pods", NULL, ignore_item, NULL, NULL, &c.err),
        GC_EXIT_RUNTIME);
    assert_int_equal(c.err.http_status, 500);
    assert_string_equal(c.err.reason, "InternalError");
    assert_true(kube_test_contains(c.err.message, "etcd is on fire"));
    assert_true(kube_test_contains(c.err.message, "larger than 1024 KiB and was cut"));
    assert_false(kube_test_contains(c.err.message, "512 MiB"));
    disconnect(&c);
}

/* After libcurl's sockets were busy, the next waits are short and double while they stay quiet
 * (libcurl 7.88 may hold a stream's end until the next look), then the caller's own wait is
 * back; a busy poll starts over, and a caller's shorter wait always wins. */
static void test_waits_after_busy_sockets(void **state)
{
    (void)state;
    kube_multi_pace pace = {0};
    assert_int_equal(kube_pace_wait(&pace, 1000), 1000);
    assert_int_equal(kube_pace_wait(&pace, -1), -1);
    kube_pace_waited(&pace, false);
    assert_int_equal(kube_pace_wait(&pace, 1000), 1000);

    kube_pace_waited(&pace, true);
    int waits[12], n = 0;
    for (; n < 12 && kube_pace_wait(&pace, 1000) < 1000; n++) {
        waits[n] = kube_pace_wait(&pace, 1000);
        kube_pace_waited(&pace, false);
    }
    const int want[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
    assert_int_equal(n, 10);
    assert_memory_equal(waits, want, sizeof(want));
    assert_int_equal(kube_pace_wait(&pace, -1), -1);

    kube_pace_waited(&pace, true);
    kube_pace_waited(&pace, false);
    kube_pace_waited(&pace, false);
    assert_int_equal(kube_pace_wait(&pace, -1), 4);
    assert_int_equal(kube_pace_wait(&pace, 3), 3);
    kube_pace_waited(&pace, true);
    assert_int_equal(kube_pace_wait(&pace, 1000), 1);
}

static void test_paths(void **state)
{
    (void)state;
    char *p = gc_kube_path("jobset.x-k8s.io", "v1alpha2", "team a", "jobsets", "x/y");
    assert_string_equal(p, "/apis/jobset.x-k8s.io/v1alpha2/namespaces/team%20a/jobsets/x%2Fy");
    free(p);
    p = gc_kube_path("kueue.x-k8s.io", "v1beta2", NULL, "clusterqueues", NULL);
    assert_string_equal(p, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues");
    free(p);
    p = gc_kube_path("", "v1", "default", "pods", NULL);
    assert_string_equal(p, "/api/v1/namespaces/default/pods");
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_get_sends_what_the_api_expects, kube_test_env_reset),
        cmocka_unit_test_setup(test_sequential_requests_reuse_one_connection, kube_test_env_reset),
        cmocka_unit_test_setup(test_429_retried_after_retry_after, kube_test_env_reset),
        cmocka_unit_test_setup(test_5xx_and_resets_retried_then_given_up, kube_test_env_reset),
        cmocka_unit_test_setup(test_status_errors_become_one_message, kube_test_env_reset),
        cmocka_unit_test_setup(test_create_flags_and_body, kube_test_env_reset),
        cmocka_unit_test_setup(test_create_retries_only_when_safe, kube_test_env_reset),
        cmocka_unit_test_setup(test_create_lost_answer_found_by_name, kube_test_env_reset),
        cmocka_unit_test_setup(test_create_lost_answer_not_created_is_resent, kube_test_env_reset),
        cmocka_unit_test_setup(test_create_resent_by_libcurl_then_409_is_ours, kube_test_env_reset),
        cmocka_unit_test_setup(test_apply_patch_and_delete, kube_test_env_reset),
        cmocka_unit_test_setup(test_401_reruns_the_exec_plugin, kube_test_env_reset),
        cmocka_unit_test_setup(test_tls_verification, kube_test_env_reset),
        cmocka_unit_test_setup(test_tls_server_name, kube_test_env_reset),
        cmocka_unit_test_setup(test_client_certificates, kube_test_env_reset),
        cmocka_unit_test_setup(test_unreachable_server, kube_test_env_reset),
        cmocka_unit_test_setup(test_proxy_url, kube_test_env_reset),
        cmocka_unit_test_setup(test_request_timeout, kube_test_env_reset),
        cmocka_unit_test_setup(test_warnings_are_surfaced, kube_test_env_reset),
        cmocka_unit_test_setup(test_traces_redact_credentials, kube_test_env_reset),
        cmocka_unit_test_setup(test_server_text_is_made_safe, kube_test_env_reset),
        cmocka_unit_test_setup(test_huge_status_on_a_list, kube_test_env_reset),
        cmocka_unit_test(test_waits_after_busy_sockets),
        cmocka_unit_test(test_paths),
    };
    return cmocka_run_group_tests(tests, setup, kube_test_env_teardown);
}
