/*
 * deploy and destroy of Cluster Toolkit's filestore module and the gke-persistent-volume module
 * over it, for the toolkit's own examples (storage-gke, xpk-n2-filestore): the instance's step
 * (name, tier, share, network, location, labels), its place in deploy's and destroy's order, the
 * PersistentVolume and claim, the NFS server read once the instance exists, and a rerun. gcloud
 * is a shell script standing in for it: one file per resource that exists (a Filestore
 * instance's holds its share's size), every call recorded.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deploy/internal.h"
#include "gcluster/deploy.h"
#include "kube_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EXAMPLES GCLUSTER_SOURCE_DIR "/tests/fixtures/cluster-toolkit"
#define STORAGE  EXAMPLES "/examples/storage-gke.yaml"
#define XPK      EXAMPLES "/community/examples/xpk-n2-filestore/xpk-n2-filestore.yaml"
/* the first 8 hexadecimal digits of SHA-256("p/d/filestore") */
#define INSTANCE "d-00bc7ece"
#define ADDRESS  "10.20.30.2"

static char *tmp;
static char *gcloud;
static char *state;
static char *calls;

static const char fake[] =
    "#!/bin/sh\n"
    "echo \"$*\" >> '%s'\n"
    "verb=; name=; size=\n"
    "for a in \"$@\"; do\n"
    "  case \"$a\" in --file-share=*capacity=*) size=${a##*capacity=}; size=${size%%%%GB*};; "
    "esac\n"
    "  case \"$a\" in --*) continue;; esac\n"
    "  if [ -n \"$verb\" ] && [ -z \"$name\" ]; then name=$a; fi\n"
    "  case \"$a\" in describe|create|delete|update|add-iam-policy-binding|get-iam-policy) "
    "[ -z \"$verb\" ] && verb=$a;; esac\n"
    "done\n"
    "name=${name%%%%@*}; name=${name#gs://}\n"
    "f='%s'/$name\n"
    "case $verb in\n"
    "describe) [ -e \"$f\" ] || { echo \"ERROR: (gcloud) NOT_FOUND: $name was not found\" >&2; "
    "exit 1; }\n"
    "  case \"$*\" in *ipAddresses*) echo " ADDRESS ";; *capacityGb*) cat \"$f\";; "
    "*) echo \"$name\";; esac; exit 0;;\n"
    "create|update) echo \"$size\" > \"$f\"; exit 0;;\n"
    "delete) rm -f \"$f\"; exit 0;;\n"
    "*) exit 0;;\n"
    "esac\n";

static int setup(void **st)
{
    (void)st;
    tmp = kube_test_tmpdir();
    state = gc_xasprintf("%s/state", tmp);
    mkdir(state, 0755);
    calls = gc_xasprintf("%s/calls", tmp);
    gcloud = gc_xasprintf("%s/gcloud", tmp);
    kube_test_write(gcloud, fake, calls, state);
    chmod(gcloud, 0755);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    free(gcloud);
    free(state);
    free(calls);
    kube_test_rmtree(tmp);
    return 0;
}

static int fresh(void **st)
{
    (void)st;
    char *cmd = gc_xasprintf("rm -f '%s'/* '%s'", state, calls);
    int rc = system(cmd);
    free(cmd);
    return rc;
}

static void load(const char *path, gc_blueprint *bp, gc_cloud_plan *plan)
{
    static const char *const vars[] = {"project_id=p", "deployment_name=d",
                                       "authorized_cidr=10.0.0.0/8"};
    gc_error err = {0};
    if (deploy_blueprint_load(path, vars, 3, bp, &err))
        fail_msg("%s", err.message);
    if (deploy_cloud_plan_build(bp, &(gc_cloud_target){0}, plan, &err))
        fail_msg("%s", err.message);
}

static size_t step_index(const gc_cloud_plan *plan, gc_cloud_step_kind kind, const char *name)
{
    for (size_t i = 0; i < plan->count; i++)
        if (plan->steps[i].kind == kind && !strcmp(plan->steps[i].name, name))
            return i;
    fail_msg("no %s step %s", gc_cloud_step_kind_name(kind), name);
    return 0;
}

static size_t first_of(const gc_cloud_plan *plan, gc_cloud_step_kind kind)
{
    for (size_t i = 0; i < plan->count; i++)
        if (plan->steps[i].kind == kind)
            return i;
    fail_msg("no %s step", gc_cloud_step_kind_name(kind));
    return 0;
}

static void assert_line(char **argv, const char *want)
{
    char *line = deploy_argv_shell_line(argv);
    assert_string_equal(line, want);
    free(line);
}

static void run(const gc_cloud_plan *plan, bool apply, gc_cloud_report *report, int want_rc)
{
    gc_error err = {0};
    int rc = deploy_cloud_run(plan, gcloud, apply, NULL, report, &err);
    if (rc != want_rc)
        fail_msg("deploy_cloud_run returned %d (wanted %d): %s", rc, want_rc, err.message);
}

/* The filestore calls the fake saw that change something, one per line. */
static char *filestore_changes(void)
{
    char *all = kube_test_read(calls);
    gc_buf out;
    gc_buf_init(&out);
    for (char *save, *line = strtok_r(all ? all : (char[]){""}, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save))
        if (!strncmp(line, "filestore ", 10) && !strstr(line, " describe "))
            gc_buf_printf(&out, "%s\n", line);
    free(all);
    char *text = gc_buf_detach(&out);
    return text ? text : gc_xstrdup("");
}

/* storage-gke: the instance "<deployment>-<digits>" in the blueprint's zone with the module's
 * defaults, after the buckets and before the cluster; the plan says the volume's server is read
 * once the instance exists; the module is no longer "not handled". */
static void storage_gke_plans_the_instance(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan plan;
    load(STORAGE, &bp, &plan);
    size_t fs = step_index(&plan, GC_CLOUD_FILESTORE, INSTANCE);
    assert_string_equal(plan.steps[fs].module_id, "filestore");
    assert_true(first_of(&plan, GC_CLOUD_BUCKET) < fs);
    assert_true(fs < first_of(&plan, GC_CLOUD_CLUSTER));
    assert_line(plan.steps[fs].create,
                "gcloud filestore instances create " INSTANCE " --project=p "
                "--location=us-central1-b --tier=BASIC_SSD "
                "--file-share=name=nfsshare,capacity=2560GB "
                "--network=name=d-net,connect-mode=DIRECT_PEERING "
                "--labels=ghpc_blueprint=storage-gke,ghpc_deployment=d,ghpc_module=filestore,"
                "ghpc_role=file-system");
    assert_line(plan.steps[fs].check,
                "gcloud filestore instances describe " INSTANCE " --project=p "
                "--location=us-central1-b '--format=value(fileShares[0].capacityGb)'");
    assert_string_equal(plan.steps[fs].expect, "2560");
    assert_line(plan.steps[fs].update,
                "gcloud filestore instances update " INSTANCE " --project=p "
                "--location=us-central1-b --file-share=name=nfsshare,capacity=2560GB");
    bool said = false;
    for (size_t i = 0; i < plan.notes.count; i++)
        said = said ||
               !strcmp(plan.notes.items[i],
                       "module shared-filestore-pv: the PersistentVolume's NFS server is the IP "
                       "address of Filestore instance " INSTANCE ", known only once it exists: "
                       "read when applying with gcloud filestore instances describe " INSTANCE
                       " --project=p --location=us-central1-b "
                       "--format='value(networks[0].ipAddresses[0])'");
    assert_true(said);
    assert_true(deploy_cloud_handles("modules/file-system/filestore"));
    assert_true(deploy_storage_handles(&bp, "filestore"));
    assert_true(deploy_storage_handles(&bp, "shared-filestore-pv"));
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

/* xpk-n2-filestore: the instance named by the blueprint, in filestore_zone. */
static void xpk_plans_the_named_instance(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan plan;
    load(XPK, &bp, &plan);
    size_t fs = step_index(&plan, GC_CLOUD_FILESTORE, "d-homefs");
    assert_true(step_index(&plan, GC_CLOUD_NETWORK, "d-net") < fs);
    assert_true(fs < first_of(&plan, GC_CLOUD_CLUSTER));
    assert_line(plan.steps[fs].create,
                "gcloud filestore instances create d-homefs --project=p "
                "--location=us-central1-a --tier=BASIC_SSD "
                "--file-share=name=nfsshare,capacity=2560GB "
                "--network=name=d-net,connect-mode=DIRECT_PEERING "
                "--labels=ghpc_blueprint=xpk-n2,ghpc_deployment=d,ghpc_module=filestore,"
                "ghpc_role=file-system");
    assert_true(deploy_storage_handles(&bp, "homefs"));
    /* no gke-persistent-volume over it: no volume */
    json_t *objects = json_array();
    deploy_storage_objects(&bp, objects);
    assert_int_equal(json_array_size(objects), 0);
    json_decref(objects);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

/* The volume and claim as the module's filestore-pv and filestore-pvc templates render them,
 * the server a placeholder until the instance exists; then its address. */
static void volume_gets_the_address_once_the_instance_exists(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan plan;
    load(STORAGE, &bp, &plan);
    json_t *objects = json_array();
    deploy_storage_objects(&bp, objects);
    json_t *pv = NULL, *pvc = NULL;
    size_t i;
    json_t *obj;
    json_array_foreach(objects, i, obj)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
        if (!strcmp(name, INSTANCE "-pv"))
            pv = obj;
        if (!strcmp(name, INSTANCE "-pvc"))
            pvc = obj;
    }
    assert_non_null(pv);
    assert_non_null(pvc);
    json_t *labels =
        json_pack("{s:s, s:s, s:s, s:s}", "ghpc_blueprint", "storage-gke", "ghpc_deployment", "d",
                  "ghpc_module", "gke-persistent-volume", "ghpc_role", "file-system");
    json_t *want_pv = json_pack(
        "{s:s, s:s, s:{s:s, s:O}, s:{s:s, s:{s:s}, s:[s], s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}}, "
        "s:{s:s, s:s}}}",
        "apiVersion", "v1", "kind", "PersistentVolume", "metadata", "name", INSTANCE "-pv",
        "labels", labels, "spec", "storageClassName", "", "capacity", "storage", "2560Gi",
        "accessModes", "ReadWriteMany", "persistentVolumeReclaimPolicy", "Retain", "volumeMode",
        "Filesystem", "csi", "driver", "filestore.csi.storage.gke.io", "volumeHandle",
        "modeInstance/us-central1-b/" INSTANCE "/nfsshare", "volumeAttributes", "ip",
        "(the IP address of Filestore instance " INSTANCE ", read when applying)", "volume",
        "nfsshare", "claimRef", "name", INSTANCE "-pvc", "namespace", "default");
    assert_true(json_equal(pv, want_pv));
    json_t *want_pvc = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:O}, s:{s:[s], s:s, s:s, s:{s:{s:s}}}}", "apiVersion", "v1",
        "kind", "PersistentVolumeClaim", "metadata", "name", INSTANCE "-pvc", "namespace",
        "default", "labels", labels, "spec", "accessModes", "ReadWriteMany", "storageClassName", "",
        "volumeName", INSTANCE "-pv", "resources", "requests", "storage", "2560Gi");
    assert_true(json_equal(pvc, want_pvc));

    /* before the instance exists: kept under --plan, an error when applying */
    gc_error err = {0};
    assert_int_equal(deploy_filestore_addresses(&bp, NULL, gcloud, objects, false, &err), 0);
    assert_true(json_equal(pv, want_pv));
    assert_int_equal(deploy_filestore_addresses(&bp, NULL, gcloud, objects, true, &err),
                     GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "the IP address of Filestore instance " INSTANCE
                                        " (location us-central1-b) could not be read"));
    assert_non_null(strstr(err.message, "run gcluster deploy again"));

    gc_cloud_report report;
    run(&plan, true, &report, 0);
    deploy_cloud_report_free(&report);
    memset(&err, 0, sizeof(err));
    assert_int_equal(deploy_filestore_addresses(&bp, NULL, gcloud, objects, true, &err), 0);
    json_object_set_new(json_object_get(json_object_get(json_object_get(want_pv, "spec"), "csi"),
                                        "volumeAttributes"),
                        "ip", json_string(ADDRESS));
    assert_true(json_equal(pv, want_pv));
    json_decref(want_pv);
    json_decref(want_pvc);
    json_decref(labels);
    json_decref(objects);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

/* Created once; a rerun changes nothing; a share of another size is reported, then grown. */
static void apply_creates_resumes_and_repairs_the_size(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan plan;
    load(STORAGE, &bp, &plan);
    size_t fs = step_index(&plan, GC_CLOUD_FILESTORE, INSTANCE);
    gc_cloud_report report;
    run(&plan, false, &report, 0);
    assert_int_equal(report.outcomes[fs].state, GC_CLOUD_MISSING);
    deploy_cloud_report_free(&report);
    char *got = filestore_changes();
    assert_string_equal(got, "");
    free(got);

    run(&plan, true, &report, 0);
    assert_int_equal(report.outcomes[fs].state, GC_CLOUD_CREATED);
    deploy_cloud_report_free(&report);
    got = filestore_changes();
    assert_string_equal(got, "filestore instances create " INSTANCE " --project=p "
                             "--location=us-central1-b --tier=BASIC_SSD "
                             "--file-share=name=nfsshare,capacity=2560GB "
                             "--network=name=d-net,connect-mode=DIRECT_PEERING "
                             "--labels=ghpc_blueprint=storage-gke,ghpc_deployment=d,"
                             "ghpc_module=filestore,ghpc_role=file-system\n");
    free(got);

    remove(calls);
    run(&plan, true, &report, 0);
    assert_int_equal(report.outcomes[fs].state, GC_CLOUD_PRESENT);
    deploy_cloud_report_free(&report);
    got = filestore_changes();
    assert_string_equal(got, "");
    free(got);

    char *path = gc_xasprintf("%s/%s", state, INSTANCE);
    kube_test_write(path, "1024\n");
    free(path);
    run(&plan, false, &report, 0);
    assert_int_equal(report.outcomes[fs].state, GC_CLOUD_DIFFERS);
    assert_string_equal(report.outcomes[fs].detail, "it has 1024 where the blueprint gives 2560");
    deploy_cloud_report_free(&report);
    remove(calls);
    run(&plan, true, &report, 0);
    assert_int_equal(report.outcomes[fs].state, GC_CLOUD_UPDATED);
    deploy_cloud_report_free(&report);
    got = filestore_changes();
    assert_string_equal(got, "filestore instances update " INSTANCE " --project=p "
                             "--location=us-central1-b "
                             "--file-share=name=nfsshare,capacity=2560GB\n");
    free(got);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

/* destroy: the claim, then the volume (before any cloud step), and the instance after the
 * cluster it served, in its own location; gone, it is skipped on a rerun. */
static void destroy_deletes_the_volume_then_the_instance(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan plan, destroy;
    load(STORAGE, &bp, &plan);
    gc_error err = {0};
    if (deploy_destroy_plan_build(&bp, &(gc_cloud_target){0}, &destroy, &err))
        fail_msg("%s", err.message);
    size_t fs = step_index(&destroy, GC_CLOUD_FILESTORE, INSTANCE);
    assert_true(first_of(&destroy, GC_CLOUD_CLUSTER) < fs);
    assert_true(fs < first_of(&destroy, GC_CLOUD_NETWORK));
    assert_line(destroy.steps[fs].create, "gcloud filestore instances delete " INSTANCE
                                          " --project=p --location=us-central1-b --quiet");
    assert_line(destroy.steps[fs].check, "gcloud filestore instances describe " INSTANCE
                                         " --project=p --location=us-central1-b "
                                         "'--format=value(name)'");
    gc_destroy_object *objects;
    size_t count;
    assert_int_equal(deploy_destroy_objects(NULL, &bp, false, &objects, &count, &err), 0);
    assert_int_equal(count, 4);
    assert_string_equal(objects[0].label, "persistentvolumeclaim/" INSTANCE "-pvc");
    assert_string_equal(objects[1].label, "persistentvolume/" INSTANCE "-pv");
    deploy_destroy_objects_free(objects, count);

    gc_cloud_report report;
    run(&plan, true, &report, 0);
    deploy_cloud_report_free(&report);
    remove(calls);
    run(&destroy, true, &report, 0);
    assert_int_equal(report.outcomes[fs].state, GC_CLOUD_CREATED); /* deleted */
    deploy_cloud_report_free(&report);
    char *got = filestore_changes();
    assert_string_equal(got, "filestore instances delete " INSTANCE
                             " --project=p --location=us-central1-b --quiet\n");
    free(got);
    remove(calls);
    run(&destroy, true, &report, 0);
    assert_int_equal(report.outcomes[fs].state, GC_CLOUD_PRESENT); /* gone already */
    deploy_cloud_report_free(&report);
    got = filestore_changes();
    assert_string_equal(got, "");
    free(got);
    deploy_cloud_plan_free(&destroy);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(storage_gke_plans_the_instance, fresh),
        cmocka_unit_test_setup(xpk_plans_the_named_instance, fresh),
        cmocka_unit_test_setup(volume_gets_the_address_once_the_instance_exists, fresh),
        cmocka_unit_test_setup(apply_creates_resumes_and_repairs_the_size, fresh),
        cmocka_unit_test_setup(destroy_deletes_the_volume_then_the_instance, fresh),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
