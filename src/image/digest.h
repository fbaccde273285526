/*
 * digest: streaming SHA-256 in the "sha256:<hex>" form registries name blobs by.
 */
#ifndef GCLUSTER_IMAGE_DIGEST_H
#define GCLUSTER_IMAGE_DIGEST_H

#include <stddef.h>

/* "sha256:" + 64 hex digits + NUL */
#define GC_DIGEST_LEN 72

typedef struct image_sha256 image_sha256;

image_sha256 *image_sha256_new(void);
void image_sha256_update(image_sha256 *h, const void *data, size_t len);
/* Writes "sha256:<hex>" into `out` and frees `h`. */
void image_sha256_finish(image_sha256 *h, char out[GC_DIGEST_LEN]);
/* One-shot form for small buffers (configs, manifests). */
void image_sha256_digest(const void *data, size_t len, char out[GC_DIGEST_LEN]);
/* True for "sha256:" followed by exactly 64 lower-case hex digits. */
int image_digest_is_valid(const char *digest);

#endif
