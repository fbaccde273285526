/*
 * json_scan: finding where a JSON value ends without decoding it, and decoding only chosen
 * fields of an object.
 *
 * Why: a page of 500 JobSets is ~5.5 MB of JSON, about half of it managedFields and pod
 * templates that `job list` never reads. Building jansson trees for all of it cost ~0.25 s of
 * CPU per page; scanning past the unwanted parts is a byte loop. Skipped parts are checked for
 * balanced brackets and terminated strings only; everything that is kept is decoded by jansson
 * and fully validated.
 */
#ifndef GCLUSTER_JSON_SCAN_H
#define GCLUSTER_JSON_SCAN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GC_JSON_SCAN_MAX_DEPTH 256

/* Resumable scan of one value: data may arrive in pieces, and each call continues where the
 * last stopped (the caller passes the same, grown buffer). Zero-initialise before the first call;
 * the value must start at offset 0 (no leading whitespace). */
typedef struct gc_json_scan {
    size_t pos; /* bytes of the value looked at so far; its length once complete */
    int depth;
    bool started, in_string, escaped;
    char first;
    uint64_t object_bits[GC_JSON_SCAN_MAX_DEPTH / 64]; /* per open level: '{' (1) or '[' (0) */
} gc_json_scan;

enum gc_json_scan_result {
    GC_JSON_SCAN_MORE = 0,      /* the data ends inside the value */
    GC_JSON_SCAN_DONE = 1,      /* s->pos is the value's length */
    GC_JSON_SCAN_MALFORMED = -1 /* unbalanced brackets, a stray character, too deep */
};

/* `at_end`: no more data will come (a number at the very end is then complete). */
int gc_json_scan_value(gc_json_scan *s, const char *data, size_t len, bool at_end);

/* Decodes the JSON value in data[0..len) keeping only what `fields` names:
 *   true              the whole value;
 *   {"key": FIELDS}   an object with only those members (each shaped by its FIELDS);
 *   [FIELDS]          an array whose every element is shaped by FIELDS.
 * A value whose type does not match its shape (a string where an object is expected) is left
 * out, as if absent. NULL `fields` keeps everything. Returns NULL, with `error` filled, when
 * the text is not JSON. */
json_t *gc_json_load_fields(const char *data, size_t len, const json_t *fields,
                            json_error_t *error);

#endif
