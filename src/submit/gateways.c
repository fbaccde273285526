/*
 * The gateways of profile= mounts on the cluster (gcluster/manifest.h says what they are):
 * named for the namespace the job goes to, checked against the StorageClasses the cluster has
 * (read with the submit's other pre-flight reads, as are the gateway objects themselves:
 * cluster_facts.c), dry-run with the Jobs, and created together with the job, in its round trip,
 * or reused when a job of the namespace made them already. A gateway volume left Released by a
 * claim deleted earlier cannot bind again, so one that Cluster Toolkit made is deleted and made
 * anew, as Google's gcluster does (before the dry runs: it can never serve a job again).
 *
 * A gateway belongs to the namespace, not to a job: its name follows from the bucket, the
 * profile, a digest of its settings and the namespace alone (gc_workload_gateways), so a gateway
 * this submit created stays when the JobSet's create fails, and the next submit finds it by that
 * name and reuses it; `job cancel` removes the claims no job mounts any more.
 */
#include "gcluster/buf.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"
#include "gcluster/submit.h"
#include "gcluster/sys.h"
#include "submit/submit_checks.h"

#include <stdlib.h>
#include <string.h>

/* How long a Released volume may take to go away before the submit gives up. */
#define RELEASED_DELETE_WAIT_MS 60000

/* object[section][key] as a string, or NULL. */
static const char *field(const json_t *object, const char *section, const char *key)
{
    return gc_kube_string(json_object_get(object, section), key);
}

int submit_gateways_name(gc_kube *kube, gc_submit_plan *plan, gc_error *err)
{
    json_decref(plan->gateways);
    plan->gateways = NULL;
    return gc_workload_gateways(&plan->workload, gc_kube_namespace(kube), &plan->gateways, err);
}

static const char *name_of(const json_t *object)
{
    return field(object, "metadata", "name");
}

int submit_gateways_check(const gc_submit_plan *plan, const cluster_facts *f, gc_error *err)
{
    size_t i;
    const json_t *object;
    json_array_foreach(plan->gateways, i, object)
    {
        const storage_class_read *sc = submit_cluster_facts_storage_class(f, object);
        /* Only a StorageClass known to be missing refuses; one we may not read may be there. */
        if (sc && sc->read.rc && sc->read.err.http_status == 404)
            return gc_fail(err, GC_EXIT_USAGE,
                           "--mount: the cluster has no StorageClass %s, which profile= needs: "
                           "GKE creates the gcsfusecsi-* classes from version 1.35.1-gke.1616000 "
                           "on, with the Cloud Storage FUSE CSI driver enabled (kubectl get sc -l "
                           "gke-gcsfuse/profile=true lists them); upgrade the cluster or mount the "
                           "bucket without profile=",
                           sc->name);
    }
    return 0;
}

static bool is_volume(const json_t *object)
{
    const char *kind = gc_kube_string(object, "kind");
    return kind && !strcmp(kind, "PersistentVolume");
}

static const char *kind_word(const json_t *object)
{
    return is_volume(object) ? "PersistentVolume" : "claim";
}

static int wait_until_gone(gc_kube *kube, const char *path, const char *name, gc_error *err)
{
    long long deadline = gc_clock_ms() + RELEASED_DELETE_WAIT_MS;
    while (gc_clock_ms() < deadline) {
        gc_error get_err = {0};
        if (gc_kube_get(kube, path, NULL, NULL, &get_err) && get_err.http_status == 404)
            return 0;
        gc_clock_sleep_ms(500);
    }
    return gc_fail(err, GC_EXIT_RUNTIME,
                   "gateway PersistentVolume %s was deleted (it was Released) but is still there "
                   "after %d s; see kubectl describe pv %s, then submit again",
                   name, RELEASED_DELETE_WAIT_MS / 1000, name);
}

/* An existing gateway volume: reused, made anew when Released (not by a server dry run, which
 * changes nothing: it says so), or refused with the fix. */
static int settle_volume(gc_kube *kube, const json_t *pv, const json_t *existing, const char *ns,
                         bool dry_run, bool *create, const gc_events *ev, gc_error *err)
{
    const char *name = name_of(pv);
    const char *claim = field(json_object_get(pv, "spec"), "claimRef", "name");
    if (field(existing, "metadata", "deletionTimestamp"))
        return gc_fail(err, GC_EXIT_USAGE,
                       "gateway PersistentVolume %s is being deleted and waits for claim %s/%s "
                       "to be released: cancel the jobs that mount it (kubectl describe pvc %s "
                       "-n %s lists them under Used By), delete the claim (kubectl delete pvc %s "
                       "-n %s) and submit again",
                       name, ns, claim, claim, ns, claim, ns);
    const char *phase = field(existing, "status", "phase");
    if (phase && (!strcmp(phase, "Released") || !strcmp(phase, "Failed"))) {
        const json_t *labels = json_object_get(json_object_get(existing, "metadata"), "labels");
        const char *owner = gc_kube_string(labels, GC_LABEL_MANAGED_BY);
        if (!owner || strcmp(owner, GC_MANAGED_BY_TOOLKIT) != 0)
            return gc_fail(err, GC_EXIT_USAGE,
                           "gateway PersistentVolume %s is %s (its claim was deleted) and cannot "
                           "bind again; it is not labelled %s=%s, so gcluster leaves it alone: "
                           "delete it (kubectl delete pv %s) and submit again",
                           name, phase, GC_LABEL_MANAGED_BY, GC_MANAGED_BY_TOOLKIT, name);
        if (dry_run) {
            gc_notice(ev, "gateway PersistentVolume %s is %s: a submit makes it anew", name, phase);
            return 0;
        }
        gc_notice(ev, "making gateway PersistentVolume %s anew: it was %s", name, phase);
        char *path = submit_gateway_path(pv, ns);
        int rc = gc_kube_delete(kube, path, NULL, NULL, err);
        if (rc && err->http_status == 404)
            rc = 0;
        if (!rc)
            rc = wait_until_gone(kube, path, name, err);
        free(path);
        *create = rc == 0;
        return rc;
    }
    const json_t *want = json_object_get(json_object_get(pv, "spec"), "csi");
    const json_t *have = json_object_get(json_object_get(existing, "spec"), "csi");
    if (!json_equal(json_object_get(want, "volumeHandle"), json_object_get(have, "volumeHandle")) ||
        !json_equal(json_object_get(json_object_get(pv, "spec"), "storageClassName"),
                    json_object_get(json_object_get(existing, "spec"), "storageClassName")))
        return gc_fail(err, GC_EXIT_USAGE,
                       "gateway PersistentVolume %s exists with other settings (made by another "
                       "tool or version); the jobs of namespace %s that mount it share it: cancel "
                       "them, then kubectl delete pvc %s -n %s && kubectl delete pv %s, and "
                       "submit again (the bucket's data is not touched: reclaimPolicy Retain)",
                       name, ns, claim, ns, name);
    gc_notice(ev, "reusing gateway PersistentVolume %s", name);
    return 0;
}

/* One gateway object as the first round read it: to be created (absent), settled (a volume) or
 * reused (a claim). */
static int settle(gc_kube *kube, const json_t *object, const fact_read *read, const char *ns,
                  bool dry_run, bool *create, const gc_events *ev, gc_error *err)
{
    *create = read->rc && read->err.http_status == 404;
    if (read->rc && !*create) {
        *err = read->err;
        return read->rc;
    }
    if (*create)
        return 0;
    if (is_volume(object))
        return settle_volume(kube, object, read->value, ns, dry_run, create, ev, err);
    const char *name = name_of(object);
    if (field(read->value, "metadata", "deletionTimestamp"))
        return gc_fail(err, GC_EXIT_USAGE,
                       "gateway claim %s/%s is being deleted (a job that mounts it is still "
                       "ending); wait for it to go (kubectl get pvc %s -n %s) and submit again",
                       ns, name, name, ns);
    gc_notice(ev, "reusing gateway claim %s", name);
    return 0;
}

int submit_gateways_settle(gc_kube *kube, const gc_submit_plan *plan, const cluster_facts *f,
                           bool dry_run, const gc_events *ev, json_t *missing, gc_error *err)
{
    const char *ns = gc_kube_namespace(kube);
    size_t i;
    const json_t *object;
    json_array_foreach(plan->gateways, i, object)
    {
        bool create = false;
        int rc = i < f->gateway_count
                     ? settle(kube, object, &f->gateways[i], ns, dry_run, &create, ev, err)
                     : 0;
        if (rc) {
            gc_error_prefix(err, "--mount profile=: ");
            return rc;
        }
        if (create)
            json_array_append(missing, (json_t *)object);
    }
    return 0;
}

/* Another submit may make the same gateway meanwhile: the same name is the same gateway. */
static bool made_meanwhile(const gc_error *err)
{
    return err->http_status == 409;
}

int submit_gateway_dry_run_failure(const json_t *gateway, gc_error *err)
{
    if (made_meanwhile(err)) {
        gc_error_clear(err);
        return 0;
    }
    if (err->http_status == 403 || err->http_status == 404)
        gc_error_prefix(err, "--mount profile=: ");
    else
        gc_error_prefix(err,
                        "--mount profile=: the API server refused gateway %s %s (found by a "
                        "server-side dry run; nothing was created): ",
                        kind_word(gateway), name_of(gateway));
    return err->code ? err->code : GC_EXIT_RUNTIME;
}

int submit_gateways_created(const json_t *missing, gc_kube_create_request *creates, const char *job,
                            bool job_created, const gc_events *ev, gc_error *err)
{
    int rc = 0;
    size_t i;
    const json_t *object;
    json_array_foreach(missing, i, object)
    {
        gc_kube_create_request *c = &creates[i];
        if (!c->rc)
            gc_notice(ev, "created gateway %s %s", kind_word(object), name_of(object));
        if (!c->rc || made_meanwhile(&c->err) || rc)
            continue;
        *err = c->err;
        rc = err->code ? err->code : GC_EXIT_RUNTIME;
        if (err->http_status == 403 || err->http_status == 404)
            gc_error_prefix(err, "--mount profile=: ");
        else
            gc_error_prefix(err,
                            "--mount profile=: gateway %s %s was not created: ", kind_word(object),
                            name_of(object));
        size_t len = strlen(err->message);
        if (job_created)
            snprintf(err->message + len, sizeof(err->message) - len,
                     "; JobSet %s was created and its pods wait for the gateway: cancel it "
                     "(gcluster job cancel %s), fix the cause and submit again",
                     job, job);
        else
            snprintf(err->message + len, sizeof(err->message) - len,
                     "; JobSet %s was not created either: fix the cause and submit again", job);
    }
    return rc;
}
