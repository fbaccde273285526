/*
 * `cluster volume`: the storage a job can mount. As Google's gcluster: the claims Cluster
 * Toolkit's file-system modules made (label ghpc_role=file-system, in every namespace), typed
 * by the module that made them (label ghpc_module), else by their StorageClass, else
 * "Standard". Also the storage-profile gateways `job submit` made for profile= mounts (label
 * gcluster.google.com/managed-by=cluster-toolkit), which `job cancel` removes when no job uses
 * them, so that a gateway left behind can be seen.
 */
#include "gcluster/buf.h"
#include "gcluster/cluster.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

typedef struct volume_list {
    gc_cluster_volume *items;
    size_t count;
    size_t cap;
    bool gateways; /* the list being read is the gateways' */
} volume_list;

static int add_claim(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    volume_list *list = ctx;
    const json_t *meta = json_object_get(item, "metadata");
    const json_t *labels = json_object_get(meta, "labels");
    const char *name = str(meta, "name");
    if (!name)
        return 0;
    for (size_t i = 0; i < list->count; i++)
        if (!strcmp(list->items[i].name, name) &&
            !strcmp(list->items[i].ns, str(meta, "namespace")))
            return 0; /* a gateway that is also labelled a file system: once */
    const char *type = str(labels, "ghpc_module");
    if (!type)
        type = str(json_object_get(item, "spec"), "storageClassName");
    if (list->count == list->cap) {
        list->cap = list->cap ? list->cap * 2 : 8;
        list->items = gc_xrealloc(list->items, list->cap * sizeof(*list->items));
    }
    gc_cluster_volume *v = &list->items[list->count++];
    v->name = gc_xstrdup(name);
    v->ns = gc_xstrdup(str(meta, "namespace") ? str(meta, "namespace") : "");
    v->type = gc_xstrdup(type ? type : "Standard");
    v->phase = str(json_object_get(item, "status"), "phase")
                   ? gc_xstrdup(str(json_object_get(item, "status"), "phase"))
                   : NULL;
    v->gateway = list->gateways;
    return 0;
}

int gc_cluster_volumes(gc_kube *kube, gc_cluster_volume_list *out, gc_error *err)
{
    memset(out, 0, sizeof(*out));
    volume_list list = {0};
    char *path = gc_kube_path(NULL, "v1", NULL, "persistentvolumeclaims", NULL);
    gc_kube_list_options modules = {.label_selector = "ghpc_role=file-system"};
    /* The labels manifest/ gives every gateway (gcluster/manifest.h). */
    gc_kube_list_options gateways = {
        .label_selector =
            "gcluster.google.com/managed-by=cluster-toolkit,gcluster.google.com/storage-type"};
    int rc = gc_kube_list(kube, path, &modules, add_claim, &list, NULL, err);
    list.gateways = true;
    if (!rc)
        rc = gc_kube_list(kube, path, &gateways, add_claim, &list, NULL, err);
    free(path);
    out->items = list.items;
    out->count = list.count;
    if (rc)
        gc_cluster_volume_list_free(out);
    return rc;
}

void gc_cluster_volume_list_free(gc_cluster_volume_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        free(list->items[i].name);
        free(list->items[i].ns);
        free(list->items[i].type);
        free(list->items[i].phase);
    }
    free(list->items);
    memset(list, 0, sizeof(*list));
}
