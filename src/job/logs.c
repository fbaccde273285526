/*
 * `job logs`: pick the pods and containers, then stream them all at once through the client's
 * multiplexed log reader, handing each line with its pod and container to the caller's sink. By
 * default that is one container: the user's program in the head pod (headless: the IFRT proxy; an
 * ordinary JobSet: slice 0, host 0).
 *
 * Following ends when the pods end: the kubelet closes finished streams itself, but a stream
 * can stay open (a node that never says goodbye), and a container that exited may restart, so
 * the pods' phases are checked every two seconds with one list request and following stops
 * shortly after every pod has finished. Broken streams are resumed by the kube client; one that
 * cannot be makes the command end with GC_EXIT_INCOMPLETE.
 */
#include "gcluster/buf.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"
#include "gcluster/sys.h"
#include "job/internal.h"
#include "job/watch_job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PHASE_CHECK_SECONDS 2
#define DRAIN_SECONDS       2

typedef struct log_target {
    char *pod;
    char *container;
} log_target;

typedef struct logs_state {
    gc_kube *kube;
    const gc_logs_request *r;
    const gc_log_sink *sink;
    const gc_events *ev;
    char selector[512];
    json_t *pod_fields; /* POD_FIELDS */
    log_target *targets;
    size_t count;
    time_t next_check;
    time_t finished_at; /* when every followed pod had ended, or 0 */
} logs_state;

/* The flags, and --since in seconds. */
static int check_request(const gc_logs_request *r, long *since, gc_error *err)
{
    if (gc_job_name_check(r->name, err))
        return err->code;
    if (r->role && strcmp(r->role, "head") && strcmp(r->role, "worker"))
        return gc_fail(err, GC_EXIT_USAGE, "--role %s: use head or worker", r->role);
    if (r->all && r->container)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--all already shows every container; drop --container or --all");
    if (r->main_only && (r->all || r->role || r->container || r->slice >= 0 || r->host >= 0))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--main-only already picks the first pod of every replicated job with all "
                       "its containers; drop --role, --slice, --host, --container and --all (or "
                       "--main-only)");
    if (r->tail < -1)
        return gc_fail(err, GC_EXIT_USAGE, "--tail must be 0 or more lines");
    *since = 0;
    if (r->since)
        return gc_clock_parse_duration("--since", r->since, since, err);
    return 0;
}

int gc_job_logs_check(const gc_logs_request *r, gc_error *err)
{
    long since;
    return check_request(r, &since, err);
}

/* Which replicated job, and which container in it, the request means for this JobSet. */
static void choose_role(const json_t *jobset, const gc_logs_request *r, const char **rjob,
                        const char **container)
{
    bool pathways = gc_job_replicated_job(jobset, GC_PATHWAYS_HEAD) != NULL;
    bool worker = r->role && !strcmp(r->role, "worker");
    if (!pathways) {
        const json_t *main = gc_job_replicated_job(jobset, GC_MAIN_JOB);
        *rjob = main ? GC_MAIN_JOB : NULL;
        *container = NULL; /* the first container */
        return;
    }
    if (worker) {
        *rjob = GC_PATHWAYS_WORKER;
        *container = "pathways-worker";
    } else {
        *rjob = GC_PATHWAYS_HEAD;
        gc_pathways_mode mode = gc_job_pathways_mode(jobset);
        /* A shared service's head runs the resource manager alone. */
        *container = mode == GC_PATHWAYS_HEADLESS ? "pathways-proxy"
                     : mode == GC_PATHWAYS_SPS    ? "pathways-rm"
                                                  : "workload-container";
    }
}

static const char *label(const json_t *pod, const char *key)
{
    return gc_kube_field(pod, "labels", key);
}

static bool pod_selected(const json_t *pod, const gc_logs_request *r)
{
    long slice = r->slice >= 0 ? r->slice : (r->all ? -1 : 0);
    long host = r->host >= 0 ? r->host : (r->all ? -1 : 0);
    long job_index = gc_job_pod_slice(pod);
    const char *pod_index = label(pod, "batch.kubernetes.io/job-completion-index");
    if (slice >= 0 && job_index != slice)
        return false;
    return host < 0 || (pod_index && atol(pod_index) == host);
}

static void add_target(logs_state *s, const char *pod, const char *container)
{
    s->targets = gc_xrealloc(s->targets, (s->count + 1) * sizeof(*s->targets));
    log_target *t = &s->targets[s->count++];
    t->pod = gc_xstrdup(pod);
    t->container = gc_xstrdup(container);
}

static void add_containers(logs_state *s, const json_t *pod, const char *wanted)
{
    const char *pod_name = gc_kube_field(pod, NULL, "name");
    const json_t *spec = json_object_get(pod, "spec");
    static const char *const lists[] = {"initContainers", "containers"};
    bool first_regular = true;
    for (size_t l = 0; l < 2; l++) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            const char *name = json_string_value(json_object_get(c, "name"));
            bool regular = l == 1;
            bool pick = s->r->all || s->r->main_only ||
                        (wanted ? !strcmp(name, wanted) : regular && first_regular);
            if (regular)
                first_regular = false;
            if (pick && name && pod_name)
                add_target(s, pod_name, name);
        }
    }
}

static int collect_pod(json_t *pod, void *ctx, gc_error *err)
{
    (void)err;
    json_array_append(ctx, pod);
    return 0;
}

/* What choosing pods and following them needs of a pod (gc_json_load_fields shape); the pods'
 * specs and managedFields, nine tenths of their bytes, are skipped. */
static const char POD_FIELDS[] =
    "{\"metadata\": {\"name\": true, \"deletionTimestamp\": true,"
    "              \"labels\": {\"jobset.sigs.k8s.io/replicatedjob-name\": true,"
    "                         \"jobset.sigs.k8s.io/job-index\": true,"
    "                         \"jobset.sigs.k8s.io/jobset-name\": true,"
    "                         \"batch.kubernetes.io/job-name\": true,"
    "                         \"gcluster.google.com/workload\": true,"
    "                         \"batch.kubernetes.io/job-completion-index\": true}},"
    " \"spec\": {\"initContainers\": [{\"name\": true}], \"containers\": [{\"name\": true}]},"
    " \"status\": {\"phase\": true}}";

static int list_pods(logs_state *s, json_t *pods, gc_error *err)
{
    char *path = gc_kube_path(NULL, "v1", gc_kube_namespace(s->kube), "pods", NULL);
    gc_kube_list_options opts = {.label_selector = s->selector, .fields = s->pod_fields};
    int rc = gc_kube_list(s->kube, path, &opts, collect_pod, pods, NULL, err);
    free(path);
    return rc;
}

/* The job's pods that have ended (Succeeded or Failed): two lists in one round trip. While the
 * job runs both are empty, so following a thousand pods checks on them with two small answers
 * every PHASE_CHECK_SECONDS, not with every pod (a megabyte of JSON at that size). */
static int list_finished_pods(logs_state *s, json_t *pods, gc_error *err)
{
    char *path = gc_kube_path(NULL, "v1", gc_kube_namespace(s->kube), "pods", NULL);
    gc_kube_list_options succeeded = {.label_selector = s->selector,
                                      .field_selector = "status.phase=Succeeded",
                                      .fields = s->pod_fields};
    gc_kube_list_options failed = succeeded;
    failed.field_selector = "status.phase=Failed";
    gc_kube_read reads[] = {
        {.path = path, .opts = &succeeded, .on_item = collect_pod, .ctx = pods},
        {.path = path, .opts = &failed, .on_item = collect_pod, .ctx = pods},
    };
    int rc = gc_kube_read_all(s->kube, reads, 2);
    if (rc)
        *err = reads[reads[0].rc ? 0 : 1].err;
    free(path);
    return rc;
}

/* The JobSet and its pods: one round trip. */
static int find_job_and_pods(logs_state *s, json_t **jobset, json_t *pods, gc_error *err)
{
    char *path = gc_kube_path(NULL, "v1", gc_kube_namespace(s->kube), "pods", NULL);
    gc_kube_list_options opts = {.label_selector = s->selector, .fields = s->pod_fields};
    gc_kube_read read = {.path = path, .opts = &opts, .on_item = collect_pod, .ctx = pods};
    int rc = gc_job_find_jobset_with(s->kube, s->r->name, jobset, &read, 1, err);
    free(path);
    return rc;
}

/* Whether `pod` is one the request asks for (role, slice, host; not being deleted). */
static bool pod_wanted(const logs_state *s, const json_t *jobset, const json_t *pod)
{
    const char *rjob, *container;
    choose_role(jobset, s->r, &rjob, &container);
    const char *pod_rjob = gc_job_pod_role(pod);
    bool role_ok = (s->r->all && !s->r->role) || s->r->main_only ||
                   (rjob && pod_rjob && !strcmp(pod_rjob, rjob));
    return role_ok && pod_selected(pod, s->r) && !gc_kube_field(pod, NULL, "deletionTimestamp");
}

/* A --slice or --host outside the replicated job's shape names a pod that can never exist:
 * that is a mistake in the flags, not something to wait for. */
static int check_indexes(const logs_state *s, const json_t *jobset, gc_error *err)
{
    const char *rjob, *container;
    choose_role(jobset, s->r, &rjob, &container);
    const json_t *spec = rjob ? gc_job_replicated_job(jobset, rjob) : NULL;
    if (!spec || (s->r->all && !s->r->role) || s->r->main_only)
        return 0;
    json_int_t slices = json_integer_value(json_object_get(spec, "replicas"));
    json_int_t hosts = json_integer_value(
        json_object_get(json_object_get(json_object_get(spec, "template"), "spec"), "parallelism"));
    slices = slices > 0 ? slices : 1;
    hosts = hosts > 0 ? hosts : 1;
    if (s->r->slice >= slices)
        return gc_fail(err, GC_EXIT_USAGE, "--slice %ld: %s of job %s has slices 0 to %lld",
                       s->r->slice, rjob, s->r->name, (long long)slices - 1);
    if (s->r->host >= hosts)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--host %ld: each slice of %s of job %s has hosts 0 to %lld", s->r->host,
                       rjob, s->r->name, (long long)hosts - 1);
    return 0;
}

static int choose_targets(logs_state *s, const json_t *jobset, json_t *pods, gc_error *err)
{
    const char *rjob, *container;
    choose_role(jobset, s->r, &rjob, &container);
    if (s->r->container)
        container = s->r->container;
    size_t i;
    const json_t *pod;
    json_array_foreach(pods, i, pod)
    {
        if (pod_wanted(s, jobset, pod))
            add_containers(s, pod, container);
    }
    if (s->count)
        return 0;
    return gc_fail(err, GC_EXIT_USAGE,
                   "no %s container%s%s matches in job %s (check --role, --slice, --host and "
                   "--container; gcluster job inspect %s lists the pods)",
                   container ? container : "", container ? " in " : "", rjob ? rjob : "",
                   s->r->name, s->r->name);
}

/* Why a job has no pods to read yet: its status, with Kueue's reason when it is queued. */
static void not_started(logs_state *s, const json_t *jobset, char *why, size_t size)
{
    gc_job_facts f;
    gc_job_status st;
    gc_error ignored = {0};
    job_facts_fetch(s->kube, jobset, &f, &ignored);
    gc_job_status_derive(&f, &st);
    snprintf(why, size, "%s%s%s", st.text, st.detail[0] ? ": " : "", st.detail);
}

typedef struct start_wait {
    logs_state *s;
    const json_t *jobset;
} start_wait;

static int on_pod_event(enum gc_kube_event_type type, json_t *pod, void *ctx, gc_error *err)
{
    (void)err;
    start_wait *w = ctx;
    if (type != GC_KUBE_ADDED && type != GC_KUBE_MODIFIED)
        return 0;
    const char *phase = json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
    bool started = phase && strcmp(phase, "Pending") != 0;
    return started && pod_wanted(w->s, w->jobset, pod) ? GC_KUBE_STOP : 0;
}

/* -f on a job whose pods are not running yet: say why, then watch until they are. Without -f
 * that is an error, as kubectl's is for a container that has not started. */
static int wait_until_started(logs_state *s, const json_t *jobset, json_t *pods, gc_error *err)
{
    size_t i;
    const json_t *pod;
    json_array_foreach(pods, i, pod)
    {
        const char *phase =
            json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
        if (phase && strcmp(phase, "Pending") != 0 && pod_wanted(s, jobset, pod))
            return 0;
    }
    char why[1024];
    not_started(s, jobset, why, sizeof(why));
    if (!s->r->follow)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "job %s has not started yet (%s); add -f to wait for it", s->r->name, why);
    gc_notice(s->ev, "waiting for job %s to start (%s)", s->r->name, why);
    char *path = gc_kube_path(NULL, "v1", gc_kube_namespace(s->kube), "pods", NULL);
    gc_kube_list_options opts = {.label_selector = s->selector};
    start_wait w = {.s = s, .jobset = jobset};
    int rc = gc_kube_list_watch(s->kube, path, &opts, 0, on_pod_event, &w, err);
    free(path);
    json_array_clear(pods);
    return rc ? rc : list_pods(s, pods, err);
}

static int on_line(size_t index, const char *text, size_t len, void *ctx)
{
    logs_state *s = ctx;
    gc_log_line line = {
        .pod = s->targets[index].pod,
        .container = s->targets[index].container,
        .text = text,
        .len = len,
    };
    return s->sink->line(s->sink->ctx, &line);
}

static void flush(const logs_state *s)
{
    if (s->sink->flush)
        s->sink->flush(s->sink->ctx);
}

static bool all_finished(const json_t *pods, const logs_state *s)
{
    for (size_t t = 0; t < s->count; t++) {
        bool done = false;
        size_t i;
        const json_t *pod;
        json_array_foreach(pods, i, pod)
        {
            const char *phase =
                json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
            const char *name = gc_kube_field(pod, NULL, "name");
            if (name && !strcmp(name, s->targets[t].pod))
                done = phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
        }
        if (!done)
            return false;
    }
    return true;
}

static bool keep_following(void *ctx)
{
    logs_state *s = ctx;
    flush(s);
    time_t now = time(NULL);
    if (s->finished_at)
        return now < s->finished_at + DRAIN_SECONDS;
    if (now < s->next_check)
        return true;
    s->next_check = now + PHASE_CHECK_SECONDS;
    json_t *pods = json_array();
    gc_error ignored = {0};
    if (list_finished_pods(s, pods, &ignored) == 0 && all_finished(pods, s))
        s->finished_at = now;
    json_decref(pods);
    return true;
}

static int stream(logs_state *s, long since, gc_error *err)
{
    gc_kube_log_source *sources = gc_xcalloc(s->count, sizeof(*sources));
    for (size_t i = 0; i < s->count; i++) {
        sources[i].ns = gc_kube_namespace(s->kube);
        sources[i].pod = s->targets[i].pod;
        sources[i].container = s->targets[i].container;
    }
    gc_kube_log_options opts = {
        .follow = s->r->follow,
        .tail_lines = s->r->tail,
        .since_seconds = since,
        .timestamps = s->r->timestamps,
    };
    s->next_check = time(NULL) + PHASE_CHECK_SECONDS;
    int rc = gc_kube_logs(s->kube, sources, s->count, &opts, on_line,
                          s->r->follow ? keep_following : NULL, s, err);
    if (rc == GC_EXIT_INCOMPLETE)
        gc_error_prefix(err, "the logs of job %s are incomplete: ", s->r->name);
    flush(s);
    free(sources);
    return rc;
}

int gc_job_logs(gc_kube *kube, const gc_logs_request *r, const gc_log_sink *sink,
                const gc_events *ev, gc_error *err)
{
    long since;
    int rc = check_request(r, &since, err);
    if (rc)
        return rc;
    logs_state s = {.kube = kube,
                    .r = r,
                    .sink = sink,
                    .ev = ev,
                    .pod_fields = json_loads(POD_FIELDS, 0, NULL)};
    snprintf(s.selector, sizeof(s.selector), "jobset.sigs.k8s.io/jobset-name=%s", r->name);
    json_t *jobset = NULL;
    json_t *pods = json_array();
    rc = find_job_and_pods(&s, &jobset, pods, err);
    /* A JobSet-less job's pods carry its Job's label instead (gc_job_indexed_view). */
    if (!rc)
        job_pods_selector(jobset, r->name, s.selector, sizeof(s.selector));
    if (!rc)
        rc = check_indexes(&s, jobset, err);
    if (!rc)
        rc = wait_until_started(&s, jobset, pods, err);
    if (!rc)
        rc = choose_targets(&s, jobset, pods, err);
    /* The targets hold copies of what streaming needs: while it lasts, keep nothing else. */
    json_decref(pods);
    json_decref(jobset);
    pods = jobset = NULL;
    if (!rc)
        rc = stream(&s, since, err);
    for (size_t i = 0; i < s.count; i++) {
        free(s.targets[i].pod);
        free(s.targets[i].container);
    }
    free(s.targets);
    json_decref(s.pod_fields);
    return rc;
}
