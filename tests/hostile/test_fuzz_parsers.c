/*
 * Mutation fuzzing of every parser that reads user or server input: blueprints, Kueue
 * templates, kubeconfigs, YAML in general, and the JobSet/Workload objects the status derivation
 * reads. Valid seeds are mutated with a fixed-seed generator (so a failure reproduces). Each
 * mutant is either rejected with exit code 2 and a message, or accepted, and then what the parser
 * returned must be well-formed: a blueprint's pools and Kueue objects complete, a template with
 * every reference replaced, a kubeconfig's entries named, a JobSet's status one of the phases
 * with a text that says it, and any loaded YAML emitted and read back to the very same object.
 * The ASan/UBSan build of this test is where memory errors surface. The iteration count is
 * bounded; GCLUSTER_FUZZ_ITERATIONS raises it for a longer local run. The alias fuzz builds
 * random anchor/alias graphs (lists, mappings, merge keys, aliases of aliases, aliases inside
 * their own anchor) and checks that whatever is accepted stays within the loader's alias budget.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deploy/internal.h"
#include "gcluster/deploy.h"
#include "gcluster/emit.h"
#include "gcluster/job.h"
#include "kube/kubeconfig.h"
#include "kube_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_ITERATIONS 1500
#define PHASES             (GC_JOB_TERMINATING + 1)

static char *tmp;
static int phases_seen[PHASES]; /* statuses derived by check_jobset */
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
 * restarting from the seed now and then so mutants stay close to valid input). `check` returns
 * whether the mutant was accepted; both outcomes must occur, or the mutants are not exercising
 * the parser. */
static void fuzz(const char *seed_path, bool (*check)(const gc_buf *input))
{
    gc_buf seed, input;
    read_seed(seed_path, &seed);
    gc_buf_init(&input);
    int accepted = 0, rejected = 0;
    int n = iterations();
    for (int i = 0; i < n; i++) {
        if (i % 8 == 0) {
            gc_buf_reset(&input);
            gc_buf_append(&input, seed.data, seed.len);
        }
        mutate(&input);
        if (check(&input))
            accepted++;
        else
            rejected++;
    }
    gc_buf_free(&seed);
    gc_buf_free(&input);
    printf("fuzz %s: %d mutants, %d accepted, %d rejected with a message\n",
           strrchr(seed_path, '/') + 1, n, accepted, rejected);
    assert_true(accepted > 0 && rejected > 0);
}

/* A rejection must be exit code 2 with a message that contains `names` (the file or label it
 * is about), or any message when `names` is NULL. */
static void expect_usage_error(int rc, const gc_error *err, const char *what, const char *names)
{
    if (rc != 0 &&
        (rc != GC_EXIT_USAGE || !err->message[0] || (names && !strstr(err->message, names))))
        fail_msg("%s: rc %d, message \"%s\"", what, rc, err->message);
}

/* Non-overlapping occurrences of `needle`, scanning left to right as the template renderer does. */
static size_t occurrences(const char *data, size_t len, const char *needle)
{
    size_t n = 0, nlen = strlen(needle);
    const char *end = data + len;
    for (const char *p = data; (p = memmem(p, (size_t)(end - p), needle, nlen)) != NULL; p += nlen)
        n++;
    return n;
}

/* Where `a` and `b` first differ: appends the path to it (".key", "[index]") to `path` and points
 * *x and *y at the two values there. False if they are equal. */
static bool first_difference(const json_t *a, const json_t *b, gc_buf *path, const json_t **x,
                             const json_t **y)
{
    if (json_equal((json_t *)a, (json_t *)b))
        return false;
    *x = a;
    *y = b;
    if (json_is_object(a) && json_is_object(b) && json_object_size(a) == json_object_size(b)) {
        const char *key;
        const json_t *value;
        json_object_foreach((json_t *)a, key, value)
        {
            if (json_equal((json_t *)value, json_object_get(b, key)))
                continue;
            gc_buf_printf(path, ".%s", key);
            first_difference(value, json_object_get(b, key), path, x, y);
            break;
        }
    } else if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b)) {
        for (size_t i = 0; i < json_array_size(a); i++) {
            if (json_equal(json_array_get(a, i), json_array_get(b, i)))
                continue;
            gc_buf_printf(path, "[%zu]", i);
            first_difference(json_array_get(a, i), json_array_get(b, i), path, x, y);
            break;
        }
    }
    return true;
}

/* `doc` emitted as YAML must load back as an equal value: same types, same keys, same values. */
static void assert_round_trip(const json_t *doc, const char *what)
{
    gc_buf yaml;
    gc_buf_init(&yaml);
    gc_error err = {0};
    if (gc_emit_yaml(doc, &yaml, &err))
        fail_msg("%s: loaded, but cannot be emitted: %s", what, err.message);
    gc_yaml_doc back;
    if (gc_yaml_load(yaml.data, yaml.len, "emitted", &back, &err))
        fail_msg("%s: emitted YAML does not load: %s\n%s", what, err.message, yaml.data);
    gc_buf where;
    gc_buf_init(&where);
    const json_t *before, *after;
    if (first_difference(doc, gc_yaml_root(&back), &where, &before, &after)) {
        char *was = json_dumps(before, JSON_ENCODE_ANY | JSON_COMPACT);
        char *is = after ? json_dumps(after, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
        fail_msg("%s: emitted as YAML and read back, the value at \"%s\" changed from %s to %s",
                 what, where.data, was, is ? is : "nothing");
    }
    gc_buf_free(&where);
    gc_yaml_doc_free(&back);
    gc_buf_free(&yaml);
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

static bool is_text(const char *s)
{
    return s && s[0];
}

static void assert_blueprint_well_formed(const gc_blueprint *bp, const char *path)
{
    assert_string_equal(bp->path, path);
    assert_true(json_is_object(bp->vars));
    for (size_t i = 0; i < bp->pool_count; i++) {
        const gc_pool_spec *p = &bp->pools[i];
        if (!is_text(p->name) || !p->module_id || !is_text(p->machine_type))
            fail_msg("pool %zu is missing its name, module or machine type", i);
        if (p->accelerator && (!is_text(p->topology) || p->static_nodes <= 0))
            fail_msg("TPU pool %s has no topology or host count", p->name);
        if (p->static_nodes < 0 && p->min_nodes > p->max_nodes)
            fail_msg("pool %s autoscales from %ld down to %ld", p->name, p->min_nodes,
                     p->max_nodes);
    }
    for (size_t i = 0; i < bp->unhandled_count; i++)
        if (!bp->unhandled[i].id || !bp->unhandled[i].source)
            fail_msg("unhandled module %zu has no id or source", i);
}

/* Every Kueue object is an API object, and all of them survive being written as YAML. */
static void assert_kueue_objects_well_formed(const json_t *objects)
{
    assert_true(json_is_array(objects));
    size_t i;
    const json_t *obj;
    json_array_foreach(objects, i, obj)
    {
        const json_t *name = json_object_get(json_object_get(obj, "metadata"), "name");
        if (!json_is_string(json_object_get(obj, "apiVersion")) ||
            !json_is_string(json_object_get(obj, "kind")) || !json_is_string(name))
            fail_msg("Kueue object %zu lacks apiVersion, kind or metadata.name", i);
    }
    assert_round_trip(objects, "kueue objects");
}

static bool check_blueprint(const gc_buf *input)
{
    gc_blueprint bp;
    gc_error err = {0};
    const char *path = write_input("bp.yaml", input);
    int rc = deploy_blueprint_load(path, NULL, 0, &bp, &err);
    expect_usage_error(rc, &err, "blueprint", path);
    if (rc)
        return false;
    assert_blueprint_well_formed(&bp, path);
    json_t *objects = NULL;
    gc_buf warnings;
    gc_buf_init(&warnings);
    rc = deploy_kueue_objects(&bp, NULL, "v1beta2", &objects, &warnings, &err);
    expect_usage_error(rc, &err, "kueue objects", NULL);
    if (!rc)
        assert_kueue_objects_well_formed(objects);
    json_decref(objects);
    gc_buf_free(&warnings);
    gc_blueprint_free(&bp);
    return rc == 0;
}

static bool check_template(const gc_buf *input)
{
    static json_t *vars;
    if (!vars)
        vars = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "accelerator_type", "tpu7x",
                         "pathways_head_np", "cpu-np", "pathways_cpu_quota", "480", "tpu_quota", 8,
                         "pathways_memory_quota", "2000G", "namespace", "default");
    gc_buf out;
    gc_buf_init(&out);
    gc_error err = {0};
    int rc = deploy_kueue_template_render(input->data, input->len, vars, "t", &out, &err);
    expect_usage_error(rc, &err, "template", "t:");
    /* No variable value holds "${" or "%{", so in a rendering every one of them comes from a
     * literal $${ or %%{: a reference left unreplaced, or a directive passed through, shows as
     * one too many. */
    size_t refs = occurrences(out.data, out.len, "${"), dirs = occurrences(out.data, out.len, "%{");
    size_t ref_escapes = occurrences(input->data, input->len, "$${");
    size_t dir_escapes = occurrences(input->data, input->len, "%%{");
    if (!rc && (refs != ref_escapes || dirs != dir_escapes))
        fail_msg("template accepted, but its rendering has %zu \"${\" and %zu \"%%{\" for %zu $${ "
                 "and %zu %%%%{ in the input; it begins:\n%.300s",
                 refs, dirs, ref_escapes, dir_escapes, out.data);
    gc_buf_free(&out);
    return rc == 0;
}

/* Every cluster, user and context has a name and knows where in the file it was defined. */
static void assert_entry_named(const kube_entry *e, const char *path)
{
    if (!e->name || strncmp(e->where, path, strlen(path)) != 0)
        fail_msg("kubeconfig entry \"%s\" defined at \"%s\"", e->name ? e->name : "(no name)",
                 e->where);
}

static bool check_kubeconfig(const gc_buf *input)
{
    const char *path = write_input("kubeconfig", input);
    kube_config cfg;
    gc_error err = {0};
    int rc = kube_config_load_files(&path, 1, true, &cfg, &err);
    expect_usage_error(rc, &err, "kubeconfig", path);
    if (rc)
        return false;
    assert_int_equal(cfg.file_count, 1);
    assert_string_equal(cfg.files[0], path);
    for (size_t i = 0; i < cfg.cluster_count; i++)
        assert_entry_named(&cfg.clusters[i].id, path);
    for (size_t i = 0; i < cfg.user_count; i++)
        assert_entry_named(&cfg.users[i].id, path);
    for (size_t i = 0; i < cfg.context_count; i++)
        assert_entry_named(&cfg.contexts[i].id, path);
    kube_config_free(&cfg);
    return true;
}

/* The status derived from any object is one of the phases, and its text says which. */
static void assert_status_consistent(const gc_job_facts *facts, const gc_job_status *status)
{
    if ((int)status->phase < 0 || status->phase >= PHASES)
        fail_msg("phase %d is none of the phases", (int)status->phase);
    phases_seen[status->phase]++;
    if (!memchr(status->text, '\0', sizeof(status->text)) ||
        !memchr(status->detail, '\0', sizeof(status->detail)))
        fail_msg("status text or detail is not terminated");
    const char *name = gc_job_phase_name(status->phase);
    int running, total, end = 0;
    switch (status->phase) {
    case GC_JOB_RUNNING:
        /* "Running n/m": n pods run, out of the m the spec asks for (or were seen). */
        if (sscanf(status->text, "Running %d/%d%n", &running, &total, &end) != 2 ||
            status->text[end] || running != facts->pods_running || running < 1 || total < 1)
            fail_msg("Running with %d pods running, but the text is \"%s\"", facts->pods_running,
                     status->text);
        break;
    case GC_JOB_QUEUED:
        assert_string_equal(status->text, facts->evicted ? "Queued (evicted)" : "Queued");
        break;
    default:
        if (strcmp(status->text, name) != 0)
            fail_msg("phase %s, but the text is \"%s\"", name, status->text);
    }
}

/* A JobSet as the server might return it (with a status), mangled: the status derivation must
 * cope with any shape (wrong types, missing fields), and whatever loaded must emit and read back
 * unchanged. The same object stands in for the Workload and a pod, whose fields it also has. */
static bool check_jobset(const gc_buf *input)
{
    gc_yaml_doc doc;
    gc_error err = {0};
    int rc = gc_yaml_load(input->data, input->len, "jobset", &doc, &err);
    expect_usage_error(rc, &err, "YAML", "jobset:");
    json_t *root = rc ? NULL : gc_yaml_root(&doc);
    if (root) {
        gc_job_facts facts;
        gc_job_facts_from_jobset(root, &facts);
        gc_job_facts_add_workload(&facts, root);
        gc_job_facts_add_pod(&facts, root);
        assert_int_equal(facts.pods_seen, 1);
        assert_true(facts.pods_running + facts.pods_succeeded + facts.pods_failed <= 1);
        gc_job_status status;
        gc_job_status_derive(&facts, &status);
        assert_status_consistent(&facts, &status);
        assert_round_trip(root, "jobset");
    }
    gc_yaml_doc_free(&doc);
    return rc == 0;
}

/* Values in `v`, counting each scalar, list and mapping once; stops counting past `limit`. */
static size_t count_values(const json_t *v, size_t limit)
{
    size_t n = 1;
    if (json_is_object(v)) {
        const char *key;
        const json_t *member;
        json_object_foreach((json_t *)v, key, member)
        {
            if (n > limit)
                break;
            n += count_values(member, limit - n);
        }
    } else if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v) && n <= limit; i++)
            n += count_values(json_array_get(v, i), limit - n);
    }
    return n;
}

/* One random YAML value for anchor graph level `level`: a scalar, an alias of an earlier level's
 * anchor (or, now and then, its own, or one not yet defined), or a list or mapping (some with a
 * merge key) of such values. */
static void random_alias_value(gc_buf *b, int level, int depth)
{
    /* An anchored value is a list or a mapping ("&a *b" is not YAML); deeper, anything. */
    unsigned pick = depth == 0 ? 3 + next_random(3) : next_random(depth > 2 ? 3 : 6);
    if (pick == 0 || (level == 0 && pick <= 2)) {
        gc_buf_printf(b, "v%u", next_random(100));
    } else if (pick <= 2) {
        int target = level > 0 ? (int)next_random((unsigned)level) : 0;
        if (next_random(400) == 0)
            target = level + (int)next_random(2); /* itself, or one not defined yet */
        gc_buf_printf(b, "*l%d", target);
    } else if (pick <= 4) {
        unsigned n = next_random(12);
        gc_buf_puts(b, "[");
        for (unsigned i = 0; i < n; i++) {
            gc_buf_puts(b, i ? ", " : "");
            random_alias_value(b, level, depth + 1);
        }
        gc_buf_puts(b, "]");
    } else {
        unsigned n = next_random(12);
        gc_buf_puts(b, "{");
        for (unsigned i = 0; i < n; i++) {
            if (i == 0 && level > 0 && next_random(3) == 0) {
                gc_buf_printf(b, "<<: *l%u", next_random((unsigned)level));
                continue;
            }
            gc_buf_printf(b, "%sk%u: ", i ? ", " : "", i);
            random_alias_value(b, level, depth + 1);
        }
        gc_buf_puts(b, "}");
    }
}

/* A blueprint whose vars hold a random anchor graph and whose cluster labels use its last level. */
static void random_alias_blueprint(gc_buf *b)
{
    gc_buf_reset(b);
    int levels = 1 + (int)next_random(10);
    gc_buf_puts(b, "blueprint_name: t\nvars:\n  project_id: my-project\n"
                   "  deployment_name: d\n  region: us-east5\n");
    for (int level = 0; level < levels; level++) {
        gc_buf_printf(b, "  l%d: &l%d ", level, level);
        random_alias_value(b, level, 0);
        gc_buf_puts(b, "\n");
    }
    gc_buf_printf(b,
                  "deployment_groups:\n- group: g\n  modules:\n  - id: cluster\n"
                  "    source: modules/scheduler/gke-cluster\n    settings:\n"
                  "      labels: *l%d\n",
                  levels - 1);
}

/* Whatever the anchor graph, the loader and the blueprint reader either accept it with no more
 * values than the text holds plus what aliases may copy, or refuse it with exit 2 and a message
 * that names the file. Aliases that copy too much must be seen refused, and graphs that stay
 * small accepted; the whole run is bounded by the budget, never by the exponent. */
static void fuzz_aliases(void **state)
{
    (void)state;
    gc_buf input;
    gc_buf_init(&input);
    int accepted = 0, too_large = 0, rejected = 0;
    int n = iterations() / 5; /* a graph that fills the budget costs 100,000 copies */
    for (int i = 0; i < n; i++) {
        random_alias_blueprint(&input);
        if (i % 2)
            mutate(&input);
        gc_yaml_doc doc;
        gc_error err = {0};
        int rc = gc_yaml_load(input.data, input.len, "aliases.yaml", &doc, &err);
        expect_usage_error(rc, &err, "aliases", "aliases.yaml:");
        if (rc) {
            if (strstr(err.message, "alias expansion too large"))
                too_large++;
            else
                rejected++;
            if (getenv("FUZZ_SHOW"))
                printf("%s\n", err.message);
            continue;
        }
        size_t limit = input.len + GC_YAML_MAX_ALIAS_VALUES;
        size_t values = 0;
        for (size_t d = 0; d < json_array_size(doc.documents); d++)
            values += count_values(json_array_get(doc.documents, d), limit + 1);
        if (values > limit)
            fail_msg("%zu bytes of YAML loaded as more than %zu values:\n%s", input.len, limit,
                     input.data);
        if (gc_yaml_root(&doc))
            assert_round_trip(gc_yaml_root(&doc), "aliases");
        gc_yaml_doc_free(&doc);
        accepted++;
        check_blueprint(&input);
    }
    gc_buf_free(&input);
    printf("fuzz aliases: %d graphs, %d accepted, %d too large, %d rejected otherwise\n", n,
           accepted, too_large, rejected);
    assert_true(accepted > 0 && too_large > 0 && rejected > 0);
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

/* What the server adds to a stored JobSet, and what a Workload and a pod carry, in one status. */
static const char jobset_status[] = "status:\n"
                                    "  phase: Running\n"
                                    "  restarts: 1\n"
                                    "  terminalState: \"\"\n"
                                    "  conditions:\n"
                                    "  - {type: Suspended, status: \"False\"}\n"
                                    "  - {type: Failed, status: \"False\", reason: x, message: y}\n"
                                    "  - {type: QuotaReserved, status: \"True\", reason: Quota}\n"
                                    "  - {type: Admitted, status: \"True\", reason: Admitted}\n"
                                    "  - {type: Evicted, status: \"False\", reason: Preempted}\n"
                                    "  containerStatuses:\n"
                                    "  - name: jax-tpu\n"
                                    "    state: {terminated: {exitCode: 3, reason: Error}}\n";

static void fuzz_jobsets(void **state)
{
    (void)state;
    char *manifest = kube_test_read(GCLUSTER_SOURCE_DIR "/tests/golden/pathways-everything.yaml");
    assert_non_null(manifest);
    char path[512];
    snprintf(path, sizeof(path), "%s/seed-jobset.yaml", tmp);
    kube_test_write(path, "%s%s", manifest, jobset_status);
    free(manifest);
    memset(phases_seen, 0, sizeof(phases_seen));
    fuzz(path, check_jobset);
    int distinct = 0;
    for (int p = 0; p < PHASES; p++) {
        if (phases_seen[p])
            printf("  %s: %d\n", gc_job_phase_name((gc_job_phase)p), phases_seen[p]);
        distinct += phases_seen[p] > 0;
    }
    /* The mutants must reach more than the seed's own phase, or the derivation is not exercised. */
    assert_true(distinct >= 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fuzz_blueprints),  cmocka_unit_test(fuzz_templates),
        cmocka_unit_test(fuzz_kubeconfigs), cmocka_unit_test(fuzz_jobsets),
        cmocka_unit_test(fuzz_aliases),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
