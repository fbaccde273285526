/*
 * Cluster Toolkit's expression language (an HCL subset) over jansson values; see expr.h.
 *
 * A recursive-descent parser that evaluates as it parses. HCL identifiers may contain '-'
 * after their first character, so `gke-tpu-v6e-pool.node_count_static` is one reference and
 * subtraction needs a space or a non-identifier on its left (`a - b`, `2-1`), as in Terraform.
 * Every way the parser recurses (parentheses, lists, mappings, calls, ?:, unary operators) goes
 * through enter(), so hostile nesting is an error, not a stack overflow; every value it builds is
 * charged to the budget (expr_value.c).
 */
#include "expr_internal.h"

#include "gcluster/buf.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef deploy_expr_parser parser;

static int syntax(parser *p, const char *what)
{
    if (p->pos >= p->len)
        return deploy_expr_fail(p, p->pos, "expected %s at the end", what);
    return deploy_expr_fail(p, p->pos, "expected %s", what);
}

static int enter(parser *p)
{
    if (++p->depth <= EXPR_MAX_DEPTH)
        return 0;
    p->depth--;
    return deploy_expr_fail(p, p->pos,
                            "the expression nests too deeply (more than %d levels of parentheses, "
                            "lists, calls, ?: or operators)",
                            EXPR_MAX_DEPTH);
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

static int number(parser *p, json_t **out)
{
    char *end;
    size_t at = p->pos;
    const char *start = p->s + p->pos;
    double d = strtod(start, &end);
    size_t n = (size_t)(end - start);
    if (!n || p->pos + n > p->len)
        return syntax(p, "a number");
    p->pos += n;
    if (!isfinite(d))
        return deploy_expr_fail(p, at, "%.*s is too large a number", (int)(n > 40 ? 40 : n), start);
    bool integral = !memchr(start, '.', n) && !memchr(start, 'e', n) && !memchr(start, 'E', n);
    *out = integral && fabs(d) < 9e15 ? json_integer((json_int_t)d) : json_real(d);
    return 0;
}

static int string_literal(parser *p, json_t **out)
{
    gc_buf b;
    gc_buf_init(&b);
    size_t at = p->pos++; /* the opening quote */
    while (p->pos < p->len && p->s[p->pos] != '"') {
        char c = p->s[p->pos++];
        if (c == '$' && p->pos < p->len && p->s[p->pos] == '{') {
            gc_buf_free(&b);
            return deploy_expr_fail(p, p->pos - 1,
                                    "string templates (\"${...}\") inside an expression are not "
                                    "supported by gcluster deploy; write the pieces with + or as "
                                    "separate $(...) in the YAML string");
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
        return deploy_expr_fail(p, at, "the string is not valid UTF-8");
    return 0;
}

/* [a, b, ...] */
static int list_literal(parser *p, json_t **out)
{
    json_t *list = json_array();
    size_t at = p->pos++;
    int rc = 0;
    while (!rc && !accept(p, "]")) {
        json_t *item;
        if ((rc = expression(p, &item)) != 0)
            break;
        json_array_append_new(list, item);
        if (!accept(p, ",") && !peek(p, ']'))
            rc = syntax(p, "',' or ']'");
    }
    if (!rc)
        rc = deploy_expr_charge(p, at, list);
    if (rc)
        json_decref(list);
    *out = rc ? NULL : list;
    return rc;
}

/* {key = value, "key": value, ...} */
static int object_literal(parser *p, json_t **out)
{
    json_t *obj = json_object();
    size_t at = p->pos++;
    int rc = 0;
    while (!rc && !accept(p, "}")) {
        char *key = identifier(p);
        if (!key && peek(p, '"')) {
            json_t *k;
            if ((rc = string_literal(p, &k)) != 0)
                break;
            key = gc_xstrdup(json_string_value(k));
            json_decref(k);
        }
        if (!key || (!accept(p, "=") && !accept(p, ":"))) {
            free(key);
            rc = syntax(p, "key = value");
            break;
        }
        json_t *value;
        rc = expression(p, &value);
        if (!rc)
            json_object_set_new(obj, key, value);
        free(key);
        accept(p, ",");
    }
    if (!rc)
        rc = deploy_expr_charge(p, at, obj);
    if (rc)
        json_decref(obj);
    *out = rc ? NULL : obj;
    return rc;
}

static int call(parser *p, size_t at, const char *name, json_t **out)
{
    json_t *args[16];
    size_t n = 0;
    int rc = 0;
    while (!rc && !accept(p, ")")) {
        if (n == sizeof(args) / sizeof(*args)) {
            rc = deploy_expr_fail(p, p->pos, "%s() has more than %zu arguments", name,
                                  sizeof(args) / sizeof(*args));
            break;
        }
        rc = expression(p, &args[n]);
        if (rc)
            break;
        n++;
        if (!accept(p, ",") && !peek(p, ')'))
            rc = syntax(p, "',' or ')'");
    }
    if (!rc)
        rc = deploy_expr_call(p, at, name, args, n, out);
    for (size_t i = 0; i < n; i++)
        json_decref(args[i]);
    return rc;
}

/* list.0, the legacy index form: digits after the dot, refused when they overflow. */
static int legacy_index(parser *p, char **attr)
{
    size_t at = p->pos, i = 0;
    while (p->pos < p->len && isdigit((unsigned char)p->s[p->pos])) {
        size_t digit = (size_t)(p->s[p->pos++] - '0');
        if (i > (SIZE_MAX - digit) / 10) {
            while (p->pos < p->len && isdigit((unsigned char)p->s[p->pos]))
                p->pos++;
            return deploy_expr_fail(p, at, "the index %.*s is too large", (int)(p->pos - at),
                                    p->s + at);
        }
        i = i * 10 + digit;
    }
    *attr = gc_xasprintf("%zu", i);
    return 0;
}

static int no_such(parser *p, size_t at, const json_t *value, const char *attr)
{
    if (json_is_array(value))
        return deploy_expr_fail(p, at, "index %s is out of range: the list has %zu items", attr,
                                json_array_size(value));
    if (json_is_object(value))
        return deploy_expr_fail(p, at, "the mapping has no \"%s\"", attr);
    return deploy_expr_fail(p, at, "\"%s\" of a value that is %s", attr, deploy_expr_kind(value));
}

/* .attr and [index] after a value. */
static int postfix(parser *p, json_t **value)
{
    for (;;) {
        size_t at = p->pos;
        if (accept(p, ".")) {
            char *attr = identifier(p);
            if (!attr) {
                skip_space(p);
                if (p->pos >= p->len || !isdigit((unsigned char)p->s[p->pos]))
                    return syntax(p, "an attribute name");
                int rc = legacy_index(p, &attr);
                if (rc)
                    return rc;
            }
            json_t *next = NULL;
            if (deploy_expr_is_unknown(*value))
                next = json_incref(*value);
            else if (json_is_object(*value))
                next = json_incref(json_object_get(*value, attr));
            else if (json_is_array(*value) && isdigit((unsigned char)attr[0]))
                next = json_incref(json_array_get(*value, strtoul(attr, NULL, 10)));
            if (!next) {
                int rc = no_such(p, at, *value, attr);
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
            if (deploy_expr_is_unknown(*value) || deploy_expr_is_unknown(index))
                next = json_incref(deploy_expr_is_unknown(*value) ? *value : index);
            else if (json_is_array(*value) && json_is_integer(index) &&
                     json_integer_value(index) >= 0)
                next = json_incref(json_array_get(*value, (size_t)json_integer_value(index)));
            else if (json_is_object(*value) && json_is_string(index))
                next = json_incref(json_object_get(*value, json_string_value(index)));
            if (!next) {
                char *shown = deploy_value_text(index);
                rc = json_is_array(*value) && json_is_integer(index) ? no_such(p, at, *value, shown)
                     : json_is_object(*value) && shown
                         ? no_such(p, at, *value, shown)
                         : deploy_expr_fail(p, at,
                                            "an index that is %s into a "
                                            "value that is %s",
                                            deploy_expr_kind(index), deploy_expr_kind(*value));
                free(shown);
            }
            json_decref(index);
            if (!next)
                return rc;
            json_decref(*value);
            *value = next;
        } else {
            return 0;
        }
    }
}

static int reference(parser *p, size_t at, char *name, json_t **out)
{
    if (p->env->bare_names)
        return p->env->ref(p->env->ctx, name, NULL, out, p->err);
    char *attr = accept(p, ".") ? identifier(p) : NULL;
    int rc =
        attr ? p->env->ref(p->env->ctx, name, attr, out, p->err)
             : deploy_expr_fail(
                   p, at, "\"%s\" is not a reference; write vars.NAME or MODULE_ID.OUTPUT", name);
    free(attr);
    return rc;
}

static int primary(parser *p, json_t **out)
{
    *out = NULL;
    skip_space(p);
    if (p->pos >= p->len)
        return syntax(p, "a value");
    size_t at = p->pos;
    char c = p->s[p->pos];
    int rc;
    if (c == '(') {
        p->pos++;
        rc = expression(p, out);
        if (!rc && !accept(p, ")"))
            rc = syntax(p, "')'");
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
            rc = call(p, at, name, out);
        } else {
            rc = reference(p, at, name, out);
        }
        free(name);
    } else {
        return syntax(p, "a value");
    }
    if (!rc)
        rc = postfix(p, out);
    if (rc) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

static int unary(parser *p, json_t **out)
{
    *out = NULL;
    int rc = enter(p);
    if (rc)
        return rc;
    size_t at = p->pos;
    if (accept(p, "!")) {
        rc = unary(p, out);
        if (!rc && !deploy_expr_is_unknown(*out)) {
            if (!json_is_boolean(*out)) {
                rc = deploy_expr_fail(p, at, "! needs true or false, not %s",
                                      deploy_expr_kind(*out));
                json_decref(*out);
                *out = NULL;
            } else {
                json_t *v = json_boolean(!json_is_true(*out));
                json_decref(*out);
                *out = v;
            }
        }
    } else if (accept(p, "-")) {
        rc = unary(p, out);
        if (!rc && !deploy_expr_is_unknown(*out)) {
            json_t *v = json_is_integer(*out)
                            ? deploy_expr_number_value(-(double)json_integer_value(*out), true)
                        : json_is_real(*out) ? json_real(-json_real_value(*out))
                                             : NULL;
            if (!v)
                rc = deploy_expr_fail(p, at, "- needs a number, not %s", deploy_expr_kind(*out));
            json_decref(*out);
            *out = v;
        }
    } else {
        rc = primary(p, out);
    }
    p->depth--;
    return rc;
}

static int arithmetic(parser *p, size_t at, char op, json_t *a, json_t *b, json_t **out)
{
    if (deploy_expr_is_unknown(a) || deploy_expr_is_unknown(b)) {
        *out = json_incref(deploy_expr_is_unknown(a) ? a : b);
        return 0;
    }
    double x, y;
    bool xi, yi;
    if (!deploy_expr_as_number(a, &x, &xi) || !deploy_expr_as_number(b, &y, &yi)) {
        const json_t *bad = deploy_expr_as_number(a, &x, &xi) ? b : a;
        if (json_is_string(bad)) {
            char shown[128];
            deploy_excerpt(json_string_value(bad), json_string_length(bad), 0, shown,
                           sizeof(shown));
            return deploy_expr_fail(p, at, "%c needs numbers, but one side is the string \"%s\"",
                                    op, shown);
        }
        return deploy_expr_fail(p, at, "%c needs numbers, but one side is %s", op,
                                deploy_expr_kind(bad));
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
            return deploy_expr_fail(p, at, "division by zero");
        r = op == '/' ? x / y : fmod(x, y);
        integral = integral && r == floor(r);
        break;
    default:
        r = 0;
    }
    if (!isfinite(r))
        return deploy_expr_fail(p, at, "the result of %c is too large", op);
    *out = deploy_expr_number_value(r, integral);
    return 0;
}

static int mul(parser *p, json_t **out)
{
    int rc = unary(p, out);
    size_t at;
    for (char op; !rc && (skip_space(p), at = p->pos,
                                         (op = '*', accept(p, "*")) || (op = '/', accept(p, "/")) ||
                                             (op = '%', accept(p, "%")));) {
        json_t *b, *r = NULL;
        rc = unary(p, &b);
        if (!rc) {
            rc = arithmetic(p, at, op, *out, b, &r);
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
    size_t at;
    for (char op; !rc && (skip_space(p),
                          at = p->pos, (op = '+', accept(p, "+")) || (op = '-', accept(p, "-")));) {
        json_t *b, *r = NULL;
        rc = mul(p, &b);
        if (!rc) {
            rc = arithmetic(p, at, op, *out, b, &r);
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
        skip_space(p);
        size_t at = p->pos;
        if (!accept(p, ops[k]))
            continue;
        json_t *b;
        rc = add(p, &b);
        if (rc)
            break;
        double x, y;
        bool xi, yi;
        json_t *r;
        if (deploy_expr_is_unknown(*out) || deploy_expr_is_unknown(b))
            r = json_incref(deploy_expr_is_unknown(*out) ? *out : b);
        else if (!deploy_expr_as_number(*out, &x, &xi) || !deploy_expr_as_number(b, &y, &yi))
            r = NULL;
        else
            r = json_boolean(k == 0 ? x <= y : k == 1 ? x >= y : k == 2 ? x < y : x > y);
        if (!r)
            rc =
                deploy_expr_fail(p, at, "%s needs numbers, but one side is %s", ops[k],
                                 deploy_expr_kind(deploy_expr_as_number(*out, &x, &xi) ? b : *out));
        json_decref(b);
        json_decref(*out);
        *out = r;
        k = (size_t)-1; /* look for another comparison */
    }
    if (rc) {
        json_decref(*out);
        *out = NULL;
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
        json_t *r = deploy_expr_is_unknown(*out) || deploy_expr_is_unknown(b)
                        ? json_incref(deploy_expr_is_unknown(*out) ? *out : b)
                        : json_boolean(values_equal(*out, b) == eq);
        json_decref(b);
        json_decref(*out);
        *out = r;
    }
    if (rc) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

static int logical(parser *p, json_t **out, int level)
{
    int rc = level ? logical(p, out, level - 1) : equality(p, out);
    const char *op = level ? "||" : "&&";
    for (size_t at; !rc && (skip_space(p), at = p->pos, accept(p, op));) {
        json_t *b;
        rc = level ? logical(p, &b, level - 1) : equality(p, &b);
        if (rc)
            break;
        json_t *r;
        if (deploy_expr_is_unknown(*out) || deploy_expr_is_unknown(b))
            r = json_incref(deploy_expr_is_unknown(*out) ? *out : b);
        else if (!json_is_boolean(*out) || !json_is_boolean(b))
            r = NULL;
        else
            r = json_boolean(level ? json_is_true(*out) || json_is_true(b)
                                   : json_is_true(*out) && json_is_true(b));
        if (!r)
            rc = deploy_expr_fail(p, at, "%s needs true or false, but one side is %s", op,
                                  deploy_expr_kind(json_is_boolean(*out) ? b : *out));
        json_decref(b);
        json_decref(*out);
        *out = r;
    }
    if (rc) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}

/* c ? a : b, where each of a and b may be another ?: (a chain nests, so enter() bounds it). */
static int conditional(parser *p, json_t **out)
{
    int rc = logical(p, out, 1);
    skip_space(p);
    size_t at = p->pos;
    if (rc || !accept(p, "?"))
        return rc;
    json_t *yes = NULL, *no = NULL;
    rc = expression(p, &yes);
    if (!rc && !accept(p, ":"))
        rc = syntax(p, "':'");
    if (!rc)
        rc = expression(p, &no);
    json_t *cond = *out;
    *out = NULL;
    if (!rc && deploy_expr_is_unknown(cond))
        *out = json_incref(cond);
    else if (!rc && json_is_boolean(cond))
        *out = json_incref(json_is_true(cond) ? yes : no);
    else if (!rc)
        rc = deploy_expr_fail(p, at, "the condition before ? must be true or false, not %s",
                              deploy_expr_kind(cond));
    json_decref(cond);
    json_decref(yes);
    json_decref(no);
    return rc;
}

static int expression(parser *p, json_t **out)
{
    *out = NULL;
    int rc = enter(p);
    if (rc)
        return rc;
    rc = conditional(p, out);
    p->depth--;
    return rc;
}

int deploy_expr_eval(const char *text, size_t len, const deploy_env *env, json_t **out,
                     gc_error *err)
{
    deploy_budget own = {DEPLOY_BUDGET};
    parser p = {
        .s = text, .len = len, .env = env, .budget = env->budget ? env->budget : &own, .err = err};
    *out = NULL;
    int rc = expression(&p, out);
    skip_space(&p);
    if (!rc && p.pos < p.len)
        rc = syntax(&p, "an operator or the end");
    if (rc) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}
