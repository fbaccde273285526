/*
 * Opening a client: read the kubeconfig, select the context (running gcloud when allowed and
 * needed), prepare the endpoint and credentials. Nothing is sent to the server here: the first
 * request does that, so commands that end early cost no round trip, and an exec plugin only
 * runs when a credential is really needed.
 */
#include "kube/internal.h"

#include "gcluster/process.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_EXEC_TIMEOUT_S    60
#define DEFAULT_REQUEST_TIMEOUT_S 60
/* A list read as it arrives may rightly take longer than one request (tens of thousands of
 * pods), as long as content keeps coming (the request timeout is its stall limit), but not
 * without end: a server that keeps sending without finishing is cut at this many request
 * timeouts (5 min by default). */
#define LIST_TIMEOUTS 5

/* xorshift64*: plenty for jitter. */
unsigned kube_random(gc_kube *k, unsigned bound)
{
    uint64_t x = k->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    k->rng = x;
    return bound ? (unsigned)((x * 0x2545F4914F6CDD1DULL) >> 33) % bound : 0;
}

static void gcloud_hint(const gc_kube_options *opts, const char *why, gc_error *err)
{
    size_t len = strlen(err->message);
    snprintf(err->message + len, sizeof(err->message) - len,
             "; run `gcloud container clusters get-credentials %s --location %s%s%s` to add it "
             "(%s), or pass --context",
             opts->cluster, opts->location, opts->project && opts->project[0] ? " --project " : "",
             opts->project && opts->project[0] ? opts->project : "", why);
    err->code = GC_EXIT_USAGE;
}

/* No context for --cluster/--location: let gcloud write one, then read the files again. */
static int select_with_gcloud(gc_kube *k, const gc_kube_options *opts, gc_error *err)
{
    char *gcloud = opts->allow_gcloud ? gc_process_find_program("gcloud") : NULL;
    if (!gcloud) {
        gcloud_hint(opts, opts->allow_gcloud ? "gcloud is not on PATH" : "not done automatically",
                    err);
        return GC_EXIT_USAGE;
    }
    int rc = kube_gcloud_get_credentials(opts, gcloud, k->trace.events, err);
    free(gcloud);
    if (!rc) {
        kube_config_free(&k->cfg);
        rc = kube_config_load(opts->kubeconfig, &k->cfg, err);
    }
    if (!rc)
        rc = kube_select(&k->cfg, opts, &k->sel, err);
    if (rc == KUBE_NO_GKE_CONTEXT) {
        gc_error_prefix(err, "gcloud container clusters get-credentials succeeded, but still ");
        err->code = rc = GC_EXIT_USAGE;
    }
    return rc;
}

static int select_context(gc_kube *k, const gc_kube_options *opts, gc_error *err)
{
    int rc = kube_config_load(opts->kubeconfig, &k->cfg, err);
    if (rc)
        return rc;
    rc = kube_select(&k->cfg, opts, &k->sel, err);
    if (rc == KUBE_NO_GKE_CONTEXT)
        return select_with_gcloud(k, opts, err);
    if (rc && !k->cfg.file_count) {
        const char *env = getenv("KUBECONFIG");
        return gc_fail(err, GC_EXIT_USAGE,
                       "no kubeconfig found (%s%s); pass --kubeconfig, or "
                       "--cluster and --location to fetch credentials with gcloud",
                       env && env[0] ? "none of the files in $KUBECONFIG exists: "
                                     : "~/.kube/config does not exist",
                       env && env[0] ? env : "");
    }
    return rc;
}

/* The URL requests go to. With tls-server-name the URL names that host (so that SNI and
 * certificate checks use it) and CONNECT_TO routes the connection to the real address. */
static int setup_endpoint(gc_kube *k, gc_error *err)
{
    const kube_cluster *c = k->sel.cluster;
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *url = NULL;
    int rc = 0;
    if (curl_url_set(u, CURLUPART_URL, c->server, CURLU_DEFAULT_SCHEME) ||
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
        (strcmp(scheme, "https") && strcmp(scheme, "http")))
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "%s: server \"%s\" of cluster \"%s\" is not an https:// "
                     "URL",
                     c->id.where, c->server, c->id.name);
    else if (c->tls_server_name && c->tls_server_name[0] &&
             !curl_url_get(u, CURLUPART_HOST, &host, 0) &&
             !curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
        char *route = gc_xasprintf("%s:%s:%s:%s", c->tls_server_name, port, host, port);
        k->connect_to = curl_slist_append(NULL, route);
        free(route);
        curl_url_set(u, CURLUPART_HOST, c->tls_server_name, 0);
    }
    if (!rc && !curl_url_get(u, CURLUPART_URL, &url, 0))
        k->base_url = gc_xstrdup(url);
    else if (!rc)
        rc = gc_fail(err, GC_EXIT_USAGE, "%s: server \"%s\" of cluster \"%s\" is not a valid URL",
                     c->id.where, c->server, c->id.name);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_free(url);
    curl_url_cleanup(u);
    return rc;
}

/* Like Go's net/http, never send loopback traffic through an environment proxy; a proxy-url in
 * the kubeconfig is used for everything. */
static void setup_noproxy(gc_kube *k)
{
    if (k->sel.cluster->proxy_url) {
        k->noproxy = gc_xstrdup("");
        return;
    }
    const char *env = getenv("no_proxy");
    if (!env || !env[0])
        env = getenv("NO_PROXY");
    k->noproxy =
        gc_xasprintf("%s%slocalhost,127.0.0.0/8,::1", env ? env : "", env && env[0] ? "," : "");
}

int gc_kube_open(const gc_kube_options *opts, gc_kube **out, gc_error *err)
{
    gc_error local;
    static const gc_kube_options defaults = {0};
    if (!err)
        err = &local;
    if (!opts)
        opts = &defaults;
    gc_error_clear(err);
    *out = NULL;
    int rc = gc_http_init(err);
    if (rc)
        return rc;
    gc_kube *k = gc_xcalloc(1, sizeof(*k));
    gc_buf_init(&k->warnings_seen);
    k->trace = (gc_http_trace){.events = opts->events,
                               .verbose = opts->verbose,
                               .redact = kube_redact_trace,
                               .redact_ctx = k};
    k->exec_timeout_ms = 1000 * (opts->exec_timeout_seconds > 0 ? opts->exec_timeout_seconds
                                                                : DEFAULT_EXEC_TIMEOUT_S);
    k->request_timeout_ms =
        1000L * (opts->request_timeout_seconds > 0 ? opts->request_timeout_seconds
                                                   : DEFAULT_REQUEST_TIMEOUT_S);
    k->list_timeout_ms = LIST_TIMEOUTS * k->request_timeout_ms;
    k->wall_clock = opts->wall_clock ? opts->wall_clock : gc_clock_wall;
    k->rng = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ (uint64_t)(uintptr_t)k;
    k->rng = k->rng ? k->rng : 1;
    rc = select_context(k, opts, err);
    if (!rc) {
        const char *ns = opts->ns && opts->ns[0] ? opts->ns : k->sel.context->ns;
        k->ns = gc_xstrdup(ns && ns[0] ? ns : "default");
        rc = setup_endpoint(k, err);
    }
    if (!rc)
        rc = kube_auth_init(k, err);
    if (rc) {
        gc_kube_close(k);
        return rc;
    }
    setup_noproxy(k);
    *out = k;
    return 0;
}

void gc_kube_close(gc_kube *kube)
{
    if (!kube)
        return;
    for (int i = 0; i < KUBE_MAX_NESTING; i++)
        if (kube->easy[i])
            curl_easy_cleanup(kube->easy[i]);
    if (kube->share) /* after every handle that used it */
        curl_share_cleanup(kube->share);
    kube_credential_clear(&kube->cred);
    kube_blob_free(&kube->ca);
    kube_blob_free(&kube->client_cert);
    kube_blob_free(&kube->client_key);
    curl_slist_free_all(kube->connect_to);
    free(kube->base_url);
    free(kube->noproxy);
    free(kube->ns);
    gc_buf_free(&kube->warnings_seen);
    kube_config_free(&kube->cfg);
    free(kube);
}

const char *gc_kube_namespace(const gc_kube *kube)
{
    return kube->ns;
}

const char *kube_context_name(const gc_kube *kube)
{
    return kube->sel.context->id.name;
}

const char *kube_server(const gc_kube *kube)
{
    return kube->sel.cluster->server;
}

unsigned gc_kube_request_count(const gc_kube *kube)
{
    return kube->request_count;
}

unsigned gc_kube_round_trip_count(const gc_kube *kube)
{
    return kube->round_trips;
}
