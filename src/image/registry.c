#include "image/registry.h"

#include "image/credentials.h"
#include "image/reference.h"

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Manifests, configs and error documents are small; anything bigger kept in memory is a
 * misbehaving server, not an image. */
#define MAX_MEMORY_BODY (64L * 1024 * 1024)

struct gc_registry {
    char *name;     /* as in the reference: "docker.io" */
    char *base_url; /* "https://registry-1.docker.io" */
    bool loopback;
    FILE *log;
    int verbose;
    CURL *curl;
    char *authorization; /* "Bearer ..." or "Basic ..." once earned; secret */
    char **scopes;
    size_t scope_count;
    bool credentials_loaded;
    gc_credentials credentials;
    char *credentials_problem; /* why none could be had, to explain a later 401 */
};

gc_registry *gc_registry_new(const char *registry, FILE *log, int verbose)
{
    gc_registry *r = gc_xcalloc(1, sizeof(*r));
    r->name = gc_xstrdup(registry);
    r->loopback = gc_registry_is_loopback(registry);
    r->base_url =
        gc_xasprintf("%s://%s", r->loopback ? "http" : "https", gc_registry_api_host(registry));
    r->log = log ? log : stderr;
    r->verbose = verbose;
    r->curl = curl_easy_init();
    if (!r->curl) {
        fprintf(stderr, "gcluster: curl_easy_init failed\n");
        abort();
    }
    return r;
}

static void wipe_free(char *secret)
{
    if (secret) {
        OPENSSL_cleanse(secret, strlen(secret));
        free(secret);
    }
}

void gc_registry_free(gc_registry *r)
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
    gc_credentials_free(&r->credentials);
    free(r->credentials_problem);
    free(r);
}

void gc_registry_add_scope(gc_registry *r, const char *scope)
{
    for (size_t i = 0; i < r->scope_count; i++)
        if (strcmp(r->scopes[i], scope) == 0)
            return;
    r->scopes = gc_xrealloc(r->scopes, (r->scope_count + 1) * sizeof(*r->scopes));
    r->scopes[r->scope_count++] = gc_xstrdup(scope);
}

void gc_http_response_init(gc_http_response *resp)
{
    memset(resp, 0, sizeof(*resp));
    gc_buf_init(&resp->body);
}

static void clear_headers(gc_http_response *resp)
{
    free(resp->content_type);
    free(resp->location);
    free(resp->docker_digest);
    free(resp->www_authenticate);
    resp->content_type = resp->location = resp->docker_digest = resp->www_authenticate = NULL;
}

void gc_http_response_free(gc_http_response *resp)
{
    clear_headers(resp);
    gc_buf_free(&resp->body);
}

/* Gets a response ready for a retry of the same request. */
static void response_reset(gc_http_response *resp)
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

int gc_auth_challenge_parse(const char *header, gc_auth_challenge *out)
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

void gc_auth_challenge_free(gc_auth_challenge *c)
{
    free(c->scheme);
    free(c->realm);
    free(c->service);
    free(c->scope);
    memset(c, 0, sizeof(*c));
}

/* --- one HTTP exchange ----------------------------------------------------------------- */

typedef struct exchange {
    gc_http_response *resp;
    const gc_http_body *body;
    long long body_offset;
    bool too_big;
    bool sink_failed;
} exchange;

static size_t on_header(char *line, size_t size, size_t nmemb, void *userdata)
{
    exchange *x = userdata;
    size_t len = size * nmemb;
    /* Every response (a redirect, a "100 Continue") starts with its status line; only the
     * headers of the last one describe the body. */
    if (len > 5 && strncmp(line, "HTTP/", 5) == 0) {
        clear_headers(x->resp);
        const char *sp = memchr(line, ' ', len);
        x->resp->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        return len;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon)
        return len;
    size_t name_len = (size_t)(colon - line);
    const char *value = colon + 1;
    const char *end = line + len;
    while (value < end && (*value == ' ' || *value == '\t'))
        value++;
    while (end > value && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    char **slot = NULL;
    if (name_len == 12 && strncasecmp(line, "Content-Type", 12) == 0)
        slot = &x->resp->content_type;
    else if (name_len == 8 && strncasecmp(line, "Location", 8) == 0)
        slot = &x->resp->location;
    else if (name_len == 21 && strncasecmp(line, "Docker-Content-Digest", 21) == 0)
        slot = &x->resp->docker_digest;
    else if (name_len == 16 && strncasecmp(line, "WWW-Authenticate", 16) == 0)
        slot = &x->resp->www_authenticate;
    if (slot && !*slot)
        *slot = gc_xstrndup(value, (size_t)(end - value));
    return len;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    exchange *x = userdata;
    size_t len = size * nmemb;
    gc_http_response *resp = x->resp;
    if (resp->sink && resp->status >= 200 && resp->status < 300) {
        if (fwrite(data, 1, len, resp->sink) != len) {
            x->sink_failed = true;
            return 0;
        }
        if (resp->sink_hash)
            gc_sha256_update(resp->sink_hash, data, len);
        resp->sink_bytes += (long long)len;
        return len;
    }
    if (resp->body.len + len > MAX_MEMORY_BODY) {
        x->too_big = true;
        return 0;
    }
    gc_buf_append(&resp->body, data, len);
    return len;
}

static size_t on_read(char *buffer, size_t size, size_t nitems, void *userdata)
{
    exchange *x = userdata;
    const gc_http_body *body = x->body;
    size_t room = size * nitems;
    if (!body)
        return 0;
    if (body->file) {
        long long left = body->size - x->body_offset;
        size_t want = left < (long long)room ? (size_t)left : room;
        size_t n = want ? fread(buffer, 1, want, body->file) : 0;
        if (n < want && ferror(body->file))
            return CURL_READFUNC_ABORT;
        x->body_offset += (long long)n;
        return n;
    }
    size_t left = body->len - (size_t)x->body_offset;
    size_t n = left < room ? left : room;
    memcpy(buffer, (const char *)body->data + x->body_offset, n);
    x->body_offset += (long long)n;
    return n;
}

static char *resolve_url(const gc_registry *r, const char *url)
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

static bool url_is_allowed(const gc_registry *r, const char *url)
{
    if (strncasecmp(url, "https://", 8) == 0)
        return true;
    if (strncasecmp(url, "http://", 7) != 0)
        return false;
    char *origin = url_origin(url);
    bool loopback = false;
    if (origin) {
        const char *host = origin + strlen("http://");
        loopback = gc_registry_is_loopback(host);
    }
    free(origin);
    return loopback && r->loopback;
}

static void set_method(CURL *c, const char *method, const gc_http_body *body)
{
    /* Blobs are often served from a CDN or a storage bucket by redirect; bodies are not
     * replayed, so only reads follow redirects (and curl keeps Authorization off other hosts). */
    bool is_read = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, is_read ? 1L : 0L);
    if (strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "PUT") == 0) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE,
                         (curl_off_t)(body ? (body->file ? body->size : (long long)body->len) : 0));
    } else if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(body ? (body->file ? body->size : (long long)body->len) : 0));
        if (!body)
            curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
    } else if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
}

static struct curl_slist *request_headers(const char *url, const char *accept,
                                          const gc_http_body *body, const char *authorization,
                                          const char *auth_origin)
{
    struct curl_slist *h = NULL;
    /* Registries answer at once; waiting a second for "100 Continue" only slows uploads. */
    h = curl_slist_append(h, "Expect:");
    if (accept) {
        char *line = gc_xasprintf("Accept: %s", accept);
        h = curl_slist_append(h, line);
        free(line);
    }
    if (body && body->content_type) {
        char *line = gc_xasprintf("Content-Type: %s", body->content_type);
        h = curl_slist_append(h, line);
        free(line);
    }
    if (authorization && same_origin(url, auth_origin)) {
        char *line = gc_xasprintf("Authorization: %s", authorization);
        h = curl_slist_append(h, line);
        wipe_free(line);
    }
    return h;
}

/* Prints method and URL without the query string, which may carry signed upload state. */
static void trace(const gc_registry *r, const char *method, const char *url, long status)
{
    if (!r->verbose)
        return;
    size_t shown = strcspn(url, "?");
    if (status)
        fprintf(r->log, "registry: %s %.*s%s -> %ld\n", method, (int)shown, url,
                url[shown] ? "?..." : "", status);
}

static void set_options(gc_registry *r, exchange *x, const char *url, struct curl_slist *headers,
                        char *errbuf)
{
    CURL *c = r->curl;
    curl_easy_reset(c);
    const char *protocols = r->loopback ? "http,https" : "https";
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, protocols);
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "gcluster/" GCLUSTER_VERSION);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    /* A transfer that moves under 1 KiB/s for a minute is dead, not slow. */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, x);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
}

/* One exchange. `authorization` is sent only to `auth_origin`'s scheme, host and port. */
static int perform(gc_registry *r, const char *method, const char *url, const char *accept,
                   const gc_http_body *body, const char *authorization, const char *auth_origin,
                   gc_http_response *resp, gc_error *err)
{
    int shown = (int)strcspn(url, "?"); /* queries may hold signatures: never in messages */
    if (!url_is_allowed(r, url))
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "refusing to contact %.*s without TLS: plain HTTP is only used for "
                       "registries on this machine",
                       shown, url);
    if (body && body->file && fseeko(body->file, 0, SEEK_SET) != 0)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot rewind the upload to %.*s", shown, url);
    CURL *c = r->curl;
    exchange x = {.resp = resp, .body = body};
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = request_headers(url, accept, body, authorization, auth_origin);
    set_options(r, &x, url, headers, errbuf);
    set_method(c, method, body);
    CURLcode cc = curl_easy_perform(c);
    curl_slist_free_all(headers);
    trace(r, method, url, resp->status);
    if (x.too_big)
        return gc_fail(err, GC_EXIT_RUNTIME, "%s %.*s: the response is larger than %ld MiB", method,
                       shown, url, MAX_MEMORY_BODY >> 20);
    if (x.sink_failed)
        return gc_fail(err, GC_EXIT_RUNTIME, "%s %.*s: cannot write to a temporary file", method,
                       shown, url);
    if (cc != CURLE_OK)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot reach %s: %s", r->name,
                       errbuf[0] ? errbuf : curl_easy_strerror(cc));
    return 0;
}

/* --- authentication -------------------------------------------------------------------- */

static void load_credentials(gc_registry *r)
{
    if (r->credentials_loaded)
        return;
    r->credentials_loaded = true;
    gc_error cred_err = {0};
    if (gc_credentials_lookup(r->name, &r->credentials, &cred_err) != 0)
        r->credentials_problem = gc_xstrdup(cred_err.message);
}

static char *basic_authorization(const gc_credentials *c)
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

static char *token_url(const gc_registry *r, const gc_auth_challenge *ch)
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

static int parse_token(gc_registry *r, const gc_http_response *resp, gc_error *err)
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

static int fetch_token(gc_registry *r, const gc_auth_challenge *ch, gc_error *err)
{
    if (!ch->realm)
        return gc_fail(err, GC_EXIT_RUNTIME, "%s asked for a token but named no token service",
                       r->name);
    char *url = token_url(r, ch);
    char *basic = r->credentials.username ? basic_authorization(&r->credentials) : NULL;
    gc_http_response resp;
    gc_http_response_init(&resp);
    /* The token service is usually another host (auth.docker.io): the one the registry named
     * in its challenge, reached over TLS, is the only one the credentials go to. */
    int rc = perform(r, "GET", url, "application/json", NULL, basic, url, &resp, err);
    if (!rc && resp.status != 200)
        rc = gc_registry_fail(r, &resp, "getting a token", err);
    if (!rc)
        rc = parse_token(r, &resp, err);
    gc_http_response_free(&resp);
    wipe_free(basic);
    free(url);
    return rc;
}

static int authenticate(gc_registry *r, const char *header, gc_error *err)
{
    gc_auth_challenge ch;
    if (gc_auth_challenge_parse(header, &ch) != 0)
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
    gc_auth_challenge_free(&ch);
    return rc;
}

int gc_registry_send(gc_registry *r, const char *method, const char *url, const char *accept,
                     const gc_http_body *body, gc_http_response *resp, gc_error *err)
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
static void describe_errors(const gc_http_response *resp, gc_buf *out)
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

int gc_registry_fail(gc_registry *r, const gc_http_response *resp, const char *what, gc_error *err)
{
    gc_buf detail;
    gc_buf_init(&detail);
    describe_errors(resp, &detail);
    const char *hint = "";
    if (resp->status == 401 || resp->status == 403) {
        load_credentials(r);
        hint = r->credentials_problem             ? r->credentials_problem
               : r->credentials.username          ? "check that your account may access it"
               : gc_registry_uses_gcloud(r->name) ? "run `gcloud auth login`"
                                                  : "run `docker login` for it";
    }
    int rc = gc_fail(err, GC_EXIT_RUNTIME, "%s: %s answered HTTP %ld%s%s%s", what, r->name,
                     resp->status, detail.data, hint[0] ? "; " : "", hint);
    if (err)
        err->http_status = (int)resp->status;
    gc_buf_free(&detail);
    return rc;
}
