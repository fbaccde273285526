/*
 * credentials: who we are to a registry.
 *
 * Google's registries (*.pkg.dev, gcr.io, *.gcr.io) take an OAuth access token from
 * `gcloud auth print-access-token` as the password of the user "oauth2accesstoken"; any other
 * registry takes the user and password stored by `docker login` in the `auths` section of the
 * Docker config. Without either we stay anonymous, which is enough to pull public images.
 */
#ifndef GCLUSTER_IMAGE_CREDENTIALS_H
#define GCLUSTER_IMAGE_CREDENTIALS_H

#include "gcluster/error.h"

#include <stdbool.h>

typedef struct image_credentials {
    char *username; /* NULL when anonymous */
    char *password; /* secret: never logged; wiped by image_credentials_free */
    char *source; /* where they came from, for messages: "gcloud", "/home/a/.docker/config.json" */
} image_credentials;

/* True for registries whose credentials come from gcloud. */
bool image_registry_uses_gcloud(const char *registry);

/* Finds credentials for `registry` (as named in the reference, e.g. "docker.io"). Finding none
 * is not an error: *out is then anonymous. A failure to run gcloud is. */
int image_credentials_lookup(const char *registry, image_credentials *out, gc_error *err);

/* From a Docker config file's text (its `auths`), for tests and for image_credentials_lookup. */
int image_credentials_from_docker_config(const char *json_text, const char *source,
                                         const char *registry, image_credentials *out,
                                         gc_error *err);

void image_credentials_free(image_credentials *c);

#endif
