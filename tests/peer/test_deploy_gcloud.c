/*
 * Every gcloud line a deploy plan holds (and each shape of line a destroy plan holds) against the
 * real gcloud argument parser, offline: with an empty CLOUDSDK_CONFIG a line that parses stops at
 * "You do not currently have an active account" (or "no credentialed account"); a usage error (exit
 * 2, "unrecognized arguments", "argument ... invalid") means the plan would fail in a user's
 * project. gcloud must be installed: the test fails, never skips, without it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deploy/internal.h"
#include "gcluster/deploy.h"
#include "gcluster/process.h"
#include "kube_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CT_EXAMPLES GCLUSTER_SOURCE_DIR "/tests/fixtures/cluster-toolkit/examples"
/* Ours, the fixture with every setting, the buckets fixture, Cluster Toolkit's two advanced
 * blueprints (the Pathways guide's), and its A4 (gpu-rdma-vpc) and A3 Mega (multivpc) ones, with
 * the variables they leave for the user. */
static const struct {
    const char *path;
    const char *vars[8];
} blueprints[] = {
    {GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml", {NULL}},
    {GCLUSTER_SOURCE_DIR "/examples/gke-tpu-7x-pathways.yaml", {NULL}},
    {GCLUSTER_SOURCE_DIR "/tests/fixtures/deploy/every-setting.yaml", {NULL}},
    {GCLUSTER_SOURCE_DIR "/tests/fixtures/deploy/storage.yaml", {NULL}},
    {CT_EXAMPLES "/gke-tpu-v6e/gke-tpu-v6e-advanced.yaml",
     {"project_id=my-project", "region=us-east5", "zone=us-east5-b", "num_slices=2",
      "tpu_topology=4x4", "authorized_cidr=10.0.0.0/32", "reservation=my-reservation", NULL}},
    {CT_EXAMPLES "/gke-tpu-7x/gke-tpu-7x-advanced.yaml",
     {"project_id=my-project", "region=us-central1", "zone=us-central1-c", "num_slices=2",
      "tpu_topology=2x2x2", "authorized_cidr=10.0.0.0/32", "reservation=my-reservation", NULL}},
    {CT_EXAMPLES "/gke-a4/gke-a4.yaml",
     {"project_id=my-project", "deployment_name=a4", "region=us-east5", "zone=us-east5-b",
      "static_node_count=2", "reservation=my-reservation", "authorized_cidr=10.0.0.0/32", NULL}},
    {CT_EXAMPLES "/gke-a3-megagpu/gke-a3-megagpu.yaml",
     {"project_id=my-project", "region=us-east5", "zone=us-east5-b", "static_node_count=2",
      "reservation=my-reservation", "authorized_cidr=10.0.0.0/32", NULL}},
};

/* Runs one argv through gcloud; fails the test unless it got past parsing. */
static void assert_parses(const char *gcloud, char **argv, const char *config)
{
    char *env[] = {gc_xasprintf("CLOUDSDK_CONFIG=%s", config),
                   gc_xstrdup("CLOUDSDK_CORE_DISABLE_PROMPTS=1")};
    gc_process p = {
        .program = gcloud, .argv = argv, .env_add = env, .env_add_count = 2, .timeout_ms = 120000};
    gc_process_result r;
    gc_error err = {0};
    if (gc_process_run(&p, &r, &err))
        fail_msg("running gcloud: %s", err.message);
    char *line = deploy_argv_shell_line(argv);
    const char *text = r.err.data ? r.err.data : "";
    bool usage = r.exit_status == 2 || strstr(text, "unrecognized arguments") ||
                 strstr(text, "Invalid choice") ||
                 (strstr(text, "argument") && strstr(text, "invalid"));
    bool parsed = strstr(text, "You do not currently have an active account") ||
                  strstr(text, "no credentialed account");
    if (usage || !parsed)
        fail_msg("gcloud did not get past parsing (exit %d):\n  %s\n%s", r.exit_status, line, text);
    free(line);
    gc_process_result_free(&r);
    free(env[0]);
    free(env[1]);
}

/* "destroy KIND check|delete --flag=V --other= ...": a line's flags without their values. */
static char *shape_of(gc_cloud_step_kind kind, size_t which, char **argv)
{
    gc_buf b;
    gc_buf_init(&b);
    gc_buf_printf(&b, "destroy %s %s", gc_cloud_step_kind_name(kind), which ? "delete" : "check");
    for (char **a = argv; *a; a++) {
        if (strncmp(*a, "--", 2))
            continue;
        const char *eq = strchr(*a, '=');
        if (eq)
            gc_buf_printf(&b, " %.*s%s", (int)(eq - *a + 1), *a, eq[1] ? "V" : "");
        else
            gc_buf_printf(&b, " %s", *a);
    }
    return gc_buf_detach(&b);
}

static void every_plan_line_parses(void **state)
{
    (void)state;
    char *gcloud = gc_process_find_program("gcloud");
    if (!gcloud)
        fail_msg("gcloud is not on PATH; this tier needs the Google Cloud CLI");
    char *config = kube_test_tmpdir();
    json_t *seen = json_object();
    size_t lines = 0, destroy_lines = 0;
    for (size_t b = 0; b < sizeof(blueprints) / sizeof(*blueprints); b++) {
        gc_blueprint bp;
        gc_error err = {0};
        size_t var_count = 0;
        while (blueprints[b].vars[var_count])
            var_count++;
        gc_blueprint_options o = {.vars = blueprints[b].vars, .var_count = var_count};
        if (gc_blueprint_open(blueprints[b].path, &o, &bp, &err))
            fail_msg("%s", err.message);
        gc_cloud_plan plan;
        if (deploy_cloud_plan_build(&bp, &(gc_cloud_target){0}, &plan, &err))
            fail_msg("%s", err.message);
        assert_true(plan.count > 5);
        for (size_t i = 0; i < plan.count; i++) {
            char **argvs[] = {plan.steps[i].check, plan.steps[i].create};
            for (size_t k = 0; k < 2; k++) {
                if (!argvs[k])
                    continue;
                /* Lines that differ only in names parse alike; run each shape once. */
                char *line = deploy_argv_shell_line(argvs[k]);
                if (!json_object_get(seen, line)) {
                    json_object_set_new(seen, line, json_true());
                    assert_parses(gcloud, argvs[k], config);
                    lines++;
                }
                free(line);
            }
        }
        deploy_cloud_plan_free(&plan);
        /* destroy's lines: each kind's describe and delete once per shape (its flags, with
         * or without a value), as they differ from each other only in names */
        if (deploy_destroy_plan_build(&bp, &(gc_cloud_target){0}, &plan, &err))
            fail_msg("%s", err.message);
        assert_true(plan.count > 5);
        for (size_t i = 0; i < plan.count; i++) {
            char **argvs[] = {plan.steps[i].check, plan.steps[i].create};
            for (size_t k = 0; k < 2; k++) {
                char *shape = shape_of(plan.steps[i].kind, k, argvs[k]);
                if (!json_object_get(seen, shape)) {
                    json_object_set_new(seen, shape, json_true());
                    assert_parses(gcloud, argvs[k], config);
                    lines++;
                    destroy_lines++;
                }
                free(shape);
            }
        }
        deploy_cloud_plan_free(&plan);
        gc_blueprint_free(&bp);
    }
    assert_true(lines > 30);
    assert_true(destroy_lines >= 12);
    json_decref(seen);
    kube_test_rmtree(config); /* frees it */
    free(gcloud);
}

/* The checker itself: a line with a flag gcloud lacks is caught. */
static void a_wrong_flag_is_caught(void **state)
{
    (void)state;
    char *gcloud = gc_process_find_program("gcloud");
    if (!gcloud)
        fail_msg("gcloud is not on PATH; this tier needs the Google Cloud CLI");
    char *config = kube_test_tmpdir();
    char *argv[] = {"gcloud", "container",   "node-pools",     "create",
                    "p",      "--cluster=c", "--no-such-flag", NULL};
    char *env[] = {gc_xasprintf("CLOUDSDK_CONFIG=%s", config)};
    gc_process p = {
        .program = gcloud, .argv = argv, .env_add = env, .env_add_count = 1, .timeout_ms = 120000};
    gc_process_result r;
    gc_error err = {0};
    assert_int_equal(gc_process_run(&p, &r, &err), 0);
    assert_int_equal(r.exit_status, 2);
    assert_non_null(strstr(r.err.data, "unrecognized arguments"));
    gc_process_result_free(&r);
    free(env[0]);
    kube_test_rmtree(config); /* frees it */
    free(gcloud);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_wrong_flag_is_caught),
        cmocka_unit_test(every_plan_line_parses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
