/*
 * Overlays (job submit --gke-custom-templates-path) and job gke-template-extract: the merge is
 * RFC 7386's (its appendix A examples), extracted files passed back change nothing, an edited
 * one changes the manifest as edited, and every refusal names the file, the place and the field.
 */
#include "gcluster/emit.h"
#include "gcluster/submit.h"
#include "run_cli.h"
#include "submit/submit_checks.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, JSON_DECODE_ANY, &e);
    assert_non_null(v);
    return v;
}

/* RFC 7386 appendix A, each target, patch and result; the merge of a non-object patch (which
 * replaces the whole target) is the caller's, whose patches are mappings. */
static void test_merge_patch_rfc7386(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        {"{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"},
        {"{\"a\":\"b\"}", "{\"a\":null}", "{}"},
        {"{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"},
        {"{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
        {"{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"},
        {"{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"},
        {"{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"},
        {"{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"},
        {"{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *target = parse(cases[i][0]), *patch = parse(cases[i][1]);
        json_t *want = parse(cases[i][2]);
        submit_merge_patch(target, patch);
        if (!json_equal(target, want)) {
            char *got = json_dumps(target, JSON_COMPACT);
            fail_msg("case %zu: got %s, want %s", i, got, cases[i][2]);
        }
        json_decref(target);
        json_decref(patch);
        json_decref(want);
    }
}

static char dir[64];

static int make_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/gcluster-overlay-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char command[128];
    snprintf(command, sizeof(command), "rm -rf '%s'", dir);
    return system(command) == 0 ? 0 : -1;
}

static void write_text(const char *file, const char *text)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *path_of(const char *file)
{
    static char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    return path;
}

/* `job submit ... -o -`, with the overlays of `templates` when not NULL. */
static void submit(cli_result *r, const char *templates, bool pathways)
{
    const char *args[32] = {"job",     "submit",    "--name",    "ov",   "--queue", "q",
                            "--image", "busybox:1", "--command", "true", "-o",      "-"};
    size_t n = 12;
    if (pathways) {
        args[n++] = "--compute-type";
        args[n++] = "v6e-16";
        args[n++] = "--pathways";
        args[n++] = "--pathways-gcs-location";
        args[n++] = "gs://bucket/p";
    } else {
        args[n++] = "--compute-type";
        args[n++] = "n2-standard-8";
    }
    if (templates) {
        args[n++] = "--gke-custom-templates-path";
        args[n++] = templates;
    }
    args[n] = NULL;
    run_cli(r, args, NULL);
}

/* Extracted and passed back unedited: the same bytes as without overlays, for every kind. */
static void test_extract_then_submit_changes_nothing(void **state)
{
    (void)state;
    cli_result r;
    char out[128];
    snprintf(out, sizeof(out), "%s/t", dir);
    run_cli(&r, (const char *[]){"job", "gke-template-extract", "--output-dir", out, NULL}, NULL);
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out.data, "Wrote "));
    assert_non_null(strstr(r.out.data, "/t/indexed_job_service.yaml"));
    cli_result_free(&r);
    for (int pathways = 0; pathways < 2; pathways++) {
        cli_result plain, with;
        submit(&plain, NULL, pathways);
        submit(&with, out, pathways);
        assert_int_equal(plain.exit_code, 0);
        assert_int_equal(with.exit_code, 0);
        assert_string_equal(plain.out.data, with.out.data);
        cli_result_free(&plain);
        cli_result_free(&with);
    }
    /* The reference is ours, generated, and loads as the overlay form the submit reads. */
    gc_buf text;
    gc_buf_init(&text);
    char file[160];
    snprintf(file, sizeof(file), "%s/jobset.yaml", out);
    assert_int_equal(read_file(file, &text), 0);
    assert_non_null(strstr(text.data, "#   kind: JobSet\n"));
    assert_non_null(strstr(text.data, "RFC 7386"));
    assert_null(strstr(text.data, "{{"));
    gc_buf_free(&text);
    /* A second extract refuses to replace the files, and --overwrite does. */
    run_cli(&r, (const char *[]){"job", "gke-template-extract", "--output-dir", out, NULL}, NULL);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err.data, "jobset.yaml exists; pass --overwrite"));
    cli_result_free(&r);
    run_cli(
        &r,
        (const char *[]){"job", "gke-template-extract", "--output-dir", out, "--overwrite", NULL},
        NULL);
    assert_int_equal(r.exit_code, 0);
    cli_result_free(&r);
    run_cli(&r, (const char *[]){"job", "gke-template-extract", "--cluster", "c", NULL}, NULL);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err.data, "does not take --cluster"));
    cli_result_free(&r);
    char command[160];
    snprintf(command, sizeof(command), "rm -rf '%s'", out);
    assert_int_equal(system(command), 0);
}

/* An edited overlay: the label is added, a value replaced, a key removed, the rest kept. */
static void test_overlay_edits_the_manifest(void **state)
{
    (void)state;
    write_text("jobset.yaml", "# a comment\nmetadata:\n  labels:\n    team: research\n"
                              "  annotations:\n    gcluster.google.com/pathways: null\n"
                              "spec:\n  ttlSecondsAfterFinished: 60\n");
    write_text("pathways_jobset.yaml", "metadata:\n  annotations:\n    owner: ml\n");
    cli_result r;
    submit(&r, dir, false);
    assert_int_equal(r.exit_code, 0);
    gc_yaml_doc doc;
    gc_error err = {0};
    assert_int_equal(gc_yaml_load(r.out.data, r.out.len, "out", &doc, &err), 0);
    json_t *jobset = gc_yaml_root(&doc);
    json_t *labels = json_object_get(json_object_get(jobset, "metadata"), "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "team")), "research");
    assert_string_equal(json_string_value(json_object_get(labels, "kueue.x-k8s.io/queue-name")),
                        "q");
    json_t *annotations = json_object_get(json_object_get(jobset, "metadata"), "annotations");
    assert_null(json_object_get(annotations, "gcluster.google.com/pathways"));
    assert_null(json_object_get(annotations, "owner")); /* the Pathways file is not this kind's */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(jobset, "spec"),
                                                        "ttlSecondsAfterFinished")),
                     60);
    gc_yaml_doc_free(&doc);
    cli_result_free(&r);
    submit(&r, dir, true);
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.out.data, "    owner: ml\n"));
    assert_null(strstr(r.out.data, "team: research"));
    cli_result_free(&r);
    unlink(path_of("jobset.yaml"));
    unlink(path_of("pathways_jobset.yaml"));
}

/* Each refusal: exit 2, nothing written, a message naming the file, the place and the field. */
static void test_overlay_refusals(void **state)
{
    (void)state;
    static const char *const cases[][3] = {
        {"jobset.yaml", "metadata:\n  name: other\n",
         "jobset.yaml:2:9: metadata.name is gcluster's"},
        {"jobset.yaml", "metadata:\n  namespace: x\n",
         "jobset.yaml:2:14: metadata.namespace is gcluster's (set it with --gke-namespace)"},
        {"jobset.yaml", "metadata:\n  labels:\n    kueue.x-k8s.io/queue-name: other\n",
         "jobset.yaml:3:32: metadata.labels.kueue.x-k8s.io/queue-name is gcluster's"},
        {"indexed_job.yaml", "metadata:\n  labels:\n    gcluster.google.com/workload: w\n",
         "indexed_job.yaml:3:35: metadata.labels.gcluster.google.com/workload is gcluster's"},
        {"pathways_jobset.yaml", "metadata:\n  labels: null\n",
         "pathways_jobset.yaml:2:11: metadata.labels must be a mapping"},
        {"jobset.yaml", "metadata: x\n", "jobset.yaml:1:11: metadata must be a mapping"},
        {"jobset.yaml", "apiVersion: jobset.x-k8s.io/v1\n",
         "jobset.yaml:1:13: apiVersion is gcluster's"},
        {"jobset.yaml", "kind: Job\n", "jobset.yaml:1:7: kind is gcluster's"},
        {"jobset.yaml", "spec:\n  ttl: [1,\n", "jobset.yaml:3:1: "},
        {"jobset.yaml", "spec:\n\tx: 1\n", "jobset.yaml:2:1: "},
        {"jobset.yaml", "- a\n", "jobset.yaml is a list; an overlay is a mapping"},
        {"jobset.yaml", "a: 1\n---\nb: 2\n", "jobset.yaml holds 2 YAML documents"},
        {"JobSet.yaml", "a: 1\n",
         "unknown file \"JobSet.yaml\"; an overlay directory holds only "
         "jobset.yaml, pathways_jobset.yaml, indexed_job.yaml and "
         "indexed_job_service.yaml"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        write_text(cases[i][0], cases[i][1]);
        cli_result r;
        submit(&r, dir, false);
        if (r.exit_code != 2 || !strstr(r.err.data, cases[i][2]) || r.out.len)
            fail_msg("case %zu: exit %d, stderr %s", i, r.exit_code, r.err.data);
        cli_result_free(&r);
        unlink(path_of(cases[i][0]));
    }
    /* A directory that is not there names the command that makes one. */
    cli_result r;
    submit(&r, "/nonexistent-overlays", false);
    assert_int_equal(r.exit_code, 2);
    assert_non_null(strstr(r.err.data, "gke-template-extract --output-dir /nonexistent-overlays"));
    cli_result_free(&r);
}

/* The service is not queued: its overlay may label it as it likes, outside gcluster's labels. */
static void test_service_overlay_load(void **state)
{
    (void)state;
    write_text("indexed_job_service.yaml", "metadata:\n  labels:\n    team: research\n");
    gc_submit_plan plan;
    memset(&plan, 0, sizeof(plan));
    gc_error err = {0};
    assert_int_equal(gc_submit_overlays_load(&plan, dir, &err), 0);
    json_t *service = parse("{\"kind\":\"Service\",\"metadata\":{\"name\":\"s\",\"labels\":{}}}");
    submit_overlay_apply(plan.overlays, GC_TEMPLATE_INDEXED_SERVICE, service);
    assert_string_equal(
        json_string_value(json_object_get(
            json_object_get(json_object_get(service, "metadata"), "labels"), "team")),
        "research");
    json_decref(service);
    json_decref(plan.overlays);
    unlink(path_of("indexed_job_service.yaml"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_patch_rfc7386),
        cmocka_unit_test(test_extract_then_submit_changes_nothing),
        cmocka_unit_test(test_overlay_edits_the_manifest),
        cmocka_unit_test(test_overlay_refusals),
        cmocka_unit_test(test_service_overlay_load),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
