#include "image/credentials.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GCLOUD_TIMEOUT_MS (120 * 1000)

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

bool gc_registry_uses_gcloud(const char *registry)
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

void gc_credentials_free(gc_credentials *c)
{
    free(c->username);
    wipe_free(c->password);
    free(c->source);
    memset(c, 0, sizeof(*c));
}

static const char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *gc_base64_encode(const void *data, size_t len)
{
    const unsigned char *in = data;
    char *out = gc_xmalloc(4 * ((len + 2) / 3) + 1);
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < len)
            v |= in[i + 2];
        out[o++] = base64_alphabet[(v >> 18) & 63];
        out[o++] = base64_alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? base64_alphabet[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? base64_alphabet[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

char *gc_base64_decode(const char *text, size_t *len)
{
    size_t n = strlen(text);
    char *out = gc_xmalloc(n / 4 * 3 + 4);
    size_t o = 0;
    unsigned v = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] == '=')
            break;
        const char *p = strchr(base64_alphabet, text[i]);
        if (!p) {
            free(out);
            return NULL;
        }
        v = (v << 6) | (unsigned)(p - base64_alphabet);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((v >> bits) & 0xff);
        }
    }
    out[o] = '\0';
    if (len)
        *len = o;
    return out;
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

static int credentials_from_entry(json_t *entry, const char *source, gc_credentials *out,
                                  gc_error *err)
{
    const char *auth = json_string_value(json_object_get(entry, "auth"));
    const char *user = json_string_value(json_object_get(entry, "username"));
    const char *pass = json_string_value(json_object_get(entry, "password"));
    if (auth && *auth) {
        char *decoded = gc_base64_decode(auth, NULL);
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

int gc_credentials_from_docker_config(const char *json_text, const char *source,
                                      const char *registry, gc_credentials *out, gc_error *err)
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

static int docker_config_credentials(const char *registry, gc_credentials *out, gc_error *err)
{
    char *path = docker_config_path();
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        free(path);
        return 0;
    }
    gc_buf text;
    gc_buf_init(&text);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        gc_buf_append(&text, chunk, n);
    fclose(f);
    int rc = gc_credentials_from_docker_config(text.data, path, registry, out, err);
    OPENSSL_cleanse(text.data, text.len);
    gc_buf_free(&text);
    free(path);
    return rc;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void exec_child(char *const argv[], int out_fd, int err_fd)
{
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0)
        dup2(null_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    execvp(argv[0], argv);
    _exit(127);
}

/* Reads both pipes until they close or the deadline passes; returns -1 on timeout. */
static int drain_pipes(int out_fd, int err_fd, long long deadline, gc_buf *out, gc_buf *errout)
{
    struct pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    gc_buf *bufs[2] = {out, errout};
    int open_fds = 2;
    while (open_fds > 0) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return -1;
        int ready = poll(fds, 2, (int)left);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            return -1;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[4096];
            ssize_t n = read(fds[i].fd, chunk, sizeof(chunk));
            if (n > 0) {
                gc_buf_append(bufs[i], chunk, (size_t)n);
            } else if (n == 0 || errno != EINTR) {
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    return 0;
}

static int cloexec_pipe(int fds[2])
{
    if (pipe(fds) != 0)
        return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
}

int gc_run_capture(char *const argv[], int timeout_ms, gc_buf *out, gc_buf *errout,
                   int *exit_status, gc_error *err)
{
    int out_pipe[2], err_pipe[2];
    if (cloexec_pipe(out_pipe) != 0)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot run %s: %s", argv[0], strerror(errno));
    if (cloexec_pipe(err_pipe) != 0) {
        close(out_pipe[0]);
        close(out_pipe[1]);
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot run %s: %s", argv[0], strerror(errno));
    }
    pid_t pid = fork();
    if (pid == 0)
        exec_child(argv, out_pipe[1], err_pipe[1]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    int rc = 0;
    if (pid < 0) {
        rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot run %s: %s", argv[0], strerror(errno));
    } else if (drain_pipes(out_pipe[0], err_pipe[0], now_ms() + timeout_ms, out, errout) != 0) {
        kill(pid, SIGKILL);
        rc = gc_fail(err, GC_EXIT_RUNTIME, "%s did not finish within %d seconds", argv[0],
                     timeout_ms / 1000);
    }
    close(out_pipe[0]);
    close(err_pipe[0]);
    if (pid > 0) {
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return rc;
}

static void trim_trailing_space(gc_buf *b)
{
    while (b->len && (b->data[b->len - 1] == '\n' || b->data[b->len - 1] == '\r' ||
                      b->data[b->len - 1] == ' '))
        b->data[--b->len] = '\0';
}

static int gcloud_credentials(const char *registry, gc_credentials *out, gc_error *err)
{
    char *argv[] = {"gcloud", "auth", "print-access-token", NULL};
    gc_buf token, errors;
    gc_buf_init(&token);
    gc_buf_init(&errors);
    int status = 0;
    int rc = gc_run_capture(argv, GCLOUD_TIMEOUT_MS, &token, &errors, &status, err);
    trim_trailing_space(&token);
    trim_trailing_space(&errors);
    if (!rc && status == 127)
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "cannot get credentials for %s: gcloud is not installed or not on PATH "
                     "(install the Google Cloud CLI and run `gcloud auth login`)",
                     registry);
    else if (!rc && (status != 0 || token.len == 0))
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "cannot get credentials for %s: `gcloud auth print-access-token` failed "
                     "(exit %d): %s; run `gcloud auth login`",
                     registry, status, errors.len ? errors.data : "no output");
    if (!rc) {
        out->username = gc_xstrdup("oauth2accesstoken");
        out->password = gc_xstrdup(token.data);
        out->source = gc_xstrdup("gcloud auth print-access-token");
    }
    OPENSSL_cleanse(token.data, token.len);
    gc_buf_free(&token);
    gc_buf_free(&errors);
    return rc;
}

int gc_credentials_lookup(const char *registry, gc_credentials *out, gc_error *err)
{
    memset(out, 0, sizeof(*out));
    if (gc_registry_uses_gcloud(registry))
        return gcloud_credentials(registry, out, err);
    return docker_config_credentials(registry, out, err);
}
