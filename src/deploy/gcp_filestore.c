/*
 * Filestore: the filestore module's instance (a Google Cloud step) and the gke-persistent-volume
 * module's PersistentVolume and PersistentVolumeClaim over it (Kubernetes objects, applied with
 * the others), as Cluster Toolkit's modules make them:
 *   the instance   `name`, else "<deployment>-<8 hexadecimal digits>" (Terraform's random 4
 *                  bytes; here deploy_gcp_suffix's stable ones); in `region` for the ENTERPRISE
 *                  and REGIONAL tiers, else in `zone`; tier BASIC_SSD, one share
 *                  filestore_share_name ("nfsshare") of size_gb (2560) GB, on the network of
 *                  the vpc module it uses (network_id's name; the whole id when the network is in
 *                  another project), connect_mode DIRECT_PEERING, the module's labels
 *   the volume     "<instance>-pv" / "<instance>-pvc" unless pv_name / pvc_name, capacity_gib
 *                  else the instance's size, the Filestore CSI driver's volume handle
 *                  "modeInstance/<location>/<instance>/<share>", the NFS server the instance's IP
 * The IP address exists only once the instance does, so the volume carries a placeholder until
 * deploy_filestore_addresses reads the address with a describe, just before the objects are
 * applied.
 */
#include "deploy/gcp.h"

#include "gcluster/process.h"

#include <stdlib.h>
#include <string.h>

#define FILESTORE_DRIVER     "filestore.csi.storage.gke.io"
#define FILESTORE_IP_FORMAT  "value(networks[0].ipAddresses[0])"
#define FILESTORE_CHECK_MS   (3 * 60 * 1000)
#define FILESTORE_OUTPUT_MAX (1u << 16)
#define PLACEHOLDER_PREFIX   "(the IP address of Filestore instance "

typedef struct instance {
    char *name;
    const char *location;
    const char *share;
    long size_gb;
} instance;

static char *instance_name(const planner *p, const gc_bp_module *m)
{
    const char *name = json_string_value(json_object_get(m->settings, "name"));
    if (name && !deploy_gcp_unknown(m, "name"))
        return gc_xstrdup(name);
    char suffix[9];
    deploy_gcp_suffix(p, m, suffix);
    return gc_xasprintf("%s-%s", p->deployment ? p->deployment : "", suffix);
}

static bool regional_tier(const char *tier)
{
    return !strcmp(tier, "ENTERPRISE") || !strcmp(tier, "REGIONAL");
}

/* The instance as the module names and places it; false (err set) when its place is unknown. */
static bool instance_of(planner *p, const gc_bp_module *m, instance *out)
{
    const char *tier = deploy_gcp_string(p, m, "filestore_tier", "BASIC_SSD");
    bool regional = regional_tier(tier);
    out->location = regional ? deploy_gcp_string(p, m, "region", p->region)
                             : deploy_gcp_string(p, m, "zone", NULL);
    if (!out->location) {
        if (p->err)
            deploy_gcp_missing(p, m, regional ? "region" : "zone",
                               regional ? "us-central1" : "us-central1-a");
        return false;
    }
    out->name = instance_name(p, m);
    out->share = deploy_gcp_string(p, m, "filestore_share_name", "nfsshare");
    out->size_gb = deploy_gcp_long(p, m, "size_gb", 2560);
    return true;
}

/* --network's name: network_id's network when set (the whole id when it is another project's),
 * else the network of the vpc module the module uses. */
static char *network_of(planner *p, const gc_bp_module *m)
{
    const char *id = json_string_value(json_object_get(m->settings, "network_id"));
    if (id && !deploy_gcp_unknown(m, "network_id")) {
        char *copy = gc_xstrdup(id);
        char *part[5] = {0};
        size_t n = 0;
        for (char *save, *w = strtok_r(copy, "/", &save); w && n < 5;
             w = strtok_r(NULL, "/", &save))
            part[n++] = w;
        char *out = NULL;
        if (n == 5)
            out = gc_xstrdup(strcmp(part[1], p->project) ? id : part[4]);
        free(copy);
        return out;
    }
    const gc_bp_module *vpc = deploy_gcp_used(p->bp, m, SOURCE_VPC);
    return vpc ? deploy_gcp_network_name(p, vpc) : NULL;
}

static int plan_filestore(planner *p, const gc_bp_module *m)
{
    instance in;
    if (!instance_of(p, m, &in))
        return GC_EXIT_USAGE;
    char *network = network_of(p, m);
    if (!network) {
        free(in.name);
        return deploy_gcp_missing(p, m, "network_id",
                                  "projects/MY-PROJECT/global/networks/MY-NETWORK");
    }
    gcp_ref ref = {.kind = GC_CLOUD_FILESTORE, .name = in.name, .region = in.location};
    gc_cloud_step *s = deploy_gcp_step(p, GC_CLOUD_FILESTORE, in.name, m);
    /* present: is the share the blueprint's size? (gcloud grows it in place; the tier and the
     * network are fixed at create) */
    deploy_argv c = deploy_gcp_command(p, &ref, "describe");
    deploy_argv_flag(&c, "format", "value(fileShares[0].capacityGb)");
    s->check = c.items;
    s->expect = gc_xasprintf("%ld", in.size_gb);
    char *share = gc_xasprintf("name=%s,capacity=%ldGB", in.share, in.size_gb);
    deploy_argv u = deploy_gcp_command(p, &ref, "update");
    deploy_argv_flag(&u, "file-share", share);
    s->update = u.items;

    deploy_argv b = deploy_gcp_command(p, &ref, "create");
    deploy_argv_flag(&b, "tier", deploy_gcp_string(p, m, "filestore_tier", "BASIC_SSD"));
    deploy_argv_flag(&b, "file-share", share);
    const char *mode = deploy_gcp_string(p, m, "connect_mode", "DIRECT_PEERING");
    const char *reserved = deploy_gcp_string(p, m, "reserved_ip_range", NULL);
    char *net = gc_xasprintf("name=%s,connect-mode=%s%s%s", network, mode,
                             reserved ? ",reserved-ip-range=" : "", reserved ? reserved : "");
    deploy_argv_flag(&b, "network", net);
    free(net);
    const char *protocol = deploy_gcp_string(p, m, "protocol", "NFS_V3");
    if (strcmp(protocol, "NFS_V3"))
        deploy_argv_flag(&b, "protocol", protocol);
    const char *description = deploy_gcp_string(p, m, "description", "");
    if (*description)
        deploy_argv_flag(&b, "description", description);
    char *labels = deploy_gcp_labels(p, m, "filestore", "file-system");
    deploy_argv_flag(&b, "labels", labels);
    free(labels);
    const json_t *protection = deploy_gcp_setting(p, m, "deletion_protection");
    if (json_is_true(json_object_get(protection, "enabled"))) {
        deploy_argv_words(&b, "--deletion-protection", NULL);
        const char *reason = json_string_value(json_object_get(protection, "reason"));
        if (reason)
            deploy_argv_flag(&b, "deletion-protection-reason", reason);
    }
    s->create = b.items;
    if (json_array_size(deploy_gcp_setting(p, m, "nfs_export_options")))
        deploy_gcp_note(p, m,
                        "nfs_export_options: gcloud takes them only from a file; write the file "
                        "share with its nfs-export-options as a flags file and run gcloud "
                        "filestore instances update %s --project=%s --location=%s "
                        "--flags-file=FILE",
                        in.name, p->project, in.location);
    free(share);
    free(network);
    free(in.name);
    return 0;
}

int deploy_gcp_plan_filestores(planner *p)
{
    for (size_t i = 0; i < p->bp->module_count; i++) {
        const gc_bp_module *m = &p->bp->modules[i];
        int rc = 0;
        if (deploy_gcp_source_is(m, SOURCE_FILESTORE))
            rc = plan_filestore(p, m);
        else if (deploy_gcp_source_is(m, SOURCE_PERSISTENT_VOLUME) &&
                 deploy_gcp_used(p->bp, m, SOURCE_FILESTORE)) {
            /* say what the plan cannot know: the volume's NFS server */
            planner q = *p;
            q.err = NULL;
            instance in;
            if (instance_of(&q, deploy_gcp_used(p->bp, m, SOURCE_FILESTORE), &in)) {
                deploy_gcp_note(p, m,
                                "the PersistentVolume's NFS server is the IP address of Filestore "
                                "instance %s, known only once it exists: read when applying with "
                                "gcloud filestore instances describe %s --project=%s "
                                "--location=%s --format='" FILESTORE_IP_FORMAT "'",
                                in.name, in.name, p->project, in.location);
                free(in.name);
            }
        }
        if (rc)
            return rc;
    }
    return 0;
}

void deploy_gcp_filestore_volume(const planner *p, const gc_bp_module *m, json_t *objects)
{
    const gc_bp_module *fs = deploy_gcp_used(p->bp, m, SOURCE_FILESTORE);
    instance in;
    planner q = *p;
    q.err = NULL;
    if (!fs || !instance_of(&q, fs, &in))
        return;
    long gib = deploy_gcp_long(p, m, "capacity_gib", in.size_gb);
    char *handle = gc_xasprintf("modeInstance/%s/%s/%s", in.location, in.name, in.share);
    char *ip = gc_xasprintf(PLACEHOLDER_PREFIX "%s, read when applying)", in.name);
    json_t *source =
        json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}}", "persistentVolumeReclaimPolicy",
                  "Retain", "volumeMode", "Filesystem", "csi", "driver", FILESTORE_DRIVER,
                  "volumeHandle", handle, "volumeAttributes", "ip", ip, "volume", in.share);
    deploy_gcp_volume_objects(p, m, in.name, gib, "", source, true, objects);
    free(ip);
    free(handle);
    free(in.name);
}

/* One Filestore volume's NFS server, from its instance's describe. */
static int read_address(const planner *p, const char *gcloud, json_t *attributes,
                        const char *handle, bool must, gc_error *err)
{
    /* modeInstance/LOCATION/NAME/SHARE */
    char *copy = gc_xstrdup(handle);
    char *part[4] = {0};
    size_t n = 0;
    for (char *save, *w = strtok_r(copy, "/", &save); w && n < 4; w = strtok_r(NULL, "/", &save))
        part[n++] = w;
    int rc = 0;
    if (n == 4 && gcloud) {
        gcp_ref ref = {.kind = GC_CLOUD_FILESTORE, .name = part[2], .region = part[1]};
        deploy_argv d = deploy_gcp_command(p, &ref, "describe");
        deploy_argv_flag(&d, "format", FILESTORE_IP_FORMAT);
        gc_process run = {.program = gcloud,
                          .argv = d.items,
                          .timeout_ms = FILESTORE_CHECK_MS,
                          .max_stdout = FILESTORE_OUTPUT_MAX,
                          .max_stderr = FILESTORE_OUTPUT_MAX};
        gc_process_result r;
        rc = gc_process_run(&run, &r, err);
        if (!rc) {
            const char *out = r.out.data ? r.out.data : "";
            size_t len = strcspn(out, " \t\r\n");
            if (gc_process_succeeded(&r) && len) {
                char *ip = gc_xstrndup(out, len);
                json_object_set_new(attributes, "ip", json_string(ip));
                free(ip);
            } else if (must) {
                const char *why = r.err.data ? r.err.data : "";
                rc = gc_fail(err, GC_EXIT_RUNTIME,
                             "the IP address of Filestore instance %s (location %s) could not be "
                             "read (%.*s), so its PersistentVolume was not applied; check the "
                             "instance with gcloud filestore instances describe %s --project=%s "
                             "--location=%s and run gcluster deploy again",
                             part[2], part[1], (int)strcspn(why, "\n"), why, part[2], p->project,
                             part[1]);
            }
            gc_process_result_free(&r);
        }
        deploy_argv_free(d.items);
    } else if (must) {
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "the IP address of the Filestore instance of volume %s cannot be read "
                     "without gcloud; install the Google Cloud CLI and run gcluster deploy again",
                     handle);
    }
    free(copy);
    return rc;
}

int deploy_filestore_addresses(const gc_blueprint *bp, const gc_cloud_target *t, const char *gcloud,
                               json_t *objects, bool must, gc_error *err)
{
    planner p = {0};
    deploy_gcp_planner_init(&p, bp, t);
    size_t i;
    json_t *obj;
    json_array_foreach(objects, i, obj)
    {
        const char *kind = json_string_value(json_object_get(obj, "kind"));
        json_t *csi = json_object_get(json_object_get(obj, "spec"), "csi");
        const char *driver = json_string_value(json_object_get(csi, "driver"));
        json_t *attributes = json_object_get(csi, "volumeAttributes");
        const char *ip = json_string_value(json_object_get(attributes, "ip"));
        if (!kind || strcmp(kind, "PersistentVolume") || !driver ||
            strcmp(driver, FILESTORE_DRIVER) || !ip ||
            strncmp(ip, PLACEHOLDER_PREFIX, strlen(PLACEHOLDER_PREFIX)))
            continue;
        const char *handle = json_string_value(json_object_get(csi, "volumeHandle"));
        int rc = read_address(&p, gcloud, attributes, handle ? handle : "", must, err);
        if (rc)
            return rc;
    }
    return 0;
}
