/*
 * What the files of the expression evaluator share (expr.c parses and evaluates, expr_value.c
 * holds values, functions and the budget, expr_text.c blueprint strings and templates); the
 * rest of deploy/ uses expr.h.
 */
#ifndef GCLUSTER_DEPLOY_EXPR_INTERNAL_H
#define GCLUSTER_DEPLOY_EXPR_INTERNAL_H

#include "expr.h"

/* How deep an expression may nest (parentheses, lists, ?:, unary operators, calls): far beyond
 * any blueprint, and far below what the C stack holds. */
#define EXPR_MAX_DEPTH 64
/* How deep a value may nest (lists in lists, built through variables). */
#define EXPR_MAX_VALUE_DEPTH 256

typedef struct deploy_expr_parser {
    const char *s;
    size_t len, pos;
    const deploy_env *env;
    deploy_budget *budget;
    gc_error *err;
    int depth;
} deploy_expr_parser;

/* Fails with `fmt` (the reason) and then where: line and column in the expression, and a short
 * excerpt from `at`. */
int deploy_expr_fail(deploy_expr_parser *p, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

bool deploy_expr_is_unknown(const json_t *v);
json_t *deploy_expr_number_value(double d, bool integral);
/* A number from a value (numbers, or strings that spell one, as HCL converts them). */
bool deploy_expr_as_number(const json_t *v, double *d, bool *integral);
/* What a value is, for messages ("null (a variable without a value: ...)", "a list"). */
const char *deploy_expr_kind(const json_t *v);

/* name(args...) once its arguments are evaluated; `at` is where the call starts. */
int deploy_expr_call(deploy_expr_parser *p, size_t at, const char *name, json_t **args, size_t n,
                     json_t **out);

/* Charges `v` (a value just made) to the budget: fails when it nests deeper than
 * EXPR_MAX_VALUE_DEPTH or the budget is spent. */
int deploy_expr_charge(deploy_expr_parser *p, size_t at, const json_t *v);

#endif
