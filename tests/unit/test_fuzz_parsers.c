/*
 * Mutation fuzzing of every parser that reads user or server input (SPEC §7): blueprints,
 * Kueue templates, kubeconfigs, YAML in general, and the JobSet/Workload JSON the status
 * derivation reads. Valid seeds are mutated with a fixed-seed generator (so a failure
 * reproduces), and each parser must either accept the input or reject it with exit code 2 and
 * a message, never crash; the ASan/UBSan build of this test is where memory errors surface.
 * The iteration count is bounded; GCLUSTER_FUZZ_ITERATIONS raises it for a longer local run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/deploy.h"
#include "gcluster/emit.h"
#include "gcluster/job.h"
#include "kube/kubeconfig.h"
#include "kube_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ITERATIONS 1500

static char *tmp;
static int accepted, rejected; /* of the current fuzz() run, printed so a run that only ever
                                  rejects (a seed that never parses) is visible */
static unsigned long long rng_state = 0x9e3779b97f4a7c15ULL;

static int setup(void **state)
{
    (void)state;
    tmp = kube_test_tmpdir();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    kube_test_rmtree(tmp);
    return 0;
}

static unsigned next_random(unsigned bound)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % bound);
}

static int iterations(void)
{
    const char *env = getenv("GCLUSTER_FUZZ_ITERATIONS");
    int n = env ? atoi(env) : 0;
    return n > 0 ? n : DEFAULT_ITERATIONS;
}

/* Tokens that mean something to YAML, to templates or to blueprint references. */
static const char *const tokens[] = {
    ":",         ": ",      "- ",        "\n",    "\n  ", "{",
    "}",         "[",       "]",         "\"",    "'",    "&a ",
    "*a",        "<<: ",    "!!binary ", "---\n", "...",  "#",
    "\t",        "\xff",    "|\n",       ">-\n",  "?",    "$(vars.",
    "$(vars.x)", ")",       "${",        "%{",    "$${",  "\\",
    "null",      "1e99",    "-0",        "~",     "\0",   "9999999999999999999999",
    "0x1F",      "%TAG ! ", "@",         "`",     ",",    "\r\n",
};

/* One random edit of `b`. */
static void mutate(gc_buf *b)
{
    size_t at = b->len ? next_random((unsigned)b->len + 1) : 0;
    gc_buf out;
    gc_buf_init(&out);
    switch (next_random(5)) {
    case 0: /* flip a byte */
        if (b->len)
            b->data[at % b->len] ^= (char)(1u << next_random(8));
        gc_buf_free(&out);
        return;
    case 1: { /* delete a run */
        size_t n = next_random(32) + 1;
        gc_buf_append(&out, b->data, at);
        if (at + n < b->len)
            gc_buf_append(&out, b->data + at + n, b->len - at - n);
        break;
    }
    case 2: { /* insert a token */
        const char *t = tokens[next_random(sizeof(tokens) / sizeof(*tokens))];
        gc_buf_append(&out, b->data, at);
        gc_buf_append(&out, t, *t ? strlen(t) : 1);
        gc_buf_append(&out, b->data + at, b->len - at);
        break;
    }
    case 3: { /* duplicate a run */
        size_t n = at < b->len ? next_random((unsigned)(b->len - at)) % 200 : 0;
        gc_buf_append(&out, b->data, at + n);
        gc_buf_append(&out, b->data + at, b->len - at);
        break;
    }
    default: /* truncate */
        gc_buf_append(&out, b->data, at);
        break;
    }
    gc_buf_reset(b);
    gc_buf_append(b, out.data, out.len);
    gc_buf_free(&out);
}

static void read_seed(const char *path, gc_buf *out)
{
    gc_buf_init(out);
    char *text = kube_test_read(path);
    assert_non_null(text);
    gc_buf_puts(out, text);
    free(text);
}

/* Runs `check` on `iterations()` mutants of the seed file (each mutant builds on the last,
 * restarting from the seed now and then so mutants stay close to valid input). */
static void fuzz(const char *seed_path, void (*check)(const gc_buf *input))
{
    gc_buf seed, input;
    read_seed(seed_path, &seed);
    gc_buf_init(&input);
    accepted = rejected = 0;
    int n = iterations();
    for (int i = 0; i < n; i++) {
        if (i % 8 == 0) {
            gc_buf_reset(&input);
            gc_buf_append(&input, seed.data, seed.len);
        }
        mutate(&input);
        check(&input);
    }
    gc_buf_free(&seed);
    gc_buf_free(&input);
    printf("fuzz %s: %d mutants, %d accepted, %d rejected with a message\n",
           strrchr(seed_path, '/') + 1, n, accepted, rejected);
    /* Both outcomes must occur, or the mutants are not exercising the parser. */
    assert_true(accepted > 0 && rejected > 0);
}

static void expect_usage_error(int rc, const gc_error *err, const char *what)
{
    if (rc == 0) {
        accepted++;
        return;
    }
    rejected++;
    if (rc != GC_EXIT_USAGE || !err->message[0])
        fail_msg("%s: rc %d, message \"%s\"", what, rc, err->message);
}

static const char *write_input(const char *name, const gc_buf *input)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmp, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite(input->data, 1, input->len, f);
    fclose(f);
    return path;
}

static void check_blueprint(const gc_buf *input)
{
    gc_blueprint bp;
    gc_error err = {0};
    int rc = gc_blueprint_load(write_input("bp.yaml", input), NULL, 0, &bp, &err);
    expect_usage_error(rc, &err, "blueprint");
    if (rc)
        return;
    json_t *objects = NULL;
    gc_buf warnings;
    gc_buf_init(&warnings);
    rc = gc_kueue_objects(&bp, NULL, "v1beta2", &objects, &warnings, &err);
    expect_usage_error(rc, &err, "kueue objects");
    json_decref(objects);
    gc_buf_free(&warnings);
    gc_blueprint_free(&bp);
}

static void check_template(const gc_buf *input)
{
    static json_t *vars;
    if (!vars)
        vars = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "accelerator_type", "tpu7x",
                         "pathways_head_np", "cpu-np", "pathways_cpu_quota", "480", "tpu_quota", 8,
                         "pathways_memory_quota", "2000G", "namespace", "default");
    gc_buf out;
    gc_buf_init(&out);
    gc_error err = {0};
    int rc = gc_template_render(input->data, input->len, vars, "t", &out, &err);
    expect_usage_error(rc, &err, "template");
    gc_buf_free(&out);
}

static void check_kubeconfig(const gc_buf *input)
{
    const char *path = write_input("kubeconfig", input);
    kube_config cfg;
    gc_error err = {0};
    int rc = kube_config_load_files(&path, 1, true, &cfg, &err);
    expect_usage_error(rc, &err, "kubeconfig");
    if (!rc)
        kube_config_free(&cfg);
}

/* A JobSet manifest as the server might return it, mangled: the status derivation must cope
 * with any shape (wrong types, missing fields) without crashing. */
static void check_jobset(const gc_buf *input)
{
    gc_yaml_doc doc;
    gc_error err = {0};
    if (gc_yaml_load(input->data, input->len, "jobset", &doc, &err)) {
        if (!err.message[0])
            fail_msg("YAML error without a message");
        rejected++;
        gc_yaml_doc_free(&doc);
        return;
    }
    accepted++;
    json_t *root = gc_yaml_root(&doc);
    if (root) {
        gc_job_facts facts;
        gc_job_facts_from_jobset(root, &facts);
        gc_job_facts_add_workload(&facts, root);
        gc_job_facts_add_pod(&facts, root);
        gc_job_status status;
        gc_job_status_derive(&facts, &status);
        gc_buf yaml;
        gc_buf_init(&yaml);
        gc_emit_yaml(root, &yaml, &err); /* and whatever loaded must emit */
        gc_buf_free(&yaml);
    }
    gc_yaml_doc_free(&doc);
}

static void fuzz_blueprints(void **state)
{
    (void)state;
    fuzz(GCLUSTER_SOURCE_DIR "/examples/gke-tpu-v6e-pathways.yaml", check_blueprint);
    fuzz(GCLUSTER_SOURCE_DIR "/examples/gke-tpu-7x-pathways.yaml", check_blueprint);
}

static void fuzz_templates(void **state)
{
    (void)state;
    fuzz(GCLUSTER_SOURCE_DIR "/examples/kueue-config-custom.yaml.tftpl", check_template);
}

static void fuzz_kubeconfigs(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof(path), "%s/seed-kubeconfig", tmp);
    kube_test_write(path,
                    "apiVersion: v1\nkind: Config\ncurrent-context: gke_p_us-east5_c\n"
                    "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n"
                    "    certificate-authority-data: LS0tLS1CRUdJTg==\n"
                    "contexts:\n- name: gke_p_us-east5_c\n  context: {cluster: c, user: u, "
                    "namespace: team}\n"
                    "users:\n- name: u\n  user:\n    exec:\n      apiVersion: "
                    "client.authentication.k8s.io/v1beta1\n      command: gke-gcloud-auth-plugin\n"
                    "      args: [--a, b]\n      env: [{name: X, value: y}]\n"
                    "      provideClusterInfo: true\n"
                    "- name: t\n  user: {token: abc, client-certificate-data: Zm9v}\n");
    fuzz(path, check_kubeconfig);
}

static void fuzz_jobsets(void **state)
{
    (void)state;
    fuzz(GCLUSTER_SOURCE_DIR "/tests/golden/pathways-everything.yaml", check_jobset);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fuzz_blueprints),
        cmocka_unit_test(fuzz_templates),
        cmocka_unit_test(fuzz_kubeconfigs),
        cmocka_unit_test(fuzz_jobsets),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
