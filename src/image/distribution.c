/*
 * The OCI Distribution endpoints gcluster needs, on top of image_registry_send.
 */
#include "image/registry.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

static const char manifest_accept[] =
    GC_MEDIA_OCI_INDEX ", " GC_MEDIA_OCI_MANIFEST ", " GC_MEDIA_DOCKER_LIST ", " GC_MEDIA_DOCKER_V2;

/* The media type without parameters ("...+json; charset=utf-8" -> "...+json"). */
static char *bare_media_type(const char *content_type)
{
    if (!content_type)
        return gc_xstrdup("");
    size_t len = strcspn(content_type, "; ");
    return gc_xstrndup(content_type, len);
}

int image_registry_get_manifest(image_registry *r, const char *repo, const char *reference,
                                gc_buf *body, char **media_type, char digest[GC_DIGEST_LEN],
                                gc_error *err)
{
    char *url = gc_xasprintf("/v2/%s/manifests/%s", repo, reference);
    image_registry_response resp;
    image_registry_response_init(&resp);
    int rc = image_registry_send(r, "GET", url, manifest_accept, NULL, &resp, err);
    if (!rc && resp.status != 200) {
        char *what = gc_xasprintf("getting the manifest of %s:%s", repo, reference);
        rc = image_registry_fail(r, &resp, what, err);
        free(what);
    }
    if (!rc) {
        image_sha256_digest(resp.body.data, resp.body.len, digest);
        if (strncmp(reference, "sha256:", 7) == 0 && strcmp(digest, reference) != 0)
            rc = gc_fail(err, GC_EXIT_RUNTIME,
                         "%s sent a manifest for %s@%s whose digest is %s; refusing it", repo, repo,
                         reference, digest);
    }
    if (!rc) {
        gc_buf_reset(body);
        gc_buf_append(body, resp.body.data, resp.body.len);
        *media_type = bare_media_type(resp.content_type);
    }
    image_registry_response_free(&resp);
    free(url);
    return rc;
}

static int exists(image_registry *r, const char *url, const char *accept, const char *what,
                  bool *found, gc_error *err)
{
    image_registry_response resp;
    image_registry_response_init(&resp);
    int rc = image_registry_send(r, "HEAD", url, accept, NULL, &resp, err);
    if (!rc) {
        if (resp.status == 200)
            *found = true;
        else if (resp.status == 404)
            *found = false;
        else
            rc = image_registry_fail(r, &resp, what, err);
    }
    image_registry_response_free(&resp);
    return rc;
}

int image_registry_manifest_exists(image_registry *r, const char *repo, const char *reference,
                                   bool *found, gc_error *err)
{
    char *url = gc_xasprintf("/v2/%s/manifests/%s", repo, reference);
    char *what = gc_xasprintf("checking for %s:%s", repo, reference);
    int rc = exists(r, url, manifest_accept, what, found, err);
    free(what);
    free(url);
    return rc;
}

int image_registry_blob_exists(image_registry *r, const char *repo, const char *digest, bool *found,
                               gc_error *err)
{
    char *url = gc_xasprintf("/v2/%s/blobs/%s", repo, digest);
    char *what = gc_xasprintf("checking for blob %s in %s", digest, repo);
    int rc = exists(r, url, NULL, what, found, err);
    free(what);
    free(url);
    return rc;
}

int image_registry_put_manifest(image_registry *r, const char *repo, const char *reference,
                                const char *media_type, const gc_buf *manifest, gc_error *err)
{
    char *url = gc_xasprintf("/v2/%s/manifests/%s", repo, reference);
    image_registry_body body = {
        .data = manifest->data, .len = manifest->len, .content_type = media_type};
    image_registry_response resp;
    image_registry_response_init(&resp);
    int rc = image_registry_send(r, "PUT", url, NULL, &body, &resp, err);
    if (!rc && resp.status != 201 && resp.status != 200) {
        char *what = gc_xasprintf("pushing the manifest %s:%s", repo, reference);
        rc = image_registry_fail(r, &resp, what, err);
        free(what);
    }
    image_registry_response_free(&resp);
    free(url);
    return rc;
}

int image_registry_get_blob(image_registry *r, const char *repo, const char *digest, FILE *file,
                            gc_buf *mem, gc_error *err)
{
    char *url = gc_xasprintf("/v2/%s/blobs/%s", repo, digest);
    image_registry_response resp;
    image_registry_response_init(&resp);
    resp.sink = file;
    resp.sink_hash = file ? image_sha256_new() : NULL;
    int rc = image_registry_send(r, "GET", url, NULL, NULL, &resp, err);
    if (!rc && resp.status != 200) {
        char *what = gc_xasprintf("getting blob %s from %s", digest, repo);
        rc = image_registry_fail(r, &resp, what, err);
        free(what);
    }
    char got[GC_DIGEST_LEN];
    if (resp.sink_hash)
        image_sha256_finish(resp.sink_hash, got);
    else
        image_sha256_digest(resp.body.data, resp.body.len, got);
    if (!rc && strcmp(got, digest) != 0)
        rc = gc_fail(err, GC_EXIT_RUNTIME, "blob %s from %s arrived with digest %s; refusing it",
                     digest, repo, got);
    if (!rc && mem) {
        gc_buf_reset(mem);
        gc_buf_append(mem, resp.body.data, resp.body.len);
    }
    if (!rc && file && (fflush(file) != 0 || fseeko(file, 0, SEEK_SET) != 0))
        rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot write blob %s to a temporary file", digest);
    image_registry_response_free(&resp);
    free(url);
    return rc;
}

int image_registry_mount_blob(image_registry *r, const char *repo, const char *digest,
                              const char *from_repo, bool *mounted, gc_error *err)
{
    char *from = curl_easy_escape(NULL, from_repo, 0);
    char *url = gc_xasprintf("/v2/%s/blobs/uploads/?mount=%s&from=%s", repo, digest, from);
    curl_free(from);
    image_registry_response resp;
    image_registry_response_init(&resp);
    int rc = image_registry_send(r, "POST", url, NULL, NULL, &resp, err);
    /* 201: linked. 202: the registry declined and opened an upload session instead, which we
     * leave to expire: the caller uploads through a fresh one. */
    if (!rc && resp.status != 201 && resp.status != 202) {
        char *what = gc_xasprintf("mounting blob %s from %s into %s", digest, from_repo, repo);
        rc = image_registry_fail(r, &resp, what, err);
        free(what);
    }
    *mounted = !rc && resp.status == 201;
    image_registry_response_free(&resp);
    free(url);
    return rc;
}

static int start_upload(image_registry *r, const char *repo, char **location, gc_error *err)
{
    char *url = gc_xasprintf("/v2/%s/blobs/uploads/", repo);
    image_registry_response resp;
    image_registry_response_init(&resp);
    int rc = image_registry_send(r, "POST", url, NULL, NULL, &resp, err);
    if (!rc && resp.status != 202) {
        char *what = gc_xasprintf("starting an upload to %s", repo);
        rc = image_registry_fail(r, &resp, what, err);
        free(what);
    }
    if (!rc && !resp.location)
        rc = gc_fail(err, GC_EXIT_RUNTIME, "%s opened an upload to %s without a Location", repo,
                     repo);
    if (!rc)
        *location = gc_xstrdup(resp.location);
    image_registry_response_free(&resp);
    free(url);
    return rc;
}

int image_registry_upload_blob(image_registry *r, const char *repo, const char *digest,
                               const image_registry_body *body, gc_error *err)
{
    char *location = NULL;
    int rc = start_upload(r, repo, &location, err);
    if (rc)
        return rc;
    /* The session URL may carry its own query (upload state); the digest is one more field. */
    char *url = gc_xasprintf("%s%cdigest=%s", location, strchr(location, '?') ? '&' : '?', digest);
    image_registry_body upload = *body;
    if (!upload.content_type)
        upload.content_type = "application/octet-stream";
    image_registry_response resp;
    image_registry_response_init(&resp);
    rc = image_registry_send(r, "PUT", url, NULL, &upload, &resp, err);
    if (!rc && resp.status != 201) {
        char *what = gc_xasprintf("uploading blob %s to %s", digest, repo);
        rc = image_registry_fail(r, &resp, what, err);
        free(what);
    }
    image_registry_response_free(&resp);
    free(url);
    free(location);
    return rc;
}
