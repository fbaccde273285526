/*
 * destroy: what deploy creates, removed in the reverse of deploy's order, each step a describe
 * (is it still there?) and a delete. The steps come from deploy's own plan, so destroy never
 * names a resource the plan does not; a rerun after a failure finds what is gone and goes on.
 * What goes with its parent is not a step of its own: a bucket's labels, a cluster's add-ons and
 * maintenance exclusions go with the cluster, the bootstrap pool is already gone. A Filestore
 * instance goes after the volumes over it (destroy's objects stage runs before its cloud one).
 */
#include "deploy/gcp.h"

#include "gcluster/kube.h"

#include <stdio.h>

#include <stdlib.h>
#include <string.h>

/* The value of --NAME=VALUE in argv, or NULL. */
static const char *flag_value(char *const *argv, const char *name)
{
    size_t len = strlen(name);
    for (char *const *a = argv; a && *a; a++)
        if (!strncmp(*a, "--", 2) && !strncmp(*a + 2, name, len) && (*a)[2 + len] == '=')
            return *a + 3 + len;
    return NULL;
}

static void add(gc_cloud_plan *out, const gc_cloud_step *from, char **check, char **remove)
{
    out->steps = gc_xrealloc(out->steps, (out->count + 1) * sizeof(*out->steps));
    gc_cloud_step *s = &out->steps[out->count++];
    memset(s, 0, sizeof(*s));
    s->kind = from->kind;
    s->name = gc_xstrdup(from->name);
    s->module_id = gc_xstrdup(from->module_id);
    s->check = check;
    s->create = remove;
    s->removes = true;
}

int deploy_destroy_plan_build(const gc_blueprint *bp, const gc_cloud_target *t, gc_cloud_plan *plan,
                              gc_error *err)
{
    memset(plan, 0, sizeof(*plan));
    gc_cloud_plan deploy;
    int rc = deploy_cloud_plan_build(bp, t, &deploy, err);
    if (rc)
        return rc;
    planner p = {.plan = plan, .err = err};
    deploy_gcp_planner_init(&p, bp, t);
    for (size_t i = deploy.count; i-- > 0;) {
        const gc_cloud_step *s = &deploy.steps[i];
        if (s->kind == GC_CLOUD_CLUSTER_ADDON || s->kind == GC_CLOUD_REMOVE_DEFAULT_POOL ||
            s->kind == GC_CLOUD_BUCKET_SETTINGS)
            continue;
        if (s->kind == GC_CLOUD_ROLE_BINDING || s->kind == GC_CLOUD_ACCOUNT_BINDING) {
            /* removed only while the binding is there */
            const char *member = flag_value(s->create, "member");
            const char *role = flag_value(s->create, "role");
            /* a project's policy, or the account's (its email the word after the verb) */
            gcp_ref on = {.kind = s->kind,
                          .name = s->kind == GC_CLOUD_ACCOUNT_BINDING ? s->create[4] : NULL};
            deploy_argv d = deploy_gcp_command(&p, &on, "remove-iam-policy-binding");
            deploy_argv_flag(&d, "member", member);
            deploy_argv_flag(&d, "role", role);
            if (s->kind == GC_CLOUD_ROLE_BINDING)
                deploy_argv_flag(&d, "condition", "None");
            deploy_argv_flag(&d, "format", "none");
            add(plan, s, deploy_gcp_binding_check(&p, &on, member, role), d.items);
            plan->steps[plan->count - 1].present_output = gc_xstrdup(role);
            continue;
        }
        gcp_ref ref = {.kind = s->kind,
                       .name = s->name,
                       .region = s->kind == GC_CLOUD_FILESTORE ? flag_value(s->check, "location")
                                                               : flag_value(s->check, "region"),
                       .router = flag_value(s->check, "router")};
        deploy_argv d = deploy_gcp_command(&p, &ref, "delete");
        deploy_argv_words(&d, "--quiet", NULL);
        add(plan, s, deploy_gcp_describe(&p, &ref), d.items);
    }
    deploy_cloud_plan_free(&deploy);
    return 0;
}

typedef struct running {
    gc_strings *names;
} running;

/* A JobSet is running until its Completed or Failed condition is True. */
static int collect(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    running *r = ctx;
    if (gc_kube_condition_true(item, "Completed") || gc_kube_condition_true(item, "Failed"))
        return 0;
    char *name = gc_xasprintf("%s/%s", gc_kube_field(item, NULL, "namespace") ?: "",
                              gc_kube_field(item, NULL, "name") ?: "");
    gc_strings_push(r->names, name);
    free(name);
    return 0;
}

int deploy_destroy_running_jobs(gc_kube *kube, gc_strings *names, gc_error *err)
{
    memset(names, 0, sizeof(*names));
    running r = {.names = names};
    int rc =
        gc_kube_list(kube, "/apis/jobset.x-k8s.io/v1alpha2/jobsets", NULL, collect, &r, NULL, err);
    if (rc && err->http_status == 404) {
        /* no JobSet API: nothing of ours runs there */
        gc_error_clear(err);
        return 0;
    }
    return rc;
}

/* Only the gke-persistent-volume claims and volumes: the rest of what deploy applied lives in
 * the cluster and goes with it, and a Namespace may hold more than deploy put there. */
static bool destroy_removes(const json_t *obj)
{
    const char *kind = gc_kube_string(obj, "kind");
    return gc_kube_same(kind, "PersistentVolumeClaim") || gc_kube_same(kind, "PersistentVolume");
}

int deploy_destroy_objects(gc_kube *kube, const gc_blueprint *bp, bool apply,
                           gc_destroy_object **out, size_t *count, gc_error *err)
{
    *out = NULL;
    *count = 0;
    json_t *objects = json_array();
    deploy_storage_objects(bp, objects);
    json_t *cache = json_object();
    int rc = 0;
    for (size_t i = json_array_size(objects); i-- > 0 && !rc;) {
        json_t *obj = json_array_get(objects, i);
        if (!destroy_removes(obj))
            continue;
        gc_destroy_object *o = gc_xrealloc(*out, (*count + 1) * sizeof(**out));
        *out = o;
        o = &o[(*count)++];
        memset(o, 0, sizeof(*o));
        if (!kube) {
            /* --plan without the cluster: named, not looked for */
            char kind[64];
            snprintf(kind, sizeof(kind), "%s", gc_kube_string(obj, "kind"));
            for (char *c = kind; *c; c++)
                *c = (char)(*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
            o->label = gc_xasprintf("%s/%s", kind, gc_kube_field(obj, NULL, "name"));
            o->state = GC_CLOUD_NOT_CHECKED;
            continue;
        }
        deploy_object_ref ref = {0};
        rc = deploy_locate(kube, cache, obj, &ref, err);
        if (rc) {
            (*count)--;
            break;
        }
        o->label = gc_xstrdup(ref.label);
        rc = gc_kube_get(kube, ref.path, NULL, NULL, err);
        if (rc && err->http_status == 404) {
            gc_error_clear(err);
            rc = 0;
            o->state = GC_CLOUD_PRESENT; /* destroy's word for it: gone */
        } else if (!rc && !apply) {
            o->state = GC_CLOUD_MISSING; /* still to delete */
        } else if (!rc) {
            rc = gc_kube_delete(kube, ref.path, "Background", NULL, err);
            o->state = rc ? GC_CLOUD_FAILED : GC_CLOUD_CREATED; /* deleted */
            if (rc)
                gc_error_prefix(err, "deleting %s: ", ref.label);
        }
        free(ref.path);
    }
    json_decref(cache);
    json_decref(objects);
    return rc;
}

void deploy_destroy_objects_free(gc_destroy_object *objects, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(objects[i].label);
    free(objects);
}
