/*
 * `job inspect` as text (one screen: overview with the diagnosis, Kueue, replicated jobs, the
 * slices summed up with the pods of those with problems, warnings; --pods: every pod) and as a
 * JSON document (always every pod).
 */
#include "cli/render.h"

#include "gcluster/buf.h"
#include "gcluster/diagnose.h"
#include "gcluster/emit.h"
#include "gcluster/sys.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

/* Lines of the summary; with --manifest they become YAML comments above the manifest. */
typedef struct printer {
    FILE *out;
    const char *prefix;
} printer;

static void line(const printer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void line(const printer *p, const char *fmt, ...)
{
    gc_buf text;
    gc_buf_init(&text);
    gc_buf_puts(&text, p->prefix);
    va_list ap;
    va_start(ap, fmt);
    gc_buf_vprintf(&text, fmt, ap);
    va_end(ap);
    /* A blank line of the YAML comment block is "#", without a trailing blank. */
    while (text.len && text.data[text.len - 1] == ' ')
        text.data[--text.len] = '\0';
    cli_put_line(p->out, text.data, text.len);
    gc_buf_free(&text);
}

static const char * or (const char *s, const char *fallback)
{
    return s ? s : fallback;
}

static void print_overview(const printer *p, const gc_inspect_report *r, long long now)
{
    char age[16];
    gc_clock_format_age(r->created, now, age, sizeof(age));
    line(p, "Name:       %s", or (r->name, "?"));
    line(p, "Namespace:  %s", or (r->ns, "?"));
    line(p, "Status:     %s", r->status.text);
    if (r->status.detail[0])
        line(p, "            %s", r->status.detail);
    if (r->diagnosis) {
        line(p, "Cause:      %s", r->diagnosis->cause);
        line(p, "Fix:        %s", r->diagnosis->fix[0] ? r->diagnosis->fix : "-");
    }
    line(p, "Compute:    %s%s%s", or (r->compute, "-"), r->topology ? ", topology " : "",
         or (r->topology, ""));
    line(p, "Pathways:   %s",
         r->pathways == GC_PATHWAYS_NONE ? "-" : gc_pathways_mode_name(r->pathways));
    if (r->indexed_job)
        line(p, "Runs as:    a batch/v1 Indexed Job and a headless Service (no JobSet)");
    if (r->sps) {
        const gc_sps_usage *u = r->sps;
        line(p, "Service:    resource manager %s; %d slice%s of %s, %d held", u->address, u->slices,
             u->slices == 1 ? "" : "s", u->instance_type, u->held);
        if (!u->count)
            line(p, "Clients:    none");
        for (size_t i = 0; i < u->count; i++)
            line(p, "%s%s (%s): %d slice%s, %s since %s",
                 i ? "            " : "Clients:    ", u->clients[i].job, u->clients[i].user,
                 u->clients[i].slices, u->clients[i].slices == 1 ? "" : "s",
                 u->clients[i].waiting ? "waiting" : "holding", u->clients[i].created);
    }
    line(p, "Queue:      %s", or (r->queue, "- (not queued by Kueue)"));
    line(p, "Created:    %s (%s ago)", or (r->created, "?"), age);
    if (r->finished)
        line(p, "Finished:   %s", r->finished);
    line(p, "Restarts:   %ld of at most %ld", r->restarts, r->max_restarts);
}

static void print_kueue(const printer *p, const gc_inspect_report *r)
{
    const gc_kueue_state *k = &r->kueue;
    if (!k->workload) {
        if (r->queue)
            line(p, "Kueue:      no Workload yet (is Kueue running and managing JobSets?)");
        return;
    }
    line(p, "%s", "");
    line(p, "Kueue workload %s:", k->workload);
    if (!k->admitted) {
        line(p, "  Not admitted: %s%s%s", or (k->reason, "pending"), k->message ? ": " : "",
             or (k->message, ""));
        return;
    }
    line(p, "  Admitted to ClusterQueue %s; flavors per pod set:", or (k->cluster_queue, "?"));
    for (size_t i = 0; i < k->pod_set_count; i++) {
        const gc_pod_set_admission *ps = &k->pod_sets[i];
        gc_buf b;
        gc_buf_init(&b);
        for (size_t j = 0; j < ps->flavor_count; j++)
            gc_buf_printf(&b, "%s%s=%s", j ? ", " : "", ps->flavors[j].resource,
                          or (ps->flavors[j].flavor, "?"));
        line(p, "  %-14s %s", or (ps->name, "?"), b.len ? b.data : "");
        gc_buf_free(&b);
    }
}

static void print_replicated_jobs(const printer *p, const gc_inspect_report *r)
{
    line(p, "%s", "");
    line(p, "Replicated jobs:");
    line(p, "  %-16s %-9s %-6s %-7s %-10s %s", "NAME", "REPLICAS", "READY", "ACTIVE", "SUCCEEDED",
         "FAILED");
    for (size_t i = 0; i < r->replicated_job_count; i++) {
        const gc_replicated_job_counts *j = &r->replicated_jobs[i];
        line(p, "  %-16s %-9ld %-6ld %-7ld %-10ld %ld", or (j->name, "?"), j->replicas, j->ready,
             j->active, j->succeeded, j->failed);
    }
}

/* A job of 64 slices with every pod stuck would otherwise print a thousand lines: the first
 * slices with problems are shown, and --pods shows the rest. */
#define MAX_PROBLEM_SLICES 8
#define MAX_PODS_PER_SLICE 8

static bool running_well(const gc_job_pod *pod)
{
    return pod->phase && !strcmp(pod->phase, "Running") && !pod->reason;
}

static const char *plural(long n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

static void print_slice_counts(const printer *p, const gc_slice_counts *c)
{
    gc_buf b;
    gc_buf_init(&b);
    gc_buf_printf(&b, "%ld %s of %ld %s: %ld fully running", c->slices,
                  plural(c->slices, "slice", "slices"), c->hosts, plural(c->hosts, "pod", "pods"),
                  c->running);
    if (c->succeeded)
        gc_buf_printf(&b, ", %ld finished", c->succeeded);
    if (c->problem_count)
        gc_buf_printf(&b, ", %zu with problems", c->problem_count);
    if (c->without_pods)
        gc_buf_printf(&b, ", %ld without pods", c->without_pods);
    line(p, "  %-16s %s", or (c->role, "?"), b.data);
    gc_buf_free(&b);
}

static void print_pod_row(const printer *p, const gc_job_pod *pod)
{
    line(p, "    %-10s %-22s %-26s %s", or (pod->phase, "?"), or (pod->reason, "-"),
         or (pod->node, "(unscheduled)"), or (pod->name, "?"));
}

/* The slice's pods that are not running well, and how many of its hosts are. */
static void print_problem_slice(const printer *p, const gc_inspect_report *r,
                                const gc_slice_counts *c, long slice)
{
    long running = 0, shown = 0, more = 0;
    for (size_t i = 0; i < r->pod_count; i++) {
        const gc_job_pod *pod = &r->pods[i];
        if (pod->slice != slice || !pod->role || !c->role || strcmp(pod->role, c->role))
            continue;
        running += running_well(pod);
    }
    line(p, "  %s slice %ld: %ld of %ld %s running", c->role, slice, running, c->hosts,
         plural(c->hosts, "pod", "pods"));
    for (size_t i = 0; i < r->pod_count; i++) {
        const gc_job_pod *pod = &r->pods[i];
        if (pod->slice != slice || !pod->role || strcmp(pod->role, c->role) || running_well(pod))
            continue;
        if (shown < MAX_PODS_PER_SLICE) {
            print_pod_row(p, pod);
            shown++;
        } else {
            more++;
        }
    }
    if (more)
        line(p, "    ... and %ld more", more);
}

static void print_slices(const printer *p, const gc_inspect_report *r)
{
    line(p, "%s", "");
    line(p, "Slices:");
    for (size_t i = 0; i < r->slice_count; i++)
        print_slice_counts(p, &r->slices[i]);
    for (size_t i = 0; i < r->pod_count; i++) {
        const gc_job_pod *pod = &r->pods[i];
        if (pod->role && !strcmp(pod->role, GC_PATHWAYS_HEAD))
            line(p, "Head pod:   %s (%s%s%s, on %s)", or (pod->name, "?"), or (pod->phase, "?"),
                 pod->reason ? ": " : "", or (pod->reason, ""), or (pod->node, "no node yet"));
    }
    size_t problems = 0, shown = 0;
    for (size_t i = 0; i < r->slice_count; i++)
        problems += r->slices[i].problem_count;
    if (!problems)
        return;
    line(p, "%s", "");
    line(p, "Slices with problems (the pods not running: PHASE REASON NODE POD):");
    for (size_t i = 0; i < r->slice_count && shown < MAX_PROBLEM_SLICES; i++) {
        const gc_slice_counts *c = &r->slices[i];
        for (size_t j = 0; j < c->problem_count && shown < MAX_PROBLEM_SLICES; j++, shown++)
            print_problem_slice(p, r, c, c->problems[j]);
    }
    if (problems > shown)
        line(p, "  ... and %zu more slices with problems (--pods lists every pod)",
             problems - shown);
}

static void print_pods(const printer *p, const gc_inspect_report *r)
{
    line(p, "%s", "");
    if (!r->pod_count) {
        line(p, "Pods:       none yet");
        return;
    }
    line(p, "Pods:");
    line(p, "  %-14s %-6s %-5s %-10s %-9s %-26s %-40s %s", "ROLE", "SLICE", "HOST", "PHASE",
         "RESTARTS", "NODE", "POD", "REASON");
    for (size_t i = 0; i < r->pod_count; i++) {
        const gc_job_pod *pod = &r->pods[i];
        char slice[24] = "-", host[24] = "-";
        if (pod->slice >= 0)
            snprintf(slice, sizeof(slice), "%ld", pod->slice);
        if (pod->host >= 0)
            snprintf(host, sizeof(host), "%ld", pod->host);
        line(p, "  %-14s %-6s %-5s %-10s %-9ld %-26s %-40s %s", or (pod->role, "?"), slice, host,
             or (pod->phase, "?"), pod->restarts, or (pod->node, "(unscheduled)"),
             or (pod->name, "?"), or (pod->reason, "-"));
    }
}

/* Each group once, with how often and the latest message cut to one line; the ones a later
 * success superseded only counted. */
static void print_warnings(const printer *p, const gc_inspect_report *r, long long now)
{
    size_t resolved = r->resolved_warning_count;
    if (!r->warning_count) {
        if (resolved) {
            line(p, "%s", "");
            line(p,
                 "Recent warnings: none unresolved (%zu since resolved: retries that later "
                 "succeeded)",
                 resolved);
        }
        return;
    }
    line(p, "%s", "");
    line(p, "Recent warnings:");
    for (size_t i = 0; i < r->warning_count; i++) {
        const gc_job_warning *w = &r->warnings[i];
        char age[16];
        gc_clock_format_age(w->last_seen, now, age, sizeof(age));
        line(p, "  %-5s %s/%s: %s (x%ld): %.160s%s", age, w->kind, w->object, w->reason, w->count,
             w->message, strlen(w->message) > 160 ? "..." : "");
    }
    if (resolved)
        line(p, "  (and %zu since resolved: retries that later succeeded)", resolved);
}

int cli_render_inspect_text(FILE *out, const gc_inspect_report *r, bool all_pods, gc_error *err)
{
    printer p = {.out = out, .prefix = r->manifest ? "# " : ""};
    long long now = (long long)time(NULL);
    print_overview(&p, r, now);
    print_kueue(&p, r);
    print_replicated_jobs(&p, r);
    print_slices(&p, r);
    if (all_pods)
        print_pods(&p, r);
    print_warnings(&p, r, now);
    if (!r->manifest)
        return 0;
    gc_buf yaml;
    gc_buf_init(&yaml);
    int rc = gc_emit_yaml(r->manifest, &yaml, err);
    if (!rc)
        fputs(yaml.data, out);
    gc_buf_free(&yaml);
    return rc;
}

static json_t *kueue_json(const gc_kueue_state *k)
{
    if (!k->workload)
        return json_null();
    json_t *pod_sets = json_array();
    for (size_t i = 0; i < k->pod_set_count; i++) {
        json_t *flavors = json_object();
        for (size_t j = 0; j < k->pod_sets[i].flavor_count; j++)
            json_object_set_new(flavors, k->pod_sets[i].flavors[j].resource,
                                cli_json_text(k->pod_sets[i].flavors[j].flavor));
        json_array_append_new(pod_sets,
                              json_pack("{s:o, s:o}", "name", cli_json_text(k->pod_sets[i].name),
                                        "flavors", flavors));
    }
    return json_pack("{s:s, s:b, s:o, s:o, s:o, s:o}", "workload", k->workload, "admitted",
                     k->admitted, "cluster_queue", cli_json_text(k->cluster_queue), "pod_sets",
                     pod_sets, "reason", cli_json_text(k->reason), "message",
                     cli_json_text(k->message));
}

static json_t *replicated_jobs_json(const gc_inspect_report *r)
{
    json_t *jobs = json_array();
    for (size_t i = 0; i < r->replicated_job_count; i++) {
        const gc_replicated_job_counts *j = &r->replicated_jobs[i];
        json_array_append_new(
            jobs, json_pack("{s:o, s:I, s:I, s:I, s:I, s:I}", "name", cli_json_text(j->name),
                            "replicas", (json_int_t)j->replicas, "ready", (json_int_t)j->ready,
                            "active", (json_int_t)j->active, "succeeded", (json_int_t)j->succeeded,
                            "failed", (json_int_t)j->failed));
    }
    return jobs;
}

static json_t *index_or_null(long index)
{
    return index >= 0 ? json_integer(index) : json_null();
}

static json_t *pods_json(const gc_inspect_report *r)
{
    json_t *pods = json_array();
    for (size_t i = 0; i < r->pod_count; i++) {
        const gc_job_pod *p = &r->pods[i];
        json_array_append_new(
            pods, json_pack("{s:o, s:o, s:o, s:o, s:o, s:I, s:o, s:o}", "name",
                            cli_json_text(p->name), "role", cli_json_text(p->role), "slice",
                            index_or_null(p->slice), "host", index_or_null(p->host), "phase",
                            cli_json_text(p->phase), "restarts", (json_int_t)p->restarts, "node",
                            cli_json_text(p->node), "reason", cli_json_text(p->reason)));
    }
    return pods;
}

static json_t *slices_json(const gc_inspect_report *r)
{
    json_t *roles = json_array();
    for (size_t i = 0; i < r->slice_count; i++) {
        const gc_slice_counts *c = &r->slices[i];
        json_t *problems = json_array();
        for (size_t j = 0; j < c->problem_count; j++)
            json_array_append_new(problems, json_integer(c->problems[j]));
        json_array_append_new(
            roles,
            json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:o}", "role", cli_json_text(c->role),
                      "slices", (json_int_t)c->slices, "hosts", (json_int_t)c->hosts, "running",
                      (json_int_t)c->running, "succeeded", (json_int_t)c->succeeded, "without_pods",
                      (json_int_t)c->without_pods, "with_problems", problems));
    }
    return roles;
}

static json_t *warnings_json(const gc_inspect_report *r)
{
    json_t *warnings = json_array();
    for (size_t i = 0; i < r->warning_count; i++) {
        const gc_job_warning *w = &r->warnings[i];
        json_array_append_new(
            warnings, json_pack("{s:s, s:s, s:s, s:I, s:o, s:s}", "kind", w->kind, "object",
                                w->object, "reason", w->reason, "count", (json_int_t)w->count,
                                "last_seen", cli_json_text(w->last_seen), "message", w->message));
    }
    return warnings;
}

/* A Shared Pathways Service: where its resource manager is and who is attached. */
static json_t *sps_json(const gc_sps_usage *u)
{
    json_t *clients = json_array();
    for (size_t i = 0; i < u->count; i++) {
        const gc_sps_client *c = &u->clients[i];
        json_array_append_new(clients,
                              json_pack("{s:o, s:o, s:i, s:s, s:o}", "job", cli_json_text(c->job),
                                        "user", cli_json_text(c->user), "slices", c->slices,
                                        "state", c->waiting ? "waiting" : "holding", "created",
                                        cli_json_text(c->created)));
    }
    return json_pack("{s:o, s:i, s:o, s:i, s:o}", "resource_manager", cli_json_text(u->address),
                     "slices", u->slices, "instance_type", cli_json_text(u->instance_type), "held",
                     u->held, "clients", clients);
}

json_t *cli_inspect_json(const gc_inspect_report *r)
{
    json_t *doc =
        json_pack("{s:o, s:o, s:s, s:s, s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:I, s:I}", "name",
                  cli_json_text(r->name), "namespace", cli_json_text(r->ns), "phase",
                  gc_job_phase_name(r->status.phase), "status", r->status.text, "detail",
                  cli_json_text(r->status.detail[0] ? r->status.detail : NULL), "compute",
                  cli_json_text(r->compute), "topology", cli_json_text(r->topology), "pathways",
                  gc_pathways_mode_name(r->pathways), "queue", cli_json_text(r->queue), "created",
                  cli_json_text(r->created), "finished", cli_json_text(r->finished), "restarts",
                  (json_int_t)r->restarts, "max_restarts", (json_int_t)r->max_restarts);
    if (r->indexed_job)
        json_object_set_new(doc, "jobset_less", json_true());
    json_object_set_new(doc, "diagnosis", cli_why_json(r->diagnosis));
    json_object_set_new(doc, "kueue", kueue_json(&r->kueue));
    json_object_set_new(doc, "replicated_jobs", replicated_jobs_json(r));
    json_object_set_new(doc, "pods", pods_json(r));
    json_object_set_new(doc, "warnings", warnings_json(r));
    json_object_set_new(doc, "resolved_warnings",
                        json_integer((json_int_t)r->resolved_warning_count));
    json_object_set_new(doc, "slices", slices_json(r));
    if (r->sps)
        json_object_set_new(doc, "sps", sps_json(r->sps));
    if (r->manifest)
        json_object_set(doc, "manifest", r->manifest);
    return doc;
}
