/*
 * The installer (src/deploy/install.c) and what job submit asks of it (src/deploy/prereqs.c):
 * cert-manager as the blueprint asks for it, its release file checked against the kept digest,
 * its settings' types; and the decision job submit makes (install JobSet and Kueue when missing,
 * the PriorityClasses when it may, nothing with --skip-prereqs, nothing applied on a dry run).
 * A scripted loopback server answers; the test reads the report, the error and the requests.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deploy/internal.h"
#include "gcluster/deploy.h"
#include "gcluster/kube.h"
#include "gcluster/sys.h"
#include "kube_test.h"
#include "run_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RELEASES         GCLUSTER_SOURCE_DIR "/tests/fixtures/releases"
#define CERT_MANAGER     "cert-manager-v1.17.2.yaml"
#define CERT_MANAGER_SHA "dab2794176629d8042ce97b885f378dfe4ef7b5bed5859e9f06616ead9980f4b"

static kube_test_env *env;

static int setup(void **state)
{
    int rc = kube_test_env_setup(state);
    env = *state;
    return rc;
}

static void script(const char *text)
{
    kube_test_env_script(env, text);
}

static gc_kube *open_kube(void)
{
    char *path = gc_xasprintf("%s/kubeconfig", env->tmp);
    kube_test_write_kubeconfig(path, &env->server, env->pki.ca, NULL);
    gc_kube *kube;
    gc_error err = {0};
    gc_kube_options opts = {.kubeconfig = path};
    if (gc_kube_open(&opts, &kube, &err))
        fail_msg("%s", err.message);
    free(path);
    return kube;
}

static int count_requests(const char *method, const char *prefix)
{
    json_t *log = kube_test_server_log(&env->server);
    int n = 0;
    size_t i;
    json_t *req;
    json_array_foreach(log, i, req)
    {
        if (!strcmp(json_string_value(json_object_get(req, "method")), method) &&
            !strncmp(json_string_value(json_object_get(req, "path")), prefix, strlen(prefix)))
            n++;
    }
    json_decref(log);
    return n;
}

/* The pathways example with cert-manager asked for as the advanced blueprints ask: the
 * kubectl-apply module's `settings:` gets `cert_manager:` with `extra` under it. */
static char *blueprint_with_cert_manager(const char *extra)
{
    gc_buf text;
    gc_buf_init(&text);
    gc_error err = {0};
    if (gc_file_read(GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml", 1 << 20, &text,
                     &err))
        fail_msg("%s", err.message);
    const char *anchor = "          jobset:\n            install: true\n";
    char *at = strstr(text.data, anchor);
    assert_non_null(at);
    at += strlen(anchor);
    char *path = gc_xasprintf("%s/blueprint.yaml", env->tmp);
    kube_test_write(path, "%.*s          cert_manager:\n%s%s", (int)(at - text.data), text.data,
                    extra, at);
    gc_buf_free(&text);
    return path;
}

#define NODES "'GET /api/v1/nodes': [{'json': {'kind': 'List', 'metadata': {}, 'items': []}}]"

typedef struct outcome {
    int rc;
    gc_error err;
    gc_deploy_result result; /* the pipeline's, its report below */
    gc_deploy_report report;
} outcome;

/* The pipeline's way to the scripted server. */
static int open_scripted(void *ctx, bool may_write, gc_kube **kube, gc_error *err)
{
    (void)may_write;
    gc_kube_options opts = {.kubeconfig = ctx};
    return gc_kube_open(&opts, kube, err);
}

/* The whole pipeline, its Google Cloud stage answered by /bin/true (every resource there). */
static void run_deploy(outcome *o, const char *extra, const gc_deploy_request *r)
{
    memset(o, 0, sizeof(*o));
    char *path = blueprint_with_cert_manager(extra);
    gc_blueprint bp;
    if (deploy_blueprint_load(path, NULL, 0, &bp, &o->err))
        fail_msg("%s", o->err.message);
    free(path);
    char *kubeconfig = gc_xasprintf("%s/kubeconfig", env->tmp);
    kube_test_write_kubeconfig(kubeconfig, &env->server, env->pki.ca, NULL);
    o->rc =
        gc_deploy_run(&bp, r, false, "/bin/true", &(gc_deploy_connect){open_scripted, kubeconfig},
                      NULL, &o->result, &o->err);
    o->report = o->result.report;
    free(kubeconfig);
    gc_blueprint_free(&bp);
}

static void outcome_free(outcome *o)
{
    gc_deploy_result_free(&o->result);
}

static char *manifests_dir(void)
{
    char *dir = gc_xasprintf("%s/manifests", env->tmp);
    mkdir(dir, 0700);
    return dir;
}

/* A copy of the kept release file, with `from` replaced by `to` when given. */
static void write_release(const char *dir, const char *name, const char *from, const char *to)
{
    gc_buf text;
    gc_buf_init(&text);
    gc_error err = {0};
    char *src = gc_xasprintf("%s/%s", RELEASES, name);
    if (gc_file_read(src, 4 << 20, &text, &err))
        fail_msg("%s", err.message);
    char *at = from ? strstr(text.data, from) : NULL;
    if (from)
        assert_non_null(at);
    char *dst = gc_xasprintf("%s/%s", dir, name);
    FILE *f = fopen(dst, "w");
    assert_non_null(f);
    if (at) {
        fwrite(text.data, 1, (size_t)(at - text.data), f);
        fputs(to, f);
        fputs(at + strlen(from), f);
    } else {
        fwrite(text.data, 1, text.len, f);
    }
    fclose(f);
    free(src);
    free(dst);
    gc_buf_free(&text);
}

/* cert_manager.install: reported before JobSet and Kueue, from its release path on GitHub, as
 * missing (it would be installed: its digest is kept), at the module's default version or the
 * blueprint's. */
static void cert_manager_is_planned_from_its_release(void **state)
{
    (void)state;
    script("{" NODES "}"); /* no group is served: each answers 404 */
    outcome o;
    gc_deploy_request r = {.cluster = "c", .location = "us-east5", .plan = true};
    run_deploy(&o, "            install: true\n", &r);
    if (o.rc)
        fail_msg("%s", o.err.message);
    assert_int_equal(o.report.install_count, 3);
    const gc_deploy_install *cm = &o.report.installs[0];
    assert_string_equal(cm->name, "cert-manager");
    assert_string_equal(cm->version, "v1.17.2");
    assert_int_equal(cm->state, GC_INSTALL_MISSING);
    assert_string_equal(cm->source, "https://github.com/cert-manager/cert-manager/releases/"
                                    "download/v1.17.2/cert-manager.yaml");
    assert_string_equal(o.report.installs[1].name, "JobSet");
    assert_string_equal(o.report.installs[2].name, "Kueue");
    assert_int_equal(count_requests("PATCH", "/"), 0);
    outcome_free(&o);

    /* Another version: no digest of it is kept, so it is reported and not installed. */
    assert_true(kube_test_server_reset(&env->server));
    script("{" NODES "}");
    run_deploy(&o, "            install: true\n            version: 1.16.0\n", &r);
    assert_int_equal(o.rc, 0);
    assert_string_equal(o.report.installs[0].version, "v1.16.0");
    assert_int_equal(o.report.installs[0].state, GC_INSTALL_UNVERIFIABLE);
    outcome_free(&o);

    /* install: false (the module's default) installs nothing. */
    assert_true(kube_test_server_reset(&env->server));
    script("{" NODES "}");
    run_deploy(&o, "            install: false\n", &r);
    assert_int_equal(o.report.install_count, 2);
    assert_string_equal(o.report.installs[0].name, "JobSet");
    outcome_free(&o);
}

/* The kept file passes its digest (and the files after it are read before anything is sent);
 * one changed byte in it is refused before anything is applied, naming both digests. */
static void cert_manager_release_is_checked_before_anything_is_applied(void **state)
{
    (void)state;
    script("{}");
    char *dir = manifests_dir();
    write_release(dir, CERT_MANAGER, NULL, NULL);
    write_release(dir, "jobset-v0.10.1.yaml", "--zap-log-level=2", "--zap-log-level=9");
    write_release(dir, "kueue-v0.17.1.yaml", NULL, NULL);
    outcome o;
    gc_deploy_request r = {.cluster = "c", .location = "us-east5", .manifests_dir = dir};
    run_deploy(&o, "            install: true\n", &r);
    /* cert-manager's file was read first and was good: the refusal is JobSet's. */
    assert_int_equal(o.rc, GC_EXIT_RUNTIME);
    assert_non_null(strstr(o.err.message, "/manifests/jobset-v0.10.1.yaml: SHA-256 "));
    assert_non_null(strstr(o.err.message, "nothing was applied"));
    assert_non_null(strstr(o.report.installs[0].source, "/manifests/" CERT_MANAGER));
    assert_int_equal(count_requests("PATCH", "/"), 0);
    outcome_free(&o);
    free(dir);
}

static void cert_manager_changed_byte_is_refused(void **state)
{
    (void)state;
    script("{}");
    char *dir = manifests_dir();
    write_release(dir, CERT_MANAGER, "--v=2", "--v=9");
    write_release(dir, "jobset-v0.10.1.yaml", NULL, NULL);
    write_release(dir, "kueue-v0.17.1.yaml", NULL, NULL);
    outcome o;
    gc_deploy_request r = {.cluster = "c", .location = "us-east5", .manifests_dir = dir};
    run_deploy(&o, "            install: true\n", &r);
    assert_int_equal(o.rc, GC_EXIT_RUNTIME);
    assert_non_null(strstr(o.err.message, "/manifests/" CERT_MANAGER ": SHA-256 "));
    assert_non_null(strstr(o.err.message, "but cert-manager v1.17.2 is " CERT_MANAGER_SHA
                                          "; nothing was applied"));
    assert_int_equal(count_requests("PATCH", "/"), 0);
    outcome_free(&o);
    free(dir);
}

/* The settings' types are checked where they are read, with the file, line and setting. */
static void cert_manager_settings_are_checked(void **state)
{
    (void)state;
    static const struct {
        const char *extra, *want;
    } cases[] = {
        {"            install: yes please\n",
         "setting cert_manager.install must be true or false, not a string"},
        {"            install: true\n            version: ../../etc/passwd\n",
         "setting cert_manager.version \"../../etc/passwd\" is not a release version"},
        {"            install: true\n            version: 1.17\n", "cert_manager.version"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *path = blueprint_with_cert_manager(cases[i].extra);
        gc_blueprint bp;
        gc_error err = {0};
        assert_int_equal(deploy_blueprint_load(path, NULL, 0, &bp, &err), GC_EXIT_USAGE);
        if (!strstr(err.message, cases[i].want) || !strstr(err.message, "blueprint.yaml:"))
            fail_msg("expected \"%s\" in: %s", cases[i].want, err.message);
        free(path);
    }
}

/* --- job submit's prerequisites --- */

#define PRIORITY_CLASSES(items)                                                                    \
    "'GET /apis/scheduling.k8s.io/v1/priorityclasses': [{'json': {'kind': 'List', "                \
    "'metadata': {}, 'items': [" items "]}}]"

static int prereqs(const gc_prereq_request *r, gc_prereq_report *rep, gc_error *err)
{
    gc_kube *kube = open_kube();
    int rc = gc_prereq_install(kube, r, NULL, rep, err);
    gc_kube_close(kube);
    return rc;
}

/* --skip-prereqs: nothing is asked of the cluster at all. */
static void skip_prereqs_asks_nothing(void **state)
{
    (void)state;
    script("{}");
    gc_prereq_request r = {.skip = true};
    gc_prereq_report rep;
    gc_error err = {0};
    assert_int_equal(prereqs(&r, &rep, &err), 0);
    assert_int_equal(rep.install_count, 0);
    assert_int_equal(rep.priority_classes.count, 0);
    assert_false(rep.needs_queue);
    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 0);
    json_decref(log);
    gc_prereq_report_free(&rep);
}

/* A bare cluster on a dry run: both would be installed from GitHub, the five PriorityClasses
 * applied (none of the cluster's own: system-* and gke-* are not), and Kueue would have no
 * queue; the PriorityClasses are the one read (the submit found what is missing), and nothing is
 * fetched or applied. */
static void bare_cluster_dry_run_says_what_it_would_do(void **state)
{
    (void)state;
    script("{" PRIORITY_CLASSES("{'metadata': {'name': 'system-node-critical'}},"
                                "{'metadata': {'name': 'gke-system'}}") "}");
    gc_prereq_request r = {.plan = true, .jobset_missing = true, .kueue_missing = true};
    gc_prereq_report rep;
    gc_error err = {0};
    assert_int_equal(prereqs(&r, &rep, &err), 0);
    assert_int_equal(rep.install_count, 2);
    assert_string_equal(rep.installs[0].name, "JobSet");
    assert_string_equal(rep.installs[0].version, "v0.10.1");
    assert_int_equal(rep.installs[0].state, GC_INSTALL_MISSING);
    assert_string_equal(rep.installs[1].name, "Kueue");
    assert_string_equal(rep.installs[1].version, "v0.17.1");
    assert_int_equal(rep.installs[1].state, GC_INSTALL_MISSING);
    assert_string_equal(rep.installs[1].source, "https://github.com/kubernetes-sigs/kueue/"
                                                "releases/download/v0.17.1/manifests.yaml");
    assert_int_equal(rep.priority_classes.count, 5);
    assert_string_equal(rep.priority_classes.items[0], "very-low");
    assert_string_equal(rep.priority_classes.items[4], "very-high");
    assert_false(rep.priority_classes_unknown);
    assert_true(rep.needs_queue);
    assert_int_equal(count_requests("GET", "/"), 1);
    assert_int_equal(count_requests("PATCH", "/"), 0);
    gc_prereq_report_free(&rep);
}

/* Nothing missing: nothing is asked of the cluster (the submit's own first round trip found
 * both served), nothing installed, no PriorityClass applied. */
static void both_present_changes_nothing(void **state)
{
    (void)state;
    script("{}");
    gc_prereq_request r = {0};
    gc_prereq_report rep;
    gc_error err = {0};
    assert_int_equal(prereqs(&r, &rep, &err), 0);
    assert_int_equal(rep.install_count, 0);
    assert_int_equal(rep.priority_classes.count, 0);
    assert_false(rep.needs_queue);
    json_t *log = kube_test_server_log(&env->server);
    assert_int_equal(json_array_size(log), 0);
    json_decref(log);
    gc_prereq_report_free(&rep);
}

/* Kueue missing on a cluster with a PriorityClass of its own (batch-low): none are added. A
 * user who may not list PriorityClasses cannot tell: none are added, the report says so, and
 * the install goes on. JobSet alone missing: the PriorityClasses are not read. */
static void own_priority_classes_are_kept(void **state)
{
    (void)state;
    script("{" PRIORITY_CLASSES("{'metadata': {'name': 'system-cluster-critical'}},"
                                "{'metadata': {'name': 'batch-low'}}") "}");
    gc_prereq_request r = {.plan = true, .kueue_missing = true};
    gc_prereq_report rep;
    gc_error err = {0};
    assert_int_equal(prereqs(&r, &rep, &err), 0);
    assert_int_equal(rep.install_count, 1);
    assert_string_equal(rep.installs[0].name, "Kueue");
    assert_int_equal(rep.priority_classes.count, 0);
    assert_false(rep.priority_classes_unknown);
    assert_true(rep.needs_queue);
    assert_int_equal(count_requests("GET", "/"), 1);
    assert_int_equal(count_requests("PATCH", "/"), 0);
    gc_prereq_report_free(&rep);

    assert_true(kube_test_server_reset(&env->server));
    script("{'GET /apis/scheduling.k8s.io/v1/priorityclasses': [{'status': 403, 'json': "
           "{'kind': 'Status', 'reason': 'Forbidden', 'code': 403, 'message': 'forbidden'}}]}");
    assert_int_equal(prereqs(&r, &rep, &err), 0);
    assert_int_equal(rep.priority_classes.count, 0);
    assert_true(rep.priority_classes_unknown);
    assert_true(rep.needs_queue);
    gc_prereq_report_free(&rep);

    assert_true(kube_test_server_reset(&env->server));
    script("{}");
    r = (gc_prereq_request){.plan = true, .jobset_missing = true};
    assert_int_equal(prereqs(&r, &rep, &err), 0);
    assert_int_equal(rep.install_count, 1);
    assert_string_equal(rep.installs[0].name, "JobSet");
    assert_int_equal(rep.priority_classes.count, 0);
    assert_false(rep.needs_queue);
    assert_int_equal(count_requests("GET", "/"), 0);
    gc_prereq_report_free(&rep);
}

/* Kueue there, JobSet missing: only JobSet is installed; its file is checked before anything
 * is sent, so a changed file changes nothing. */
static void only_the_missing_one_is_installed(void **state)
{
    (void)state;
    script("{}");
    char *dir = manifests_dir();
    write_release(dir, "jobset-v0.10.1.yaml", "--zap-log-level=2", "--zap-log-level=9");
    gc_prereq_request r = {.manifests_dir = dir, .jobset_missing = true};
    gc_prereq_report rep;
    gc_error err = {0};
    assert_int_equal(prereqs(&r, &rep, &err), GC_EXIT_RUNTIME);
    assert_int_equal(rep.install_count, 1);
    assert_int_equal(rep.installs[0].state, GC_INSTALL_MISSING);
    assert_false(rep.needs_queue);
    assert_non_null(strstr(err.message, "jobset-v0.10.1.yaml: SHA-256 "));
    assert_non_null(strstr(err.message, "nothing was applied"));
    assert_int_equal(count_requests("PATCH", "/"), 0);
    gc_prereq_report_free(&rep);
    free(dir);
}

/* A release file that cannot be downloaded: the error names the file and the two other
 * sources, and nothing is applied. */
static void a_failed_download_names_the_other_sources(void **state)
{
    (void)state;
    script("{}");
    gc_prereq_request r = {.manifests_mirror = "https://127.0.0.1:1", .jobset_missing = true};
    gc_prereq_report rep;
    gc_error err = {0};
    assert_int_not_equal(prereqs(&r, &rep, &err), 0);
    if (!strstr(err.message, "JobSet v0.10.1: ") ||
        !strstr(err.message, "https://127.0.0.1:1/kubernetes-sigs/jobset/releases/download/"
                             "v0.10.1/manifests.yaml") ||
        !strstr(err.message, "(without internet access: --manifests-dir DIR with the release "
                             "file saved as jobset-v0.10.1.yaml, or --manifests-mirror "
                             "https://HOST)"))
        fail_msg("%s", err.message);
    assert_int_equal(count_requests("PATCH", "/"), 0);
    gc_prereq_report_free(&rep);
}

/* The flags are checked before anything is sent, naming the flag. */
static void prereq_flags_are_checked(void **state)
{
    (void)state;
    gc_error err = {0};
    gc_prereq_request r = {.manifests_mirror = "http://mirror.example"};
    assert_int_equal(gc_prereq_check(&r, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--manifests-mirror http://mirror.example: give an "
                                        "https:// URL"));
    gc_error_clear(&err);
    r = (gc_prereq_request){.manifests_dir = "/no/such/folder"};
    assert_int_equal(gc_prereq_check(&r, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--manifests-dir /no/such/folder: not a folder"));
    gc_error_clear(&err);
    r = (gc_prereq_request){.skip = true, .manifests_dir = env->tmp};
    assert_int_equal(gc_prereq_check(&r, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--skip-prereqs installs nothing"));
}

/* job submit's install flags, through the binary: each refused, before anything is sent, where
 * it could do nothing (an offline submit, --skip-prereqs, a client of a Shared Pathways
 * Service), and a mirror that is not https://. */
static void submit_refuses_install_flags_that_would_do_nothing(void **state)
{
    (void)state;
    static const struct {
        const char *flags[4];
        const char *want;
    } cases[] = {
        {{"--dry-run-out", "-", "--manifests-dir", GCLUSTER_SOURCE_DIR},
         "--dry-run-out contacts no cluster and installs nothing: drop --manifests-dir and "
         "--manifests-mirror"},
        {{"--skip-prereqs", "--manifests-mirror", "https://mirror.example", NULL},
         "--manifests-mirror says where JobSet and Kueue are installed from, but "
         "--skip-prereqs installs nothing; drop one of them"},
        {{"--pathways-run-sps-workload", "--manifests-dir", GCLUSTER_SOURCE_DIR, NULL},
         "--pathways-run-sps-workload creates no JobSet and installs nothing"},
        {{"--manifests-mirror", "http://mirror.example", NULL, NULL},
         "--manifests-mirror http://mirror.example: give an https:// URL"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const char *argv[32] = {
            "job",       "submit", "--kubeconfig",   "/nonexistent/kubeconfig",
            "--name",    "t",      "--compute-type", "v6e-16",
            "--command", "true",   "--image",        "us-docker.pkg.dev/p/r/i:1"};
        size_t n = 12;
        for (size_t j = 0; j < 4 && cases[i].flags[j]; j++)
            argv[n++] = cases[i].flags[j];
        argv[n] = NULL;
        cli_result res;
        run_cli(&res, argv, NULL);
        if (res.exit_code != 2 || !strstr(res.err.data, cases[i].want))
            fail_msg("case %zu: exit %d, stderr: %s", i, res.exit_code, res.err.data);
        cli_result_free(&res);
    }
}

/* --help lists the files a --manifests-dir holds from the installer's own table, so the names
 * the tests above write (the ones the installer reads) are the ones a person is told. */
static void help_lists_the_files_the_installer_reads(void **state)
{
    (void)state;
    static const struct {
        const char *argv[4];
        void (*files)(gc_strings *out);
        const char *want[4];
    } cases[] = {
        {{"deploy", "--help", NULL},
         gc_deploy_release_files,
         {CERT_MANAGER, "jobset-v0.10.1.yaml", "kueue-v0.17.1.yaml", NULL}},
        {{"job", "submit", "--help", NULL},
         gc_prereq_release_files,
         {"jobset-v0.10.1.yaml", "kueue-v0.17.1.yaml", NULL}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        gc_strings files = {0};
        cases[i].files(&files);
        cli_result res;
        run_cli(&res, cases[i].argv, NULL);
        assert_int_equal(res.exit_code, 0);
        size_t n = 0;
        for (; cases[i].want[n]; n++) {
            assert_true(n < files.count);
            assert_string_equal(files.items[n], cases[i].want[n]);
            char *line = gc_xasprintf("\n  %s\n", cases[i].want[n]);
            if (!strstr(res.out.data, line))
                fail_msg("case %zu: %s not listed in: %s", i, cases[i].want[n], res.out.data);
            free(line);
        }
        assert_int_equal(files.count, n);
        cli_result_free(&res);
        gc_strings_free(&files);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(cert_manager_is_planned_from_its_release, kube_test_env_reset),
        cmocka_unit_test_setup(cert_manager_release_is_checked_before_anything_is_applied,
                               kube_test_env_reset),
        cmocka_unit_test_setup(cert_manager_changed_byte_is_refused, kube_test_env_reset),
        cmocka_unit_test_setup(cert_manager_settings_are_checked, kube_test_env_reset),
        cmocka_unit_test_setup(skip_prereqs_asks_nothing, kube_test_env_reset),
        cmocka_unit_test_setup(bare_cluster_dry_run_says_what_it_would_do, kube_test_env_reset),
        cmocka_unit_test_setup(both_present_changes_nothing, kube_test_env_reset),
        cmocka_unit_test_setup(own_priority_classes_are_kept, kube_test_env_reset),
        cmocka_unit_test_setup(only_the_missing_one_is_installed, kube_test_env_reset),
        cmocka_unit_test_setup(a_failed_download_names_the_other_sources, kube_test_env_reset),
        cmocka_unit_test_setup(prereq_flags_are_checked, kube_test_env_reset),
        cmocka_unit_test_setup(submit_refuses_install_flags_that_would_do_nothing,
                               kube_test_env_reset),
        cmocka_unit_test(help_lists_the_files_the_installer_reads),
    };
    return cmocka_run_group_tests(tests, setup, kube_test_env_teardown);
}
