/*
 * The -v trace of HTTP requests, and the redaction that keeps credentials out of it.
 *
 * Redaction works on names, not on knowing every credential in advance: a header, query
 * parameter or JSON key whose name says it holds a credential (Authorization, Cookie, token,
 * password, signature, ...) has its value replaced, and so do env entries named like one, a
 * Secret's data, PEM private keys and bearer tokens in text. Hiding a harmless value now and then
 * is the price of never showing a secret.
 */
#include "gcluster/http.h"

#include "sys/internal.h"

#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TRACE_BODY_MAX 4096
#define REDACTED       "<redacted>"

static const struct {
    long code;
    const char *phrase;
} phrases[] = {
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {204, "No Content"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {304, "Not Modified"},
    {307, "Temporary Redirect"},
    {308, "Permanent Redirect"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {409, "Conflict"},
    {410, "Gone"},
    {413, "Request Entity Too Large"},
    {415, "Unsupported Media Type"},
    {416, "Range Not Satisfiable"},
    {422, "Unprocessable Entity"},
    {429, "Too Many Requests"},
    {500, "Internal Server Error"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
};

const char *gc_http_reason_phrase(long status)
{
    for (size_t i = 0; i < sizeof(phrases) / sizeof(*phrases); i++)
        if (phrases[i].code == status)
            return phrases[i].phrase;
    return "";
}

/* --- what counts as a credential --------------------------------------------------------- */

static void lower_copy(const char *s, size_t len, char *out, size_t size)
{
    size_t n = 0;
    for (; n < len && s[n] && n + 1 < size; n++)
        out[n] = (char)tolower((unsigned char)s[n]);
    out[n] = '\0';
}

static bool contains_any(const char *lower, const char *const *words, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strstr(lower, words[i]))
            return true;
    return false;
}

#define CONTAINS_ANY(lower, words) contains_any(lower, words, sizeof(words) / sizeof(*words))

/* Authorization, Proxy-Authorization, Cookie, Set-Cookie, WWW-Authenticate, X-Auth-Token,
 * X-Api-Key, ... */
static bool secret_header(const char *name, size_t len)
{
    static const char *const words[] = {"auth",  "cookie",     "token",   "secret",
                                        "passw", "credential", "api-key", "apikey"};
    char lower[128];
    lower_copy(name, len, lower, sizeof(lower));
    return CONTAINS_ANY(lower, words);
}

/* access_token, X-Goog-Signature, X-Amz-Credential, a registry upload's _state, Azure's sig,
 * Google's API key. */
static bool secret_query_key(const char *key, size_t len)
{
    static const char *const words[] = {"token", "signature", "credential", "secret",
                                        "passw", "auth",      "_state"};
    static const char *const names[] = {"sig", "key", "code", "state"};
    char lower[128];
    lower_copy(key, len, lower, sizeof(lower));
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
        if (!strcmp(lower, names[i]))
            return true;
    return CONTAINS_ANY(lower, words);
}

/* Whether a JSON key names a credential: "token", "client-key-data", "password", ... but not
 * "tokenFile" or "secretName", which only point at one. */
static bool secret_json_key(const char *key)
{
    static const char *const words[] = {
        "token",      "password",    "passwd",      "keydata",      "key-data",     "authorization",
        "privatekey", "private-key", "private_key", "clientsecret", "client-secret"};
    char lower[128];
    lower_copy(key, strlen(key), lower, sizeof(lower));
    if (!strcmp(lower, "secret") || !strcmp(lower, "auth"))
        return true;
    return CONTAINS_ANY(lower, words) && !strstr(lower, "tokenfile") &&
           !strstr(lower, "secretname");
}

/* Environment variable names that usually hold a credential (API_TOKEN, DB_PASSWORD,
 * AWS_SECRET_ACCESS_KEY, HF_API_KEY). */
static bool secret_env_name(const char *name)
{
    static const char *const words[] = {"token",  "password", "passwd",
                                        "secret", "key",      "credential"};
    char lower[128];
    lower_copy(name, strlen(name), lower, sizeof(lower));
    return CONTAINS_ANY(lower, words);
}

/* --- URLs ------------------------------------------------------------------------------- */

char *gc_http_redact_url(const char *url)
{
    gc_buf out;
    gc_buf_init(&out);
    const char *scheme = strstr(url, "://");
    const char *host = scheme ? scheme + 3 : url;
    size_t authority = strcspn(host, "/?#");
    const char *at = memchr(host, '@', authority);
    gc_buf_append(&out, url, (size_t)(host - url));
    if (at) { /* user:password@, or a token as the user name */
        gc_buf_puts(&out, REDACTED "@");
        authority -= (size_t)(at + 1 - host);
        host = at + 1;
    }
    size_t path = strcspn(host, "?#");
    gc_buf_append(&out, host, path);
    const char *p = host + path;
    if (*p == '?') {
        p++;
        gc_buf_putc(&out, '?');
        while (*p && *p != '#') {
            size_t pair = strcspn(p, "&#");
            size_t key = strcspn(p, "=&#");
            if (key < pair && secret_query_key(p, key)) {
                gc_buf_append(&out, p, key);
                gc_buf_puts(&out, "=" REDACTED);
            } else {
                gc_buf_append(&out, p, pair);
            }
            p += pair;
            if (*p == '&')
                gc_buf_putc(&out, *p++);
        }
    }
    /* A fragment is never sent; it is left out. */
    return gc_buf_detach(&out);
}

/* --- bodies ----------------------------------------------------------------------------- */

static void redact_json(json_t *v)
{
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            redact_json(json_array_get(v, i));
        return;
    }
    if (!json_is_object(v))
        return;
    const char *kind = json_string_value(json_object_get(v, "kind"));
    bool secret_object = kind && !strcmp(kind, "Secret");
    /* env entries: {"name": "API_TOKEN", "value": "..."} */
    const char *name = json_string_value(json_object_get(v, "name"));
    bool secret_env = name && json_is_string(json_object_get(v, "value")) && secret_env_name(name);
    const char *key;
    json_t *value;
    json_object_foreach(v, key, value)
    {
        bool hide = secret_json_key(key) || (secret_env && !strcmp(key, "value")) ||
                    (secret_object && (!strcmp(key, "data") || !strcmp(key, "stringData")));
        if (hide && !json_is_null(value))
            json_object_set_new(v, key, json_string(REDACTED));
        else
            redact_json(value);
    }
}

/* Moves `out` into `b`. */
static void take(gc_buf *b, gc_buf *out)
{
    gc_buf_free(b);
    *b = *out;
}

/* Replaces every occurrence of `secret` in `b` with REDACTED. */
static void replace_all(gc_buf *b, const char *secret)
{
    size_t n = strlen(secret);
    if (n < 4 || !memmem(b->data, b->len, secret, n)) /* shorter ones would hide words */
        return;
    gc_buf out;
    gc_buf_init(&out);
    const char *p = b->data, *end = b->data + b->len;
    for (const char *hit; (hit = memmem(p, (size_t)(end - p), secret, n)); p = hit + n) {
        gc_buf_append(&out, p, (size_t)(hit - p));
        gc_buf_puts(&out, REDACTED);
    }
    gc_buf_append(&out, p, (size_t)(end - p));
    take(b, &out);
}

/* PEM private keys, whole. */
static void redact_pem_keys(gc_buf *b)
{
    char *p;
    while ((p = strstr(b->data, "-----BEGIN")) && strstr(p, "PRIVATE KEY-----")) {
        char *end = strstr(p + 10, "-----END");
        char *stop = end ? strstr(end + 8, "-----") : NULL;
        size_t cut = stop ? (size_t)(stop + 5 - p) : strlen(p);
        memmove(p + 10, p + cut, strlen(p + cut) + 1);
        memcpy(p, REDACTED, 10);
        b->len = strlen(b->data);
    }
}

/* The credential after "Bearer " or "Basic ": up to a space, a quote or a separator. */
static size_t credential_length(const char *p, const char *end)
{
    size_t n = 0;
    while (p + n < end && !isspace((unsigned char)p[n]) && !strchr("\"\\,;'", p[n]))
        n++;
    return n;
}

/* "Bearer <token>" and "Basic <base64>" anywhere in text keep their scheme only. */
static void redact_schemes(gc_buf *b)
{
    static const char *const schemes[] = {"bearer ", "basic "};
    gc_buf out;
    gc_buf_init(&out);
    const char *p = b->data, *end = b->data + b->len;
    while (p < end) {
        size_t scheme = 0;
        for (size_t i = 0; i < sizeof(schemes) / sizeof(*schemes) && !scheme; i++) {
            size_t n = strlen(schemes[i]);
            if ((size_t)(end - p) > n && !strncasecmp(p, schemes[i], n))
                scheme = n;
        }
        size_t value = scheme ? credential_length(p + scheme, end) : 0;
        if (!value) {
            gc_buf_putc(&out, *p++);
            continue;
        }
        gc_buf_append(&out, p, scheme);
        gc_buf_puts(&out, REDACTED);
        p += scheme + value;
    }
    take(b, &out);
}

void gc_http_redact_text(gc_buf *b, const char *const *secrets)
{
    if (!b->len)
        return;
    redact_pem_keys(b);
    redact_schemes(b);
    for (const char *const *s = secrets; s && *s; s++)
        replace_all(b, *s);
}

char *sys_http_redact_body(const char *body, size_t len, size_t max)
{
    gc_buf out;
    gc_buf_init(&out);
    json_t *doc = json_loadb(body, len, 0, NULL);
    if (doc) {
        redact_json(doc);
        char *text = json_dumps(doc, JSON_COMPACT | JSON_ENCODE_ANY);
        gc_buf_puts(&out, text ? text : "");
        free(text);
        json_decref(doc);
    } else {
        for (size_t i = 0; i < len; i++)
            gc_buf_putc(&out, body[i] == '\n' || isprint((unsigned char)body[i]) ? body[i] : '?');
    }
    /* Also inside JSON strings: a server's error message may quote an Authorization header. */
    gc_http_redact_text(&out, NULL);
    if (out.len > max) {
        out.len = max;
        out.data[max] = '\0';
        gc_buf_printf(&out, "... (%zu bytes)", len);
    }
    return gc_buf_detach(&out);
}

/* --- trace lines ------------------------------------------------------------------------- */

static int verbosity(const gc_http_transfer *t)
{
    return t->req.trace ? t->req.trace->verbose : 0;
}

/* One trace line, through the client's own redaction (the secrets it knows) when it has one. */
static void trace_to(const gc_http_trace *tr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void trace_to(const gc_http_trace *tr, const char *fmt, ...)
{
    if (!tr || !tr->events)
        return;
    gc_buf line;
    gc_buf_init(&line);
    va_list ap;
    va_start(ap, fmt);
    gc_buf_vprintf(&line, fmt, ap);
    va_end(ap);
    if (tr->redact)
        tr->redact(&line, tr->redact_ctx);
    gc_trace(tr->events, "%s", line.data);
    explicit_bzero(line.data, line.len);
    gc_buf_free(&line);
}

/* "Name: value" with the value replaced when the name says it is a credential; the scheme of
 * an Authorization value ("Bearer", "Basic") is kept, as it tells which credential went out.
 * Response header lines from libcurl are not NUL-terminated. */
static void trace_header_line(const gc_http_trace *tr, char direction, const char *data, size_t len)
{
    while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
        len--;
    if (!len)
        return;
    char *line = gc_xstrndup(data, len);
    const char *colon = strchr(line, ':');
    if (!colon || !secret_header(line, (size_t)(colon - line))) {
        trace_to(tr, "%c %s", direction, line);
    } else {
        int name_len = (int)(colon - line + 1);
        const char *value = colon + 1 + strspn(colon + 1, " ");
        size_t scheme = strcspn(value, " ");
        bool has_scheme = (!strncasecmp(line, "authorization:", 14) ||
                           !strncasecmp(line, "proxy-authorization:", 20)) &&
                          value[scheme] == ' ';
        if (has_scheme)
            trace_to(tr, "%c %.*s %.*s " REDACTED, direction, name_len, line, (int)scheme, value);
        else
            trace_to(tr, "%c %.*s " REDACTED, direction, name_len, line);
    }
    explicit_bzero(line, len);
    free(line);
}

void sys_http_trace_request(const gc_http_transfer *t)
{
    if (verbosity(t) < 2)
        return;
    trace_to(t->req.trace, "> %s %s", t->req.method, t->shown_url);
    for (const struct curl_slist *h = t->header_list; h; h = h->next) {
        size_t len = strlen(h->data);
        if (len && h->data[len - 1] != ':') /* "Expect:": a header removed, not sent */
            trace_header_line(t->req.trace, '>', h->data, len);
    }
    const gc_http_body *body = t->req.body;
    if (body && body->read) {
        trace_to(t->req.trace, "> (body, %lld bytes, not shown)", body->size);
    } else if (body && body->len) {
        char *shown = sys_http_redact_body(body->data, body->len, TRACE_BODY_MAX);
        trace_to(t->req.trace, "> (body, %zu bytes) %s", body->len, shown);
        free(shown);
    }
}

void sys_http_trace_header(const gc_http_transfer *t, const char *line, size_t len)
{
    if (verbosity(t) >= 2)
        trace_header_line(t->req.trace, '<', line, len);
}

void gc_http_trace_head(const gc_http_trace *trace, char direction, const char *head, size_t len)
{
    if (!trace || trace->verbose < 2)
        return;
    for (const char *p = head, *end = head + len; p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t line = eol ? (size_t)(eol - p) : (size_t)(end - p);
        trace_header_line(trace, direction, p, line);
        p += line + 1;
    }
}

void sys_http_trace_result(gc_http_transfer *t, CURLcode result)
{
    t->traced = true;
    if (verbosity(t) < 1)
        return;
    long version = 0;
    curl_easy_getinfo(t->e, CURLINFO_HTTP_VERSION, &version);
    const char *protocol = version == CURL_HTTP_VERSION_2_0   ? ", HTTP/2"
                           : version == CURL_HTTP_VERSION_1_1 ? ", HTTP/1.1"
                                                              : "";
    /* Whether this request had to open a connection (TCP and TLS) or reused one: what a slow
     * first request, or a request that should have been multiplexed, comes down to. */
    long connects = 0;
    curl_easy_getinfo(t->e, CURLINFO_NUM_CONNECTS, &connects);
    const char *connection = connects > 0 ? ", new connection" : "";
    if (result != CURLE_OK)
        trace_to(t->req.trace, "%s %s -> failed: %s (%lld ms%s)", t->req.method, t->shown_url,
                 curl_easy_strerror(result), t->elapsed_ms, connection);
    else
        trace_to(t->req.trace, "%s %s -> %ld %s (%lld ms%s%s%s)", t->req.method, t->shown_url,
                 t->status, gc_http_reason_phrase(t->status), t->elapsed_ms, protocol, connection,
                 t->req.streaming ? ", streaming" : "");
}

void sys_http_trace_response_body(const gc_http_transfer *t)
{
    if (verbosity(t) < 2 || !t->body.len)
        return;
    char *shown = sys_http_redact_body(t->body.data, t->body.len, TRACE_BODY_MAX);
    trace_to(t->req.trace, "< (body, %zu bytes) %s", t->body.len, shown);
    free(shown);
}
