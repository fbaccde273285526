/*
 * json_scan: finding the end of a value in pieces, and decoding only chosen fields. The
 * reference for "chosen fields" is an independent projection of jansson's full decode; fixed-
 * seed mutations check that any text jansson accepts is accepted here with the same result.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/json_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A JobSet-like document with what the scanner must get right: escapes (\" \\ \u), brackets
 * inside strings, numbers, literals, empty containers, and pretty-printing whitespace. */
static const char DOC[] =
    "{\"apiVersion\": \"jobset.x-k8s.io/v1alpha2\", \"kind\": \"JobSet\",\n"
    " \"metadata\": {\"name\": \"pw-1\", \"namespace\": \"team \\\"a\\\"\",\n"
    "   \"labels\": {\"k\": \"v}]\"}, \"annotations\": {},\n"
    "   \"managedFields\": [{\"manager\": \"kubectl\", \"fieldsV1\": {\"f:spec\": {\".\": {},\n"
    "      \"f:x\\\\\": [1, -2.5e3, true, false, null, \"\\u00e9[{\"]}}}]},\n"
    " \"spec\": {\"suspend\": false, \"replicatedJobs\": [\n"
    "   {\"name\": \"head\", \"replicas\": 1, \"template\": {\"spec\": {\"parallelism\": 1,\n"
    "     \"template\": {\"spec\": {\"containers\": [{\"args\": [\"{\", \"]\"]}]}}}}},\n"
    "   {\"name\": \"worker\", \"replicas\": 2, \"template\": {\"spec\": {\"parallelism\": 4,\n"
    "     \"template\": {\"spec\": {\"nodeSelector\": {\"tpu\": \"v6e\"}}}}}}]},\n"
    " \"status\": {\"restarts\": 0, \"conditions\": []}}";

static const char SHAPE[] =
    "{\"metadata\": {\"name\": true, \"namespace\": true, \"labels\": true},"
    " \"spec\": {\"suspend\": true, \"replicatedJobs\": [{\"name\": true, \"replicas\": true,"
    "   \"template\": {\"spec\": {\"parallelism\": true,"
    "     \"template\": {\"spec\": {\"nodeSelector\": true}}}}}]},"
    " \"status\": true}";

static json_t *parse(const char *text)
{
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    assert_non_null(v);
    return v;
}

/* The reference: jansson's whole tree cut down to the shape. */
static json_t *project(const json_t *value, const json_t *shape)
{
    if (!shape || json_is_true(shape))
        return json_deep_copy(value);
    if (json_is_object(shape) && json_is_object(value)) {
        json_t *out = json_object();
        const char *key;
        json_t *sub;
        json_object_foreach((json_t *)shape, key, sub)
        {
            json_t *v = json_object_get(value, key);
            json_t *kept = v ? project(v, sub) : NULL;
            if (kept)
                json_object_set_new(out, key, kept);
        }
        return out;
    }
    if (json_is_array(shape) && json_is_array(value)) {
        json_t *out = json_array();
        size_t i;
        json_t *element;
        json_array_foreach(value, i, element)
        {
            json_t *kept = project(element, json_array_get(shape, 0));
            json_array_append_new(out, kept ? kept : json_null());
        }
        return out;
    }
    return NULL;
}

static int scan_all(const char *text, bool at_end, size_t *len)
{
    gc_json_scan s = {0};
    int r = gc_json_scan_value(&s, text, strlen(text), at_end);
    *len = s.pos;
    return r;
}

static void scan_finds_where_each_kind_of_value_ends(void **state)
{
    (void)state;
    struct {
        const char *text;
        bool at_end;
        int result;
        size_t len;
    } cases[] = {
        {"{\"a\": [1, {\"b\": \"}\"}]} tail", false, GC_JSON_SCAN_DONE, 22},
        {"\"x\\\"y\" rest", false, GC_JSON_SCAN_DONE, 6},
        {"\"\\\\\" rest", false, GC_JSON_SCAN_DONE, 4},
        {"123,", false, GC_JSON_SCAN_DONE, 3},
        {"-1.5e3]", false, GC_JSON_SCAN_DONE, 6},
        {"123", false, GC_JSON_SCAN_MORE, 3},
        {"123", true, GC_JSON_SCAN_DONE, 3},
        {"[[], {}]", false, GC_JSON_SCAN_DONE, 8},
        {"{\"a\": [1, 2", false, GC_JSON_SCAN_MORE, 11},
        {"{\"a\": [1, 2", true, GC_JSON_SCAN_MALFORMED, 11},
        {"{\"a\": 1]", false, GC_JSON_SCAN_MALFORMED, 8},
        {"[1}", false, GC_JSON_SCAN_MALFORMED, 3},
        {"]", false, GC_JSON_SCAN_MALFORMED, 0},
        {",", false, GC_JSON_SCAN_MALFORMED, 0},
        {"{\"a\": \"tab\there\"}", false, GC_JSON_SCAN_MALFORMED, 11},
        {"", true, GC_JSON_SCAN_MALFORMED, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        size_t len;
        int r = scan_all(cases[i].text, cases[i].at_end, &len);
        if (r != cases[i].result || (r != GC_JSON_SCAN_MALFORMED && len != cases[i].len))
            fail_msg("%s: got %d (%zu), want %d (%zu)", cases[i].text, r, len, cases[i].result,
                     cases[i].len);
    }
}

static void scan_limits_nesting(void **state)
{
    (void)state;
    char deep[2 * GC_JSON_SCAN_MAX_DEPTH + 4];
    size_t len;
    memset(deep, '[', GC_JSON_SCAN_MAX_DEPTH);
    memset(deep + GC_JSON_SCAN_MAX_DEPTH, ']', GC_JSON_SCAN_MAX_DEPTH);
    deep[2 * GC_JSON_SCAN_MAX_DEPTH] = '\0';
    assert_int_equal(scan_all(deep, true, &len), GC_JSON_SCAN_DONE);
    assert_int_equal(len, 2 * GC_JSON_SCAN_MAX_DEPTH);
    memmove(deep + 1, deep, 2 * GC_JSON_SCAN_MAX_DEPTH + 1);
    deep[0] = '[';
    strcat(deep, "]");
    assert_int_equal(scan_all(deep, true, &len), GC_JSON_SCAN_MALFORMED);
}

/* Data arriving in pieces: wherever the first piece ends, the scan resumes to the same end. */
static void scan_resumes_wherever_the_data_is_cut(void **state)
{
    (void)state;
    size_t total = strlen(DOC);
    for (size_t cut = 0; cut < total; cut++) {
        gc_json_scan s = {0};
        assert_int_equal(gc_json_scan_value(&s, DOC, cut, false), GC_JSON_SCAN_MORE);
        assert_int_equal(gc_json_scan_value(&s, DOC, total, false), GC_JSON_SCAN_DONE);
        assert_int_equal(s.pos, total);
    }
    gc_json_scan s = {0};
    for (size_t n = 1; n < total; n++)
        assert_int_equal(gc_json_scan_value(&s, DOC, n, false), GC_JSON_SCAN_MORE);
    assert_int_equal(gc_json_scan_value(&s, DOC, total, false), GC_JSON_SCAN_DONE);
}

static void shape_keeps_only_the_named_fields(void **state)
{
    (void)state;
    json_t *shape = parse(SHAPE);
    json_error_t err;
    json_t *got = gc_json_load_fields(DOC, strlen(DOC), shape, &err);
    assert_non_null(got);
    json_t *want = parse(
        "{\"metadata\": {\"name\": \"pw-1\", \"namespace\": \"team \\\"a\\\"\","
        "   \"labels\": {\"k\": \"v}]\"}},"
        " \"spec\": {\"suspend\": false, \"replicatedJobs\": ["
        "   {\"name\": \"head\", \"replicas\": 1, \"template\": {\"spec\": {\"parallelism\": 1,"
        "     \"template\": {\"spec\": {}}}}},"
        "   {\"name\": \"worker\", \"replicas\": 2, \"template\": {\"spec\": {\"parallelism\": 4,"
        "     \"template\": {\"spec\": {\"nodeSelector\": {\"tpu\": \"v6e\"}}}}}}]},"
        " \"status\": {\"restarts\": 0, \"conditions\": []}}");
    assert_true(json_equal(got, want));
    json_decref(want);
    json_decref(got);

    /* No shape, or true: everything, exactly as jansson reads it. */
    json_t *full = parse(DOC);
    got = gc_json_load_fields(DOC, strlen(DOC), NULL, &err);
    assert_true(json_equal(got, full));
    json_decref(got);
    got = gc_json_load_fields(DOC, strlen(DOC), json_true(), &err);
    assert_true(json_equal(got, full));
    json_decref(got);
    json_decref(full);
    json_decref(shape);
}

static void values_of_another_type_are_left_out(void **state)
{
    (void)state;
    json_t *shape = parse("{\"a\": {\"b\": true}, \"c\": [{\"d\": true}], \"e\": true}");
    const char *text = "{\"a\": \"not an object\", \"c\": [{\"d\": 1}, 7, {\"x\": 2}], \"e\": null,"
                       " \"f\\u0061\": 1, \"\\u0065\": [true]}";
    json_error_t err;
    json_t *got = gc_json_load_fields(text, strlen(text), shape, &err);
    assert_non_null(got);
    json_t *want = parse("{\"c\": [{\"d\": 1}, null, {}], \"e\": [true]}");
    assert_true(json_equal(got, want));
    json_decref(want);
    json_decref(got);
    json_decref(shape);
}

static void broken_text_is_an_error_with_a_position(void **state)
{
    (void)state;
    json_t *shape = parse("{\"keep\": true}");
    const char *cases[] = {
        "{\"keep\": tru}",                 /* a kept value jansson rejects */
        "{\"skip\": [1, 2}, \"keep\": 1}", /* unbalanced in a skipped value */
        "{\"keep\": 1",                    /* cut short */
        "{\"keep\": 1} extra",             /* trailing data */
        "{\"keep\" 1}",                    /* no colon */
        "{keep: 1}",                       /* unquoted name */
        "{\"keep\": 1,}",                  /* a trailing comma */
        "[\"not an object\"]",             /* the wrong type at the top */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        json_error_t err = {0};
        json_t *got = gc_json_load_fields(cases[i], strlen(cases[i]), shape, &err);
        if (got)
            fail_msg("accepted %s", cases[i]);
        assert_true(err.text[0] != '\0');
    }
    json_decref(shape);
}

static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Byte flips, deletions and insertions of JSON punctuation: no crash (ASan in CI), and whenever
 * jansson reads the text, the shaped decode must equal jansson's tree cut to the shape. */
static void mutations_agree_with_jansson(void **state)
{
    (void)state;
    static const char tokens[] = "{}[]\",:\\ 0tfn";
    json_t *shape = parse(SHAPE);
    size_t total = strlen(DOC);
    char *text = malloc(total + 8); /* room for three insertions and the NUL */
    uint64_t seed = 0x9e3779b97f4a7c15u;
    int accepted = 0;
    for (int round = 0; round < 5000; round++) {
        memcpy(text, DOC, total + 1);
        size_t len = total;
        for (int edits = 1 + (int)(next_random(&seed) % 3); edits > 0; edits--) {
            size_t at = next_random(&seed) % len;
            char token = tokens[next_random(&seed) % (sizeof(tokens) - 1)];
            switch (next_random(&seed) % 3) {
            case 0:
                text[at] = token;
                break;
            case 1:
                memmove(text + at, text + at + 1, len - at);
                len--;
                break;
            default:
                memmove(text + at + 1, text + at, len - at + 1);
                text[at] = token;
                len++;
                break;
            }
        }
        json_error_t err;
        json_t *full = json_loadb(text, len, JSON_DECODE_ANY, NULL);
        json_t *got = gc_json_load_fields(text, len, shape, &err);
        if (full && json_is_object(full)) {
            json_t *want = project(full, shape);
            if (!got || !json_equal(got, want))
                fail_msg("round %d: jansson reads \"%.*s\" but the shaped decode %s", round,
                         (int)len, text, got ? "differs" : err.text);
            json_decref(want);
            accepted++;
        }
        json_decref(got);
        json_decref(full);
    }
    assert_true(accepted > 100); /* the check above really ran */
    free(text);
    json_decref(shape);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(scan_finds_where_each_kind_of_value_ends),
        cmocka_unit_test(scan_limits_nesting),
        cmocka_unit_test(scan_resumes_wherever_the_data_is_cut),
        cmocka_unit_test(shape_keeps_only_the_named_fields),
        cmocka_unit_test(values_of_another_type_are_left_out),
        cmocka_unit_test(broken_text_is_an_error_with_a_position),
        cmocka_unit_test(mutations_agree_with_jansson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
