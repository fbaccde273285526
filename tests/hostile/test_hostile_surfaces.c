/*
 * Hostile input on the surfaces the first rounds did not cover: YAML aliases in every document
 * gcluster reads, the user's own text in messages, stored defaults, --timeout 0, and blueprint
 * values that end up as Kubernetes labels. Each case must end with the documented exit status
 * and a message that says what is wrong, and never put a raw control byte on the terminal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/emit.h"
#include "gcluster/job.h"
#include "gcluster/sys.h"
#include "job_test.h"
#include "kube_test.h"
#include "run_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *files; /* what the tests write: YAML, blueprints, a HOME */

static int setup(void **state)
{
    (void)state;
    files = kube_test_tmpdir();
    return jt_start(GCLUSTER_SOURCE_DIR "/tests/unit/support/test_server.py");
}

static int teardown(void **state)
{
    kube_test_rmtree(files);
    return jt_stop(state);
}

/* The path of `name` in the test's directory (static). */
static const char *file_path(const char *name)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", files, name);
    return path;
}

static const char *write_file(const char *name, const char *text)
{
    const char *path = file_path(name);
    kube_test_write(path, "%s", text);
    return path;
}

/* Runs gcluster with HOME in the test's directory (or `home`), KUBECONFIG the scripted server. */
static void run_in(cli_result *res, const char *home, const char *const *args)
{
    char *kubeconfig = gc_xasprintf("KUBECONFIG=%s", jt_kubeconfig());
    char *home_env = gc_xasprintf("HOME=%s", home ? home : files);
    const char *env[] = {kubeconfig, home_env, NULL};
    run_cli(res, args, env);
    free(kubeconfig);
    free(home_env);
}

/* No byte a terminal acts on: C0 controls other than the newline, DEL, C1 controls, and bytes
 * that are not UTF-8 (a lone 0x9b is CSI to some terminals). */
static void assert_no_control_bytes(const gc_buf *b, const char *what)
{
    if (gc_text_utf8_prefix(b->data, b->len) != b->len)
        fail_msg("%s: a byte that is not UTF-8 at %zu in: %s", what,
                 gc_text_utf8_prefix(b->data, b->len), b->data);
    for (size_t i = 0; i < b->len; i++) {
        unsigned char c = (unsigned char)b->data[i];
        bool c1 = c == 0xC2 && i + 1 < b->len && (unsigned char)b->data[i + 1] >= 0x80 &&
                  (unsigned char)b->data[i + 1] < 0xA0;
        if ((c < 0x20 && c != '\n') || c == 0x7f || c1)
            fail_msg("%s: raw byte 0x%02x at %zu in: %s", what, c, i, b->data);
    }
}

/* Exit `code`, `phrase` in stderr, and nothing raw on either stream. */
static void assert_run(const char *home, const char *const *args, int code, const char *phrase)
{
    cli_result res;
    run_in(&res, home, args);
    if (res.exit_code != code || (phrase && !strstr(res.err.data, phrase)))
        fail_msg("%s %s %s: want exit %d with \"%s\"; got exit %d, stderr: %s", args[0], args[1],
                 args[2] ? args[2] : "", code, phrase ? phrase : "", res.exit_code, res.err.data);
    assert_no_control_bytes(&res.out, "stdout");
    assert_no_control_bytes(&res.err, "stderr");
    cli_result_free(&res);
}

/* 1. One alias budget for every YAML document */

/* Nine levels of ten aliases of the level below: 10^10 strings from ~600 bytes. */
static void billion_laughs(gc_buf *b, const char *indent)
{
    gc_buf_printf(b, "%sl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n", indent);
    for (int i = 1; i <= 9; i++) {
        gc_buf_printf(b, "%sl%d: &l%d [", indent, i, i);
        for (int j = 0; j < 10; j++)
            gc_buf_printf(b, "%s*l%d", j ? ", " : "", i - 1);
        gc_buf_puts(b, "]\n");
    }
}

static int load(const char *text, gc_yaml_doc *doc, gc_error *err)
{
    int rc = gc_yaml_load(text, strlen(text), "bomb.yaml", doc, err);
    if (!rc)
        gc_yaml_doc_free(doc);
    return rc;
}

/* An anchored list of `items` integers and `copies` aliases of it. */
static char *copies_of(int items, int copies)
{
    gc_buf b;
    gc_buf_init(&b);
    gc_buf_puts(&b, "a: &a [");
    for (int i = 0; i < items; i++)
        gc_buf_printf(&b, "%s%d", i ? ", " : "", i);
    gc_buf_puts(&b, "]\nb:\n");
    for (int i = 0; i < copies; i++)
        gc_buf_puts(&b, "- *a\n");
    return gc_buf_detach(&b);
}

static void aliases_stop_at_the_budget(void **state)
{
    (void)state;
    gc_yaml_doc doc;
    gc_error err;
    /* Exactly the budget is fine: 100 copies of a list of 999 values (1,000 with the list). */
    char *at = copies_of(999, GC_YAML_MAX_ALIAS_VALUES / 1000);
    assert_int_equal(gc_yaml_load(at, strlen(at), "bomb.yaml", &doc, &err), 0);
    assert_int_equal(json_array_size(json_object_get(gc_yaml_root(&doc), "b")), 100);
    gc_yaml_doc_free(&doc);
    free(at);
    /* One value more is not; the message names the file, the line of the alias and the budget. */
    char *over = copies_of(999, GC_YAML_MAX_ALIAS_VALUES / 1000 + 1);
    assert_int_equal(load(over, &doc, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message,
                        "bomb.yaml:103:3: alias expansion too large: with \"*a\" the values "
                        "copied by aliases pass 100000 (or 4 MiB of text); no kubeconfig, "
                        "blueprint or template needs that many, so look for aliases that repeat "
                        "each other");
    free(over);
    /* Long strings count by their bytes: 5 copies of 1 MiB pass the 4 MiB. */
    gc_buf big;
    gc_buf_init(&big);
    gc_buf_puts(&big, "a: &a \"");
    for (int i = 0; i < (1 << 20); i++)
        gc_buf_putc(&big, 'x');
    gc_buf_puts(&big, "\"\nb: [*a, *a, *a, *a, *a]\n");
    assert_int_equal(load(big.data, &doc, &err), GC_EXIT_USAGE);
    assert_true(kube_test_contains(err.message, "bomb.yaml:2:"));
    assert_true(kube_test_contains(err.message, "alias expansion too large"));
    gc_buf_free(&big);
}

static void alias_bombs_of_every_shape_are_refused(void **state)
{
    (void)state;
    gc_buf laughs;
    gc_buf_init(&laughs);
    billion_laughs(&laughs, "");
    gc_buf_puts(&laughs, "labels: *l9\n");
    /* Merge keys are kept as a key "<<" holding the copy: the same budget applies. */
    gc_buf merge;
    gc_buf_init(&merge);
    gc_buf_puts(&merge, "m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8, i: 9, j: 10}\n");
    for (int i = 1; i <= 9; i++) {
        gc_buf_printf(&merge, "m%d: &m%d {", i, i);
        for (int j = 0; j < 10; j++)
            gc_buf_printf(&merge, "%sk%d: {<<: *m%d}", j ? ", " : "", j, i - 1);
        gc_buf_puts(&merge, "}\n");
    }
    static const struct {
        const char *text;
        const char *phrase;
    } cases[] = {
        {NULL, "bomb.yaml:5:45: alias expansion too large: with \"*l3\""},
        {NULL, "bomb.yaml:"},
        {"a: &a [1, *a]\n", "bomb.yaml:1:11: alias \"*a\" is inside the value it names"},
        {"a: &a {b: {c: *a}}\n", "alias \"*a\" is inside the value it names"},
        {"x: [&a [1, [2, *a]]]\n", "alias \"*a\" is inside the value it names"},
        {NULL, "bomb.yaml:5:69: nesting too deep: alias \"*l3\" would put values more than 256 "
               "levels deep"},
    };
    /* Nesting through aliases: five levels of 60 lists, each holding the level before. */
    gc_buf deep;
    gc_buf_init(&deep);
    for (int level = 0; level < 5; level++) {
        gc_buf_printf(&deep, "l%d: &l%d ", level, level);
        for (int i = 0; i < 60; i++)
            gc_buf_putc(&deep, '[');
        if (level)
            gc_buf_printf(&deep, "*l%d", level - 1);
        for (int i = 0; i < 60; i++)
            gc_buf_putc(&deep, ']');
        gc_buf_putc(&deep, '\n');
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const char *text = i == 0 ? laughs.data : i == 1 ? merge.data : cases[i].text;
        if (!text)
            text = deep.data;
        gc_yaml_doc doc;
        gc_error err;
        int rc = load(text, &doc, &err);
        if (rc != GC_EXIT_USAGE || !strstr(err.message, cases[i].phrase))
            fail_msg("case %zu: want exit 2 with \"%s\"; got %d \"%s\"", i, cases[i].phrase, rc,
                     rc ? err.message : "");
        if (i < 2)
            assert_true(kube_test_contains(err.message, "alias expansion too large"));
    }
    gc_buf_free(&laughs);
    gc_buf_free(&merge);
    gc_buf_free(&deep);
}

/* The blueprint, a kubeconfig and a Kueue template all come through the one loader. */
static void every_document_has_the_budget(void **state)
{
    (void)state;
    gc_buf bp;
    gc_buf_init(&bp);
    gc_buf_puts(&bp, "blueprint_name: t\n"
                     "vars:\n  project_id: my-project\n  deployment_name: d\n  region: us-east5\n");
    billion_laughs(&bp, "  ");
    gc_buf_puts(&bp, "deployment_groups:\n- group: g\n  modules:\n  - id: cluster\n"
                     "    source: modules/scheduler/gke-cluster\n    settings:\n"
                     "      labels: *l9\n");
    const char *blueprint = write_file("bomb-bp.yaml", bp.data);
    assert_run(NULL, (const char *[]){"deploy", blueprint, "--plan", "--context", "x", NULL},
               GC_EXIT_USAGE, "bomb-bp.yaml:10:47:");
    assert_run(NULL, (const char *[]){"deploy", blueprint, "--plan", "--context", "x", NULL},
               GC_EXIT_USAGE, "alias expansion too large");

    gc_buf kc;
    gc_buf_init(&kc);
    gc_buf_puts(&kc, "apiVersion: v1\nkind: Config\nx:\n");
    billion_laughs(&kc, "  ");
    gc_buf_puts(&kc, "clusters: *l9\n");
    const char *kubeconfig = write_file("bomb-kubeconfig", kc.data);
    assert_run(NULL, (const char *[]){"job", "list", "--kubeconfig", kubeconfig, NULL},
               GC_EXIT_USAGE, "bomb-kubeconfig:8:47: alias expansion too large");

    gc_buf tpl;
    gc_buf_init(&tpl);
    billion_laughs(&tpl, "");
    gc_buf_puts(&tpl, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
                      "metadata: {name: f, labels: *l9}\n");
    write_file("bomb.yaml.tftpl", tpl.data);
    const char *with_template = write_file(
        "bp-template.yaml", "blueprint_name: t\n"
                            "vars: {project_id: my-project, deployment_name: d, region: us-east5}\n"
                            "deployment_groups:\n- group: g\n  modules:\n  - id: cluster\n"
                            "    source: modules/scheduler/gke-cluster\n"
                            "  - id: kueue\n    source: modules/management/kubectl-apply\n"
                            "    settings:\n      kueue:\n        install: true\n"
                            "        config_path: bomb.yaml.tftpl\n");
    assert_run(NULL, (const char *[]){"deploy", with_template, "--plan", "--context", "x", NULL},
               GC_EXIT_USAGE, "bomb.yaml.tftpl:5:45: alias expansion too large");
    gc_buf_free(&bp);
    gc_buf_free(&kc);
    gc_buf_free(&tpl);
}

/* 2. The user's own input in messages */

static void user_input_in_messages_is_escaped(void **state)
{
    (void)state;
    const char *env_file = write_file("esc.env", "A=1\n\x1b[31mB=2\n");
    const char *blueprint = GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml";
    const char *const *cases[] = {
        (const char *[]){"deploy", blueprint, "--plan", "--vars", "machine_type=\x1b[31mred\a",
                         NULL},
        (const char *[]){"deploy", blueprint, "--plan", "--vars", "\x1b[31m=x", NULL},
        (const char *[]){"job", "submit", "--name", "pw", "--compute-type", "v6e-16", "--command",
                         "ls", "--image", "us-docker.pkg.dev/p/r/jax:1", "--env-file", env_file,
                         NULL},
        (const char *[]){"job", "submit", "--name", "job\x1b[31m", "--compute-type", "v6e-16",
                         "--command", "ls", "--image", "us-docker.pkg.dev/p/r/jax:1", NULL},
        (const char *[]){"job", "inspect", "job\x1b[31m", NULL},
        (const char *[]){"job", "why", "job\x1b[31m", NULL},
        (const char *[]){"job", "logs", "job\x1b[31m", NULL},
        (const char *[]){"job", "cancel", "job\x1b[31m", NULL},
        (const char *[]){"job", "connect", "job\x1b[31m", "--", "true", NULL},
        (const char *[]){"job", "wait", "job\x1b[31m", NULL},
        (const char *[]){"job", "list", "--output", "\x1b[31mxml", NULL},
        (const char *[]){"job", "list", "--\x1b[31m", NULL},
        (const char *[]){"job",
                         "\x9b"
                         "31m",
                         NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        cli_result res;
        run_in(&res, NULL, cases[i]);
        if (res.exit_code != GC_EXIT_USAGE || !strstr(res.err.data, "\\x"))
            fail_msg("case %zu: want exit 2 with the bytes shown as \\xNN; got exit %d: %s", i,
                     res.exit_code, res.err.data);
        assert_no_control_bytes(&res.out, "stdout");
        assert_no_control_bytes(&res.err, "stderr");
        cli_result_free(&res);
    }
    /* Nothing was sent for any of them. */
    assert_int_equal(jt_request_count(), 0);
}

/* 3. Stored defaults */

static void stored_defaults_are_checked_before_they_are_written(void **state)
{
    (void)state;
    char *home = gc_xasprintf("%s/home-set", files);
    mkdir(home, 0755);
    char *context = gc_xasprintf("%s/.gcluster/context.json", home);
    gc_buf long_project;
    gc_buf_init(&long_project);
    for (int i = 0; i < 100000; i++)
        gc_buf_putc(&long_project, 'a');
    static const struct {
        const char *key, *value, *phrase;
    } bad[] = {
        {"cluster", "c\x1b[31m\a", "cluster \"c\\x1b[31m\\x07\" is not a GKE cluster name"},
        {"cluster", "Training", "is not a GKE cluster name"},
        {"cluster", "a-cluster-name-that-is-longer-than-forty-chars", "is not a GKE cluster name"},
        {"project", "my\nproj", "project \"my\\x0aproj\" is not a Google Cloud project ID"},
        {"project", "short", "is not a Google Cloud project ID"},
        {"project", "my-project-", "is not a Google Cloud project ID"},
        {"project", NULL, "project \"aaaa"},
        {"location", "mars", "is not a Google Cloud region or zone"},
        {"location", "us-east5-\x1b", "is not a Google Cloud region or zone"},
        {"location", "US-EAST5", "is not a Google Cloud region or zone"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        const char *value = bad[i].value ? bad[i].value : long_project.data;
        assert_run(home, (const char *[]){"job", "config", "set", bad[i].key, value, NULL},
                   GC_EXIT_USAGE, bad[i].phrase);
        struct stat st;
        assert_int_not_equal(stat(context, &st), 0); /* nothing was written */
    }
    /* The message about 100,000 characters shows a few of them and still says how to fix it. */
    cli_result res;
    run_in(&res, home,
           (const char *[]){"job", "config", "set", "project", long_project.data, NULL});
    assert_true(res.err.len < 600);
    assert_true(kube_test_contains(res.err.data, "gcloud projects list"));
    cli_result_free(&res);

    static const char *const good[][2] = {
        {"project", "my-project"},
        {"project", "example.com:my-project"},
        {"cluster", "gke-tpu-v6e"},
        {"cluster", "c"},
        {"location", "us-east5"},
        {"location", "us-central1-a"},
        {"location", "northamerica-northeast2"},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
        assert_run(home, (const char *[]){"job", "config", "set", good[i][0], good[i][1], NULL}, 0,
                   NULL);
    run_in(&res, home, (const char *[]){"job", "config", "list", NULL});
    assert_int_equal(res.exit_code, 0);
    assert_string_equal(res.out.data, "project:  example.com:my-project\ncluster:  c\n"
                                      "location: northamerica-northeast2\n");
    cli_result_free(&res);
    gc_buf_free(&long_project);
    free(context);
    free(home);
}

static void stored_defaults_are_checked_when_read(void **state)
{
    (void)state;
    char *home = gc_xasprintf("%s/home-read", files);
    char *dir = gc_xasprintf("%s/.gcluster", home);
    char *context = gc_xasprintf("%s/context.json", dir);
    mkdir(home, 0755);
    mkdir(dir, 0755);
    /* A hand-edited file: config list refuses it, naming the file, the key and the fix; other
     * commands say they ignore it. */
    kube_test_write(context, "{\"project_id\": \"my\\nproj\\u001b[31m\", \"cluster_name\": \"c\"}");
    assert_run(home, (const char *[]){"job", "config", "list", NULL}, GC_EXIT_USAGE,
               "context.json: stored project \"my\\x0aproj\\x1b[31m\" is not a Google Cloud "
               "project ID");
    assert_run(home, (const char *[]){"job", "config", "list", NULL}, GC_EXIT_USAGE,
               "gcluster job config set project VALUE");
    cli_result res;
    run_in(&res, home, (const char *[]){"job", "inspect", "x", "--cluster", "c", NULL});
    assert_true(kube_test_contains(res.err.data, "warning: ignoring stored defaults"));
    assert_no_control_bytes(&res.err, "stderr");
    cli_result_free(&res);
    /* A directory where the file should be. */
    remove(context);
    mkdir(context, 0755);
    assert_run(home, (const char *[]){"job", "config", "list", NULL}, GC_EXIT_USAGE,
               "context.json is a directory");
    assert_run(home, (const char *[]){"job", "config", "set", "project", "my-project", NULL},
               GC_EXIT_USAGE, "move the directory away");
    rmdir(context);
    free(context);
    free(dir);
    free(home);
}

/* 4. --timeout 0: one look, no waiting */

static void timeout_zero_looks_once(void **state)
{
    (void)state;
    json_t *queued = jt_jobset("a", 1);
    json_object_set_new(json_object_get(queued, "spec"), "suspend", json_true());
    jt_list(JT_JOBSETS, "JobSetList", json_pack("[o]", queued));
    jt_list(JT_WORKLOADS, "WorkloadList",
            json_pack("[o]", jt_workload("a", false, "Pending", "waiting for quota")));
    const char *names[] = {"a"};
    gc_wait_request r = {.names = names, .count = 1, .timeout = "0s"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(gc_job_wait(jt_kube(), &r, jt_events(), &res, &err), GC_EXIT_RUNTIME);
    assert_string_equal(err.reason, "Timeout");
    assert_string_equal(err.message, "timed out at the one look (--timeout 0); not succeeded yet: "
                                     "a Queued (Pending: waiting for quota); the jobs keep going "
                                     "(gcluster job inspect NAME follows one)");
    assert_true(res.timed_out);
    gc_wait_result_free(&res);
    /* One list of the JobSets (and the Workload's), no watch. */
    json_t *req = jt_requests();
    for (size_t i = 0; i < json_array_size(req); i++)
        assert_null(jt_param(req, i, "watch"));
    json_decref(req);
}

static void timeout_zero_is_success_when_already_there(void **state)
{
    (void)state;
    json_t *done = jt_jobset("a", 1);
    jt_condition(done, "Completed", "Completed", "done");
    jt_list(JT_JOBSETS, "JobSetList", json_pack("[o]", done));
    const char *names[] = {"a"};
    gc_wait_request r = {.names = names, .count = 1, .timeout = "0"};
    gc_wait_result res;
    gc_error err;
    assert_int_equal(gc_job_wait(jt_kube(), &r, jt_events(), &res, &err), 0);
    assert_int_equal(res.jobs[0].outcome, GC_WAIT_REACHED);
    gc_wait_result_free(&res);
}

static void cancel_with_timeout_zero_looks_once(void **state)
{
    (void)state;
    json_t *js = jt_jobset("pw", 1);
    json_object_set_new(json_object_get(js, "metadata"), "deletionTimestamp",
                        json_string("2026-01-02T06:00:00Z"));
    jt_answer("DELETE " JT_JOBSETS "/pw", json_pack("{s:o}", "json", js));
    jt_list(JT_PODS, "PartialObjectMetadataList",
            json_pack("[{s:s, s:s, s:{s:s, s:s}}]", "apiVersion", "meta.k8s.io/v1", "kind",
                      "PartialObjectMetadata", "metadata", "name", "p1", "namespace", "ns1"));
    gc_cancel_request r = {.name = "pw", .wait = true, .timeout = "0s"};
    gc_cancel_result res;
    gc_error err;
    assert_int_equal(gc_job_cancel(jt_kube(), &r, jt_events(), &res, &err), GC_EXIT_RUNTIME);
    assert_string_equal(err.message, "job pw is still being deleted at the one look (--timeout 0) "
                                     "(gcluster job inspect pw shows what is left)");
    json_t *req = jt_requests();
    for (size_t i = 0; i < json_array_size(req); i++)
        assert_null(jt_param(req, i, "watch"));
    json_decref(req);
}

static void timeout_zero_is_in_the_help(void **state)
{
    (void)state;
    const char *const commands[][2] = {{"wait", NULL}, {"cancel", NULL}, {"submit", NULL}};
    for (size_t i = 0; i < 3; i++) {
        cli_result res;
        run_in(&res, NULL, (const char *[]){"job", commands[i][0], "--help", NULL});
        assert_int_equal(res.exit_code, 0);
        const char *flag = strstr(res.out.data, "--timeout");
        assert_non_null(flag);
        assert_true(kube_test_contains(flag, "0 looks once"));
        cli_result_free(&res);
    }
}

/* 5. Blueprint values that become labels and names */

static void blueprint_label_values_are_checked_at_the_source(void **state)
{
    (void)state;
    static const char head[] = "blueprint_name: t\n"
                               "vars: {project_id: my-project, deployment_name: d, region: "
                               "us-east5}\n"
                               "deployment_groups:\n- group: g\n  modules:\n  - id: cluster\n"
                               "    source: modules/scheduler/gke-cluster\n"
                               "    settings: {enable_pathways_for_tpus: true}\n"
                               "  - id: kueue\n    source: modules/management/kubectl-apply\n"
                               "    settings:\n      kueue:\n        install: true\n";
    /* YAML's escapes put control bytes into a blueprint's strings. */
    static const char *const bad[] = {"tpu\\e[31m\\a", "tpu v6e", "-tpu",
                                      "a234567890123456789012345678901234567890123456789012345"
                                      "678901234"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        char *text = gc_xasprintf("%s        config_template_vars: {accelerator_type: "
                                  "$(vars.acc)}\n",
                                  head);
        /* the variable, through a reference, as blueprints usually do it */
        char *with_var = gc_xasprintf("blueprint_name: t\nvars: {project_id: my-project, "
                                      "deployment_name: d, region: us-east5, acc: \"%s\"}\n%s",
                                      bad[i], strstr(text, "deployment_groups:"));
        const char *bp = write_file("labels.yaml", with_var);
        assert_run(NULL, (const char *[]){"deploy", bp, "--plan", "--context", "x", NULL},
                   GC_EXIT_USAGE, "kueue.config_template_vars.accelerator_type \"");
        assert_run(NULL, (const char *[]){"deploy", bp, "--plan", "--context", "x", NULL},
                   GC_EXIT_USAGE, "is not a Kubernetes label value");
        free(text);
        free(with_var);
    }
    char *text;
    const char *bp;
    /* The topology becomes the TPU flavor's cloud.google.com/gke-tpu-topology node label. */
    text = gc_xasprintf("%s        config_template_vars: {accelerator_type: tpu-v6e-slice, "
                        "tpu_topology: \"4 x 4\"}\n",
                        head);
    bp = write_file("topology.yaml", text);
    free(text);
    assert_run(NULL, (const char *[]){"deploy", bp, "--plan", "--context", "x", NULL},
               GC_EXIT_USAGE,
               "kueue.config_template_vars.tpu_topology \"4 x 4\" is not a Kubernetes label "
               "value");
    /* Pool names, machine types, regions and zones become node labels; cluster names become
     * GKE and kubeconfig names; any other string must at least be text. */
    static const struct {
        const char *vars, *settings, *phrase;
    } pools[] = {
        {"", "name: \"pool\\e[31m\"",
         "module np: setting name \"pool\\x1b[31m\" is not a GKE name"},
        {"", "machine_type: \"n2\\e[32m\"",
         "module np: setting machine_type \"n2\\x1b[32m\" is not a machine type"},
        {", machine_type: N2-STANDARD-8", "",
         "vars.machine_type \"N2-STANDARD-8\" (used by module np) is not a machine type"},
        {"", "zones: [\"us-east5-b\\a\"]",
         "module np: zones: \"us-east5-b\\x07\" is not a Google Cloud zone"},
        {", zone: us_east5_b", "", "vars.zone \"us_east5_b\" (used by module cluster) is not"},
        {"", "name: Pool-A", "module np: setting name \"Pool-A\" is not a GKE name"},
        {", kueue_version: \"v0.1\\u0085\"", "", "is not text without control characters"},
    };
    for (size_t i = 0; i < sizeof(pools) / sizeof(*pools); i++) {
        text = gc_xasprintf(
            "blueprint_name: t\n"
            "vars: {project_id: my-project, deployment_name: d, region: "
            "us-east5%s}\n"
            "deployment_groups:\n- group: g\n  modules:\n  - id: cluster\n"
            "    source: modules/scheduler/gke-cluster\n"
            "  - id: np\n    source: modules/compute/gke-node-pool\n"
            "    settings: {%s}\n"
            "  - id: kueue\n    source: modules/management/kubectl-apply\n"
            "    settings: {kueue: {install: true%s}}\n",
            pools[i].vars, pools[i].settings,
            strstr(pools[i].vars, "kueue_version") ? ", version: $(vars.kueue_version)" : "");
        bp = write_file("pool.yaml", text);
        free(text);
        assert_run(NULL, (const char *[]){"deploy", bp, "--plan", "--context", "x", NULL},
                   GC_EXIT_USAGE, pools[i].phrase);
    }
    /* What the plan prints about the blueprint itself. */
    bp = write_file("ids.yaml", "blueprint_name: \"t\\e[31m\"\ndeployment_groups: []\n");
    assert_run(NULL, (const char *[]){"deploy", bp, "--plan", "--context", "x", NULL},
               GC_EXIT_USAGE, "ids.yaml:1:17: blueprint_name has control characters");
    bp = write_file("ids.yaml", "blueprint_name: t\ndeployment_groups:\n- group: g\n  modules:\n"
                                "  - {id: \"x\\u009b\", source: modules/x}\n");
    assert_run(NULL, (const char *[]){"deploy", bp, "--plan", "--context", "x", NULL},
               GC_EXIT_USAGE, "module id \"x\\xc2\\x9b\" has control characters");
    /* A user template: what its variables put into names and labels is checked too. */
    write_file("flavor.yaml.tftpl", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\n"
                                    "metadata: {name: tpu}\n"
                                    "spec: {nodeLabels: {cloud.google.com/gke-tpu-accelerator: "
                                    "\"${accelerator_type}\"}}\n");
    text = gc_xasprintf("%s        config_path: flavor.yaml.tftpl\n"
                        "        config_template_vars: {accelerator_type: \"tpu v6e\"}\n",
                        head);
    bp = write_file("template.yaml", text);
    free(text);
    assert_run(NULL, (const char *[]){"deploy", bp, "--plan", "--context", "x", NULL},
               GC_EXIT_USAGE,
               "flavor.yaml.tftpl: ResourceFlavor tpu: spec.nodeLabels value \"tpu v6e\" is not "
               "a label value");
    assert_int_equal(jt_request_count(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(aliases_stop_at_the_budget),
        cmocka_unit_test(alias_bombs_of_every_shape_are_refused),
        cmocka_unit_test_setup_teardown(every_document_has_the_budget, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(user_input_in_messages_is_escaped, jt_open, jt_close),
        cmocka_unit_test(stored_defaults_are_checked_before_they_are_written),
        cmocka_unit_test(stored_defaults_are_checked_when_read),
        cmocka_unit_test_setup_teardown(timeout_zero_looks_once, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(timeout_zero_is_success_when_already_there, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(cancel_with_timeout_zero_looks_once, jt_open, jt_close),
        cmocka_unit_test(timeout_zero_is_in_the_help),
        cmocka_unit_test_setup_teardown(blueprint_label_values_are_checked_at_the_source, jt_open,
                                        jt_close),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
