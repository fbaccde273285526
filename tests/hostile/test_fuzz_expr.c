/*
 * Fuzzing of deploy's expression evaluator ($(...) in blueprints) and its template renderer
 * (${...} and %{ if } in Terraform templates), as test_fuzz_parsers.c fuzzes the file parsers:
 * valid seeds mutated with a fixed-seed generator (a failure reproduces), and expressions and
 * templates generated at random, some nesting far deeper or growing far larger than any
 * blueprint. Every input must either be accepted with a well-formed value (or text), or be
 * refused with exit code 2 and a message that is bounded (reason first, a short excerpt: never
 * the whole input) and free of control bytes. Generated nesting beyond the bound must say it
 * nests too deeply; values that double through variables must stop at the budget. The ASan/UBSan
 * build of this test is where memory errors surface. GCLUSTER_FUZZ_ITERATIONS raises the count
 * for a longer local run; the default keeps the test to seconds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deploy/expr.h"
#include "gcluster/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_ITERATIONS 4000
/* A refusal names its reason and a short excerpt; a message this long quotes the input. */
#define MESSAGE_BOUND 1500
/* Far beyond the evaluator's nesting bound (64). */
#define DEEP 400

static unsigned long long rng_state = 0x2545f4914f6cdd1dULL;
static json_t *vars; /* what references resolve to */

static unsigned next_random(unsigned bound)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % bound);
}

static int iterations(void)
{
    const char *env = getenv("GCLUSTER_FUZZ_ITERATIONS");
    int n = env ? atoi(env) : 0;
    return n > 0 ? n : DEFAULT_ITERATIONS;
}

/* References: vars.NAME in blueprints, bare NAME in templates; an unknown root is an error, as
 * in the blueprint reader. */
static int ref(void *ctx, const char *root, const char *attr, json_t **out, gc_error *err)
{
    (void)ctx;
    const char *name = attr && !strcmp(root, "vars") ? attr : root;
    if (attr && !strcmp(root, "pool")) {
        *out = deploy_unknown("pool.output");
        return 0;
    }
    json_t *v = json_object_get(vars, name);
    if (!v || (attr && strcmp(root, "vars")))
        return gc_fail(err, GC_EXIT_USAGE, "%s is not a variable", name);
    *out = json_incref(v);
    return 0;
}

static int stage(void *ctx, const char *path, json_t **out, gc_error *err)
{
    (void)ctx;
    (void)err;
    *out = json_string(path);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    json_t *big = json_array();
    for (int i = 0; i < 1000; i++)
        json_array_append_new(big, json_string("0123456789abcdef0123456789abcdef"));
    vars =
        json_pack("{s:s, s:i, s:[i,i,i], s:{s:s}, s:o, s:n, s:b, s:s}", "a", "x", "n", 3, "l", 1, 2,
                  3, "m", "k", "v", "big", big, "nothing", "yes", 1, "text", "line one\nline two");
    return vars ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    json_decref(vars);
    return 0;
}

/* Tokens of the expression and template languages. */
static const char *const tokens[] = {
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    "?",
    ":",
    " ? 1 : ",
    "\"",
    "\\",
    "vars.a",
    "vars.l.0",
    "vars.l[",
    "vars.m.k",
    "vars.big",
    "pool.x",
    "concat(",
    "flatten(",
    "merge(",
    "length(",
    "max(",
    "coalesce(",
    "ghpc_stage(",
    "unknownfn(",
    "+",
    "-",
    "*",
    "/",
    "%",
    "==",
    "!=",
    "<=",
    "&&",
    "||",
    "!",
    "1e308",
    "1e999",
    "18446744073709551617",
    "-0",
    "0.5",
    "true",
    "null",
    "${",
    "$${",
    "%{ if ",
    "%{ else }",
    "%{ endif }",
    "~}",
    "%%{",
    "\xff",
    "\n",
    "\t",
    "\x01",
    "a",
    "n",
    "l",
    "big",
    ".0",
    ".99999999999999999999",
};

static void mutate(gc_buf *b)
{
    size_t at = b->len ? next_random((unsigned)b->len + 1) : 0;
    gc_buf out;
    gc_buf_init(&out);
    switch (next_random(5)) {
    case 0:
        if (b->len)
            b->data[at % b->len] ^= (char)(1u << next_random(8));
        gc_buf_free(&out);
        return;
    case 1: {
        size_t n = next_random(16) + 1;
        gc_buf_append(&out, b->data, at);
        if (at + n < b->len)
            gc_buf_append(&out, b->data + at + n, b->len - at - n);
        break;
    }
    case 2:
    case 3: {
        const char *t = tokens[next_random(sizeof(tokens) / sizeof(*tokens))];
        gc_buf_append(&out, b->data, at);
        gc_buf_puts(&out, t);
        gc_buf_append(&out, b->data + at, b->len - at);
        break;
    }
    default:
        gc_buf_append(&out, b->data, at);
        break;
    }
    gc_buf_reset(b);
    gc_buf_append(b, out.data, out.len);
    gc_buf_free(&out);
}

/* A refusal: exit code 2, a bounded message without control bytes (excerpts replace them). */
static void check_refusal(int rc, const gc_error *err, const gc_buf *input)
{
    if (rc != GC_EXIT_USAGE)
        fail_msg("rc %d for input of %zu bytes: %s", rc, input->len, err->message);
    size_t len = strlen(err->message);
    if (!len || len > MESSAGE_BOUND)
        fail_msg("a message of %zu bytes for input of %zu bytes: %.300s", len, input->len,
                 err->message);
}

static bool check_expression(const gc_buf *input, deploy_budget *budget)
{
    deploy_env env = {.ref = ref, .stage = stage, .budget = budget};
    json_t *out = NULL;
    gc_error err = {0};
    int rc = deploy_expr_eval(input->data ? input->data : "", input->len, &env, &out, &err);
    if (rc) {
        assert_null(out);
        check_refusal(rc, &err, input);
        return false;
    }
    assert_non_null(out);
    char *text = json_dumps(out, JSON_ENCODE_ANY | JSON_COMPACT);
    assert_non_null(text); /* a well-formed value */
    free(text);
    json_decref(out);
    return true;
}

static bool check_blueprint_string(const gc_buf *input)
{
    deploy_env env = {.ref = ref, .stage = stage};
    char *s = gc_xstrndup(input->data ? input->data : "", input->len);
    json_t *out = NULL;
    gc_error err = {0};
    int rc = deploy_string_eval(s, &env, &out, &err);
    free(s);
    if (rc) {
        assert_null(out);
        check_refusal(rc, &err, input);
        return false;
    }
    assert_non_null(out);
    json_decref(out);
    return true;
}

static bool check_template(const gc_buf *input)
{
    deploy_env env = {.ref = ref, .bare_names = true};
    gc_buf out;
    gc_buf_init(&out);
    gc_error err = {0};
    int rc = deploy_template_render(input->data ? input->data : "", input->len, &env, "t.tftpl",
                                    &out, &err);
    gc_buf_free(&out);
    if (rc) {
        check_refusal(rc, &err, input);
        if (!strstr(err.message, "t.tftpl"))
            fail_msg("a template error that does not name the template: %s", err.message);
        return false;
    }
    return true;
}

/* Mutants of each seed; both outcomes must occur or the mutants are not reaching the parser. */
static void fuzz(const char *const *seeds, size_t count, bool (*check)(const gc_buf *))
{
    gc_buf input;
    gc_buf_init(&input);
    int accepted = 0, rejected = 0, n = iterations();
    for (int i = 0; i < n; i++) {
        if (i % 8 == 0) {
            gc_buf_reset(&input);
            gc_buf_puts(&input, seeds[next_random((unsigned)count)]);
        }
        mutate(&input);
        if (check(&input))
            accepted++;
        else
            rejected++;
    }
    gc_buf_free(&input);
    printf("fuzz: %d mutants, %d accepted, %d refused with a message\n", n, accepted, rejected);
    assert_true(accepted > 0 && rejected > 0);
}

static bool check_expression_fresh(const gc_buf *input)
{
    deploy_budget budget = {DEPLOY_BUDGET};
    return check_expression(input, &budget);
}

static const char *const expression_seeds[] = {
    "vars.n * 2 + length(vars.l)",
    "vars.a == \"x\" ? concat(vars.l, [4]) : flatten([vars.l, [vars.n]])",
    "merge(vars.m, {k2 = vars.a, \"k3\": [1, 2]}).k2",
    "max(vars.n, 4, -1) >= 4 && !false || vars.nothing == null",
    "coalesce(\"\", vars.a) != \"y\" ? vars.l[1] : vars.l.2",
    "ghpc_stage(\"x.tftpl\")",
    "pool.x * 2",
};

static void fuzz_expressions(void **state)
{
    (void)state;
    fuzz(expression_seeds, sizeof(expression_seeds) / sizeof(*expression_seeds),
         check_expression_fresh);
}

static const char *const string_seeds[] = {
    "prefix-$(vars.a)-$(vars.n)-suffix",
    "$(vars.l)",
    "\\$(literal) and \\\\$(vars.a)",
    "$(vars.n > 2 ? \"big\" : \"small\")-$(length(vars.big))",
};

static void fuzz_blueprint_strings(void **state)
{
    (void)state;
    fuzz(string_seeds, sizeof(string_seeds) / sizeof(*string_seeds), check_blueprint_string);
}

static const char *const template_seeds[] = {
    "name: ${a}\nquota: ${n * 2}\n%{ if yes }on%{ else }off%{ endif }\n",
    "%{~ if n > 2 ~}\n  - ${text}\n%{~ endif ~}\n$${literal} %%{ literal }\n",
    "flavor: ${a}-${length(l)}\n%{ if nothing == null }none%{ endif }",
};

static void fuzz_templates(void **state)
{
    (void)state;
    fuzz(template_seeds, sizeof(template_seeds) / sizeof(*template_seeds), check_template);
}

/* A random expression of the given nesting depth (each level one of the nesting forms). */
static void nested(gc_buf *b, int depth)
{
    if (depth == 0) {
        gc_buf_puts(b, next_random(2) ? "vars.n" : "1");
        return;
    }
    switch (next_random(6)) {
    case 0:
        gc_buf_putc(b, '(');
        nested(b, depth - 1);
        gc_buf_putc(b, ')');
        break;
    case 1:
        gc_buf_putc(b, '[');
        nested(b, depth - 1);
        gc_buf_putc(b, ']');
        break;
    case 2:
        gc_buf_puts(b, "true ? 1 : ");
        nested(b, depth - 1);
        break;
    case 3:
        gc_buf_puts(b, "concat([");
        nested(b, depth - 1);
        gc_buf_puts(b, "])");
        break;
    case 4:
        gc_buf_puts(b, "{k = ");
        nested(b, depth - 1);
        gc_buf_putc(b, '}');
        break;
    default:
        gc_buf_putc(b, '!');
        nested(b, depth - 1);
        break;
    }
}

/* Nesting far past the bound is refused saying so, in expressions and in templates, and
 * nesting well within it is not refused for its depth. */
static void generated_nesting(void **state)
{
    (void)state;
    int n = iterations() / 20;
    for (int i = 0; i < n; i++) {
        int depth = (int)next_random(DEEP);
        gc_buf b;
        gc_buf_init(&b);
        nested(&b, depth);
        deploy_budget budget = {DEPLOY_BUDGET};
        deploy_env env = {.ref = ref, .stage = stage, .budget = &budget};
        json_t *out = NULL;
        gc_error err = {0};
        int rc = deploy_expr_eval(b.data, b.len, &env, &out, &err);
        json_decref(out);
        if (rc)
            check_refusal(rc, &err, &b);
        if (depth > 2 * 64 && !(rc && strstr(err.message, "nests too deeply")))
            fail_msg("depth %d: rc %d: %s", depth, rc, err.message);
        if (depth < 16 && rc && strstr(err.message, "nests too deeply"))
            fail_msg("depth %d refused as too deep", depth);

        gc_buf tpl, rendered;
        gc_buf_init(&tpl);
        gc_buf_init(&rendered);
        gc_buf_printf(&tpl, "x: ${%s}\n", b.data);
        deploy_env tenv = {.ref = ref, .bare_names = true};
        rc = deploy_template_render(tpl.data, tpl.len, &tenv, "t.tftpl", &rendered, &err);
        if (rc)
            check_refusal(rc, &err, &tpl);
        if (depth > 2 * 64 && !(rc && strstr(err.message, "nests too deeply")))
            fail_msg("template depth %d: rc %d: %s", depth, rc, err.message);
        gc_buf_free(&tpl);
        gc_buf_free(&rendered);
        gc_buf_free(&b);
    }
}

/* Values that double at each step stop at the budget, within a time bound. */
static void generated_growth(void **state)
{
    (void)state;
    static const char *const steps[] = {"concat(vars.v, vars.v)", "[vars.v, vars.v]",
                                        "flatten([vars.v, [vars.v]])", "merge(vars.v, vars.v)"};
    for (size_t k = 0; k < sizeof(steps) / sizeof(*steps); k++) {
        time_t start = time(NULL);
        deploy_budget budget = {DEPLOY_BUDGET};
        json_t *saved = json_incref(vars);
        json_t *v = json_pack("[s]", "0123456789abcdef");
        int rc = 0;
        gc_error err = {0};
        for (int i = 0; i < 64 && !rc; i++) {
            json_decref(vars);
            vars = json_pack("{s:O}", "v", v);
            deploy_env env = {.ref = ref, .stage = stage, .budget = &budget};
            json_t *next = NULL;
            rc = deploy_expr_eval(steps[k], strlen(steps[k]), &env, &next, &err);
            json_decref(v);
            v = next;
        }
        json_decref(v);
        json_decref(vars);
        vars = saved;
        /* merge() of a list is refused at once; the others grow until the budget stops them */
        assert_int_equal(rc, GC_EXIT_USAGE);
        if (k < 3 && !strstr(err.message, "MiB"))
            fail_msg("%s: %s", steps[k], err.message);
        assert_true(time(NULL) - start < 30);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fuzz_expressions), cmocka_unit_test(fuzz_blueprint_strings),
        cmocka_unit_test(fuzz_templates),   cmocka_unit_test(generated_nesting),
        cmocka_unit_test(generated_growth),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
