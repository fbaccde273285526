#include "image/credentials.h"

#include "gcluster/process.h"
#include "gcluster/sys.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GCLOUD_TIMEOUT_MS      (120 * 1000)
#define MAX_DOCKER_CONFIG_SIZE (4u << 20)

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool image_registry_uses_gcloud(const char *registry)
{
    char host[256];
    snprintf(host, sizeof(host), "%.*s", (int)strcspn(registry, ":"), registry);
    return ends_with(host, ".pkg.dev") || strcmp(host, "gcr.io") == 0 || ends_with(host, ".gcr.io");
}

static void wipe_free(char *secret)
{
    if (secret) {
        OPENSSL_cleanse(secret, strlen(secret));
        free(secret);
    }
}

void image_credentials_free(image_credentials *c)
{
    free(c->username);
    wipe_free(c->password);
    free(c->source);
    memset(c, 0, sizeof(*c));
}

/* Strips a scheme and a path, so "https://index.docker.io/v1/" compares as "index.docker.io". */
static char *auths_key_host(const char *key)
{
    const char *p = strstr(key, "://");
    p = p ? p + 3 : key;
    return gc_xstrndup(p, strcspn(p, "/"));
}

static bool is_docker_hub(const char *host)
{
    return strcmp(host, "docker.io") == 0 || strcmp(host, "index.docker.io") == 0 ||
           strcmp(host, "registry-1.docker.io") == 0;
}

static bool auths_key_matches(const char *key, const char *registry)
{
    char *host = auths_key_host(key);
    bool match = strcmp(host, registry) == 0 || (is_docker_hub(host) && is_docker_hub(registry));
    free(host);
    return match;
}

static int credentials_from_entry(json_t *entry, const char *source, image_credentials *out,
                                  gc_error *err)
{
    const char *auth = json_string_value(json_object_get(entry, "auth"));
    const char *user = json_string_value(json_object_get(entry, "username"));
    const char *pass = json_string_value(json_object_get(entry, "password"));
    if (auth && *auth) {
        char *decoded = (char *)gc_base64_decode(auth, strlen(auth), NULL);
        char *colon = decoded ? strchr(decoded, ':') : NULL;
        if (!colon) {
            wipe_free(decoded);
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s: an \"auth\" entry is not base64 of user:password; run docker "
                           "login again",
                           source);
        }
        out->username = gc_xstrndup(decoded, (size_t)(colon - decoded));
        out->password = gc_xstrdup(colon + 1);
        wipe_free(decoded);
    } else if (user && pass) {
        out->username = gc_xstrdup(user);
        out->password = gc_xstrdup(pass);
    } else {
        return 0;
    }
    out->source = gc_xstrdup(source);
    return 0;
}

int image_credentials_from_docker_config(const char *json_text, const char *source,
                                         const char *registry, image_credentials *out,
                                         gc_error *err)
{
    memset(out, 0, sizeof(*out));
    json_error_t jerr;
    json_t *root = json_loads(json_text, 0, &jerr);
    if (!root)
        return gc_fail(err, GC_EXIT_USAGE, "%s:%d:%d: %s", source, jerr.line, jerr.column,
                       jerr.text);
    const char *key;
    json_t *entry;
    int rc = 0;
    json_object_foreach(json_object_get(root, "auths"), key, entry)
    {
        if (auths_key_matches(key, registry)) {
            rc = credentials_from_entry(entry, source, out, err);
            break;
        }
    }
    json_decref(root);
    return rc;
}

static char *docker_config_path(void)
{
    const char *dir = getenv("DOCKER_CONFIG");
    if (dir && *dir)
        return gc_xasprintf("%s/config.json", dir);
    const char *home = getenv("HOME");
    return home && *home ? gc_xasprintf("%s/.docker/config.json", home) : NULL;
}

static int docker_config_credentials(const char *registry, image_credentials *out, gc_error *err)
{
    char *path = docker_config_path();
    if (!path)
        return 0;
    gc_buf text;
    gc_buf_init(&text);
    int rc = gc_file_read(path, MAX_DOCKER_CONFIG_SIZE, &text, err);
    if (rc && errno == ENOENT)
        rc = 0; /* no `docker login` yet: anonymous */
    else if (!rc)
        rc = image_credentials_from_docker_config(text.data, path, registry, out, err);
    OPENSSL_cleanse(text.data, text.len);
    gc_buf_free(&text);
    free(path);
    return rc;
}

static void trim_trailing_space(gc_buf *b)
{
    while (b->len && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == '\r' ||
                      b->data[b->len - 1] == ' '))
        b->data[--b->len] = '\0';
}

static int gcloud_credentials(const char *registry, image_credentials *out, gc_error *err)
{
    char *argv[] = {"gcloud", "auth", "print-access-token", NULL};
    gc_process p = {.argv = argv, .timeout_ms = GCLOUD_TIMEOUT_MS};
    gc_process_result r;
    int rc = gc_process_run(&p, &r, err);
    trim_trailing_space(&r.out);
    if (!rc && r.exec_errno == ENOENT) {
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "cannot get credentials for %s: gcloud is not installed or not on PATH "
                     "(install the Google Cloud CLI and run `gcloud auth login`)",
                     registry);
    } else if (!rc && (!gc_process_succeeded(&r) || r.out.len == 0)) {
        char how[1300] = "printed no token";
        if (!gc_process_succeeded(&r))
            gc_process_explain(&r, &p, how, sizeof(how));
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "cannot get credentials for %s: `gcloud auth print-access-token` %s; run "
                     "`gcloud auth login`",
                     registry, how);
    }
    if (!rc) {
        out->username = gc_xstrdup("oauth2accesstoken");
        out->password = gc_xstrdup(r.out.data);
        out->source = gc_xstrdup("gcloud auth print-access-token");
    }
    gc_process_result_free(&r);
    return rc;
}

int image_credentials_lookup(const char *registry, image_credentials *out, gc_error *err)
{
    memset(out, 0, sizeof(*out));
    if (image_registry_uses_gcloud(registry))
        return gcloud_credentials(registry, out, err);
    return docker_config_credentials(registry, out, err);
}
