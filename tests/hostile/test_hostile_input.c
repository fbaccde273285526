/*
 * Hostile and mistaken input, through the real binary against the scripted API server: every
 * case must exit 2 with a message that names the flag (or the blueprint setting) and must send
 * nothing, not even the first pre-flight read. Also the library edges the CLI relies on: a
 * manifest builder that cannot build says so instead of dropping a container.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/deploy.h"
#include "gcluster/manifest.h"
#include "gcluster/submit.h"
#include "job_test.h"
#include "kube_test.h"
#include "run_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IMAGE "us-docker.pkg.dev/p/r/jax:1"
#define GCS   "gs://bucket/scratch"

static char *files; /* env files and blueprints the tests write */

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

/* Writes `text` to a file named `name` in the test's directory; returns its path (static). */
static const char *write_file(const char *name, const char *text)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", files, name);
    kube_test_write(path, "%s", text);
    return path;
}

/* Runs `gcluster ARGS... --kubeconfig K` with the test's scripted server as the cluster. */
static void gcluster_argv(cli_result *res, const char *const *given)
{
    const char *args[48];
    size_t n = 0;
    for (size_t i = 0; given[i]; i++)
        args[n++] = given[i];
    args[n++] = "--kubeconfig";
    args[n++] = jt_kubeconfig();
    args[n] = NULL;
    run_cli(res, args, NULL);
}

/* Exit 2, `flag` and `phrase` in the message, nothing on stdout, no request sent. */
static void assert_refused(const char *const *args, const char *flag, const char *phrase)
{
    cli_result res;
    gcluster_argv(&res, args);
    json_t *log = jt_requests();
    if (res.exit_code != GC_EXIT_USAGE || !strstr(res.err.data, flag) ||
        (phrase && !strstr(res.err.data, phrase)) || res.out.len || json_array_size(log))
        fail_msg("%s %s: want exit 2 naming %s (\"%s\") and no request; got exit %d, %zu "
                 "requests, stderr: %s",
                 args[0], args[1], flag, phrase ? phrase : "", res.exit_code, json_array_size(log),
                 res.err.data);
    json_decref(log);
    cli_result_free(&res);
}

/* A Pathways submit (pw, v6e-16, one slice) followed by `extra`, checked by assert_refused. */
static void assert_submit_refused(const char *const *extra, const char *flag, const char *phrase)
{
    const char *args[48] = {"job",
                            "submit",
                            "--name",
                            "pw",
                            "--compute-type",
                            "v6e-16",
                            "--pathways",
                            "--pathways-gcs-location",
                            GCS};
    size_t n = 9;
    for (size_t i = 0; extra[i]; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    assert_refused(args, flag, phrase);
}

#define RUN "--command", "python train.py", "--image", IMAGE

/* One flag with one bad value, and what the message must say. */
typedef struct flag_case {
    const char *flag;
    const char *value;
    const char *phrase;
} flag_case;

/* Each case added to a valid Pathways submit (a repeated --image replaces the first). */
static void refuse_each(const flag_case *cases, size_t count)
{
    for (size_t i = 0; i < count; i++)
        assert_submit_refused((const char *[]){RUN, cases[i].flag, cases[i].value, NULL},
                              cases[i].flag, cases[i].phrase);
}

/* The offline manifest for a Pathways submit plus `extra`: exit 0 expected. */
static void offline_manifest(cli_result *res, const char *const *extra)
{
    const char *args[48] = {"job",
                            "submit",
                            "--name",
                            "pw",
                            "--compute-type",
                            "v6e-16",
                            "--pathways",
                            "--pathways-gcs-location",
                            GCS,
                            "--dry-run-out",
                            "-"};
    size_t n = 11;
    for (size_t i = 0; extra[i]; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    gcluster_argv(res, args);
    if (res->exit_code != 0)
        fail_msg("exit %d: %s", res->exit_code, res->err.data);
}

/* UTF-8 */

static void invalid_utf8_in_any_string_flag_is_refused(void **state)
{
    (void)state;
    static const flag_case cases[] = {
        /* jansson refused the string and the builder dropped the user's container (exit 0) */
        {"--command", "echo \xff", "--command is not valid UTF-8"},
        {"--command", "echo \xc0\xaf", "--command is not valid UTF-8"},         /* overlong '/' */
        {"--command", "echo \xed\xa0\x80", "--command is not valid UTF-8"},     /* a surrogate */
        {"--command", "echo \xe2\x82", "--command is not valid UTF-8"},         /* cut short */
        {"--command", "echo \xf4\x90\x80\x80", "--command is not valid UTF-8"}, /* > U+10FFFF */
        {"--pathways-proxy-args", "--flag=\xfe", "--pathways-proxy-args is not valid UTF-8"},
        {"--pathways-worker-args", "--flag=\x80", "--pathways-worker-args is not valid UTF-8"},
        {"--mount", "/data\xff:/data", "--mount is not valid UTF-8"},
        {"--node-constraint", "zone=\xff", "--node-constraint is not valid UTF-8"},
        {"--env", "A=\xff", "--env is not valid UTF-8"},
    };
    refuse_each(cases, sizeof(cases) / sizeof(*cases));
}

/* The message says where the bad byte is, and never prints it. */
static void utf8_error_shows_the_offset_not_the_bytes(void **state)
{
    (void)state;
    cli_result res;
    gcluster_argv(&res, (const char *[]){"job", "logs", "pw", "--container", "ab\xff", NULL});
    assert_int_equal(res.exit_code, GC_EXIT_USAGE);
    assert_non_null(strstr(res.err.data, "--container is not valid UTF-8"));
    assert_non_null(strstr(res.err.data, "byte 3 (0xff)"));
    assert_null(strchr(res.err.data, '\xff'));
    cli_result_free(&res);
    assert_int_equal(jt_request_count(), 0);
}

static void valid_utf8_reaches_the_manifest_byte_for_byte(void **state)
{
    (void)state;
    cli_result res;
    offline_manifest(&res, (const char *[]){"--command", "echo 'caf\xc3\xa9 \xf0\x9f\x9a\x80'",
                                            "--image", IMAGE, "--output", "json", NULL});
    assert_non_null(strstr(res.out.data, "echo 'caf\xc3\xa9 \xf0\x9f\x9a\x80'"));
    cli_result_free(&res);
}

/* Image references */

static void image_references_follow_the_reference_grammar(void **state)
{
    (void)state;
    static const flag_case cases[] = {
        {"--image", "my image:1", "lower-case letters, digits"},
        {"--image", "us-docker.pkg.dev/My-Project/repo/img:1", "lower-case"},
        {"--image", "us-docker.pkg.dev/p/r/img:", "tag"},
        {"--image", "us-docker.pkg.dev/p/r/img:-x", "tag"},
        {"--image", "us-docker.pkg.dev/p/r/img@sha256:abc", "digest"},
        {"--image", "us-docker.pkg.dev/p/r/img@md5:0123456789abcdef0123456789abcdef", "sha256"},
        {"--image", "us-docker.pkg.dev/p/r..s/img:1", "separator"},
        {"--image", "-bad.example.com/p/img:1", "host"},
        {"--image", "registry.example.com:port/p/img:1", "port"},
        {"--pathways-server-image", "us-docker.pkg.dev/p/r/Server:1", "lower-case"},
        {"--pathways-worker-image", "worker image", "lower-case letters, digits"},
        {"--pathways-proxy-server-image", "proxy:bad tag", "tag"},
        {"--pathways-colocated-python-sidecar-image", "a/B/c", "lower-case"},
    };
    refuse_each(cases, sizeof(cases) / sizeof(*cases));
}

static void valid_image_references_are_kept_as_written(void **state)
{
    (void)state;
    static const char *const ok[] = {
        "python",
        "python:3.11-slim",
        "localhost:5000/a/b:v1",
        "127.0.0.1:5000/team__a/img_2:_tag.x-1",
        "Registry.Example.COM/p/img:V1",
        "us-docker.pkg.dev/p/r/img@sha256:"
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        "[::1]:5000/img:1",
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
        cli_result res;
        offline_manifest(&res, (const char *[]){"--command", "x", "--image", ok[i], NULL});
        char want[256];
        snprintf(want, sizeof(want), "image: %s\n", ok[i]);
        if (!strstr(res.out.data, want) && !strstr(res.out.data, ok[i]))
            fail_msg("%s is not in the manifest", ok[i]);
        cli_result_free(&res);
    }
}

/* Mounts */

static void mount_targets_are_unique_and_leave_tmp_alone(void **state)
{
    (void)state;
    assert_submit_refused((const char *[]){RUN, "--mount", "gs://bucket-1:/tmp", NULL}, "--mount",
                          "/tmp");
    assert_submit_refused((const char *[]){RUN, "--mount", "/mnt/x:/tmp/", NULL}, "--mount",
                          "/tmp");
    assert_submit_refused(
        (const char *[]){RUN, "--mount", "/a:/data", "--mount", "gs://bucket-1:/data/", NULL},
        "--mount", "two mounts use the destination /data");
    assert_submit_refused(
        (const char *[]){RUN, "--mount", "/a:/data//x", "--mount", "/b:/data/x", NULL}, "--mount",
        "two mounts use the destination /data/x");
    assert_submit_refused((const char *[]){RUN, "--mount", "/a:/data/../etc", NULL}, "--mount",
                          "..");
}

/* Without Pathways there is no shared /tmp, so /tmp is the user's to mount. */
static void plain_jobs_may_mount_tmp(void **state)
{
    (void)state;
    cli_result res;
    gcluster_argv(&res,
                  (const char *[]){"job", "submit", "--name", "plain", "--compute-type", "v6e-16",
                                   RUN, "--mount", "/mnt/fast:/tmp", "--dry-run-out", "-", NULL});
    assert_int_equal(res.exit_code, 0);
    assert_non_null(strstr(res.out.data, "mountPath: /tmp\n"));
    cli_result_free(&res);
}

/* Flags checked before connecting */

static void logs_flags_are_checked_before_connecting(void **state)
{
    (void)state;
    assert_refused((const char *[]){"job", "logs", "pw", "--slice", "-1", NULL}, "--slice",
                   "0 or more");
    assert_refused((const char *[]){"job", "logs", "pw", "--host", "-3", NULL}, "--host",
                   "0 or more");
    assert_refused((const char *[]){"job", "logs", "pw", "--container", "Not_A_Name", NULL},
                   "--container", "not a container name");
}

static void namespace_is_checked_before_connecting(void **state)
{
    (void)state;
    assert_refused((const char *[]){"job", "list", "--namespace", "Team_A", NULL}, "--namespace",
                   "not a namespace name");
    assert_refused((const char *[]){"job", "inspect", "pw", "--namespace", "a/b", NULL},
                   "--namespace", "not a namespace name");
}

static void elastic_slices_must_leave_a_slice_running(void **state)
{
    (void)state;
    assert_submit_refused(
        (const char *[]){RUN, "--num-slices", "2", "--pathways-elastic-slices", "2", NULL},
        "--pathways-elastic-slices", "nothing would be left running");
    assert_submit_refused((const char *[]){RUN, "--pathways-elastic-slices", "1", NULL},
                          "--pathways-elastic-slices", "less than --num-slices (1)");
}

/* Environment variables */

static void env_names_are_what_the_api_server_accepts(void **state)
{
    (void)state;
    static const flag_case cases[] = {
        {"--env", "1ABC=x", "\"1ABC\" is not a valid environment variable name"},
        {"--env", "A B=s3cret", "\"A B\" is not a valid environment variable name"},
        {"--env", "..A=x", "not starting with a digit or \"..\""},
        {"--env", "=x", "\"\" is not a valid environment variable name"},
        {"--env", "NOVALUE", "use KEY=VALUE"},
        {"--pathways-worker-env", "X:Y=1", "\"X:Y\" is not a valid environment variable name"},
    };
    refuse_each(cases, sizeof(cases) / sizeof(*cases));
    assert_submit_refused((const char *[]){RUN, "--env", "A=1", "--env", "A=2", NULL}, "--env",
                          "--env and --env both set A");
    /* A value is never printed: it may be a token. */
    cli_result res;
    gcluster_argv(&res, (const char *[]){"job", "submit", "--name", "pw", "--compute-type",
                                         "v6e-16", RUN, "--env", "A B=s3cret", NULL});
    assert_null(strstr(res.err.data, "s3cret"));
    cli_result_free(&res);
}

static void env_may_not_replace_what_gcluster_sets(void **state)
{
    (void)state;
    assert_submit_refused((const char *[]){RUN, "--env", "JAX_PLATFORMS=cpu", NULL}, "--env",
                          "--env sets JAX_PLATFORMS, which gcluster already sets in container "
                          "workload-container (JAX_PLATFORMS=proxy)");
    assert_submit_refused(
        (const char *[]){RUN, "--pathways-proxy-env", "PATHWAYS_HEAD=10.0.0.1", NULL},
        "--pathways-proxy-env", "container pathways-proxy");
    assert_submit_refused(
        (const char *[]){RUN, "--pathways-server-env", "TPU_SKIP_MDS_QUERY=0", NULL},
        "--pathways-server-env", "container pathways-rm");
    /* The worker's verbose variables are gcluster's only with --verbose. */
    cli_result res;
    offline_manifest(&res,
                     (const char *[]){RUN, "--pathways-worker-env", "TPU_MIN_LOG_LEVEL=1", NULL});
    assert_non_null(strstr(res.out.data, "name: TPU_MIN_LOG_LEVEL\n"));
    cli_result_free(&res);
    assert_submit_refused(
        (const char *[]){RUN, "--verbose", "--pathways-worker-env", "TPU_MIN_LOG_LEVEL=1", NULL},
        "--pathways-worker-env", "container pathways-worker");
}

static void role_env_needs_pathways(void **state)
{
    (void)state;
    assert_refused((const char *[]){"job", "submit", "--name", "plain", "--compute-type", "v6e-16",
                                    RUN, "--pathways-worker-env", "A=1", NULL},
                   "--pathways-worker-env", "only applies to Pathways jobs");
}

static void env_file_errors_name_the_file_and_line(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *phrase;
    } cases[] = {
        {"# settings\nA=1\nJUST_A_NAME\n", "bad.env:3: expected KEY=VALUE"},
        {"A=1\n\n  9LIVES=x\n", "bad.env:3: \"9LIVES\" is not a valid environment variable"},
        {"export TOKEN=abc\n", "without \"export\""},
        {"A=caf\xe9\n", "bad.env:1 is not valid UTF-8"},
        {"A=1\nA=2\n", "--env-file "},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const char *path = write_file("bad.env", cases[i].text);
        assert_submit_refused((const char *[]){RUN, "--env-file", path, NULL}, "--env-file",
                              cases[i].phrase);
    }
    assert_submit_refused((const char *[]){RUN, "--env-file", "/nonexistent/x.env", NULL},
                          "--env-file", "/nonexistent/x.env");
}

/* Quotes: one pair around the whole value is removed; the rest is literal. */
static void env_file_values_are_taken_literally(void **state)
{
    (void)state;
    const char *path = write_file("ok.env", "# comment\r\n"
                                            "\r\n"
                                            "  PLAIN=a b \r\n"
                                            "DOUBLE=\"x y\"\n"
                                            "SINGLE='$HOME'\n"
                                            "HALF=\"open\n"
                                            "HASH=a#b\n"
                                            "EQUALS=k=v\n"
                                            "EMPTY=\n"
                                            "LAST=no newline");
    cli_result res;
    offline_manifest(&res, (const char *[]){RUN, "--env-file", path, "--output", "json", NULL});
    json_t *jobset = json_loads(res.out.data, 0, NULL);
    assert_non_null(jobset);
    json_t *head =
        json_array_get(json_object_get(json_object_get(jobset, "spec"), "replicatedJobs"), 0);
    json_t *pod = json_object_get(
        json_object_get(json_object_get(json_object_get(head, "template"), "spec"), "template"),
        "spec");
    json_t *env = json_object_get(json_array_get(json_object_get(pod, "containers"), 0), "env");
    static const char *const want[][2] = {
        {"PLAIN", "a b "}, {"DOUBLE", "x y"}, {"SINGLE", "$HOME"}, {"HALF", "\"open"},
        {"HASH", "a#b"},   {"EQUALS", "k=v"}, {"EMPTY", ""},       {"LAST", "no newline"},
    };
    size_t ours = json_array_size(env) - 8; /* gcluster's come first */
    for (size_t i = 0; i < 8; i++) {
        json_t *e = json_array_get(env, ours + i);
        assert_string_equal(json_string_value(json_object_get(e, "name")), want[i][0]);
        assert_string_equal(json_string_value(json_object_get(e, "value")), want[i][1]);
    }
    json_decref(jobset);
    cli_result_free(&res);
}

/* Deploy */

static void deploy_checks_the_kueue_configuration_before_connecting(void **state)
{
    (void)state;
    const char *path = write_file("bp.yaml", "blueprint_name: t\n"
                                             "vars: {project_id: p, deployment_name: d, region: "
                                             "us-east5, quota: 100}\n"
                                             "deployment_groups:\n"
                                             "- group: g\n"
                                             "  modules:\n"
                                             "  - id: cluster\n"
                                             "    source: modules/scheduler/gke-cluster\n"
                                             "    settings: {enable_pathways_for_tpus: true}\n"
                                             "  - id: kueue\n"
                                             "    source: modules/management/kubectl-apply\n"
                                             "    settings:\n"
                                             "      kueue:\n"
                                             "        install: true\n"
                                             "        config_template_vars:\n"
                                             "          accelerator_type: tpu-v6e-slice\n"
                                             "          tpu_quota: $(vars.quota)\n");
    assert_refused((const char *[]){"deploy", path, "--context", "t", "--vars", "quota=lots", NULL},
                   "tpu_quota", "not a Kubernetes quantity");
}

/* The builder */

/* A Pathways v6e-16 workload as gc_submit_prepare would leave it; fields point at literals. */
static void pathways_workload(gc_workload *w)
{
    gc_error err = {0};
    memset(w, 0, sizeof(*w));
    assert_int_equal(gc_catalog_resolve("v6e-16", NULL, NULL, &w->compute, &err), 0);
    w->name = "pw";
    w->queue = "user-queue";
    w->num_slices = 1;
    w->nodes_per_slice = w->compute.vms_per_slice;
    w->pathways = true;
    w->gcs_location = GCS;
    w->head_pool = "cpu-np";
    w->proxy_image = w->server_image = w->worker_image = w->image = IMAGE;
    w->command = "python train.py";
}

/* jansson refuses the string; before, the head pod was built without the user's container
 * and the job was created anyway. */
static void builder_failure_is_an_error_not_a_missing_container(void **state)
{
    (void)state;
    gc_workload w;
    pathways_workload(&w);
    w.command = "echo \xff"; /* what the CLI refuses; a library caller might not */
    json_t *jobset = (json_t *)1;
    gc_error err = {0};
    assert_int_equal(gc_workload_jobset(&w, &jobset, &err), GC_EXIT_USAGE);
    assert_null(jobset);
    assert_non_null(strstr(err.message, "the JobSet pw cannot be built"));

    w.command = "python train.py";
    w.mounts = &(gc_mount){.kind = GC_MOUNT_HOST_PATH, .source = "/d\xfe", .target = "/d"};
    w.mount_count = 1;
    assert_int_equal(gc_workload_jobset(&w, &jobset, &err), GC_EXIT_USAGE);
    assert_null(jobset);
}

static void user_env_may_not_replace_what_pathways_needs(void **state)
{
    (void)state;
    gc_workload w;
    pathways_workload(&w);
    gc_env_var env[] = {
        {.name = "JAX_PLATFORMS", .value = "cpu", .scope = GC_ENV_WORKLOAD, .source = "--env"},
    };
    w.env = env;
    w.env_count = 1;
    json_t *jobset;
    gc_error err = {0};
    assert_int_equal(gc_workload_jobset(&w, &jobset, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message,
                        "--env sets JAX_PLATFORMS, which gcluster already sets in container "
                        "workload-container (JAX_PLATFORMS=proxy) for the job to work; remove it "
                        "from --env or use another name");

    env[0] = (gc_env_var){.name = "MEGASCALE_SLICE_ID",
                          .value = "0",
                          .scope = GC_ENV_WORKER,
                          .source = "--pathways-worker-env"};
    assert_int_equal(gc_workload_jobset(&w, &jobset, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "container pathways-worker (MEGASCALE_SLICE_ID from the "
                                        "pod's metadata.labels['jobset.sigs.k8s.io/job-index'])"));

    /* The same name for two different roles (or a role and the workload) is two different
     * containers. */
    gc_env_var two[] = {
        {.name = "LOG", .value = "1", .scope = GC_ENV_PROXY, .source = "--pathways-proxy-env"},
        {.name = "LOG", .value = "2", .scope = GC_ENV_WORKER, .source = "--pathways-worker-env"},
        {.name = "LOG", .value = "3", .scope = GC_ENV_WORKLOAD, .source = "--env-file a.env:2"},
        {.name = "LOG", .value = "4", .scope = GC_ENV_WORKLOAD, .source = "--env"},
    };
    w.env = two;
    w.env_count = 3;
    assert_int_equal(gc_workload_jobset(&w, &jobset, &err), 0);
    json_decref(jobset);
    w.env_count = 4;
    assert_int_equal(gc_workload_jobset(&w, &jobset, &err), GC_EXIT_USAGE);
    assert_string_equal(err.message, "--env-file a.env:2 and --env both set LOG for the same "
                                     "container; keep one");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(invalid_utf8_in_any_string_flag_is_refused, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(utf8_error_shows_the_offset_not_the_bytes, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(valid_utf8_reaches_the_manifest_byte_for_byte, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(image_references_follow_the_reference_grammar, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(valid_image_references_are_kept_as_written, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(mount_targets_are_unique_and_leave_tmp_alone, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(plain_jobs_may_mount_tmp, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(logs_flags_are_checked_before_connecting, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(namespace_is_checked_before_connecting, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(elastic_slices_must_leave_a_slice_running, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(env_names_are_what_the_api_server_accepts, jt_open,
                                        jt_close),
        cmocka_unit_test_setup_teardown(env_may_not_replace_what_gcluster_sets, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(role_env_needs_pathways, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(env_file_errors_name_the_file_and_line, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(env_file_values_are_taken_literally, jt_open, jt_close),
        cmocka_unit_test_setup_teardown(deploy_checks_the_kueue_configuration_before_connecting,
                                        jt_open, jt_close),
        cmocka_unit_test(builder_failure_is_an_error_not_a_missing_container),
        cmocka_unit_test(user_env_may_not_replace_what_pathways_needs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
