/*
 * The golden tier for what a person reads: every command's output (text, and JSON where the
 * command has it) on one fixed cluster, compared byte for byte with a reviewed file in
 * tests/golden/human/. The cluster is tests/golden/human/snapshot.json, recorded objects the
 * scripted loopback server (tests/unit/support/test_server.py) serves to every request; gcloud is a
 * stand-in that knows one project and its clusters and fails everything else, as an offline
 * machine does. A change to what a person reads shows in review as a change to these files.
 *
 * Time: the snapshot writes "@AGO:N@" for "N seconds before the case started"; the test puts
 * the real stamp in before serving and the marker back in the output, so ages ("5m") and dates
 * compare the same on every run. The server's address, the temporary directory and the source
 * tree are put back as @SERVER@, @DIR@ and @SRC@ likewise.
 *
 * GCLUSTER_GOLDEN_REQUESTS=1 prints the requests each case made (what to add to the snapshot when
 * a command reads something new; the server answers what it lacks with 404).
 * GCLUSTER_UPDATE_GOLDEN=1 rewrites the expected files from what the binary prints (HACKING.md,
 * "A golden human output"); read every changed line before committing them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/buf.h"
#include "gcluster/sys.h"
#include "kube_test.h"
#include "run_cli.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define GOLDEN_DIR GCLUSTER_SOURCE_DIR "/tests/golden/human"
#define MAX_ARGS   16
#define MAX_STAMPS 64

typedef struct golden_case {
    const char *name;           /* tests/golden/human/NAME.txt */
    const char *file;           /* a file under @DIR@ the command writes, shown after stdout */
    const char *args[MAX_ARGS]; /* @DIR@ is the test's directory */
} golden_case;

static const golden_case cases[] = {
    {"cluster-describe", NULL, {"cluster", "describe"}},
    {"cluster-describe-json", NULL, {"cluster", "describe", "-o", "json"}},
    {"cluster-info", NULL, {"cluster", "info"}},
    {"cluster-info-json", NULL, {"cluster", "info", "-o", "json"}},
    {"cluster-list", NULL, {"cluster", "list"}},
    {"cluster-list-json", NULL, {"cluster", "list", "-o", "json"}},
    {"job-inspect-cluster", NULL, {"job", "inspect"}},
    {"job-inspect-cluster-file", "inspect.txt", {"job", "inspect", "-o", "@DIR@/inspect.txt"}},
    {"job-inspect-running", NULL, {"job", "inspect", "train"}},
    {"job-inspect-running-pods", NULL, {"job", "inspect", "train", "--pods"}},
    {"job-inspect-running-json", NULL, {"job", "inspect", "train", "--format", "json"}},
    {"job-inspect-queued", NULL, {"job", "inspect", "queued"}},
    {"job-inspect-failed", NULL, {"job", "inspect", "failed"}},
    {"job-inspect-file", "failed.txt", {"job", "inspect", "failed", "-o", "@DIR@/failed.txt"}},
    {"job-list", NULL, {"job", "list"}},
    {"job-list-wide", NULL, {"job", "list", "-o", "wide"}},
    {"job-list-json", NULL, {"job", "list", "-o", "json"}},
    {"job-why-queued", NULL, {"job", "why", "queued"}},
    {"job-why-failed", NULL, {"job", "why", "failed", "--evidence"}},
    {"job-why-running-json", NULL, {"job", "why", "train", "-o", "json"}},
    {"job-wait-done", NULL, {"job", "wait", "done", "--for", "succeeded", "--timeout", "0"}},
    {"job-wait-json",
     NULL,
     {"job", "wait", "done", "train", "--for", "running", "--timeout", "0", "-o", "json"}},
    {"job-cancel", NULL, {"job", "cancel", "done"}},
    {"job-cancel-json", NULL, {"job", "cancel", "done", "-o", "json"}},
    {"job-logs", NULL, {"job", "logs", "train"}},
    {"job-logs-failed", NULL, {"job", "logs", "failed"}},
    {"job-submit-dry-run-out",
     NULL,
     {"job", "submit", "--name", "golden", "--compute-type", "v6e-16", "--command",
      "python3 train.py", "--image", "us-docker.pkg.dev/p/r/i:1", "--pathways",
      "--pathways-gcs-location", "gs://bucket/tmp", "--dry-run-out", "-"}},
    {"job-submit-dry-run-server",
     NULL,
     {"job", "submit", "--name", "golden", "--compute-type", "v6e-16", "--command",
      "python3 train.py", "--image", "us-docker.pkg.dev/p/r/i:1", "--pathways",
      "--pathways-gcs-location", "gs://bucket/tmp", "--dry-run", "server"}},
    {"job-submit",
     NULL,
     {"job", "submit", "--name", "golden", "--compute-type", "v6e-16", "--command",
      "python3 train.py", "--image", "us-docker.pkg.dev/p/r/i:1", "--pathways",
      "--pathways-gcs-location", "gs://bucket/tmp"}},
    {"job-config-list", NULL, {"job", "config", "list"}},
    {"job-inspect-manifest", NULL, {"job", "inspect", "train", "--manifest"}},
    {"job-list-all-namespaces", NULL, {"job", "list", "-A"}},
    {"job-list-yaml", NULL, {"job", "list", "-o", "yaml"}},
    {"cluster-describe-yaml", NULL, {"cluster", "describe", "-o", "yaml"}},
    {"cluster-volume", NULL, {"cluster", "volume"}},
    {"cluster-volume-json", NULL, {"cluster", "volume", "-o", "json"}},
    {"help", NULL, {"--help"}},
    {"help-job", NULL, {"job", "--help"}},
    {"help-cluster", NULL, {"cluster", "--help"}},
    {"deploy-plan",
     NULL,
     {"deploy", GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml", "--plan"}},
    {"deploy-plan-json",
     NULL,
     {"deploy", GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml", "--plan", "-o", "json"}},
    {"destroy-plan",
     NULL,
     {"destroy", GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml", "--plan"}},
    {"destroy-plan-json",
     NULL,
     {"destroy", GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml", "--plan", "-o",
      "json"}},
    {"deploy-apply",
     NULL,
     {"deploy", GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml", "--auto-approve"}},
    {"destroy-apply",
     NULL,
     {"destroy", GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml", "--auto-approve"}},
    {"job-submit-json",
     NULL,
     {"job", "submit", "--name", "golden", "--compute-type", "v6e-16", "--command",
      "python3 train.py", "--image", "us-docker.pkg.dev/p/r/i:1", "--pathways",
      "--pathways-gcs-location", "gs://bucket/tmp", "--output", "json"}},
    {"job-connect-queued", NULL, {"job", "connect", "queued", "--wait", "5s", "--local-port", "0"}},
    {"job-connect-failed", NULL, {"job", "connect", "failed", "--wait", "2s", "--local-port", "0"}},
    {"job-template-extract", NULL, {"job", "gke-template-extract", "--output-dir", "@DIR@/t"}},
    {"job-template-extract-refused",
     NULL,
     {"job", "gke-template-extract", "--cluster", "tpu-cluster"}},
    {"job-config-set-refused", NULL, {"job", "config", "set", "project", "p", "--namespace", "x"}},
    /* Last: it stores a default every later case would read. */
    {"job-config-set", NULL, {"job", "config", "set", "project", "proj-2"}},
};
#define CASE_COUNT (sizeof(cases) / sizeof(*cases))

static kube_test_env env;
static char kubeconfig[512];
/* The stamps the snapshot's markers became: stamps[i] is written for markers[i]. */
static char markers[MAX_STAMPS][32], stamps[MAX_STAMPS][32];
static size_t stamp_count;

/* Replaces every `from` in `text` with `to`. */
static void replace_all(gc_buf *text, const char *from, const char *to)
{
    if (!*from || !text->len)
        return;
    gc_buf out;
    gc_buf_init(&out);
    const char *p = text->data, *end = text->data + text->len, *hit;
    size_t from_len = strlen(from);
    while ((hit = memmem(p, (size_t)(end - p), from, from_len)) != NULL) {
        gc_buf_append(&out, p, (size_t)(hit - p));
        gc_buf_puts(&out, to);
        p = hit + from_len;
    }
    gc_buf_append(&out, p, (size_t)(end - p));
    gc_buf_free(text);
    *text = out;
}

/* The snapshot with its "@AGO:N@" markers made stamps, each answer kept for every request. */
static char *load_snapshot(void)
{
    gc_buf text;
    gc_buf_init(&text);
    if (read_file(GOLDEN_DIR "/snapshot.json", &text) != 0)
        return NULL;
    time_t now = time(NULL);
    const char *p;
    while ((p = strstr(text.data, "@AGO:")) != NULL) {
        long ago = strtol(p + 5, NULL, 10);
        const char *close = strchr(p + 5, '@');
        if (!close || stamp_count == MAX_STAMPS || (size_t)(close - p + 1) >= sizeof(*markers))
            return NULL;
        snprintf(markers[stamp_count], sizeof(*markers), "%.*s", (int)(close - p + 1), p);
        time_t t = now - ago;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(stamps[stamp_count], sizeof(*stamps), "%Y-%m-%dT%H:%M:%SZ", &tm);
        replace_all(&text, markers[stamp_count], stamps[stamp_count]);
        stamp_count++;
    }
    json_t *doc = json_loads(text.data, 0, NULL);
    gc_buf_free(&text);
    if (!doc)
        return NULL;
    const char *key;
    json_t *answers;
    json_object_foreach(doc, key, answers)
    {
        size_t i;
        json_t *answer;
        json_array_foreach(answers, i, answer) json_object_set_new(answer, "repeat", json_true());
    }
    char *script = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    return script;
}

/* gcloud as on a machine that knows project proj-1 and its two clusters and reaches nothing
 * else: every other command fails as gcloud does without credentials. */
static void write_fake_gcloud(void)
{
    kube_test_put(env.tmp, "bin/gcloud",
                  "#!/bin/sh\n"
                  "if [ \"$1 $2 $3\" = 'config get-value project' ]; then echo proj-1; exit 0; fi\n"
                  "if [ \"$1 $2 $3 $4 $5\" = 'container clusters list --project proj-1' ]; then\n"
                  "  echo '[{\"name\": \"tpu-cluster\", \"location\": \"us-east5\", \"status\": "
                  "\"RUNNING\", \"currentMasterVersion\": \"1.35.1-gke.100\", "
                  "\"currentNodeCount\": 6}, {\"name\": \"cpu\", \"location\": \"us-central1-a\", "
                  "\"status\": \"PROVISIONING\"}]'\n"
                  "  exit 0\nfi\n"
                  "echo 'ERROR: (gcloud) You do not currently have an active account selected.' "
                  ">&2\nexit 1\n",
                  0755);
}

static int setup(void **state)
{
    (void)state;
    if (!kube_test_env_start(&env, GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py"))
        return -1;
    snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", env.tmp);
    kube_test_write_kubeconfig(kubeconfig, &env.server, env.pki.ca, "ns1");
    /* HOME, where job config set stores the defaults: it exists, as a user's does. */
    char home[600];
    snprintf(home, sizeof(home), "%s/home", env.tmp);
    if (mkdir(home, 0700) != 0)
        return -1;
    write_fake_gcloud();
    return 0;
}

/* The snapshot served afresh for each case, its stamps counted from now: ages shown in minutes
 * ("116m") then do not move with how long the earlier cases took on a loaded machine. */
static bool serve_snapshot(void)
{
    stamp_count = 0;
    char *script = load_snapshot();
    bool ok = script && kube_test_server_reset(&env.server) &&
              kube_test_server_script(&env.server, script);
    free(script);
    return ok;
}

static int teardown(void **state)
{
    (void)state;
    kube_test_env_stop(&env);
    return 0;
}

/* What the user saw: the command, stdout, the file it wrote, stderr and the exit code, with the
 * run's own stamps, port and directory put back as markers. */
static void transcript(const golden_case *c, gc_buf *out)
{
    char kube_env[600], path_env[600], home_env[600];
    snprintf(kube_env, sizeof(kube_env), "KUBECONFIG=%s", kubeconfig);
    snprintf(path_env, sizeof(path_env), "PATH=%s/bin:/usr/bin:/bin", env.tmp);
    snprintf(home_env, sizeof(home_env), "HOME=%s/home", env.tmp);
    const char *envp[] = {kube_env, path_env, home_env, "TZ=UTC", "LC_ALL=C", NULL};
    const char *args[MAX_ARGS + 1] = {0};
    char *owned[MAX_ARGS] = {0};
    gc_buf_puts(out, "$ gcluster");
    for (size_t i = 0; i < MAX_ARGS && c->args[i]; i++) {
        gc_buf_printf(out, strchr(c->args[i], ' ') ? " '%s'" : " %s", c->args[i]);
        if (strstr(c->args[i], "@DIR@")) {
            gc_buf arg;
            gc_buf_init(&arg);
            gc_buf_puts(&arg, c->args[i]);
            replace_all(&arg, "@DIR@", env.tmp);
            owned[i] = gc_xstrdup(arg.data);
            gc_buf_free(&arg);
        }
        args[i] = owned[i] ? owned[i] : c->args[i];
    }
    gc_buf_putc(out, '\n');
    cli_result r;
    run_cli(&r, args, envp);
    if (getenv("GCLUSTER_GOLDEN_REQUESTS")) {
        json_t *log = kube_test_server_log(&env.server);
        size_t k;
        json_t *e;
        json_array_foreach(log, k, e)
            fprintf(stderr, "REQ %s %s %s\n", json_string_value(json_object_get(e, "method")),
                    json_string_value(json_object_get(e, "path")),
                    json_string_value(json_object_get(e, "query")));
        json_decref(log);
    }
    gc_buf_append(out, r.out.data, r.out.len);
    if (c->file) {
        char *path = gc_xasprintf("%s/%s", env.tmp, c->file);
        gc_buf written;
        gc_buf_init(&written);
        gc_buf_printf(out, "--- file @DIR@/%s\n", c->file);
        if (read_file(path, &written) == 0)
            gc_buf_append(out, written.data, written.len);
        else
            gc_buf_puts(out, "(not written)\n");
        gc_buf_free(&written);
        remove(path);
        free(path);
    }
    if (r.err.len) {
        gc_buf_puts(out, "--- stderr\n");
        gc_buf_append(out, r.err.data, r.err.len);
    }
    gc_buf_printf(out, "--- exit %d\n", r.exit_code);
    cli_result_free(&r);
    for (size_t i = 0; i < MAX_ARGS; i++)
        free(owned[i]);
    for (size_t i = 0; i < stamp_count; i++)
        replace_all(out, stamps[i], markers[i]);
    replace_all(out, env.server.url, "@SERVER@");
    replace_all(out, env.tmp, "@DIR@");
    replace_all(out, GCLUSTER_SOURCE_DIR, "@SRC@");
}

static void golden(void **state)
{
    const golden_case *c = *state;
    if (!serve_snapshot())
        fail_msg("%s: cannot serve %s/snapshot.json", c->name, GOLDEN_DIR);
    gc_buf got;
    gc_buf_init(&got);
    transcript(c, &got);
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.txt", GOLDEN_DIR, c->name);
    if (getenv("GCLUSTER_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fwrite(got.data, 1, got.len, f);
        fclose(f);
    }
    /* "\x0a" is a newline the layout meant that went through the terminal escaping. */
    if (strstr(got.data, "\\x0a"))
        fail_msg("%s prints an escaped newline:\n%s", c->name, got.data);
    gc_buf want;
    gc_buf_init(&want);
    if (read_file(path, &want) != 0)
        fail_msg("%s: missing expected file %s (run with GCLUSTER_UPDATE_GOLDEN=1)", c->name, path);
    if (want.len != got.len || memcmp(want.data, got.data, want.len) != 0)
        fail_msg("%s: output differs from %s; if the change is intended, regenerate with "
                 "GCLUSTER_UPDATE_GOLDEN=1 and review the diff\n--- got ---\n%s",
                 c->name, path, got.data);
    gc_buf_free(&want);
    gc_buf_free(&got);
}

/* An expected file without its case is never compared: it would go stale unnoticed. */
static void every_file_has_a_case(void **state)
{
    (void)state;
    DIR *dir = opendir(GOLDEN_DIR);
    assert_non_null(dir);
    struct dirent *e;
    size_t files = 0;
    while ((e = readdir(dir)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".txt") != 0)
            continue;
        files++;
        bool found = false;
        for (size_t i = 0; i < CASE_COUNT && !found; i++)
            found = strlen(cases[i].name) == len - 4 && !strncmp(cases[i].name, e->d_name, len - 4);
        if (!found)
            fail_msg("%s/%s has no case in tests/golden/test_golden_human.c", GOLDEN_DIR,
                     e->d_name);
    }
    closedir(dir);
    assert_int_equal(files, CASE_COUNT);
}

int main(void)
{
    struct CMUnitTest tests[CASE_COUNT + 1];
    for (size_t i = 0; i < CASE_COUNT; i++)
        tests[i] = (struct CMUnitTest){
            .name = cases[i].name, .test_func = golden, .initial_state = (void *)&cases[i]};
    tests[CASE_COUNT] =
        (struct CMUnitTest){.name = "every_file_has_a_case", .test_func = every_file_has_a_case};
    return _cmocka_run_group_tests("golden_human", tests, CASE_COUNT + 1, setup, teardown);
}
