/*
 * Kubernetes resource quantities (private to deploy/).
 */
#ifndef GCLUSTER_DEPLOY_QUANTITY_H
#define GCLUSTER_DEPLOY_QUANTITY_H

#include <stdbool.h>

/* "32", "1.5k", "2000G", "512Gi", "1e3": digits with an optional fraction, then a suffix. */
bool gc_quantity_valid(const char *text);

/* The API server's canonical spelling ("2000G" -> "2T"); NULL if `text` is not a quantity.
 * Caller frees. */
char *gc_quantity_canonical(const char *text);

#endif
