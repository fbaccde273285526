/*
 * `deploy`'s report as text and as the JSON document README.md describes.
 */
#include "cli/cli.h"
#include "cli/render.h"

#include <string.h>

static const char *or_unknown(const char *s)
{
    return s ? s : "?";
}

static const char *outcome_name(gc_apply_outcome outcome)
{
    static const char *const names[] = {"created", "configured", "unchanged", "not checked"};
    return names[outcome];
}

static void render_summary(FILE *out, FILE *log, const gc_deploy_report *r)
{
    cli_text(out, "Blueprint %s: cluster %s (project %s, location %s)", or_unknown(r->blueprint),
             or_unknown(r->cluster), or_unknown(r->project), or_unknown(r->location));
    if (r->pathways)
        cli_text(out, ", Pathways enabled (head pool %s)", r->head_pool);
    fprintf(out, "\n");
    for (size_t i = 0; i < r->unhandled_count; i++)
        cli_line(out, "  not handled by gcluster deploy: module %s (%s)",
                 or_unknown(r->unhandled[i].id), or_unknown(r->unhandled[i].source));
    fflush(out);
    (void)log;
}

static const char *install_state(gc_install_state state, bool plan)
{
    switch (state) {
    case GC_INSTALL_NOT_CHECKED:
        return "installed if the cluster lacks it";
    case GC_INSTALL_PRESENT:
        return "present";
    case GC_INSTALL_OLDER:
        return "older release present, left as it is (--upgrade replaces it)";
    case GC_INSTALL_MISSING:
        return plan ? "would be installed" : "missing";
    case GC_INSTALL_UNVERIFIABLE:
        return "missing, not installed (no digest of this release is kept)";
    case GC_INSTALL_INSTALLED:
        return "installed";
    case GC_INSTALL_UPGRADED:
        return "upgraded";
    }
    return "?";
}

static const char *install_key(gc_install_state state)
{
    static const char *const names[] = {"not_checked",  "present",   "older",   "missing",
                                        "unverifiable", "installed", "upgraded"};
    return names[state];
}

/* What the blueprint installs on the cluster, each with where it comes from unless present. */
static void render_installs(FILE *out, const gc_deploy_report *r)
{
    if (!r->install_count)
        return;
    fprintf(out, "Installs (checked against the SHA-256 digest gcluster keeps):\n");
    for (size_t i = 0; i < r->install_count; i++) {
        const gc_deploy_install *in = &r->installs[i];
        cli_text(out, "  %s %s: %s", in->name, in->version, install_state(in->state, r->plan));
        if (in->installed && in->state != GC_INSTALL_UPGRADED)
            cli_text(out, " (running %s)", in->installed);
        if (in->objects)
            fprintf(out, ", %zu objects applied", in->objects);
        fprintf(out, "\n");
        if (in->state != GC_INSTALL_PRESENT && in->state != GC_INSTALL_OLDER &&
            in->state != GC_INSTALL_UNVERIFIABLE)
            cli_line(out, "      from %s", in->source);
    }
}

static void render_pools(FILE *out, const gc_deploy_report *r)
{
    fprintf(out, "Node pools:\n");
    for (size_t i = 0; i < r->pool_count; i++) {
        const gc_deploy_pool *p = &r->pools[i];
        char state[48] = "missing";
        if (p->nodes >= 0)
            snprintf(state, sizeof(state), "present, %ld node%s", p->nodes,
                     p->nodes == 1 ? "" : "s");
        cli_line(out, "  %-20s %-20s %-34s %s", p->name, p->machine_type, p->size, state);
    }
}

static void render_objects(FILE *out, const gc_deploy_report *r)
{
    cli_line(out, "Kueue configuration (%s)%s:", r->kueue_api, r->plan ? ", plan only" : "");
    for (size_t i = 0; i < r->object_count; i++) {
        const gc_deploy_object *o = &r->objects[i];
        bool would = r->plan && o->outcome != GC_APPLY_UNCHANGED;
        if (o->outcome == GC_APPLY_NOT_CHECKED)
            cli_line(out, "  %s would be applied", o->label);
        else
            cli_line(out, "  %s %s%s", o->label, would ? "would be " : "",
                     outcome_name(o->outcome));
        if (o->queue_checked && o->queue_active)
            cli_line(out, "  %s is Active", o->label);
    }
}

/* What a command printed, indented under it, escaped: gcloud's text is outside text, and an
 * escape sequence in it must not reach the terminal. */
static void render_output(FILE *out, const char *output)
{
    for (const char *line = output; line && *line;) {
        size_t len = strcspn(line, "\n");
        cli_line(out, "    %.*s", (int)len, line);
        line += len + (line[len] == '\n');
    }
}

static void render_missing_pools(FILE *out, const gc_deploy_report *r)
{
    size_t count = 0;
    for (size_t i = 0; i < r->pool_count; i++)
        count += r->pools[i].nodes < 0;
    if (!count)
        return;
    /* Nodes say which pools run, not which exist: cpu-np scales from zero. */
    fprintf(out,
            "\n%s node pool%s no nodes (a pool that scales from zero has none until a job "
            "needs it); if missing, create with:\n",
            count == 1 ? "One" : "Some", count == 1 ? " has" : "s have");
    for (size_t i = 0; i < r->pool_count; i++) {
        if (r->pools[i].nodes >= 0)
            continue;
        cli_line(out, "  %s", r->pools[i].create_command);
    }
    fprintf(out, "(or run gcluster deploy again with --auto-approve)\n");
}

static const char *state_name(gc_cloud_state state, bool applied)
{
    switch (state) {
    case GC_CLOUD_PRESENT:
        return "present";
    case GC_CLOUD_MISSING:
        return applied ? "missing" : "would be created";
    case GC_CLOUD_CREATED:
        return "created";
    case GC_CLOUD_FAILED:
        return "failed";
    case GC_CLOUD_DIFFERS:
        return "present with other settings";
    case GC_CLOUD_UPDATED:
        return "updated";
    case GC_CLOUD_NOT_CHECKED:
        break;
    }
    return "not checked";
}

static const char *state_key(gc_cloud_state state)
{
    static const char *const names[] = {"not_checked", "present", "missing", "created",
                                        "failed",      "differs", "updated"};
    _Static_assert(sizeof(names) / sizeof(*names) == GC_CLOUD_UPDATED + 1, "every state");
    return names[state];
}

/* The Google Cloud steps in order, each with its state and, unless present, its command. */
static void render_cloud(FILE *out, const gc_cloud_plan *plan, const gc_cloud_report *cloud)
{
    fprintf(out, "Google Cloud (in order%s):\n",
            cloud->checked ? "" : "; not checked, gcloud is not on PATH");
    for (size_t i = 0; i < plan->count && i < cloud->count; i++) {
        const gc_cloud_step *s = &plan->steps[i];
        const gc_cloud_outcome *o = &cloud->outcomes[i];
        cli_line(out, "  %2zu. %s %s: %s", i + 1, gc_cloud_step_kind_name(s->kind), s->name,
                 state_name(o->state, cloud->applied));
        /* what would be run: a drift gcloud cannot repair has no command */
        if (o->state != GC_CLOUD_PRESENT && (o->state != GC_CLOUD_DIFFERS || s->update))
            cli_line(out, "      %s", o->command);
        if (o->state == GC_CLOUD_NOT_CHECKED && o->detail && i == 0)
            cli_line(out, "      (%s)", o->detail);
        if (o->state == GC_CLOUD_DIFFERS && o->detail)
            cli_line(out, "      (%s)", o->detail);
        if (o->state == GC_CLOUD_CREATED || o->state == GC_CLOUD_FAILED)
            render_output(out, o->detail);
    }
    for (size_t i = 0; i < plan->notes.count; i++)
        cli_line(out, "  not planned: %s", plan->notes.items[i]);
    size_t missing = 0;
    for (size_t i = 0; i < cloud->count; i++)
        missing += cloud->outcomes[i].state == GC_CLOUD_MISSING;
    if (missing && !cloud->applied)
        fprintf(out, "(gcluster deploy --auto-approve runs these in this order; a rerun skips "
                     "what exists)\n");
}

const char *cli_stage_word(gc_deploy_stage_state state, const char *done_word)
{
    switch (state) {
    case GC_STAGE_NOT_RUN:
        return "not run";
    case GC_STAGE_DONE:
        return done_word;
    case GC_STAGE_SKIPPED:
        return "skipped";
    case GC_STAGE_FAILED:
        return "failed";
    }
    return "?";
}

const char *cli_stage_key(gc_deploy_stage_state state)
{
    static const char *const names[] = {"not_run", "done", "skipped", "failed"};
    _Static_assert(sizeof(names) / sizeof(*names) == GC_STAGE_FAILED + 1, "every state");
    return names[state];
}

/* The order the library decided, each stage with what became of it. */
static void render_stages(FILE *out, const gc_deploy_result *res, const gc_deploy_report *r)
{
    bool plan = res->plan;
    fprintf(out, "Stages (in the order deploy runs them):\n");
    for (size_t i = 0; i < res->stage_count; i++) {
        const gc_deploy_stage *s = &res->stages[i];
        cli_line(out, "  %zu. %s: %s", i + 1, s->description,
                 cli_stage_word(s->state, plan ? "looked, changed nothing" : "done"));
        /* why the cluster was not read has a line of its own below */
        if (s->detail && gc_kube_same(s->detail, r->not_connected))
            cli_line(out, "     (the cluster was not read: why is said below)");
        else if (s->detail)
            cli_line(out, "     (%s)", s->detail);
    }
}

void cli_render_deploy_text(FILE *out, FILE *log, const gc_deploy_result *res)
{
    const gc_deploy_report *r = &res->report;
    if (!res->stage_count)
        return; /* bad input: the error says why */
    render_stages(out, res, r);
    if (res->cloud.count && res->cloud_report.count)
        render_cloud(out, &res->cloud, &res->cloud_report);
    if (!r->started)
        return;
    render_summary(out, log, r);
    if (r->not_connected)
        cli_line(out, "Kubernetes: the cluster was not read (%s)", r->not_connected);
    render_installs(out, r);
    if (r->kueue_version || r->jobset_version)
        cli_line(out, "Installed: Kueue %s, JobSet %s", or_unknown(r->kueue_version),
                 or_unknown(r->jobset_version));
    if (r->pools_listed)
        render_pools(out, r);
    if (r->kueue_api)
        render_objects(out, r);
    if (r->pools_listed)
        render_missing_pools(out, r);
}

static json_t *unhandled_json(const gc_deploy_report *r)
{
    json_t *modules = json_array();
    for (size_t i = 0; i < r->unhandled_count; i++)
        json_array_append_new(modules,
                              json_pack("{s:o, s:o}", "id", cli_json_text(r->unhandled[i].id),
                                        "source", cli_json_text(r->unhandled[i].source)));
    return modules;
}

static json_t *installs_json(const gc_deploy_report *r)
{
    json_t *installs = json_array();
    for (size_t i = 0; i < r->install_count; i++) {
        const gc_deploy_install *in = &r->installs[i];
        json_array_append_new(installs, json_pack("{s:s, s:s, s:o, s:s, s:s, s:I}", "name",
                                                  in->name, "version", in->version, "installed",
                                                  cli_json_text(in->installed), "source",
                                                  in->source, "state", install_key(in->state),
                                                  "objects", (json_int_t)in->objects));
    }
    return installs;
}

static json_t *pools_json(const gc_deploy_report *r)
{
    if (!r->pools_listed)
        return json_null();
    json_t *pools = json_array();
    for (size_t i = 0; i < r->pool_count; i++) {
        const gc_deploy_pool *p = &r->pools[i];
        json_array_append_new(pools, json_pack("{s:s, s:s, s:s, s:b, s:o, s:o}", "name", p->name,
                                               "machine_type", p->machine_type, "size", p->size,
                                               "present", p->nodes >= 0, "nodes",
                                               p->nodes >= 0 ? json_integer(p->nodes) : json_null(),
                                               "create_command", cli_json_text(p->create_command)));
    }
    return pools;
}

static json_t *queue_state_json(const gc_deploy_object *o)
{
    if (!o->queue_checked)
        return json_null();
    return json_pack("{s:b, s:o, s:o}", "active", o->queue_active, "reason",
                     cli_json_text(o->queue_reason), "message", cli_json_text(o->queue_message));
}

static json_t *objects_json(const gc_deploy_report *r)
{
    json_t *objects = json_array();
    for (size_t i = 0; i < r->object_count; i++) {
        const gc_deploy_object *o = &r->objects[i];
        json_array_append_new(
            objects,
            json_pack("{s:o, s:o, s:o, s:o, s:o, s:s, s:o}", "api_version",
                      cli_json_text(o->api_version), "kind", cli_json_text(o->kind), "name",
                      cli_json_text(o->name), "namespace", cli_json_text(o->ns), "label",
                      cli_json_text(o->label), "outcome", outcome_name(o->outcome),
                      "cluster_queue_state", queue_state_json(o)));
    }
    return objects;
}

static json_t *cloud_json(const gc_cloud_plan *plan, const gc_cloud_report *cloud)
{
    if (!plan || !cloud)
        return json_null();
    json_t *steps = json_array();
    for (size_t i = 0; i < plan->count && i < cloud->count; i++) {
        const gc_cloud_step *s = &plan->steps[i];
        const gc_cloud_outcome *o = &cloud->outcomes[i];
        json_array_append_new(steps,
                              json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "kind",
                                        gc_cloud_step_kind_name(s->kind), "name", s->name, "module",
                                        s->module_id, "state", state_key(o->state), "command",
                                        o->command, "output", cli_json_text(o->detail)));
    }
    return json_pack("{s:b, s:b, s:o, s:o}", "checked", cloud->checked, "applied", cloud->applied,
                     "steps", steps, "not_planned", cli_json_strings(&plan->notes));
}

static json_t *stages_json(const gc_deploy_result *res)
{
    json_t *stages = json_array();
    for (size_t i = 0; i < res->stage_count; i++) {
        const gc_deploy_stage *s = &res->stages[i];
        json_array_append_new(stages, json_pack("{s:s, s:s, s:s, s:o}", "kind",
                                                gc_deploy_stage_kind_name(s->kind), "description",
                                                s->description, "state", cli_stage_key(s->state),
                                                "detail", cli_json_text(s->detail)));
    }
    return stages;
}

json_t *cli_deploy_json(const gc_deploy_result *res)
{
    const gc_deploy_report *r = &res->report;
    const gc_cloud_plan *plan = &res->cloud;
    const gc_cloud_report *cloud = res->stage_count ? &res->cloud_report : NULL;
    json_t *doc = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:b, s:o, s:o, s:o, s:b, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
        "stages", stages_json(res), "blueprint", cli_json_text(r->blueprint), "cluster",
        cli_json_text(r->cluster), "project", cli_json_text(r->project), "location",
        cli_json_text(r->location), "pathways", r->pathways, "head_pool",
        cli_json_text(r->head_pool), "unhandled_modules", unhandled_json(r), "installs",
        installs_json(r), "plan", r->plan, "not_connected", cli_json_text(r->not_connected),
        "installed",
        json_pack("{s:o, s:o}", "kueue", cli_json_text(r->kueue_version), "jobset",
                  cli_json_text(r->jobset_version)),
        "node_pools", pools_json(r), "kueue_api", cli_json_text(r->kueue_api), "kueue_objects",
        objects_json(r), "warnings", cli_json_strings(&r->warnings), "cloud",
        cloud_json(plan, cloud));
    return doc;
}
