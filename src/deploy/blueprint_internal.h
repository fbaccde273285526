/*
 * What the files of blueprint reading share: the reader's state, and the calls from the top
 * level (blueprint.c) to the module readers (blueprint_modules.c) and from both to the evaluator
 * (blueprint_eval.c), which calls neither back.
 */
#ifndef GCLUSTER_DEPLOY_BLUEPRINT_INTERNAL_H
#define GCLUSTER_DEPLOY_BLUEPRINT_INTERNAL_H

#include "expr.h"
#include "gcluster/deploy.h"
#include "gcluster/emit.h"

#define SOURCE_CLUSTER       "modules/scheduler/gke-cluster"
#define SOURCE_NODE_POOL     "modules/compute/gke-node-pool"
#define SOURCE_KUBECTL_APPLY "modules/management/kubectl-apply"

/* gke-node-pool's default machine_type. */
#define DEFAULT_POOL_MACHINE "c2-standard-60"

/* Which module set a kubectl-apply setting first, and where (container[key] in doc). */
typedef struct setting_owner {
    char *setting; /* "kueue.config_path", "kueue.config_template_vars.tpu_quota" */
    const char *module_id;
    const json_t *container;
    const char *key;
} setting_owner;

typedef struct bp_reader {
    gc_yaml_doc doc;
    gc_yaml_doc deployment; /* -d */
    bool has_deployment;
    gc_blueprint *bp;
    json_t *raw_vars;   /* the doc's vars with the deployment file and --vars applied */
    json_t *vars;       /* evaluated variables, filled as they are used */
    json_t *evaluating; /* variables and modules being evaluated (a cycle check) */
    json_t *chain;      /* what is being evaluated, outermost first ("vars.a", "pool.x") */
    deploy_budget budget;
    int output_rc; /* the first error while deriving a module output, and its message */
    gc_error output_err;
    json_t *modules; /* id → the module's raw mapping */
    setting_owner *owners;
    size_t owner_count;
    gc_error *err;
} bp_reader;

/* blueprint_eval.c */

/* Fails with "<file>:<line>:<column>: <message>" for container[key] (or container[index]). */
int deploy_bp_fail_at(const bp_reader *r, const json_t *container, const char *key, size_t index,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
bool deploy_bp_is_identifier(const char *s, size_t len);
/* A variable's value, evaluated once (a new reference). */
int deploy_bp_var_value(bp_reader *r, const char *name, json_t **out);
/* container[key] (or [index]) evaluated, an error located at the innermost value that failed. */
int deploy_bp_eval_located(bp_reader *r, const json_t *container, const char *key, size_t index,
                           json_t **out);
gc_bp_module *deploy_bp_find_module(const gc_blueprint *bp, const char *id);
/* A module's setting after evaluation: settings[key], else a used module's output of that name,
 * else the variable. NULL when none (or null). */
int deploy_bp_module_setting(bp_reader *r, const gc_bp_module *m, const char *key, json_t **out);
/* The gke-cluster a kubectl-apply module is wired to: the one it uses, else the blueprint's. */
const gc_bp_module *deploy_bp_wired_cluster(const gc_blueprint *bp, const gc_bp_module *m);
/* A gke-node-pool's TPU topology (owned), or NULL. */
char *deploy_bp_pool_topology(bp_reader *r, const gc_bp_module *m);
/* Evaluates every module's settings. */
int deploy_bp_evaluate_modules(bp_reader *r);

/* blueprint_modules.c */

bool deploy_bp_is_printable(const char *s);
int deploy_bp_require_type(const bp_reader *r, const json_t *container, const char *key,
                           size_t index, const json_t *v, json_type type, const char *what);
/* A failed validator: an error at -l ERROR, a warning at WARNING, nothing at IGNORE. */
int deploy_bp_validator(bp_reader *r, int rc);
/* Checks the module list's shape and records the modules in order. */
int deploy_bp_check_modules(bp_reader *r, json_t *groups);
/* Reads the modules of one kind in order. */
int deploy_bp_read_modules(bp_reader *r, gc_bp_module_kind only_kind);

#endif
