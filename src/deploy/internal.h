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

#endif
