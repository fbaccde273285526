/*
 * Storage: the cloud-storage-bucket module's buckets (a Google Cloud step each) and the
 * gke-persistent-volume module's gcsfuse PersistentVolume and PersistentVolumeClaim (Kubernetes
 * objects, applied with the others).
 *
 * A bucket is named as the module names it: name_prefix, then the deployment name (unless
 * use_deployment_name_in_bucket_name is false), then with random_suffix 8 hexadecimal digits,
 * joined by '-'. Terraform draws those digits once and keeps them in its state; deploy keeps no
 * state, so its digits are the first 4 bytes of SHA-256("PROJECT/DEPLOYMENT/MODULE_ID") (the
 * blueprint's project_id, also under --project): the same on every rerun and for destroy,
 * different per project, deployment and module, as the module's are (deploy_gcp_suffix; the
 * filestore module's unnamed instance takes the same digits).
 */
#include "deploy/gcp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GCS_DEFAULT_MOUNT "defaults,_netdev,implicit_dirs"

char *deploy_gcp_bucket_name(const planner *p, const gc_bp_module *m)
{
    const char *prefix = deploy_gcp_string(p, m, "name_prefix", "");
    const char *deployment =
        deploy_gcp_bool(p, m, "use_deployment_name_in_bucket_name", true) ? p->deployment : "";
    char suffix[9] = "";
    if (deploy_gcp_bool(p, m, "random_suffix", false))
        deploy_gcp_suffix(p, m, suffix);
    deployment = deployment ? deployment : "";
    const char *first = *prefix && (*deployment || *suffix) ? "-" : "";
    const char *second = *deployment && *suffix ? "-" : "";
    char *name = gc_xasprintf("%s%s%s%s%s", prefix, first, deployment, second, suffix);
    if (!*name) {
        free(name);
        name = gc_xstrdup("no-bucket-name-provided");
    }
    return name;
}

/* The module's settings gcloud takes at create; the rest are listed as not planned. */
static int plan_bucket(planner *p, const gc_bp_module *m)
{
    const char *region = deploy_gcp_string(p, m, "region", p->region);
    if (!region)
        return deploy_gcp_missing(p, m, "region", "us-east5");
    char *name = deploy_gcp_bucket_name(p, m);
    char *url = gc_xasprintf("gs://%s", name);
    gcp_ref ref = {.kind = GC_CLOUD_BUCKET, .name = name};
    gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_BUCKET, name, m);
    s->check = deploy_gcp_describe(p, &ref);
    deploy_argv b = deploy_gcp_command(p, &ref, "create");
    deploy_argv_flag(&b, "location", region);
    deploy_argv_flag(&b, "default-storage-class",
                     deploy_gcp_string(p, m, "storage_class", "REGIONAL"));
    bool uniform = deploy_gcp_bool(p, m, "uniform_bucket_level_access", true);
    deploy_argv_words(
        &b, uniform ? "--uniform-bucket-level-access" : "--no-uniform-bucket-level-access", NULL);
    if (deploy_gcp_bool(p, m, "enable_hierarchical_namespace", false))
        deploy_argv_words(&b, "--enable-hierarchical-namespace", NULL);
    const char *pap = deploy_gcp_string(p, m, "public_access_prevention", NULL);
    if (pap && !strcmp(pap, "enforced"))
        deploy_argv_words(&b, "--public-access-prevention", NULL);
    else if (pap && !strcmp(pap, "inherited"))
        deploy_argv_words(&b, "--no-public-access-prevention", NULL);
    const json_t *zones = deploy_gcp_setting(p, m, "placement_zones");
    if (json_array_size(zones)) {
        char *list = deploy_gcp_join(zones, NULL);
        deploy_argv_flag(&b, "placement", list);
        free(list);
    }
    long soft = deploy_gcp_long(p, m, "soft_delete_retention_duration", -1);
    if (soft >= 0) {
        char *d = gc_xasprintf("%lds", soft);
        deploy_argv_flag(&b, "soft-delete-duration", d);
        free(d);
    }
    long retention = deploy_gcp_long(p, m, "retention_policy_period", -1);
    if (retention >= 0) {
        char *d = gc_xasprintf("%lds", retention);
        deploy_argv_flag(&b, "retention-period", d);
        free(d);
    }
    if (deploy_gcp_bool(p, m, "enable_object_retention", false))
        deploy_argv_words(&b, "--enable-per-object-retention", NULL);
    const json_t *autoclass = deploy_gcp_setting(p, m, "autoclass");
    if (json_is_true(json_object_get(autoclass, "enabled"))) {
        deploy_argv_words(&b, "--enable-autoclass", NULL);
        deploy_argv_flag(&b, "autoclass-terminal-storage-class",
                         json_string_value(json_object_get(autoclass, "terminal_storage_class")));
    }
    s->create = b.items;
    /* gcloud's create takes neither labels nor versioning: they are one update after it, done
     * when describe finds the module's label (the update sets both at once). */
    gc_cloud_step *u = deploy_gcp_step(p, GC_CLOUD_BUCKET_SETTINGS, name, m);
    gcp_ref settings = {.kind = GC_CLOUD_BUCKET_SETTINGS, .name = name};
    deploy_argv d = deploy_gcp_command(p, &settings, "describe");
    deploy_argv_flag(&d, "format", "value(labels.ghpc_module)");
    u->check = d.items;
    u->present_output = gc_xstrdup("cloud-storage-bucket");
    deploy_argv up = deploy_gcp_command(p, &settings, "update");
    char *labels = deploy_gcp_labels(p, m, "cloud-storage-bucket", "file-system");
    deploy_argv_flag(&up, "update-labels", labels);
    free(labels);
    if (deploy_gcp_bool(p, m, "enable_versioning", false))
        deploy_argv_words(&up, "--versioning", NULL);
    u->create = up.items;
    if (json_array_size(deploy_gcp_setting(p, m, "lifecycle_rules")))
        deploy_gcp_note(p, m,
                        "lifecycle_rules: write them as a lifecycle JSON file and run gcloud "
                        "storage buckets update %s --project=%s --lifecycle-file=FILE",
                        url, p->project);
    size_t i;
    const json_t *viewer;
    json_array_foreach(deploy_gcp_setting(p, m, "viewers"), i, viewer) deploy_gcp_note(
        p, m,
        "viewer: gcloud storage buckets add-iam-policy-binding %s --project=%s "
        "--member=%s --role=roles/storage.objectViewer",
        url, p->project, json_string_value(viewer) ? json_string_value(viewer) : "?");
    if (deploy_gcp_setting(p, m, "anywhere_cache"))
        deploy_gcp_note(
            p, m, "anywhere_cache: gcloud storage buckets anywhere-caches create %s ZONE", url);
    free(url);
    free(name);
    return 0;
}

/* What a gke-persistent-volume module mounts from Cloud Storage: gcs_bucket_name as set, else
 * the bucket of the cloud-storage-bucket module it uses (NULL: not a gcsfuse volume). */
static char *volume_bucket(const planner *p, const gc_bp_module *m, const gc_bp_module **bucket)
{
    *bucket = deploy_gcp_used(p->bp, m, SOURCE_BUCKET);
    const char *set = json_string_value(json_object_get(m->settings, "gcs_bucket_name"));
    if (set && !deploy_gcp_unknown(m, "gcs_bucket_name"))
        return gc_xstrdup(set);
    return *bucket ? deploy_gcp_bucket_name(p, *bucket) : NULL;
}

int deploy_gcp_plan_buckets(planner *p)
{
    const gc_blueprint *bp = p->bp;
    for (size_t i = 0; i < bp->module_count; i++) {
        const gc_bp_module *m = &bp->modules[i];
        if (deploy_gcp_source_is(m, SOURCE_BUCKET)) {
            int rc = plan_bucket(p, m);
            if (rc)
                return rc;
        }
        const gc_bp_module *bucket;
        char *name =
            deploy_gcp_source_is(m, SOURCE_PERSISTENT_VOLUME) ? volume_bucket(p, m, &bucket) : NULL;
        bool gcs = name != NULL, sized = deploy_gcp_long(p, m, "capacity_gib", -1) > 0;
        free(name);
        /* the module has no default size: refused before anything runs */
        if (gcs && !sized)
            return deploy_gcp_missing(p, m, "capacity_gib", "1000");
    }
    return 0;
}

/* The mount options the module's gcs-pv template writes: the bucket's, without "defaults" and
 * "_netdev" (fstab words), and without implicit_dirs when a gcsfuse storage class is named. */
static json_t *mount_options(const planner *p, const gc_bp_module *m, const gc_bp_module *bucket,
                             bool storage_class)
{
    const json_t *storage = deploy_gcp_setting(p, m, "network_storage");
    const char *text = json_string_value(json_object_get(storage, "mount_options"));
    if (!text && bucket)
        text = deploy_gcp_string(p, bucket, "mount_options", GCS_DEFAULT_MOUNT);
    if (!text)
        text = GCS_DEFAULT_MOUNT;
    json_t *out = json_array();
    char *copy = gc_xstrdup(text);
    for (char *save, *o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save))
        if (strcmp(o, "defaults") && strcmp(o, "_netdev") &&
            !(storage_class && !strcmp(o, "implicit_dirs")))
            json_array_append_new(out, json_string(o));
    free(copy);
    return out;
}

/* A gcsfuse module's objects, as its templates gcs-pv.yaml.tftpl and gcs-pvc.yaml.tftpl render
 * them. The PVC template's spec.claimRef is not a PersistentVolumeClaim field (the API server
 * drops or refuses it), so it is left out; the claim binds through volumeName. */
static void volume_objects(const planner *p, const gc_bp_module *m, json_t *objects)
{
    const gc_bp_module *bucket;
    char *name = volume_bucket(p, m, &bucket);
    long gib = deploy_gcp_long(p, m, "capacity_gib", -1);
    if (!name || gib <= 0) {
        free(name);
        return;
    }
    const char *sc = deploy_gcp_string(p, m, "gcsfuse_storage_class_name", "");
    json_t *source = json_object();
    json_t *options = mount_options(p, m, bucket, *sc != '\0');
    if (json_array_size(options))
        json_object_set(source, "mountOptions", options);
    json_decref(options);
    json_object_set_new(
        source, "csi",
        json_pack("{s:s, s:s}", "driver", "gcsfuse.csi.storage.gke.io", "volumeHandle", name));
    deploy_gcp_volume_objects(p, m, name, gib, sc, source, false, objects);
    free(name);
}

void deploy_storage_objects(const gc_blueprint *bp, json_t *objects)
{
    planner p = {0};
    deploy_gcp_planner_init(&p, bp, NULL);
    for (size_t i = 0; i < bp->module_count; i++)
        if (deploy_gcp_source_is(&bp->modules[i], SOURCE_PERSISTENT_VOLUME)) {
            volume_objects(&p, &bp->modules[i], objects);
            deploy_gcp_filestore_volume(&p, &bp->modules[i], objects);
        }
}

bool deploy_storage_handles(const gc_blueprint *bp, const char *module_id)
{
    const gc_bp_module *m = deploy_blueprint_module(bp, module_id);
    if (deploy_gcp_source_is(m, SOURCE_BUCKET) || deploy_gcp_source_is(m, SOURCE_FILESTORE))
        return true;
    if (!deploy_gcp_source_is(m, SOURCE_PERSISTENT_VOLUME))
        return false;
    if (deploy_gcp_used(bp, m, SOURCE_FILESTORE))
        return true;
    planner p = {0};
    deploy_gcp_planner_init(&p, bp, NULL);
    const gc_bp_module *bucket;
    char *name = volume_bucket(&p, m, &bucket);
    bool gcs = name != NULL;
    free(name);
    return gcs;
}
