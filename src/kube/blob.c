/*
 * Byte blobs for certificates and keys: read from files with a size bound, and wiped on release
 * (blobs hold private keys).
 */
#include "kube/kubeconfig.h"

#include "gcluster/buf.h"
#include "gcluster/sys.h"

#include <stdlib.h>
#include <string.h>

void kube_blob_free(kube_blob *b)
{
    if (b->data) {
        explicit_bzero(b->data, b->len);
        free(b->data);
    }
    b->data = NULL;
    b->len = 0;
}

int kube_blob_read(const char *path, size_t max, kube_blob *out, gc_error *err)
{
    gc_buf b;
    gc_buf_init(&b);
    int rc = gc_file_read(path, max, &b, err);
    if (rc) {
        gc_buf_free(&b);
        out->data = NULL;
        out->len = 0;
        return rc;
    }
    out->len = b.len;
    out->data = (unsigned char *)gc_buf_detach(&b);
    return 0;
}
