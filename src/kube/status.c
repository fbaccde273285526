/*
 * HTTP error answers → one clear message.
 *
 * The API server answers errors with a Status object: its `message` says what happened and
 * `details.causes` name each offending field. The message usually repeats the causes already
 * ("JobSet.jobset.x-k8s.io \"x\" is invalid: spec.foo: Invalid value: ..."), so a cause is only
 * appended when its field and text are not both in the message yet. Anything else (an HTML page
 * from a proxy, a load balancer's 502) is summarised to its first line.
 */
#include "kube/internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct status_name {
    long code;
    const char *phrase;
    const char *reason; /* the Kubernetes Status reason for this code */
} status_name;

static const status_name status_names[] = {
    {200, "OK", ""},
    {201, "Created", ""},
    {202, "Accepted", ""},
    {204, "No Content", ""},
    {400, "Bad Request", "BadRequest"},
    {401, "Unauthorized", "Unauthorized"},
    {403, "Forbidden", "Forbidden"},
    {404, "Not Found", "NotFound"},
    {405, "Method Not Allowed", "MethodNotAllowed"},
    {406, "Not Acceptable", "NotAcceptable"},
    {409, "Conflict", "Conflict"},
    {410, "Gone", "Gone"},
    {413, "Request Entity Too Large", "RequestEntityTooLarge"},
    {415, "Unsupported Media Type", "UnsupportedMediaType"},
    {422, "Unprocessable Entity", "Invalid"},
    {429, "Too Many Requests", "TooManyRequests"},
    {500, "Internal Server Error", "InternalError"},
    {502, "Bad Gateway", "BadGateway"},
    {503, "Service Unavailable", "ServiceUnavailable"},
    {504, "Gateway Timeout", "Timeout"},
};

static const status_name *lookup(long code)
{
    for (size_t i = 0; i < sizeof(status_names) / sizeof(*status_names); i++)
        if (status_names[i].code == code)
            return &status_names[i];
    return NULL;
}

const char *kube_reason_phrase(long status)
{
    const status_name *n = lookup(status);
    return n ? n->phrase : "";
}

static void set_reason(gc_error *err, const char *reason)
{
    snprintf(err->reason, sizeof(err->reason), "%s", reason ? reason : "");
}

/* The first line of a non-Status body, printable and short. */
static void summarise(const gc_buf *body, gc_buf *out)
{
    size_t n = 0;
    const char *s = body->data;
    while (*s && isspace((unsigned char)*s))
        s++;
    for (; *s && *s != '\n' && n < 300; s++, n++)
        gc_buf_putc(out, isprint((unsigned char)*s) ? *s : '?');
    if (*s && *s != '\n')
        gc_buf_puts(out, "...");
}

static void append_causes(const json_t *status, gc_buf *msg)
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
        if (field && field[0])
            gc_buf_printf(msg, "\n  - %s: %s", field, text);
        else
            gc_buf_printf(msg, "\n  - %s", text);
    }
}

int kube_status_error(const kube_request *req, long status, const gc_buf *body, gc_error *err)
{
    json_t *doc = body->len ? json_loadb(body->data, body->len, 0, NULL) : NULL;
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const status_name *name = lookup(status);
    gc_buf msg;
    gc_buf_init(&msg);
    const char *reason = name ? name->reason : "";
    if (kind && !strcmp(kind, "Status")) {
        const char *message = json_string_value(json_object_get(doc, "message"));
        const char *r = json_string_value(json_object_get(doc, "reason"));
        if (r && r[0])
            reason = r;
        if (message && message[0])
            gc_buf_puts(&msg, message);
        else
            gc_buf_printf(&msg, "%s %s: HTTP %ld %s", req->method, req->path, status,
                          name ? name->phrase : "");
        append_causes(doc, &msg);
    } else {
        gc_buf_printf(&msg, "%s %s failed: HTTP %ld %s", req->method, req->path, status,
                      name ? name->phrase : "");
        if (body->len) {
            gc_buf_puts(&msg, ": ");
            summarise(body, &msg);
        }
    }
    gc_fail(err, GC_EXIT_RUNTIME, "%s", msg.data);
    err->http_status = (int)status;
    set_reason(err, reason);
    gc_buf_free(&msg);
    json_decref(doc);
    return GC_EXIT_RUNTIME;
}
