/*
 * Job names for shell completion: the JobSets of the namespace, read as metadata only (a few
 * hundred bytes each instead of whole pod templates).
 */
#include "gcluster/job.h"
#include "gcluster/kube.h"

#include <stdlib.h>
#include <string.h>

typedef struct names_state {
    const char *prefix;
    void (*on_name)(void *ctx, const char *name);
    void *ctx;
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

int gc_job_names(gc_kube *kube, const char *prefix, void (*on_name)(void *ctx, const char *name),
                 void *ctx, gc_error *err)
{
    names_state s = {.prefix = prefix ? prefix : "", .on_name = on_name, .ctx = ctx};
    char *path = gc_job_jobset_path(kube, NULL);
    gc_kube_list_options opts = {.accept = GC_KUBE_ACCEPT_METADATA};
    int rc = gc_kube_list(kube, path, &opts, on_item, &s, NULL, err);
    free(path);
    return rc;
}
