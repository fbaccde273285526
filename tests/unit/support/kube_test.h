/*
 * Helpers for the kube client's tests: temporary directories, a throwaway PKI made with the
 * openssl CLI, and the scripted loopback HTTPS server beside this file (test_server.py).
 * Every wait here is bounded, and everything listens on 127.0.0.1 only.
 */
#ifndef GCLUSTER_TEST_KUBE_TEST_H
#define GCLUSTER_TEST_KUBE_TEST_H

#include "gcluster/events.h"
#include "gcluster/kube.h"

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/* A fresh directory under $TMPDIR (or /tmp). */
char *kube_test_tmpdir(void);
/* Removes `dir` and everything in it, then frees the string. */
void kube_test_rmtree(char *dir);

void kube_test_write(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes `text` to dir/rel with permissions `mode`, making the directories on the way. */
void kube_test_put(const char *dir, const char *rel, const char *text, mode_t mode);
/* The whole file, NUL-terminated, or NULL. Caller frees. */
char *kube_test_read(const char *path);
/* A file's content in base64, for *-data fields. Caller frees. */
char *kube_test_base64_file(const char *path);

/* Runs a program (stdout and stderr to /dev/null); its exit status, or -1 on failure or after
 * timeout_ms. */
int kube_test_run(char *const argv[], int timeout_ms);

/* The counter file a fake exec plugin increments, or 0. */
int kube_test_count(const char *path);

typedef struct kube_test_pki {
    char *ca;          /* the CA the server's and the client's certificates come from */
    char *other_ca;    /* an unrelated CA, for verification failures */
    char *server_cert; /* SANs: IP 127.0.0.1, DNS localhost and kube.test.internal */
    char *server_key;
    char *client_cert; /* CN test-user */
    char *client_key;
} kube_test_pki;

bool kube_test_make_pki(const char *dir, kube_test_pki *pki);
void kube_test_pki_free(kube_test_pki *pki);

typedef struct kube_test_server {
    pid_t pid;
    int port;
    char url[64]; /* https://127.0.0.1:<port> */
    char *ca;
} kube_test_server;

bool kube_test_server_start_script(kube_test_server *s, const kube_test_pki *pki, const char *dir,
                                   const char *script);
#define kube_test_server_start(s, pki, dir)                                                        \
    kube_test_server_start_script(s, pki, dir,                                                     \
                                  GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py")
void kube_test_server_stop(kube_test_server *s);
/* Writes a kubeconfig whose current context talks to `s` (trusting `ca`) with token "tok", in
 * namespace `ns` (NULL: none set). */
void kube_test_write_kubeconfig(const char *path, const kube_test_server *s, const char *ca,
                                const char *ns);
/* Writes DIR/kubeconfig for `s` (namespace ns1, a bearer token) and opens a client on it that
 * reports to `events` (may be NULL) at `verbose`. 0, or what gc_kube_open returned. */
int kube_test_open_client(const kube_test_server *s, const kube_test_pki *pki, const char *dir,
                          const gc_events *events, int verbose, gc_kube **out);
/* Queues answers: `json` maps "METHOD /path" to a list of answers (see test_server.py). */
bool kube_test_server_script(kube_test_server *s, const char *json);
/* The same, with ' written for " so scripts in C strings stay readable. */
bool kube_test_server_script_quoted(kube_test_server *s, const char *text);
/* Forgets the scripts and the log (mid-test: the client's connections stay usable). */
bool kube_test_server_reset(kube_test_server *s);
/* The same before a test opens a new client: connections of earlier clients are closed unheard,
 * so a request the last test's client sent just before it closed cannot land in this test's
 * log or take its answers. */
bool kube_test_server_reset_for_new_client(kube_test_server *s);
/* The requests the server received, oldest first. Caller decrefs. */
json_t *kube_test_server_log(kube_test_server *s);
/* The same, once the server has recorded who ended the streamed answer to request `i`
 * ("ended_by"): it notices a client hanging up a moment after the client did, so the log is
 * read again until it says (at most 5 s; after that, as it is). Caller decrefs. */
json_t *kube_test_server_log_ended(kube_test_server *s, size_t i);

/* What a test program shares: a temporary directory, a PKI and a running scripted server. The
 * one place they are set up (the test programs and job_test.c call it, not copies of it). */
typedef struct kube_test_env {
    char *tmp;
    kube_test_pki pki;
    kube_test_server server;
} kube_test_env;

/* Fills `env` with a fresh directory, a PKI and `script` (a test_server.py) running; false when
 * any of it failed (kube_test_env_stop still cleans up). */
bool kube_test_env_start(kube_test_env *env, const char *script);
void kube_test_env_stop(kube_test_env *env);

/* The same as cmocka group state (each test gets it in *state): kube_test_env_setup starts one
 * on tests/unit/support/test_server.py; kube_test_env_setup_dir makes only the directory.
 * kube_test_env_teardown undoes either. */

int kube_test_env_setup(void **state);
int kube_test_env_setup_dir(void **state);
int kube_test_env_teardown(void **state);
/* A test's setup, before it opens its client: the server forgets earlier scripts, requests and
 * clients (kube_test_server_reset_for_new_client). */
int kube_test_env_reset(void **state);
/* Queues answers (kube_test_server_script_quoted); a script the server refuses fails the test. */
void kube_test_env_script(kube_test_env *env, const char *text);

/* A port on 127.0.0.1 that nothing listens on (bound, then closed). */
int kube_test_closed_port(void);

/* Whether `haystack` contains `needle`; NULL haystack → false. */
bool kube_test_contains(const char *haystack, const char *needle);

/* The current UTC time as RFC 3339, offset by `delta` seconds. */
void kube_test_rfc3339(long delta, char out[32]);

#endif
