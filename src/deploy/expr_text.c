/*
 * Blueprint strings ("a-$(vars.b)-c") and Terraform templates (${...}, %{ if }) over the
 * expression evaluator (expr.c); see expr.h. Messages quote a bounded excerpt, never a whole
 * string, and everything a string or template makes is charged to the budget.
 */
#include "expr_internal.h"

#include "gcluster/buf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `env` with the caller's budget, or else `own` (a fresh one), so that the pieces of one string
 * or template share a budget. */
static deploy_env with_budget(const deploy_env *env, deploy_budget *own)
{
    *own = (deploy_budget){DEPLOY_BUDGET};
    deploy_env shared = *env;
    if (!shared.budget)
        shared.budget = own;
    return shared;
}

/* Text a string or template is about to insert, charged to the budget. */
static int charge_text(deploy_budget *budget, size_t len, gc_error *err)
{
    if (len <= budget->left) {
        budget->left -= len;
        return 0;
    }
    budget->left = 0;
    return gc_fail(err, GC_EXIT_USAGE,
                   "evaluation makes more than %zu MiB of text (a string that doubles through "
                   "variables?); deploy stops here",
                   DEPLOY_BUDGET >> 20);
}

/* A short excerpt of `s` from its start, for messages. */
static void shown(const char *s, size_t len, char *out, size_t size)
{
    deploy_excerpt(s, len, 0, out, size);
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

int deploy_string_eval(const char *s, const deploy_env *caller, json_t **out, gc_error *err)
{
    *out = NULL;
    deploy_budget own;
    deploy_env shared = with_budget(caller, &own), *env = &shared;
    char excerpt[128];
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
            shown(open, strlen(open), excerpt, sizeof(excerpt));
            rc = gc_fail(err, GC_EXIT_USAGE, "$( has no closing ) in \"%s\"", excerpt);
            break;
        }
        json_t *v;
        rc = deploy_expr_eval(open + 2, (size_t)end, env, &v, err);
        if (rc)
            break;
        char *text = deploy_value_text(v);
        if (deploy_unknown_name(v)) {
            if (!unknown)
                unknown = json_incref(v);
        } else if (!text) {
            shown(open + 2, (size_t)end, excerpt, sizeof(excerpt));
            rc = gc_fail(err, GC_EXIT_USAGE, "$(%s) is %s, which cannot be part of a longer string",
                         excerpt, deploy_expr_kind(v));
        } else if ((rc = charge_text(env->budget, strlen(text), err)) == 0) {
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
        rc = gc_fail(err, GC_EXIT_USAGE, "the string is not valid UTF-8");
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

int deploy_template_render(const char *text, size_t len, const deploy_env *caller,
                           const char *label, gc_buf *out, gc_error *err)
{
    deploy_budget own;
    deploy_env shared = with_budget(caller, &own), *env = &shared;
    char excerpt[128];
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
                if (!rc && (!s || deploy_unknown_name(v))) {
                    shown(text + from, to - from, excerpt, sizeof(excerpt));
                    rc = gc_fail(err, GC_EXIT_USAGE, "${%s} is %s, which a template cannot insert",
                                 excerpt,
                                 json_is_null(v) ? "null (set it in kueue.config_template_vars)"
                                                 : deploy_expr_kind(v));
                }
                if (!rc && (rc = charge_text(env->budget, strlen(s), err)) == 0)
                    gc_buf_puts(&b, s);
                free(s);
            }
        } else if (to - from >= 3 && !strncmp(text + from, "if", 2) &&
                   isspace((unsigned char)text[from + 2])) {
            if (depth == sizeof(stack) / sizeof(*stack)) {
                rc = gc_fail(err, GC_EXIT_USAGE, "%%{ if } nests too deeply (more than %zu levels)",
                             sizeof(stack) / sizeof(*stack));
            } else {
                bool cond = false;
                if (writing) {
                    rc = deploy_expr_eval(text + from + 3, to - from - 3, env, &v, err);
                    if (!rc && !json_is_boolean(v)) {
                        shown(text + from, to - from, excerpt, sizeof(excerpt));
                        rc = gc_fail(err, GC_EXIT_USAGE,
                                     "the condition of %%{ %s } is not true or false but %s",
                                     excerpt, deploy_expr_kind(v));
                    }
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
            shown(text + from, to - from, excerpt, sizeof(excerpt));
            rc = gc_fail(err, GC_EXIT_USAGE,
                         "%%{ %s } is not supported: templates may use ${...} and %%{ if }, %%{ "
                         "else }, %%{ endif } (write %%%%{ for a literal %%{)",
                         excerpt);
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
