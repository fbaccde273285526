#include "image/registry.h"

#include "image/credentials.h"
#include "image/reference.h"

#include "gcluster/sys.h"

#include <jansson.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Manifests, configs and error documents are small; anything bigger kept in memory is a
 * misbehaving server, not an image. */
#define MAX_MEMORY_BODY (64L * 1024 * 1024)

struct image_registry {
    char *name;     /* as in the reference: "docker.io" */
    char *base_url; /* "https://registry-1.docker.io" */
    bool loopback;
    gc_http_trace trace;
    CURL *curl;
    char *authorization; /* "Bearer ..." or "Basic ..." once earned; secret */
    char **scopes;
    size_t scope_count;
    bool credentials_loaded;
    image_credentials credentials;
    char *credentials_problem; /* why none could be had, to explain a later 401 */
};

int image_registry_open(const char *registry, const gc_http_trace *trace, image_registry **out,
                        gc_error *err)
{
    *out = NULL;
    int rc = gc_http_init(err);
    if (rc)
        return rc;
    CURL *curl = curl_easy_init();
    if (!curl)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot create a libcurl handle for %s", registry);
    image_registry *r = gc_xcalloc(1, sizeof(*r));
    r->name = gc_xstrdup(registry);
    r->loopback = image_registry_is_loopback(registry);
    r->base_url =
        gc_xasprintf("%s://%s", r->loopback ? "http" : "https", image_registry_api_host(registry));
    if (trace)
        r->trace = *trace;
    r->curl = curl;
    *out = r;
    return 0;
}

static void wipe_free(char *secret)
{
    if (secret) {
        OPENSSL_cleanse(secret, strlen(secret));
        free(secret);
    }
}

void image_registry_free(image_registry *r)
{
    if (!r)
        return;
    curl_easy_cleanup(r->curl);
    free(r->name);
    free(r->base_url);
    wipe_free(r->authorization);
    for (size_t i = 0; i < r->scope_count; i++)
        free(r->scopes[i]);
    free(r->scopes);
    image_credentials_free(&r->credentials);
    free(r->credentials_problem);
    free(r);
}

void image_registry_add_scope(image_registry *r, const char *scope)
{
    for (size_t i = 0; i < r->scope_count; i++)
        if (strcmp(r->scopes[i], scope) == 0)
            return;
    r->scopes = gc_xrealloc(r->scopes, (r->scope_count + 1) * sizeof(*r->scopes));
    r->scopes[r->scope_count++] = gc_xstrdup(scope);
}

void image_registry_response_init(image_registry_response *resp)
{
    memset(resp, 0, sizeof(*resp));
    gc_buf_init(&resp->body);
}

static void clear_headers(image_registry_response *resp)
{
    free(resp->content_type);
    free(resp->location);
    free(resp->docker_digest);
    free(resp->www_authenticate);
    resp->content_type = resp->location = resp->docker_digest = resp->www_authenticate = NULL;
}

void image_registry_response_free(image_registry_response *resp)
{
    clear_headers(resp);
    gc_buf_free(&resp->body);
}

/* Gets a response ready for a retry of the same request. */
static void response_reset(image_registry_response *resp)
{
    clear_headers(resp);
    gc_buf_reset(&resp->body);
    resp->status = 0;
}

/* --- WWW-Authenticate ------------------------------------------------------------------ */

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == ',')
        p++;
    return p;
}

/* Reads `key=value` or `key="quoted \"value\""`; returns the position after it, or NULL. */
static const char *read_param(const char *p, char **key, char **value)
{
    size_t klen = strcspn(p, "= \t,");
    if (!klen || p[klen] != '=')
        return NULL;
    *key = gc_xstrndup(p, klen);
    p += klen + 1;
    gc_buf v;
    gc_buf_init(&v);
    if (*p == '"') {
        for (p++; *p && *p != '"'; p++) {
            if (*p == '\\' && p[1])
                p++;
            gc_buf_putc(&v, *p);
        }
        if (*p == '"')
            p++;
    } else {
        size_t vlen = strcspn(p, " \t,");
        gc_buf_append(&v, p, vlen);
        p += vlen;
    }
    *value = gc_buf_detach(&v);
    return p;
}

int image_auth_challenge_parse(const char *header, image_auth_challenge *out)
{
    memset(out, 0, sizeof(*out));
    const char *p = skip_space(header);
    size_t slen = strcspn(p, " \t");
    if (!slen)
        return -1;
    out->scheme = gc_xstrndup(p, slen);
    p = skip_space(p + slen);
    while (*p) {
        char *key = NULL, *value = NULL;
        const char *next = read_param(p, &key, &value);
        if (!next) {
            free(key);
            break;
        }
        char **slot = strcasecmp(key, "realm") == 0     ? &out->realm
                      : strcasecmp(key, "service") == 0 ? &out->service
                      : strcasecmp(key, "scope") == 0   ? &out->scope
                                                        : NULL;
        if (slot && !*slot)
            *slot = value;
        else
            free(value);
        free(key);
        p = skip_space(next);
    }
    return 0;
}

void image_auth_challenge_free(image_auth_challenge *c)
{
    free(c->scheme);
    free(c->realm);
    free(c->service);
    free(c->scope);
    memset(c, 0, sizeof(*c));
}

/* --- one HTTP exchange ----------------------------------------------------------------- */

/* A blob upload read from its temporary file. */
static size_t read_file(char *buf, size_t size, void *ctx)
{
    FILE *f = ctx;
    size_t n = fread(buf, 1, size, f);
    return n < size && ferror(f) ? GC_HTTP_READ_ABORT : n;
}

/* A 2xx body that goes to a file, hashed on the way. */
static bool write_sink(const char *data, size_t len, void *ctx)
{
    image_registry_response *resp = ctx;
    if (fwrite(data, 1, len, resp->sink) != len) {
        resp->sink_failed = true;
        return false;
    }
    if (resp->sink_hash)
        image_sha256_update(resp->sink_hash, data, len);
    resp->sink_bytes += (long long)len;
    return true;
}

static char *header_copy(const gc_http_transfer *t, const char *name)
{
    const char *v = gc_http_header(t, name);
    return v ? gc_xstrdup(v) : NULL;
}

/* Moves the transfer's outcome into the registry's response. */
static void take_response(gc_http_transfer *t, image_registry_response *resp)
{
    clear_headers(resp);
    resp->status = t->status;
    gc_buf body = resp->body;
    resp->body = t->body;
    t->body = body;
    resp->content_type = header_copy(t, "Content-Type");
    resp->location = header_copy(t, "Location");
    resp->docker_digest = header_copy(t, "Docker-Content-Digest");
    resp->www_authenticate = header_copy(t, "WWW-Authenticate");
}

static char *resolve_url(const image_registry *r, const char *url)
{
    CURLU *u = curl_url();
    char *resolved = NULL;
    if (curl_url_set(u, CURLUPART_URL, r->base_url, 0) == CURLUE_OK &&
        curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_URL, &resolved, 0) == CURLUE_OK) {
        char *copy = gc_xstrdup(resolved);
        curl_free(resolved);
        resolved = copy;
    }
    curl_url_cleanup(u);
    return resolved;
}

/* "scheme://host:port" with the default port filled in, to compare origins. */
static char *url_origin(const char *url)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL, *origin = NULL;
    if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
        curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
        origin = gc_xasprintf("%s://%s:%s", scheme, host, port);
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return origin;
}

static bool same_origin(const char *a, const char *b)
{
    char *oa = url_origin(a), *ob = url_origin(b);
    bool same = oa && ob && strcasecmp(oa, ob) == 0;
    free(oa);
    free(ob);
    return same;
}

static bool url_is_allowed(const image_registry *r, const char *url)
{
    if (strncasecmp(url, "https://", 8) == 0)
        return true;
    if (strncasecmp(url, "http://", 7) != 0)
        return false;
    char *origin = url_origin(url);
    bool loopback = false;
    if (origin) {
        const char *host = origin + strlen("http://");
        loopback = image_registry_is_loopback(host);
    }
    free(origin);
    return loopback && r->loopback;
}

/* Accept and Authorization as header lines (the caller wipes and frees them). Authorization
 * goes only to `auth_origin`: an upload location on another host gets none, and libcurl keeps
 * it off hosts a read is redirected to. */
static void request_headers(const char *url, const char *accept, const char *authorization,
                            const char *auth_origin, char *lines[3])
{
    size_t n = 0;
    if (accept)
        lines[n++] = gc_xasprintf("Accept: %s", accept);
    if (authorization && same_origin(url, auth_origin))
        lines[n++] = gc_xasprintf("Authorization: %s", authorization);
    lines[n] = NULL;
}

/* One exchange. `authorization` is sent only to `auth_origin`'s scheme, host and port. */
static int perform(image_registry *r, const char *method, const char *url, const char *accept,
                   const image_registry_body *body, const char *authorization,
                   const char *auth_origin, image_registry_response *resp, gc_error *err)
{
    int shown = (int)strcspn(url, "?"); /* queries may hold signatures: never in messages */
    if (!url_is_allowed(r, url))
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "refusing to contact %.*s without TLS: plain HTTP is only used for "
                       "registries on this machine",
                       shown, url);
    if (body && body->file && fseeko(body->file, 0, SEEK_SET) != 0)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot rewind the upload to %.*s", shown, url);
    gc_http_body http_body = {.content_type = body ? body->content_type : NULL};
    if (body && body->file) {
        http_body.read = read_file;
        http_body.read_ctx = body->file;
        http_body.size = body->size;
    } else if (body) {
        http_body.data = body->data;
        http_body.len = body->len;
    }
    char *headers[3];
    request_headers(url, accept, authorization, auth_origin, headers);
    /* Blobs are often served from a CDN or a storage bucket by redirect; bodies are not
     * replayed, so only reads follow redirects. */
    bool is_read = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    gc_http_request req = {
        .method = method,
        .url = url,
        .headers = (const char *const *)headers,
        .body = body ? &http_body : NULL,
        .protocols = r->loopback ? "http,https" : "https",
        .follow_redirects = is_read,
        .connect_timeout_ms = 30 * 1000L,
        /* A transfer that moves under 1 KiB/s for a minute is dead, not slow. */
        .stall_seconds = 60,
        .stall_bytes_per_second = 1024,
        .on_data = resp->sink ? write_sink : NULL,
        .ctx = resp,
        .body_max = MAX_MEMORY_BODY,
        .trace = &r->trace,
    };
    gc_http_transfer t;
    gc_http_transfer_init(&t);
    gc_http_perform(&t, r->curl, &req);
    for (char **h = headers; *h; h++)
        wipe_free(*h);
    take_response(&t, resp);
    int rc = 0;
    if (t.too_large)
        rc = gc_fail(err, GC_EXIT_RUNTIME, "%s %.*s: the response is larger than %ld MiB", method,
                     shown, url, MAX_MEMORY_BODY >> 20);
    else if (resp->sink_failed)
        rc = gc_fail(err, GC_EXIT_RUNTIME, "%s %.*s: cannot write to a temporary file", method,
                     shown, url);
    else if (t.result != CURLE_OK)
        rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot reach %s: %s", r->name,
                     t.error[0] ? t.error : curl_easy_strerror(t.result));
    gc_http_transfer_free(&t);
    return rc;
}

/* --- authentication -------------------------------------------------------------------- */

static void load_credentials(image_registry *r)
{
    if (r->credentials_loaded)
        return;
    r->credentials_loaded = true;
    gc_error cred_err = {0};
    if (image_credentials_lookup(r->name, &r->credentials, &cred_err) != 0)
        r->credentials_problem = gc_xstrdup(cred_err.message);
}

static char *basic_authorization(const image_credentials *c)
{
    char *pair = gc_xasprintf("%s:%s", c->username, c->password);
    char *encoded = gc_base64_encode(pair, strlen(pair));
    char *header = gc_xasprintf("Basic %s", encoded);
    wipe_free(pair);
    wipe_free(encoded);
    return header;
}

static void append_query(gc_buf *url, const char *key, const char *value)
{
    char *escaped = curl_easy_escape(NULL, value, 0);
    gc_buf_printf(url, "%c%s=%s", strchr(url->data, '?') ? '&' : '?', key, escaped);
    curl_free(escaped);
}

static char *token_url(const image_registry *r, const image_auth_challenge *ch)
{
    gc_buf url;
    gc_buf_init(&url);
    gc_buf_puts(&url, ch->realm);
    if (ch->service)
        append_query(&url, "service", ch->service);
    if (ch->scope)
        append_query(&url, "scope", ch->scope);
    for (size_t i = 0; i < r->scope_count; i++)
        if (!ch->scope || strcmp(ch->scope, r->scopes[i]) != 0)
            append_query(&url, "scope", r->scopes[i]);
    return gc_buf_detach(&url);
}

static int parse_token(image_registry *r, const image_registry_response *resp, gc_error *err)
{
    json_t *doc = json_loadb(resp->body.data, resp->body.len, 0, NULL);
    const char *token = json_string_value(json_object_get(doc, "token"));
    if (!token || !*token)
        token = json_string_value(json_object_get(doc, "access_token"));
    int rc = 0;
    if (token && *token) {
        wipe_free(r->authorization);
        r->authorization = gc_xasprintf("Bearer %s", token);
    } else {
        rc = gc_fail(err, GC_EXIT_RUNTIME, "the token service of %s sent no token", r->name);
    }
    if (doc)
        OPENSSL_cleanse(resp->body.data, resp->body.len);
    json_decref(doc);
    return rc;
}

static int fetch_token(image_registry *r, const image_auth_challenge *ch, gc_error *err)
{
    if (!ch->realm)
        return gc_fail(err, GC_EXIT_RUNTIME, "%s asked for a token but named no token service",
                       r->name);
    char *url = token_url(r, ch);
    char *basic = r->credentials.username ? basic_authorization(&r->credentials) : NULL;
    image_registry_response resp;
    image_registry_response_init(&resp);
    /* The token service is usually another host (auth.docker.io): the one the registry named
     * in its challenge, reached over TLS, is the only one the credentials go to. */
    int rc = perform(r, "GET", url, "application/json", NULL, basic, url, &resp, err);
    if (!rc && resp.status != 200)
        rc = image_registry_fail(r, &resp, "getting a token", err);
    if (!rc)
        rc = parse_token(r, &resp, err);
    image_registry_response_free(&resp);
    wipe_free(basic);
    free(url);
    return rc;
}

static int authenticate(image_registry *r, const char *header, gc_error *err)
{
    image_auth_challenge ch;
    if (image_auth_challenge_parse(header, &ch) != 0)
        return gc_fail(err, GC_EXIT_RUNTIME, "%s sent an unreadable WWW-Authenticate header",
                       r->name);
    load_credentials(r);
    int rc = 0;
    if (strcasecmp(ch.scheme, "Bearer") == 0) {
        rc = fetch_token(r, &ch, err);
    } else if (strcasecmp(ch.scheme, "Basic") == 0 && r->credentials.username) {
        wipe_free(r->authorization);
        r->authorization = basic_authorization(&r->credentials);
    } else if (strcasecmp(ch.scheme, "Basic") == 0) {
        rc = gc_fail(err, GC_EXIT_RUNTIME, "%s requires a login%s%s", r->name,
                     r->credentials_problem ? ": " : " (run `docker login`)",
                     r->credentials_problem ? r->credentials_problem : "");
    } else {
        rc = gc_fail(err, GC_EXIT_RUNTIME, "%s asks for %s authentication, which is not supported",
                     r->name, ch.scheme);
    }
    image_auth_challenge_free(&ch);
    return rc;
}

int image_registry_send(image_registry *r, const char *method, const char *url, const char *accept,
                        const image_registry_body *body, image_registry_response *resp,
                        gc_error *err)
{
    char *full = resolve_url(r, url);
    if (!full)
        return gc_fail(err, GC_EXIT_RUNTIME, "%s sent an unusable URL", r->name);
    int rc = perform(r, method, full, accept, body, r->authorization, r->base_url, resp, err);
    /* A 401 names what it wants; earn it once and retry. A second 401 is the answer. */
    if (!rc && resp->status == 401 && resp->www_authenticate) {
        char *challenge = gc_xstrdup(resp->www_authenticate);
        rc = authenticate(r, challenge, err);
        free(challenge);
        if (!rc) {
            /* A 401 body went to resp->body, never to a sink, so nothing streamed needs undoing. */
            response_reset(resp);
            rc = perform(r, method, full, accept, body, r->authorization, r->base_url, resp, err);
        }
    }
    free(full);
    return rc;
}

/* "MANIFEST_UNKNOWN: manifest unknown" from the registry's error document, if it sent one. */
static void describe_errors(const image_registry_response *resp, gc_buf *out)
{
    json_t *doc = json_loadb(resp->body.data, resp->body.len, 0, NULL);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(doc, "errors"), i, e)
    {
        const char *code = json_string_value(json_object_get(e, "code"));
        const char *message = json_string_value(json_object_get(e, "message"));
        gc_buf_printf(out, "%s%s%s%s", i ? "; " : ": ", code ? code : "",
                      code && message ? ": " : "", message ? message : "");
    }
    json_decref(doc);
}

int image_registry_fail(image_registry *r, const image_registry_response *resp, const char *what,
                        gc_error *err)
{
    gc_buf detail;
    gc_buf_init(&detail);
    describe_errors(resp, &detail);
    const char *hint = "";
    if (resp->status == 401 || resp->status == 403) {
        load_credentials(r);
        hint = r->credentials_problem                ? r->credentials_problem
               : r->credentials.username             ? "check that your account may access it"
               : image_registry_uses_gcloud(r->name) ? "run `gcloud auth login`"
                                                     : "run `docker login` for it";
    }
    int rc = gc_fail(err, GC_EXIT_RUNTIME, "%s: %s answered HTTP %ld%s%s%s", what, r->name,
                     resp->status, detail.data, hint[0] ? "; " : "", hint);
    if (err)
        err->http_status = (int)resp->status;
    gc_buf_free(&detail);
    return rc;
}
