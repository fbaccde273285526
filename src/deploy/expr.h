/*
 * Cluster Toolkit expressions, shared by the files of deploy/.
 *
 * A blueprint writes expressions as $( ... ) inside YAML strings; their language is HCL's
 * (numbers, strings, true/false/null, lists [..], objects {k = v}, + - * / %, comparisons,
 * && || !, c ? a : b, parentheses, references root.name[.attr|[i]]... and the functions the
 * toolkit allows: ghpc_stage, merge, flatten). A Terraform template (*.tftpl) writes them as
 * ${ ... } and %{ if ... }...%{ else }...%{ endif }.
 *
 * Values are jansson values. A value Terraform knows only when it runs (the output of a module
 * deploy does not model) is an "unknown" marker: anything computed from it is unknown too, as in
 * Terraform, and only a caller that needs the value turns it into an error.
 */
#ifndef GCLUSTER_DEPLOY_EXPR_H
#define GCLUSTER_DEPLOY_EXPR_H

#include "gcluster/buf.h"
#include "gcluster/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* What evaluation may still produce, shared by every expression of a blueprint or template:
 * each value made (a joined string, a list, a mapping, a function's result, a template's
 * insertion) is charged its size (bytes of text, 16 for each list item or mapping entry,
 * counting a shared part each time it appears), so a string doubled through variables or lists
 * concatenated into themselves end in an error long before memory or time run out, as YAML
 * aliases do in the loader. Blueprints are kilobytes; the budget is thousands of times that. */
typedef struct deploy_budget {
    size_t left;
} deploy_budget;
#define DEPLOY_BUDGET ((size_t)64 << 20)

typedef struct deploy_env {
    /* A reference: `root.attr` in a blueprint (vars.NAME, MODULE.OUTPUT), or a bare `root`
     * (attr NULL) in a template. *out is a new reference (possibly an unknown marker). */
    int (*ref)(void *ctx, const char *root, const char *attr, json_t **out, gc_error *err);
    /* ghpc_stage("FILE"): the path the toolkit's deployment would use; NULL where the function
     * does not exist (templates). */
    int (*stage)(void *ctx, const char *path, json_t **out, gc_error *err);
    void *ctx;
    bool bare_names;       /* templates: identifiers are variables, not root.attr references */
    deploy_budget *budget; /* NULL: each evaluation gets a DEPLOY_BUDGET of its own */
} deploy_env;

/* A value known only once Terraform runs; `what` names it for messages ("net.subnetwork_name"). */
json_t *deploy_unknown(const char *what);
/* The name an unknown value carries, or NULL when `v` is known (looks inside lists and objects). */
const char *deploy_unknown_name(const json_t *v);

/* Charges a value the caller built from evaluated pieces (a variable's value, a module's
 * setting) to `budget`; `what` names it in the message ("vars.a"). */
int deploy_charge(deploy_budget *budget, const json_t *v, const char *what, gc_error *err);

/* Evaluates the expression text[0, len). */
int deploy_expr_eval(const char *text, size_t len, const deploy_env *env, json_t **out,
                     gc_error *err);

/* Evaluates a blueprint string: exactly one "$(...)" gives the expression's own type; otherwise
 * the pieces are joined into a string. A backslash before "$(" makes it literal (two make one
 * literal backslash and an expression), as the toolkit reads them. */
int deploy_string_eval(const char *s, const deploy_env *env, json_t **out, gc_error *err);

/* Whether a blueprint string holds an expression at all. */
bool deploy_string_has_expression(const char *s);

/* Renders a Terraform template onto `out` (bytes as they are, NULs too): ${expr},
 * %{ if expr }..%{ else }..%{ endif } (with ~ strip markers), $${ and %%{ for literals. Errors
 * name `label`, line and column; `out` then holds part of the rendering. */
int deploy_template_render(const char *text, size_t len, const deploy_env *env, const char *label,
                           gc_buf *out, gc_error *err);

/* A short excerpt of text[0, len) from `at` for messages: at most about 60 bytes, whole UTF-8
 * characters, control characters as spaces, "..." where it was cut. */
void deploy_excerpt(const char *text, size_t len, size_t at, char *out, size_t size);

/* The text a value has inside a string (numbers as HCL prints them); NULL for lists, objects,
 * null and unknowns. */
char *deploy_value_text(const json_t *v);

#endif
