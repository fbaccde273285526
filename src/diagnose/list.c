/*
 * `job list`: one paged list of JobSets, each reduced to a short row as it arrives (only the
 * fields a row needs are decoded), so memory holds rows, not objects. The status and the
 * diagnosis' short reason come from the JobSet alone (its conditions and the ready counts of
 * its Jobs); queue_reasons also lists Kueue Workloads to say why a queued job waits, and only
 * queued rows keep their (trimmed) JobSet until then. Nothing is read per job.
 */
#include "diagnose/diagnosis.h"
#include "gcluster/buf.h"
#include "gcluster/diagnose.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/kueue.h"
#include "gcluster/manifest.h"
#include "gcluster/sps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Large pages: items are read one at a time, so the page size costs no client memory, and the
 * first page of a list is served from the API server's watch cache, while continuation pages
 * whose snapshot the cache no longer holds are read from etcd and decoded again: measured on
 * testenv (10,000 JobSets), ~0.5 ms per JobSet from the cache against ~2-3 ms from etcd. Pages
 * still bound one request's work for much larger lists (the server times a list out after 60 s). */
#define PAGE_SIZE 10000

/* What a row is made of (gc_json_load_fields shape): about 1/20 of a JobSet's bytes. The rest,
 * managedFields and pod templates above all, is skipped unparsed. */
static const char ROW_FIELDS[] =
    "{\"metadata\": {\"name\": true, \"namespace\": true, \"uid\": true,"
    "              \"creationTimestamp\": true, \"deletionTimestamp\": true,"
    "              \"labels\": true, \"annotations\": true},"
    " \"spec\": {\"suspend\": true, \"successPolicy\": true,"
    "          \"replicatedJobs\": [{\"name\": true, \"replicas\": true,"
    "                              \"template\": {\"spec\": {\"parallelism\": true,"
    "                                 \"template\": {\"spec\": {\"nodeSelector\": true}}}}}]},"
    " \"status\": true}";

typedef struct list_state {
    const gc_list_request *r;
    gc_job_row *rows;
    json_t **queued; /* per row: a queued row's JobSet, for its diagnosis; else NULL */
    size_t count;
    size_t cap;
} list_state;

/* The JobSet alone cannot say why a job waits: a queued row's detail comes from its Workload
 * (when asked for), and an admitted row has none, as pods are not read. */
static void fill_row(gc_job_row *row, const json_t *jobset)
{
    gc_job_facts facts;
    gc_job_facts_from_jobset(jobset, &facts);
    gc_job_facts_add_ready_jobs(&facts, jobset);
    gc_job_status st;
    gc_job_status_derive(&facts, &st);

    char compute[96];
    *row = (gc_job_row){
        .ns = gc_job_strdup_or_null(gc_kube_field(jobset, NULL, "namespace")),
        .name = gc_job_strdup_or_null(gc_kube_field(jobset, NULL, "name")),
        .uid = gc_job_strdup_or_null(gc_kube_field(jobset, NULL, "uid")),
        .phase = st.phase,
        .status = gc_xstrdup(st.text),
        .detail = st.phase == GC_JOB_QUEUED || st.phase == GC_JOB_ADMITTED
                      ? NULL
                      : gc_job_strdup_or_null(st.detail),
        .compute = gc_job_compute(jobset, compute, sizeof(compute)) ? gc_xstrdup(compute) : NULL,
        .pathways = gc_job_pathways_mode(jobset),
        .queue = gc_job_strdup_or_null(gc_kube_field(jobset, "labels", GC_LABEL_QUEUE)),
        .created = gc_job_strdup_or_null(gc_kube_field(jobset, NULL, "creationTimestamp")),
        .completed = gc_job_strdup_or_null(facts.completed_at),
    };
}

/* The diagnosis' reason from what the list read: the JobSet (pods are not read: its ready
 * Jobs count), and a queued job's Workload (NULL: none). */
static char *reason_of(const json_t *jobset, const json_t *workload)
{
    gc_diagnose_input in = {.jobset = jobset, .workload = workload};
    gc_diagnosis d;
    diagnose_job(&in, &d);
    return gc_xstrdup(d.reason);
}

static void free_row(gc_job_row *row)
{
    char *fields[] = {row->ns,     row->name,    row->uid,   row->status,  row->detail,
                      row->reason, row->compute, row->queue, row->created, row->completed};
    for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++)
        free(fields[i]);
}

/* A list that broke on the wire starts over: the rows so far are dropped, nothing was shown. */
static void forget_rows(void *ctx)
{
    list_state *s = ctx;
    for (size_t i = 0; i < s->count; i++) {
        free_row(&s->rows[i]);
        json_decref(s->queued[i]);
    }
    s->count = 0;
}

static int on_jobset(json_t *jobset, void *ctx, gc_error *err)
{
    list_state *s = ctx;
    if (s->count == GC_JOB_LIST_MAX_ROWS)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "more than %d jobs match: job list stops there to bound its memory; "
                       "narrow the list with --name-contains, --status, or one namespace "
                       "instead of -A",
                       GC_JOB_LIST_MAX_ROWS);
    const char *n = gc_kube_field(jobset, NULL, "name");
    if (s->r->name_contains && (!n || !strstr(n, s->r->name_contains)))
        return 0;
    gc_job_row row;
    fill_row(&row, jobset);
    bool valid;
    if (s->r->status && !gc_job_phase_matches(s->r->status, row.phase, &valid)) {
        free_row(&row);
        return 0;
    }
    if (s->count == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->rows = gc_xrealloc(s->rows, s->cap * sizeof(*s->rows));
        s->queued = gc_xrealloc(s->queued, s->cap * sizeof(*s->queued));
    }
    /* Reasons only when asked for (the plain table has no column for them); a queued job's is
     * its Workload's to tell, so it waits for the Workloads. */
    bool queued = row.phase == GC_JOB_QUEUED;
    if (s->r->queue_reasons && !queued)
        row.reason = reason_of(jobset, NULL);
    s->queued[s->count] = queued && s->r->queue_reasons ? json_incref(jobset) : NULL;
    s->rows[s->count++] = row;
    return 0;
}

/* A JobSet-less job's Job becomes a row through its JobSet view. */
static int on_indexed_job(json_t *job, void *ctx, gc_error *err)
{
    json_t *view = gc_job_indexed_view(job);
    int rc = view ? on_jobset(view, ctx, err) : 0;
    json_decref(view);
    return rc;
}

/* The rows of JobSet-less jobs: their Jobs, labelled with their workload and not made by a
 * JobSet (one more list, in the same round trip as the JobSets'). */
#define INDEXED_JOB_SELECTOR GC_LABEL_WORKLOAD ",!jobset.sigs.k8s.io/jobset-name"

/* A row's reason is set again when its Workload is seen again: nothing to undo. */
static void nothing_to_forget(void *ctx)
{
    (void)ctx;
}

/* Why queued jobs wait, from their Kueue Workloads. */
static int on_workload(json_t *workload, void *ctx, gc_error *err)
{
    (void)err;
    list_state *s = ctx;
    const char *uid = gc_kube_field(workload, "labels", "kueue.x-k8s.io/job-uid");
    for (size_t i = 0; uid && i < s->count; i++) {
        gc_job_row *row = &s->rows[i];
        if (row->phase != GC_JOB_QUEUED || !row->uid || strcmp(row->uid, uid) != 0)
            continue;
        gc_job_facts facts = {.suspended = true, .queued_by_kueue = true};
        gc_job_facts_add_workload(&facts, workload);
        gc_job_status st;
        gc_job_status_derive(&facts, &st);
        free(row->detail);
        row->detail = gc_xstrdup(st.detail[0] ? st.detail : "waiting for Kueue");
        free(row->reason);
        row->reason = reason_of(s->queued[i], workload);
    }
    return 0;
}

static int add_queue_reasons(gc_kube *kube, list_state *s, gc_error *err)
{
    bool any_queued = false;
    for (size_t i = 0; i < s->count; i++)
        any_queued |= s->rows[i].phase == GC_JOB_QUEUED;
    if (!any_queued)
        return 0;
    /* At the Kueue version the cluster serves; none: no Kueue, no Workloads. */
    gc_kube_list_options opts = {.page_size = PAGE_SIZE, .on_restart = nothing_to_forget};
    gc_kube_read read = {.opts = &opts, .on_item = on_workload, .ctx = s};
    gc_kueue_read workloads = {.index = 0,
                               .ns = s->r->all_namespaces ? NULL : gc_kube_namespace(kube),
                               .resource = "workloads"};
    gc_kueue_read_all(kube, &read, 1, &workloads, 1, NULL);
    gc_kueue_reads_free(&workloads, 1);
    int rc = 0;
    if (read.rc && !gc_kueue_not_served(&read)) {
        *err = read.err;
        rc = read.rc;
    }
    for (size_t i = 0; !rc && i < s->count; i++) {
        if (s->rows[i].phase != GC_JOB_QUEUED || s->rows[i].detail)
            continue;
        s->rows[i].detail = gc_xstrdup("no Kueue Workload yet");
        s->rows[i].reason = reason_of(s->queued[i], NULL);
    }
    return rc;
}

/* Services get their clients counted: one more list (every proxy Job of the namespace, or of all
 * of them), read only when the list has a service. A failed read leaves the counts unknown. */
static void add_sps_clients(gc_kube *kube, const gc_list_request *r, list_state *s)
{
    bool any = false;
    for (size_t i = 0; i < s->count; i++) {
        s->rows[i].sps_clients = -1;
        any = any || s->rows[i].pathways == GC_PATHWAYS_SPS;
    }
    if (!any)
        return;
    char *path = gc_kube_path("batch", "v1", r->all_namespaces ? NULL : gc_kube_namespace(kube),
                              "jobs", NULL);
    const char *query[] = {"labelSelector", GC_LABEL_SPS_SERVICE, NULL};
    json_t *jobs = NULL;
    gc_error ignored = {0};
    int rc = gc_kube_get(kube, path, query, &jobs, &ignored);
    free(path);
    for (size_t i = 0; !rc && i < s->count; i++) {
        gc_job_row *row = &s->rows[i];
        if (row->pathways != GC_PATHWAYS_SPS)
            continue;
        /* The row's namespace only: a service of the same name elsewhere is another one. */
        json_t *mine = json_array();
        size_t j;
        json_t *job;
        json_array_foreach(json_object_get(jobs, "items"), j, job)
        {
            if (gc_kube_same(gc_kube_field(job, NULL, "namespace"), row->ns))
                json_array_append(mine, job);
        }
        json_t *list = json_pack("{s:o}", "items", mine);
        gc_sps_usage u = {0};
        gc_sps_clients_of(row->name, list, &u);
        row->sps_clients = (int)u.count;
        row->sps_held = u.held;
        gc_sps_usage_free(&u);
        json_decref(list);
    }
    json_decref(jobs);
}

/* Moves the rows of `from` after those of `to`. */
static void append_rows(list_state *to, list_state *from)
{
    for (size_t i = 0; i < from->count; i++) {
        if (to->count == to->cap) {
            to->cap = to->cap ? to->cap * 2 : 64;
            to->rows = gc_xrealloc(to->rows, to->cap * sizeof(*to->rows));
            to->queued = gc_xrealloc(to->queued, to->cap * sizeof(*to->queued));
        }
        to->rows[to->count] = from->rows[i];
        to->queued[to->count++] = from->queued[i];
    }
    free(from->rows);
    free(from->queued);
    from->count = 0;
}

int gc_job_list_check(const gc_list_request *r, gc_error *err)
{
    bool valid = true;
    if (r->status)
        gc_job_phase_matches(r->status, GC_JOB_QUEUED, &valid);
    if (!valid)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--status %s is not a status; use one of Queued, Admitted, Running, "
                       "Restarting, Succeeded, Failed, Suspended, Terminating or Pending",
                       r->status);
    return 0;
}

int gc_job_list(gc_kube *kube, const gc_list_request *r, gc_job_list_result *out, gc_error *err)
{
    memset(out, 0, sizeof(*out));
    int rc = gc_job_list_check(r, err);
    if (rc)
        return rc;
    list_state s = {.r = r};
    char *path = gc_kube_path("jobset.x-k8s.io", "v1alpha2",
                              r->all_namespaces ? NULL : gc_kube_namespace(kube), "jobsets", NULL);
    json_t *fields = json_loads(ROW_FIELDS, 0, NULL);
    gc_kube_list_options opts = {.label_selector = GC_LABEL_WORKLOAD,
                                 .page_size = PAGE_SIZE,
                                 .fields = fields,
                                 .on_restart = forget_rows};
    char *jobs_path = gc_kube_path(
        "batch", "v1", r->all_namespaces ? NULL : gc_kube_namespace(kube), "jobs", NULL);
    gc_kube_list_options job_opts = {
        .label_selector = INDEXED_JOB_SELECTOR, .page_size = PAGE_SIZE, .on_restart = forget_rows};
    /* The JobSets and the JobSet-less jobs' Jobs in one round trip, each into rows of its own
     * (a list that starts over forgets only its own), the Jobs' rows after the JobSets'. */
    list_state jobs = {.r = r};
    gc_kube_read reads[] = {
        {.path = path, .opts = &opts, .on_item = on_jobset, .ctx = &s},
        {.path = jobs_path, .opts = &job_opts, .on_item = on_indexed_job, .ctx = &jobs},
    };
    gc_kube_read_all(kube, reads, 2);
    json_decref(fields);
    free(path);
    free(jobs_path);
    rc = reads[0].rc;
    if (rc)
        *err = reads[0].err;
    /* A cluster without the JobSet API can still hold JobSet-less jobs. */
    if (rc && err->http_status == 404 && !reads[1].rc && jobs.count)
        rc = 0;
    /* Jobs the user may not list (403) hide no JobSet's row: the JobSets' list stands. */
    bool jobs_hidden =
        reads[1].rc && (reads[1].err.http_status == 403 || reads[1].err.http_status == 404);
    if (!rc && reads[1].rc && !jobs_hidden) {
        *err = reads[1].err;
        rc = reads[1].rc;
    }
    append_rows(&s, &jobs);
    if (!rc && s.count > GC_JOB_LIST_MAX_ROWS)
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "more than %d jobs match: job list stops there to bound its memory; "
                     "narrow the list with --name-contains, --status, or one namespace "
                     "instead of -A",
                     GC_JOB_LIST_MAX_ROWS);
    if (rc && err->http_status == 404)
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "the cluster does not serve JobSets (jobset.x-k8s.io/v1alpha2): install "
                     "JobSet (gcluster deploy does)");
    if (!rc && r->queue_reasons)
        rc = add_queue_reasons(kube, &s, err);
    if (!rc)
        add_sps_clients(kube, r, &s);
    for (size_t i = 0; i < s.count; i++)
        json_decref(s.queued[i]);
    free(s.queued);
    out->rows = s.rows;
    out->count = s.count;
    if (rc)
        gc_job_list_result_free(out);
    return rc;
}

void gc_job_list_result_free(gc_job_list_result *result)
{
    for (size_t i = 0; i < result->count; i++)
        free_row(&result->rows[i]);
    free(result->rows);
    memset(result, 0, sizeof(*result));
}
