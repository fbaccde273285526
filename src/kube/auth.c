/*
 * Credentials: the cluster's CA, the user's client certificate, and the Authorization header
 * (a token, a token file, basic auth, or an exec plugin's output).
 *
 * Certificates and keys stay in memory and reach curl as blobs (CURLOPT_*_BLOB): nothing is
 * written to a temporary file. The header value is cached in the client until it expires
 * (exec plugins) or the server rejects it with 401, which is what client-go does too.
 */
#include "kube/internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_PEM        (1 << 20)
#define MAX_TOKEN_FILE (1 << 16)

static int read_pem(const char *path, const char *what, const char *owner, const char *where,
                    kube_blob *out, gc_error *err)
{
    int rc = kube_blob_read(path, MAX_PEM, out, err);
    if (rc)
        gc_error_prefix(err, "%s: the %s of %s: ", where, what, owner);
    return rc;
}

static void copy_blob(const kube_blob *from, kube_blob *to)
{
    to->len = from->len;
    to->data = gc_xmalloc(from->len + 1);
    memcpy(to->data, from->data, from->len);
    to->data[from->len] = '\0';
}

int kube_auth_init(gc_kube *k, gc_error *err)
{
    const kube_cluster *c = k->sel.cluster;
    const kube_user *u = k->sel.user;
    char owner[300];
    snprintf(owner, sizeof(owner), "cluster \"%s\"", c->id.name);
    if (c->ca_data.data)
        copy_blob(&c->ca_data, &k->ca);
    else if (c->ca_file &&
             read_pem(c->ca_file, "certificate-authority", owner, c->id.where, &k->ca, err))
        return err->code;
    if (!u)
        return 0;
    snprintf(owner, sizeof(owner), "user \"%s\"", u->id.name);
    if (u->client_certificate_data.data)
        copy_blob(&u->client_certificate_data, &k->client_cert);
    else if (u->client_certificate && read_pem(u->client_certificate, "client-certificate", owner,
                                               u->id.where, &k->client_cert, err))
        return err->code;
    if (u->client_key_data.data)
        copy_blob(&u->client_key_data, &k->client_key);
    else if (u->client_key &&
             read_pem(u->client_key, "client-key", owner, u->id.where, &k->client_key, err))
        return err->code;
    return 0;
}

void kube_credential_clear(kube_credential *c)
{
    if (c->authorization) {
        explicit_bzero(c->authorization, strlen(c->authorization));
        free(c->authorization);
    }
    kube_blob_free(&c->cert);
    kube_blob_free(&c->key);
    memset(c, 0, sizeof(*c));
}

/* A header value must not smuggle in a line break (a token file with "\r\n" would). */
static bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

static int bearer(gc_kube *k, const char *token, const char *source, gc_error *err)
{
    const kube_user *u = k->sel.user;
    if (!token[0])
        return gc_fail(err, GC_EXIT_USAGE, "%s: the %s of user \"%s\" is empty", u->id.where,
                       source, u->id.name);
    if (!printable(token))
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s: the %s of user \"%s\" contains control "
                       "characters",
                       u->id.where, source, u->id.name);
    k->cred.authorization = gc_xasprintf("Bearer %s", token);
    return 0;
}

static int token_from_file(gc_kube *k, gc_error *err)
{
    const kube_user *u = k->sel.user;
    kube_blob b;
    if (kube_blob_read(u->token_file, MAX_TOKEN_FILE, &b, err)) {
        gc_error_prefix(err, "%s: the tokenFile of user \"%s\": ", u->id.where, u->id.name);
        return err->code;
    }
    /* Files usually end with a newline; client-go trims surrounding space too. */
    size_t len = b.len;
    while (len && strchr(" \t\r\n", b.data[len - 1]))
        len--;
    b.data[len] = '\0';
    char *start = (char *)b.data + strspn((char *)b.data, " \t\r\n");
    int rc = bearer(k, start, "tokenFile", err);
    kube_blob_free(&b);
    return rc;
}

static int basic(gc_kube *k, gc_error *err)
{
    const kube_user *u = k->sel.user;
    char *pair = gc_xasprintf("%s:%s", u->username, u->password ? u->password : "");
    char *encoded = gc_base64_encode(pair, strlen(pair));
    k->cred.authorization = gc_xasprintf("Basic %s", encoded);
    explicit_bzero(pair, strlen(pair));
    explicit_bzero(encoded, strlen(encoded));
    free(pair);
    free(encoded);
    return printable(u->username) ? 0
                                  : gc_fail(err, GC_EXIT_USAGE,
                                            "%s: username of user \"%s\" "
                                            "contains control characters",
                                            u->id.where, u->id.name);
}

int kube_auth_ensure(gc_kube *k, gc_error *err)
{
    if (k->cred.valid && (!k->cred.expiry || k->wall_clock() < k->cred.expiry))
        return 0;
    kube_credential_clear(&k->cred);
    const kube_user *u = k->sel.user;
    int rc = 0;
    if (!u)
        rc = 0;
    else if (u->exec)
        rc = kube_exec_credential(k, &k->cred, err);
    else if (u->token)
        rc = bearer(k, u->token, "token", err);
    else if (u->token_file)
        rc = token_from_file(k, err);
    else if (u->username)
        rc = basic(k, err);
    if (rc) {
        kube_credential_clear(&k->cred);
        return rc;
    }
    k->cred.valid = true;
    k->credential_generation++;
    return 0;
}

bool kube_auth_refreshable(const gc_kube *k)
{
    const kube_user *u = k->sel.user;
    return u && (u->exec || (!u->token && u->token_file));
}

void kube_auth_invalidate(gc_kube *k)
{
    kube_credential_clear(&k->cred);
}

void kube_auth_rejected(gc_kube *k, unsigned generation)
{
    if (generation == k->credential_generation)
        kube_auth_invalidate(k);
}

void kube_auth_apply_certificate(gc_kube *k, CURL *e)
{
    const kube_blob *cert = k->cred.cert.data ? &k->cred.cert : &k->client_cert;
    const kube_blob *key = k->cred.cert.data ? &k->cred.key : &k->client_key;
    if (cert->data && key->data) {
        struct curl_blob cb = {.data = cert->data, .len = cert->len, .flags = CURL_BLOB_COPY};
        struct curl_blob kb = {.data = key->data, .len = key->len, .flags = CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
}

char *kube_auth_header(const gc_kube *k)
{
    return k->cred.authorization ? gc_xasprintf("Authorization: %s", k->cred.authorization) : NULL;
}
