/*
 * YAML input: libyaml's event parser, turned into jansson values.
 *
 * Plain scalars resolve by the YAML 1.2 core schema; quoted and block scalars are strings.
 * The position of every value is recorded (keyed by its container and key or index, because
 * jansson shares one object for all `true`, `false` and `null` values) so that callers can say
 * "blueprint.yaml:12:7: ..." about a value long after parsing.
 */
#include "gcluster/emit.h"

#include "gcluster/sys.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 256
/* Kubeconfigs, blueprints and templates are kilobytes (a kubeconfig with a few hundred GKE
 * clusters is about 1 MiB); a larger text is the wrong file. Bounding the text bounds the time:
 * 4 MiB of the smallest values (~1 M list items) loads in about half a second. */
#define MAX_TEXT (4u << 20)

/* A container being filled, and for mappings the key waiting for its value. */
typedef struct frame {
    json_t *container;
    char *pending_key;
    int key_line, key_column;
    bool pending_merge;  /* the pending key is a plain "<<" */
    json_t *merged;      /* keys a merge put in, which a key of the mapping's own may replace */
    bool merge_on_close; /* this container is the value of its parent's "<<" (held here) */
} frame;

typedef struct loader {
    gc_yaml_doc *doc;
    frame stack[MAX_DEPTH];
    int depth;
    json_t *document_root;
    json_t *anchors; /* anchor name -> its value (a later anchor of the same name replaces it) */
    /* What aliases have copied so far, against GC_YAML_MAX_ALIAS_VALUES and _BYTES. */
    size_t alias_values, alias_bytes;
    gc_error *err;
} loader;

static void add_mark(gc_yaml_doc *doc, const json_t *container, const char *key, size_t index,
                     int line, int column)
{
    if (doc->mark_count == doc->mark_cap) {
        doc->mark_cap = doc->mark_cap ? doc->mark_cap * 2 : 64;
        doc->marks = gc_xrealloc(doc->marks, doc->mark_cap * sizeof(*doc->marks));
    }
    gc_yaml_mark *m = &doc->marks[doc->mark_count++];
    m->container = container;
    m->key = key ? gc_xstrdup(key) : NULL;
    m->index = index;
    m->line = line;
    m->column = column;
}

static int fail_at(loader *ld, yaml_mark_t mark, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail_at(loader *ld, yaml_mark_t mark, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return gc_fail(ld->err, GC_EXIT_USAGE, "%s:%zu:%zu: %s", ld->doc->name, mark.line + 1,
                   mark.column + 1, what);
}

static bool parse_integer(const char *s, json_int_t *out)
{
    int base = 10;
    const char *digits = s;
    if (*digits == '+' || *digits == '-')
        digits++;
    if (strncmp(digits, "0x", 2) == 0)
        base = 16;
    else if (strncmp(digits, "0o", 2) == 0)
        base = 8;
    if (base != 10) {
        if (digits != s)
            return false; /* the core schema has no signed hex or octal */
        digits += 2;
    }
    if (!*digits)
        return false;
    for (const char *p = digits; *p; p++) {
        bool ok = base == 16 ? strchr("0123456789abcdefABCDEF", *p) != NULL
                             : (*p >= '0' && *p <= (base == 8 ? '7' : '9'));
        if (!ok)
            return false;
    }
    errno = 0;
    long long v = strtoll(base == 10 ? s : digits, NULL, base);
    if (errno == ERANGE)
        return false;
    *out = (json_int_t)v;
    return true;
}

static bool parse_float(const char *s, double *out)
{
    static const char *const inf[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"};
    static const char *const ninf[] = {"-.inf", "-.Inf", "-.INF"};
    for (size_t i = 0; i < sizeof(inf) / sizeof(*inf); i++)
        if (!strcmp(s, inf[i]))
            return *out = HUGE_VAL, true;
    for (size_t i = 0; i < sizeof(ninf) / sizeof(*ninf); i++)
        if (!strcmp(s, ninf[i]))
            return *out = -HUGE_VAL, true;
    /* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    size_t int_digits = strspn(p, "0123456789");
    p += int_digits;
    size_t frac_digits = 0;
    if (*p == '.') {
        p++;
        frac_digits = strspn(p, "0123456789");
        p += frac_digits;
    }
    if (int_digits + frac_digits == 0)
        return false;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        size_t exp_digits = strspn(p, "0123456789");
        if (!exp_digits)
            return false;
        p += exp_digits;
    }
    if (*p)
        return false;
    *out = strtod(s, NULL);
    return true;
}

/* The YAML 1.2 core schema for plain scalars. */
static json_t *resolve_plain(const char *s)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    static const char *const trues[] = {"true", "True", "TRUE"};
    static const char *const falses[] = {"false", "False", "FALSE"};
    for (size_t i = 0; i < sizeof(nulls) / sizeof(*nulls); i++)
        if (!strcmp(s, nulls[i]))
            return json_null();
    for (size_t i = 0; i < 3; i++) {
        if (!strcmp(s, trues[i]))
            return json_true();
        if (!strcmp(s, falses[i]))
            return json_false();
    }
    json_int_t i;
    if (parse_integer(s, &i))
        return json_integer(i);
    double d;
    if (parse_float(s, &d))
        return json_real(d);
    return json_string(s);
}

static json_t *scalar_value(const yaml_event_t *event)
{
    const char *text = (const char *)event->data.scalar.value;
    size_t len = event->data.scalar.length;
    const char *tag = (const char *)event->data.scalar.tag;
    if (tag && strcmp(tag, YAML_STR_TAG) == 0)
        return json_stringn(text, len);
    if (event->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_stringn(text, len);
    json_t *v = resolve_plain(text);
    return v ? v : json_stringn(text, len); /* json_string rejects invalid UTF-8 */
}

static int place_value(loader *ld, json_t *value, yaml_mark_t mark);

static void remember_anchor(loader *ld, const yaml_char_t *name, json_t *value)
{
    /* libyaml allows only letters, digits, '-' and '_' in anchor names, so they are valid keys. */
    if (name && value)
        json_object_set(ld->anchors, (const char *)name, value);
}

/* Adds what a copy of `v` would cost (one per value, plus the bytes of its strings and keys) to
 * the alias counters; false as soon as a bound is passed (the walk stops there, so an alias to
 * a huge value costs no more than the bound). `depth` is where `v` would sit: a copy must not
 * nest deeper than a document may. */
static bool charge_copy(loader *ld, const json_t *v, int depth, bool *too_deep)
{
    if (depth > MAX_DEPTH) {
        *too_deep = true;
        return false;
    }
    if (++ld->alias_values > GC_YAML_MAX_ALIAS_VALUES)
        return false;
    if (json_is_string(v)) {
        ld->alias_bytes += json_string_length(v);
    } else if (json_is_object(v)) {
        const char *key;
        json_t *member;
        json_object_foreach((json_t *)v, key, member)
        {
            ld->alias_bytes += strlen(key);
            if (ld->alias_bytes > GC_YAML_MAX_ALIAS_BYTES ||
                !charge_copy(ld, member, depth + 1, too_deep))
                return false;
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!charge_copy(ld, json_array_get(v, i), depth + 1, too_deep))
                return false;
    }
    return ld->alias_bytes <= GC_YAML_MAX_ALIAS_BYTES;
}

/* An alias is a copy of its anchor's value. Each copy is paid for from one budget for the whole
 * stream, so nested aliases ("billion laughs": nine levels of ten aliases each, ~10^9 values
 * from a few hundred bytes) and merge keys ("<<: *a", whose value is such a copy) stop at the
 * bound instead of exhausting memory. An alias inside the value it names would be an endless
 * value. */
static int copy_alias(loader *ld, const yaml_event_t *event)
{
    const char *name = (const char *)event->data.alias.anchor;
    json_t *target = json_object_get(ld->anchors, name);
    if (!target)
        return fail_at(ld, event->start_mark, "unknown alias \"*%s\"", name);
    for (int i = 0; i < ld->depth; i++)
        if (ld->stack[i].container == target)
            return fail_at(ld, event->start_mark,
                           "alias \"*%s\" is inside the value it names, which would make the "
                           "value endless; copy what you need instead",
                           name);
    bool too_deep = false;
    if (!charge_copy(ld, target, ld->depth, &too_deep)) {
        if (too_deep)
            return fail_at(ld, event->start_mark,
                           "nesting too deep: alias \"*%s\" would put values more than %d levels "
                           "deep",
                           name, MAX_DEPTH);
        return fail_at(ld, event->start_mark,
                       "alias expansion too large: with \"*%s\" the values copied by aliases "
                       "pass %d (or %u MiB of text); no kubeconfig, blueprint or template needs "
                       "that many, so look for aliases that repeat each other",
                       name, GC_YAML_MAX_ALIAS_VALUES, GC_YAML_MAX_ALIAS_BYTES >> 20);
    }
    return place_value(ld, json_deep_copy(target), event->start_mark);
}

/* Where container[key] came from, replacing what a merge recorded. */
static void set_mark(gc_yaml_doc *doc, const json_t *container, const char *key, int line,
                     int column)
{
    for (size_t i = 0; i < doc->mark_count; i++) {
        gc_yaml_mark *m = &doc->marks[i];
        if (m->container == container && m->key && !strcmp(m->key, key)) {
            m->line = line;
            m->column = column;
            return;
        }
    }
    add_mark(doc, container, key, 0, line, column);
}

/* Adds the members of mapping `from` that `top` does not have yet (its own keys and earlier
 * merges win, as the YAML merge key says). */
static void merge_mapping(loader *ld, frame *top, const json_t *from, yaml_mark_t mark)
{
    const char *key;
    json_t *member;
    json_object_foreach((json_t *)from, key, member)
    {
        if (json_object_get(top->container, key))
            continue;
        add_mark(ld->doc, top->container, key, 0, (int)mark.line + 1, (int)mark.column + 1);
        json_object_set(top->container, key, member);
        if (!top->merged)
            top->merged = json_object();
        json_object_set_new(top->merged, key, json_true());
    }
}

/* "<<: *defaults" (or a list of such): the merge key of YAML 1.1, which Kubernetes' and Cluster
 * Toolkit's YAML readers apply. The value is usually an alias, paid for from the alias budget
 * like any other. */
static int merge_value(loader *ld, frame *top, json_t *value, yaml_mark_t mark)
{
    bool ok = json_is_object(value);
    if (json_is_array(value)) {
        ok = json_array_size(value) > 0;
        for (size_t i = 0; i < json_array_size(value); i++)
            ok = ok && json_is_object(json_array_get(value, i));
    }
    free(top->pending_key);
    top->pending_key = NULL;
    top->pending_merge = false;
    if (!ok) {
        json_decref(value);
        return fail_at(ld, mark,
                       "the value of a merge key (<<) must be a mapping or a list of mappings, "
                       "usually an alias such as <<: *defaults");
    }
    if (json_is_object(value))
        merge_mapping(ld, top, value, mark);
    for (size_t i = 0; json_is_array(value) && i < json_array_size(value); i++)
        merge_mapping(ld, top, json_array_get(value, i), mark);
    json_decref(value);
    return 0;
}

/* Places a finished value into the current container (or makes it the document root). */
static int place_value(loader *ld, json_t *value, yaml_mark_t mark)
{
    if (!value)
        return fail_at(ld, mark, "value is not valid UTF-8");
    if (ld->depth == 0) {
        ld->document_root = value;
        return 0;
    }
    frame *top = &ld->stack[ld->depth - 1];
    if (json_is_array(top->container)) {
        add_mark(ld->doc, top->container, NULL, json_array_size(top->container), (int)mark.line + 1,
                 (int)mark.column + 1);
        json_array_append_new(top->container, value);
        return 0;
    }
    if (!top->pending_key) {
        if (!json_is_string(value)) {
            json_decref(value);
            return fail_at(ld, mark, "mapping keys must be strings");
        }
        top->pending_key = gc_xstrdup(json_string_value(value));
        top->key_line = (int)mark.line + 1;
        top->key_column = (int)mark.column + 1;
        json_decref(value);
        return 0;
    }
    if (top->pending_merge)
        return merge_value(ld, top, value, mark);
    bool merged = top->merged && json_object_get(top->merged, top->pending_key);
    if (json_object_get(top->container, top->pending_key) && !merged) {
        json_decref(value);
        return fail_at(ld, mark, "duplicate key \"%s\"", top->pending_key);
    }
    if (merged) {
        /* The mapping's own key replaces the merged one, wherever it comes. */
        json_object_del(top->merged, top->pending_key);
        set_mark(ld->doc, top->container, top->pending_key, (int)mark.line + 1,
                 (int)mark.column + 1);
    } else {
        add_mark(ld->doc, top->container, top->pending_key, 0, (int)mark.line + 1,
                 (int)mark.column + 1);
    }
    json_object_set_new(top->container, top->pending_key, value);
    free(top->pending_key);
    top->pending_key = NULL;
    return 0;
}

static int push_container(loader *ld, json_t *container, const yaml_char_t *anchor_name,
                          yaml_mark_t mark)
{
    if (ld->depth == MAX_DEPTH) {
        json_decref(container);
        return fail_at(ld, mark, "nesting too deep");
    }
    /* The value of a merge key is merged once it is complete; until then the frame holds it. */
    bool merge = ld->depth > 0 && ld->stack[ld->depth - 1].pending_merge;
    int rc = merge ? 0 : place_value(ld, json_incref(container), mark);
    if (rc) {
        json_decref(container);
        return rc;
    }
    remember_anchor(ld, anchor_name, container);
    ld->stack[ld->depth] = (frame){.container = container, .merge_on_close = merge};
    ld->depth++;
    if (!merge)
        json_decref(container); /* the parent (or document_root) holds it now */
    return 0;
}

static int pop_container(loader *ld, yaml_mark_t mark, bool complete)
{
    frame *top = &ld->stack[--ld->depth];
    free(top->pending_key);
    top->pending_key = NULL;
    json_decref(top->merged);
    top->merged = NULL;
    if (!top->merge_on_close)
        return 0;
    top->merge_on_close = false;
    if (!complete) {
        json_decref(top->container);
        return 0;
    }
    return merge_value(ld, &ld->stack[ld->depth - 1], top->container, mark);
}

static int handle_event(loader *ld, yaml_event_t *event)
{
    switch (event->type) {
    case YAML_DOCUMENT_START_EVENT:
        ld->document_root = NULL;
        return 0;
    case YAML_DOCUMENT_END_EVENT:
        json_array_append_new(ld->doc->documents,
                              ld->document_root ? ld->document_root : json_null());
        ld->document_root = NULL;
        return 0;
    case YAML_MAPPING_START_EVENT:
        return push_container(ld, json_object(), event->data.mapping_start.anchor,
                              event->start_mark);
    case YAML_SEQUENCE_START_EVENT:
        return push_container(ld, json_array(), event->data.sequence_start.anchor,
                              event->start_mark);
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        return pop_container(ld, event->start_mark, true);
    case YAML_SCALAR_EVENT: {
        json_t *value = scalar_value(event);
        remember_anchor(ld, event->data.scalar.anchor, value);
        frame *top = ld->depth ? &ld->stack[ld->depth - 1] : NULL;
        bool merge_key = top && json_is_object(top->container) && !top->pending_key &&
                         event->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
                         !event->data.scalar.tag && json_is_string(value) &&
                         !strcmp(json_string_value(value), "<<");
        int rc = place_value(ld, value, event->start_mark);
        if (!rc && merge_key)
            top->pending_merge = true;
        return rc;
    }
    case YAML_ALIAS_EVENT:
        return copy_alias(ld, event);
    default:
        return 0;
    }
}

static void loader_cleanup(loader *ld)
{
    while (ld->depth > 0)
        pop_container(ld, (yaml_mark_t){0}, false);
    json_decref(ld->document_root);
    json_decref(ld->anchors);
}

int gc_yaml_load(const char *text, size_t len, const char *name, gc_yaml_doc *doc, gc_error *err)
{
    memset(doc, 0, sizeof(*doc));
    doc->name = gc_xstrdup(name ? name : "<input>");
    doc->documents = json_array();

    if (len > MAX_TEXT) {
        gc_fail(err, GC_EXIT_USAGE,
                "%s is larger than %u MiB, more than such a document can sensibly be; check that "
                "it is the right file",
                doc->name, MAX_TEXT >> 20);
        gc_yaml_doc_free(doc);
        return GC_EXIT_USAGE;
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot initialise the YAML parser");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

    loader ld = {.doc = doc, .anchors = json_object(), .err = err};
    int rc = 0;
    for (bool done = false; !done && !rc;) {
        yaml_event_t event;
        if (!yaml_parser_parse(&parser, &event)) {
            rc = gc_fail(err, GC_EXIT_USAGE, "%s:%zu:%zu: %s%s%s", doc->name,
                         parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                         parser.problem ? parser.problem : "invalid YAML",
                         parser.context ? " " : "", parser.context ? parser.context : "");
            break;
        }
        done = event.type == YAML_STREAM_END_EVENT;
        rc = handle_event(&ld, &event);
        yaml_event_delete(&event);
    }
    loader_cleanup(&ld);
    yaml_parser_delete(&parser);
    if (rc)
        gc_yaml_doc_free(doc);
    return rc;
}

int gc_yaml_load_file(const char *path, gc_yaml_doc *doc, gc_error *err)
{
    memset(doc, 0, sizeof(*doc));
    gc_buf text;
    gc_buf_init(&text);
    int rc = gc_file_read(path, MAX_TEXT, &text, err);
    if (!rc)
        rc = gc_yaml_load(text.data, text.len, path, doc, err);
    gc_buf_free(&text);
    return rc;
}

void gc_yaml_doc_free(gc_yaml_doc *doc)
{
    for (size_t i = 0; i < doc->mark_count; i++)
        free(doc->marks[i].key);
    free(doc->marks);
    free(doc->name);
    json_decref(doc->documents);
    memset(doc, 0, sizeof(*doc));
}

json_t *gc_yaml_root(const gc_yaml_doc *doc)
{
    return json_array_size(doc->documents) ? json_array_get(doc->documents, 0) : NULL;
}

bool gc_yaml_mark_of(const gc_yaml_doc *doc, const json_t *container, const char *key, size_t index,
                     int *line, int *column)
{
    for (size_t i = 0; i < doc->mark_count; i++) {
        const gc_yaml_mark *m = &doc->marks[i];
        if (m->container != container)
            continue;
        if (key ? (m->key && !strcmp(m->key, key)) : (!m->key && m->index == index)) {
            *line = m->line;
            *column = m->column;
            return true;
        }
    }
    return false;
}

const char *gc_yaml_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "a mapping";
    case JSON_ARRAY:
        return "a list";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}
