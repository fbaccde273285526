/*
 * gcluster destroy BLUEPRINT: remove what deploy creates for the blueprint, in the order
 * deploy/destroy_pipeline.c decides, and say what each stage and step found and did.
 */
#include "cli/blueprint.h"
#include "gcluster/deploy.h"
#include "gcluster/emit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct destroy_args {
    cli_globals g;
    cli_list vars;
    const char *deployment_file;
    const char *output;
    bool plan;
    bool auto_approve;
    bool allow_running_jobs;
} destroy_args;

static const cli_option destroy_options[] = {
    CLI_BOOL(0, "plan", destroy_args, plan,
             "print every step in the order it would run and what is still there; delete "
             "nothing"),
    CLI_BOOL(0, "auto-approve", destroy_args, auto_approve,
             "delete what the plan names and is still there, in order (a rerun resumes)"),
    CLI_BOOL(0, "allow-running-jobs", destroy_args, allow_running_jobs,
             "delete even while JobSets run on the cluster, or when they cannot be checked"),
    CLI_LIST(0, "vars", destroy_args, vars, "NAME=VALUE[,...]",
             "override blueprint variables, as given to deploy (repeatable)"),
    CLI_STRING('d', "deployment-file", destroy_args, deployment_file, "FILE",
               "deployment file whose vars: override the blueprint's, as given to deploy"),
    CLI_VALUES('o', "output", destroy_args, output, NULL, &cli_text_formats,
               "the report as JSON or YAML"),
    CLI_END,
};

static const char *state_word(gc_cloud_state state)
{
    switch (state) {
    case GC_CLOUD_PRESENT:
        return "gone";
    case GC_CLOUD_MISSING:
        return "to delete";
    case GC_CLOUD_CREATED:
        return "deleted";
    case GC_CLOUD_FAILED:
        return "failed";
    case GC_CLOUD_DIFFERS:
    case GC_CLOUD_UPDATED:
    case GC_CLOUD_NOT_CHECKED:
        break;
    }
    return "not checked";
}

static void render_text(const gc_destroy_result *res)
{
    if (!res->stage_count)
        return; /* bad input: the error says why */
    const gc_cloud_plan *plan = &res->cloud;
    const gc_cloud_report *report = &res->cloud_report;
    cli_line(stdout, "Stages (in the order destroy runs them):");
    for (size_t i = 0; i < res->stage_count; i++) {
        const gc_deploy_stage *s = &res->stages[i];
        cli_line(stdout, "  %zu. %s: %s", i + 1, s->description,
                 cli_stage_word(s->state, res->applied ? "done" : "looked, deleted nothing"));
        if (s->detail)
            cli_line(stdout, "     (%s)", s->detail);
    }
    if (res->object_count)
        cli_line(stdout,
                 "Kubernetes, deleted first (the gcsfuse and Filestore volumes; the rest goes with "
                 "the cluster):");
    for (size_t i = 0; i < res->object_count; i++)
        cli_line(stdout, "  %3zu. %s: %s", i + 1, res->objects[i].label,
                 res->objects[i].state == GC_CLOUD_NOT_CHECKED ? "deleted first if there"
                                                               : state_word(res->objects[i].state));
    cli_line(stdout, "Google Cloud, in the order destroy deletes (%zu steps%s):", plan->count,
             report->checked ? "" : "; not checked, gcloud is not on PATH");
    for (size_t i = 0; i < plan->count && i < report->count; i++) {
        const gc_cloud_step *s = &plan->steps[i];
        const gc_cloud_outcome *o = &report->outcomes[i];
        cli_line(stdout, "  %3zu. %s %s: %s", i + 1, gc_cloud_step_kind_name(s->kind), s->name,
                 state_word(o->state));
        if (o->state == GC_CLOUD_MISSING || o->state == GC_CLOUD_NOT_CHECKED ||
            o->state == GC_CLOUD_FAILED)
            cli_line(stdout, "       %s", o->command);
        /* why gcloud could not tell, once: the steps after it were not asked */
        if (o->state == GC_CLOUD_NOT_CHECKED && o->detail && i == 0)
            cli_line(stdout, "       (gcloud could not check: %s)", o->detail);
    }
    if (!res->applied)
        cli_line(stdout, "\nNothing was deleted; run with --auto-approve to delete what is "
                         "still there.");
}

static json_t *report_json(const gc_destroy_result *res)
{
    const gc_cloud_plan *plan = &res->cloud;
    const gc_cloud_report *report = &res->cloud_report;
    json_t *stages = json_array();
    for (size_t i = 0; i < res->stage_count; i++) {
        const gc_deploy_stage *s = &res->stages[i];
        json_array_append_new(stages, json_pack("{s:s, s:s, s:s, s:o}", "kind",
                                                gc_destroy_stage_kind_name(s->kind), "description",
                                                s->description, "state", cli_stage_key(s->state),
                                                "detail", cli_json_text(s->detail)));
    }
    json_t *kube = json_array();
    for (size_t i = 0; i < res->object_count; i++)
        json_array_append_new(kube, json_pack("{s:s, s:s}", "label", res->objects[i].label, "state",
                                              state_word(res->objects[i].state)));
    json_t *steps = json_array();
    for (size_t i = 0; i < plan->count && i < report->count; i++) {
        const gc_cloud_step *s = &plan->steps[i];
        const gc_cloud_outcome *o = &report->outcomes[i];
        json_array_append_new(steps,
                              json_pack("{s:s, s:s, s:s, s:s, s:s, s:s?}", "kind",
                                        gc_cloud_step_kind_name(s->kind), "name", s->name, "module",
                                        s->module_id, "state", state_word(o->state), "command",
                                        o->command, "detail", o->detail));
    }
    return json_pack("{s:o, s:b, s:b, s:o, s:o}", "stages", stages, "checked", report->checked,
                     "applied", res->applied, "objects", kube, "steps", steps);
}

static int destroy_blueprint(const destroy_args *a, const gc_blueprint *bp, cli_format format,
                             gc_error *err)
{
    cli_globals g = cli_blueprint_globals(&a->g, bp);
    gc_destroy_request r = {.project = a->g.project,
                            .cluster = a->g.cluster,
                            .location = a->g.location,
                            .kube_cluster = g.cluster,
                            .apply = a->auto_approve,
                            .allow_running_jobs = a->allow_running_jobs};
    gc_destroy_result res;
    int rc = gc_destroy_run(bp, &r, NULL, &(gc_deploy_connect){cli_blueprint_connect, &g},
                            cli_events(), &res, err);
    if (format == CLI_FORMAT_TEXT)
        render_text(&res);
    rc = cli_pipeline_end(&g, res.kube,
                          format != CLI_FORMAT_TEXT && res.stage_count ? report_json(&res) : NULL,
                          format, rc, err);
    gc_destroy_result_free(&res);
    return rc;
}

static int destroy_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    destroy_args *a = args;
    if (parsed->positional_count != 1)
        return gc_fail(err, GC_EXIT_USAGE,
                       "destroy takes one blueprint file: gcluster destroy BLUEPRINT.yaml "
                       "[--plan | --auto-approve] (got %zu arguments)",
                       parsed->positional_count);
    if (a->plan && a->auto_approve)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--plan deletes nothing, so it cannot be combined with --auto-approve");
    cli_format format;
    int rc = cli_format_parse(a->output, false, &format, err);
    if (rc)
        return rc;
    gc_blueprint_options o = {.deployment_file = a->deployment_file};
    gc_blueprint bp;
    rc = cli_blueprint_open(parsed->positional[0], &a->vars, &o, &bp, err);
    if (rc)
        return rc;
    rc = destroy_blueprint(a, &bp, format, err);
    gc_blueprint_free(&bp);
    return rc;
}

const cli_command cmd_destroy = {
    .name = "destroy",
    .summary = "remove what deploy created for a Cluster Toolkit blueprint",
    .usage = "destroy BLUEPRINT [--plan | --auto-approve] [-d FILE] [--vars NAME=VALUE] "
             "[--allow-running-jobs]",
    .description =
        "Plans, from the same blueprint and variables deploy was given, what deploy creates in\n"
        "Google Cloud and lists it in the reverse order: node pools, workload policies, the\n"
        "cluster (its add-ons and maintenance exclusions go with it), Filestore instances,\n"
        "buckets (gcloud refuses one that still holds objects: empty it first), IAM bindings,\n"
        "service accounts, NATs, routers, firewall rules, subnetworks, networks. Each step is\n"
        "checked with a describe first; only what the plan names is ever deleted. Without\n"
        "--auto-approve nothing is deleted. With it, while the cluster is there, the gcsfuse and\n"
        "Filestore PersistentVolumeClaims and PersistentVolumes deploy applied are deleted from\n"
        "it first; then the steps still there are deleted in order, and a rerun after a failure\n"
        "goes on from where it stopped. While\n"
        "JobSets run on the cluster (or when they cannot be listed) it refuses unless --allow-\n"
        "running-jobs is given. The report lists the stages first, in the order they run:\n"
        "the describes, the running-jobs check, the volumes, the deletes.",
    .options = destroy_options,
    .operands = &cli_paths,
    .args_size = sizeof(destroy_args),
    .run = destroy_run,
};
