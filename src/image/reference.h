/*
 * reference: image references as Docker spells them, resolved to a registry and a repository.
 *
 * "python:3.11" means docker.io/library/python:3.11; a first component with a '.' or a ':' (or
 * "localhost") names a registry; no tag means "latest".
 */
#ifndef GCLUSTER_IMAGE_REFERENCE_H
#define GCLUSTER_IMAGE_REFERENCE_H

#include "gcluster/error.h"

#include <stdbool.h>

typedef struct image_reference {
    char *registry;   /* as named: "docker.io", "us-docker.pkg.dev", "127.0.0.1:5000" */
    char *repository; /* "library/python", "p/r/alice-runner" */
    char *tag;        /* NULL when only a digest was given */
    char *digest;     /* "sha256:<hex>" or NULL */
} image_reference;

/* Parses an image reference (tag and digest optional). */
int image_reference_parse(const char *text, image_reference *ref, gc_error *err);

/* Parses a repository to push to: like an image reference, without tag or digest. */
int image_repo_parse(const char *text, image_reference *ref, gc_error *err);

void image_reference_free(image_reference *ref);

/* "docker.io/library/python:3.11" or ".../repo@sha256:..." (the digest wins over the tag, as it
 * does when pulling). Caller frees. */
char *image_reference_string(const image_reference *ref);

/* The host to send API requests to ("docker.io" is served by registry-1.docker.io). */
const char *image_registry_api_host(const char *registry);

/* True for registries on this machine (localhost, 127.0.0.0/8, [::1]): the only ones spoken to
 * over plain HTTP. */
bool image_registry_is_loopback(const char *registry);

#endif
