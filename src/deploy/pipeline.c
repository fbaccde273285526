/*
 * deploy's pipeline: the one place its order is decided. Each stage is a row of the table
 * below (its kind, what it does, the function that runs it); gc_deploy_run walks the table and
 * returns what every stage found and did, so cli/ only renders. A stage that fails stops the
 * walk and the stages after it stay GC_STAGE_NOT_RUN. Every stage looks before it changes
 * anything (describes, the installed releases, server-side apply), which is what makes a rerun
 * resume where the last one stopped.
 */
#include "deploy/internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct pipeline {
    const gc_blueprint *bp;
    const gc_deploy_request *r;
    bool apply;
    const char *gcloud;
    const gc_deploy_connect *connect;
    const gc_events *ev;
    gc_deploy_result *result;
    gc_deploy_stage *stage; /* the one running */
    deploy_cluster cluster;
    bool cluster_begun;
} pipeline;

static void skip(pipeline *p, const char *why)
{
    p->stage->state = GC_STAGE_SKIPPED;
    p->stage->detail = gc_xstrdup(why);
}

/* The cluster must exist before anything is asked of it. */
static int run_cloud(void *pipe, gc_error *err)
{
    pipeline *p = pipe;
    gc_deploy_result *res = p->result;
    int rc = deploy_cloud_run(&res->cloud, p->gcloud, p->apply && !p->r->plan, p->ev,
                              &res->cloud_report, err);
    if (!rc && !res->cloud.count)
        skip(p, "the blueprint names nothing in Google Cloud");
    return rc;
}

/* Under --plan the kubeconfig is not written, so without its context the stages after this
 * one say what they would do without asking the cluster. */
static int run_credentials(void *pipe, gc_error *err)
{
    pipeline *p = pipe;
    gc_deploy_result *res = p->result;
    bool may_write = !p->r->plan;
    gc_error why = {0};
    int rc = p->connect ? p->connect->open(p->connect->ctx, may_write, &res->kube, &why)
                        : gc_fail(&why, GC_EXIT_USAGE, "no way to reach the cluster was given");
    p->cluster = (deploy_cluster){.kube = rc ? NULL : res->kube,
                                  .bp = p->bp,
                                  .r = p->r,
                                  .ev = p->ev,
                                  .report = &res->report,
                                  .gcloud = p->gcloud};
    if (rc && may_write) {
        *err = why;
        return rc;
    }
    deploy_cluster_begin(&p->cluster, rc ? why.message : NULL);
    p->cluster_begun = true;
    if (rc)
        skip(p, why.message);
    return 0;
}

static int run_installs(void *pipe, gc_error *err)
{
    pipeline *p = pipe;
    int rc = deploy_stage_installs(&p->cluster, err);
    if (!rc && !p->result->report.install_count)
        skip(p, "the blueprint installs nothing");
    return rc;
}

static int run_objects(void *pipe, gc_error *err)
{
    pipeline *p = pipe;
    return deploy_stage_objects(&p->cluster, err);
}

static int run_wait(void *pipe, gc_error *err)
{
    pipeline *p = pipe;
    if (!p->cluster.kube) {
        skip(p, "the cluster was not read");
        return 0;
    }
    if (p->r->plan) {
        skip(p, "--plan applies nothing, so there is nothing to wait for");
        return 0;
    }
    return deploy_stage_wait(&p->cluster, err);
}

static const deploy_stage_row stages[] = {
    {GC_STAGE_CLOUD,
     "Google Cloud: networks, service accounts, buckets, Filestore instances, the cluster, node "
     "pools (a describe of each first; gcloud makes only the absent ones)",
     run_cloud},
    {GC_STAGE_CREDENTIALS, "credentials: the cluster's kubeconfig context", run_credentials},
    {GC_STAGE_INSTALLS,
     "installs: what the blueprint installs (Kueue, JobSet, cert-manager), then their "
     "controllers Available and webhooks answering",
     run_installs},
    {GC_STAGE_OBJECTS,
     "Kubernetes objects: server-side applied in --dry-run-out's order; the node pools read",
     run_objects},
    {GC_STAGE_WAIT, "waits: each ClusterQueue applied made Active by Kueue", run_wait},
};

#define STAGE_COUNT (sizeof(stages) / sizeof(*stages))
_Static_assert(STAGE_COUNT == GC_STAGE_WAIT + 1, "a row per stage");

const char *gc_deploy_stage_kind_name(gc_deploy_stage_kind kind)
{
    static const char *const names[] = {"cloud", "credentials", "installs", "objects", "wait"};
    _Static_assert(sizeof(names) / sizeof(*names) == GC_STAGE_WAIT + 1, "a name per stage");
    return names[kind];
}

int deploy_stages_walk(const deploy_stage_row *rows, size_t count, void *pipe, gc_deploy_stage *out,
                       size_t *stage_count, gc_deploy_stage **running, gc_error *err)
{
    for (size_t i = 0; i < count; i++)
        out[i] = (gc_deploy_stage){.kind = rows[i].kind, .description = rows[i].description};
    *stage_count = count;
    int rc = 0;
    for (size_t i = 0; i < count && !rc; i++) {
        *running = &out[i];
        rc = rows[i].run(pipe, err);
        if (rc)
            out[i].state = GC_STAGE_FAILED;
        else if (out[i].state != GC_STAGE_SKIPPED)
            out[i].state = GC_STAGE_DONE;
    }
    return rc;
}

int gc_deploy_run(const gc_blueprint *bp, const gc_deploy_request *r, bool apply,
                  const char *gcloud, const gc_deploy_connect *connect, const gc_events *ev,
                  gc_deploy_result *result, gc_error *err)
{
    memset(result, 0, sizeof(*result));
    result->plan = r->plan;
    pipeline p = {.bp = bp,
                  .r = r,
                  .apply = apply,
                  .gcloud = gcloud,
                  .connect = connect,
                  .ev = ev,
                  .result = result};
    /* The plan is built before anything runs: a value it lacks is bad input (GC_EXIT_USAGE,
     * no stage run, nothing to report). */
    int rc = deploy_cloud_plan_build(bp,
                                     &(gc_cloud_target){.project = r->project,
                                                        .cluster = r->cluster,
                                                        .location = r->location,
                                                        .head_pool = r->head_pool},
                                     &result->cloud, err);
    if (rc)
        return rc;
    rc = deploy_stages_walk(stages, STAGE_COUNT, &p, result->stages, &result->stage_count, &p.stage,
                            err);
    if (p.cluster_begun)
        deploy_cluster_end(&p.cluster);
    return rc;
}

void gc_deploy_result_free(gc_deploy_result *result)
{
    for (size_t i = 0; i < result->stage_count; i++)
        free(result->stages[i].detail);
    deploy_cloud_report_free(&result->cloud_report);
    deploy_cloud_plan_free(&result->cloud);
    deploy_report_free(&result->report);
    if (result->kube)
        gc_kube_close(result->kube);
    memset(result, 0, sizeof(*result));
}
