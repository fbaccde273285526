/*
 * gcluster destroy BLUEPRINT: remove what deploy creates for the blueprint, in the reverse of
 * deploy's order (deploy/destroy.c), and say what each step found and did.
 */
#include "cli/cli.h"
#include "cli/render.h"
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

static void render_text(const gc_cloud_plan *plan, const gc_cloud_report *report,
                        const gc_destroy_object *objects, size_t object_count, bool applied)
{
    if (object_count)
        cli_line(stdout, "Kubernetes, deleted first (the gcsfuse volumes; the rest goes with the "
                         "cluster):");
    for (size_t i = 0; i < object_count; i++)
        cli_line(stdout, "  %3zu. %s: %s", i + 1, objects[i].label,
                 objects[i].state == GC_CLOUD_NOT_CHECKED ? "deleted first if there"
                                                          : state_word(objects[i].state));
    cli_line(stdout, "Google Cloud, in the order destroy deletes (%zu steps%s):", plan->count,
             report->checked ? "" : "; not checked, gcloud is not on PATH");
    for (size_t i = 0; i < plan->count; i++) {
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
    if (!applied)
        cli_line(stdout, "\nNothing was deleted; run with --auto-approve to delete what is "
                         "still there.");
}

static json_t *report_json(const gc_cloud_plan *plan, const gc_cloud_report *report,
                           const gc_destroy_object *objects, size_t object_count, bool applied)
{
    json_t *kube = json_array();
    for (size_t i = 0; i < object_count; i++)
        json_array_append_new(kube, json_pack("{s:s, s:s}", "label", objects[i].label, "state",
                                              state_word(objects[i].state)));
    json_t *steps = json_array();
    for (size_t i = 0; i < plan->count; i++) {
        const gc_cloud_step *s = &plan->steps[i];
        const gc_cloud_outcome *o = &report->outcomes[i];
        json_array_append_new(steps,
                              json_pack("{s:s, s:s, s:s, s:s, s:s, s:s?}", "kind",
                                        gc_cloud_step_kind_name(s->kind), "name", s->name, "module",
                                        s->module_id, "state", state_word(o->state), "command",
                                        o->command, "detail", o->detail));
    }
    return json_pack("{s:b, s:b, s:o, s:o}", "checked", report->checked, "applied", applied,
                     "objects", kube, "steps", steps);
}

typedef struct on_cluster {
    const destroy_args *a;
    const gc_blueprint *bp;
    gc_strings jobs;
    gc_destroy_object *objects;
    size_t object_count;
} on_cluster;

/* Deleting a cluster under a running job loses the job: refused unless told. Then the volumes
 * deploy applied are deleted, before the cloud steps delete their buckets. */
static int clear_cluster(gc_kube *kube, void *ctx, gc_error *err)
{
    on_cluster *c = ctx;
    int rc = c->a->allow_running_jobs ? 0 : gc_destroy_running_jobs(kube, &c->jobs, err);
    if (rc || c->jobs.count)
        return rc;
    return gc_destroy_objects(kube, c->bp, true, &c->objects, &c->object_count, err);
}

static int running_jobs_error(const on_cluster *c, gc_error *err)
{
    gc_buf list;
    gc_buf_init(&list);
    for (size_t i = 0; i < c->jobs.count && i < 5; i++)
        gc_buf_printf(&list, "%s%s", i ? ", " : "", c->jobs.items[i]);
    int rc = gc_fail(err, GC_EXIT_USAGE,
                     "%zu JobSet(s) still run on the cluster (%s%s); cancel them "
                     "(gcluster job cancel) or pass --allow-running-jobs",
                     c->jobs.count, list.data, c->jobs.count > 5 ? ", ..." : "");
    gc_buf_free(&list);
    return rc;
}

/* The cluster's part of destroy, when the cluster is still there: refused while jobs run, or
 * when they cannot be listed, unless --allow-running-jobs (then volumes that cannot be reached
 * go with the cluster). */
static int destroy_on_cluster(const destroy_args *a, const gc_blueprint *bp, on_cluster *c,
                              gc_error *err)
{
    cli_globals g = a->g;
    if (!g.cluster && !g.context) {
        g.cluster = bp->cluster;
        g.location = g.location ? g.location : bp->region;
        g.project = g.project ? g.project : bp->project;
    }
    int rc = cli_with_kube(&g, clear_cluster, c, err);
    if (!rc && c->jobs.count)
        return running_jobs_error(c, err);
    if (!rc)
        return 0;
    char why[GC_ERROR_MAX];
    snprintf(why, sizeof(why), "%s", err->message);
    if (a->allow_running_jobs && !c->object_count) {
        gc_error_clear(err);
        gc_warn(cli_events(),
                "cluster %s was not reached (%s); its volumes go with it when it is deleted",
                g.cluster ? g.cluster : "(the kubeconfig's)", why);
        return gc_destroy_objects(NULL, bp, false, &c->objects, &c->object_count, err);
    }
    if (c->object_count) /* reached: a delete failed, its error says which */
        return rc;
    return gc_fail(err, GC_EXIT_USAGE,
                   "cannot check cluster %s for running jobs (%s); get its credentials "
                   "(gcloud container clusters get-credentials) or pass --allow-running-jobs",
                   g.cluster ? g.cluster : "(the kubeconfig's)", why);
}

/* Whether the cluster step found the cluster still there. */
static bool cluster_remains(const gc_cloud_plan *plan, const gc_cloud_report *report)
{
    for (size_t i = 0; i < plan->count; i++)
        if (plan->steps[i].kind == GC_CLOUD_CLUSTER)
            return report->outcomes[i].state != GC_CLOUD_PRESENT;
    return false;
}

static int destroy_blueprint(const destroy_args *a, const gc_blueprint *bp, cli_format format,
                             gc_error *err)
{
    gc_cloud_plan plan;
    int rc = gc_destroy_plan_build(bp,
                                   &(gc_cloud_target){.project = a->g.project,
                                                      .cluster = a->g.cluster,
                                                      .location = a->g.location},
                                   &plan, err);
    if (rc)
        return rc;
    /* Every step described first; only then anything deleted. */
    gc_cloud_report report;
    rc = gc_cloud_run(&plan, NULL, false, cli_events(), &report, err);
    bool apply = a->auto_approve && !rc;
    bool remains = cluster_remains(&plan, &report);
    on_cluster c = {.a = a, .bp = bp};
    if (!rc && remains && apply)
        rc = destroy_on_cluster(a, bp, &c, err);
    else if (!rc && remains) /* without --auto-approve the cluster is not asked */
        rc = gc_destroy_objects(NULL, bp, false, &c.objects, &c.object_count, err);
    if (apply && !rc) {
        gc_cloud_report_free(&report);
        rc = gc_cloud_run(&plan, NULL, true, cli_events(), &report, err);
    }
    if (format == CLI_FORMAT_TEXT) {
        render_text(&plan, &report, c.objects, c.object_count, apply);
    } else {
        gc_error print_err = {0};
        if (cli_print_document(report_json(&plan, &report, c.objects, c.object_count, apply),
                               format, &print_err) &&
            !rc)
            rc = gc_fail(err, print_err.code, "%s", print_err.message);
    }
    gc_strings_free(&c.jobs);
    gc_destroy_objects_free(c.objects, c.object_count);
    gc_cloud_report_free(&report);
    gc_cloud_plan_free(&plan);
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
    char *storage[CLI_LIST_MAX] = {NULL};
    gc_blueprint_options o = {.deployment_file = a->deployment_file};
    const char **vars = cli_split_vars(&a->vars, storage, &o.var_count);
    o.vars = vars;
    gc_blueprint bp;
    rc = gc_blueprint_open(parsed->positional[0], &o, &bp, err);
    for (size_t i = 0; i < a->vars.count; i++)
        free(storage[i]);
    free(vars);
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
        "cluster (its add-ons and maintenance exclusions go with it), buckets (gcloud refuses one\n"
        "that still holds objects: empty it first), IAM bindings, service accounts, NATs,\n"
        "routers, firewall rules, subnetworks, networks. Each step is checked with a describe\n"
        "first; only what the plan names is ever deleted. Without --auto-approve nothing is\n"
        "deleted. With it, while the cluster is there, the gcsfuse PersistentVolumeClaims and\n"
        "PersistentVolumes deploy applied are deleted from it first; then the steps still there\n"
        "are deleted in order, and a rerun after a failure goes on from where it stopped. While\n"
        "JobSets run on the cluster (or when they cannot be listed) it refuses unless --allow-\n"
        "running-jobs is given.",
    .options = destroy_options,
    .operands = &cli_paths,
    .args_size = sizeof(destroy_args),
    .run = destroy_run,
};
