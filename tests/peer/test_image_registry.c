/*
 * gc_image_build_push against real OCI registries on 127.0.0.1 (go-containerregistry's
 * in-memory registry, built by tests/image/build-registry).
 *
 * Four registries run for the whole group: "source" holds the seeded base images, "target" is
 * where builds are pushed, so base layers must really be copied across (one test pushes within
 * the source registry instead), "auth" only answers requests that went through the Docker
 * token flow with the right credentials (tests/image/authregistry), and "reference" is CNCF
 * distribution's registry, where blobs belong to repositories (so mounts really happen) and
 * manifests are checked against the blobs they name. Seeding and checking use plain
 * libcurl requests written here, not the client under test, and layers are read back with an
 * independent tar reader.
 */
#include "image/digest.h"
#include "image/layer.h"

#include "gcluster/buf.h"
#include "gcluster/image.h"
#include "gcluster/process.h"
#include "gcluster/sys.h"
#include "image/credentials.h"
#include "kube_test.h"
#include "tar_reader.h"
#include "test_events.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define START_TIMEOUT_MS 15000
#define STOP_TIMEOUT_MS  5000

typedef struct registry_process {
    pid_t pid;
    int port;
    char host[64]; /* "127.0.0.1:<port>" */
    char log_path[256];
} registry_process;

#define AUTH_USER     "gcluster"
#define AUTH_PASSWORD "pa55-not-in-any-log"

typedef struct fixture {
    registry_process source, target, auth, reference;
    char *reference_storage; /* the distribution registry's storage directory */
    char *context;           /* a build context shared by the tests */
    char amd64_layer[GC_DIGEST_LEN], amd64_diff[GC_DIGEST_LEN];
    char arm64_layer[GC_DIGEST_LEN];
    char plain_layer[GC_DIGEST_LEN];
} fixture;

/* --- the registry processes ------------------------------------------------------------ */

/* The registry binaries tests/image/build-registry builds, in the order it prints them:
 * go-containerregistry's (anonymous), the token-guarded one, and CNCF distribution's. */
#define REGISTRY_BINARIES 3

static void registry_binaries(char *paths[REGISTRY_BINARIES])
{
    char *argv[] = {GCLUSTER_SOURCE_DIR "/tests/image/build-registry", "--print-path", NULL};
    gc_process p = {.argv = argv, .timeout_ms = 10000};
    gc_process_result r;
    gc_error err = {0};
    if (gc_process_run(&p, &r, &err) != 0 || !gc_process_succeeded(&r))
        fail_msg("cannot run tests/image/build-registry: %s %s", err.message, r.err.data);
    const char *line = r.out.data;
    for (int i = 0; i < REGISTRY_BINARIES; i++) {
        size_t len = strcspn(line, "\n");
        if (!len)
            fail_msg("tests/image/build-registry --print-path printed: %s", r.out.data);
        paths[i] = strndup(line, len);
        line += len + (line[len] ? 1 : 0);
        if (access(paths[i], X_OK) != 0)
            fail_msg("the test registry %s is missing: build it with `tests/image/build-registry` "
                     "(needs Go and the module proxy); these tests cannot run without it",
                     paths[i]);
    }
    gc_process_result_free(&r);
}

/* Finds the port in the registry's log ("serving on port N" from go-containerregistry's,
 * "listening on 127.0.0.1:N" from distribution's), waiting a bounded time. */
static int wait_for_port(const registry_process *r)
{
    long long deadline = gc_clock_ms() + START_TIMEOUT_MS;
    while (gc_clock_ms() < deadline) {
        FILE *f = fopen(r->log_path, "r");
        char line[512];
        while (f && fgets(line, sizeof(line), f)) {
            static const char *const markers[] = {"serving on port ", "listening on 127.0.0.1:"};
            for (size_t i = 0; i < 2; i++) {
                const char *p = strstr(line, markers[i]);
                if (p) {
                    fclose(f);
                    return atoi(p + strlen(markers[i]));
                }
            }
        }
        if (f)
            fclose(f);
        if (waitpid(r->pid, NULL, WNOHANG) == r->pid)
            fail_msg("the test registry exited at start; see %s", r->log_path);
        usleep(20000);
    }
    fail_msg("the test registry did not start within %d ms; see %s", START_TIMEOUT_MS, r->log_path);
    return -1;
}

/* Runs argv (argv[0] the binary) as a registry that dies with the test. */
static void start_registry(char *const argv[], const char *name, registry_process *r)
{
    snprintf(r->log_path, sizeof(r->log_path), "/tmp/gcluster-registry-%s-%d.log", name,
             (int)getpid());
    int log_fd = open(r->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(log_fd >= 0);
    r->pid = fork();
    assert_true(r->pid >= 0);
    if (r->pid == 0) {
        /* Dies with the test, however the test ends. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        execv(argv[0], argv);
        _exit(127);
    }
    close(log_fd);
    r->port = wait_for_port(r);
    snprintf(r->host, sizeof(r->host), "127.0.0.1:%d", r->port);
}

static char *read_text(const char *path)
{
    gc_buf b;
    gc_buf_init(&b);
    FILE *f = fopen(path, "r");
    char chunk[4096];
    size_t n;
    while (f && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        gc_buf_append(&b, chunk, n);
    if (f)
        fclose(f);
    return gc_buf_detach(&b);
}

static void stop_registry(registry_process *r)
{
    if (r->pid <= 0)
        return;
    kill(r->pid, SIGTERM);
    long long deadline = gc_clock_ms() + STOP_TIMEOUT_MS;
    while (waitpid(r->pid, NULL, WNOHANG) == 0) {
        if (gc_clock_ms() > deadline) {
            kill(r->pid, SIGKILL);
            waitpid(r->pid, NULL, 0);
            break;
        }
        usleep(10000);
    }
    unlink(r->log_path);
    r->pid = 0;
}

/* --- plain HTTP, independent of the client under test ---------------------------------- */

typedef struct http_result {
    long status;
    gc_buf body;
    char content_type[256];
    char location[1024];
} http_result;

static size_t collect(char *data, size_t size, size_t n, void *userdata)
{
    gc_buf_append(userdata, data, size * n);
    return size * n;
}

static void header_value(const char *line, size_t name_len, char *out, size_t out_size,
                         const char *stop)
{
    const char *v = line + name_len;
    while (*v == ' ')
        v++;
    snprintf(out, out_size, "%.*s", (int)strcspn(v, stop), v);
}

static size_t collect_headers(char *line, size_t size, size_t n, void *userdata)
{
    http_result *res = userdata;
    if (strncasecmp(line, "Content-Type:", 13) == 0)
        header_value(line, 13, res->content_type, sizeof(res->content_type), "\r\n;");
    else if (strncasecmp(line, "Location:", 9) == 0)
        header_value(line, 9, res->location, sizeof(res->location), "\r\n");
    return size * n;
}

static void http(const char *method, const char *url, const char *content_type, const void *body,
                 size_t len, http_result *res)
{
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    char line[512];
    if (content_type) {
        snprintf(line, sizeof(line), "Content-Type: %s", content_type);
        h = curl_slist_append(h, line);
    }
    h = curl_slist_append(h, "Accept: application/vnd.oci.image.index.v1+json, "
                             "application/vnd.oci.image.manifest.v1+json, "
                             "application/vnd.docker.distribution.manifest.v2+json, "
                             "application/vnd.docker.distribution.manifest.list.v2+json");
    gc_buf_init(&res->body);
    res->content_type[0] = '\0';
    res->location[0] = '\0';
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &res->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect_headers);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, res);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK)
        fail_msg("%s %s: %s", method, url, curl_easy_strerror(cc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
}

/* Uploads a blob as the spec's monolithic upload: POST for a session, PUT ?digest= the bytes. */
static void seed_blob(const char *host, const char *repo, const void *data, size_t len,
                      char digest[GC_DIGEST_LEN])
{
    image_sha256_digest(data, len, digest);
    char url[2048];
    snprintf(url, sizeof(url), "http://%s/v2/%s/blobs/uploads/", host, repo);
    http_result res;
    http("POST", url, NULL, "", 0, &res);
    if (res.status != 202 || !res.location[0])
        fail_msg("starting a blob upload: HTTP %ld %s", res.status, res.body.data);
    gc_buf_free(&res.body);
    if (res.location[0] == '/')
        snprintf(url, sizeof(url), "http://%s%s", host, res.location);
    else
        snprintf(url, sizeof(url), "%s", res.location);
    snprintf(url + strlen(url), sizeof(url) - strlen(url), "%cdigest=%s",
             strchr(url, '?') ? '&' : '?', digest);
    http("PUT", url, "application/octet-stream", data, len, &res);
    if (res.status != 201)
        fail_msg("seeding blob: HTTP %ld %s", res.status, res.body.data);
    gc_buf_free(&res.body);
}

static void seed_manifest(const char *host, const char *repo, const char *ref,
                          const char *media_type, const char *text, char digest[GC_DIGEST_LEN])
{
    char url[512];
    snprintf(url, sizeof(url), "http://%s/v2/%s/manifests/%s", host, repo, ref);
    http_result res;
    http("PUT", url, media_type, text, strlen(text), &res);
    if (res.status != 201)
        fail_msg("seeding manifest: HTTP %ld %s", res.status, res.body.data);
    gc_buf_free(&res.body);
    if (digest)
        image_sha256_digest(text, strlen(text), digest);
}

static json_t *get_json(const char *host, const char *path, char *content_type)
{
    char url[1024];
    snprintf(url, sizeof(url), "http://%s%s", host, path);
    http_result res;
    http("GET", url, NULL, NULL, 0, &res);
    if (res.status != 200)
        fail_msg("GET %s: HTTP %ld", url, res.status);
    json_error_t jerr;
    json_t *doc = json_loadb(res.body.data, res.body.len, 0, &jerr);
    if (!doc)
        fail_msg("GET %s: not JSON: %s", url, jerr.text);
    if (content_type)
        snprintf(content_type, 256, "%s", res.content_type);
    gc_buf_free(&res.body);
    return doc;
}

static char *get_blob(const char *host, const char *repo, const char *digest, size_t *len)
{
    char url[512];
    snprintf(url, sizeof(url), "http://%s/v2/%s/blobs/%s", host, repo, digest);
    http_result res;
    http("GET", url, NULL, NULL, 0, &res);
    assert_int_equal(res.status, 200);
    char got[GC_DIGEST_LEN];
    image_sha256_digest(res.body.data, res.body.len, got);
    assert_string_equal(got, digest);
    *len = res.body.len;
    return gc_buf_detach(&res.body);
}

static long status_of(const char *method, const char *host, const char *path)
{
    char url[1024];
    snprintf(url, sizeof(url), "http://%s%s", host, path);
    http_result res;
    http(method, url, NULL, NULL, 0, &res);
    gc_buf_free(&res.body);
    return res.status;
}

/* --- seeding the base images ----------------------------------------------------------- */

static char *temp_dir(void)
{
    char tmpl[] = "/tmp/gcluster-registry-test-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    return strdup(tmpl);
}

static void remove_tree(const char *dir)
{
    char *argv[] = {"rm", "-rf", (char *)dir, NULL};
    gc_process p = {.argv = argv, .timeout_ms = 10000};
    gc_process_result r;
    gc_error err = {0};
    gc_process_run(&p, &r, &err);
    gc_process_result_free(&r);
}

/* A base layer holding one file, pushed to `repo`; returns its digest and diff_id. */
static void seed_base_layer(const char *host, const char *repo, const char *release,
                            char digest[GC_DIGEST_LEN], char diff_id[GC_DIGEST_LEN])
{
    char *dir = temp_dir();
    kube_test_put(dir, "etc/base-release", release, 0644);
    image_layer layer;
    gc_error err = {0};
    assert_int_equal(image_layer_build(dir, true, NULL, &layer, &err), 0);
    char *blob = malloc((size_t)layer.size);
    assert_int_equal(fread(blob, 1, (size_t)layer.size, layer.blob), (size_t)layer.size);
    char pushed[GC_DIGEST_LEN];
    seed_blob(host, repo, blob, (size_t)layer.size, pushed);
    assert_string_equal(pushed, layer.digest);
    strcpy(digest, layer.digest);
    strcpy(diff_id, layer.diff_id);
    free(blob);
    image_layer_close(&layer);
    remove_tree(dir);
    free(dir);
}

/* Config + manifest for one platform; returns the manifest text (caller frees). */
static char *seed_image(const char *host, const char *repo, const char *arch,
                        const char *media_type, const char *config_type, const char *layer_type,
                        const char *release, char layer_digest[GC_DIGEST_LEN],
                        char diff_id[GC_DIGEST_LEN])
{
    seed_base_layer(host, repo, release, layer_digest, diff_id);
    json_t *config =
        json_pack("{s:s,s:s,s:{s:[s],s:[s],s:s},s:{s:s,s:[s]},s:[{s:s}]}", "architecture", arch,
                  "os", "linux", "config", "Env", "PATH=/usr/local/bin:/usr/bin", "Entrypoint",
                  "/bin/sh", "WorkingDir", "/app", "rootfs", "type", "layers", "diff_ids", diff_id,
                  "history", "created_by", "seeded by test_image_registry");
    char *config_text = json_dumps(config, JSON_COMPACT);
    json_decref(config);
    char config_digest[GC_DIGEST_LEN];
    seed_blob(host, repo, config_text, strlen(config_text), config_digest);
    json_t *manifest =
        json_pack("{s:i,s:s,s:{s:s,s:I,s:s},s:[{s:s,s:I,s:s}]}", "schemaVersion", 2, "mediaType",
                  media_type, "config", "mediaType", config_type, "size",
                  (json_int_t)strlen(config_text), "digest", config_digest, "layers", "mediaType",
                  layer_type, "size", (json_int_t)0, "digest", layer_digest);
    free(config_text);
    /* The layer size is what the registry reports for the blob we just pushed. */
    size_t len;
    char *blob = get_blob(host, repo, layer_digest, &len);
    free(blob);
    json_object_set_new(json_array_get(json_object_get(manifest, "layers"), 0), "size",
                        json_integer((json_int_t)len));
    char *text = json_dumps(manifest, JSON_COMPACT);
    json_decref(manifest);
    return text;
}

/* The same base images on any registry: the same bytes, so the same digests in `f`. */
static void seed_base_images(fixture *f, const char *host)
{
    char diff[GC_DIGEST_LEN], amd64_digest[GC_DIGEST_LEN], arm64_digest[GC_DIGEST_LEN];
    char *amd64 = seed_image(
        host, "base/python", "amd64", "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.config.v1+json", "application/vnd.oci.image.layer.v1.tar+gzip",
        "base amd64\n", f->amd64_layer, f->amd64_diff);
    seed_manifest(host, "base/python", "amd64-only", "application/vnd.oci.image.manifest.v1+json",
                  amd64, amd64_digest);
    char *arm64 = seed_image(
        host, "base/python", "arm64", "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.oci.image.config.v1+json", "application/vnd.oci.image.layer.v1.tar+gzip",
        "base arm64\n", f->arm64_layer, diff);
    /* Only the index names the arm64 manifest, by digest. */
    image_sha256_digest(arm64, strlen(arm64), arm64_digest);
    seed_manifest(host, "base/python", arm64_digest, "application/vnd.oci.image.manifest.v1+json",
                  arm64, NULL);
    json_t *index = json_pack(
        "{s:i,s:s,s:[{s:s,s:I,s:s,s:{s:s,s:s}},{s:s,s:I,s:s,s:{s:s,s:s,s:s}}]}", "schemaVersion", 2,
        "mediaType", "application/vnd.oci.image.index.v1+json", "manifests", "mediaType",
        "application/vnd.oci.image.manifest.v1+json", "size", (json_int_t)strlen(amd64), "digest",
        amd64_digest, "platform", "architecture", "amd64", "os", "linux", "mediaType",
        "application/vnd.oci.image.manifest.v1+json", "size", (json_int_t)strlen(arm64), "digest",
        arm64_digest, "platform", "architecture", "arm64", "os", "linux", "variant", "v8");
    char *index_text = json_dumps(index, JSON_COMPACT);
    json_decref(index);
    seed_manifest(host, "base/python", "3.11", "application/vnd.oci.image.index.v1+json",
                  index_text, NULL);
    free(index_text);
    free(amd64);
    free(arm64);

    char *plain = seed_image(
        host, "base/plain", "amd64", "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.docker.container.image.v1+json",
        "application/vnd.docker.image.rootfs.diff.tar.gzip", "plain\n", f->plain_layer, diff);
    seed_manifest(host, "base/plain", "1", "application/vnd.docker.distribution.manifest.v2+json",
                  plain, NULL);
    free(plain);
}

/* A configuration for distribution's registry: files under `storage`, loopback only. */
static char *reference_config(const char *storage)
{
    char *text = gc_xasprintf("version: 0.1\n"
                              "log:\n  level: info\n  accesslog:\n    disabled: true\n"
                              "storage:\n  filesystem:\n    rootdirectory: %s/data\n"
                              "http:\n  addr: 127.0.0.1:0\n",
                              storage);
    kube_test_put(storage, "config.yml", text, 0644);
    free(text);
    return gc_xasprintf("%s/config.yml", storage);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    *state = f; /* so that teardown stops whatever started before a failure */
    char *bin[REGISTRY_BINARIES];
    registry_binaries(bin);
    /* Port 0 everywhere: the kernel picks free ports, which the registries log. */
    start_registry((char *[]){bin[0], "-port", "0", NULL}, "source", &f->source);
    start_registry((char *[]){bin[0], "-port", "0", NULL}, "target", &f->target);
    start_registry(
        (char *[]){bin[1], "-port", "0", "-user", AUTH_USER, "-password", AUTH_PASSWORD, NULL},
        "auth", &f->auth);
    f->reference_storage = temp_dir();
    char *config = reference_config(f->reference_storage);
    start_registry((char *[]){bin[2], "serve", config, NULL}, "reference", &f->reference);
    free(config);
    for (int i = 0; i < REGISTRY_BINARIES; i++)
        free(bin[i]);
    seed_base_images(f, f->source.host);
    seed_base_images(f, f->reference.host);

    f->context = temp_dir();
    kube_test_put(f->context, "train.py", "print('training')\n", 0644);
    kube_test_put(f->context, "conf/model.yaml", "layers: 4\n", 0644);
    kube_test_put(f->context, ".git/HEAD", "ref: refs/heads/main\n", 0644);
    kube_test_put(f->context, "scratch.ckpt", "big\n", 0644);
    kube_test_put(f->context, ".dockerignore", "*.ckpt\n", 0644);
    char link[4096];
    snprintf(link, sizeof(link), "%s/config", f->context);
    assert_int_equal(symlink("conf/model.yaml", link), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (!f)
        return 0;
    stop_registry(&f->source);
    stop_registry(&f->target);
    stop_registry(&f->auth);
    stop_registry(&f->reference);
    if (f->reference_storage)
        remove_tree(f->reference_storage);
    free(f->reference_storage);
    if (f->context)
        remove_tree(f->context);
    free(f->context);
    free(f);
    return 0;
}

/* --- building and pushing -------------------------------------------------------------- */

typedef struct push_result {
    int rc;
    char *ref;
    gc_error err;
    char *log;
} push_result;

static push_result push(const char *base, const char *context, const char *platform,
                        const char *repository)
{
    push_result r = {0};
    test_events events;
    test_events_init(&events);
    gc_image_build b = {.base_image = base,
                        .context_dir = context,
                        .platform = platform,
                        .repository = repository,
                        .verbose = 1,
                        .events = &events.events};
    r.rc = gc_image_build_push(&b, &r.ref, &r.err);
    r.log = gc_buf_detach(&events.lines);
    return r;
}

static void push_result_free(push_result *r)
{
    free(r->ref);
    free(r->log);
}

/* Whether one line of the log holds both `a` and `b`. */
static bool line_with(const char *log, const char *a, const char *b)
{
    while (*log) {
        size_t len = strcspn(log, "\n");
        char *line = strndup(log, len);
        bool both = strstr(line, a) && strstr(line, b);
        free(line);
        if (both)
            return true;
        log += len + (log[len] == '\n');
    }
    return false;
}

static const char *tag_of(const char *ref)
{
    return strrchr(ref, ':') + 1;
}

static json_t *pushed_manifest(const char *host, const char *repo, const char *tag, char *type)
{
    char path[512];
    snprintf(path, sizeof(path), "/v2/%s/manifests/%s", repo, tag);
    return get_json(host, path, type);
}

static void check_layer_contents(const char *host, const char *repo, const char *digest,
                                 const char *diff_id)
{
    size_t gz_len, tar_len;
    char *gz = get_blob(host, repo, digest, &gz_len);
    char *tar = tar_gunzip(gz, gz_len, &tar_len);
    assert_non_null(tar);
    char got_diff[GC_DIGEST_LEN];
    image_sha256_digest(tar, tar_len, got_diff);
    assert_string_equal(got_diff, diff_id);
    tar_archive a;
    const char *why = NULL;
    if (tar_parse(tar, tar_len, &a, &why) != 0)
        fail_msg("pushed layer is not a tar: %s", why);
    /* The context lands in the base image's working directory (/app, seed_image), as Google's
     * gcluster puts it since v1.110; the directory itself comes first, owned by the image. */
    assert_int_equal(tar_find(&a, "app/")->type, '5');
    assert_null(tar_find(&a, "train.py"));
    assert_string_equal(tar_find(&a, "app/train.py")->data, "print('training')\n");
    assert_string_equal(tar_find(&a, "app/conf/model.yaml")->data, "layers: 4\n");
    assert_int_equal(tar_find(&a, "app/config")->type, '2');
    assert_string_equal(tar_find(&a, "app/config")->linkname, "conf/model.yaml");
    assert_null(tar_find(&a, "app/.git/"));
    assert_null(tar_find(&a, "app/.git/HEAD"));
    assert_null(tar_find(&a, "app/scratch.ckpt"));
    tar_archive_free(&a);
    free(tar);
    free(gz);
}

static void pushes_across_registries_with_the_base_copied(void **state)
{
    fixture *f = *state;
    char base[256], repo[256];
    snprintf(base, sizeof(base), "%s/base/python:3.11", f->source.host);
    snprintf(repo, sizeof(repo), "%s/team/alice-runner", f->target.host);
    push_result r = push(base, f->context, "linux/amd64", repo);
    if (r.rc)
        fail_msg("push failed: %s\n--- log ---\n%s", r.err.message, r.log);

    /* The name is the one a dry run predicts. */
    gc_image_build plan = {.base_image = base,
                           .context_dir = f->context,
                           .platform = "linux/amd64",
                           .repository = repo};
    char *planned = NULL;
    gc_error err = {0};
    assert_int_equal(gc_image_plan(&plan, &planned, &err), 0);
    assert_string_equal(r.ref, planned);
    free(planned);

    assert_non_null(strstr(r.log, "building layer from "));
    assert_non_null(strstr(r.log, ": 3 files, "));
    assert_non_null(strstr(r.log, "copying base layer sha256:"));
    assert_non_null(strstr(r.log, "pushing layer sha256:"));
    char pushed_line[512];
    snprintf(pushed_line, sizeof(pushed_line), "pushed %s\n", r.ref);
    assert_non_null(strstr(r.log, pushed_line));

    char type[256];
    json_t *m = pushed_manifest(f->target.host, "team/alice-runner", tag_of(r.ref), type);
    assert_string_equal(type, "application/vnd.oci.image.manifest.v1+json");
    json_t *layers = json_object_get(m, "layers");
    assert_int_equal(json_array_size(layers), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(layers, 0), "digest")),
                        f->amd64_layer);
    json_t *ours = json_array_get(layers, 1);
    assert_string_equal(json_string_value(json_object_get(ours, "mediaType")),
                        "application/vnd.oci.image.layer.v1.tar+gzip");
    const char *layer_digest = json_string_value(json_object_get(ours, "digest"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(m, "annotations"),
                                                          "org.opencontainers.image.base.name")),
                        base);

    const char *config_digest =
        json_string_value(json_object_get(json_object_get(m, "config"), "digest"));
    size_t config_len;
    char *config_text = get_blob(f->target.host, "team/alice-runner", config_digest, &config_len);
    json_t *config = json_loadb(config_text, config_len, 0, NULL);
    json_t *diff_ids = json_object_get(json_object_get(config, "rootfs"), "diff_ids");
    assert_int_equal(json_array_size(diff_ids), 2);
    assert_string_equal(json_string_value(json_array_get(diff_ids, 0)), f->amd64_diff);
    /* The base image's settings survive. */
    json_t *cfg = json_object_get(config, "config");
    assert_string_equal(json_string_value(json_object_get(cfg, "WorkingDir")), "/app");
    assert_string_equal(json_string_value(json_array_get(json_object_get(cfg, "Entrypoint"), 0)),
                        "/bin/sh");
    assert_int_equal(json_array_size(json_object_get(config, "history")), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(config, "history"), 1), "created_by")),
                        "gcluster: COPY build context /app");

    /* The base layer was really copied: the target serves it. */
    char path[512];
    snprintf(path, sizeof(path), "/v2/team/alice-runner/blobs/%s", f->amd64_layer);
    assert_int_equal(status_of("HEAD", f->target.host, path), 200);
    check_layer_contents(f->target.host, "team/alice-runner", layer_digest,
                         json_string_value(json_array_get(diff_ids, 1)));

    json_decref(config);
    free(config_text);
    json_decref(m);

    /* Again: the image under that tag already exists, so nothing is pushed. */
    push_result again = push(base, f->context, "linux/amd64", repo);
    assert_int_equal(again.rc, 0);
    assert_string_equal(again.ref, r.ref);
    assert_non_null(strstr(again.log, "already exists; not pushing it again"));
    assert_null(strstr(again.log, "pushing layer"));
    assert_null(strstr(again.log, "copying base layer"));
    push_result_free(&again);
    push_result_free(&r);
}

static void picks_the_requested_platform_from_an_index(void **state)
{
    fixture *f = *state;
    char base[256], repo[256];
    snprintf(base, sizeof(base), "%s/base/python:3.11", f->source.host);
    snprintf(repo, sizeof(repo), "%s/team/arm-runner", f->target.host);
    push_result r = push(base, f->context, "linux/arm64", repo);
    if (r.rc)
        fail_msg("push failed: %s\n--- log ---\n%s", r.err.message, r.log);
    json_t *m = pushed_manifest(f->target.host, "team/arm-runner", tag_of(r.ref), NULL);
    json_t *first = json_array_get(json_object_get(m, "layers"), 0);
    assert_string_equal(json_string_value(json_object_get(first, "digest")), f->arm64_layer);
    json_decref(m);
    push_result_free(&r);

    push_result missing = push(base, f->context, "linux/s390x", repo);
    assert_int_equal(missing.rc, GC_EXIT_USAGE);
    assert_non_null(strstr(missing.err.message, "has no linux/s390x variant"));
    assert_non_null(strstr(missing.err.message, "linux/amd64, linux/arm64/v8"));
    push_result_free(&missing);

    /* A single-platform base for another architecture is refused, not mislabelled. */
    snprintf(base, sizeof(base), "%s/base/python:amd64-only", f->source.host);
    push_result wrong = push(base, f->context, "linux/arm64", repo);
    assert_int_equal(wrong.rc, GC_EXIT_USAGE);
    assert_non_null(strstr(wrong.err.message, "is linux/amd64 only"));
    push_result_free(&wrong);
}

static void pushes_within_one_registry(void **state)
{
    fixture *f = *state;
    char base[256], repo[256];
    snprintf(base, sizeof(base), "%s/base/python:3.11", f->source.host);
    snprintf(repo, sizeof(repo), "%s/team/bob-runner", f->source.host);
    push_result r = push(base, f->context, "linux/amd64", repo);
    if (r.rc)
        fail_msg("push failed: %s\n--- log ---\n%s", r.err.message, r.log);
    /* The registry already has the base layer: no copy through this machine. */
    assert_null(strstr(r.log, "copying base layer"));
    json_t *m = pushed_manifest(f->source.host, "team/bob-runner", tag_of(r.ref), NULL);
    assert_int_equal(json_array_size(json_object_get(m, "layers")), 2);
    json_decref(m);
    push_result_free(&r);
}

static void a_docker_v2_base_gives_a_docker_v2_image(void **state)
{
    fixture *f = *state;
    char base[256], repo[256];
    snprintf(base, sizeof(base), "%s/base/plain:1", f->source.host);
    snprintf(repo, sizeof(repo), "%s/team/plain-runner", f->target.host);
    push_result r = push(base, f->context, NULL, repo);
    if (r.rc)
        fail_msg("push failed: %s\n--- log ---\n%s", r.err.message, r.log);
    char type[256];
    json_t *m = pushed_manifest(f->target.host, "team/plain-runner", tag_of(r.ref), type);
    assert_string_equal(type, "application/vnd.docker.distribution.manifest.v2+json");
    json_t *layers = json_object_get(m, "layers");
    assert_string_equal(json_string_value(json_object_get(json_array_get(layers, 0), "digest")),
                        f->plain_layer);
    assert_string_equal(json_string_value(json_object_get(json_array_get(layers, 1), "mediaType")),
                        "application/vnd.docker.image.rootfs.diff.tar.gzip");
    assert_null(json_object_get(m, "annotations"));
    json_decref(m);
    push_result_free(&r);
}

static void a_missing_base_image_fails_clearly_and_pushes_nothing(void **state)
{
    fixture *f = *state;
    char base[256], repo[256];
    snprintf(base, sizeof(base), "%s/base/nope:1", f->source.host);
    snprintf(repo, sizeof(repo), "%s/team/carol-runner", f->target.host);
    push_result r = push(base, f->context, "linux/amd64", repo);
    assert_int_equal(r.rc, GC_EXIT_RUNTIME);
    assert_int_equal(r.err.http_status, 404);
    char want[512];
    snprintf(want, sizeof(want), "failed to pull base image \"%s\"", base);
    if (!strstr(r.err.message, want) || !strstr(r.err.message, "HTTP 404") ||
        !strstr(r.err.message, "NAME_UNKNOWN") || !strstr(r.err.message, "check the name"))
        fail_msg("unclear error: %s", r.err.message);
    push_result_free(&r);

    snprintf(base, sizeof(base), "%s/base/python:no-such-tag", f->source.host);
    r = push(base, f->context, "linux/amd64", repo);
    assert_int_equal(r.rc, GC_EXIT_RUNTIME);
    if (!strstr(r.err.message, "MANIFEST_UNKNOWN"))
        fail_msg("unclear error: %s", r.err.message);
    push_result_free(&r);
    /* Nothing reached the target. */
    assert_int_equal(status_of("GET", f->target.host, "/v2/team/carol-runner/tags/list"), 404);

    push_result bad = push("127.0.0.1:1/Base:1", f->context, "linux/amd64", repo);
    assert_int_equal(bad.rc, GC_EXIT_USAGE);
    assert_non_null(strstr(bad.err.message, "--base-image"));
    push_result_free(&bad);

    /* Nobody listens on port 1: a transport error names the registry. */
    push_result down = push("127.0.0.1:1/base:1", f->context, "linux/amd64", repo);
    assert_int_equal(down.rc, GC_EXIT_RUNTIME);
    assert_non_null(strstr(down.err.message, "cannot reach 127.0.0.1:1"));
    push_result_free(&down);
}

static void traces_show_requests_without_secrets(void **state)
{
    fixture *f = *state;
    char base[256], repo[256];
    snprintf(base, sizeof(base), "%s/base/python:3.11", f->source.host);
    snprintf(repo, sizeof(repo), "%s/team/dave-runner", f->target.host);
    push_result r = push(base, f->context, "linux/amd64", repo);
    if (r.rc)
        fail_msg("push failed: %s\n--- log ---\n%s", r.err.message, r.log);
    assert_non_null(strstr(r.log, "trace: GET http://"));
    assert_non_null(strstr(r.log, "trace: PUT http://"));
    /* Upload locations may carry signed state in their query; traces hide its value. */
    for (const char *p = r.log; (p = strstr(p, "_state=")); p++)
        assert_memory_equal(p, "_state=<redacted>", strlen("_state=<redacted>"));
    assert_null(strstr(r.log, "Authorization"));
    push_result_free(&r);
}

/* A Docker config holding (or not) the auth registry's credentials. */
static char *docker_config_dir(const fixture *f, bool with_credentials)
{
    char *dir = temp_dir();
    char *pair = gc_xasprintf("%s:%s", AUTH_USER, AUTH_PASSWORD);
    char *encoded = gc_base64_encode(pair, strlen(pair));
    char *text = with_credentials
                     ? gc_xasprintf("{\"auths\":{\"%s\":{\"auth\":\"%s\"}}}", f->auth.host, encoded)
                     : gc_xstrdup("{\"auths\":{}}");
    kube_test_put(dir, "config.json", text, 0644);
    free(text);
    free(encoded);
    free(pair);
    setenv("DOCKER_CONFIG", dir, 1);
    return dir;
}

/* Reads a manifest from the auth registry the way any client would: token first. */
static json_t *authorized_manifest(const fixture *f, const char *repo, const char *tag)
{
    char url[1024];
    snprintf(url, sizeof(url), "http://%s/token?service=authregistry", f->auth.host);
    CURL *c = curl_easy_init();
    gc_buf body;
    gc_buf_init(&body);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_USERPWD, AUTH_USER ":" AUTH_PASSWORD);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    json_t *token = json_loads(body.data, 0, NULL);
    char *auth = gc_xasprintf("Authorization: Bearer %s",
                              json_string_value(json_object_get(token, "token")));
    json_decref(token);
    gc_buf_reset(&body);
    snprintf(url, sizeof(url), "http://%s/v2/%s/manifests/%s", f->auth.host, repo, tag);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    h = curl_slist_append(h, "Accept: application/vnd.oci.image.manifest.v1+json");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_USERPWD, NULL);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    assert_int_equal(status, 200);
    json_t *m = json_loads(body.data, 0, NULL);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(auth);
    gc_buf_free(&body);
    return m;
}

static void follows_the_token_flow_with_docker_login_credentials(void **state)
{
    fixture *f = *state;
    char *config_dir = docker_config_dir(f, true);
    char base[256], repo[256];
    snprintf(base, sizeof(base), "%s/base/python:3.11", f->source.host);
    snprintf(repo, sizeof(repo), "%s/team/erin-runner", f->auth.host);
    push_result r = push(base, f->context, "linux/amd64", repo);
    if (r.rc)
        fail_msg("push failed: %s\n--- log ---\n%s", r.err.message, r.log);
    /* The token service was asked for push rights on the target repository. */
    char *registry_log = read_text(f->auth.log_path);
    assert_non_null(strstr(registry_log, "scopes=repository:team/erin-runner:pull,push"));
    free(registry_log);
    /* Neither the password nor any token shows in traces. */
    assert_null(strstr(r.log, AUTH_PASSWORD));
    assert_null(strstr(r.log, "Bearer"));
    assert_null(strstr(r.log, "Basic"));
    assert_true(line_with(r.log, "/token?", " -> 200 OK"));

    json_t *m = authorized_manifest(f, "team/erin-runner", tag_of(r.ref));
    assert_int_equal(json_array_size(json_object_get(m, "layers")), 2);
    json_decref(m);
    push_result_free(&r);
    unsetenv("DOCKER_CONFIG");
    remove_tree(config_dir);
    free(config_dir);
}

static void without_credentials_the_error_says_to_log_in(void **state)
{
    fixture *f = *state;
    char *config_dir = docker_config_dir(f, false);
    char base[256], repo[256];
    snprintf(base, sizeof(base), "%s/base/python:3.11", f->source.host);
    snprintf(repo, sizeof(repo), "%s/team/frank-runner", f->auth.host);
    push_result r = push(base, f->context, "linux/amd64", repo);
    assert_int_equal(r.rc, GC_EXIT_RUNTIME);
    assert_int_equal(r.err.http_status, 401);
    if (!strstr(r.err.message, "getting a token") || !strstr(r.err.message, "UNAUTHORIZED") ||
        !strstr(r.err.message, "docker login"))
        fail_msg("unclear error: %s", r.err.message);
    push_result_free(&r);
    unsetenv("DOCKER_CONFIG");
    remove_tree(config_dir);
    free(config_dir);
}

static void mounts_base_layers_within_the_reference_registry(void **state)
{
    fixture *f = *state;
    const char *host = f->reference.host;
    char base[256], repo[256], path[512];
    snprintf(base, sizeof(base), "%s/base/python:3.11", host);
    snprintf(repo, sizeof(repo), "%s/team/gina-runner", host);
    /* Here blobs belong to repositories: the target does not have the base layer yet. */
    snprintf(path, sizeof(path), "/v2/team/gina-runner/blobs/%s", f->amd64_layer);
    assert_int_equal(status_of("HEAD", host, path), 404);

    push_result r = push(base, f->context, "linux/amd64", repo);
    if (r.rc)
        fail_msg("push failed: %s\n--- log ---\n%s", r.err.message, r.log);
    /* Linked by a cross-repository mount (201 to the POST), not copied through this machine. */
    assert_true(line_with(r.log, "/v2/team/gina-runner/blobs/uploads/?mount=", " -> 201 Created"));
    assert_null(strstr(r.log, "copying base layer"));
    assert_int_equal(status_of("HEAD", host, path), 200);
    json_t *m = pushed_manifest(host, "team/gina-runner", tag_of(r.ref), NULL);
    json_t *layers = json_object_get(m, "layers");
    assert_int_equal(json_array_size(layers), 2);
    json_t *config = json_object_get(m, "config");
    size_t len;
    char *config_text = get_blob(host, "team/gina-runner",
                                 json_string_value(json_object_get(config, "digest")), &len);
    json_t *cfg = json_loadb(config_text, len, 0, NULL);
    check_layer_contents(host, "team/gina-runner",
                         json_string_value(json_object_get(json_array_get(layers, 1), "digest")),
                         json_string_value(json_array_get(
                             json_object_get(json_object_get(cfg, "rootfs"), "diff_ids"), 1)));
    json_decref(cfg);
    free(config_text);
    json_decref(m);
    push_result_free(&r);
}

static void pushes_into_the_reference_registry_from_another(void **state)
{
    fixture *f = *state;
    char base[256], repo[256];
    snprintf(base, sizeof(base), "%s/base/plain:1", f->source.host);
    snprintf(repo, sizeof(repo), "%s/team/hana-runner", f->reference.host);
    push_result r = push(base, f->context, "linux/amd64", repo);
    if (r.rc)
        fail_msg("push failed: %s\n--- log ---\n%s", r.err.message, r.log);
    assert_non_null(strstr(r.log, "copying base layer"));
    char type[256];
    json_t *m = pushed_manifest(f->reference.host, "team/hana-runner", tag_of(r.ref), type);
    assert_string_equal(type, "application/vnd.docker.distribution.manifest.v2+json");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(json_object_get(m, "layers"), 0), "digest")),
                        f->plain_layer);
    json_decref(m);
    push_result_free(&r);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pushes_across_registries_with_the_base_copied),
        cmocka_unit_test(picks_the_requested_platform_from_an_index),
        cmocka_unit_test(pushes_within_one_registry),
        cmocka_unit_test(a_docker_v2_base_gives_a_docker_v2_image),
        cmocka_unit_test(a_missing_base_image_fails_clearly_and_pushes_nothing),
        cmocka_unit_test(traces_show_requests_without_secrets),
        cmocka_unit_test(follows_the_token_flow_with_docker_login_credentials),
        cmocka_unit_test(without_credentials_the_error_says_to_log_in),
        cmocka_unit_test(mounts_base_layers_within_the_reference_registry),
        cmocka_unit_test(pushes_into_the_reference_registry_from_another),
    };
    int failed = cmocka_run_group_tests(tests, setup, teardown);
    curl_global_cleanup();
    return failed;
}
