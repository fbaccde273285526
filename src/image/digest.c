#include "image/digest.h"

#include "gcluster/buf.h"
#include "gcluster/error.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

struct image_sha256 {
    EVP_MD_CTX *ctx;
};

/* A failing SHA-256 context means libcrypto itself is broken; like out-of-memory there is no
 * sensible way to go on, and a wrong digest would silently corrupt what we push. */
_Noreturn static void crypto_failed(const char *what)
{
    gc_fatal("libcrypto failed in %s", what);
}

image_sha256 *image_sha256_new(void)
{
    image_sha256 *h = gc_xmalloc(sizeof(*h));
    h->ctx = EVP_MD_CTX_new();
    if (!h->ctx || EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
        crypto_failed("EVP_DigestInit_ex");
    return h;
}

void image_sha256_update(image_sha256 *h, const void *data, size_t len)
{
    if (len && EVP_DigestUpdate(h->ctx, data, len) != 1)
        crypto_failed("EVP_DigestUpdate");
}

void image_sha256_finish(image_sha256 *h, char out[GC_DIGEST_LEN])
{
    unsigned char md[32];
    unsigned int md_len = 0;
    if (EVP_DigestFinal_ex(h->ctx, md, &md_len) != 1 || md_len != sizeof(md))
        crypto_failed("EVP_DigestFinal_ex");
    EVP_MD_CTX_free(h->ctx);
    free(h);

    static const char hex[] = "0123456789abcdef";
    memcpy(out, "sha256:", 7);
    for (size_t i = 0; i < sizeof(md); i++) {
        out[7 + 2 * i] = hex[md[i] >> 4];
        out[8 + 2 * i] = hex[md[i] & 15];
    }
    out[7 + 2 * sizeof(md)] = '\0';
}

void image_sha256_digest(const void *data, size_t len, char out[GC_DIGEST_LEN])
{
    image_sha256 *h = image_sha256_new();
    image_sha256_update(h, data, len);
    image_sha256_finish(h, out);
}

int image_digest_is_valid(const char *digest)
{
    if (strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 7 + 64)
        return 0;
    for (const char *p = digest + 7; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}
