/*
 * deploy against a cluster: the node pools it has and lacks, the Kueue configuration by
 * server-side apply (field manager "gcluster", so a second run is a no-op and fields other
 * managers own are only taken over where ours differ), and the gcloud commands for missing pools.
 *
 * Resource names and scopes come from API discovery, not a table, so a user template may hold
 * any kind the cluster serves.
 */
#include "gcluster/deploy.h"

#include "gcluster/kube.h"
#include "gcluster/process.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FIELD_MANAGER        "gcluster"
#define LABEL_NODEPOOL       "cloud.google.com/gke-nodepool"
#define KUEUE_INSTALL_URL    "https://github.com/kubernetes-sigs/kueue/releases/download"
#define JOBSET_INSTALL_URL   "https://github.com/kubernetes-sigs/jobset/releases/download"
#define KUEUE_DEFAULT        "v0.17.1"
#define JOBSET_DEFAULT       "v0.11.1"
#define ACTIVE_WAIT_ATTEMPTS 40 /* x 250 ms: Kueue marks a new ClusterQueue Active in ~1 s */
/* Creating a multi-host TPU pool takes GKE minutes, sometimes tens of them. */
#define NODE_POOL_CREATE_TIMEOUT_MS (60 * 60 * 1000)
#define GCLOUD_OUTPUT_MAX           (1u << 20)

/* Node pools */

static int count_node(json_t *node, void *ctx, gc_error *err)
{
    (void)err;
    json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
    const char *pool = json_string_value(json_object_get(labels, LABEL_NODEPOOL));
    if (pool) {
        json_t *counts = ctx;
        json_int_t n = json_integer_value(json_object_get(counts, pool));
        json_object_set_new(counts, pool, json_integer(n + 1));
    }
    return 0;
}

static void describe_size(const gc_pool_spec *p, char *out, size_t size)
{
    if (p->topology)
        snprintf(out, size, "%s %s, %ld hosts", p->accelerator, p->topology, p->static_nodes);
    else if (p->static_nodes >= 0)
        snprintf(out, size, "%ld nodes", p->static_nodes);
    else
        snprintf(out, size, "autoscaling %ld-%ld", p->min_nodes, p->max_nodes);
}

typedef struct target {
    const char *project, *cluster, *location, *zone;
} target;

/* Prints the pools and which the cluster has; returns the missing ones (free the array). */
static int report_pools(gc_kube *kube, const gc_pool_spec *pools, size_t count, const gc_output *o,
                        const gc_pool_spec ***missing, size_t *missing_count, gc_error *err)
{
    json_t *counts = json_object();
    gc_kube_list_options opts = {
        .label_selector = LABEL_NODEPOOL, .accept = GC_KUBE_ACCEPT_METADATA, .page_size = 500};
    int rc = gc_kube_list(kube, "/api/v1/nodes", &opts, count_node, counts, NULL, err);
    if (rc) {
        json_decref(counts);
        gc_error_prefix(err, "listing the cluster's nodes to find its node pools: ");
        return rc;
    }
    *missing = gc_xcalloc(count ? count : 1, sizeof(**missing));
    *missing_count = 0;
    fprintf(o->out, "Node pools:\n");
    for (size_t i = 0; i < count; i++) {
        char size[96];
        describe_size(&pools[i], size, sizeof(size));
        json_int_t nodes = json_integer_value(json_object_get(counts, pools[i].name));
        char state[48];
        snprintf(state, sizeof(state), "present, %lld node%s", (long long)nodes,
                 nodes == 1 ? "" : "s");
        fprintf(o->out, "  %-20s %-20s %-34s %s\n", pools[i].name, pools[i].machine_type, size,
                json_object_get(counts, pools[i].name) ? state : "missing");
        if (!json_object_get(counts, pools[i].name))
            (*missing)[(*missing_count)++] = &pools[i];
    }
    json_decref(counts);
    return 0;
}

/* Runs one `gcloud container node-pools create` (argv[4] names the pool). What gcloud printed
 * (its progress on stderr, then its stdout) is appended to `output` for the caller to show. */
static int run_gcloud(char **argv, gc_buf *output, gc_error *err)
{
    gc_process p = {.argv = argv,
                    .timeout_ms = NODE_POOL_CREATE_TIMEOUT_MS,
                    .max_stdout = GCLOUD_OUTPUT_MAX,
                    .max_stderr = GCLOUD_OUTPUT_MAX};
    gc_process_result r;
    int rc = gc_process_run(&p, &r, err);
    gc_buf_append(output, r.err.data, r.err.len);
    gc_buf_append(output, r.out.data, r.out.len);
    char how[256];
    gc_process_describe(&r, &p, how, sizeof(how));
    if (!rc && r.exec_errno) {
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "gcloud %s; install the Google Cloud CLI or run the command above yourself",
                     how);
    } else if (!rc && !gc_process_succeeded(&r)) {
        if (!r.signal && !r.too_much_output)
            snprintf(how, sizeof(how), "exit status %d", r.exit_status);
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "gcloud failed (%s) creating node pool %s; its output is above. Fix the "
                     "cause and run gcluster deploy again (existing pools are skipped)",
                     how, argv[4]);
    }
    gc_process_result_free(&r);
    return rc;
}

static int handle_missing_pools(const gc_pool_spec *const *missing, size_t count, const target *t,
                                const gc_deploy_request *r, const gc_output *o, gc_error *err)
{
    if (!count)
        return 0;
    bool run = r->create_node_pools && !r->plan;
    fprintf(o->out, "\n%s node pool%s missing; %s:\n", count == 1 ? "One" : "Some",
            count == 1 ? " is" : "s are", run ? "creating" : "create with");
    for (size_t i = 0; i < count; i++) {
        char **argv = gc_pool_create_argv(missing[i], t->project, t->cluster, t->location, t->zone);
        int rc = 0;
        if (run) {
            char *line = gc_argv_shell_line(argv);
            fprintf(o->log, "$ %s\n", line);
            fflush(o->log);
            free(line);
            gc_buf output;
            gc_buf_init(&output);
            rc = run_gcloud(argv, &output, err);
            fputs(output.data, o->log);
            gc_buf_free(&output);
        } else {
            char *line = gc_argv_shell_line(argv);
            fprintf(o->out, "  %s\n", line);
            free(line);
        }
        gc_argv_free(argv);
        if (rc)
            return rc;
    }
    if (!run)
        fprintf(o->out, "(or run gcluster deploy again with --create-node-pools)\n");
    return 0;
}

/* Discovery */

/* Whether the API group is served, and its version to use (preferring `want`). */
static int group_version(gc_kube *kube, const char *group, const char *want, char *version,
                         size_t size, gc_error *err)
{
    char path[128];
    snprintf(path, sizeof(path), "/apis/%s", group);
    json_t *body;
    int rc = gc_kube_get(kube, path, NULL, &body, err);
    version[0] = '\0';
    if (rc)
        return err->http_status == 404 ? (gc_error_clear(err), 0) : rc;
    size_t i;
    json_t *v;
    json_array_foreach(json_object_get(body, "versions"), i, v)
    {
        const char *name = json_string_value(json_object_get(v, "version"));
        if (name && (!version[0] || !strcmp(name, want)))
            snprintf(version, size, "%s", name);
    }
    json_decref(body);
    return 0;
}

/* The REST name and scope of `kind` in `api_version` ("group/version" or "v1"). */
static int resource_of(gc_kube *kube, json_t *cache, const char *api_version, const char *kind,
                       const char **resource, bool *namespaced, gc_error *err)
{
    json_t *list = json_object_get(cache, api_version);
    if (!list) {
        char *path = strchr(api_version, '/') ? gc_xasprintf("/apis/%s", api_version)
                                              : gc_xasprintf("/api/%s", api_version);
        int rc = gc_kube_get(kube, path, NULL, &list, err);
        free(path);
        if (rc && err->http_status == 404)
            return gc_fail(err, GC_EXIT_RUNTIME,
                           "the cluster does not serve %s (needed for %s); install what "
                           "provides it first",
                           api_version, kind);
        if (rc)
            return rc;
        json_object_set_new(cache, api_version, list);
    }
    size_t i;
    json_t *res;
    json_array_foreach(json_object_get(list, "resources"), i, res)
    {
        const char *name = json_string_value(json_object_get(res, "name"));
        if (name && !strchr(name, '/') &&
            !strcmp(json_string_value(json_object_get(res, "kind")), kind)) {
            *resource = name;
            *namespaced = json_is_true(json_object_get(res, "namespaced"));
            return 0;
        }
    }
    return gc_fail(err, GC_EXIT_RUNTIME, "the cluster's %s API has no kind %s", api_version, kind);
}

/* Objects */

typedef struct object_ref {
    char *path;
    char label[192]; /* "clusterqueue.kueue.x-k8s.io/cluster-queue" */
} object_ref;

static int locate(gc_kube *kube, json_t *cache, json_t *obj, object_ref *ref, gc_error *err)
{
    const char *api = json_string_value(json_object_get(obj, "apiVersion"));
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *resource = NULL;
    bool namespaced = false;
    int rc = resource_of(kube, cache, api, kind, &resource, &namespaced, err);
    if (rc)
        return rc;
    const char *ns = json_string_value(json_object_get(meta, "namespace"));
    if (namespaced && !ns) {
        ns = gc_kube_namespace(kube);
        json_object_set_new(meta, "namespace", json_string(ns));
    }
    const char *slash = strchr(api, '/');
    char group[128] = "";
    if (slash)
        snprintf(group, sizeof(group), "%.*s", (int)(slash - api), api);
    ref->path =
        gc_kube_path(group, slash ? slash + 1 : api, namespaced ? ns : NULL, resource, name);
    /* kubectl's way of naming it: the lower-case kind, then the group */
    size_t n = 0;
    for (const char *k = kind; *k && n < 63; k++)
        ref->label[n++] = (char)tolower((unsigned char)*k);
    snprintf(ref->label + n, sizeof(ref->label) - n, "%s%s/%s", group[0] ? "." : "", group, name);
    return 0;
}

/* What an object holds that apply can change: everything but status and server metadata. */
static json_t *comparable(const json_t *obj)
{
    json_t *copy = json_deep_copy(obj);
    json_object_del(copy, "status");
    json_t *meta = json_object_get(copy, "metadata");
    static const char *const server_fields[] = {"managedFields", "resourceVersion", "generation",
                                                "uid", "creationTimestamp"};
    for (size_t i = 0; i < sizeof(server_fields) / sizeof(*server_fields); i++)
        json_object_del(meta, server_fields[i]);
    return copy;
}

static int apply_one(gc_kube *kube, json_t *obj, const object_ref *ref, bool plan,
                     const gc_output *o, gc_error *err)
{
    json_t *before = NULL, *after = NULL;
    int rc = gc_kube_get(kube, ref->path, NULL, &before, err);
    if (rc && err->http_status != 404)
        return rc;
    gc_error_clear(err);
    rc = gc_kube_apply(kube, ref->path, obj, FIELD_MANAGER,
                       GC_KUBE_FORCE | GC_KUBE_STRICT | (plan ? GC_KUBE_DRY_RUN : 0), &after, err);
    if (rc) {
        json_decref(before);
        gc_error_prefix(err, "applying %s: ", ref->label);
        return rc;
    }
    const char *outcome;
    if (!before) {
        outcome = plan ? "would be created" : "created";
    } else {
        json_t *a = comparable(before), *b = comparable(after);
        bool same = json_equal(a, b);
        json_decref(a);
        json_decref(b);
        outcome = same ? "unchanged" : plan ? "would be configured" : "configured";
    }
    fprintf(o->out, "  %s %s\n", ref->label, outcome);
    json_decref(before);
    json_decref(after);
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR)
        ;
}

/* Waits briefly for Kueue to accept a ClusterQueue, and says what it decided. */
static int report_queue_state(gc_kube *kube, const object_ref *ref, const gc_output *o,
                              gc_error *err)
{
    const char *reason = "Pending", *message = "Kueue has not looked at it yet";
    json_t *cq = NULL;
    for (int attempt = 0; attempt < ACTIVE_WAIT_ATTEMPTS; attempt++) {
        json_decref(cq);
        int rc = gc_kube_get(kube, ref->path, NULL, &cq, err);
        if (rc)
            return rc;
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(json_object_get(cq, "status"), "conditions"), i, c)
        {
            if (strcmp(json_string_value(json_object_get(c, "type")), "Active"))
                continue;
            reason = json_string_value(json_object_get(c, "reason"));
            message = json_string_value(json_object_get(c, "message"));
            if (json_is_string(json_object_get(c, "status")) &&
                !strcmp(json_string_value(json_object_get(c, "status")), "True")) {
                fprintf(o->out, "  %s is Active\n", ref->label);
                json_decref(cq);
                return 0;
            }
        }
        sleep_ms(250);
    }
    fprintf(o->log, "gcluster: warning: %s is not Active (%s: %s)\n", ref->label,
            reason ? reason : "", message ? message : "");
    json_decref(cq);
    return 0;
}

static int apply_objects(gc_kube *kube, json_t *objects, bool plan, const gc_output *o,
                         gc_error *err)
{
    json_t *cache = json_object();
    size_t i;
    json_t *obj;
    int rc = 0;
    json_array_foreach(objects, i, obj)
    {
        object_ref ref = {0};
        rc = locate(kube, cache, obj, &ref, err);
        if (!rc)
            rc = apply_one(kube, obj, &ref, plan, o, err);
        if (!rc && !plan &&
            !strcmp(json_string_value(json_object_get(obj, "kind")), "ClusterQueue"))
            rc = report_queue_state(kube, &ref, o, err);
        free(ref.path);
        if (rc)
            break;
    }
    json_decref(cache);
    return rc;
}

/* The whole command */

static void print_summary(const gc_blueprint *bp, const target *t, const char *head_pool,
                          const gc_output *o)
{
    fprintf(o->out, "Blueprint %s: cluster %s (project %s, location %s)", bp->name,
            t->cluster ? t->cluster : "?", t->project ? t->project : "?",
            t->location ? t->location : "?");
    if (bp->pathways)
        fprintf(o->out, ", Pathways enabled (head pool %s)", head_pool);
    fprintf(o->out, "\n");
    for (size_t i = 0; i < bp->unhandled_count; i++)
        fprintf(o->out, "  not handled by gcluster deploy: module %s (%s)\n", bp->unhandled[i].id,
                bp->unhandled[i].source);
}

/* Kueue (and JobSet) must already run on the cluster; say how to install what is missing. */
static int check_prerequisites(gc_kube *kube, const gc_blueprint *bp, char kueue_api[16],
                               const gc_output *o, bool *missing, gc_error *err)
{
    char jobset_api[16];
    int rc = group_version(kube, "kueue.x-k8s.io", "v1beta2", kueue_api, 16, err);
    if (!rc && bp->jobset_install)
        rc =
            group_version(kube, "jobset.x-k8s.io", "v1alpha2", jobset_api, sizeof(jobset_api), err);
    if (rc)
        return rc;
    if (bp->kueue_install && !kueue_api[0]) {
        fprintf(o->log,
                "gcluster: Kueue is not installed on this cluster; install it with\n"
                "  kubectl apply --server-side -f %s/%s/manifests.yaml\n"
                "then run gcluster deploy again\n",
                KUEUE_INSTALL_URL, bp->kueue_version ? bp->kueue_version : KUEUE_DEFAULT);
        *missing = true;
    }
    if (bp->jobset_install && !jobset_api[0]) {
        fprintf(o->log,
                "gcluster: JobSet is not installed on this cluster; install it with\n"
                "  kubectl apply --server-side -f %s/%s/manifests.yaml\n",
                JOBSET_INSTALL_URL, JOBSET_DEFAULT);
        *missing = true;
    }
    return 0;
}

int gc_deploy(gc_kube *kube, const gc_blueprint *bp, const gc_deploy_request *r, const gc_output *o,
              gc_error *err)
{
    const char *head_pool = r->head_pool ? r->head_pool : GC_PATHWAYS_HEAD_POOL;
    target t = {.project = r->project ? r->project : bp->project,
                .cluster = r->cluster ? r->cluster : bp->cluster,
                .location = r->location ? r->location : bp->region,
                .zone = bp->zone};
    print_summary(bp, &t, head_pool, o);

    char kueue_api[16] = "";
    bool missing_prerequisite = false;
    int rc = check_prerequisites(kube, bp, kueue_api, o, &missing_prerequisite, err);
    json_t *objects = NULL;
    gc_buf warnings;
    gc_buf_init(&warnings);
    if (!rc)
        rc = gc_kueue_objects(bp, head_pool, kueue_api[0] ? kueue_api : "v1beta2", &objects,
                              &warnings, err);
    if (warnings.len)
        fprintf(o->log, "gcluster: warning: %s", warnings.data);
    gc_buf_free(&warnings);

    size_t pool_count, missing_count = 0;
    gc_pool_spec *pools = gc_blueprint_all_pools(bp, head_pool, &pool_count);
    const gc_pool_spec **missing = NULL;
    if (!rc)
        rc = report_pools(kube, pools, pool_count, o, &missing, &missing_count, err);
    if (!rc && json_array_size(objects) && kueue_api[0]) {
        fprintf(o->out, "Kueue configuration (kueue.x-k8s.io/%s)%s:\n", kueue_api,
                r->plan ? ", plan only" : "");
        rc = apply_objects(kube, objects, r->plan, o, err);
    }
    if (!rc)
        rc = handle_missing_pools(missing, missing_count, &t, r, o, err);
    if (!rc && missing_prerequisite)
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "the cluster lacks Kueue or JobSet (install commands above); the Kueue "
                     "configuration was not applied");
    free(missing);
    free(pools);
    json_decref(objects);
    return rc;
}
