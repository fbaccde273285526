/*
 * The values of Cluster Toolkit expressions (see expr.h): unknown markers, numbers, the text a
 * value has inside a string, the functions blueprints call, the budget on what evaluation makes,
 * and the messages that say where in an expression something is wrong.
 */
#include "expr_internal.h"

#include "gcluster/buf.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNKNOWN_KEY "\x01unknown"
/* What a list item or mapping entry costs against the budget, beside its text. */
#define NODE_COST 16

json_t *deploy_unknown(const char *what)
{
    return json_pack("{s:s}", UNKNOWN_KEY, what ? what : "a module output");
}

/* Values are charged to the budget and so nest at most EXPR_MAX_VALUE_DEPTH deep: this
 * recursion is bounded. */
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

bool deploy_expr_is_unknown(const json_t *v)
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

const char *deploy_expr_kind(const json_t *v)
{
    if (!v || json_is_null(v))
        return "null (a variable without a value: pass it with --vars NAME=VALUE or a "
               "deployment file)";
    if (deploy_unknown_name(v))
        return "known only once Terraform runs";
    if (json_is_array(v))
        return "a list";
    if (json_is_object(v))
        return "a mapping";
    if (json_is_string(v))
        return "a string";
    if (json_is_boolean(v))
        return "true or false";
    return "a number";
}

json_t *deploy_expr_number_value(double d, bool integral)
{
    (void)integral; /* a whole number is an integer whichever way it was written */
    if (d == floor(d) && fabs(d) < 9e15)
        return json_integer((json_int_t)d);
    return json_real(d);
}

bool deploy_expr_as_number(const json_t *v, double *d, bool *integral)
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

/* Messages */

void deploy_excerpt(const char *text, size_t len, size_t at, char *out, size_t size)
{
    enum { BEFORE = 20, AFTER = 40 };
    if (at > len)
        at = len;
    size_t from = at > BEFORE ? at - BEFORE : 0, to = len - at > AFTER ? at + AFTER : len;
    /* whole UTF-8 characters only: no continuation byte at either cut */
    while (from > 0 && from < at && ((unsigned char)text[from] & 0xC0) == 0x80)
        from++;
    while (to < len && to > at && ((unsigned char)text[to] & 0xC0) == 0x80)
        to--;
    gc_buf b;
    gc_buf_init(&b);
    if (from > 0)
        gc_buf_puts(&b, "...");
    for (size_t i = from; i < to; i++) {
        unsigned char c = (unsigned char)text[i];
        gc_buf_putc(&b, c < 0x20 || c == 0x7f ? ' ' : (char)c);
    }
    if (to < len)
        gc_buf_puts(&b, "...");
    snprintf(out, size, "%s", b.data ? b.data : "");
    gc_buf_free(&b);
}

int deploy_expr_fail(deploy_expr_parser *p, size_t at, const char *fmt, ...)
{
    char reason[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    if (at > p->len)
        at = p->len;
    int line = 1, column = 1;
    for (size_t i = 0; i < at; i++) {
        if (p->s[i] == '\n') {
            line++;
            column = 1;
        } else if (((unsigned char)p->s[i] & 0xC0) != 0x80) {
            column++;
        }
    }
    char excerpt[128];
    deploy_excerpt(p->s, p->len, at, excerpt, sizeof(excerpt));
    return gc_fail(p->err, GC_EXIT_USAGE, "%s (line %d, column %d of the expression \"%s\")",
                   reason, line, column, excerpt);
}

/* The budget */

/* The size of `v` (shared parts counted each time they appear), stopping past `limit`; -1 when
 * it nests deeper than EXPR_MAX_VALUE_DEPTH. */
static long long weight(const json_t *v, size_t limit, int depth)
{
    if (depth > EXPR_MAX_VALUE_DEPTH)
        return -1;
    if (json_is_string(v))
        return (long long)json_string_length(v) + 1;
    long long sum = NODE_COST;
    if (json_is_array(v)) {
        size_t i;
        const json_t *item;
        json_array_foreach(v, i, item)
        {
            long long w = weight(item, limit, depth + 1);
            if (w < 0)
                return w;
            sum += w + NODE_COST;
            if ((size_t)sum > limit)
                return sum;
        }
    } else if (json_is_object(v)) {
        const char *k;
        const json_t *item;
        json_object_foreach((json_t *)v, k, item)
        {
            long long w = weight(item, limit, depth + 1);
            if (w < 0)
                return w;
            sum += w + (long long)strlen(k) + NODE_COST;
            if ((size_t)sum > limit)
                return sum;
        }
    }
    return sum;
}

/* 0 when `v` fits the budget (which it then spends), -1 when it nests too deeply, 1 when it
 * does not fit (the budget is then spent). */
static int charge(deploy_budget *budget, const json_t *v)
{
    long long w = weight(v, budget->left, 0);
    if (w < 0)
        return -1;
    if ((size_t)w > budget->left) {
        budget->left = 0;
        return 1;
    }
    budget->left -= (size_t)w;
    return 0;
}

#define TOO_DEEP "nests more than %d lists or mappings deep; build it flatter"
#define TOO_LARGE                                                                                  \
    "makes more than %zu MiB of values (a string or list that doubles through variables?); "       \
    "deploy stops here"

int deploy_expr_charge(deploy_expr_parser *p, size_t at, const json_t *v)
{
    switch (charge(p->budget, v)) {
    case 0:
        return 0;
    case -1:
        return deploy_expr_fail(p, at, "the value " TOO_DEEP, EXPR_MAX_VALUE_DEPTH);
    default:
        return deploy_expr_fail(p, at, "evaluation " TOO_LARGE, DEPLOY_BUDGET >> 20);
    }
}

int deploy_charge(deploy_budget *budget, const json_t *v, const char *what, gc_error *err)
{
    switch (charge(budget, v)) {
    case 0:
        return 0;
    case -1:
        return gc_fail(err, GC_EXIT_USAGE, "%s " TOO_DEEP, what, EXPR_MAX_VALUE_DEPTH);
    default:
        return gc_fail(err, GC_EXIT_USAGE, "%s " TOO_LARGE, what, DEPLOY_BUDGET >> 20);
    }
}

/* Functions */

static int call_merge(deploy_expr_parser *p, size_t at, json_t **args, size_t n, json_t **out)
{
    json_t *merged = json_object();
    for (size_t i = 0; i < n; i++) {
        if (deploy_expr_is_unknown(args[i])) {
            json_decref(merged);
            *out = json_incref(args[i]);
            return 0;
        }
        if (json_is_null(args[i]))
            continue;
        if (!json_is_object(args[i])) {
            json_decref(merged);
            return deploy_expr_fail(p, at, "merge() takes mappings, but argument %zu is %s", i + 1,
                                    deploy_expr_kind(args[i]));
        }
        json_object_update(merged, args[i]);
    }
    *out = merged;
    return 0;
}

/* Arguments were charged when they were made, so they nest at most EXPR_MAX_VALUE_DEPTH. */
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
static int other_function(deploy_expr_parser *p, size_t at, const char *name, json_t **args,
                          size_t n, json_t **out)
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
                *out = NULL;
                return deploy_expr_fail(p, at, "concat() takes lists, but argument %zu is %s",
                                        i + 1, deploy_expr_kind(args[i]));
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
        return deploy_expr_fail(p, at, "coalesce() found no value");
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
                return deploy_expr_fail(p, at, "%s() takes numbers, but argument %zu is %s", name,
                                        i + 1, deploy_expr_kind(args[i]));
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

int deploy_expr_call(deploy_expr_parser *p, size_t at, const char *name, json_t **args, size_t n,
                     json_t **out)
{
    *out = NULL;
    int rc;
    if (!strcmp(name, "ghpc_stage") && p->env->stage) {
        if (n != 1 || !json_is_string(args[0]))
            return deploy_expr_fail(p, at, "ghpc_stage() takes one file name (a string)");
        rc = p->env->stage(p->env->ctx, json_string_value(args[0]), out, p->err);
    } else if (!strcmp(name, "merge")) {
        rc = call_merge(p, at, args, n, out);
    } else if (!strcmp(name, "flatten")) {
        if (n != 1 || !json_is_array(args[0]))
            return deploy_expr_fail(p, at, "flatten() takes one list");
        *out = json_array();
        flatten_into(*out, args[0]);
        rc = 0;
    } else {
        rc = other_function(p, at, name, args, n, out);
    }
    if (!rc && (rc = deploy_expr_charge(p, at, *out)) != 0) {
        json_decref(*out);
        *out = NULL;
    }
    return rc;
}
