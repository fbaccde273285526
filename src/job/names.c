/*
 * Job names for shell completion: the JobSets of the namespace and the Jobs of its JobSet-less
 * jobs, read as metadata only (a few hundred bytes each instead of whole pod templates), in one
 * round trip.
 */
#include "gcluster/buf.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "job/internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct names_state {
    const char *prefix;
    void (*on_name)(void *ctx, const char *name);
    void *ctx;
    gc_strings later; /* the JobSet-less jobs' names, offered after the JobSets' */
} names_state;

static int on_item(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    names_state *s = ctx;
    const char *name = gc_kube_field(item, NULL, "name");
    if (name && !strncmp(name, s->prefix, strlen(s->prefix)))
        s->on_name(s->ctx, name);
    return 0;
}

/* A JobSet-less job's Job: labelled with its own name as the workload. */
static int on_job(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    names_state *s = ctx;
    const char *name = gc_kube_field(item, NULL, "name");
    if (job_is_indexed_job(item) && !strncmp(name, s->prefix, strlen(s->prefix)))
        gc_strings_push(&s->later, name);
    return 0;
}

int gc_job_names(gc_kube *kube, const char *prefix, void (*on_name)(void *ctx, const char *name),
                 void *ctx, gc_error *err)
{
    names_state s = {.prefix = prefix ? prefix : "", .on_name = on_name, .ctx = ctx};
    char *path = gc_job_jobset_path(kube, NULL);
    char *jobs_path = job_indexed_path(kube, NULL);
    gc_kube_list_options opts = {.accept = GC_KUBE_ACCEPT_METADATA};
    gc_kube_list_options job_opts = {.accept = GC_KUBE_ACCEPT_METADATA,
                                     .label_selector =
                                         GC_LABEL_WORKLOAD ",!jobset.sigs.k8s.io/jobset-name"};
    gc_kube_read reads[] = {
        {.path = path, .opts = &opts, .on_item = on_item, .ctx = &s},
        {.path = jobs_path, .opts = &job_opts, .on_item = on_job, .ctx = &s},
    };
    gc_kube_read_all(kube, reads, 2);
    free(path);
    free(jobs_path);
    /* The JobSets' answer decides, unless the cluster serves none and the Jobs were read. */
    int rc = reads[0].rc;
    if (rc && reads[0].err.http_status == 404 && !reads[1].rc)
        rc = 0;
    if (rc)
        *err = reads[0].err;
    for (size_t i = 0; !rc && i < s.later.count; i++)
        s.on_name(s.ctx, s.later.items[i]);
    gc_strings_free(&s.later);
    return rc;
}
