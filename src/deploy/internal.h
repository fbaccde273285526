/*
 * What the files of deploy/ share: gcloud argvs built as data.
 */
#ifndef GCLUSTER_DEPLOY_INTERNAL_H
#define GCLUSTER_DEPLOY_INTERNAL_H

#include "gcluster/deploy.h"

/* A NULL-terminated argv that grows; free with gc_argv_free. */
typedef struct deploy_argv {
    char **items;
    size_t count;
} deploy_argv;

void deploy_argv_push(deploy_argv *b, char *owned);
/* Appends each word (copied) up to a NULL. */
void deploy_argv_words(deploy_argv *b, ...) __attribute__((sentinel));
/* --flag=value, when value is not NULL. */
void deploy_argv_flag(deploy_argv *b, const char *flag, const char *value);
void deploy_argv_count(deploy_argv *b, const char *flag, long value);

/* Server-side apply (ssa.c). */
#define DEPLOY_FIELD_MANAGER "gcluster"

/* Where an object lives and kubectl's name for it. */
typedef struct deploy_object_ref {
    char *path;
    char label[192]; /* "clusterqueue.kueue.x-k8s.io/cluster-queue" */
} deploy_object_ref;

/* Whether the API group is served (`version` "" when not) and its version to use, preferring
 * `want`. */
int deploy_group_version(gc_kube *kube, const char *group, const char *want, char *version,
                         size_t size, gc_error *err);
/* Fills `ref` for `obj` from API discovery (cached in `cache`, an object); a namespaced object
 * without a namespace gets the kubeconfig's. */
int deploy_locate(gc_kube *kube, json_t *cache, json_t *obj, deploy_object_ref *ref, gc_error *err);
int deploy_apply_object(gc_kube *kube, json_t *obj, const deploy_object_ref *ref, bool dry_run,
                        gc_apply_outcome *outcome, gc_error *err);
/* The image tag of a controller Deployment's first container ("v0.17.1"); NULL when there is
 * no such Deployment or its image has no tag. */
char *deploy_controller_version(gc_kube *kube, const char *ns, const char *name);
/* The same two, remembered in `cache` (an object) so one run asks the cluster once; a caller
 * that changed the cluster starts a new cache. */
int deploy_served(gc_kube *kube, json_t *cache, const char *group, const char *want, char *version,
                  size_t size, gc_error *err);
char *deploy_running_version(gc_kube *kube, json_t *cache, const char *ns, const char *name);
/* vX.Y.Z as a number to compare; -1 when it is not a version. */
long deploy_version_number(const char *v);
void deploy_sleep_ms(long ms);

/* Installing what the blueprint's kubectl-apply module installs (install.c). */
/* Fills report->installs: what the blueprint installs and, with `kube`, what the cluster has. */
int deploy_install_check(gc_kube *kube, json_t *cache, const gc_blueprint *bp,
                         const gc_deploy_request *r, gc_deploy_report *report, gc_error *err);
/* Installs every component the check found missing (each release file fetched and checked
 * first), then waits until their controllers and webhooks are ready. */
int deploy_install_run(gc_kube *kube, const gc_deploy_request *r, const gc_events *ev,
                       gc_deploy_report *report, gc_error *err);
/* Whether deploy_install_run installed or upgraded anything. */
bool deploy_install_changed(const gc_deploy_report *report);
/* deploy_apply_object, retried for up to a minute while a webhook just installed does not
 * answer yet (`wait_for_webhook`). */
int deploy_apply_after_install(gc_kube *kube, json_t *obj, const deploy_object_ref *ref,
                               bool wait_for_webhook, gc_apply_outcome *outcome, gc_error *err);
void deploy_install_free(gc_deploy_install *in);

#endif
