/*
 * `job list`: one paged list of JobSets, each reduced to a short row as it arrives (only the
 * fields a row needs are decoded), so memory holds rows, not objects. The status comes from the
 * JobSet alone (its conditions and the ready counts of its Jobs); -o wide also lists Kueue
 * Workloads to show why a queued job waits.
 */
#include "gcluster/buf.h"
#include "gcluster/emit.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"
#include "job/lookup.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

typedef struct job_row {
    char *ns;
    char *name;
    char *uid;
    char *status;
    char *detail;
    char *compute;
    char *pathways;
    char *queue;
    char *created;
    char *completed;
    gc_job_phase phase;
} job_row;

typedef struct list_state {
    const gc_list_request *r;
    job_row *rows;
    size_t count;
    size_t cap;
} list_state;

/* Ready Jobs times their pods: a Job counts as ready when all its pods are. */
static int ready_pods(const json_t *jobset)
{
    int pods = 0;
    size_t i;
    const json_t *rs;
    json_array_foreach(json_object_get(json_object_get(jobset, "status"), "replicatedJobsStatus"),
                       i, rs)
    {
        const json_t *rjob = replicated_job(jobset, json_string_value(json_object_get(rs, "name")));
        const json_t *job_spec = json_object_get(json_object_get(rjob, "template"), "spec");
        json_int_t parallelism = json_integer_value(json_object_get(job_spec, "parallelism"));
        pods += (int)(json_integer_value(json_object_get(rs, "ready")) *
                      (parallelism ? parallelism : 1));
    }
    return pods;
}

static char *dup_or_dash(const char *s)
{
    return gc_xstrdup(s && *s ? s : "-");
}

static void fill_row(job_row *row, const json_t *jobset)
{
    gc_job_facts facts;
    gc_job_facts_from_jobset(jobset, &facts);
    facts.pods_running = ready_pods(jobset);
    gc_job_status st;
    gc_job_status_derive(&facts, &st);

    char compute[96];
    jobset_compute(jobset, compute, sizeof(compute));
    const json_t *metadata = json_object_get(jobset, "metadata");
    row->ns = dup_or_dash(json_string_value(json_object_get(metadata, "namespace")));
    row->name = dup_or_dash(json_string_value(json_object_get(metadata, "name")));
    row->uid = dup_or_dash(json_string_value(json_object_get(metadata, "uid")));
    row->status = gc_xstrdup(st.text);
    row->detail = gc_xstrdup(st.detail);
    row->compute = gc_xstrdup(compute);
    row->pathways = gc_xstrdup(jobset_pathways_mode(jobset));
    row->queue = dup_or_dash(meta_string(jobset, "labels", GC_LABEL_QUEUE));
    row->created = dup_or_dash(json_string_value(json_object_get(metadata, "creationTimestamp")));
    row->completed = dup_or_dash(facts.completed_at);
    row->phase = st.phase;
}

static void free_row(job_row *row)
{
    char **fields[] = {&row->ns,      &row->name,     &row->uid,   &row->status,  &row->detail,
                       &row->compute, &row->pathways, &row->queue, &row->created, &row->completed};
    for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++)
        free(*fields[i]);
}

static int on_jobset(json_t *jobset, void *ctx, gc_error *err)
{
    (void)err;
    list_state *s = ctx;
    const char *n = json_string_value(json_object_get(json_object_get(jobset, "metadata"), "name"));
    if (s->r->name_contains && (!n || !strstr(n, s->r->name_contains)))
        return 0;
    job_row row;
    fill_row(&row, jobset);
    bool valid;
    if (s->r->status && !gc_job_phase_matches(s->r->status, row.phase, &valid)) {
        free_row(&row);
        return 0;
    }
    if (s->count == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->rows = gc_xrealloc(s->rows, s->cap * sizeof(*s->rows));
    }
    s->rows[s->count++] = row;
    return 0;
}

/* For -o wide: why queued jobs wait, from their Kueue Workloads. */
static int on_workload(json_t *workload, void *ctx, gc_error *err)
{
    (void)err;
    list_state *s = ctx;
    const char *uid = meta_string(workload, "labels", "kueue.x-k8s.io/job-uid");
    for (size_t i = 0; uid && i < s->count; i++) {
        job_row *row = &s->rows[i];
        if (row->phase != GC_JOB_QUEUED || strcmp(row->uid, uid) != 0)
            continue;
        gc_job_facts facts = {.suspended = true, .queued_by_kueue = true};
        gc_job_facts_add_workload(&facts, workload);
        gc_job_status st;
        gc_job_status_derive(&facts, &st);
        free(row->detail);
        row->detail = gc_xstrdup(st.detail);
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
    char *path =
        gc_kube_path("kueue.x-k8s.io", "v1beta2",
                     s->r->all_namespaces ? NULL : gc_kube_namespace(kube), "workloads", NULL);
    gc_kube_list_options opts = {.page_size = PAGE_SIZE};
    int rc = gc_kube_list(kube, path, &opts, on_workload, s, NULL, err);
    free(path);
    if (rc && err->http_status == 404) {
        gc_error_clear(err);
        return 0;
    }
    return rc;
}

static void print_table(const list_state *s, bool wide, FILE *out)
{
    const char *headers[] = {"NAMESPACE", "NAME",      "STATUS", "COMPUTE", "PATHWAYS",
                             "AGE",       "COMPLETED", "QUEUE",  "REASON"};
    size_t width[9];
    for (size_t c = 0; c < 9; c++)
        width[c] = strlen(headers[c]);
    char(*ages)[2][16] = gc_xcalloc(s->count ? s->count : 1, sizeof(*ages));
    for (size_t i = 0; i < s->count; i++) {
        const job_row *r = &s->rows[i];
        gc_format_age(r->created, ages[i][0], 16);
        if (strcmp(r->completed, "-") != 0)
            gc_format_age(r->completed, ages[i][1], 16);
        else
            snprintf(ages[i][1], 16, "-");
        const char *cells[] = {r->ns,      r->name,    r->status, r->compute, r->pathways,
                               ages[i][0], ages[i][1], r->queue,  r->detail};
        for (size_t c = 0; c < 9; c++)
            if (strlen(cells[c]) > width[c])
                width[c] = strlen(cells[c]);
    }
    size_t first = s->r->all_namespaces ? 0 : 1;
    size_t last = wide ? 9 : 7;
    for (size_t c = first; c < last; c++)
        fprintf(out, "%-*s%s", (int)width[c], headers[c], c + 1 < last ? "   " : "\n");
    for (size_t i = 0; i < s->count; i++) {
        const job_row *r = &s->rows[i];
        const char *cells[] = {r->ns,      r->name,    r->status, r->compute, r->pathways,
                               ages[i][0], ages[i][1], r->queue,  r->detail};
        for (size_t c = first; c < last; c++)
            fprintf(out, "%-*s%s", c + 1 < last ? (int)width[c] : 0, cells[c],
                    c + 1 < last ? "   " : "\n");
    }
    free(ages);
}

static json_t *row_json(const job_row *r)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "name", r->name, "namespace",
                     r->ns, "status", r->status, "detail", r->detail, "compute", r->compute,
                     "pathways", r->pathways, "queue", r->queue, "created", r->created, "completed",
                     r->completed);
}

static int print_structured(const list_state *s, bool yaml, FILE *out, gc_error *err)
{
    json_t *items = json_array();
    for (size_t i = 0; i < s->count; i++)
        json_array_append_new(items, row_json(&s->rows[i]));
    gc_buf text;
    gc_buf_init(&text);
    int rc = 0;
    if (yaml)
        rc = gc_emit_yaml(items, &text, err);
    else
        gc_emit_json(items, true, &text);
    if (!rc)
        fputs(text.data, out);
    gc_buf_free(&text);
    json_decref(items);
    return rc;
}

static int validate(const gc_list_request *r, gc_error *err)
{
    bool valid = true;
    if (r->status)
        gc_job_phase_matches(r->status, GC_JOB_QUEUED, &valid);
    if (!valid)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--status %s is not a status; use one of Queued, Admitted, Running, "
                       "Restarting, Succeeded, Failed, Suspended, Terminating or Pending",
                       r->status);
    const char *o = r->output ? r->output : "table";
    if (strcmp(o, "table") && strcmp(o, "wide") && strcmp(o, "json") && strcmp(o, "yaml"))
        return gc_fail(err, GC_EXIT_USAGE, "-o %s: use table, wide, json or yaml", o);
    return 0;
}

int gc_job_list(gc_kube *kube, const gc_list_request *r, const gc_output *o, gc_error *err)
{
    int rc = validate(r, err);
    if (rc)
        return rc;
    const char *format = r->output ? r->output : "table";
    list_state s = {.r = r};
    char *path = gc_kube_path("jobset.x-k8s.io", "v1alpha2",
                              r->all_namespaces ? NULL : gc_kube_namespace(kube), "jobsets", NULL);
    json_t *fields = json_loads(ROW_FIELDS, 0, NULL);
    gc_kube_list_options opts = {
        .label_selector = GC_LABEL_WORKLOAD, .page_size = PAGE_SIZE, .fields = fields};
    rc = gc_kube_list(kube, path, &opts, on_jobset, &s, NULL, err);
    json_decref(fields);
    free(path);
    if (rc && err->http_status == 404)
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "the cluster does not serve JobSets (jobset.x-k8s.io/v1alpha2): install "
                     "JobSet (gcluster deploy does)");
    bool wide = !strcmp(format, "wide");
    if (!rc && wide)
        rc = add_queue_reasons(kube, &s, err);
    if (!rc) {
        if (!strcmp(format, "json") || !strcmp(format, "yaml"))
            rc = print_structured(&s, !strcmp(format, "yaml"), o->out, err);
        else if (s.count == 0)
            fprintf(o->log, "No jobs found in %s.\n",
                    r->all_namespaces ? "any namespace" : gc_kube_namespace(kube));
        else
            print_table(&s, wide, o->out);
    }
    for (size_t i = 0; i < s.count; i++)
        free_row(&s.rows[i]);
    free(s.rows);
    return rc;
}
