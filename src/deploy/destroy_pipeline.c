/*
 * destroy's pipeline: the one place its order is decided. Each stage is a row of the table
 * below; gc_destroy_run walks it and returns what every stage found and did, so cli/ only
 * renders. A stage that fails stops the walk (pipeline.c's, shared with deploy) and the stages
 * after it stay GC_STAGE_NOT_RUN.
 * Nothing is deleted before every Google Cloud step has been described, and every stage finds
 * what is already gone before it deletes, which is what makes a rerun resume.
 */
#include "deploy/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dpipe {
    const gc_blueprint *bp;
    const gc_destroy_request *r;
    const char *gcloud;
    const gc_deploy_connect *connect;
    const gc_events *ev;
    gc_destroy_result *result;
    gc_deploy_stage *stage; /* the one running */
    bool remains;           /* the describes found the cluster still there */
} dpipe;

static void skip(dpipe *p, const char *why)
{
    p->stage->state = GC_STAGE_SKIPPED;
    p->stage->detail = gc_xstrdup(why);
}

static const char *cluster_name(const dpipe *p)
{
    return p->r->kube_cluster ? p->r->kube_cluster : "(the kubeconfig's)";
}

static int open_cluster(dpipe *p, gc_error *err)
{
    if (p->result->kube)
        return 0;
    if (!p->connect)
        return gc_fail(err, GC_EXIT_USAGE, "no way to reach the cluster was given");
    return p->connect->open(p->connect->ctx, true, &p->result->kube, err);
}

/* Whether the cluster step found the cluster still there (in destroy's words, not gone). */
static bool cluster_remains(const gc_cloud_plan *plan, const gc_cloud_report *report)
{
    for (size_t i = 0; i < plan->count && i < report->count; i++)
        if (plan->steps[i].kind == GC_CLOUD_CLUSTER)
            return report->outcomes[i].state != GC_CLOUD_PRESENT;
    return false;
}

static int run_check(void *pipe, gc_error *err)
{
    dpipe *p = pipe;
    gc_destroy_result *res = p->result;
    int rc = deploy_cloud_run(&res->cloud, p->gcloud, false, p->ev, &res->cloud_report, err);
    if (rc)
        return rc;
    res->applied = p->r->apply;
    p->remains = cluster_remains(&res->cloud, &res->cloud_report);
    if (!res->cloud.count)
        skip(p, "the blueprint names nothing in Google Cloud");
    return 0;
}

/* Deleting a cluster under a running job loses the job: refused while one runs, or when they
 * cannot be listed, unless --allow-running-jobs. */
static int run_jobs(void *pipe, gc_error *err)
{
    dpipe *p = pipe;
    gc_destroy_result *res = p->result;
    if (!p->remains) {
        skip(p, "the cluster is gone");
        return 0;
    }
    if (!res->applied) {
        skip(p, "the cluster is asked only with --auto-approve");
        return 0;
    }
    if (p->r->allow_running_jobs) {
        skip(p, "--allow-running-jobs");
        return 0;
    }
    int rc = open_cluster(p, err);
    if (!rc)
        rc = deploy_destroy_running_jobs(res->kube, &res->jobs, err);
    if (rc) {
        char why[GC_ERROR_MAX];
        snprintf(why, sizeof(why), "%s", err->message);
        gc_error_clear(err);
        return gc_fail(err, GC_EXIT_USAGE,
                       "cannot check cluster %s for running jobs (%s); get its credentials "
                       "(gcloud container clusters get-credentials) or pass --allow-running-jobs",
                       cluster_name(p), why);
    }
    if (!res->jobs.count)
        return 0;
    gc_buf list;
    gc_buf_init(&list);
    for (size_t i = 0; i < res->jobs.count && i < 5; i++)
        gc_buf_printf(&list, "%s%s", i ? ", " : "", res->jobs.items[i]);
    rc = gc_fail(err, GC_EXIT_USAGE,
                 "%zu JobSet(s) still run on the cluster (%s%s); cancel them "
                 "(gcluster job cancel) or pass --allow-running-jobs",
                 res->jobs.count, list.data, res->jobs.count > 5 ? ", ..." : "");
    gc_buf_free(&list);
    return rc;
}

/* The volumes deploy applied go before the cloud steps delete their buckets. Under
 * --allow-running-jobs a cluster that cannot be reached takes them with it. */
static int run_objects(void *pipe, gc_error *err)
{
    dpipe *p = pipe;
    gc_destroy_result *res = p->result;
    if (!p->remains) {
        skip(p, "the cluster is gone, and its volumes with it");
        return 0;
    }
    if (!res->applied) {
        int rc = deploy_destroy_objects(NULL, p->bp, false, &res->objects, &res->object_count, err);
        if (!rc)
            skip(p, res->object_count ? "named without asking the cluster, which is asked only "
                                        "with --auto-approve"
                                      : "the blueprint has no gcsfuse or Filestore volumes");
        return rc;
    }
    int rc = open_cluster(p, err);
    if (!rc)
        rc = deploy_destroy_objects(res->kube, p->bp, true, &res->objects, &res->object_count, err);
    if (!rc && !res->object_count)
        skip(p, "the blueprint has no gcsfuse or Filestore volumes");
    if (!rc || res->object_count || !p->r->allow_running_jobs)
        return rc; /* reached: a delete failed, its error says which */
    char why[GC_ERROR_MAX];
    snprintf(why, sizeof(why), "%s", err->message);
    gc_error_clear(err);
    gc_warn(p->ev, "cluster %s was not reached (%s); its volumes go with it when it is deleted",
            cluster_name(p), why);
    rc = deploy_destroy_objects(NULL, p->bp, false, &res->objects, &res->object_count, err);
    if (!rc)
        skip(p, "the cluster was not reached; its volumes go with it");
    return rc;
}

static int run_delete(void *pipe, gc_error *err)
{
    dpipe *p = pipe;
    gc_destroy_result *res = p->result;
    if (!res->applied) {
        skip(p, "without --auto-approve nothing is deleted");
        return 0;
    }
    deploy_cloud_report_free(&res->cloud_report);
    return deploy_cloud_run(&res->cloud, p->gcloud, true, p->ev, &res->cloud_report, err);
}

static const deploy_stage_row stages[] = {
    {GC_DESTROY_CHECK, "Google Cloud: a describe of every step, to find what is still there",
     run_check},
    {GC_DESTROY_JOBS,
     "running jobs: the cluster's unfinished JobSets (any stops destroy unless "
     "--allow-running-jobs)",
     run_jobs},
    {GC_DESTROY_OBJECTS,
     "Kubernetes: the gcsfuse and Filestore PersistentVolumeClaims and PersistentVolumes deploy "
     "applied, deleted (the rest goes with the cluster)",
     run_objects},
    {GC_DESTROY_DELETE,
     "Google Cloud: what is still there deleted, node pools first and networks last", run_delete},
};

#define STAGE_COUNT (sizeof(stages) / sizeof(*stages))
_Static_assert(STAGE_COUNT == GC_DESTROY_DELETE + 1, "a row per stage");

const char *gc_destroy_stage_kind_name(gc_destroy_stage_kind kind)
{
    static const char *const names[] = {"check", "jobs", "objects", "delete"};
    _Static_assert(sizeof(names) / sizeof(*names) == GC_DESTROY_DELETE + 1, "a name per stage");
    return names[kind];
}

int gc_destroy_run(const gc_blueprint *bp, const gc_destroy_request *r, const char *gcloud,
                   const gc_deploy_connect *connect, const gc_events *ev, gc_destroy_result *result,
                   gc_error *err)
{
    memset(result, 0, sizeof(*result));
    dpipe p = {.bp = bp, .r = r, .gcloud = gcloud, .connect = connect, .ev = ev, .result = result};
    /* The plan is built before anything runs: a value it lacks is bad input (no stage run). */
    int rc = deploy_destroy_plan_build(
        bp,
        &(gc_cloud_target){.project = r->project, .cluster = r->cluster, .location = r->location},
        &result->cloud, err);
    if (rc)
        return rc;
    return deploy_stages_walk(stages, STAGE_COUNT, &p, result->stages, &result->stage_count,
                              &p.stage, err);
}

void gc_destroy_result_free(gc_destroy_result *result)
{
    for (size_t i = 0; i < result->stage_count; i++)
        free(result->stages[i].detail);
    deploy_cloud_report_free(&result->cloud_report);
    deploy_cloud_plan_free(&result->cloud);
    gc_strings_free(&result->jobs);
    deploy_destroy_objects_free(result->objects, result->object_count);
    if (result->kube)
        gc_kube_close(result->kube);
    memset(result, 0, sizeof(*result));
}
