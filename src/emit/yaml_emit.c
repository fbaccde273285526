/*
 * YAML output through libyaml's emitter.
 *
 * We hand libyaml events and let it write the text, so the output is always well-formed YAML.
 * Style decisions are ours: mappings and sequences in block style (empty ones as {} and []),
 * multi-line strings as literal blocks when libyaml can represent them exactly (it falls back to
 * a quoted style otherwise), and every string that would not read back as a string is quoted.
 */
#include "gcluster/emit.h"

#include "emit/internal.h"

#include <stdio.h>
#include <string.h>
#include <yaml.h>

static int write_to_buf(void *data, unsigned char *buffer, size_t size)
{
    gc_buf_append((gc_buf *)data, buffer, size);
    return 1;
}

static int emitter_failed(yaml_emitter_t *emitter, gc_error *err)
{
    return gc_fail(err, GC_EXIT_RUNTIME, "cannot write YAML: %s",
                   emitter->problem ? emitter->problem : "unknown libyaml error");
}

static int emit_event(yaml_emitter_t *emitter, yaml_event_t *event, gc_error *err)
{
    if (!yaml_emitter_emit(emitter, event))
        return emitter_failed(emitter, err);
    return 0;
}

static int emit_plain(yaml_emitter_t *emitter, const char *text, gc_error *err)
{
    yaml_event_t event;
    yaml_scalar_event_initialize(&event, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), 1, 1,
                                 YAML_PLAIN_SCALAR_STYLE);
    return emit_event(emitter, &event, err);
}

static int emit_string(yaml_emitter_t *emitter, const char *text, size_t len, gc_error *err)
{
    bool ambiguous = emit_yaml_plain_is_ambiguous(text, len);
    yaml_scalar_style_t style = YAML_PLAIN_SCALAR_STYLE;
    if (memchr(text, '\n', len))
        style = YAML_LITERAL_SCALAR_STYLE;
    else if (ambiguous)
        style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;

    /* plain_implicit = 0 forbids the plain style for this scalar, so libyaml quotes it even
     * where its own analysis would allow plain text. */
    yaml_event_t event;
    yaml_scalar_event_initialize(&event, NULL, NULL, (yaml_char_t *)text, (int)len, !ambiguous, 1,
                                 style);
    return emit_event(emitter, &event, err);
}

static int emit_value(yaml_emitter_t *emitter, const json_t *value, gc_error *err);

static int emit_object(yaml_emitter_t *emitter, const json_t *object, gc_error *err)
{
    yaml_event_t event;
    yaml_mapping_start_event_initialize(&event, NULL, NULL, 1,
                                        json_object_size(object) ? YAML_BLOCK_MAPPING_STYLE
                                                                 : YAML_FLOW_MAPPING_STYLE);
    int rc = emit_event(emitter, &event, err);

    const char *key;
    const json_t *member;
    json_object_foreach((json_t *)object, key, member)
    {
        if (rc)
            break;
        rc = emit_string(emitter, key, strlen(key), err);
        if (!rc)
            rc = emit_value(emitter, member, err);
    }
    if (rc)
        return rc;
    yaml_mapping_end_event_initialize(&event);
    return emit_event(emitter, &event, err);
}

static int emit_array(yaml_emitter_t *emitter, const json_t *array, gc_error *err)
{
    yaml_event_t event;
    yaml_sequence_start_event_initialize(&event, NULL, NULL, 1,
                                         json_array_size(array) ? YAML_BLOCK_SEQUENCE_STYLE
                                                                : YAML_FLOW_SEQUENCE_STYLE);
    int rc = emit_event(emitter, &event, err);

    size_t i;
    const json_t *element;
    json_array_foreach(array, i, element)
    {
        if (rc)
            break;
        rc = emit_value(emitter, element, err);
    }
    if (rc)
        return rc;
    yaml_sequence_end_event_initialize(&event);
    return emit_event(emitter, &event, err);
}

static int emit_number(yaml_emitter_t *emitter, const json_t *value, gc_error *err)
{
    char text[64];
    if (json_is_integer(value)) {
        snprintf(text, sizeof(text), "%" JSON_INTEGER_FORMAT, json_integer_value(value));
    } else {
        /* Keep a decimal point or exponent so the value reads back as a float. */
        snprintf(text, sizeof(text), "%.17g", json_real_value(value));
        if (!strpbrk(text, ".eEin"))
            strcat(text, ".0");
    }
    return emit_plain(emitter, text, err);
}

static int emit_value(yaml_emitter_t *emitter, const json_t *value, gc_error *err)
{
    switch (json_typeof(value)) {
    case JSON_OBJECT:
        return emit_object(emitter, value, err);
    case JSON_ARRAY:
        return emit_array(emitter, value, err);
    case JSON_STRING:
        return emit_string(emitter, json_string_value(value), json_string_length(value), err);
    case JSON_INTEGER:
    case JSON_REAL:
        return emit_number(emitter, value, err);
    case JSON_TRUE:
        return emit_plain(emitter, "true", err);
    case JSON_FALSE:
        return emit_plain(emitter, "false", err);
    case JSON_NULL:
        return emit_plain(emitter, "null", err);
    }
    return gc_fail(err, GC_EXIT_RUNTIME, "cannot write YAML: unknown JSON type");
}

static int emit_document(yaml_emitter_t *emitter, const json_t *doc, bool explicit_start,
                         gc_error *err)
{
    yaml_event_t event;
    yaml_document_start_event_initialize(&event, NULL, NULL, NULL, !explicit_start);
    int rc = emit_event(emitter, &event, err);
    if (!rc)
        rc = emit_value(emitter, doc, err);
    if (rc)
        return rc;
    yaml_document_end_event_initialize(&event, 1);
    return emit_event(emitter, &event, err);
}

static int emit_stream(const json_t *const *docs, size_t count, bool explicit_start, gc_buf *out,
                       gc_error *err)
{
    yaml_emitter_t emitter;
    if (!yaml_emitter_initialize(&emitter))
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot initialise the YAML emitter");
    yaml_emitter_set_output(&emitter, write_to_buf, out);
    yaml_emitter_set_unicode(&emitter, 1);
    yaml_emitter_set_width(&emitter, -1); /* never fold long lines */
    yaml_emitter_set_indent(&emitter, 2);

    yaml_event_t event;
    yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING);
    int rc = emit_event(&emitter, &event, err);
    for (size_t i = 0; !rc && i < count; i++)
        rc = emit_document(&emitter, docs[i], explicit_start, err);
    if (!rc) {
        yaml_stream_end_event_initialize(&event);
        rc = emit_event(&emitter, &event, err);
    }
    if (!rc && !yaml_emitter_flush(&emitter))
        rc = emitter_failed(&emitter, err);
    yaml_emitter_delete(&emitter);
    return rc;
}

int gc_emit_yaml(const json_t *doc, gc_buf *out, gc_error *err)
{
    return emit_stream(&doc, 1, false, out, err);
}

int gc_emit_yaml_documents(const json_t *const *docs, size_t count, gc_buf *out, gc_error *err)
{
    return emit_stream(docs, count, true, out, err);
}
