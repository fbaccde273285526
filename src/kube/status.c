/*
 * HTTP error answers → one clear message.
 *
 * The API server answers errors with a Status object: its `message` says what happened and
 * `details.causes` name each offending field. The message usually repeats the causes already
 * ("JobSet.jobset.x-k8s.io \"x\" is invalid: spec.foo: Invalid value: ..."), so a cause is only
 * appended when its field and text are not both in the message yet. Anything else (an HTML page
 * from a proxy, a load balancer's 502) is summarised to its first line. Every piece of server
 * text is made safe first (kube_safe_text): escaped, capped and without the client's secrets.
 */
#include "kube/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Server text in a message: a Status message, each cause, the first line of another body. */
#define MESSAGE_MAX 2000
#define CAUSE_MAX   500
#define SUMMARY_MAX 300

/* The Kubernetes Status reason the API server gives with each code. */
static const struct {
    long code;
    const char *reason;
} reasons[] = {
    {400, "BadRequest"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "NotFound"},
    {405, "MethodNotAllowed"},
    {406, "NotAcceptable"},
    {409, "Conflict"},
    {410, "Gone"},
    {413, "RequestEntityTooLarge"},
    {415, "UnsupportedMediaType"},
    {422, "Invalid"},
    {429, "TooManyRequests"},
    {500, "InternalError"},
    {502, "BadGateway"},
    {503, "ServiceUnavailable"},
    {504, "Timeout"},
};

static const char *reason_of(long code)
{
    for (size_t i = 0; i < sizeof(reasons) / sizeof(*reasons); i++)
        if (reasons[i].code == code)
            return reasons[i].reason;
    return "";
}

static void set_reason(gc_error *err, const char *reason)
{
    snprintf(err->reason, sizeof(err->reason), "%s", reason ? reason : "");
}

/* The first line of a non-Status body, made safe and short. */
static void summarise(const gc_kube *k, const gc_buf *body, gc_buf *out)
{
    const char *s = body->data;
    while (*s && isspace((unsigned char)*s))
        s++;
    size_t line = strcspn(s, "\n");
    kube_safe_text(k, out, s, line > SUMMARY_MAX ? SUMMARY_MAX : line, SUMMARY_MAX);
    if (s[line])
        gc_buf_puts(out, "...");
}

static void append_causes(const gc_kube *k, const json_t *status, gc_buf *msg)
{
    const json_t *causes = json_object_get(json_object_get(status, "details"), "causes");
    for (size_t i = 0; i < json_array_size(causes); i++) {
        const json_t *c = json_array_get(causes, i);
        const char *field = json_string_value(json_object_get(c, "field"));
        const char *text = json_string_value(json_object_get(c, "message"));
        if (!text)
            continue;
        /* Already said, maybe in other words ("conflict with \"a\": .data.k" for the cause
         * {field: .data.k, message: conflict with "a"}). */
        bool said = strstr(msg->data, text) && (!field || strstr(msg->data, field));
        if (said)
            continue;
        gc_buf_puts(msg, "\n  - ");
        if (field && field[0]) {
            kube_safe_text(k, msg, field, strlen(field), CAUSE_MAX);
            gc_buf_puts(msg, ": ");
        }
        kube_safe_text(k, msg, text, strlen(text), CAUSE_MAX);
    }
}

/* The value of the first member `name` in JSON text that may be cut short, or NULL. */
static json_t *member_value(const gc_buf *body, const char *name)
{
    char quoted[32];
    snprintf(quoted, sizeof(quoted), "\"%s\"", name);
    const char *at = strstr(body->data, quoted);
    if (!at)
        return NULL;
    at += strlen(quoted);
    at += strspn(at, " \t\r\n");
    if (*at++ != ':')
        return NULL;
    return json_loadb(at, body->len - (size_t)(at - body->data),
                      JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, NULL);
}

/* A Status cut short (an error answer too large to keep whole, see http.c) does not parse; its
 * message and reason usually come before what made it large (details), so they are read one
 * member at a time. */
static json_t *cut_status(const gc_buf *body)
{
    json_t *kind = member_value(body, "kind");
    bool status = json_is_string(kind) && !strcmp(json_string_value(kind), "Status");
    json_decref(kind);
    if (!status)
        return NULL;
    json_t *doc = json_pack("{s:s}", "kind", "Status");
    static const char *const members[] = {"message", "reason"};
    for (size_t i = 0; i < sizeof(members) / sizeof(*members); i++) {
        json_t *v = member_value(body, members[i]);
        if (json_is_string(v))
            json_object_set(doc, members[i], v);
        json_decref(v);
    }
    return doc;
}

int kube_status_error(const gc_kube *k, const kube_request *req, long status, const gc_buf *body,
                      gc_error *err)
{
    json_t *doc = body->len ? json_loadb(body->data, body->len, 0, NULL) : NULL;
    if (!doc && body->len)
        doc = cut_status(body);
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *phrase = gc_http_reason_phrase(status);
    gc_buf msg;
    gc_buf_init(&msg);
    const char *reason = reason_of(status);
    if (kind && !strcmp(kind, "Status")) {
        const char *message = json_string_value(json_object_get(doc, "message"));
        const char *r = json_string_value(json_object_get(doc, "reason"));
        if (r && r[0])
            reason = r;
        if (message && message[0])
            kube_safe_text(k, &msg, message, strlen(message), MESSAGE_MAX);
        else
            gc_buf_printf(&msg, "%s %s: HTTP %ld %s", req->method, req->path, status, phrase);
        append_causes(k, doc, &msg);
    } else {
        gc_buf_printf(&msg, "%s %s failed: HTTP %ld %s", req->method, req->path, status, phrase);
        if (body->len) {
            gc_buf_puts(&msg, ": ");
            summarise(k, body, &msg);
        }
    }
    gc_fail(err, GC_EXIT_RUNTIME, "%s", msg.data);
    err->http_status = (int)status;
    set_reason(err, reason);
    gc_buf_free(&msg);
    json_decref(doc);
    return GC_EXIT_RUNTIME;
}
