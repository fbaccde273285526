#define _XOPEN_SOURCE 700 /* nftw */
#include "kube_test.h"

#include "gcluster/buf.h"
#include "gcluster/process.h"
#include "gcluster/sys.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h> /* cmocka.h needs these first */
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

char *kube_test_tmpdir(void)
{
    const char *base = getenv("TMPDIR");
    char *templ = gc_xasprintf("%s/gcluster-kube-XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(templ)) {
        fprintf(stderr, "mkdtemp %s: %s\n", templ, strerror(errno));
        abort();
    }
    return templ;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

void kube_test_rmtree(char *dir)
{
    if (dir && strlen(dir) > 5)
        nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

void kube_test_write(const char *path, const char *fmt, ...)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        abort();
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

void kube_test_put(const char *dir, const char *rel, const char *text, mode_t mode)
{
    char path[8192];
    snprintf(path, sizeof(path), "%s/%s", dir, rel);
    for (char *p = strchr(path + strlen(dir) + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    kube_test_write(path, "%s", text);
    if (chmod(path, mode) != 0) {
        fprintf(stderr, "cannot chmod %s: %s\n", path, strerror(errno));
        abort();
    }
}

char *kube_test_read(const char *path)
{
    gc_buf b;
    gc_buf_init(&b);
    gc_error err;
    if (gc_file_read(path, 64u << 20, &b, &err)) {
        gc_buf_free(&b);
        return NULL;
    }
    return gc_buf_detach(&b);
}

char *kube_test_base64_file(const char *path)
{
    char *text = kube_test_read(path);
    if (!text)
        abort();
    char *encoded = gc_base64_encode(text, strlen(text));
    free(text);
    return encoded;
}

int kube_test_count(const char *path)
{
    char *s = kube_test_read(path);
    int n = s ? atoi(s) : 0;
    free(s);
    return n;
}

/* Waits up to timeout_ms for `pid` to exit (killing it then); its exit status, or -1. */
static int wait_bounded(pid_t pid, int timeout_ms)
{
    long long deadline = gc_clock_ms() + timeout_ms;
    int status;
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (got < 0)
            return -1;
        if (gc_clock_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        gc_clock_sleep_ms(10);
    }
}

int kube_test_run(char *const argv[], int timeout_ms)
{
    gc_process p = {.argv = argv, .timeout_ms = timeout_ms};
    gc_process_result r;
    gc_error err;
    int status = -1;
    if (!gc_process_run(&p, &r, &err) && !r.exec_errno && !r.signal && !r.timed_out)
        status = r.exit_status;
    gc_process_result_free(&r);
    return status;
}

static bool openssl(char *const argv[])
{
    if (kube_test_run(argv, 30000) == 0)
        return true;
    fprintf(stderr, "kube_test: openssl %s failed\n", argv[1]);
    return false;
}

/* A key pair and a certificate signed by ca (or self-signed when ca is NULL). */
static bool make_cert(const char *dir, const char *name, const char *cn, const char *ca,
                      const char *ca_key, const char *extensions, char **cert, char **key)
{
    *cert = gc_xasprintf("%s/%s.pem", dir, name);
    *key = gc_xasprintf("%s/%s.key", dir, name);
    char *subj = gc_xasprintf("/CN=%s", cn);
    char *csr = gc_xasprintf("%s/%s.csr", dir, name);
    char *ext = gc_xasprintf("%s/%s.ext", dir, name);
    kube_test_write(ext, "%s\n", extensions);
    bool ok;
    if (!ca) {
        char *argv[] = {"openssl",
                        "req",
                        "-x509",
                        "-newkey",
                        "ec",
                        "-pkeyopt",
                        "ec_paramgen_curve:prime256v1",
                        "-nodes",
                        "-keyout",
                        *key,
                        "-out",
                        *cert,
                        "-days",
                        "3",
                        "-subj",
                        subj,
                        "-addext",
                        "basicConstraints=critical,CA:TRUE",
                        "-addext",
                        "keyUsage=critical,keyCertSign,cRLSign",
                        NULL};
        ok = openssl(argv);
    } else {
        char *req[] = {
            "openssl", "req",     "-newkey", "ec",   "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes",  "-keyout", *key,      "-out", csr,        "-subj",
            subj,      NULL};
        char *sign[] = {"openssl",
                        "x509",
                        "-req",
                        "-in",
                        csr,
                        "-CA",
                        (char *)ca,
                        "-CAkey",
                        (char *)ca_key,
                        "-CAcreateserial",
                        "-out",
                        *cert,
                        "-days",
                        "3",
                        "-extfile",
                        ext,
                        NULL};
        ok = openssl(req) && openssl(sign);
    }
    free(subj);
    free(csr);
    free(ext);
    return ok;
}

bool kube_test_make_pki(const char *dir, kube_test_pki *pki)
{
    memset(pki, 0, sizeof(*pki));
    char *ca_key = NULL, *other_key = NULL;
    bool ok =
        make_cert(dir, "ca", "gcluster-test-ca", NULL, NULL, "", &pki->ca, &ca_key) &&
        make_cert(dir, "other-ca", "unrelated-ca", NULL, NULL, "", &pki->other_ca, &other_key) &&
        make_cert(dir, "server", "127.0.0.1", pki->ca, ca_key,
                  "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kube.test.internal\n"
                  "extendedKeyUsage=serverAuth",
                  &pki->server_cert, &pki->server_key) &&
        make_cert(dir, "client", "test-user", pki->ca, ca_key, "extendedKeyUsage=clientAuth",
                  &pki->client_cert, &pki->client_key);
    free(ca_key);
    free(other_key);
    return ok;
}

void kube_test_pki_free(kube_test_pki *pki)
{
    free(pki->ca);
    free(pki->other_ca);
    free(pki->server_cert);
    free(pki->server_key);
    free(pki->client_cert);
    free(pki->client_key);
    memset(pki, 0, sizeof(*pki));
}

bool kube_test_server_start_script(kube_test_server *s, const kube_test_pki *pki, const char *dir,
                                   const char *script)
{
    memset(s, 0, sizeof(*s));
    char *port_file = gc_xasprintf("%s/server.port", dir);
    unlink(port_file);
    char *argv[] = {"python3",       (char *)script, "--cert", pki->server_cert, "--key",
                    pki->server_key, "--client-ca",  pki->ca,  "--port-file",    port_file,
                    "--lifetime",    "600",          NULL};
    char *log_path = gc_xasprintf("%s/server.log", dir);
    pid_t pid = fork();
    if (pid == 0) {
        /* Nothing of the server may hold the test's output open (ctest waits for it). */
        int null = open("/dev/null", O_RDWR);
        int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
        dup2(null, 0);
        dup2(log >= 0 ? log : null, 1);
        dup2(log >= 0 ? log : null, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    free(log_path);
    s->pid = pid;
    long long deadline = gc_clock_ms() + 20000;
    char *text = NULL;
    while (pid > 0 && !(text = kube_test_read(port_file)) && gc_clock_ms() < deadline &&
           waitpid(pid, NULL, WNOHANG) == 0)
        gc_clock_sleep_ms(20);
    free(port_file);
    s->port = text ? atoi(text) : 0;
    free(text);
    if (!s->port) {
        fprintf(stderr, "kube_test: the test server did not start\n");
        kube_test_server_stop(s);
        return false;
    }
    snprintf(s->url, sizeof(s->url), "https://127.0.0.1:%d", s->port);
    s->ca = gc_xstrdup(pki->ca);
    return true;
}

void kube_test_server_stop(kube_test_server *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        if (wait_bounded(s->pid, 5000) < 0)
            kill(s->pid, SIGKILL);
    }
    free(s->ca);
    memset(s, 0, sizeof(*s));
}

static size_t collect(char *data, size_t size, size_t n, void *userdata)
{
    gc_buf_append(userdata, data, size * n);
    return size * n;
}

/* One control request over HTTPS, with a plain libcurl handle (not the client under test). */
static char *control(kube_test_server *s, const char *method, const char *path, const char *body)
{
    CURL *e = curl_easy_init();
    char *url = gc_xasprintf("%s%s", s->url, path);
    gc_buf out;
    gc_buf_init(&out);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_CAINFO, s->ca);
    curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 20L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &out);
    if (!strcmp(method, "POST"))
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body ? body : "");
    CURLcode rc = curl_easy_perform(e);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(e);
    free(url);
    if (rc != CURLE_OK || status != 200) {
        fprintf(stderr, "kube_test: control %s %s failed: %s (HTTP %ld)\n", method, path,
                curl_easy_strerror(rc), status);
        gc_buf_free(&out);
        return NULL;
    }
    return gc_buf_detach(&out);
}

void kube_test_write_kubeconfig(const char *path, const kube_test_server *s, const char *ca,
                                const char *ns)
{
    kube_test_write(path,
                    "current-context: t\n"
                    "clusters: [{name: c, cluster: {server: '%s', certificate-authority: '%s'}}]\n"
                    "users: [{name: u, user: {token: tok}}]\n"
                    "contexts: [{name: t, context: {cluster: c, user: u%s%s}}]\n",
                    s->url, ca, ns ? ", namespace: " : "", ns ? ns : "");
}

int kube_test_open_client(const kube_test_server *s, const kube_test_pki *pki, const char *dir,
                          const gc_events *events, int verbose, gc_kube **out)
{
    char *path = gc_xasprintf("%s/kubeconfig", dir);
    kube_test_write_kubeconfig(path, s, pki->ca, "ns1");
    gc_kube_options opts = {.kubeconfig = path, .events = events, .verbose = verbose};
    gc_error err;
    int rc = gc_kube_open(&opts, out, &err);
    free(path);
    return rc;
}

bool kube_test_server_script(kube_test_server *s, const char *json)
{
    char *r = control(s, "POST", "/_test/script", json);
    bool ok = r && strstr(r, "\"ok\"");
    free(r);
    return ok;
}

bool kube_test_server_script_quoted(kube_test_server *s, const char *text)
{
    char *json = gc_xstrdup(text);
    for (char *p = json; *p; p++)
        if (*p == '\'')
            *p = '"';
    bool ok = kube_test_server_script(s, json);
    free(json);
    return ok;
}

static bool reset(kube_test_server *s, const char *body)
{
    char *r = control(s, "POST", "/_test/reset", body);
    free(r);
    return r != NULL;
}

bool kube_test_server_reset(kube_test_server *s)
{
    return reset(s, "");
}

bool kube_test_server_reset_for_new_client(kube_test_server *s)
{
    return reset(s, "{\"drop_old_connections\": true}");
}

json_t *kube_test_server_log(kube_test_server *s)
{
    char *r = control(s, "GET", "/_test/log", NULL);
    json_t *log = r ? json_loads(r, 0, NULL) : NULL;
    free(r);
    return log ? log : json_array();
}

json_t *kube_test_server_log_ended(kube_test_server *s, size_t i)
{
    for (int tries = 0;; tries++) {
        json_t *log = kube_test_server_log(s);
        if (json_object_get(json_array_get(log, i), "ended_by") || tries == 500)
            return log;
        json_decref(log);
        nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
    }
}

int kube_test_env_setup_dir(void **state)
{
    kube_test_env *env = calloc(1, sizeof(*env));
    env->tmp = kube_test_tmpdir();
    *state = env;
    return 0;
}

bool kube_test_env_start(kube_test_env *env, const char *script)
{
    memset(env, 0, sizeof(*env));
    env->tmp = kube_test_tmpdir();
    return kube_test_make_pki(env->tmp, &env->pki) &&
           kube_test_server_start_script(&env->server, &env->pki, env->tmp, script);
}

void kube_test_env_stop(kube_test_env *env)
{
    if (env->server.pid)
        kube_test_server_stop(&env->server);
    kube_test_pki_free(&env->pki);
    if (env->tmp)
        kube_test_rmtree(env->tmp);
    memset(env, 0, sizeof(*env));
}

int kube_test_env_setup(void **state)
{
    kube_test_env *env = calloc(1, sizeof(*env));
    *state = env;
    const char *server = GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py";
    return kube_test_env_start(env, server) ? 0 : -1;
}

int kube_test_env_teardown(void **state)
{
    kube_test_env *env = *state;
    kube_test_env_stop(env);
    free(env);
    return 0;
}

int kube_test_env_reset(void **state)
{
    kube_test_env *env = *state;
    return kube_test_server_reset_for_new_client(&env->server) ? 0 : -1;
}

void kube_test_env_script(kube_test_env *env, const char *text)
{
    if (!kube_test_server_script_quoted(&env->server, text))
        fail_msg("bad script: %s", text);
}

int kube_test_closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(addr);
    int port = 0;
    if (fd >= 0 && !bind(fd, (struct sockaddr *)&addr, sizeof(addr)) &&
        !getsockname(fd, (struct sockaddr *)&addr, &len))
        port = ntohs(addr.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

bool kube_test_contains(const char *haystack, const char *needle)
{
    return haystack && needle && strstr(haystack, needle);
}

void kube_test_rfc3339(long delta, char out[32])
{
    time_t t = time(NULL) + delta;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}
