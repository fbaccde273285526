/*
 * Cluster Toolkit's expression language (an HCL subset) over jansson values; see expr.h.
 *
 * A recursive-descent parser that evaluates as it parses. HCL identifiers may contain '-'
 * after their first character, so `gke-tpu-v6e-pool.node_count_static` is one reference and
 * subtraction needs a space or a non-identifier on its left (`a - b`, `2-1`), as in Terraform.
 */
#include "expr.h"

#include "gcluster/buf.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNKNOWN_KEY "\x01unknown"
#define MAX_DEPTH   64

json_t *deploy_unknown(const char *what)
{
    return json_pack("{s:s}", UNKNOWN_KEY, what ? what : "a module output");
}

const char *deploy_unknown_name(const json_t *v)
{
    if (json_is_object(v)) {
        const json_t *name = json_object_get(v, UNKNOWN_KEY);
        if (json_is_string(name))
            return json_string_value(name);
        const char *k;
        const json_t *item;
        json_object_foreach((json_t *)v, k, item)
        {
            const char *n = deploy_unknown_name(item);
            if (n)
                return n;
        }
    } else if (json_is_array(v)) {
        size_t i;
        const json_t *item;
        json_array_foreach(v, i, item)
        {
            const char *n = deploy_unknown_name(item);
            if (n)
                return n;
        }
    }
    return NULL;
}

static bool is_unknown(const json_t *v)
{
    return json_is_object(v) && json_is_string(json_object_get(v, UNKNOWN_KEY));
}

char *deploy_value_text(const json_t *v)
{
    if (json_is_string(v))
        return gc_xstrdup(json_string_value(v));
    if (json_is_integer(v))
        return gc_xasprintf("%lld", (long long)json_integer_value(v));
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < 1e15)
            return gc_xasprintf("%.0f", d);
        return gc_xasprintf("%.15g", d);
    }
    if (json_is_boolean(v))
        return gc_xstrdup(json_is_true(v) ? "true" : "false");
    return NULL;
}

/* The parser */

typedef struct parser {
    const char *s;
    size_t len, pos;
    const deploy_env *env;
    gc_error *err;
    int depth;
} parser;

static int syntax(parser *p, const char *what)
{
    size_t shown = p->len - p->pos < 40 ? p->len - p->pos : 40;
    if (p->pos >= p->len)
        return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": expected %s at the end", (int)p->len,
                       p->s, what);
    return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": expected %s at \"%.*s\"", (int)p->len, p->s,
                   what, (int)shown, p->s + p->pos);
}

static void skip_space(parser *p)
{
    while (p->pos < p->len && isspace((unsigned char)p->s[p->pos]))
        p->pos++;
}

/* Consumes `op` (after blanks) when it is next; for one-character operators, not when it
 * starts a longer one (`=` of `==`). */
static bool accept(parser *p, const char *op)
{
    skip_space(p);
    size_t n = strlen(op);
    if (p->pos + n > p->len || strncmp(p->s + p->pos, op, n))
        return false;
    if (n == 1 && strchr("=<>!", op[0]) && p->pos + 1 < p->len && p->s[p->pos + 1] == '=')
        return false;
    p->pos += n;
    return true;
}

static bool peek(parser *p, char c)
{
    skip_space(p);
    return p->pos < p->len && p->s[p->pos] == c;
}

static bool ident_start(char c)
{
    return isalpha((unsigned char)c) || c == '_';
}

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* An identifier at the cursor (owned), or NULL. */
static char *identifier(parser *p)
{
    skip_space(p);
    if (p->pos >= p->len || !ident_start(p->s[p->pos]))
        return NULL;
    size_t start = p->pos;
    while (p->pos < p->len && ident_char(p->s[p->pos]))
        p->pos++;
    /* A trailing '-' belongs to a following operator ("a- 1" is rare, "a -1" is not ours). */
    while (p->pos > start + 1 && p->s[p->pos - 1] == '-')
        p->pos--;
    return gc_xstrndup(p->s + start, p->pos - start);
}

static int expression(parser *p, json_t **out);
static json_t *number_value(double d, bool integral);

static int number(parser *p, json_t **out)
{
    char *end;
    const char *start = p->s + p->pos;
    double d = strtod(start, &end);
    size_t n = (size_t)(end - start);
    if (!n || p->pos + n > p->len)
        return syntax(p, "a number");
    p->pos += n;
    if (!isfinite(d))
        return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": %.*s is too large a number",
                       (int)p->len, p->s, (int)n, start);
    bool integral = !memchr(start, '.', n) && !memchr(start, 'e', n) && !memchr(start, 'E', n);
    *out = integral && fabs(d) < 9e15 ? json_integer((json_int_t)d) : json_real(d);
    return 0;
}

static int string_literal(parser *p, json_t **out)
{
    gc_buf b;
    gc_buf_init(&b);
    p->pos++; /* the opening quote */
    while (p->pos < p->len && p->s[p->pos] != '"') {
        char c = p->s[p->pos++];
        if (c == '$' && p->pos < p->len && p->s[p->pos] == '{') {
            gc_buf_free(&b);
            return gc_fail(p->err, GC_EXIT_USAGE,
                           "in \"%.*s\": string templates (\"${...}\") inside an expression are "
                           "not supported by gcluster deploy; write the pieces with + or as "
                           "separate $(...) in the YAML string",
                           (int)p->len, p->s);
        }
        if (c != '\\') {
            gc_buf_putc(&b, c);
            continue;
        }
        if (p->pos >= p->len)
            break;
        c = p->s[p->pos++];
        gc_buf_putc(&b, c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c);
    }
    if (p->pos >= p->len) {
        gc_buf_free(&b);
        return syntax(p, "a closing \"");
    }
    p->pos++;
    *out = json_stringn(b.data ? b.data : "", b.len);
    gc_buf_free(&b);
    if (!*out)
        return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": a string is not valid UTF-8",
                       (int)p->len, p->s);
    return 0;
}

/* [a, b, ...] */
static int list_literal(parser *p, json_t **out)
{
    json_t *list = json_array();
    p->pos++;
    while (!accept(p, "]")) {
        json_t *item;
        int rc = expression(p, &item);
        if (rc) {
            json_decref(list);
            return rc;
        }
        json_array_append_new(list, item);
        if (!accept(p, ",") && !peek(p, ']')) {
            json_decref(list);
            return syntax(p, "',' or ']'");
        }
    }
    *out = list;
    return 0;
}

/* {key = value, "key": value, ...} */
static int object_literal(parser *p, json_t **out)
{
    json_t *obj = json_object();
    p->pos++;
    while (!accept(p, "}")) {
        char *key = identifier(p);
        if (!key && peek(p, '"')) {
            json_t *k;
            int rc = string_literal(p, &k);
            if (rc) {
                json_decref(obj);
                return rc;
            }
            key = gc_xstrdup(json_string_value(k));
            json_decref(k);
        }
        if (!key || (!accept(p, "=") && !accept(p, ":"))) {
            free(key);
            json_decref(obj);
            return syntax(p, "key = value");
        }
        json_t *value;
        int rc = expression(p, &value);
        if (rc) {
            free(key);
            json_decref(obj);
            return rc;
        }
        json_object_set_new(obj, key, value);
        free(key);
        accept(p, ",");
    }
    *out = obj;
    return 0;
}

/* Functions */

static int call_merge(parser *p, json_t **args, size_t n, json_t **out)
{
    json_t *merged = json_object();
    for (size_t i = 0; i < n; i++) {
        if (is_unknown(args[i])) {
            json_decref(merged);
            *out = json_incref(args[i]);
            return 0;
        }
        if (json_is_null(args[i]))
            continue;
        if (!json_is_object(args[i])) {
            json_decref(merged);
            return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": merge() takes mappings",
                           (int)p->len, p->s);
        }
        json_object_update(merged, args[i]);
    }
    *out = merged;
    return 0;
}

static void flatten_into(json_t *out, const json_t *v)
{
    if (!json_is_array(v)) {
        json_array_append(out, (json_t *)v);
        return;
    }
    size_t i;
    const json_t *item;
    json_array_foreach(v, i, item) flatten_into(out, item);
}

/* Terraform's functions that blueprints use in expressions Terraform evaluates; any other is
 * left to Terraform (unknown here), since the toolkit passes such expressions on. */
static int other_function(parser *p, const char *name, json_t **args, size_t n, json_t **out)
{
    for (size_t i = 0; i < n; i++) {
        if (deploy_unknown_name(args[i])) {
            *out = json_incref(args[i]);
            return 0;
        }
    }
    if (!strcmp(name, "concat")) {
        *out = json_array();
        for (size_t i = 0; i < n; i++) {
            if (!json_is_array(args[i])) {
                json_decref(*out);
                return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": concat() takes lists",
                               (int)p->len, p->s);
            }
            json_array_extend(*out, args[i]);
        }
        return 0;
    }
    if (!strcmp(name, "coalesce")) {
        for (size_t i = 0; i < n; i++) {
            if (!json_is_null(args[i]) &&
                !(json_is_string(args[i]) && !*json_string_value(args[i]))) {
                *out = json_incref(args[i]);
                return 0;
            }
        }
        return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": coalesce() found no value", (int)p->len,
                       p->s);
    }
    if (!strcmp(name, "length") && n == 1) {
        size_t len = json_is_array(args[0])    ? json_array_size(args[0])
                     : json_is_object(args[0]) ? json_object_size(args[0])
                     : json_is_string(args[0]) ? json_string_length(args[0])
                                               : 0;
        *out = json_integer((json_int_t)len);
        return 0;
    }
    if ((!strcmp(name, "max") || !strcmp(name, "min")) && n > 0) {
        bool is_max = name[1] == 'a';
        size_t best = 0;
        for (size_t i = 0; i < n; i++) {
            if (!json_is_number(args[i]))
                return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": %s() takes numbers",
                               (int)p->len, p->s, name);
            double a = json_number_value(args[i]), b = json_number_value(args[best]);
            if (is_max ? a > b : a < b)
                best = i;
        }
        *out = json_incref(args[best]);
        return 0;
    }
    char *what = gc_xasprintf("%s(...)", name);
    *out = deploy_unknown(what);
    free(what);
    return 0;
}

static int call(parser *p, const char *name, json_t **out)
{
    json_t *args[16];
    size_t n = 0;
    int rc = 0;
    while (!rc && !accept(p, ")")) {
        if (n == sizeof(args) / sizeof(*args)) {
            rc = gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": %s() has too many arguments",
                         (int)p->len, p->s, name);
            break;
        }
        rc = expression(p, &args[n]);
        if (rc)
            break;
        n++;
        if (!accept(p, ",") && !peek(p, ')'))
            rc = syntax(p, "',' or ')'");
    }
    if (!rc && !strcmp(name, "ghpc_stage") && p->env->stage) {
        if (n != 1 || !json_is_string(args[0]))
            rc = gc_fail(p->err, GC_EXIT_USAGE,
                         "in \"%.*s\": ghpc_stage() takes one file name (a string)", (int)p->len,
                         p->s);
        else
            rc = p->env->stage(p->env->ctx, json_string_value(args[0]), out, p->err);
    } else if (!rc && !strcmp(name, "merge")) {
        rc = call_merge(p, args, n, out);
    } else if (!rc && !strcmp(name, "flatten")) {
        if (n != 1 || !json_is_array(args[0])) {
            rc = gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": flatten() takes one list",
                         (int)p->len, p->s);
        } else {
            *out = json_array();
            flatten_into(*out, args[0]);
        }
    } else if (!rc) {
        rc = other_function(p, name, args, n, out);
    }
    for (size_t i = 0; i < n; i++)
        json_decref(args[i]);
    return rc;
}

/* .attr and [index] after a value. */
static int postfix(parser *p, json_t **value)
{
    for (;;) {
        if (accept(p, ".")) {
            char *attr = identifier(p);
            if (!attr) {
                skip_space(p);
                if (p->pos < p->len && isdigit((unsigned char)p->s[p->pos])) {
                    /* list.0, the legacy index form */
                    size_t i = 0;
                    while (p->pos < p->len && isdigit((unsigned char)p->s[p->pos]))
                        i = i * 10 + (size_t)(p->s[p->pos++] - '0');
                    attr = gc_xasprintf("%zu", i);
                } else {
                    return syntax(p, "an attribute name");
                }
            }
            json_t *next = NULL;
            if (is_unknown(*value))
                next = json_incref(*value);
            else if (json_is_object(*value))
                next = json_incref(json_object_get(*value, attr));
            else if (json_is_array(*value) && isdigit((unsigned char)attr[0]))
                next = json_incref(json_array_get(*value, strtoul(attr, NULL, 10)));
            if (!next) {
                int rc = gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": the value has no \"%s\"",
                                 (int)p->len, p->s, attr);
                free(attr);
                return rc;
            }
            free(attr);
            json_decref(*value);
            *value = next;
        } else if (accept(p, "[")) {
            json_t *index;
            int rc = expression(p, &index);
            if (rc)
                return rc;
            if (!accept(p, "]")) {
                json_decref(index);
                return syntax(p, "']'");
            }
            json_t *next = NULL;
            if (is_unknown(*value) || is_unknown(index))
                next = json_incref(is_unknown(*value) ? *value : index);
            else if (json_is_array(*value) && json_is_integer(index))
                next = json_incref(json_array_get(*value, (size_t)json_integer_value(index)));
            else if (json_is_object(*value) && json_is_string(index))
                next = json_incref(json_object_get(*value, json_string_value(index)));
            json_decref(index);
            if (!next)
                return gc_fail(p->err, GC_EXIT_USAGE,
                               "in \"%.*s\": the index is out of range or of the wrong type",
                               (int)p->len, p->s);
            json_decref(*value);
            *value = next;
        } else {
            return 0;
        }
    }
}

static int primary(parser *p, json_t **out)
{
    skip_space(p);
    if (p->pos >= p->len)
        return syntax(p, "a value");
    char c = p->s[p->pos];
    int rc;
    if (c == '(') {
        p->pos++;
        rc = expression(p, out);
        if (!rc && !accept(p, ")")) {
            json_decref(*out);
            return syntax(p, "')'");
        }
    } else if (isdigit((unsigned char)c)) {
        rc = number(p, out);
    } else if (c == '"') {
        rc = string_literal(p, out);
    } else if (c == '[') {
        rc = list_literal(p, out);
    } else if (c == '{') {
        rc = object_literal(p, out);
    } else if (ident_start(c)) {
        char *name = identifier(p);
        if (!strcmp(name, "true") || !strcmp(name, "false")) {
            *out = json_boolean(name[0] == 't');
            rc = 0;
        } else if (!strcmp(name, "null")) {
            *out = json_null();
            rc = 0;
        } else if (peek(p, '(')) {
            p->pos++;
            rc = call(p, name, out);
        } else if (p->env->bare_names) {
            rc = p->env->ref(p->env->ctx, name, NULL, out, p->err);
        } else {
            char *attr = accept(p, ".") ? identifier(p) : NULL;
            if (!attr) {
                rc = gc_fail(p->err, GC_EXIT_USAGE,
                             "in \"%.*s\": \"%s\" is not a reference; write vars.NAME or "
                             "MODULE_ID.OUTPUT",
                             (int)p->len, p->s, name);
            } else {
                rc = p->env->ref(p->env->ctx, name, attr, out, p->err);
            }
            free(attr);
        }
        free(name);
    } else {
        return syntax(p, "a value");
    }
    return rc ? rc : postfix(p, out);
}

static int unary(parser *p, json_t **out)
{
    if (++p->depth > MAX_DEPTH) {
        p->depth--;
        return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": the expression nests too deeply",
                       (int)p->len, p->s);
    }
    int rc;
    if (accept(p, "!")) {
        rc = unary(p, out);
        if (!rc && !is_unknown(*out)) {
            if (!json_is_boolean(*out)) {
                json_decref(*out);
                rc = gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": ! needs true or false",
                             (int)p->len, p->s);
            } else {
                json_t *v = json_boolean(!json_is_true(*out));
                json_decref(*out);
                *out = v;
            }
        }
    } else if (accept(p, "-")) {
        rc = unary(p, out);
        if (!rc && !is_unknown(*out)) {
            json_t *v = json_is_integer(*out)
                            ? number_value(-(double)json_integer_value(*out), true)
                        : json_is_real(*out) ? json_real(-json_real_value(*out))
                                             : NULL;
            json_decref(*out);
            *out = v;
            if (!v)
                rc = gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": - needs a number", (int)p->len,
                             p->s);
        }
    } else {
        rc = primary(p, out);
    }
    p->depth--;
    return rc;
}

/* A number from a value (numbers, or strings that spell one, as HCL converts them). */
static bool as_number(const json_t *v, double *d, bool *integral)
{
    if (json_is_integer(v)) {
        *d = (double)json_integer_value(v);
        *integral = true;
        return true;
    }
    if (json_is_real(v)) {
        *d = json_real_value(v);
        *integral = false;
        return true;
    }
    if (json_is_string(v) && *json_string_value(v)) {
        char *end;
        *d = strtod(json_string_value(v), &end);
        *integral = !strpbrk(json_string_value(v), ".eE");
        return !*end;
    }
    return false;
}

static json_t *number_value(double d, bool integral)
{
    if (integral && d == floor(d) && fabs(d) < 9e15)
        return json_integer((json_int_t)d);
    if (d == floor(d) && fabs(d) < 9e15)
        return json_integer((json_int_t)d);
    return json_real(d);
}

static int arithmetic(parser *p, char op, json_t *a, json_t *b, json_t **out)
{
    if (is_unknown(a) || is_unknown(b)) {
        *out = json_incref(is_unknown(a) ? a : b);
        return 0;
    }
    double x, y;
    bool xi, yi;
    if (!as_number(a, &x, &xi) || !as_number(b, &y, &yi)) {
        const json_t *bad = as_number(a, &x, &xi) ? b : a;
        char *text = deploy_value_text(bad);
        int rc = gc_fail(
            p->err, GC_EXIT_USAGE, "in \"%.*s\": %c needs numbers, but one side is %s%s%s%s",
            (int)p->len, p->s, op,
            json_is_null(bad)     ? "null (a variable without a value: pass it with "
                                    "--vars NAME=VALUE or a deployment file)"
            : json_is_string(bad) ? "the string \""
                                  : "a list or mapping",
            json_is_string(bad) && text ? text : "", json_is_string(bad) ? "\"" : "", "");
        free(text);
        return rc;
    }
    bool integral = xi && yi;
    double r;
    switch (op) {
    case '+':
        r = x + y;
        break;
    case '-':
        r = x - y;
        break;
    case '*':
        r = x * y;
        break;
    case '/':
    case '%':
        if (y == 0)
            return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": division by zero", (int)p->len,
                           p->s);
        r = op == '/' ? x / y : fmod(x, y);
        integral = integral && r == floor(r);
        break;
    default:
        r = 0;
    }
    if (!isfinite(r))
        return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": the result of %c is too large",
                       (int)p->len, p->s, op);
    *out = number_value(r, integral);
    return 0;
}

static int mul(parser *p, json_t **out)
{
    int rc = unary(p, out);
    for (char op; !rc && ((op = '*', accept(p, "*")) || (op = '/', accept(p, "/")) ||
                          (op = '%', accept(p, "%")));) {
        json_t *b, *r = NULL;
        rc = unary(p, &b);
        if (!rc) {
            rc = arithmetic(p, op, *out, b, &r);
            json_decref(b);
        }
        json_decref(*out);
        *out = r;
    }
    return rc;
}

static int add(parser *p, json_t **out)
{
    int rc = mul(p, out);
    for (char op; !rc && ((op = '+', accept(p, "+")) || (op = '-', accept(p, "-")));) {
        json_t *b, *r = NULL;
        rc = mul(p, &b);
        if (!rc) {
            rc = arithmetic(p, op, *out, b, &r);
            json_decref(b);
        }
        json_decref(*out);
        *out = r;
    }
    return rc;
}

static int compare(parser *p, json_t **out)
{
    int rc = add(p, out);
    static const char *const ops[] = {"<=", ">=", "<", ">"};
    for (size_t k = 0; !rc && k < 4; k++) {
        if (!accept(p, ops[k]))
            continue;
        json_t *b;
        rc = add(p, &b);
        if (rc)
            break;
        double x, y;
        bool xi, yi;
        json_t *r;
        if (is_unknown(*out) || is_unknown(b))
            r = json_incref(is_unknown(*out) ? *out : b);
        else if (!as_number(*out, &x, &xi) || !as_number(b, &y, &yi))
            r = NULL;
        else
            r = json_boolean(k == 0 ? x <= y : k == 1 ? x >= y : k == 2 ? x < y : x > y);
        json_decref(b);
        json_decref(*out);
        *out = r;
        if (!r)
            return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": %s needs numbers", (int)p->len,
                           p->s, ops[k]);
        k = (size_t)-1; /* look for another comparison */
    }
    return rc;
}

/* HCL equality: same type and value; numbers compare by value. */
static bool values_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal((json_t *)a, (json_t *)b);
}

static int equality(parser *p, json_t **out)
{
    int rc = compare(p, out);
    for (bool eq; !rc && ((eq = true, accept(p, "==")) || (eq = false, accept(p, "!=")));) {
        json_t *b;
        rc = compare(p, &b);
        if (rc)
            break;
        json_t *r = is_unknown(*out) || is_unknown(b) ? json_incref(is_unknown(*out) ? *out : b)
                                                      : json_boolean(values_equal(*out, b) == eq);
        json_decref(b);
        json_decref(*out);
        *out = r;
    }
    return rc;
}

static int logical(parser *p, json_t **out, int level)
{
    int rc = level ? logical(p, out, level - 1) : equality(p, out);
    const char *op = level ? "||" : "&&";
    while (!rc && accept(p, op)) {
        json_t *b;
        rc = level ? logical(p, &b, level - 1) : equality(p, &b);
        if (rc)
            break;
        json_t *r;
        if (is_unknown(*out) || is_unknown(b))
            r = json_incref(is_unknown(*out) ? *out : b);
        else if (!json_is_boolean(*out) || !json_is_boolean(b))
            r = NULL;
        else
            r = json_boolean(level ? json_is_true(*out) || json_is_true(b)
                                   : json_is_true(*out) && json_is_true(b));
        json_decref(b);
        json_decref(*out);
        *out = r;
        if (!r)
            return gc_fail(p->err, GC_EXIT_USAGE, "in \"%.*s\": %s needs true or false",
                           (int)p->len, p->s, op);
    }
    return rc;
}

static int expression(parser *p, json_t **out)
{
    int rc = logical(p, out, 1);
    if (rc || !accept(p, "?"))
        return rc;
    json_t *yes, *no;
    rc = expression(p, &yes);
    if (rc) {
        json_decref(*out);
        return rc;
    }
    if (!accept(p, ":")) {
        json_decref(*out);
        json_decref(yes);
        return syntax(p, "':'");
    }
    rc = expression(p, &no);
    if (rc) {
        json_decref(*out);
        json_decref(yes);
        return rc;
    }
    json_t *cond = *out;
    if (is_unknown(cond))
        *out = json_incref(cond);
    else if (json_is_boolean(cond))
        *out = json_incref(json_is_true(cond) ? yes : no);
    else
        *out = NULL;
    json_decref(cond);
    json_decref(yes);
    json_decref(no);
    if (!*out)
        return gc_fail(p->err, GC_EXIT_USAGE,
                       "in \"%.*s\": the condition before ? must be true "
                       "or false",
                       (int)p->len, p->s);
    return 0;
}

int deploy_expr_eval(const char *text, size_t len, const deploy_env *env, json_t **out,
                     gc_error *err)
{
    parser p = {.s = text, .len = len, .env = env, .err = err};
    *out = NULL;
    int rc = expression(&p, out);
    skip_space(&p);
    if (!rc && p.pos < p.len) {
        json_decref(*out);
        *out = NULL;
        rc = syntax(&p, "an operator or the end");
    }
    if (rc) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

/* Blueprint strings */

/* Where the expression that starts after "$(" at `s` ends: the index of its ')' (parentheses
 * nest, and strings may hold any of them), or -1. */
static long expression_end(const char *s)
{
    int depth = 0;
    bool quoted = false;
    for (long i = 0; s[i]; i++) {
        char c = s[i];
        if (quoted) {
            if (c == '\\' && s[i + 1])
                i++;
            else if (c == '"')
                quoted = false;
        } else if (c == '"') {
            quoted = true;
        } else if (c == '(' || c == '[' || c == '{') {
            depth++;
        } else if (c == ')' || c == ']' || c == '}') {
            if (depth == 0)
                return c == ')' ? i : -1;
            depth--;
        }
    }
    return -1;
}

bool deploy_string_has_expression(const char *s)
{
    for (const char *p = strstr(s, "$("); p; p = strstr(p + 2, "$(")) {
        size_t bs = 0;
        while (p - (long)bs > s && p[-(long)bs - 1] == '\\')
            bs++;
        if (bs % 2 == 0)
            return true;
    }
    return false;
}

int deploy_string_eval(const char *s, const deploy_env *env, json_t **out, gc_error *err)
{
    *out = NULL;
    /* Exactly one expression and nothing else: the value keeps its type. */
    if (!strncmp(s, "$(", 2)) {
        long end = expression_end(s + 2);
        if (end >= 0 && s[2 + end + 1] == '\0')
            return deploy_expr_eval(s + 2, (size_t)end, env, out, err);
    }
    gc_buf b;
    gc_buf_init(&b);
    json_t *unknown = NULL;
    int rc = 0;
    const char *p = s;
    while (*p && !rc) {
        const char *open = strstr(p, "$(");
        if (!open) {
            gc_buf_puts(&b, p);
            break;
        }
        size_t bs = 0;
        while (open - (long)bs > p && open[-(long)bs - 1] == '\\')
            bs++;
        /* the text before the backslashes, then half of them */
        gc_buf_append(&b, p, (size_t)(open - p) - bs);
        for (size_t i = 0; i < bs / 2; i++)
            gc_buf_putc(&b, '\\');
        if (bs % 2) {
            gc_buf_puts(&b, "$(");
            p = open + 2;
            continue;
        }
        long end = expression_end(open + 2);
        if (end < 0) {
            rc = gc_fail(err, GC_EXIT_USAGE, "\"%s\": $( has no closing )", s);
            break;
        }
        json_t *v;
        rc = deploy_expr_eval(open + 2, (size_t)end, env, &v, err);
        if (rc)
            break;
        char *text = deploy_value_text(v);
        if (is_unknown(v) || deploy_unknown_name(v)) {
            if (!unknown)
                unknown = json_incref(v);
        } else if (!text) {
            rc = gc_fail(err, GC_EXIT_USAGE,
                         "\"%s\": $(%.*s) is %s and cannot be part of a longer string", s, (int)end,
                         open + 2,
                         json_is_null(v) ? "null (a variable without a value: pass it with "
                                           "--vars NAME=VALUE or a deployment file)"
                                         : "a list or mapping");
        } else {
            gc_buf_puts(&b, text);
        }
        free(text);
        json_decref(v);
        p = open + 2 + end + 1;
    }
    if (!rc)
        *out = unknown ? json_incref(unknown) : json_string(b.data ? b.data : "");
    json_decref(unknown);
    gc_buf_free(&b);
    if (!rc && !*out)
        rc = gc_fail(err, GC_EXIT_USAGE, "\"%s\": the result is not valid UTF-8", s);
    return rc;
}

/* Templates */

static void advance(const char *text, size_t from, size_t to, int *line, int *column)
{
    for (size_t i = from; i < to; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *column = 1;
        } else {
            (*column)++;
        }
    }
}

/* The index of the '}' closing a ${ or %{ whose body starts at `from`, or `len`. */
static size_t template_close(const char *text, size_t len, size_t from)
{
    int depth = 0;
    bool quoted = false;
    for (size_t i = from; i < len; i++) {
        char c = text[i];
        if (quoted) {
            if (c == '\\')
                i++;
            else if (c == '"')
                quoted = false;
        } else if (c == '"') {
            quoted = true;
        } else if (c == '{') {
            depth++;
        } else if (c == '}') {
            if (!depth)
                return i;
            depth--;
        }
    }
    return len;
}

typedef struct tpl_frame {
    bool active;    /* the enclosing output is being written */
    bool condition; /* which branch of this if is true */
    bool in_else;
} tpl_frame;

static void strip_trailing_space(gc_buf *out)
{
    while (out->len && isspace((unsigned char)out->data[out->len - 1]))
        out->data[--out->len] = '\0';
}

int deploy_template_render(const char *text, size_t len, const deploy_env *env, const char *label,
                           gc_buf *out, gc_error *err)
{
    gc_buf b;
    gc_buf_init(&b);
    tpl_frame stack[32];
    size_t depth = 0;
    bool writing = true, strip_next = false;
    int line = 1, column = 1, rc = 0;
    size_t i = 0;
    while (i < len && !rc) {
        char c = text[i];
        if (strip_next) {
            if (isspace((unsigned char)c)) {
                advance(text, i, i + 1, &line, &column);
                i++;
                continue;
            }
            strip_next = false;
        }
        bool opens = (c == '$' || c == '%') && i + 1 < len && text[i + 1] == '{';
        if ((c == '$' || c == '%') && i + 2 < len && text[i + 1] == c && text[i + 2] == '{') {
            if (writing) {
                gc_buf_putc(&b, c);
                gc_buf_putc(&b, '{');
            }
            advance(text, i, i + 3, &line, &column);
            i += 3;
            continue;
        }
        if (!opens) {
            if (writing)
                gc_buf_putc(&b, c);
            advance(text, i, i + 1, &line, &column);
            i++;
            continue;
        }
        size_t body = i + 2, close = template_close(text, len, body);
        if (close >= len) {
            rc = gc_fail(err, GC_EXIT_USAGE,
                         "%s:%d:%d: \"%c{\" has no closing } (write %c%c{ for "
                         "a literal %c{)",
                         label, line, column, c, c, c, c);
            break;
        }
        size_t from = body, to = close;
        if (from < to && text[from] == '~') {
            from++;
            if (writing)
                strip_trailing_space(&b);
        }
        if (to > from && text[to - 1] == '~') {
            to--;
            strip_next = true;
        }
        while (from < to && isspace((unsigned char)text[from]))
            from++;
        while (to > from && isspace((unsigned char)text[to - 1]))
            to--;
        json_t *v = NULL;
        if (c == '$') {
            if (writing) {
                rc = deploy_expr_eval(text + from, to - from, env, &v, err);
                char *s = rc ? NULL : deploy_value_text(v);
                if (!rc && !s)
                    rc =
                        gc_fail(err, GC_EXIT_USAGE, "${%.*s} is %s, which a template cannot insert",
                                (int)(to - from), text + from,
                                deploy_unknown_name(v) ? "known only once Terraform runs"
                                : json_is_null(v)      ? "null"
                                                       : "a list or mapping");
                if (s)
                    gc_buf_puts(&b, s);
                free(s);
            }
        } else if (to - from >= 3 && !strncmp(text + from, "if", 2) &&
                   isspace((unsigned char)text[from + 2])) {
            if (depth == sizeof(stack) / sizeof(*stack)) {
                rc = gc_fail(err, GC_EXIT_USAGE, "%%{ if } nests too deeply");
            } else {
                bool cond = false;
                if (writing) {
                    rc = deploy_expr_eval(text + from + 3, to - from - 3, env, &v, err);
                    if (!rc && !json_is_boolean(v))
                        rc = gc_fail(err, GC_EXIT_USAGE,
                                     "the condition of %%{ %.*s } is not true "
                                     "or false",
                                     (int)(to - from), text + from);
                    cond = !rc && json_is_true(v);
                }
                stack[depth++] = (tpl_frame){.active = writing, .condition = cond};
                writing = writing && cond;
            }
        } else if (to - from == 4 && !strncmp(text + from, "else", 4) && depth &&
                   !stack[depth - 1].in_else) {
            stack[depth - 1].in_else = true;
            writing = stack[depth - 1].active && !stack[depth - 1].condition;
        } else if (to - from == 5 && !strncmp(text + from, "endif", 5) && depth) {
            writing = stack[--depth].active;
        } else {
            rc = gc_fail(err, GC_EXIT_USAGE,
                         "%%{ %.*s } is not supported: templates may use ${...} and %%{ if }, %%{ "
                         "else }, %%{ endif } (write %%%%{ for a literal %%{)",
                         (int)(to - from), text + from);
        }
        json_decref(v);
        if (rc) {
            gc_error_prefix(err, "%s:%d:%d: ", label, line, column);
            break;
        }
        advance(text, i, close + 1, &line, &column);
        i = close + 1;
    }
    if (!rc && depth)
        rc = gc_fail(err, GC_EXIT_USAGE, "%s: %%{ if } without %%{ endif }", label);
    gc_buf_append(out, b.data, b.len);
    gc_buf_free(&b);
    return rc;
}
