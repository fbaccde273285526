/*
 * The YAML emitter and loader: every value must read back with the same type and bytes.
 */
#include "gcluster/emit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Emits `value` under a key, loads it back with libyaml, and returns the loaded value. */
static json_t *round_trip(json_t *value, gc_buf *text)
{
    json_t *doc = json_pack("{s:O}", "v", value);
    gc_error err = {0};
    gc_buf_init(text);
    assert_int_equal(gc_emit_yaml(doc, text, &err), 0);
    json_decref(doc);

    gc_yaml_doc loaded;
    if (gc_yaml_load(text->data, text->len, "round-trip", &loaded, &err) != 0)
        fail_msg("emitted YAML does not parse: %s\n--- emitted ---\n%s", err.message, text->data);
    json_t *back = json_incref(json_object_get(gc_yaml_root(&loaded), "v"));
    gc_yaml_doc_free(&loaded);
    return back;
}

static void assert_round_trip(json_t *value)
{
    gc_buf text;
    json_t *back = round_trip(value, &text);
    if (!back || !json_equal(value, back)) {
        char *want = json_dumps(value, JSON_ENCODE_ANY);
        char *got = back ? json_dumps(back, JSON_ENCODE_ANY) : strdup("(missing)");
        fail_msg("round trip changed the value\nwant %s\ngot  %s\n--- emitted ---\n%s", want, got,
                 text.data);
    }
    json_decref(back);
    gc_buf_free(&text);
}

static void assert_string_round_trip(const char *s)
{
    json_t *v = json_string(s);
    assert_non_null(v);
    assert_round_trip(v);
    json_decref(v);
}

static void strings_that_look_like_other_types_stay_strings(void **state)
{
    (void)state;
    static const char *const tricky[] = {
        "true",
        "True",
        "TRUE",
        "false",
        "yes",
        "no",
        "Yes",
        "NO",
        "on",
        "off",
        "On",
        "y",
        "n",
        "null",
        "Null",
        "~",
        "",
        "1",
        "0",
        "-1",
        "+1",
        "0755",
        "0o17",
        "0x1F",
        "1e3",
        "1E-3",
        ".5",
        "5.",
        "1_000",
        "12:30",
        "1:2:3",
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        ".inf",
        "-.inf",
        ".NaN",
        "<<",
        "=",
        "4x4",
        "2x2x1",
        "3600",
        "16",
        "100Gi",
        "0.0.0.0:50051",
    };
    for (size_t i = 0; i < sizeof(tricky) / sizeof(*tricky); i++)
        assert_string_round_trip(tricky[i]);
}

static void ambiguous_strings_are_quoted_in_the_text(void **state)
{
    (void)state;
    json_t *doc = json_pack("{s:s, s:s, s:s}", "TPU_SKIP_MDS_QUERY", "true", "cpu", "16", "name",
                            "pathways-rm");
    gc_buf text;
    gc_buf_init(&text);
    gc_error err = {0};
    assert_int_equal(gc_emit_yaml(doc, &text, &err), 0);
    assert_string_equal(text.data,
                        "TPU_SKIP_MDS_QUERY: \"true\"\ncpu: \"16\"\nname: pathways-rm\n");
    gc_buf_free(&text);
    json_decref(doc);
}

static void scalars_of_every_type_round_trip(void **state)
{
    (void)state;
    json_t *values = json_pack("[i, i, I, b, b, n, f, f, {}, [], {s:[]}]", 0, -42,
                               (json_int_t)1 << 40, 1, 0, 1.5, -2.0, "empty");
    size_t i;
    json_t *v;
    json_array_foreach(values, i, v) assert_round_trip(v);
    assert_round_trip(values);
    json_decref(values);
}

static void hostile_commands_round_trip_byte_for_byte(void **state)
{
    (void)state;
    static const char *const commands[] = {
        "python train.py --steps=100",
        "echo env: $HOME",
        "line one\nline two\n",
        "trailing newlines\n\n\n",
        "no trailing newline\nsecond",
        "  leading spaces\nand more",
        "\n starts with a newline",
        "---\nkind: Secret\n",
        "# not a comment\necho '#'",
        "key: value\nother: thing",
        "tab\tseparated\tfields",
        "quotes \" and ' and `backticks`",
        "unicode: héllo wörld ✓ 日本語 🚀",
        "trailing spaces   \nand tabs\t\n",
        "windows\r\nline endings\r\n",
        "bash -c 'for i in 1 2 3; do echo $i; done' && echo \"done: $?\"",
        "|\n>\n- item\n? key\n: value\n&anchor *alias !tag %directive @at",
        "\\backslash\\ \\n not a newline",
        "   ",
        "\x7f delete and \x1b[31m escape",
    };
    for (size_t i = 0; i < sizeof(commands) / sizeof(*commands); i++) {
        json_t *cmd = json_pack("[s, s, s]", "/bin/bash", "-c", commands[i]);
        assert_round_trip(cmd);
        json_decref(cmd);
    }
}

/* A deterministic generator of nasty strings: pieces that trip YAML, in random order. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void random_hostile_strings_round_trip(void **state)
{
    (void)state;
    static const char *const pieces[] = {
        "\n",
        "\n\n",
        " ",
        "  ",
        "\t",
        "\r\n",
        ": ",
        "#",
        " #",
        "---",
        "...",
        "- ",
        "env:",
        "'",
        "\"",
        "\\",
        "{",
        "}",
        "[",
        "]",
        ",",
        "&a",
        "*a",
        "!!str",
        "%YAML",
        "@",
        "`",
        "|",
        ">",
        "?",
        "true",
        "0x1F",
        "1e3",
        "~",
        "null",
        "é",
        "✓",
        "🚀",
        "\xc2\x85",
        "\xe2\x80\xa8",
        "echo",
        "python train.py",
        "$(PATHWAYS_HEAD)",
        "${HOME}",
        "=",
        "<<",
        "0755",
        ".5",
    };
    const size_t npieces = sizeof(pieces) / sizeof(*pieces);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 3000; round++) {
        gc_buf s;
        gc_buf_init(&s);
        int n = (int)(next_random(&seed) % 12);
        for (int k = 0; k < n; k++)
            gc_buf_puts(&s, pieces[next_random(&seed) % npieces]);
        assert_string_round_trip(s.data);
        gc_buf_free(&s);
    }
}

static void a_100_kib_command_round_trips(void **state)
{
    (void)state;
    gc_buf s;
    gc_buf_init(&s);
    while (s.len < 100 * 1024)
        gc_buf_puts(&s, "echo 'step: 1' # env: \"x\"\n\tpython -c \"print(1)\"  \n");
    assert_string_round_trip(s.data);
    gc_buf_free(&s);
}

static void several_documents_are_separated(void **state)
{
    (void)state;
    json_t *a = json_pack("{s:s}", "kind", "ResourceFlavor");
    json_t *b = json_pack("{s:s}", "kind", "ClusterQueue");
    const json_t *docs[] = {a, b};
    gc_buf text;
    gc_buf_init(&text);
    gc_error err = {0};
    assert_int_equal(gc_emit_yaml_documents(docs, 2, &text, &err), 0);
    assert_string_equal(text.data, "---\nkind: ResourceFlavor\n---\nkind: ClusterQueue\n");

    gc_yaml_doc loaded;
    assert_int_equal(gc_yaml_load(text.data, text.len, "docs", &loaded, &err), 0);
    assert_int_equal(json_array_size(loaded.documents), 2);
    assert_true(json_equal(json_array_get(loaded.documents, 1), b));
    gc_yaml_doc_free(&loaded);
    gc_buf_free(&text);
    json_decref(a);
    json_decref(b);
}

/* Whether text holds a byte a terminal may act on: a C0 control but newline, DEL, or a C1
 * control (U+0080..U+009F in UTF-8). */
static bool has_terminal_control(const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f ||
            (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0))
            return true;
    return false;
}

/* Server text with escape sequences (C0 and the C1 CSI) is written escaped, in JSON and YAML
 * alike, and reads back as the same bytes. */
static void control_characters_are_written_escaped(void **state)
{
    (void)state;
    const char *hostile = "a\x1b[2J\x07 \xc2\x9b"
                          "31m \xc2\x85 \xc3\xa9"
                          " end";
    json_t *doc = json_pack("{s:s}", "v", hostile);
    gc_buf text;
    gc_buf_init(&text);
    gc_emit_json(doc, true, &text);
    if (has_terminal_control(text.data))
        fail_msg("raw control character in %s", text.data);
    assert_non_null(strstr(text.data, "\\u009b31m"));
    assert_non_null(strstr(text.data, "\xc3\xa9")); /* other non-ASCII stays as it is */
    json_t *back = json_loads(text.data, 0, NULL);
    assert_non_null(back);
    assert_true(json_equal(back, doc));
    json_decref(back);
    gc_buf_reset(&text);
    gc_error err = {0};
    assert_int_equal(gc_emit_yaml(doc, &text, &err), 0);
    if (has_terminal_control(text.data))
        fail_msg("raw control character in %s", text.data);
    gc_buf_free(&text);
    assert_string_round_trip(hostile);
    json_decref(doc);
}

static void loader_reports_line_and_column(void **state)
{
    (void)state;
    const char *bad = "vars:\n  a: 1\n  b: [1, 2\n";
    gc_yaml_doc doc;
    gc_error err = {0};
    assert_int_equal(gc_yaml_load(bad, strlen(bad), "bp.yaml", &doc, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "bp.yaml:4:1:"));

    const char *dup = "a: 1\nb: 2\na: 3\n";
    assert_int_equal(gc_yaml_load(dup, strlen(dup), "dup.yaml", &doc, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "dup.yaml:3:4: duplicate key \"a\""));
}

static void loader_keeps_marks_and_resolves_types(void **state)
{
    (void)state;
    const char *text = "vars:\n  project: p\n  count: 3\n  flag: true\nlist:\n- x\n- 'y'\n"
                       "ref: &a {k: v}\ncopy: *a\n";
    gc_yaml_doc doc;
    gc_error err = {0};
    assert_int_equal(gc_yaml_load(text, strlen(text), "t.yaml", &doc, &err), 0);
    json_t *root = gc_yaml_root(&doc);
    json_t *vars = json_object_get(root, "vars");
    assert_true(json_is_integer(json_object_get(vars, "count")));
    assert_true(json_is_true(json_object_get(vars, "flag")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(root, "copy"), "k")),
                        "v");
    int line, col;
    assert_true(gc_yaml_mark_of(&doc, vars, "flag", 0, &line, &col));
    assert_int_equal(line, 4);
    assert_int_equal(col, 9);
    assert_true(gc_yaml_mark_of(&doc, json_object_get(root, "list"), NULL, 1, &line, &col));
    assert_int_equal(line, 7);
    gc_yaml_doc_free(&doc);
}

/* The merge key as Kubernetes' and Cluster Toolkit's readers apply it: the mapping's own keys
 * win wherever they stand, earlier mappings of a list win over later ones, a quoted "<<" is an
 * ordinary key, and a value that is not mappings is an error at its line. */
static void merge_keys_merge(void **state)
{
    (void)state;
    const char *text = "base: &base {a: 1, b: 2}\n"
                       "other: &other {b: 20, d: 4}\n"
                       "own_after: {<<: *base, b: 3}\n"
                       "own_before: {b: 3, <<: *base}\n"
                       "list: {<<: [*other, *base]}\n"
                       "inline:\n  <<: {a: 5}\n  c: 6\n"
                       "quoted: {\"<<\": *base}\n"
                       "block:\n  <<: *base\n  a: 9\n";
    gc_yaml_doc doc;
    gc_error err = {0};
    assert_int_equal(gc_yaml_load(text, strlen(text), "m.yaml", &doc, &err), 0);
    json_t *root = gc_yaml_root(&doc);
    static const char *const want[][2] = {
        {"own_after", "{\"a\":1,\"b\":3}"},       {"own_before", "{\"b\":3,\"a\":1}"},
        {"list", "{\"b\":20,\"d\":4,\"a\":1}"},   {"inline", "{\"a\":5,\"c\":6}"},
        {"quoted", "{\"<<\":{\"a\":1,\"b\":2}}"}, {"block", "{\"a\":9,\"b\":2}"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
        char *got = json_dumps(json_object_get(root, want[i][0]), JSON_COMPACT);
        if (strcmp(got, want[i][1]))
            fail_msg("%s: want %s, got %s", want[i][0], want[i][1], got);
        free(got);
    }
    /* A key of the mapping's own is reported where it is written, a merged one at the "<<". */
    int line, col;
    json_t *block = json_object_get(root, "block");
    assert_true(gc_yaml_mark_of(&doc, block, "a", 0, &line, &col));
    assert_int_equal(line, 12);
    assert_true(gc_yaml_mark_of(&doc, block, "b", 0, &line, &col));
    assert_int_equal(line, 11);
    gc_yaml_doc_free(&doc);

    const char *bad = "a: &a [1]\nb:\n  <<: *a\n";
    assert_int_equal(gc_yaml_load(bad, strlen(bad), "m.yaml", &doc, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "m.yaml:3:7: the value of a merge key (<<) must be a "
                                        "mapping or a list of mappings"));
    const char *twice = "a: &a {x: 1}\nb: {<<: *a, x: 2, x: 3}\n";
    assert_int_equal(gc_yaml_load(twice, strlen(twice), "m.yaml", &doc, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "m.yaml:2:22: duplicate key \"x\""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strings_that_look_like_other_types_stay_strings),
        cmocka_unit_test(ambiguous_strings_are_quoted_in_the_text),
        cmocka_unit_test(scalars_of_every_type_round_trip),
        cmocka_unit_test(hostile_commands_round_trip_byte_for_byte),
        cmocka_unit_test(random_hostile_strings_round_trip),
        cmocka_unit_test(a_100_kib_command_round_trips),
        cmocka_unit_test(several_documents_are_separated),
        cmocka_unit_test(control_characters_are_written_escaped),
        cmocka_unit_test(loader_reports_line_and_column),
        cmocka_unit_test(loader_keeps_marks_and_resolves_types),
        cmocka_unit_test(merge_keys_merge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
