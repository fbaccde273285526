/*
 * registry: an OCI Distribution client on sys/'s HTTP layer, one per registry.
 *
 * It speaks HTTPS, or plain HTTP to a registry on this machine only. Authentication follows the
 * registry's lead: a request goes out anonymously (or with the token already earned); a 401 with
 * `WWW-Authenticate: Bearer realm=..,service=..,scope=..` sends us to the token service, with
 * Basic credentials when we have some (see credentials.h), and the request is retried once with
 * the token; `WWW-Authenticate: Basic` is answered with the credentials themselves. Credentials
 * are looked up only when a registry asks for them, so pulling a public base image never runs
 * gcloud. Authorization goes only to the registry's own host, never to a host it redirects or
 * points uploads to. Traces (the layer's) show neither it nor the values of signatures and
 * upload state in query strings; error messages leave query strings out altogether.
 */
#ifndef GCLUSTER_IMAGE_REGISTRY_H
#define GCLUSTER_IMAGE_REGISTRY_H

#include "image/digest.h"

#include "gcluster/buf.h"
#include "gcluster/error.h"
#include "gcluster/http.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct image_registry image_registry;

/* A client for `registry` as named in a reference ("docker.io", "127.0.0.1:5000"); its requests
 * are traced as `trace` says (may be NULL). */
int image_registry_open(const char *registry, const gc_http_trace *trace, image_registry **out,
                        gc_error *err);
void image_registry_free(image_registry *r);

/* Asks for this scope too whenever a token is fetched ("repository:library/python:pull"), so
 * one token covers pulling the base and pushing the result on the same registry. */
void image_registry_add_scope(image_registry *r, const char *scope);

/* A request body: from memory, or `size` bytes of `file` from its start. */
typedef struct image_registry_body {
    const void *data;
    size_t len;
    FILE *file;
    long long size;
    const char *content_type;
} image_registry_body;

typedef struct image_registry_response {
    long status;
    gc_buf body; /* small bodies: manifests, configs, error documents */
    char *content_type;
    char *location;
    char *docker_digest;
    char *www_authenticate;
    /* When set, a 2xx body is written here instead, and hashed into sink_hash. */
    FILE *sink;
    image_sha256 *sink_hash;
    long long sink_bytes;
    bool sink_failed; /* writing to the sink failed */
} image_registry_response;

void image_registry_response_init(image_registry_response *resp);
void image_registry_response_free(image_registry_response *resp);

/* One request, with the authentication dance. `url` is a path ("/v2/...") or an absolute URL
 * (an upload location). A transport failure is an error; any HTTP status is not. */
int image_registry_send(image_registry *r, const char *method, const char *url, const char *accept,
                        const image_registry_body *body, image_registry_response *resp,
                        gc_error *err);

/* The failure of `what` as a message with the status and the registry's own error codes. */
int image_registry_fail(image_registry *r, const image_registry_response *resp, const char *what,
                        gc_error *err);

/* The parts of a WWW-Authenticate challenge we use; missing ones are NULL. */
typedef struct image_auth_challenge {
    char *scheme; /* "Bearer" or "Basic" */
    char *realm;
    char *service;
    char *scope;
} image_auth_challenge;

int image_auth_challenge_parse(const char *header, image_auth_challenge *out);
void image_auth_challenge_free(image_auth_challenge *c);

/* Manifests and blobs (the OCI Distribution endpoints). */

#define GC_MEDIA_OCI_INDEX     "application/vnd.oci.image.index.v1+json"
#define GC_MEDIA_OCI_MANIFEST  "application/vnd.oci.image.manifest.v1+json"
#define GC_MEDIA_OCI_CONFIG    "application/vnd.oci.image.config.v1+json"
#define GC_MEDIA_OCI_LAYER     "application/vnd.oci.image.layer.v1.tar+gzip"
#define GC_MEDIA_DOCKER_LIST   "application/vnd.docker.distribution.manifest.list.v2+json"
#define GC_MEDIA_DOCKER_V2     "application/vnd.docker.distribution.manifest.v2+json"
#define GC_MEDIA_DOCKER_CONFIG "application/vnd.docker.container.image.v1+json"
#define GC_MEDIA_DOCKER_LAYER  "application/vnd.docker.image.rootfs.diff.tar.gzip"

/* GETs a manifest or index by tag or digest; *media_type and `digest` describe what came back
 * (a manifest asked for by digest is checked against it). */
int image_registry_get_manifest(image_registry *r, const char *repo, const char *reference,
                                gc_buf *body, char **media_type, char digest[GC_DIGEST_LEN],
                                gc_error *err);
int image_registry_manifest_exists(image_registry *r, const char *repo, const char *reference,
                                   bool *exists, gc_error *err);
int image_registry_put_manifest(image_registry *r, const char *repo, const char *reference,
                                const char *media_type, const gc_buf *body, gc_error *err);

int image_registry_blob_exists(image_registry *r, const char *repo, const char *digest,
                               bool *exists, gc_error *err);
/* GETs a blob into `file` (when set) or `mem`, and checks it against its digest. */
int image_registry_get_blob(image_registry *r, const char *repo, const char *digest, FILE *file,
                            gc_buf *mem, gc_error *err);
/* Asks the registry to link a blob from another repository it holds; *mounted says whether it
 * did (a registry may decline, and then the blob must be uploaded). */
int image_registry_mount_blob(image_registry *r, const char *repo, const char *digest,
                              const char *from_repo, bool *mounted, gc_error *err);
/* Uploads a blob in one request (POST for a session, then PUT ?digest=). */
int image_registry_upload_blob(image_registry *r, const char *repo, const char *digest,
                               const image_registry_body *body, gc_error *err);

#endif
