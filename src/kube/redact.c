/*
 * Server text made safe to show, and the client's own secrets kept out of everything it says.
 *
 * What a server sends back (a Status message, a Warning header, an error body) goes to a terminal
 * or a log: its control characters could move the cursor, clear the screen or ring the bell, so
 * each is shown as \xNN, and so is any byte that is not UTF-8 (a lone 0x9b is CSI to an 8-bit
 * terminal). A server, or a proxy in front of it, may also echo the request's Authorization
 * header in its error: the client knows its token, password and key material and hides every
 * occurrence of them, as well as anything that looks like a credential.
 */
#include "kube/internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SECRETS  64
#define PEM_LINE_MIN 16 /* a base64 line of a key this long is its material, not a word */

typedef struct secrets {
    const char *list[MAX_SECRETS + 1];
    char *owned[MAX_SECRETS];
    size_t count, owned_count;
} secrets;

static void add(secrets *s, const char *secret)
{
    if (secret && secret[0] && s->count < MAX_SECRETS)
        s->list[s->count++] = secret;
}

static void add_copy(secrets *s, const char *secret, size_t len)
{
    if (len && s->count < MAX_SECRETS) {
        s->owned[s->owned_count] = gc_xstrndup(secret, len);
        add(s, s->owned[s->owned_count++]);
    }
}

/* Each base64 line of a PEM key: a server never sees the key, but nothing may print it. */
static void add_key_lines(secrets *s, const kube_blob *key)
{
    const char *p = (const char *)key->data, *end = p ? p + key->len : NULL;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (len && p[len - 1] == '\r')
            len--;
        if (len >= PEM_LINE_MIN && strncmp(p, "-----", 5) != 0)
            add_copy(s, p, len);
        p = nl ? nl + 1 : end;
    }
}

/* The password of a URL's user:password@. */
static void add_url_password(secrets *s, const char *url)
{
    const char *host = url ? strstr(url, "://") : NULL;
    if (!host)
        return;
    host += 3;
    size_t authority = strcspn(host, "/?#");
    const char *at = memchr(host, '@', authority);
    const char *colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
    if (colon)
        add_copy(s, colon + 1, (size_t)(at - colon - 1));
    else if (at) /* a token as the user name */
        add_copy(s, host, (size_t)(at - host));
}

static void collect(const gc_kube *k, secrets *s)
{
    memset(s, 0, sizeof(*s));
    const kube_user *u = k->sel.user;
    if (u) {
        add(s, u->token);
        add(s, u->password);
    }
    const char *auth = k->cred.authorization;
    const char *space = auth ? strchr(auth, ' ') : NULL;
    add(s, space ? space + 1 : auth); /* the token or the Basic base64 after the scheme */
    add_key_lines(s, &k->client_key);
    add_key_lines(s, &k->cred.key);
    if (k->sel.cluster) {
        add_url_password(s, k->sel.cluster->server);
        add_url_password(s, k->sel.cluster->proxy_url);
    }
}

static void release(secrets *s)
{
    for (size_t i = 0; i < s->owned_count; i++) {
        explicit_bzero(s->owned[i], strlen(s->owned[i]));
        free(s->owned[i]);
    }
}

void kube_redact(const gc_kube *k, gc_buf *text)
{
    secrets s;
    collect(k, &s);
    gc_http_redact_text(text, s.list);
    release(&s);
}

void kube_redact_trace(gc_buf *line, const void *ctx)
{
    kube_redact(ctx, line);
}

void kube_safe_text(const gc_kube *k, gc_buf *out, const char *text, size_t len, size_t max)
{
    gc_buf raw;
    gc_buf_init(&raw);
    gc_buf_append(&raw, text, len);
    if (k)
        kube_redact(k, &raw);
    else
        gc_http_redact_text(&raw, NULL);
    gc_text_escape(out, raw.data, raw.len, max);
    explicit_bzero(raw.data, raw.len);
    gc_buf_free(&raw);
}
