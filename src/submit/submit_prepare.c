/*
 * `job submit`, step one: every check that needs no cluster, then the plan: the resolved
 * gc_workload the manifest builders take, and what to do with it. Each failure is one message
 * that names the flag and says how to fix it; the order of the checks is the order a user fixes
 * things in (what to run, on what, where, how). Each flag's value is parsed here and only here.
 */
#include "gcluster/job.h"

#include "gcluster/buf.h"
#include "gcluster/gcp.h"
#include "gcluster/image.h"
#include "gcluster/kube.h"
#include "gcluster/submit.h"
#include "gcluster/sys.h"
#include "submit/parse.h"
#include "submit/submit_compute.h"
#include "submit/submit_sps.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* JobSet, Kueue and GKE build other names from the JobSet name (Jobs, pods, Services, Kueue
 * Workloads, node-pool-scoped resources); 28 keeps all of them under 63 characters. */
#define PLAIN_NAME_MAX 28
/* A label value holds at most 63 characters; see gc_pathways_coordinator_length(). */
#define LABEL_VALUE_MAX 63
/* etcd stores at most ~1.5 MiB per object; leave room for the rest of the JobSet. */
#define COMMAND_MAX (1024 * 1024)

void gc_submit_request_defaults(gc_submit_request *r)
{
    memset(r, 0, sizeof(*r));
    r->num_nodes = 1;
    r->num_slices = 1;
    r->restarts = 1;
    r->ttl_after_finished = "1h";
    r->grace_period = "30s";
    r->pathways_max_slice_restarts = 1;
}

static int check_name(const gc_submit_request *r, gc_error *err)
{
    if (!r->name || !*r->name)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--name is required: the name of the JobSet to create (lower-case "
                       "letters, digits and '-')");
    size_t n = strlen(r->name);
    if (!gc_kube_is_dns1035_label(r->name) && n <= LABEL_VALUE_MAX)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--name \"%s\" is not a valid name: use lower-case letters, digits and "
                       "'-', starting with a letter and ending with a letter or digit (it names "
                       "the JobSet, its Jobs, pods and Service)",
                       r->name);
    if (r->pathways) {
        size_t coordinator = gc_pathways_coordinator_length(n);
        size_t max = (LABEL_VALUE_MAX - gc_pathways_coordinator_length(0)) / 2;
        if (coordinator > LABEL_VALUE_MAX)
            return gc_fail(err, GC_EXIT_USAGE,
                           "--name \"%s\" has %zu characters; a Pathways job name can have at "
                           "most %zu: JobSet labels every pod with the head's address "
                           "\"<name>-pathways-head-0-0.<name>\" (2 x %zu + %zu = %zu characters) "
                           "and a label value holds at most %d",
                           r->name, n, max, n, gc_pathways_coordinator_length(0), coordinator,
                           LABEL_VALUE_MAX);
    } else if (n > PLAIN_NAME_MAX) {
        return gc_fail(err, GC_EXIT_USAGE,
                       "--name \"%s\" has %zu characters; a job name can have at most %d, "
                       "because Kubernetes, JobSet and Kueue build 63-character names from it",
                       r->name, n, PLAIN_NAME_MAX);
    }
    return 0;
}

/* Flags that only mean something for Pathways jobs, and whether each was given. */
static int check_pathways_only_flags(const gc_submit_request *r, gc_error *err)
{
    const struct {
        const char *flag;
        bool given;
    } flags[] = {
        {"--pathways-headless", r->pathways_headless},
        {"--pathways-gcs-location", r->pathways_gcs_location != NULL},
        {"--pathways-proxy-server-image", r->pathways_proxy_image != NULL},
        {"--pathways-server-image", r->pathways_server_image != NULL},
        {"--pathways-worker-image", r->pathways_worker_image != NULL},
        {"--pathways-elastic-slices", r->pathways_elastic_slices_set},
        {"--pathways-max-slice-restarts", r->pathways_max_slice_restarts_set},
        {"--pathways-proxy-args", r->pathways_proxy_args != NULL},
        {"--pathways-server-args", r->pathways_server_args != NULL},
        {"--pathways-worker-args", r->pathways_worker_args != NULL},
        {"--pathways-colocated-python-sidecar-image", r->pathways_sidecar_image != NULL},
        {"--pathways-head-np", r->pathways_head_np != NULL},
        {"--pathways-proxy-env", r->pathways_proxy_env_count > 0},
        {"--pathways-server-env", r->pathways_server_env_count > 0},
        {"--pathways-worker-env", r->pathways_worker_env_count > 0},
    };
    for (size_t i = 0; i < sizeof(flags) / sizeof(*flags); i++)
        if (flags[i].given)
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s only applies to Pathways jobs: add --pathways, or drop %s",
                           flags[i].flag, flags[i].flag);
    return 0;
}

static int check_pathways_flags(const gc_submit_request *r, gc_error *err)
{
    if (!r->pathways)
        return check_pathways_only_flags(r, err);
    if (!r->pathways_gcs_location || !*r->pathways_gcs_location)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--pathways-gcs-location is required with --pathways: a gs://BUCKET/PREFIX "
                       "where Pathways keeps temporary files and compiled programs (a bucket in "
                       "the cluster's region)");
    int rc = submit_validate_gcs_location("--pathways-gcs-location", r->pathways_gcs_location, err);
    if (rc)
        return rc;
    if (r->pathways_elastic_slices < 0)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--pathways-elastic-slices must be 0 or more, not %ld: it is how many "
                       "slices may be missing while the job keeps running",
                       r->pathways_elastic_slices);
    if (r->pathways_elastic_slices > 0 && r->pathways_elastic_slices >= r->num_slices)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--pathways-elastic-slices %ld must be less than --num-slices (%ld): it is "
                       "how many slices may be missing while the job keeps running, and with all "
                       "of them missing nothing would be left running",
                       r->pathways_elastic_slices, r->num_slices);
    if (r->pathways_max_slice_restarts < 1)
        return gc_fail(err, GC_EXIT_USAGE, "--pathways-max-slice-restarts must be at least 1");
    if (r->pathways_max_slice_restarts_set && r->pathways_elastic_slices == 0)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--pathways-max-slice-restarts only applies to elastic jobs: add "
                       "--pathways-elastic-slices N (N > 0) or drop it");
    if (r->pathways_head_np && !gc_kube_is_label_value(r->pathways_head_np))
        return gc_fail(err, GC_EXIT_USAGE, "--pathways-head-np \"%s\" is not a node pool name",
                       r->pathways_head_np);
    return 0;
}

static int reject_in_headless_mode(const char *flag, bool given, gc_error *err)
{
    if (!given)
        return 0;
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s is not used with --pathways-headless: headless mode runs only the Pathways "
                   "servers, for a JAX client outside the cluster; drop %s (or drop "
                   "--pathways-headless to run your program in the head pod)",
                   flag, flag);
}

static int check_headless(const gc_submit_request *r, gc_error *err)
{
    /* --image is not refused: Google's gcluster skips the image checks for headless jobs and
     * ignores the image, and published headless command lines carry one (fill_workload_source
     * says it is ignored). */
    int rc = reject_in_headless_mode("--command", r->command != NULL, err);
    if (!rc)
        rc = reject_in_headless_mode("--base-image", r->base_image != NULL, err);
    if (!rc)
        rc = reject_in_headless_mode("--build-context", r->build_context != NULL, err);
    if (!rc && (r->await_completion || r->timeout))
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--await-job-completion/--timeout cannot be used with --pathways-headless: "
                     "a headless job runs until you cancel it (gcluster job cancel %s)",
                     r->name);
    return rc;
}

static int check_workload_source(const gc_submit_request *r, gc_error *err)
{
    if (r->pathways && r->pathways_headless)
        return check_headless(r, err);
    if (!r->command || !*r->command)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--command is required: the command to run in the workload container%s",
                       r->pathways ? " (or pass --pathways-headless to run only the Pathways "
                                     "servers for an external JAX client)"
                                   : "");
    if (strlen(r->command) > COMMAND_MAX)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--command is %zu bytes; a JobSet must stay well under etcd's 1.5 MiB "
                       "object limit: put the script in the image or on a --mount",
                       strlen(r->command));
    if (r->image && (r->base_image || r->build_context))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--image cannot be combined with --base-image/--build-context: pass "
                       "--image to run a pre-built image, or --base-image with --build-context "
                       "to build one");
    if (!r->image && !r->base_image && !r->build_context)
        return gc_fail(err, GC_EXIT_USAGE,
                       "an image is required: pass --image IMAGE, or --base-image IMAGE with "
                       "--build-context DIR to build one from a local directory");
    if (r->base_image && !r->build_context)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--base-image needs --build-context DIR: the directory to add on top of "
                       "the base image");
    if (r->build_context && !r->base_image)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--build-context needs --base-image IMAGE: the image to build on");
    if (r->image && !*r->image)
        return gc_fail(err, GC_EXIT_USAGE, "--image is empty");
    return 0;
}

/* Every image the job names, against the reference grammar: a malformed one would otherwise
 * be found only when a node fails to pull it, after the job has waited in the queue. */
static int check_images(const gc_submit_request *r, gc_error *err)
{
    const struct {
        const char *flag;
        const char *image;
    } images[] = {
        {"--image", r->image},
        {"--base-image", r->base_image},
        {"--pathways-proxy-server-image", r->pathways_proxy_image},
        {"--pathways-server-image", r->pathways_server_image},
        {"--pathways-worker-image", r->pathways_worker_image},
        {"--pathways-colocated-python-sidecar-image", r->pathways_sidecar_image},
    };
    for (size_t i = 0; i < sizeof(images) / sizeof(*images); i++) {
        int rc =
            images[i].image ? gc_image_reference_check(images[i].flag, images[i].image, err) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

static int check_counts(const gc_submit_request *r, gc_error *err)
{
    if (r->num_slices < 1)
        return gc_fail(err, GC_EXIT_USAGE, "--num-slices must be at least 1, not %ld",
                       r->num_slices);
    if (r->num_nodes < 1)
        return gc_fail(err, GC_EXIT_USAGE, "--num-nodes must be at least 1, not %ld", r->num_nodes);
    if (r->restarts < 0)
        return gc_fail(err, GC_EXIT_USAGE, "--restarts must be 0 or more, not %ld", r->restarts);
    if (r->platform && !r->base_image)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--platform only applies to image builds (--base-image with "
                       "--build-context)");
    return 0;
}

static int fill_durations(const gc_submit_request *r, gc_submit_plan *p, gc_error *err)
{
    gc_workload *w = &p->workload;
    int rc = gc_clock_parse_duration("--gke-ttl-after-finished", r->ttl_after_finished,
                                     &w->ttl_seconds, err);
    if (!rc)
        rc = gc_clock_parse_duration("--grace-period", r->grace_period, &w->grace_seconds, err);
    p->timeout_seconds = -1; /* not given: wait as long as it takes (0 looks once) */
    if (!rc && r->timeout)
        rc = gc_clock_parse_duration("--timeout", r->timeout, &p->timeout_seconds, err);
    return rc;
}

/* The API server accepts a JobSet whose pod template mounts one path twice; only the JobSet
 * controller's Job create fails, after submit has said all is well. */
static int fill_mounts(const gc_submit_request *r, gc_workload *w, gc_error *err)
{
    gc_strings specs = {0};
    /* Google's ';' form is one mount per flag (its options keep their commas); the older ':'
     * form, like Google's v1.98.0 string-slice flag, takes several separated by commas. */
    for (size_t i = 0; i < r->mount_count; i++) {
        if (strchr(r->mounts[i], ';'))
            gc_strings_push(&specs, r->mounts[i]);
        else
            submit_split_commas(r->mounts[i], &specs);
    }
    int rc = 0;
    w->mounts = gc_xcalloc(specs.count, sizeof(*w->mounts));
    for (size_t i = 0; !rc && i < specs.count; i++) {
        rc = submit_parse_mount(specs.items[i], &w->mounts[i], err);
        w->mount_count = i + 1;
        if (!rc && r->pathways && !strcmp(w->mounts[i].target, "/tmp"))
            rc = gc_fail(err, GC_EXIT_USAGE,
                         "--mount %s: the Pathways head already mounts the node's /tmp there (the "
                         "resource manager and your program share it); mount yours elsewhere, "
                         "e.g. /data",
                         specs.items[i]);
        for (size_t j = 0; !rc && j < i; j++)
            if (!strcmp(w->mounts[j].target, w->mounts[i].target))
                rc = gc_fail(err, GC_EXIT_USAGE, "--mount: two mounts use the destination %s",
                             w->mounts[i].target);
    }
    gc_strings_free(&specs);
    return rc;
}

/* Multi-tier checkpointing: the MTC volume's mount path must be a directory of its own. */
static int fill_mtc(const gc_submit_request *r, gc_workload *w, gc_error *err)
{
    if (!r->mtc_enabled)
        return r->mtc_ramdisk_dir ? gc_fail(err, GC_EXIT_USAGE,
                                            "--gke-mtc-ramdisk-dir only applies with "
                                            "--gke-mtc-enabled (multi-tier checkpointing)")
                                  : 0;
    w->mtc = true;
    int rc =
        submit_parse_directory("--gke-mtc-ramdisk-dir",
                               r->mtc_ramdisk_dir ? r->mtc_ramdisk_dir : GC_MTC_DEFAULT_RAMDISK_DIR,
                               &w->mtc_ramdisk_dir, err);
    if (rc)
        return rc;
    /* Pathways workers mount the node's /tmp and the sidecar's shared memory at /tmp/sidecar. */
    const char *taken[] = {"/tmp", "/tmp/sidecar"};
    for (size_t i = 0; r->pathways && i < 2; i++)
        if (!strcmp(w->mtc_ramdisk_dir, taken[i]))
            return gc_fail(err, GC_EXIT_USAGE,
                           "--gke-mtc-ramdisk-dir %s: the Pathways workers already mount %s "
                           "there; use a directory of its own (default %s)",
                           w->mtc_ramdisk_dir,
                           i ? "the colocated sidecar's shared memory" : "the node's /tmp",
                           GC_MTC_DEFAULT_RAMDISK_DIR);
    for (size_t i = 0; i < w->mount_count; i++)
        if (!strcmp(w->mounts[i].target, w->mtc_ramdisk_dir))
            return gc_fail(err, GC_EXIT_USAGE,
                           "--gke-mtc-ramdisk-dir %s is also a --mount destination; mount one of "
                           "them elsewhere",
                           w->mtc_ramdisk_dir);
    /* The same container mounts the sidecar's shared memory and the user's mounts; one path
     * mounted twice fails only when the JobSet controller creates the workers' Job. */
    for (size_t i = 0; r->pathways && i < w->mount_count; i++)
        if (!strcmp(w->mounts[i].target, "/tmp/sidecar"))
            return gc_fail(err, GC_EXIT_USAGE,
                           "--mount: with --gke-mtc-enabled the Pathways workers mount the "
                           "colocated sidecar's shared memory at /tmp/sidecar; mount yours "
                           "elsewhere, e.g. /data");
    return 0;
}

static void add_node_term(gc_workload *w, const char *key, const char *value)
{
    w->node_terms = gc_xrealloc(w->node_terms, (w->node_term_count + 1) * sizeof(*w->node_terms));
    gc_node_term *t = &w->node_terms[w->node_term_count++];
    memset(t, 0, sizeof(*t));
    t->key = gc_xstrdup(key);
    gc_strings_push(&t->values, value);
}

static int fill_node_constraints(const gc_submit_request *r, gc_workload *w, gc_error *err)
{
    gc_strings specs = {0};
    for (size_t i = 0; i < r->node_constraint_count; i++)
        submit_split_commas(r->node_constraints[i], &specs);
    int rc = 0;
    for (size_t i = 0; !rc && i < specs.count; i++) {
        gc_node_term term;
        rc = submit_parse_node_constraint(specs.items[i], &term, err);
        /* GKE's admission webhook (Warden) rejects a TPU pod whose affinity allows more than one
         * slice topology, so Google's gcluster refuses it before submitting; so does ours. */
        if (!rc && !strcmp(term.key, "cloud.google.com/gke-tpu-topology") && term.values.count > 1)
            rc = gc_fail(err, GC_EXIT_USAGE,
                         "--node-constraint %s: a TPU pod may ask for one "
                         "cloud.google.com/gke-tpu-topology only (GKE rejects pods that allow "
                         "several); give one, or leave it to the queue's flavors",
                         specs.items[i]);
        w->node_terms =
            gc_xrealloc(w->node_terms, (w->node_term_count + 1) * sizeof(*w->node_terms));
        w->node_terms[w->node_term_count++] = term;
    }
    gc_strings_free(&specs);
    if (!rc && r->placement_policy) {
        if (!gc_kube_is_label_value(r->placement_policy))
            return gc_fail(err, GC_EXIT_USAGE, "--placement-policy \"%s\" is not a valid name",
                           r->placement_policy);
        add_node_term(w, "cloud.google.com/gke-placement-group", r->placement_policy);
    }
    return rc;
}

/* Node auto-provisioning: which capacity the TPU/GPU nodes should come from. */
static int fill_nap(const gc_submit_request *r, gc_workload *w, gc_error *err)
{
    const char *model = r->nap_provisioning;
    if (!model)
        return r->nap_reservation
                   ? gc_fail(err, GC_EXIT_USAGE,
                             "--gke-nap-reservation needs --gke-nap-provisioning=reservation")
                   : 0;
    char lower[32];
    size_t n = strlen(model) < sizeof(lower) - 1 ? strlen(model) : sizeof(lower) - 1;
    for (size_t i = 0; i < n; i++)
        lower[i] = (char)tolower((unsigned char)model[i]);
    lower[n] = '\0';
    if (!strcmp(lower, "spot")) {
        add_node_term(w, "cloud.google.com/gke-provisioning", "spot");
        gc_strings_push(&w->nap_tolerations, "cloud.google.com/gke-provisioning=spot");
    } else if (!strcmp(lower, "on-demand")) {
        add_node_term(w, "cloud.google.com/gke-provisioning", "standard");
    } else if (!strcmp(lower, "reservation")) {
        if (!r->nap_reservation || !*r->nap_reservation)
            return gc_fail(err, GC_EXIT_USAGE,
                           "--gke-nap-reservation NAME is required with "
                           "--gke-nap-provisioning=reservation");
        /* projects/P/reservations/R[/reservationBlocks/B] → R */
        const char *name = r->nap_reservation;
        const char *marker = strstr(name, "reservations/");
        char *short_name =
            gc_xstrndup(marker ? marker + 13 : name, strcspn(marker ? marker + 13 : name, "/"));
        /* The name and project become node label values the API server checks only when the
         * JobSet controller creates the Jobs: check their Compute Engine forms here. */
        bool shared = !strncmp(name, "projects/", 9) && name[9 + strcspn(name + 9, "/")] == '/';
        char *project = shared ? gc_xstrndup(name + 9, strcspn(name + 9, "/")) : NULL;
        if (!gc_gcp_is_name(short_name, 1, 63) || (project && !gc_gcp_is_project_id(project))) {
            free(short_name);
            free(project);
            return gc_fail(err, GC_EXIT_USAGE,
                           "--gke-nap-reservation \"%s\" is not a reservation: give its name "
                           "(lower-case letters, digits and '-', a letter first) or "
                           "projects/PROJECT/reservations/NAME for a shared one",
                           name);
        }
        add_node_term(w, "cloud.google.com/reservation-name", short_name);
        char *toleration = gc_xasprintf("cloud.google.com/reservation-name=%s", short_name);
        gc_strings_push(&w->nap_tolerations, toleration);
        free(toleration);
        free(short_name);
        /* A shared reservation of another project (projects/P/...): GKE needs its project. */
        if (project)
            add_node_term(w, "cloud.google.com/reservation-project", project);
        free(project);
        return 0;
    } else {
        return gc_fail(err, GC_EXIT_USAGE,
                       "--gke-nap-provisioning \"%s\" is not one of on-demand, spot, reservation",
                       model);
    }
    if (r->nap_reservation)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--gke-nap-reservation only applies with --gke-nap-provisioning="
                       "reservation");
    return 0;
}

static int fill_exit_codes(const gc_submit_request *r, gc_workload *w, gc_error *err)
{
    gc_strings items = {0};
    for (size_t i = 0; i < r->restart_on_exit_code_count; i++)
        submit_split_commas(r->restart_on_exit_codes[i], &items);
    int rc = 0;
    w->restart_exit_codes = gc_xcalloc(items.count, sizeof(long));
    for (size_t i = 0; !rc && i < items.count; i++) {
        long code;
        rc = submit_parse_exit_code(items.items[i], &code, err);
        bool seen = false;
        for (size_t j = 0; !rc && j < w->restart_exit_code_count; j++)
            seen |= w->restart_exit_codes[j] == code;
        if (!rc && !seen)
            w->restart_exit_codes[w->restart_exit_code_count++] = code;
    }
    gc_strings_free(&items);
    return rc;
}

static int check_object_name(const char *flag, const char *value, gc_error *err)
{
    if (value && !gc_kube_is_dns_subdomain(value))
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s \"%s\" is not a valid Kubernetes object name (lower-case letters, "
                       "digits, '-' and '.')",
                       flag, value);
    return 0;
}

static char *lower_copy(const char *s)
{
    char *copy = gc_xstrdup(s);
    for (char *p = copy; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return copy;
}

static int fill_identity(const gc_submit_request *r, gc_workload *w, gc_error *err)
{
    if (r->priority)
        w->priority = lower_copy(r->priority);
    int rc = check_object_name("--priority", w->priority, err);
    if (!rc)
        rc = check_object_name("--queue", r->queue, err);
    if (!rc)
        rc = check_object_name("--service-account", r->service_account, err);
    if (rc)
        return rc;
    w->queue = gc_xstrdup(r->queue ? r->queue : "user-queue");
    w->queue_defaulted = r->queue == NULL;
    if (r->service_account)
        w->service_account = gc_xstrdup(r->service_account);
    submit_split_commas(r->image_pull_secret, &w->pull_secrets);
    for (size_t i = 0; i < w->pull_secrets.count; i++) {
        rc = check_object_name("--image-pull-secret", w->pull_secrets.items[i], err);
        if (rc)
            return rc;
    }
    if (r->scheduler) {
        if (!*r->scheduler)
            return gc_fail(err, GC_EXIT_USAGE, "--gke-scheduler is empty");
        w->scheduler_name = gc_xstrdup(r->scheduler);
    }
    return 0;
}

/* Env files first, then --env, then each role's flag: the order the variables appear in. */
static int fill_env(const gc_submit_request *r, gc_workload *w, gc_error *err)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < r->env_file_count; i++)
        rc = submit_read_env_file(r->env_files[i], w, err);
    const struct {
        const char *flag;
        const char *const *specs;
        size_t count;
        gc_env_scope scope;
    } flags[] = {
        {"--env", r->env, r->env_count, GC_ENV_WORKLOAD},
        {"--pathways-proxy-env", r->pathways_proxy_env, r->pathways_proxy_env_count, GC_ENV_PROXY},
        {"--pathways-server-env", r->pathways_server_env, r->pathways_server_env_count,
         GC_ENV_SERVER},
        {"--pathways-worker-env", r->pathways_worker_env, r->pathways_worker_env_count,
         GC_ENV_WORKER},
    };
    for (size_t f = 0; f < sizeof(flags) / sizeof(*flags); f++)
        for (size_t i = 0; !rc && i < flags[f].count; i++)
            rc = submit_parse_env(flags[f].flag, flags[f].specs[i], flags[f].scope, w, err);
    return rc;
}

static int fill_options(const gc_submit_request *r, gc_workload *w, gc_error *err)
{
    w->restarts = (int)r->restarts;
    w->verbose = r->verbose;
    if (r->cpu_affinity && strcmp(r->cpu_affinity, "numa") != 0)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--cpu-affinity \"%s\" is not supported; the one choice is \"numa\" "
                       "(Guaranteed QoS so GKE's CPU and topology managers pin the TPU "
                       "containers to one NUMA node)",
                       r->cpu_affinity);
    return 0;
}

/* What to do with the workload: write it, let the cluster validate it, or create it (and wait
 * for it). */
static int choose_mode(const gc_submit_request *r, gc_submit_plan *p, gc_error *err)
{
    if (r->dry_run && strcmp(r->dry_run, "server") != 0 && strcmp(r->dry_run, "client") != 0)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--dry-run must be server (validate with the cluster, create nothing) or "
                       "client (print the manifest), not \"%s\"",
                       r->dry_run);
    if (r->dry_run && r->dry_run_out)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--dry-run and --dry-run-out cannot be combined: --dry-run-out writes the "
                       "manifest without contacting the cluster");
    if ((r->await_completion || r->timeout) && (r->dry_run || r->dry_run_out))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--await-job-completion/--timeout cannot be combined with a dry run: "
                       "nothing is created to wait for");
    if (r->dry_run_out || (r->dry_run && !strcmp(r->dry_run, "client"))) {
        p->mode = GC_SUBMIT_OFFLINE;
        p->output_path = r->dry_run_out ? r->dry_run_out : "-";
    } else {
        p->mode = r->dry_run ? GC_SUBMIT_SERVER_DRY_RUN : GC_SUBMIT_CREATE;
    }
    p->await_completion = r->await_completion || r->timeout;
    p->skip_prereqs = r->skip_prereqs;
    return 0;
}

static void fill_pathways(const gc_submit_request *r, gc_workload *w)
{
    if (!r->pathways)
        return;
    w->headless = r->pathways_headless;
    w->gcs_location = gc_xstrdup(r->pathways_gcs_location);
    w->head_pool = gc_xstrdup(r->pathways_head_np ? r->pathways_head_np : "cpu-np");
    w->head_pool_defaulted = r->pathways_head_np == NULL;
    w->proxy_image =
        gc_xstrdup(r->pathways_proxy_image ? r->pathways_proxy_image : GC_DEFAULT_PROXY_IMAGE);
    w->server_image =
        gc_xstrdup(r->pathways_server_image ? r->pathways_server_image : GC_DEFAULT_SERVER_IMAGE);
    w->worker_image =
        gc_xstrdup(r->pathways_worker_image ? r->pathways_worker_image : w->server_image);
    if (r->pathways_sidecar_image)
        w->sidecar_image = gc_xstrdup(r->pathways_sidecar_image);
    w->elastic_slices = (int)r->pathways_elastic_slices;
    w->max_slice_restarts = (int)r->pathways_max_slice_restarts;
    w->max_slice_restarts_set = r->pathways_max_slice_restarts_set;
    gc_strings_split_words(r->pathways_proxy_args, &w->proxy_args);
    gc_strings_split_words(r->pathways_server_args, &w->server_args);
    gc_strings_split_words(r->pathways_worker_args, &w->worker_args);
}

/* A build names its image from the context's content, so the manifest can carry the exact
 * reference before (or without) anything being pushed. */
static int plan_image_build(const gc_submit_request *r, gc_submit_plan *p, gc_error *err)
{
    char *repository = NULL;
    int rc = gc_image_repository(r->project, r->location, &repository, err);
    if (rc)
        return rc;
    p->build_image = true;
    p->image_build = (gc_image_build){
        .base_image = r->base_image,
        .context_dir = r->build_context,
        .platform = r->platform ? r->platform : "linux/amd64",
        .repository = repository,
    };
    return gc_image_plan(&p->image_build, &p->workload.image, err);
}

static int fill_workload_source(const gc_submit_request *r, gc_submit_plan *p, gc_error *err)
{
    gc_workload *w = &p->workload;
    if (r->pathways && r->pathways_headless) {
        /* A Shared Pathways Service is headless too, but the user never typed
         * --pathways-headless: the notice names the flag they did type. */
        if (r->image && r->pathways_deploy_sps)
            gc_strings_push(&p->notices,
                            "--image is ignored with --pathways-deploy-sps: a Shared Pathways "
                            "Service runs only the Pathways servers (--pathways-server-image, "
                            "--pathways-worker-image); each client runs its own program against "
                            "it with job submit --pathways-run-sps-workload --pathways-service "
                            "NAME --command CMD");
        else if (r->image)
            gc_strings_push(&p->notices, "--image is ignored with --pathways-headless: a "
                                         "headless job runs only the Pathways servers, and your "
                                         "JAX program runs outside the cluster (as in Google's "
                                         "gcluster)");
        return 0;
    }
    w->command = gc_xstrdup(r->command);
    if (r->image) {
        w->image = gc_xstrdup(r->image);
        return 0;
    }
    return plan_image_build(r, p, err);
}

/* Builds the JobSet once, offline, so that whatever would stop the build (a user variable that
 * replaces one Pathways needs) is reported before the cluster is contacted. */
static int check_buildable(const gc_workload *w, gc_error *err)
{
    json_t *jobset;
    int rc = gc_workload_jobset(w, &jobset, err);
    json_decref(jobset);
    return rc;
}

int gc_submit_prepare(const gc_submit_request *r, gc_submit_plan *p, gc_error *err)
{
    memset(p, 0, sizeof(*p));
    gc_workload *w = &p->workload;
    gc_submit_request service;
    if (r->pathways_deploy_sps) {
        int rc = submit_sps_request(r, &service, err);
        if (rc)
            return rc;
        r = &service;
    }
    int rc = check_name(r, err);
    if (!rc)
        rc = check_counts(r, err);
    if (!rc)
        rc = check_pathways_flags(r, err);
    if (!rc)
        rc = check_workload_source(r, err);
    if (!rc)
        rc = check_images(r, err);
    if (!rc)
        rc = choose_mode(r, p, err);
    if (!rc)
        rc = submit_resolve_compute(r, p, err);
    if (!rc)
        rc = fill_durations(r, p, err);
    if (!rc)
        rc = fill_mounts(r, w, err);
    if (!rc)
        rc = fill_mtc(r, w, err);
    if (!rc)
        rc = fill_node_constraints(r, w, err);
    if (!rc)
        rc = fill_nap(r, w, err);
    if (!rc)
        rc = fill_exit_codes(r, w, err);
    if (!rc)
        rc = fill_identity(r, w, err);
    if (!rc)
        rc = fill_options(r, w, err);
    if (!rc)
        rc = fill_env(r, w, err);
    if (!rc)
        w->name = gc_xstrdup(r->name);
    if (!rc)
        fill_pathways(r, w);
    if (!rc && r->pathways_deploy_sps)
        submit_sps_workload(r, w);
    if (!rc)
        rc = fill_workload_source(r, p, err);
    if (!rc && !p->compute.pending)
        rc = check_buildable(w, err);
    if (!rc)
        rc = gc_workload_gateways(w, r->ns ? r->ns : "default", &p->gateways, err);
    /* Last: gcloud is asked only once everything typed has passed. */
    if (!rc)
        rc = submit_resolve_filestore(r->gcloud, r->project, w, &p->notices, err);
    return rc;
}

void gc_submit_plan_free(gc_submit_plan *p)
{
    gc_workload_free(&p->workload);
    gc_strings_free(&p->notices);
    free((char *)p->image_build.repository);
    json_decref(p->gateways);
    json_decref(p->overlays);
    memset(p, 0, sizeof(*p));
}
