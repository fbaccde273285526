/*
 * `cluster list | describe | info` and `job inspect` without a job name: tables for people,
 * and one JSON document each (README.md, "JSON output").
 */
#include "cli/render_cluster.h"

#include "cli/render.h"

#include <stdio.h>
#include <string.h>

static const char *or_dash(const char *s)
{
    return s && *s ? s : "-";
}

void cli_render_cluster_list(FILE *out, const gc_cluster_list *list)
{
    if (list->count == 0) {
        cli_line(out, "No GKE clusters in project %s.", list->project);
        return;
    }
    cli_line(out, "%-30s %-24s %-14s %-22s %s", "NAME", "LOCATION", "STATUS", "VERSION", "NODES");
    for (size_t i = 0; i < list->count; i++) {
        const gc_cluster_summary *c = &list->items[i];
        cli_line(out, "%-30s %-24s %-14s %-22s %u", c->name, or_dash(c->location),
                 or_dash(c->status), or_dash(c->version), c->nodes);
    }
}

json_t *cli_cluster_list_json(const gc_cluster_list *list)
{
    json_t *items = json_array();
    for (size_t i = 0; i < list->count; i++) {
        const gc_cluster_summary *c = &list->items[i];
        json_array_append_new(items,
                              json_pack("{s:o, s:o, s:o, s:o, s:I}", "name", cli_json_text(c->name),
                                        "location", cli_json_text(c->location), "status",
                                        cli_json_text(c->status), "version",
                                        cli_json_text(c->version), "nodes", (json_int_t)c->nodes));
    }
    return json_pack("{s:o, s:o}", "project", cli_json_text(list->project), "clusters", items);
}

static void render_versions(FILE *out, const gc_cluster_report *r)
{
    cli_line(out, "JobSet:   %s (API %s)",
             r->jobset_version ? r->jobset_version : "release unknown",
             r->jobset_api ? r->jobset_api : "not installed");
    cli_line(out, "Kueue:    %s (API %s)", r->kueue_version ? r->kueue_version : "release unknown",
             r->kueue_api ? r->kueue_api : "not installed");
    cli_line(out, "Nodes:    %u (%u ready)", r->nodes, r->ready);
}

static void render_pools(FILE *out, const gc_cluster_report *r)
{
    cli_line(out, "\nNode pools:");
    cli_line(out, "  %-24s %-22s %-22s %-9s %-7s %-6s %s", "POOL", "MACHINE", "ACCELERATOR",
             "TOPOLOGY", "NODES", "READY", "CHIPS");
    for (size_t i = 0; i < r->pool_count; i++) {
        const gc_cluster_pool *p = &r->pools[i];
        cli_line(out, "  %-24s %-22s %-22s %-9s %-7u %-6u %lld", p->name, or_dash(p->machine_type),
                 or_dash(p->accelerator), or_dash(p->topology), p->nodes, p->ready, p->chips);
    }
}

/* Queue usage as xpk's `info` shows it: each queue with its workloads, then flavor:resource
 * used/nominal. */
void cli_render_cluster_usage(FILE *out, const gc_cluster_report *r)
{
    if (!r->kueue_api) {
        cli_line(out, "\nKueue is not installed: no queues (gcluster deploy installs it).");
        return;
    }
    cli_line(out, "\nCluster queues:");
    cli_line(out, "  %-24s %-9s %-9s %-9s %s", "QUEUE", "ADMITTED", "RESERVING", "PENDING",
             "FLAVOR:RESOURCE USED/QUOTA");
    for (size_t i = 0; i < r->cluster_queue_count; i++) {
        const gc_cluster_queue *q = &r->cluster_queues[i];
        cli_line(out, "  %-24s %-9lld %-9lld %lld", q->name, q->admitted, q->reserving, q->pending);
        for (size_t j = 0; j < q->quota_count; j++) {
            const gc_cluster_quota *t = &q->quotas[j];
            cli_line(out, "  %-24s %-9s %-9s %-9s %s:%s %s/%s%s%s%s", "", "", "", "", t->flavor,
                     t->resource, t->reserved, or_dash(t->nominal), t->borrowed ? " (" : "",
                     t->borrowed ? t->borrowed : "", t->borrowed ? " borrowed)" : "");
        }
    }
    cli_line(out, "\nLocal queues:");
    cli_line(out, "  %-20s %-24s %-24s %-9s %-9s %s", "NAMESPACE", "QUEUE", "CLUSTER QUEUE",
             "ADMITTED", "RESERVING", "PENDING");
    for (size_t i = 0; i < r->local_queue_count; i++) {
        const gc_local_queue *q = &r->local_queues[i];
        cli_line(out, "  %-20s %-24s %-24s %-9lld %-9lld %lld", q->ns, q->name,
                 or_dash(q->cluster_queue), q->admitted, q->reserving, q->pending);
    }
}

static void render_workloads(FILE *out, const gc_cluster_report *r)
{
    cli_line(out, "\nWorkloads:");
    if (r->workload_count == 0) {
        cli_line(out, "  none");
        return;
    }
    cli_line(out, "  %-20s %-32s %-10s %-24s %s", "NAMESPACE", "JOB", "STATE", "QUEUE",
             "CLUSTER QUEUE");
    for (size_t i = 0; i < r->workload_count; i++) {
        const gc_cluster_workload *w = &r->workloads[i];
        cli_line(out, "  %-20s %-32s %-10s %-24s %s", w->ns, w->job ? w->job : w->name, w->state,
                 or_dash(w->queue), or_dash(w->cluster_queue));
    }
}

void cli_render_cluster(FILE *out, const gc_cluster_report *r, bool workloads)
{
    render_versions(out, r);
    render_pools(out, r);
    cli_render_cluster_usage(out, r);
    if (workloads)
        render_workloads(out, r);
}

static json_t *pools_json(const gc_cluster_report *r)
{
    json_t *pools = json_array();
    for (size_t i = 0; i < r->pool_count; i++) {
        const gc_cluster_pool *p = &r->pools[i];
        json_array_append_new(
            pools,
            json_pack("{s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I}", "name", cli_json_text(p->name),
                      "machineType", cli_json_text(p->machine_type), "accelerator",
                      cli_json_text(p->accelerator), "topology", cli_json_text(p->topology), "zone",
                      cli_json_text(p->zone), "nodes", (json_int_t)p->nodes, "ready",
                      (json_int_t)p->ready, "chips", (json_int_t)p->chips));
    }
    return pools;
}

static json_t *quotas_json(const gc_cluster_queue *q)
{
    json_t *quotas = json_array();
    for (size_t j = 0; j < q->quota_count; j++) {
        const gc_cluster_quota *t = &q->quotas[j];
        json_array_append_new(
            quotas,
            json_pack("{s:o, s:o, s:o, s:o, s:o}", "flavor", cli_json_text(t->flavor), "resource",
                      cli_json_text(t->resource), "nominal", cli_json_text(t->nominal), "reserved",
                      cli_json_text(t->reserved), "borrowed", cli_json_text(t->borrowed)));
    }
    return quotas;
}

static json_t *queues_json(const gc_cluster_report *r)
{
    json_t *cqs = json_array();
    for (size_t i = 0; i < r->cluster_queue_count; i++) {
        const gc_cluster_queue *q = &r->cluster_queues[i];
        json_array_append_new(
            cqs, json_pack("{s:o, s:o, s:I, s:I, s:I, s:o}", "name", cli_json_text(q->name),
                           "cohort", cli_json_text(q->cohort), "admitted", (json_int_t)q->admitted,
                           "reserving", (json_int_t)q->reserving, "pending", (json_int_t)q->pending,
                           "quotas", quotas_json(q)));
    }
    return cqs;
}

static json_t *local_queues_json(const gc_cluster_report *r)
{
    json_t *lqs = json_array();
    for (size_t i = 0; i < r->local_queue_count; i++) {
        const gc_local_queue *q = &r->local_queues[i];
        json_array_append_new(lqs, json_pack("{s:o, s:o, s:o, s:I, s:I, s:I}", "namespace",
                                             cli_json_text(q->ns), "name", cli_json_text(q->name),
                                             "clusterQueue", cli_json_text(q->cluster_queue),
                                             "admitted", (json_int_t)q->admitted, "reserving",
                                             (json_int_t)q->reserving, "pending",
                                             (json_int_t)q->pending));
    }
    return lqs;
}

static json_t *workloads_json(const gc_cluster_report *r)
{
    json_t *wls = json_array();
    for (size_t i = 0; i < r->workload_count; i++) {
        const gc_cluster_workload *w = &r->workloads[i];
        json_array_append_new(
            wls, json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "namespace", cli_json_text(w->ns),
                           "name", cli_json_text(w->name), "job", cli_json_text(w->job), "state",
                           cli_json_text(w->state), "queue", cli_json_text(w->queue),
                           "clusterQueue", cli_json_text(w->cluster_queue)));
    }
    return wls;
}

json_t *cli_cluster_json(const gc_cluster_report *r, bool pools, bool workloads)
{
    json_t *doc =
        json_pack("{s:{s:o, s:o}, s:{s:o, s:o}}", "jobset", "version",
                  cli_json_text(r->jobset_version), "api", cli_json_text(r->jobset_api), "kueue",
                  "version", cli_json_text(r->kueue_version), "api", cli_json_text(r->kueue_api));
    if (pools) {
        json_object_set_new(
            doc, "nodes",
            json_pack("{s:I, s:I}", "total", (json_int_t)r->nodes, "ready", (json_int_t)r->ready));
        json_object_set_new(doc, "nodePools", pools_json(r));
    }
    json_object_set_new(doc, "clusterQueues", queues_json(r));
    json_object_set_new(doc, "localQueues", local_queues_json(r));
    if (workloads)
        json_object_set_new(doc, "workloads", workloads_json(r));
    return doc;
}
