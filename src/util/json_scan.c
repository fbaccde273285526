/*
 * Finding the end of a JSON value by counting brackets, and decoding only chosen fields
 * (see include/gcluster/json_scan.h for why).
 */
#include "gcluster/json_scan.h"

#include <stdio.h>
#include <string.h>

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool ends_scalar(char c)
{
    return is_space(c) || c == ',' || c == '}' || c == ']' || c == ':';
}

static void set_level(gc_json_scan *s, bool object)
{
    uint64_t bit = UINT64_C(1) << (s->depth % 64);
    if (object)
        s->object_bits[s->depth / 64] |= bit;
    else
        s->object_bits[s->depth / 64] &= ~bit;
}

static bool level_is_object(const gc_json_scan *s)
{
    return (s->object_bits[s->depth / 64] >> (s->depth % 64)) & 1;
}

/* true, false, null or a number: it ends at the first delimiter. */
static int scan_scalar(gc_json_scan *s, const char *data, size_t len, bool at_end)
{
    while (s->pos < len && !ends_scalar(data[s->pos]))
        s->pos++;
    if (s->pos == len && !at_end)
        return GC_JSON_SCAN_MORE;
    return s->pos ? GC_JSON_SCAN_DONE : GC_JSON_SCAN_MALFORMED;
}

static int open_level(gc_json_scan *s, char c)
{
    if (s->depth == GC_JSON_SCAN_MAX_DEPTH)
        return GC_JSON_SCAN_MALFORMED;
    set_level(s, c == '{');
    s->depth++;
    return GC_JSON_SCAN_MORE;
}

static int close_level(gc_json_scan *s, char c)
{
    if (s->depth == 0)
        return GC_JSON_SCAN_MALFORMED;
    s->depth--;
    if (level_is_object(s) != (c == '}'))
        return GC_JSON_SCAN_MALFORMED;
    return s->depth == 0 ? GC_JSON_SCAN_DONE : GC_JSON_SCAN_MORE;
}

/* The inside of a string or container, from s->pos on. */
static int scan_nested(gc_json_scan *s, const char *data, size_t len, bool at_end)
{
    for (size_t i = s->pos; i < len; i++) {
        char c = data[i];
        if (s->in_string) {
            if (s->escaped)
                s->escaped = false;
            else if (c == '\\')
                s->escaped = true;
            else if (c == '"')
                s->in_string = false;
            else if ((unsigned char)c < 0x20)
                return GC_JSON_SCAN_MALFORMED; /* raw control characters are not allowed */
            if (!s->in_string && s->depth == 0) {
                s->pos = i + 1;
                return GC_JSON_SCAN_DONE;
            }
            continue;
        }
        int r = GC_JSON_SCAN_MORE;
        if (c == '"')
            s->in_string = true;
        else if (c == '{' || c == '[')
            r = open_level(s, c);
        else if (c == '}' || c == ']')
            r = close_level(s, c);
        if (r != GC_JSON_SCAN_MORE) {
            s->pos = i + 1;
            return r;
        }
    }
    s->pos = len;
    return at_end ? GC_JSON_SCAN_MALFORMED : GC_JSON_SCAN_MORE;
}

int gc_json_scan_value(gc_json_scan *s, const char *data, size_t len, bool at_end)
{
    if (!s->started) {
        if (!len)
            return at_end ? GC_JSON_SCAN_MALFORMED : GC_JSON_SCAN_MORE;
        s->started = true;
        s->first = data[0];
        if (s->first == '"') {
            s->in_string = true;
            s->pos = 1;
        } else if (s->first == '{' || s->first == '[') {
            open_level(s, s->first);
            s->pos = 1;
        } else if (ends_scalar(s->first)) {
            return GC_JSON_SCAN_MALFORMED;
        }
    }
    if (s->first == '"' || s->first == '{' || s->first == '[')
        return scan_nested(s, data, len, at_end);
    return scan_scalar(s, data, len, at_end);
}

/* Decoding with a shape ----------------------------------------------------------------- */

typedef struct walker {
    const char *p;
    size_t len;
    size_t i;
    json_error_t *error;
    bool failed;
} walker;

static void skip_space(walker *w)
{
    while (w->i < w->len && is_space(w->p[w->i]))
        w->i++;
}

static json_t *fail(walker *w, const char *what)
{
    if (!w->failed && w->error) {
        memset(w->error, 0, sizeof(*w->error));
        snprintf(w->error->text, sizeof(w->error->text), "%s", what);
        w->error->position = (int)w->i;
        w->error->line = w->error->column = -1;
    }
    w->failed = true;
    return NULL;
}

/* The length of the value at w->i, or 0 when it is malformed. */
static size_t value_length(walker *w)
{
    gc_json_scan s = {0};
    if (gc_json_scan_value(&s, w->p + w->i, w->len - w->i, true) != GC_JSON_SCAN_DONE)
        return 0;
    return s.pos;
}

static json_t *decode_whole(walker *w, size_t n)
{
    json_error_t local;
    json_t *v = json_loadb(w->p + w->i, n, JSON_DECODE_ANY, &local);
    if (!v) {
        if (w->error && !w->failed) {
            *w->error = local;
            w->error->position += (int)w->i;
        }
        w->failed = true;
        return NULL;
    }
    w->i += n;
    return v;
}

static json_t *shaped_value(walker *w, const json_t *fields);

/* A member name and its ':'; the name is decoded only when it holds escapes (the API server's
 * names never do). False on failure. */
static bool member_name(walker *w, const char **name, size_t *n, json_t **decoded)
{
    *decoded = NULL;
    size_t len = w->i < w->len && w->p[w->i] == '"' ? value_length(w) : 0;
    if (len < 2) {
        fail(w, "expected a member name");
        return false;
    }
    *name = w->p + w->i + 1;
    *n = len - 2;
    if (memchr(*name, '\\', *n)) {
        *decoded = json_loadb(w->p + w->i, len, JSON_DECODE_ANY, NULL);
        if (!json_is_string(*decoded)) {
            fail(w, "a member name that does not decode");
            return false;
        }
        *name = json_string_value(*decoded);
        *n = json_string_length(*decoded);
    }
    w->i += len;
    skip_space(w);
    if (w->i >= w->len || w->p[w->i] != ':') {
        fail(w, "expected ':'");
        return false;
    }
    w->i++;
    return true;
}

/* After a member or element: ',' (true, more follow) or the closing bracket (false). */
static bool next_entry(walker *w, char close)
{
    skip_space(w);
    if (w->i < w->len && w->p[w->i] == ',') {
        w->i++;
        skip_space(w);
        return true;
    }
    if (w->i < w->len && w->p[w->i] == close) {
        w->i++;
        return false;
    }
    fail(w, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
    return false;
}

static void skip_value(walker *w)
{
    skip_space(w);
    size_t n = value_length(w);
    if (!n)
        fail(w, "malformed value");
    w->i += n;
}

static json_t *shaped_object(walker *w, const json_t *fields)
{
    json_t *object = json_object();
    w->i++;
    skip_space(w);
    if (w->i < w->len && w->p[w->i] == '}') {
        w->i++;
        return object;
    }
    do {
        const char *name;
        size_t n;
        json_t *decoded;
        if (!member_name(w, &name, &n, &decoded)) {
            json_decref(decoded);
            break;
        }
        const json_t *sub = json_object_getn(fields, name, n);
        if (sub) {
            json_t *child = shaped_value(w, sub);
            if (child)
                json_object_setn_new(object, name, n, child);
            else /* a repeated name: the last one counts, as in jansson */
                json_object_deln(object, name, n);
        } else {
            skip_value(w);
        }
        json_decref(decoded);
    } while (!w->failed && next_entry(w, '}'));
    if (!w->failed)
        return object;
    json_decref(object);
    return NULL;
}

static json_t *shaped_array(walker *w, const json_t *element_fields)
{
    json_t *array = json_array();
    w->i++;
    skip_space(w);
    if (w->i < w->len && w->p[w->i] == ']') {
        w->i++;
        return array;
    }
    do {
        json_t *child = shaped_value(w, element_fields);
        json_array_append_new(array, child ? child : json_null());
    } while (!w->failed && next_entry(w, ']'));
    if (!w->failed)
        return array;
    json_decref(array);
    return NULL;
}

/* One value at w->i, shaped by `fields`; NULL when left out (or on failure, see w->failed).
 * Objects and arrays with a shape are walked, not scanned first: every byte is looked at once,
 * either while skipping it or by jansson. */
static json_t *shaped_value(walker *w, const json_t *fields)
{
    skip_space(w);
    if (w->i >= w->len)
        return fail(w, "expected a value");
    char first = w->p[w->i];
    if (json_is_object(fields) && first == '{')
        return shaped_object(w, fields);
    if (json_is_array(fields) && first == '[')
        return shaped_array(w, json_array_get(fields, 0));
    size_t n = value_length(w);
    if (!n)
        return fail(w, "malformed value");
    if (!fields || json_is_true(fields))
        return decode_whole(w, n);
    w->i += n; /* not of the shape's type: left out */
    return NULL;
}

json_t *gc_json_load_fields(const char *data, size_t len, const json_t *fields, json_error_t *error)
{
    walker w = {.p = data, .len = len, .error = error};
    json_t *v = shaped_value(&w, fields);
    if (!w.failed) {
        skip_space(&w);
        if (w.i != w.len)
            fail(&w, "extra data after the value");
        else if (!v)
            fail(&w, "the value does not have the expected type");
    }
    if (w.failed) {
        json_decref(v);
        return NULL;
    }
    return v;
}
