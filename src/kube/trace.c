/*
 * -v traces and notices.
 *
 * With -v each request is one line ("GET https://... -> 200 OK (12 ms, HTTP/2)"); with -v -v
 * the request and answer headers and bodies follow. Nothing there may show a credential: the
 * Authorization value is replaced, JSON bodies have every credential-like value replaced (keys
 * such as token or password, a Secret's data, env entries with such names), and text bodies lose
 * PEM private keys and bearer tokens. Exec plugin output never gets here at all.
 */
#include "kube/internal.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TRACE_BODY_MAX 4096

void kube_trace(gc_kube *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(k->log, fmt, ap);
    va_end(ap);
    fputc('\n', k->log);
    fflush(k->log);
}

void kube_trace_result(gc_kube *k, CURL *e, const kube_request *req, const char *url, long status,
                       CURLcode result, long long ms)
{
    if (k->verbose < 1)
        return;
    long version = 0;
    curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version);
    const char *protocol = version == CURL_HTTP_VERSION_2_0   ? ", HTTP/2"
                           : version == CURL_HTTP_VERSION_1_1 ? ", HTTP/1.1"
                                                              : "";
    /* Whether this request had to open a connection (TCP and TLS) or reused one: what a slow
     * first request, or a request that should have been multiplexed, comes down to. */
    long connects = 0;
    curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects);
    const char *connection = connects > 0 ? ", new connection" : "";
    if (result != CURLE_OK)
        kube_trace(k, "%s %s -> failed: %s (%lld ms%s)", req->method, url,
                   curl_easy_strerror(result), ms, connection);
    else
        kube_trace(k, "%s %s -> %ld %s (%lld ms%s%s%s)", req->method, url, status,
                   kube_reason_phrase(status), ms, protocol, connection,
                   req->streaming ? ", streaming" : "");
}

/* Each warning is shown once per client, as kubectl does: a paged list of a deprecated API
 * would otherwise repeat it on every page. */
static void warn_once(gc_kube *k, const char *text)
{
    gc_buf *seen = &k->warnings_seen;
    for (const char *p = seen->data; p && p < seen->data + seen->len; p += strlen(p) + 1)
        if (!strcmp(p, text))
            return;
    if (seen->len < 16384)
        gc_buf_append(seen, text, strlen(text) + 1);
    fprintf(k->log, "Warning: %s\n", text);
    fflush(k->log);
}

/* Sends a Warning header's text to the log, as kubectl does ("Warning: ..."). The header is
 * `299 - "text"`; several warnings may share one header, comma-separated. */
void kube_notice_warning(gc_kube *k, const char *value, size_t len)
{
    const char *end = value + len;
    for (const char *p = value; p < end;) {
        const char *open = memchr(p, '"', (size_t)(end - p));
        if (!open)
            break;
        gc_buf text;
        gc_buf_init(&text);
        const char *q = open + 1;
        for (; q < end && *q != '"'; q++) {
            if (*q == '\\' && q + 1 < end)
                q++;
            gc_buf_putc(&text, isprint((unsigned char)*q) ? *q : '?');
        }
        warn_once(k, text.data);
        gc_buf_free(&text);
        p = q + 1;
        /* Skip an optional date in quotes after the text: `299 - "text" "date"`. */
        while (p < end && *p == ' ')
            p++;
        if (p < end && *p == '"') {
            const char *close = memchr(p + 1, '"', (size_t)(end - p - 1));
            p = close ? close + 1 : end;
        }
    }
}

static void lower_copy(const char *s, char *out, size_t size)
{
    size_t n = 0;
    for (; s[n] && n + 1 < size; n++)
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

/* Whether a JSON key names a credential: "token", "client-key-data", "password", ... but not
 * "tokenFile" or "secretName", which only point at one. */
static bool secret_key(const char *key)
{
    static const char *const words[] = {
        "token",      "password",    "passwd",      "keydata",      "key-data",     "authorization",
        "privatekey", "private-key", "private_key", "clientsecret", "client-secret"};
    char lower[128];
    lower_copy(key, lower, sizeof(lower));
    if (!strcmp(lower, "secret"))
        return true;
    return contains_any(lower, words, sizeof(words) / sizeof(*words)) &&
           !strstr(lower, "tokenfile") && !strstr(lower, "secretname");
}

/* Environment variable names that usually hold a credential (API_TOKEN, DB_PASSWORD,
 * AWS_SECRET_ACCESS_KEY, HF_API_KEY). */
static bool secret_env_name(const char *name)
{
    static const char *const words[] = {"token",  "password", "passwd",
                                        "secret", "key",      "credential"};
    char lower[128];
    lower_copy(name, lower, sizeof(lower));
    return contains_any(lower, words, sizeof(words) / sizeof(*words));
}

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
        bool hide = secret_key(key) || (secret_env && !strcmp(key, "value")) ||
                    (secret_object && (!strcmp(key, "data") || !strcmp(key, "stringData")));
        if (hide && !json_is_null(value))
            json_object_set_new(v, key, json_string("<redacted>"));
        else
            redact_json(value);
    }
}

/* Text bodies: hide PEM private keys and bearer tokens. */
static void redact_text(gc_buf *b)
{
    char *p;
    while ((p = strstr(b->data, "-----BEGIN")) && strstr(p, "PRIVATE KEY-----")) {
        char *end = strstr(p + 10, "-----END");
        char *stop = end ? strstr(end + 8, "-----") : NULL;
        size_t cut = stop ? (size_t)(stop + 5 - p) : strlen(p);
        memmove(p + 10, p + cut, strlen(p + cut) + 1);
        memcpy(p, "<redacted>", 10);
        b->len = strlen(b->data);
    }
    for (p = b->data; (p = strstr(p, "Bearer ")); p += 7)
        for (char *q = p + 7; *q && !isspace((unsigned char)*q) && *q != '"'; q++)
            *q = '*';
}

char *kube_redacted_body(const char *body, size_t len, size_t max)
{
    gc_buf out;
    gc_buf_init(&out);
    json_t *doc = json_loadb(body, len, 0, NULL);
    if (doc) {
        redact_json(doc);
        char *text = json_dumps(doc, JSON_COMPACT);
        gc_buf_puts(&out, text ? text : "");
        free(text);
        json_decref(doc);
    } else {
        for (size_t i = 0; i < len; i++)
            gc_buf_putc(&out, body[i] == '\n' || isprint((unsigned char)body[i]) ? body[i] : '?');
        redact_text(&out);
    }
    if (out.len > max) {
        out.len = max;
        out.data[max] = '\0';
        gc_buf_printf(&out, "... (%zu bytes)", len);
    }
    return gc_buf_detach(&out);
}

void kube_trace_header(gc_kube *k, const char *line, size_t len)
{
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    if (!len)
        return;
    bool hide = (len > 11 && !strncasecmp(line, "set-cookie:", 11)) ||
                (len > 17 && !strncasecmp(line, "www-authenticate:", 17));
    fprintf(k->log, "< %.*s\n", hide ? (int)(strchr(line, ':') - line + 1) : (int)len, line);
    if (hide)
        fprintf(k->log, "  <redacted>\n");
}

void kube_trace_request(gc_kube *k, const kube_request *req, const char *url,
                        const struct curl_slist *headers)
{
    fprintf(k->log, "> %s %s\n", req->method, url);
    for (const struct curl_slist *h = headers; h; h = h->next) {
        if (!strncasecmp(h->data, "Authorization:", 14)) {
            const char *scheme = h->data + 14 + strspn(h->data + 14, " ");
            fprintf(k->log, "> Authorization: %.*s <redacted>\n", (int)strcspn(scheme, " "),
                    scheme);
        } else if (strcmp(h->data, "Expect:")) {
            fprintf(k->log, "> %s\n", h->data);
        }
    }
    if (req->body_len) {
        char *shown = kube_redacted_body(req->body, req->body_len, TRACE_BODY_MAX);
        fprintf(k->log, "> (body, %zu bytes) %s\n", req->body_len, shown);
        free(shown);
    }
}

void kube_trace_response_body(gc_kube *k, const char *body, size_t len)
{
    if (!len)
        return;
    char *shown = kube_redacted_body(body, len, TRACE_BODY_MAX);
    fprintf(k->log, "< (body, %zu bytes) %s\n", len, shown);
    free(shown);
}
