/*
 * Reading one page of a list as it arrives: each item is decoded (only the fields the caller
 * asked for) and handed out as soon as its closing bracket is in, so memory holds one item and
 * the caller's work overlaps the server still writing the page. The page's other members (kind,
 * apiVersion, metadata with the continue token) are kept; for custom resources the API server
 * writes them in alphabetical order, so metadata arrives after the items.
 */
#include "gcluster/json_scan.h"
#include "kube/internal.h"

#include <string.h>

#define MAX_VALUE_BYTES (64 << 20) /* etcd stores objects of at most 1.5 MiB */

enum reader_state {
    BEFORE_LIST,   /* expecting '{' */
    BEFORE_MEMBER, /* a member name, ',' or '}' */
    AFTER_NAME,    /* expecting ':' */
    IN_MEMBER,     /* a member other than items */
    BEFORE_ITEMS,  /* expecting '[' (or null) */
    IN_ITEMS,      /* an item, ',' or ']' */
    AFTER_LIST,    /* only whitespace may follow */
};

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

void kube_list_reader_init(kube_list_reader *r, kube_exchange *x, const json_t *fields,
                           gc_kube_item_fn on_item, void *ctx, gc_error *err)
{
    memset(r, 0, sizeof(*r));
    r->x = x;
    r->fields = fields;
    r->on_item = on_item;
    r->ctx = ctx;
    r->err = err;
    gc_buf_init(&r->pending);
    r->head = json_object();
}

void kube_list_reader_free(kube_list_reader *r)
{
    gc_buf_free(&r->pending);
    json_decref(r->head);
    free(r->member);
}

/* A new attempt of the request: start over (nothing was handed out, or it would not be retried). */
void kube_list_reader_restart(void *ctx)
{
    kube_list_reader *r = ctx;
    gc_buf_reset(&r->pending);
    r->at = 0;
    r->state = BEFORE_LIST;
    memset(&r->scan, 0, sizeof(r->scan));
    json_object_clear(r->head);
    free(r->member);
    r->member = NULL;
    r->bytes = 0;
}

static bool malformed(kube_list_reader *r, const char *what)
{
    size_t offset = r->bytes - (r->pending.len - r->at);
    snprintf(r->problem, sizeof(r->problem), "%.100s at byte %zu", what, offset);
    return false;
}

/* "Pod" for a "PodList": list items come without kind and apiVersion. */
void kube_complete_item(json_t *item, const json_t *list)
{
    const char *kind = json_string_value(json_object_get(list, "kind"));
    const char *version = json_string_value(json_object_get(list, "apiVersion"));
    size_t len = kind ? strlen(kind) : 0;
    if (!json_object_get(item, "kind") && len > 4 && !strcmp(kind + len - 4, "List"))
        json_object_set_new(item, "kind", json_stringn(kind, len - 4));
    if (!json_object_get(item, "apiVersion") && version)
        json_object_set_new(item, "apiVersion", json_string(version));
}

static bool deliver(kube_list_reader *r, const char *text, size_t len)
{
    json_error_t jerr;
    json_t *item = gc_json_load_fields(text, len, r->fields, &jerr);
    if (!item)
        return malformed(r, jerr.text);
    kube_complete_item(item, r->head);
    r->x->acted_on = true;
    int rc = r->on_item(item, r->ctx, r->err);
    json_decref(item);
    if (rc)
        r->rc = rc;
    return rc == 0;
}

static bool keep_member(kube_list_reader *r, const char *text, size_t len)
{
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY, NULL);
    if (!v)
        return malformed(r, "a list member that is not JSON");
    json_object_set_new(r->head, r->member, v);
    return true;
}

static bool read_name(kube_list_reader *r, const char *text, size_t len)
{
    json_t *name = json_loadb(text, len, JSON_DECODE_ANY, NULL);
    if (!json_is_string(name)) {
        json_decref(name);
        return malformed(r, "a member name that is not a string");
    }
    free(r->member);
    r->member = gc_xstrdup(json_string_value(name));
    json_decref(name);
    r->state = AFTER_NAME;
    return true;
}

/* One step at a punctuation state; false on malformed input. */
static bool punctuation(kube_list_reader *r, char c)
{
    switch (r->state) {
    case BEFORE_LIST:
        if (c != '{')
            return malformed(r, "the answer is not a JSON object");
        r->state = BEFORE_MEMBER;
        break;
    case BEFORE_MEMBER:
        if (c == '}')
            r->state = AFTER_LIST;
        else if (c != ',')
            return malformed(r, "expected a member name");
        break;
    case AFTER_NAME:
        if (c != ':')
            return malformed(r, "expected ':'");
        r->state = strcmp(r->member, "items") ? IN_MEMBER : BEFORE_ITEMS;
        break;
    case BEFORE_ITEMS:
        r->state = IN_ITEMS; /* c == '[' */
        break;
    case IN_ITEMS:
        if (c == ']')
            r->state = BEFORE_MEMBER;
        else if (c != ',')
            return malformed(r, "expected ',' or ']' between items");
        break;
    default:
        return malformed(r, "unexpected data after the list");
    }
    r->at++;
    return true;
}

/* Whether the unread data starts a value in the current state (rather than punctuation). */
static bool starts_value(const kube_list_reader *r, char c)
{
    switch (r->state) {
    case BEFORE_MEMBER:
        return c == '"';
    case IN_MEMBER:
        return true;
    case BEFORE_ITEMS:
        return c != '['; /* "items": null */
    case IN_ITEMS:
        return c != ',' && c != ']';
    default:
        return false;
    }
}

static bool value_done(kube_list_reader *r, const char *text, size_t len)
{
    switch (r->state) {
    case BEFORE_MEMBER:
        return read_name(r, text, len);
    case IN_ITEMS:
        return deliver(r, text, len);
    default: /* IN_MEMBER, or items that are not an array */
        r->state = BEFORE_MEMBER;
        return strcmp(r->member, "items") ? keep_member(r, text, len) : true;
    }
}

/* Consumes what can be consumed; false to stop (malformed, or the caller said stop). */
static bool advance(kube_list_reader *r, bool at_end)
{
    while (r->at < r->pending.len) {
        const char *p = r->pending.data + r->at;
        if (!r->scan.started && is_space(*p)) {
            r->at++;
        } else if (r->scan.started || starts_value(r, *p)) {
            int s = gc_json_scan_value(&r->scan, p, r->pending.len - r->at, at_end);
            if (s == GC_JSON_SCAN_MORE)
                return at_end ? malformed(r, "the answer ends inside a value") : true;
            if (s == GC_JSON_SCAN_MALFORMED) {
                r->at += r->scan.pos ? r->scan.pos - 1 : 0; /* point at the offending byte */
                return malformed(r, "unbalanced brackets or a broken string");
            }
            size_t len = r->scan.pos;
            r->at += len;
            memset(&r->scan, 0, sizeof(r->scan));
            if (!value_done(r, p, len))
                return false;
        } else if (!punctuation(r, *p)) {
            return false;
        }
    }
    return true;
}

bool kube_list_reader_feed(const char *data, size_t len, void *ctx)
{
    kube_list_reader *r = ctx;
    gc_buf_append(&r->pending, data, len);
    r->bytes += len;
    bool go_on = advance(r, false);
    /* Keep only the unread part: at most one partial item. */
    if (r->at) {
        memmove(r->pending.data, r->pending.data + r->at, r->pending.len - r->at + 1);
        r->pending.len -= r->at;
        r->at = 0;
    }
    /* A value that never ends (a broken or hostile server) must not take all memory. */
    if (go_on && r->pending.len > MAX_VALUE_BYTES) {
        r->value_too_large = true;
        return malformed(r, "a value larger than 64 MiB");
    }
    return go_on;
}

int kube_list_reader_finish(kube_list_reader *r, const kube_request *req, gc_error *err)
{
    if (!r->rc && !r->problem[0] && r->bytes && advance(r, true) && r->state != AFTER_LIST)
        malformed(r, "the answer ends before the list does");
    if (r->rc)
        return r->rc;
    if (!r->problem[0])
        return 0; /* a complete list, or an empty body: no items */
    if (r->value_too_large)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "%s %s: the API server sent a list item larger than %d MiB (objects are "
                       "at most a few MiB); the server or something between is broken",
                       req->method, req->path, MAX_VALUE_BYTES >> 20);
    return gc_fail(err, GC_EXIT_RUNTIME, "%s %s: the API server's list is not valid JSON (%s)",
                   req->method, req->path, r->problem);
}
