/*
 * kubeconfig reading, merging and cluster selection, including malformed files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/kube.h"
#include "kube/internal.h"
#include "kube_test.h"
#include "test_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmp;

static int setup(void **state)
{
    (void)state;
    tmp = kube_test_tmpdir();
    /* Never read the real ~/.kube/config or run the real gcloud. */
    setenv("HOME", tmp, 1);
    unsetenv("KUBECONFIG");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kube_test_rmtree(tmp);
    return 0;
}

static int reset_env(void **state)
{
    (void)state;
    unsetenv("KUBECONFIG");
    return 0;
}

/* Writes tmp/<name> and returns its path (static storage, valid until the next call). */
static const char *file(const char *name, const char *text)
{
    static char path[4][512];
    static int slot;
    char *p = path[slot++ % 4];
    snprintf(p, 512, "%s/%s", tmp, name);
    kube_test_write(p, "%s", text);
    return p;
}

static const char *const full_config =
    "apiVersion: v1\n"
    "kind: Config\n"
    "current-context: dev\n"
    "clusters:\n"
    "- name: c-data\n"
    "  cluster:\n"
    "    server: https://10.0.0.1:6443\n"
    "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n"
    "    tls-server-name: kubernetes.default\n"
    "    proxy-url: http://proxy.example:3128\n"
    "    extensions:\n"
    "    - name: client.authentication.k8s.io/exec\n"
    "      extension: {audience: gke}\n"
    "- name: c-file\n"
    "  cluster:\n"
    "    server: https://10.0.0.2\n"
    "    certificate-authority: certs/ca.pem\n"
    "- name: c-insecure\n"
    "  cluster: {server: 'https://10.0.0.3', insecure-skip-tls-verify: true}\n"
    "users:\n"
    "- name: u-token\n"
    "  user: {token: abc123}\n"
    "- name: u-tokenfile\n"
    "  user: {tokenFile: token.txt}\n"
    "- name: u-certdata\n"
    "  user:\n"
    "    client-certificate-data: Y2VydA==\n"
    "    client-key-data: a2V5\n"
    "- name: u-certfile\n"
    "  user: {client-certificate: /abs/client.pem, client-key: keys/client.key}\n"
    "- name: u-basic\n"
    "  user: {username: admin, password: hunter2}\n"
    "- name: u-exec\n"
    "  user:\n"
    "    exec:\n"
    "      apiVersion: client.authentication.k8s.io/v1\n"
    "      command: ./bin/plugin\n"
    "      args: [--flag, value]\n"
    "      env: [{name: A, value: one}, {name: B, value: '2'}]\n"
    "      installHint: install it\n"
    "      provideClusterInfo: true\n"
    "      interactiveMode: Never\n"
    "contexts:\n"
    "- name: dev\n"
    "  context: {cluster: c-data, user: u-token, namespace: team-a}\n"
    "- name: files\n"
    "  context: {cluster: c-file, user: u-certfile}\n";

static void test_parses_every_field(void **state)
{
    (void)state;
    const char *path = file("full.yaml", full_config);
    kube_config cfg;
    gc_error err = {0};
    assert_int_equal(kube_config_load_files(&path, 1, true, &cfg, &err), 0);
    assert_int_equal(cfg.cluster_count, 3);
    assert_int_equal(cfg.user_count, 6);
    assert_int_equal(cfg.context_count, 2);
    assert_string_equal(cfg.current_context, "dev");

    const kube_cluster *c = kube_config_cluster(&cfg, "c-data");
    assert_non_null(c);
    assert_string_equal(c->server, "https://10.0.0.1:6443");
    assert_string_equal((const char *)c->ca_data.data, "-----BEGIN CERTIFICATE-----\n");
    assert_string_equal(c->tls_server_name, "kubernetes.default");
    assert_string_equal(c->proxy_url, "http://proxy.example:3128");
    assert_string_equal(json_string_value(json_object_get(c->exec_config, "audience")), "gke");
    assert_false(c->insecure_skip_tls_verify);
    assert_true(kube_config_cluster(&cfg, "c-insecure")->insecure_skip_tls_verify);

    const kube_user *u = kube_config_user(&cfg, "u-certdata");
    assert_memory_equal(u->client_certificate_data.data, "cert", 4);
    assert_memory_equal(u->client_key_data.data, "key", 3);
    assert_string_equal(kube_config_user(&cfg, "u-token")->token, "abc123");
    assert_string_equal(kube_config_user(&cfg, "u-basic")->password, "hunter2");

    const kube_exec_config *x = kube_config_user(&cfg, "u-exec")->exec;
    assert_non_null(x);
    assert_string_equal(x->api_version, "client.authentication.k8s.io/v1");
    assert_int_equal(x->arg_count, 2);
    assert_string_equal(x->args[1], "value");
    assert_int_equal(x->env_count, 2);
    assert_string_equal(x->env[0], "A=one");
    assert_string_equal(x->env[1], "B=2");
    assert_string_equal(x->install_hint, "install it");
    assert_true(x->provide_cluster_info);
    assert_int_equal(x->interactive_mode, KUBE_INTERACTIVE_NEVER);

    const kube_context *ctx = kube_config_context(&cfg, "dev");
    assert_string_equal(ctx->cluster, "c-data");
    assert_string_equal(ctx->user, "u-token");
    assert_string_equal(ctx->ns, "team-a");
    assert_true(kube_test_contains(ctx->id.where, "full.yaml:"));
    kube_config_free(&cfg);
}

/* client-go resolves relative paths against the directory of the file that names them. */
static void test_relative_paths_follow_the_file(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof(dir), "%s/sub", tmp);
    mkdir(dir, 0700);
    const char *path = file("sub/rel.yaml", full_config);
    kube_config cfg;
    gc_error err = {0};
    assert_int_equal(kube_config_load_files(&path, 1, true, &cfg, &err), 0);
    char want[700];
    snprintf(want, sizeof(want), "%s/sub/certs/ca.pem", tmp);
    assert_string_equal(kube_config_cluster(&cfg, "c-file")->ca_file, want);
    snprintf(want, sizeof(want), "%s/sub/token.txt", tmp);
    assert_string_equal(kube_config_user(&cfg, "u-tokenfile")->token_file, want);
    snprintf(want, sizeof(want), "%s/sub/keys/client.key", tmp);
    assert_string_equal(kube_config_user(&cfg, "u-certfile")->client_key, want);
    assert_string_equal(kube_config_user(&cfg, "u-certfile")->client_certificate,
                        "/abs/client.pem");
    snprintf(want, sizeof(want), "%s/sub/./bin/plugin", tmp);
    assert_string_equal(kube_config_user(&cfg, "u-exec")->exec->command, want);
    kube_config_free(&cfg);

    /* A bare command name is looked up on PATH later, not made relative. */
    path = file("sub/bare.yaml", "users:\n- name: u\n  user:\n    exec: {command: gke-gcloud-auth-"
                                 "plugin, apiVersion: client.authentication.k8s.io/v1beta1}\n");
    assert_int_equal(kube_config_load_files(&path, 1, true, &cfg, &err), 0);
    assert_string_equal(kube_config_user(&cfg, "u")->exec->command, "gke-gcloud-auth-plugin");
    kube_config_free(&cfg);
}

static void test_merges_kubeconfig_list_first_wins(void **state)
{
    (void)state;
    char a[600], b[600], missing[600], list[2600];
    snprintf(a, sizeof(a), "%s",
             file("a.yaml", "clusters:\n- name: shared\n  cluster: {server: "
                            "https://a}\ncontexts:\n- name: shared\n  context:"
                            " {cluster: shared, namespace: from-a}\n"));
    snprintf(b, sizeof(b), "%s",
             file("b.yaml", "current-context: only-b\nclusters:\n- name: shared\n  cluster: "
                            "{server: https://b}\n- name: bc\n  cluster: {server: https://bc}\n"
                            "contexts:\n- name: shared\n  context: {cluster: shared, namespace: "
                            "from-b}\n- name: only-b\n  context: {cluster: bc}\n"));
    snprintf(missing, sizeof(missing), "%s/does-not-exist.yaml", tmp);
    snprintf(list, sizeof(list), "%s::%s:%s:%s", missing, a, b, a);
    setenv("KUBECONFIG", list, 1);

    kube_config cfg;
    gc_error err = {0};
    assert_int_equal(kube_config_load(NULL, &cfg, &err), 0);
    assert_int_equal(cfg.file_count, 2); /* missing skipped, duplicate read once */
    assert_string_equal(kube_config_cluster(&cfg, "shared")->server, "https://a");
    assert_string_equal(kube_config_context(&cfg, "shared")->ns, "from-a");
    assert_string_equal(kube_config_cluster(&cfg, "bc")->server, "https://bc");
    assert_string_equal(cfg.current_context, "only-b"); /* a does not set one */
    kube_config_free(&cfg);

    gc_kube_options opts = {0};
    gc_kube *k;
    assert_int_equal(gc_kube_open(&opts, &k, &err), 0);
    assert_string_equal(kube_context_name(k), "only-b");
    assert_string_equal(kube_server(k), "https://bc");
    gc_kube_close(k);

    /* --kubeconfig replaces $KUBECONFIG entirely. */
    opts.kubeconfig = b;
    opts.context = "shared";
    assert_int_equal(gc_kube_open(&opts, &k, &err), 0);
    assert_string_equal(kube_server(k), "https://b");
    assert_string_equal(gc_kube_namespace(k), "from-b");
    gc_kube_close(k);

    /* A missing --kubeconfig is an error, not an empty configuration. */
    opts.kubeconfig = missing;
    assert_int_equal(gc_kube_open(&opts, &k, &err), GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "does-not-exist.yaml"));
    assert_null(k);
}

static const char *const gke_config =
    "current-context: plain\n"
    "clusters:\n"
    "- {name: c1, cluster: {server: 'https://one'}}\n"
    "- {name: c2, cluster: {server: 'https://two'}}\n"
    "- {name: c3, cluster: {server: 'https://three'}}\n"
    "contexts:\n"
    "- {name: gke_proj-a_us-east5_train, context: {cluster: c1, namespace: ml}}\n"
    "- {name: gke_proj-b_us-east5_train, context: {cluster: c2}}\n"
    "- {name: gke_proj-a_europe-west4_solo, context: {cluster: c3}}\n"
    "- {name: plain, context: {cluster: c3}}\n";

static int open_with(const char *path, gc_kube_options opts, gc_kube **k, gc_error *err)
{
    opts.kubeconfig = path;
    return gc_kube_open(&opts, k, err);
}

static void test_selects_gke_context(void **state)
{
    (void)state;
    const char *path = file("gke.yaml", gke_config);
    gc_kube *k;
    gc_error err = {0};

    assert_int_equal(open_with(path,
                               (gc_kube_options){
                                   .cluster = "train", .location = "us-east5", .project = "proj-b"},
                               &k, &err),
                     0);
    assert_string_equal(kube_context_name(k), "gke_proj-b_us-east5_train");
    assert_string_equal(gc_kube_namespace(k), "default");
    gc_kube_close(k);

    /* Without --project: the one context ending in _<location>_<cluster>. */
    assert_int_equal(
        open_with(path, (gc_kube_options){.cluster = "solo", .location = "europe-west4"}, &k, &err),
        0);
    assert_string_equal(kube_context_name(k), "gke_proj-a_europe-west4_solo");
    gc_kube_close(k);

    /* Two projects have it: an error that lists both and names --project. */
    assert_int_equal(
        open_with(path, (gc_kube_options){.cluster = "train", .location = "us-east5"}, &k, &err),
        GC_EXIT_USAGE);
    assert_null(k);
    assert_true(kube_test_contains(err.message, "gke_proj-a_us-east5_train"));
    assert_true(kube_test_contains(err.message, "gke_proj-b_us-east5_train"));
    assert_true(kube_test_contains(err.message, "--project"));

    /* --context wins over everything; --namespace over the context's namespace. */
    assert_int_equal(open_with(path,
                               (gc_kube_options){.context = "gke_proj-a_us-east5_train",
                                                 .cluster = "solo",
                                                 .ns = "override"},
                               &k, &err),
                     0);
    assert_string_equal(kube_context_name(k), "gke_proj-a_us-east5_train");
    assert_string_equal(gc_kube_namespace(k), "override");
    gc_kube_close(k);
    assert_int_equal(
        open_with(path, (gc_kube_options){.context = "gke_proj-a_us-east5_train"}, &k, &err), 0);
    assert_string_equal(gc_kube_namespace(k), "ml");
    gc_kube_close(k);

    /* Nothing given: current-context. */
    assert_int_equal(open_with(path, (gc_kube_options){0}, &k, &err), 0);
    assert_string_equal(kube_context_name(k), "plain");
    gc_kube_close(k);
}

static void test_selection_errors_name_the_fix(void **state)
{
    (void)state;
    const char *path = file("gke2.yaml", gke_config);
    gc_kube *k;
    gc_error err = {0};

    assert_int_equal(open_with(path, (gc_kube_options){.context = "nope"}, &k, &err),
                     GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "context \"nope\" (--context) is not defined"));
    assert_true(kube_test_contains(err.message, "plain")); /* lists what exists */

    assert_int_equal(open_with(path, (gc_kube_options){.cluster = "train"}, &k, &err),
                     GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "--cluster needs --location"));
    assert_int_equal(open_with(path, (gc_kube_options){.location = "us-east5"}, &k, &err),
                     GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "--location needs --cluster"));

    /* No such cluster, gcloud not allowed: never a silent fallback to current-context. */
    assert_int_equal(
        open_with(path, (gc_kube_options){.cluster = "ghost", .location = "mars1", .project = "p"},
                  &k, &err),
        GC_EXIT_USAGE);
    assert_null(k);
    assert_true(kube_test_contains(err.message, "gke_p_mars1_ghost"));
    assert_true(kube_test_contains(err.message, "gcloud container clusters get-credentials "
                                                "ghost --location mars1 --project p"));
    assert_true(kube_test_contains(err.message, "--context"));

    const char *nocur = file("nocur.yaml", "clusters: []\ncontexts:\n- {name: x, context: "
                                           "{cluster: y}}\n");
    assert_int_equal(open_with(nocur, (gc_kube_options){0}, &k, &err), GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "no current-context"));
    assert_true(kube_test_contains(err.message, "--cluster and --location"));

    const char *badcur = file("badcur.yaml", "current-context: gone\ncontexts: []\n");
    assert_int_equal(open_with(badcur, (gc_kube_options){0}, &k, &err), GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "current-context \"gone\" is not defined"));
}

static void test_no_kubeconfig_at_all(void **state)
{
    (void)state;
    gc_kube *k;
    gc_error err = {0};
    gc_kube_options opts = {0};
    assert_int_equal(gc_kube_open(&opts, &k, &err), GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "no kubeconfig found"));
    assert_true(kube_test_contains(err.message, "~/.kube/config does not exist"));
}

/* A dangling reference is reported when the context is used, with file and line. */
static void test_dangling_references(void **state)
{
    (void)state;
    const char *path =
        file("dangling.yaml", "clusters:\n- {name: real, cluster: {server: 'https://x'}}\n"
                              "- {name: serverless, cluster: {}}\n"
                              "contexts:\n- {name: no-cluster, context: {cluster: ghost}}\n"
                              "- {name: no-user, context: {cluster: real, user: nobody}}\n"
                              "- {name: no-server, context: {cluster: serverless}}\n"
                              "- {name: empty, context: {}}\n"
                              "- {name: anonymous, context: {cluster: real}}\n");
    gc_kube *k;
    gc_error err = {0};
    assert_int_equal(open_with(path, (gc_kube_options){.context = "no-cluster"}, &k, &err),
                     GC_EXIT_USAGE);
    if (!kube_test_contains(err.message, "dangling.yaml:5:3: context \"no-cluster\""))
        fail_msg("%s", err.message);
    assert_true(kube_test_contains(err.message, "refers to cluster \"ghost\", which is not "
                                                "defined"));
    assert_int_equal(open_with(path, (gc_kube_options){.context = "no-user"}, &k, &err),
                     GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "refers to user \"nobody\""));
    assert_int_equal(open_with(path, (gc_kube_options){.context = "no-server"}, &k, &err),
                     GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "cluster \"serverless\" has no server"));
    assert_int_equal(open_with(path, (gc_kube_options){.context = "empty"}, &k, &err),
                     GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "context \"empty\" names no cluster"));
    /* A context without a user is anonymous, which is allowed. */
    assert_int_equal(open_with(path, (gc_kube_options){.context = "anonymous"}, &k, &err), 0);
    gc_kube_close(k);
}

typedef struct bad_case {
    const char *text;
    const char *expect[3];
} bad_case;

/* Malformed files: a clear message with file, line and column, never a crash. */
static void test_malformed_files(void **state)
{
    (void)state;
    static const bad_case cases[] = {
        {"clusters:\n- name: a\n  cluster: {server: x\n", {"bad.yaml:", ":", "flow"}},
        {"clusters:\n\t- name: a\n", {"bad.yaml:2:1:", "cannot start any token", NULL}},
        {"users: {}\n", {"bad.yaml:1:8:", "kubeconfig.users must be a list, not a mapping", NULL}},
        {"- just\n- a list\n", {"bad.yaml", "must be a mapping", NULL}},
        {"clusters:\n- name: c\n  cluster:\n    insecure-skip-tls-verify: \"yes\"\n",
         {"bad.yaml:4:31:", "insecure-skip-tls-verify must be true or false, not a string", NULL}},
        {"users:\n- name: u\n  user:\n    token: [1, 2]\n",
         {"bad.yaml:4:12:", "users[0].user.token must be a string, not a list", NULL}},
        {"users:\n- name: u\n  user:\n    exec:\n      command: x\n      args: [ok, {a: b}]\n",
         {"bad.yaml:6:", "users[0].user.exec.args[1] must be a string, not a mapping", NULL}},
        {"users:\n- name: u\n  user:\n    exec:\n      command: x\n      env: [{value: v}]\n",
         {"bad.yaml:6:", "env[0] needs a name", NULL}},
        {"contexts:\n- context: {cluster: a}\n",
         {"bad.yaml:2:3:", "contexts[0] has no name", NULL}},
        {"contexts:\n- name: a\n- name: a\n", {"bad.yaml:3:3:", "defined twice", NULL}},
        {"clusters:\n- 42\n", {"bad.yaml:2:3:", "clusters[0] must be a mapping", NULL}},
        {"clusters:\n- name: c\n  cluster: {certificate-authority-data: 'not base64!!'}\n",
         {"bad.yaml:3:", "certificate-authority-data is not valid base64", NULL}},
        {"clusters:\n- name: c\n  cluster: oops\n", {"bad.yaml:3:12:", "must be a mapping", NULL}},
        {"current-context: {a: b}\n", {"bad.yaml:1:18:", "current-context must be a string", NULL}},
        {"clusters: *nowhere\n", {"bad.yaml:1:11:", "unknown alias", NULL}},
        {"key: value\nkey: again\n", {"bad.yaml:2:6:", "duplicate key", NULL}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const char *path = file("bad.yaml", cases[i].text);
        kube_config cfg;
        gc_error err = {0};
        int rc = kube_config_load_files(&path, 1, true, &cfg, &err);
        if (rc != GC_EXIT_USAGE)
            fail_msg("case %zu loaded (rc %d): %s", i, rc, cases[i].text);
        assert_true(kube_test_contains(err.message, "reading kubeconfig: "));
        for (size_t j = 0; j < 3 && cases[i].expect[j]; j++)
            if (!kube_test_contains(err.message, cases[i].expect[j]))
                fail_msg("case %zu: \"%s\" not in: %s", i, cases[i].expect[j], err.message);
    }
    /* The value of a broken *-data field is never quoted: it may be a private key. */
    const char *path = file("bad.yaml", "users:\n- name: u\n  user: {client-key-data: "
                                        "'PRIVATE-KEY-MATERIAL?'}\n");
    kube_config cfg;
    gc_error err = {0};
    assert_int_equal(kube_config_load_files(&path, 1, true, &cfg, &err), GC_EXIT_USAGE);
    assert_false(kube_test_contains(err.message, "PRIVATE-KEY-MATERIAL"));
}

/* Printable ASCII without spaces, as context names, URLs and namespaces are. */
static bool well_formed(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (*s <= ' ' || *s >= 0x7f)
            return false;
    return true;
}

/* A Kubernetes namespace name: a DNS-1123 label (lower-case letters, digits and '-', at most 63,
 * starting and ending with a letter or digit). */
static bool is_namespace(const char *s)
{
    size_t len = s ? strlen(s) : 0;
    if (!len || len > 63 || s[0] == '-' || s[len - 1] == '-')
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == len;
}

/* Writes tmp/<name> and opens it with its current-context: either that works, and the selected
 * context, server and namespace are well-formed, or it fails with exit code 2 and a message that
 * names the file. Returns whether it opened. */
static bool opens_or_names_the_file(const char *name, const char *text)
{
    const char *path = file(name, text);
    gc_kube *k;
    gc_error err = {0};
    int rc = open_with(path, (gc_kube_options){0}, &k, &err);
    if (rc) {
        if (rc != GC_EXIT_USAGE || !kube_test_contains(err.message, name))
            fail_msg("rc %d, message \"%s\" for:\n%s", rc, err.message, text);
        return false;
    }
    const char *context = kube_context_name(k), *server = kube_server(k),
               *ns = gc_kube_namespace(k);
    if (!well_formed(context) || !well_formed(server) || !is_namespace(ns))
        fail_msg("opened with context \"%s\", server \"%s\", namespace \"%s\" from:\n%s", context,
                 server, ns, text);
    gc_kube_close(k);
    return true;
}

/* Every prefix of a valid file, and a character replaced every 7 bytes: each opens cleanly or is
 * refused with a message (ASan watches for the rest), and both happen. */
static void test_truncated_and_mutated_files_open_or_are_refused(void **state)
{
    (void)state;
    size_t len = strlen(full_config);
    char *text = gc_xmalloc(len + 1);
    int opened = 0, refused = 0;
    for (size_t cut = 0; cut <= len; cut++) {
        memcpy(text, full_config, cut);
        text[cut] = '\0';
        if (opens_or_names_the_file("cut.yaml", text))
            opened++;
        else
            refused++;
    }
    printf("%zu prefixes: %d opened, %d refused with a message\n", len + 1, opened, refused);
    assert_true(opened > 0 && refused > 0);
    opened = refused = 0;
    static const char junk[] = {':', '-', '[', '{', '\t', '"', '\'', '&', '*', '\n', '\0'};
    for (size_t pos = 0; pos < len; pos += 7) {
        memcpy(text, full_config, len + 1);
        text[pos] = junk[pos % sizeof(junk)] ? junk[pos % sizeof(junk)] : ' ';
        if (opens_or_names_the_file("mut.yaml", text))
            opened++;
        else
            refused++;
    }
    printf("%d mutants: %d opened, %d refused with a message\n", opened + refused, opened, refused);
    assert_true(opened > 0 && refused > 0);
    free(text);
}

static void test_empty_file_is_an_empty_config(void **state)
{
    (void)state;
    const char *path = file("empty.yaml", "");
    kube_config cfg;
    gc_error err = {0};
    assert_int_equal(kube_config_load_files(&path, 1, true, &cfg, &err), 0);
    assert_int_equal(cfg.context_count, 0);
    assert_null(cfg.current_context);
    kube_config_free(&cfg);
}

/* Opens the full config with a context for `user`; returns the Authorization header value. */
static int credential_of(const char *user, char **authorization, gc_error *err)
{
    const char *contexts = strstr(full_config, "contexts:\n");
    char *text = gc_xasprintf("%.*scontexts:\n- {name: ctx, context: {cluster: c-insecure, "
                              "user: %s}}\n",
                              (int)(contexts - full_config), full_config, user);
    gc_kube_options opts = {.kubeconfig = file("auth.yaml", text), .context = "ctx"};
    free(text);
    gc_kube *k;
    *authorization = NULL;
    int rc = gc_kube_open(&opts, &k, err);
    if (rc)
        return rc;
    rc = kube_auth_ensure(k, err);
    if (!rc && k->cred.authorization)
        *authorization = gc_xstrdup(k->cred.authorization);
    gc_kube_close(k);
    return rc;
}

static void test_auth_kinds(void **state)
{
    (void)state;
    char *auth;
    gc_error err = {0};
    assert_int_equal(credential_of("u-token", &auth, &err), 0);
    assert_string_equal(auth, "Bearer abc123");
    free(auth);

    file("token.txt", "  file-token-42\n\n");
    assert_int_equal(credential_of("u-tokenfile", &auth, &err), 0);
    assert_string_equal(auth, "Bearer file-token-42");
    free(auth);

    assert_int_equal(credential_of("u-basic", &auth, &err), 0);
    assert_string_equal(auth, "Basic YWRtaW46aHVudGVyMg=="); /* admin:hunter2 */
    free(auth);

    /* Client certificate data is kept for TLS, with no Authorization header. */
    assert_int_equal(credential_of("u-certdata", &auth, &err), 0);
    assert_null(auth);

    /* A client-certificate file that does not exist is named in the error. */
    assert_int_equal(credential_of("u-certfile", &auth, &err), GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "/abs/client.pem"));
    assert_true(kube_test_contains(err.message, "client-certificate"));

    file("token.txt", "line1\r\nline2\n");
    assert_int_equal(credential_of("u-tokenfile", &auth, &err), GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "control characters"));
    assert_false(kube_test_contains(err.message, "line1"));
}

static void test_unusable_users(void **state)
{
    (void)state;
    const char *path = file(
        "users.yaml",
        "clusters: [{name: c, cluster: {server: 'https://x'}}]\n"
        "users:\n"
        "- {name: legacy, user: {auth-provider: {name: gcp, config: {access-token: t}}}}\n"
        "- {name: v1-no-mode, user: {exec: {apiVersion: client.authentication.k8s.io/v1, "
        "command: p}}}\n"
        "- {name: alpha, user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, "
        "command: p}}}\n"
        "- {name: bad-mode, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, "
        "command: p, interactiveMode: Sometimes}}}\n"
        "- {name: no-command, user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1}}}\n"
        "- {name: half-cert, user: {client-certificate-data: Y2VydA==}}\n"
        "contexts:\n"
        "- {name: legacy, context: {cluster: c, user: legacy}}\n"
        "- {name: v1-no-mode, context: {cluster: c, user: v1-no-mode}}\n"
        "- {name: alpha, context: {cluster: c, user: alpha}}\n"
        "- {name: bad-mode, context: {cluster: c, user: bad-mode}}\n"
        "- {name: no-command, context: {cluster: c, user: no-command}}\n"
        "- {name: half-cert, context: {cluster: c, user: half-cert}}\n");
    static const char *const expect[][2] = {
        {"legacy", "auth-provider \"gcp\""},
        {"v1-no-mode", "interactiveMode must be specified for v1-no-mode"},
        {"alpha", "v1alpha1\" of user \"alpha\" is not supported"},
        {"bad-mode", "must be Never, IfAvailable or Always"},
        {"no-command", "has no command"},
        {"half-cert", "has a client certificate but no client key"},
    };
    for (size_t i = 0; i < sizeof(expect) / sizeof(*expect); i++) {
        gc_kube *k;
        gc_error err = {0};
        assert_int_equal(open_with(path, (gc_kube_options){.context = expect[i][0]}, &k, &err),
                         GC_EXIT_USAGE);
        if (!kube_test_contains(err.message, expect[i][1]))
            fail_msg("%s: \"%s\" not in: %s", expect[i][0], expect[i][1], err.message);
        assert_true(kube_test_contains(err.message, "users.yaml:"));
    }
}

/* gcloud is run by argv when --cluster/--location match nothing, and says so. */
static void test_gcloud_fallback(void **state)
{
    (void)state;
    char bin[600], link[700], log_path[700], kc[700];
    snprintf(bin, sizeof(bin), "%s/gcloud-bin", tmp);
    mkdir(bin, 0700);
    snprintf(link, sizeof(link), "%s/gcloud", bin);
    unlink(link);
    assert_int_equal(symlink(GCLUSTER_TEST_PROGRAMS_DIR "/fake_gcloud_clusters", link), 0);
    snprintf(log_path, sizeof(log_path), "%s/gcloud.log", tmp);
    unlink(log_path);
    snprintf(kc, sizeof(kc), "%s",
             file("gcloud-kc.yaml", "current-context: other\nclusters: "
                                    "[{name: o, cluster: {server: 'https://o'}}]\ncontexts: "
                                    "[{name: other, context: {cluster: o}}]\n"));
    char *old_path = gc_xstrdup(getenv("PATH"));
    char *path = gc_xasprintf("%s:%s", bin, old_path);
    setenv("PATH", path, 1);
    setenv("FAKE_GCLOUD_LOG", log_path, 1);
    setenv("FAKE_GCLOUD_SERVER", "https://10.9.8.7", 1);
    setenv("FAKE_GCLOUD_PROJECT", "my-proj", 1);

    test_events notices;
    test_events_init(&notices);
    gc_kube_options opts = {.kubeconfig = kc,
                            .cluster = "train",
                            .location = "us-east5",
                            .allow_gcloud = true,
                            .events = &notices.events};
    gc_kube *k;
    gc_error err = {0};
    assert_int_equal(gc_kube_open(&opts, &k, &err), 0);
    assert_string_equal(kube_context_name(k), "gke_my-proj_us-east5_train");
    assert_string_equal(kube_server(k), "https://10.9.8.7");
    gc_kube_close(k);
    assert_int_equal(test_events_count(&notices, "notice: no kubeconfig context for cluster train "
                                                 "in us-east5; running `gcloud container clusters "
                                                 "get-credentials train --location us-east5`"),
                     1);
    char *ran = kube_test_read(log_path);
    assert_true(kube_test_contains(ran, "container clusters get-credentials train --location "
                                        "us-east5\n"));
    free(ran);
    test_events_free(&notices);

    /* A failing gcloud: its own message, and the flags to check. */
    setenv("FAKE_GCLOUD_FAIL", "1", 1);
    opts.events = NULL;
    opts.cluster = "ghost";
    opts.project = "p2";
    assert_int_equal(gc_kube_open(&opts, &k, &err), GC_EXIT_RUNTIME);
    assert_true(kube_test_contains(err.message, "exited with status 1"));
    assert_true(kube_test_contains(err.message, "ResponseError: code=404"));
    assert_true(kube_test_contains(err.message, "--project p2"));
    unsetenv("FAKE_GCLOUD_FAIL");

    /* Not allowed: gcloud is not run, and the message says how to do it by hand. */
    unlink(log_path);
    opts.allow_gcloud = false;
    assert_int_equal(gc_kube_open(&opts, &k, &err), GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "gcloud container clusters get-credentials ghost"));
    assert_null(kube_test_read(log_path));

    setenv("PATH", old_path, 1);
    free(old_path);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_parses_every_field, reset_env),
        cmocka_unit_test_setup(test_relative_paths_follow_the_file, reset_env),
        cmocka_unit_test_setup(test_merges_kubeconfig_list_first_wins, reset_env),
        cmocka_unit_test_setup(test_selects_gke_context, reset_env),
        cmocka_unit_test_setup(test_selection_errors_name_the_fix, reset_env),
        cmocka_unit_test_setup(test_no_kubeconfig_at_all, reset_env),
        cmocka_unit_test_setup(test_dangling_references, reset_env),
        cmocka_unit_test_setup(test_malformed_files, reset_env),
        cmocka_unit_test_setup(test_truncated_and_mutated_files_open_or_are_refused, reset_env),
        cmocka_unit_test_setup(test_empty_file_is_an_empty_config, reset_env),
        cmocka_unit_test_setup(test_auth_kinds, reset_env),
        cmocka_unit_test_setup(test_unusable_users, reset_env),
        cmocka_unit_test_setup(test_gcloud_fallback, reset_env),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
