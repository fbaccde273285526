/*
 * deploy's Google Cloud plan and its run: what the plan holds for a blueprint with every setting
 * the advanced TPU blueprints use, the order apply creates things in, a rerun after a failure
 * resuming where it stopped, and --plan / --dry-run-out changing nothing (no kubeconfig write,
 * no gcloud create). gcloud is a shell script standing in for it: it keeps one file per resource
 * that exists, answers describe from them as gcloud does (NOT_FOUND, exit 1) and records every
 * call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "deploy/internal.h"
#include "gcluster/deploy.h"
#include "kube_test.h"
#include "run_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FIXTURE GCLUSTER_SOURCE_DIR "/tests/fixtures/deploy/every-setting.yaml"

static char *tmp;
static char *gcloud; /* the fake */
static char *state;  /* its resources, one file each */
static char *calls;  /* every call, one line each */
static char *fail_on;

/* The fake: a call's verb (describe, create, delete, add-iam-policy-binding) and name (the first
 * word after the verb, skipping "workload-policy"). FAIL_ON names a resource whose create fails;
 * NO_ACCOUNT makes every call fail as gcloud does without credentials. */
static const char fake[] =
    "#!/bin/sh\n"
    "echo \"$*\" >> '%s'\n"
    "if [ -e '%s/no-account' ]; then\n"
    "  echo 'ERROR: (gcloud) You do not currently have an active account selected.' >&2; exit 1\n"
    "fi\n"
    /* ESCAPES: gcloud's message carries terminal escape sequences */
    "if [ -e '%s/escapes' ]; then printf 'ERROR: \\033[31mred\\033]0;title\\007\\n' >&2; exit 1; "
    "fi\n"
    /* SLOW: each describe takes a moment and notes how many ran at once */
    "case \"$*\" in *' describe '*) if [ -e '%s/../slow' ]; then\n"
    "  mkdir -p '%s/../running'; touch \"%s/../running/$$\"\n"
    "  ls '%s/../running' | wc -l >> '%s/../peaks'; sleep 0.3; rm -f \"%s/../running/$$\"\n"
    "fi;; esac\n"
    "verb=; name=; router=; setting=; role=; member=\n"
    "for a in \"$@\"; do\n"
    /* IAM bindings: one file per role and member */
    "  case \"$a\" in --role=*) role=${a#--role=};; --member=*) member=${a#--member=};;\n"
    "    --filter=bindings.role=*) f=${a#--filter=bindings.role=}; role=${f%%%% AND *};"
    " member=${a##*bindings.members=};; esac\n"
    "  case \"$a\" in --router=*) router=${a#--router=}-;; esac\n"
    /* a cluster add-on: enabled by update, read back by describe --format */
    "  case \"$a\" in --update-addons=*) x=${a#--update-addons=}; x=${x%%%%=*}\n"
    "    setting=$(printf %%s \"$x\" | cut -c1 | tr A-Z a-z)$(printf %%s \"$x\" | cut -c2-)Config;;"
    " esac\n"
    "  case \"$a\" in --format=value\\(addonsConfig.*) x=${a#--format=value(addonsConfig.}\n"
    "    setting=${x%%%%.*};; esac\n"
    "  case \"$a\" in --*) continue;; esac\n"
    "  if [ -n \"$verb\" ] && [ -z \"$name\" ] && [ \"$a\" != workload-policy ]; then name=$a; fi\n"
    "  case \"$a\" in describe|create|delete|update|add-iam-policy-binding) [ -z \"$verb\" ] && "
    "verb=$a;; esac\n"
    "done\n"
    /* service accounts are described by email, created by name; NATs are per router */
    "name=$router${name%%%%@*}\n"
    /* a bucket is named by its URL */
    "name=${name#gs://}\n"
    "iam=iam-$(printf %%s \"$role-$member\" | tr '/:@.' '____')\n"
    "case \"$*\" in\n"
    "*get-iam-policy*) [ -e \"%s/$iam\" ] && echo \"$role\"; exit 0;;\n"
    "*add-iam-policy-binding*) touch \"%s/$iam\"; exit 0;;\n"
    "*remove-iam-policy-binding*) rm -f \"%s/$iam\"; exit 0;;\n"
    "esac\n"
    /* a bucket's labels: set by update, read back by describe --format */
    "case \"$*\" in *'storage buckets update '*--update-labels=*) touch \"%s/labels-$name\";"
    " exit 0;;\n"
    "  *'storage buckets describe '*'--format=value(labels.ghpc_module)'*) [ -e "
    "\"%s/labels-$name\" ] && echo cloud-storage-bucket; exit 0;;\n"
    "esac\n"
    "case $verb in\n"
    "describe) if [ -n \"$setting\" ]; then [ -e \"%s/$setting\" ] && echo True || echo False;"
    " exit 0; fi\n"
    "  [ -s \"%s/$name\" ] && { cat \"%s/$name\"; exit 0; }\n"
    "  [ -e \"%s/$name\" ] && { echo \"$name\"; exit 0; }\n"
    "  echo \"ERROR: (gcloud) NOT_FOUND: The resource '$name' was not found\" >&2; exit 1;;\n"
    "create) if grep -qx \"$name\" '%s' 2>/dev/null; then echo \"ERROR: quota exceeded for $name\" "
    ">&2; exit 1; fi\n"
    "  echo \"Creating $name...\" >&2; touch \"%s/$name\"\n"
    /* a node pool keeps what its settings check reads: the largest size, else the machine */
    "  case \"$*\" in *'node-pools create'*) v=$(printf '%%s\\n' \"$@\" | sed -n "
    "'s/^--total-max-nodes=//p;s/^--machine-type=//p' | tail -1); echo \"$v\" > \"%s/$name\";; "
    "esac\n"
    "  case \"$*\" in *'clusters create'*) touch '%s/default-pool';; esac; exit 0;;\n"
    "delete) if grep -qx \"$name\" '%s' 2>/dev/null; then echo \"ERROR: $name is in use\" "
    ">&2; exit 1; fi\n"
    "  rm -f \"%s/$name\"; exit 0;;\n"
    "update) case \"$*\" in *'node-pools update'*) printf '%%s\\n' \"$@\" | sed -n "
    "'s/^--total-max-nodes=//p' > \"%s/$name\"; exit 0;; esac\n"
    "  touch \"%s/$setting\"; exit 0;;\n"
    "*) exit 0;;\n"
    "esac\n";

static int setup(void **st)
{
    (void)st;
    tmp = kube_test_tmpdir();
    state = gc_xasprintf("%s/state", tmp);
    mkdir(state, 0755);
    calls = gc_xasprintf("%s/calls", tmp);
    fail_on = gc_xasprintf("%s/fail-on", tmp);
    char *bin = gc_xasprintf("%s/bin", tmp);
    mkdir(bin, 0755);
    gcloud = gc_xasprintf("%s/gcloud", bin);
    kube_test_write(gcloud, fake, calls, state, state, state, state, state, state, state, state,
                    state, state, state, state, state, state, state, state, state, fail_on, state,
                    state, state, fail_on, state, state, state);
    chmod(gcloud, 0755);
    free(bin);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    free(gcloud);
    free(state);
    free(calls);
    free(fail_on);
    kube_test_rmtree(tmp);
    return 0;
}

/* A fresh project: no resources, no calls. */
static int fresh(void **st)
{
    (void)st;
    char *cmd = gc_xasprintf("rm -f '%s'/* '%s' '%s'", state, calls, fail_on);
    int rc = system(cmd);
    free(cmd);
    return rc;
}

static void load(gc_blueprint *bp, gc_cloud_plan *plan)
{
    gc_error err = {0};
    if (deploy_blueprint_load(FIXTURE, NULL, 0, bp, &err))
        fail_msg("%s", err.message);
    if (deploy_cloud_plan_build(bp, &(gc_cloud_target){0}, plan, &err))
        fail_msg("%s", err.message);
}

static size_t step_index(const gc_cloud_plan *plan, gc_cloud_step_kind kind, const char *name)
{
    for (size_t i = 0; i < plan->count; i++)
        if (plan->steps[i].kind == kind && !strcmp(plan->steps[i].name, name))
            return i;
    fail_msg("no %s %s in the plan", gc_cloud_step_kind_name(kind), name);
    return 0;
}

static char *create_line(const gc_cloud_plan *plan, gc_cloud_step_kind kind, const char *name)
{
    return deploy_argv_shell_line(plan->steps[step_index(plan, kind, name)].create);
}

static void assert_has(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle))
        fail_msg("no \"%s\" in:\n%s", needle, haystack);
}

/* The plan: everything the modules create, in the order they depend on each other. */
static void plan_names_everything_in_order(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan plan;
    load(&bp, &plan);
    static const struct {
        gc_cloud_step_kind kind;
        const char *name;
    } order[] = {
        {GC_CLOUD_NETWORK, "ev-set-net-0"},
        {GC_CLOUD_SUBNETWORK, "ev-set-sub-0"},
        {GC_CLOUD_FIREWALL, "ev-set-net-0-fw-allow-iap-ingress"},
        {GC_CLOUD_FIREWALL, "ev-set-net-0-fw-allow-internal-traffic"},
        {GC_CLOUD_FIREWALL, "ev-set-internal-0"},
        {GC_CLOUD_ROUTER, "ev-set-net-0-router"},
        {GC_CLOUD_NAT, "cloud-nat-us-central1"},
        {GC_CLOUD_NETWORK, "ev-set-net-1"},
        {GC_CLOUD_SUBNETWORK, "ev-set-sub-1"},
        {GC_CLOUD_FIREWALL, "ev-set-net-1-fw-allow-iap-ingress"},
        {GC_CLOUD_FIREWALL, "ev-set-net-1-fw-allow-internal-traffic"},
        {GC_CLOUD_ROUTER, "ev-set-net-1-router"},
        {GC_CLOUD_NAT, "cloud-nat-us-central1"},
        {GC_CLOUD_SERVICE_ACCOUNT, "ev-set-gke-np-sa@my-project.iam.gserviceaccount.com"},
        {GC_CLOUD_ROLE_BINDING,
         "ev-set-gke-np-sa@my-project.iam.gserviceaccount.com roles/logging.logWriter"},
        {GC_CLOUD_ROLE_BINDING,
         "ev-set-gke-np-sa@my-project.iam.gserviceaccount.com roles/storage.objectViewer"},
        {GC_CLOUD_SERVICE_ACCOUNT, "ev-set-gke-wl-sa@my-project.iam.gserviceaccount.com"},
        {GC_CLOUD_ROLE_BINDING,
         "ev-set-gke-wl-sa@my-project.iam.gserviceaccount.com roles/container.admin"},
        {GC_CLOUD_CLUSTER, "ev-set"},
        {GC_CLOUD_CLUSTER_ADDON, "LustreCsiDriver"},
        {GC_CLOUD_CLUSTER_ADDON, "HighScaleCheckpointing"},
        {GC_CLOUD_NODE_POOL, "system"},
        {GC_CLOUD_NODE_POOL, "cpu-np"},
        {GC_CLOUD_REMOVE_DEFAULT_POOL, "default-pool"},
        {GC_CLOUD_WORKLOAD_POLICY, "tpu7x-workload-policy"},
        {GC_CLOUD_NODE_POOL, "tpu-7x-pool-0"},
        {GC_CLOUD_NODE_POOL, "tpu-7x-pool-1"},
        {GC_CLOUD_NODE_POOL, "flex-pool"},
        {GC_CLOUD_NODE_POOL, "dws-pool"},
    };
    assert_int_equal(plan.count, sizeof(order) / sizeof(*order));
    for (size_t i = 0; i < plan.count; i++) {
        assert_int_equal(plan.steps[i].kind, order[i].kind);
        assert_string_equal(plan.steps[i].name, order[i].name);
    }

    char *line = create_line(&plan, GC_CLOUD_SUBNETWORK, "ev-set-sub-0");
    assert_has(line, "--range=192.168.0.0/18 --secondary-range=pods=10.4.0.0/14,"
                     "services=10.0.32.0/20 --enable-private-ip-google-access");
    free(line);
    line = create_line(&plan, GC_CLOUD_CLUSTER, "ev-set");
    assert_has(line, "gcloud container clusters create ev-set --project=my-project "
                     "--location=us-central1 --network=ev-set-net-0 --subnetwork=ev-set-sub-0 ");
    assert_has(line, " --release-channel=regular --cluster-version=1.35 "
                     "--workload-pool=my-project.svc.id.goog --enable-shielded-nodes "
                     "--enable-private-nodes --master-ipv4-cidr=172.16.0.32/28 "
                     "--enable-master-authorized-networks "
                     "--master-authorized-networks=10.1.2.3/32 ");
    assert_has(line, " --enable-dataplane-v2 --enable-multi-networking ");
    assert_null(strstr(line, "--enable-private-endpoint")); /* the blueprint turns it off */
    assert_has(line, "--addons=HttpLoadBalancing,HorizontalPodAutoscaling,"
                     "GcePersistentDiskCsiDriver,GcpFilestoreCsiDriver,GcsFuseCsiDriver ");
    free(line);
    /* cpu-np exactly as gke-cluster creates it */
    line = create_line(&plan, GC_CLOUD_NODE_POOL, "cpu-np");
    assert_string_equal(
        line,
        "gcloud container node-pools create cpu-np --project=my-project --cluster=ev-set "
        "--location=us-central1 --machine-type=n4-standard-64 --num-nodes=0 --enable-autoscaling "
        "--total-min-nodes=0 --total-max-nodes=100 --enable-autorepair --enable-autoupgrade "
        "--image-type=COS_CONTAINERD --enable-gvnic --shielded-secure-boot "
        "--shielded-integrity-monitoring --workload-metadata=GKE_METADATA "
        "--metadata=disable-legacy-endpoints=true "
        "--service-account=ev-set-gke-wl-sa@my-project.iam.gserviceaccount.com "
        "--scopes=https://www.googleapis.com/auth/cloud-platform "
        "--labels=ghpc_blueprint=every-setting,ghpc_deployment=ev-set,ghpc_module=gke-cluster,"
        "ghpc_role=scheduler");
    free(line);
    /* the system pool: the blueprint's machine, disk and (no) taints */
    line = create_line(&plan, GC_CLOUD_NODE_POOL, "system");
    assert_has(line, "--machine-type=n2-standard-8 --disk-size=200 ");
    assert_has(line, "--total-min-nodes=2 --total-max-nodes=10 ");
    assert_null(strstr(line, "--node-taints"));
    free(line);
    line = create_line(&plan, GC_CLOUD_WORKLOAD_POLICY, "tpu7x-workload-policy");
    assert_string_equal(line, "gcloud compute resource-policies create workload-policy "
                              "tpu7x-workload-policy --project=my-project --region=us-central1 "
                              "--type=HIGH_THROUGHPUT --accelerator-topology=2x2x2");
    free(line);
    /* the tpu7x pool: the workload policy by `use`, the specific reservation, its own SA */
    line = create_line(&plan, GC_CLOUD_NODE_POOL, "tpu-7x-pool-1");
    assert_has(line, "--node-locations=us-central1-c --machine-type=tpu7x-standard-4t "
                     "--disk-size=100 --disk-type=hyperdisk-balanced --tpu-topology=2x2x2 "
                     "--placement-policy=tpu7x-workload-policy --num-nodes=2 "
                     "--reservation-affinity=specific --reservation=my-reservation "
                     "--enable-autorepair --enable-autoupgrade ");
    assert_has(line, "--service-account=ev-set-gke-np-sa@my-project.iam.gserviceaccount.com ");
    assert_has(line, "ghpc_module=gke-node-pool,ghpc_role=compute "
                     "--additional-node-network=network=ev-set-net-1,subnetwork=ev-set-sub-1");
    free(line);
    /* DWS: flex-start and queued provisioning pools autoscale from zero */
    line = create_line(&plan, GC_CLOUD_NODE_POOL, "flex-pool");
    assert_has(line, "--tpu-topology=4x4 --placement-type=COMPACT --num-nodes=0 "
                     "--enable-autoscaling --total-min-nodes=0 --total-max-nodes=1000 "
                     "--location-policy=ANY --flex-start --no-enable-autorepair "
                     "--no-enable-autoupgrade ");
    free(line);
    line = create_line(&plan, GC_CLOUD_NODE_POOL, "dws-pool");
    assert_has(line, "--enable-queued-provisioning --reservation-affinity=none ");
    assert_has(line, "--node-labels=cloud.google.com/gke-queued=true ");
    free(line);
    /* add-ons `clusters create` cannot take: an update once the cluster exists, as the toolkit
     * enables MTC's */
    line = create_line(&plan, GC_CLOUD_CLUSTER_ADDON, "HighScaleCheckpointing");
    assert_string_equal(line,
                        "gcloud container clusters update ev-set --project=my-project "
                        "--location=us-central1 --update-addons=HighScaleCheckpointing=ENABLED");
    free(line);
    /* what gcloud cannot do is said, not dropped */
    bool maintenance = false;
    for (size_t i = 0; i < plan.notes.count; i++)
        maintenance = maintenance || strstr(plan.notes.items[i], "maintenance_exclusions");
    assert_false(maintenance); /* the fixture has none */
    assert_true(plan.notes.count > 0);
    /* the cluster module's objects: the additional network for pods, then MTC's
     * CheckpointConfiguration */
    json_t *objects = json_array();
    deploy_cluster_objects(&bp, objects);
    assert_int_equal(json_array_size(objects), 3);
    json_t *want =
        json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s, s:s}}", "apiVersion", "networking.gke.io/v1",
                  "kind", "GKENetworkParamSet", "metadata", "name", "gvnic-1", "spec", "vpc",
                  "ev-set-net-1", "vpcSubnet", "ev-set-sub-1", "deviceMode", "NetDevice");
    assert_true(json_equal(json_array_get(objects, 0), want));
    json_decref(want);
    want = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:s, s:s, s:s}, s:s}}", "apiVersion",
                     "networking.gke.io/v1", "kind", "Network", "metadata", "name", "gvnic-1",
                     "spec", "parametersRef", "group", "networking.gke.io", "kind",
                     "GKENetworkParamSet", "name", "gvnic-1", "type", "Device");
    assert_true(json_equal(json_array_get(objects, 1), want));
    json_decref(want);
    want = json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:s}}", "apiVersion", "checkpointing.gke.io/v1",
                     "kind", "CheckpointConfiguration", "metadata", "name", "default", "spec",
                     "inMemoryVolumeSize", "50Gi", "cloudStorageBucketName", "my-checkpoints");
    assert_true(json_equal(json_array_get(objects, 2), want));
    json_decref(want);
    json_decref(objects);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

/* The create/delete calls the fake saw, in order, one per line. */
static char *changes(void)
{
    char *all = kube_test_read(calls);
    gc_buf out;
    gc_buf_init(&out);
    for (char *save, *line = strtok_r(all ? all : (char[]){""}, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save))
        if (!strstr(line, " describe ") && !strstr(line, " get-iam-policy "))
            gc_buf_printf(&out, "gcloud %s\n", line);
    free(all);
    char *text = gc_buf_detach(&out);
    return text ? text : gc_xstrdup("");
}

static char *expected_changes(const gc_cloud_plan *plan, const bool *include)
{
    gc_buf out;
    gc_buf_init(&out);
    for (size_t i = 0; i < plan->count; i++) {
        if (!include[i])
            continue;
        /* as the fake records them: the words joined by spaces, unquoted */
        for (char **w = plan->steps[i].create; *w; w++)
            gc_buf_printf(&out, "%s%s", w == plan->steps[i].create ? "" : " ", *w);
        gc_buf_putc(&out, '\n');
    }
    char *text = gc_buf_detach(&out);
    return text ? text : gc_xstrdup("");
}

static void run(const gc_cloud_plan *plan, bool apply, gc_cloud_report *report, gc_error *err,
                int want_rc)
{
    memset(err, 0, sizeof(*err));
    int rc = deploy_cloud_run(plan, gcloud, apply, NULL, report, err);
    if (rc != want_rc)
        fail_msg("deploy_cloud_run returned %d (wanted %d): %s", rc, want_rc, err->message);
}

/* Apply creates in plan order; after a failure a rerun creates only what is missing, and a run
 * after that changes nothing (a role binding is added only when the policy lacks it). */
static void apply_runs_in_order_and_resumes(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan plan;
    load(&bp, &plan);
    size_t failing = step_index(&plan, GC_CLOUD_NODE_POOL, "tpu-7x-pool-0");
    kube_test_write(fail_on, "tpu-7x-pool-0\n");
    gc_cloud_report report;
    gc_error err;
    run(&plan, true, &report, &err, GC_EXIT_RUNTIME);
    assert_has(err.message, "creating node pool tpu-7x-pool-0 (module tpu-7x-pool)");
    assert_has(err.message, "run gcluster deploy again");
    bool *include = gc_xcalloc(plan.count, sizeof(*include));
    for (size_t i = 0; i <= failing; i++)
        include[i] = true;
    char *got = changes(), *want = expected_changes(&plan, include);
    assert_string_equal(got, want);
    free(got);
    free(want);
    assert_int_equal(report.outcomes[0].state, GC_CLOUD_CREATED);
    assert_int_equal(report.outcomes[failing].state, GC_CLOUD_FAILED);
    assert_has(report.outcomes[failing].detail, "quota exceeded for tpu-7x-pool-0");
    assert_int_equal(report.outcomes[failing + 1].state, GC_CLOUD_NOT_CHECKED);
    deploy_cloud_report_free(&report);

    /* The cause fixed: the rerun resumes at the failed pool. */
    remove(fail_on);
    remove(calls);
    run(&plan, true, &report, &err, 0);
    for (size_t i = 0; i < plan.count; i++)
        include[i] = i >= failing;
    got = changes();
    want = expected_changes(&plan, include);
    assert_string_equal(got, want);
    free(got);
    free(want);
    assert_int_equal(report.outcomes[0].state, GC_CLOUD_PRESENT);
    assert_int_equal(
        report.outcomes[step_index(&plan, GC_CLOUD_REMOVE_DEFAULT_POOL, "default-pool")].state,
        GC_CLOUD_PRESENT); /* removed by the first run */
    assert_int_equal(report.outcomes[plan.count - 1].state, GC_CLOUD_CREATED);
    deploy_cloud_report_free(&report);

    /* Everything there: nothing is created or deleted. */
    remove(calls);
    run(&plan, true, &report, &err, 0);
    got = changes();
    assert_string_equal(got, "");
    free(got);
    for (size_t i = 0; i < plan.count; i++)
        assert_int_equal(report.outcomes[i].state, GC_CLOUD_PRESENT);
    deploy_cloud_report_free(&report);
    free(include);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

/* Without apply only describes run; in a project without the cluster its pools are not asked
 * about (they would be created after it). */
static void plan_only_describes(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan plan;
    load(&bp, &plan);
    gc_cloud_report report;
    gc_error err;
    run(&plan, false, &report, &err, 0);
    char *got = changes();
    assert_string_equal(got, "");
    free(got);
    char *all = kube_test_read(calls);
    assert_null(strstr(all, "node-pools describe"));
    free(all);
    for (size_t i = 0; i < plan.count; i++)
        assert_int_equal(report.outcomes[i].state, GC_CLOUD_MISSING);
    assert_true(report.checked);
    assert_false(report.applied);
    deploy_cloud_report_free(&report);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

/* gcloud without an account: asked once, the rest not checked; applying stops with the fix. */
static void gcloud_without_an_account(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan plan;
    load(&bp, &plan);
    char *marker = gc_xasprintf("%s/no-account", state);
    kube_test_write(marker, "\n");
    gc_cloud_report report;
    gc_error err;
    run(&plan, false, &report, &err, 0);
    for (size_t i = 0; i < plan.count; i++)
        assert_int_equal(report.outcomes[i].state, GC_CLOUD_NOT_CHECKED);
    assert_has(report.outcomes[0].detail, "You do not currently have an active account");
    deploy_cloud_report_free(&report);
    char *all = kube_test_read(calls);
    assert_int_equal(strchr(all, '\n') - all + 1, (long)strlen(all)); /* one call */
    free(all);
    run(&plan, true, &report, &err, GC_EXIT_RUNTIME);
    assert_has(err.message, "could not tell whether network ev-set-net-0 exists");
    assert_has(err.message, "gcloud auth login");
    deploy_cloud_report_free(&report);
    remove(marker);
    free(marker);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

/* What gcloud printed is outside text: `deploy --plan` shows it escaped, so an escape sequence in
 * it never reaches the terminal. */
static void gcloud_output_is_shown_escaped(void **st)
{
    (void)st;
    char *marker = gc_xasprintf("%s/escapes", state);
    kube_test_write(marker, "\n");
    char *path = gc_xasprintf("PATH=%s/bin:/usr/bin:/bin", tmp);
    char *home = gc_xasprintf("HOME=%s", tmp);
    const char *env[] = {path, home, NULL};
    const char *args[] = {"deploy", FIXTURE, "--plan", "--kubeconfig", "/nonexistent", NULL};
    cli_result res;
    run_cli(&res, args, env);
    assert_has(res.out.data, "(ERROR: \\x1b[31mred\\x1b]0;title\\x07)");
    assert_null(memchr(res.out.data, 0x1b, res.out.len));
    assert_null(memchr(res.out.data, 0x07, res.out.len));
    cli_result_free(&res);
    remove(marker);
    free(marker);
    free(path);
    free(home);
}

/* --plan and --dry-run-out with a kubeconfig that has no context for the blueprint's cluster:
 * the kubeconfig stays byte for byte what it was, gcloud is never asked for credentials and
 * nothing is created. */
static void plan_and_dry_run_change_nothing(void **st)
{
    (void)st;
    char *kubeconfig = gc_xasprintf("%s/kubeconfig", tmp);
    kube_test_write(kubeconfig,
                    "apiVersion: v1\nkind: Config\ncurrent-context: other\n"
                    "clusters:\n- name: other\n  cluster: {server: 'https://127.0.0.1:1'}\n"
                    "contexts:\n- name: other\n  context: {cluster: other, user: other}\n"
                    "users:\n- name: other\n  user: {token: not-a-secret}\n");
    char *before = kube_test_read(kubeconfig);
    struct stat st_before;
    assert_int_equal(stat(kubeconfig, &st_before), 0);
    char *path = gc_xasprintf("PATH=%s/bin:/usr/bin:/bin", tmp);
    char *home = gc_xasprintf("HOME=%s", tmp);
    const char *env[] = {path, home, NULL};
    char *out = gc_xasprintf("%s/objects.yaml", tmp);
    const char *plan_args[] = {"deploy", FIXTURE, "--plan", "--kubeconfig", kubeconfig, NULL};
    const char *dry_args[] = {"deploy",   FIXTURE, "--dry-run-out", out, "--kubeconfig",
                              kubeconfig, NULL};
    const char *const *runs[] = {plan_args, dry_args};
    for (size_t i = 0; i < 2; i++) {
        cli_result res;
        run_cli(&res, runs[i], env);
        if (res.exit_code != 0)
            fail_msg("exit %d: %s", res.exit_code, res.err.data);
        char *after = kube_test_read(kubeconfig);
        assert_string_equal(after, before);
        free(after);
        struct stat st_after;
        assert_int_equal(stat(kubeconfig, &st_after), 0);
        assert_int_equal(st_after.st_mtim.tv_sec, st_before.st_mtim.tv_sec);
        assert_int_equal(st_after.st_mtim.tv_nsec, st_before.st_mtim.tv_nsec);
        char *all = kube_test_read(calls);
        assert_null(all ? strstr(all, "get-credentials") : NULL);
        free(all);
        char *made = changes();
        assert_string_equal(made, "");
        free(made);
        if (i == 0) {
            assert_has(res.out.data, "Google Cloud (in order):\n   1. network ev-set-net-0: would "
                                     "be created\n      gcloud compute networks create "
                                     "ev-set-net-0 ");
            assert_has(res.out.data, "Kubernetes: the cluster was not read (no kubeconfig context");
            assert_has(res.out.data, ". cluster add-on HighScaleCheckpointing: would be created\n"
                                     "      gcloud container clusters update ev-set ");
            assert_has(res.out.data, "checkpointconfiguration.checkpointing.gke.io/default would "
                                     "be applied");
            assert_has(res.out.data, "  Kueue v0.17.1: installed if the cluster lacks it\n"
                                     "      from https://github.com/kubernetes-sigs/kueue/"
                                     "releases/download/v0.17.1/manifests.yaml\n");
        } else {
            char *yaml = kube_test_read(out);
            assert_has(yaml, "kind: CheckpointConfiguration");
            free(yaml);
        }
        cli_result_free(&res);
    }
    free(out);
    free(path);
    free(home);
    free(before);
    free(kubeconfig);
}

static json_t *run_json(const char *const *args, const char *const *env)
{
    cli_result res;
    run_cli(&res, args, env);
    if (res.exit_code != 0)
        fail_msg("exit %d: %s", res.exit_code, res.err.data);
    json_error_t error;
    json_t *doc = json_loads(res.out.data, 0, &error);
    if (!doc)
        fail_msg("not JSON (%s): %s", error.text, res.out.data);
    cli_result_free(&res);
    return doc;
}

/* The pipeline's order comes from the library: --plan lists its stages in the order they run
 * (Google Cloud, credentials, installs, objects, waits), and its objects in the order
 * --dry-run-out writes them. */
static void plan_and_dry_run_show_one_order(void **st)
{
    (void)st;
    char *path = gc_xasprintf("PATH=%s/bin:/usr/bin:/bin", tmp);
    char *home = gc_xasprintf("HOME=%s", tmp);
    const char *env[] = {path, home, NULL};
    const char *plan_args[] = {"deploy", FIXTURE,        "--plan",       "-o",
                               "json",   "--kubeconfig", "/nonexistent", NULL};
    const char *dry_args[] = {"deploy", FIXTURE, "--dry-run-out", "-", "-o", "json", NULL};
    json_t *plan = run_json(plan_args, env);
    json_t *dry = run_json(dry_args, env);
    static const char *const kinds[] = {"cloud", "credentials", "installs", "objects", "wait"};
    const json_t *stages = json_object_get(plan, "stages");
    assert_int_equal(json_array_size(stages), 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(json_string_value(json_object_get(json_array_get(stages, i), "kind")),
                            kinds[i]);
    const json_t *planned = json_object_get(plan, "kueue_objects");
    const json_t *written = json_object_get(dry, "items");
    assert_true(json_array_size(written) > 5);
    assert_int_equal(json_array_size(planned), json_array_size(written));
    for (size_t i = 0; i < json_array_size(written); i++) {
        const json_t *p = json_array_get(planned, i), *w = json_array_get(written, i);
        assert_string_equal(json_string_value(json_object_get(p, "kind")),
                            json_string_value(json_object_get(w, "kind")));
        assert_string_equal(
            json_string_value(json_object_get(p, "name")),
            json_string_value(json_object_get(json_object_get(w, "metadata"), "name")));
    }
    json_decref(plan);
    json_decref(dry);
    free(path);
    free(home);
}

#define STORAGE GCLUSTER_SOURCE_DIR "/tests/fixtures/deploy/storage.yaml"

/* cloud-storage-bucket: each bucket a step before the cluster, named as the module names it
 * (name_prefix, the deployment name, with random_suffix the first 8 hexadecimal digits of
 * SHA-256("my-project/st/data") in place of Terraform's random ones), its labels and versioning
 * an update after it; the apply creates each after a describe found it absent, and a rerun
 * changes nothing; destroy deletes the buckets after the cluster (their labels go with them). */
static void storage_buckets_are_planned_created_and_destroyed(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_error err = {0};
    if (deploy_blueprint_load(STORAGE, NULL, 0, &bp, &err))
        fail_msg("%s", err.message);
    gc_cloud_plan plan;
    if (deploy_cloud_plan_build(&bp, &(gc_cloud_target){0}, &plan, &err))
        fail_msg("%s", err.message);
    size_t data = step_index(&plan, GC_CLOUD_BUCKET, "data-st-bb5d3e77");
    size_t zonal = step_index(&plan, GC_CLOUD_BUCKET, "zonal");
    size_t cluster = step_index(&plan, GC_CLOUD_CLUSTER, "st");
    assert_true(data < zonal && zonal < cluster);
    char *line = create_line(&plan, GC_CLOUD_BUCKET, "data-st-bb5d3e77");
    assert_string_equal(line, "gcloud storage buckets create gs://data-st-bb5d3e77 "
                              "--project=my-project --location=us-central1 "
                              "--default-storage-class=REGIONAL --uniform-bucket-level-access "
                              "--enable-hierarchical-namespace --public-access-prevention "
                              "--soft-delete-duration=0s");
    free(line);
    line = create_line(&plan, GC_CLOUD_BUCKET, "zonal");
    assert_string_equal(line, "gcloud storage buckets create gs://zonal --project=my-project "
                              "--location=us-central1 --default-storage-class=RAPID "
                              "--uniform-bucket-level-access --placement=us-central1-a");
    free(line);
    line = deploy_argv_shell_line(plan.steps[data].check);
    assert_string_equal(line, "gcloud storage buckets describe gs://data-st-bb5d3e77 "
                              "--project=my-project '--format=value(name)'");
    free(line);
    /* labels and versioning: the update after the create, done once the label is there */
    size_t settings = step_index(&plan, GC_CLOUD_BUCKET_SETTINGS, "data-st-bb5d3e77");
    assert_int_equal(settings, data + 1);
    line = create_line(&plan, GC_CLOUD_BUCKET_SETTINGS, "data-st-bb5d3e77");
    assert_string_equal(line, "gcloud storage buckets update gs://data-st-bb5d3e77 "
                              "--project=my-project --update-labels=ghpc_blueprint=storage,"
                              "ghpc_deployment=st,ghpc_module=cloud-storage-bucket,"
                              "ghpc_role=file-system --versioning");
    free(line);
    line = deploy_argv_shell_line(plan.steps[settings].check);
    assert_string_equal(line, "gcloud storage buckets describe gs://data-st-bb5d3e77 "
                              "--project=my-project '--format=value(labels.ghpc_module)'");
    free(line);

    gc_cloud_report report;
    run(&plan, true, &report, &err, 0);
    assert_int_equal(report.outcomes[data].state, GC_CLOUD_CREATED);
    assert_int_equal(report.outcomes[settings].state, GC_CLOUD_CREATED);
    assert_int_equal(report.outcomes[zonal].state, GC_CLOUD_CREATED);
    deploy_cloud_report_free(&report);
    remove(calls);
    run(&plan, true, &report, &err, 0);
    char *made = changes();
    assert_string_equal(made, "");
    free(made);
    assert_int_equal(report.outcomes[data].state, GC_CLOUD_PRESENT);
    assert_int_equal(report.outcomes[settings].state, GC_CLOUD_PRESENT);
    deploy_cloud_report_free(&report);

    gc_cloud_plan destroy;
    if (deploy_destroy_plan_build(&bp, &(gc_cloud_target){0}, &destroy, &err))
        fail_msg("%s", err.message);
    size_t gone_cluster = step_index(&destroy, GC_CLOUD_CLUSTER, "st");
    size_t gone_data = step_index(&destroy, GC_CLOUD_BUCKET, "data-st-bb5d3e77");
    assert_true(gone_cluster < step_index(&destroy, GC_CLOUD_BUCKET, "zonal"));
    assert_true(step_index(&destroy, GC_CLOUD_BUCKET, "zonal") < gone_data);
    line = create_line(&destroy, GC_CLOUD_BUCKET, "data-st-bb5d3e77");
    assert_string_equal(line,
                        "gcloud storage buckets delete gs://data-st-bb5d3e77 --project=my-project "
                        "--quiet");
    free(line);
    remove(calls);
    run(&destroy, true, &report, &err, 0);
    assert_int_equal(report.outcomes[gone_data].state, GC_CLOUD_CREATED); /* deleted */
    deploy_cloud_report_free(&report);
    deploy_cloud_plan_free(&destroy);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

/* gke-persistent-volume over a bucket: the PersistentVolume and PersistentVolumeClaim its
 * gcs-pv and gcs-pvc templates render (mount options without the fstab words, and without
 * implicit_dirs under a gcsfuse storage class), after the other objects, a Namespace first
 * when not default; --dry-run-out writes them. Without capacity_gib it is refused. */
static void storage_volumes_are_objects(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_error err = {0};
    if (deploy_blueprint_load(STORAGE, NULL, 0, &bp, &err))
        fail_msg("%s", err.message);
    json_t *objects;
    gc_buf warnings;
    gc_buf_init(&warnings);
    assert_int_equal(gc_deploy_objects(&bp, NULL, "v1beta2", &objects, &warnings, &err), 0);
    size_t n = json_array_size(objects);
    assert_true(n >= 5);
    json_t *want = json_pack(
        "[{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s, s:s}}, s:{s:s, s:{s:s}, s:[s], s:{s:s, s:s}}},"
        " {s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s, s:s}},"
        "  s:{s:[s], s:s, s:s, s:{s:{s:s}}}},"
        " {s:s, s:s, s:{s:s}},"
        " {s:s, s:s, s:{s:s, s:{s:s, s:s, s:s, s:s}},"
        "  s:{s:s, s:{s:s}, s:[s], s:[s, s], s:{s:s, s:s}}},"
        " {s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s, s:s}},"
        "  s:{s:[s], s:s, s:s, s:{s:{s:s}}}}]",
        /* data-pv */
        "apiVersion", "v1", "kind", "PersistentVolume", "metadata", "name", "data-st-bb5d3e77-pv",
        "labels", "ghpc_blueprint", "storage", "ghpc_deployment", "st", "ghpc_module",
        "gke-persistent-volume", "ghpc_role", "file-system", "spec", "storageClassName",
        "gcsfusecsi-training", "capacity", "storage", "100Gi", "accessModes", "ReadWriteMany",
        "csi", "driver", "gcsfuse.csi.storage.gke.io", "volumeHandle", "data-st-bb5d3e77",
        "apiVersion", "v1", "kind", "PersistentVolumeClaim", "metadata", "name",
        "data-st-bb5d3e77-pvc", "namespace", "default", "labels", "ghpc_blueprint", "storage",
        "ghpc_deployment", "st", "ghpc_module", "gke-persistent-volume", "ghpc_role", "file-system",
        "spec", "accessModes", "ReadWriteMany", "storageClassName", "gcsfusecsi-training",
        "volumeName", "data-st-bb5d3e77-pv", "resources", "requests", "storage", "100Gi",
        /* zonal-pv */
        "apiVersion", "v1", "kind", "Namespace", "metadata", "name", "team", "apiVersion", "v1",
        "kind", "PersistentVolume", "metadata", "name", "zonal-pv", "labels", "ghpc_blueprint",
        "storage", "ghpc_deployment", "st", "ghpc_module", "gke-persistent-volume", "ghpc_role",
        "file-system", "spec", "storageClassName", "", "capacity", "storage", "10Gi", "accessModes",
        "ReadWriteMany", "mountOptions", "implicit_dirs", "file-cache:max-size-mb:-1", "csi",
        "driver", "gcsfuse.csi.storage.gke.io", "volumeHandle", "zonal", "apiVersion", "v1", "kind",
        "PersistentVolumeClaim", "metadata", "name", "zonal-claim", "namespace", "team", "labels",
        "ghpc_blueprint", "storage", "ghpc_deployment", "st", "ghpc_module",
        "gke-persistent-volume", "ghpc_role", "file-system", "spec", "accessModes", "ReadWriteMany",
        "storageClassName", "", "volumeName", "zonal-pv", "resources", "requests", "storage",
        "10Gi");
    assert_non_null(want);
    for (size_t i = 0; i < 5; i++) {
        const json_t *got = json_array_get(objects, n - 5 + i);
        if (!json_equal(got, json_array_get(want, i))) {
            char *text = json_dumps(got, JSON_SORT_KEYS);
            fail_msg("object %zu differs: %s", i, text);
        }
    }
    json_decref(want);
    json_decref(objects);
    gc_buf_free(&warnings);
    gc_blueprint_free(&bp);

    char *file = gc_xasprintf("%s/no-capacity.yaml", tmp);
    char *text = kube_test_read(STORAGE);
    static const char line[] = "      capacity_gib: 10\n";
    char *at = strstr(text, line);
    assert_non_null(at);
    kube_test_write(file, "%.*s%s", (int)(at - text), text, at + strlen(line)); /* line dropped */
    if (deploy_blueprint_load(file, NULL, 0, &bp, &err))
        fail_msg("%s", err.message);
    gc_cloud_plan plan;
    assert_int_equal(deploy_cloud_plan_build(&bp, &(gc_cloud_target){0}, &plan, &err),
                     GC_EXIT_USAGE);
    assert_string_equal(err.message, "module zonal-pv needs capacity_gib, and the blueprint "
                                     "leaves it empty; pass --vars capacity_gib=1000");
    gc_blueprint_free(&bp);
    free(text);
    free(file);
}

/* Values the plan needs and the blueprint leaves empty: the error says which --vars to pass. */
static void missing_values_say_the_fix(void **st)
{
    (void)st;
    char *file = gc_xasprintf("%s/no-zone.yaml", tmp);
    kube_test_write(file,
                    "blueprint_name: no-zone\n"
                    "vars: {project_id: p, deployment_name: d, region: us-east5, zone: null}\n"
                    "deployment_groups:\n- group: primary\n  modules:\n"
                    "  - id: cluster\n    source: modules/scheduler/gke-cluster\n"
                    "  - id: pool\n    source: modules/compute/gke-node-pool\n"
                    "    use: [cluster]\n    settings: {machine_type: n2-standard-8}\n");
    gc_blueprint bp;
    gc_error err = {0};
    if (deploy_blueprint_load(file, NULL, 0, &bp, &err))
        fail_msg("%s", err.message);
    /* A pool without zones inherits the cluster's node locations (gke-node-pool passes
     * node_locations = null), so its create has no --node-locations. */
    gc_cloud_plan plan;
    if (deploy_cloud_plan_build(&bp, &(gc_cloud_target){0}, &plan, &err))
        fail_msg("%s", err.message);
    char *line = create_line(&plan, GC_CLOUD_NODE_POOL, "n2-standard-8-pool");
    assert_null(strstr(line, "--node-locations"));
    free(line);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
    free(file);

    /* The advanced blueprints leave these vars empty for the user to fill in. */
    static const char *const cases[][2] = {
        {"zone=null", "zones item $(vars.zone) has no value; pass --vars zone=ZONE"},
        {"tpu_topology=null", "which has no value; pass --vars tpu_topology="},
        {"reservation=null", "is vars.reservation, which is empty; pass --vars reservation="},
        {"authorized_cidr=null",
         "is vars.authorized_cidr, which is empty; pass --vars authorized_cidr=YOUR-IP/32"},
        {"project_id=null", "pass --vars project_id="},
    };
    char *home = gc_xasprintf("HOME=%s", tmp);
    char *path = gc_xasprintf("PATH=%s/bin:/usr/bin:/bin", tmp);
    const char *env[] = {home, path, NULL};
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        const char *args[] = {"deploy", FIXTURE, "--plan", "--vars", cases[i][0], NULL};
        cli_result res;
        run_cli(&res, args, env);
        assert_int_equal(res.exit_code, GC_EXIT_USAGE);
        assert_has(res.err.data, cases[i][1]);
        cli_result_free(&res);
    }
    char *all = kube_test_read(calls);
    assert_null(all); /* refused before anything ran */
    free(home);
    free(path);
}

/* A blueprint with only Kubernetes objects (kubectl-apply) plans nothing in Google Cloud and
 * needs no project: deploy onto an existing cluster works as before. */
static void kubernetes_only_blueprint_plans_nothing(void **st)
{
    (void)st;
    char *file = gc_xasprintf("%s/kueue-only.yaml", tmp);
    kube_test_write(file, "blueprint_name: kueue-only\nvars: {deployment_name: x}\n"
                          "deployment_groups:\n- group: primary\n  modules:\n"
                          "  - id: kueue\n    source: modules/management/kubectl-apply\n"
                          "    settings: {kueue: {install: true}}\n");
    gc_blueprint bp;
    gc_error err = {0};
    if (deploy_blueprint_load(file, NULL, 0, &bp, &err))
        fail_msg("%s", err.message);
    gc_cloud_plan plan;
    assert_int_equal(deploy_cloud_plan_build(&bp, &(gc_cloud_target){0}, &plan, &err), 0);
    assert_int_equal(plan.count, 0);
    gc_cloud_report report;
    assert_int_equal(deploy_cloud_run(&plan, "/nonexistent/gcloud", true, NULL, &report, &err), 0);
    assert_int_equal(report.count, 0);
    deploy_cloud_report_free(&report);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
    free(file);
}

/* The advanced v6e blueprint: what the modules set to keep a running job safe is in the plan
 * (monitoring with JOBSET and managed Prometheus, the maintenance exclusion with an explicit
 * end, the pools' upgrade settings and TCP buffer sysctls), accounts carry the deployment
 * name, and the hint for a missing cpu-np is the plan's own step. */
static void advanced_blueprint_keeps_the_safety_settings(void **st)
{
    (void)st;
    static const char *const vars[] = {"project_id=my-project",     "region=us-east5",
                                       "zone=us-east5-b",           "num_slices=2",
                                       "tpu_topology=4x4",          "authorized_cidr=10.0.0.0/32",
                                       "reservation=my-reservation"};
    gc_blueprint bp;
    gc_cloud_plan plan;
    gc_error err = {0};
    if (deploy_blueprint_load(GCLUSTER_SOURCE_DIR "/tests/fixtures/cluster-toolkit/examples/"
                                                  "gke-tpu-v6e/gke-tpu-v6e-advanced.yaml",
                              vars, sizeof(vars) / sizeof(*vars), &bp, &err))
        fail_msg("%s", err.message);
    if (deploy_cloud_plan_build(&bp, &(gc_cloud_target){0}, &plan, &err))
        fail_msg("%s", err.message);
    step_index(&plan, GC_CLOUD_SERVICE_ACCOUNT,
               "gke-tpu-v6e-gke-np-sa@my-project.iam.gserviceaccount.com");
    step_index(&plan, GC_CLOUD_SERVICE_ACCOUNT,
               "gke-tpu-v6e-gke-wl-sa@my-project.iam.gserviceaccount.com");
    /* Workload Identity: the Kubernetes account acts as the workload account */
    char *line = create_line(&plan, GC_CLOUD_ACCOUNT_BINDING,
                             "gke-tpu-v6e-gke-wl-sa@my-project.iam.gserviceaccount.com "
                             "roles/iam.workloadIdentityUser default/workload-identity-k8s-sa");
    assert_string_equal(line, "gcloud iam service-accounts add-iam-policy-binding "
                              "gke-tpu-v6e-gke-wl-sa@my-project.iam.gserviceaccount.com "
                              "--project=my-project --role=roles/iam.workloadIdentityUser "
                              "'--member=serviceAccount:my-project.svc.id.goog[default/"
                              "workload-identity-k8s-sa]' --format=none");
    free(line);
    line = create_line(&plan, GC_CLOUD_CLUSTER, "gke-tpu-v6e");
    assert_has(line, " --monitoring=SYSTEM,POD,DAEMONSET,DEPLOYMENT,STATEFULSET,STORAGE,HPA,"
                     "CADVISOR,KUBELET,JOBSET --enable-managed-prometheus "
                     "--auto-monitoring-scope=NONE ");
    free(line);
    line = create_line(&plan, GC_CLOUD_CLUSTER_ADDON,
                       "maintenance exclusion no-minor-or-node-upgrades-indefinite");
    assert_has(line, "gcloud container clusters update gke-tpu-v6e --project=my-project "
                     "--location=us-east5 "
                     "--add-maintenance-exclusion-name=no-minor-or-node-upgrades-indefinite "
                     "--add-maintenance-exclusion-scope=no_minor_or_node_upgrades "
                     "--add-maintenance-exclusion-start=");
    assert_has(line, " --add-maintenance-exclusion-end=");
    free(line);
    const gc_cloud_step *pool =
        &plan.steps[step_index(&plan, GC_CLOUD_NODE_POOL, "gke-tpu-v6e-pool-0")];
    line = deploy_argv_shell_line(pool->create);
    assert_has(line, " --max-surge-upgrade=0 --max-unavailable-upgrade=1 "
                     "--system-config-from-file=/dev/stdin");
    free(line);
    assert_string_equal(pool->input, "linuxConfig:\n  sysctl:\n"
                                     "    \"net.ipv4.tcp_rmem\": \"4096 87380 16777216\"\n"
                                     "    \"net.ipv4.tcp_wmem\": \"4096 16384 16777216\"\n");
    /* the system pool is upgraded one node at a time too; cpu-np as the module makes it */
    line = create_line(&plan, GC_CLOUD_NODE_POOL, "system");
    assert_has(line, " --max-surge-upgrade=0 --max-unavailable-upgrade=1 ");
    free(line);
    size_t count;
    gc_pool_spec *pools = deploy_blueprint_all_pools(&bp, NULL, &count);
    char *hint = deploy_pool_create_command(&bp, &pools[0], &(gc_cloud_target){0});
    char *step =
        deploy_cloud_step_line(&plan.steps[step_index(&plan, GC_CLOUD_NODE_POOL, "cpu-np")]);
    assert_string_equal(hint, step);
    assert_has(hint, "--service-account=gke-tpu-v6e-gke-wl-sa@my-project.iam.gserviceaccount.com");
    free(hint);
    free(step);
    free(pools);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

static void load_example(const char *path, const char *const *vars, size_t n, gc_blueprint *bp,
                         gc_cloud_plan *plan)
{
    gc_error err = {0};
    if (deploy_blueprint_load(path, vars, n, bp, &err))
        fail_msg("%s", err.message);
    if (deploy_cloud_plan_build(bp, &(gc_cloud_target){0}, plan, &err))
        fail_msg("%s", err.message);
}

/* Every --additional-node-network of every pool names a network and a subnetwork the plan
 * creates (else the pool's create fails in the user's project). Returns how many it checked. */
static size_t pools_use_planned_networks(const gc_cloud_plan *plan)
{
    size_t checked = 0;
    for (size_t i = 0; i < plan->count; i++) {
        if (plan->steps[i].kind != GC_CLOUD_NODE_POOL)
            continue;
        for (char **a = plan->steps[i].create; a && *a; a++) {
            const char *flag = "--additional-node-network=network=";
            if (strncmp(*a, flag, strlen(flag)))
                continue;
            char *net = gc_xstrdup(*a + strlen(flag));
            char *sub = strstr(net, ",subnetwork=");
            assert_non_null(sub);
            *sub = '\0';
            sub += strlen(",subnetwork=");
            step_index(plan, GC_CLOUD_NETWORK, net);
            step_index(plan, GC_CLOUD_SUBNETWORK, sub);
            free(net);
            checked++;
        }
    }
    return checked;
}

/* gpu-rdma-vpc (gke-a4) and multivpc (gke-a3-megagpu): the networks and subnetworks the modules
 * create, named as the pools and the cluster's network objects name them, with the modules'
 * ranges, profile and rules; destroy deletes the subnetworks before their network. */
static void gpu_networks_are_planned(void **st)
{
    (void)st;
    static const char *const vars[] = {
        "project_id=p1",       "deployment_name=a4", "region=us-east5",           "zone=us-east5-b",
        "static_node_count=2", "reservation=r1",     "authorized_cidr=10.0.0.0/8"};
    gc_blueprint bp;
    gc_cloud_plan plan;
    load_example(GCLUSTER_SOURCE_DIR "/tests/fixtures/cluster-toolkit/examples/gke-a4/gke-a4.yaml",
                 vars, sizeof(vars) / sizeof(*vars), &bp, &plan);
    assert_true(deploy_cloud_handles("modules/network/gpu-rdma-vpc"));
    assert_true(deploy_cloud_handles("modules/network/multivpc"));
    size_t net = step_index(&plan, GC_CLOUD_NETWORK, "a4-rdma-net");
    char *line = create_line(&plan, GC_CLOUD_NETWORK, "a4-rdma-net");
    assert_string_equal(line, "gcloud compute networks create a4-rdma-net --project=p1 "
                              "--subnet-mode=custom --mtu=8896 --bgp-routing-mode=regional "
                              "--network-profile=us-east5-b-vpc-roce");
    free(line);
    static const char *const ranges[] = {"192.168.128.0/21", "192.168.136.0/21", "192.168.144.0/21",
                                         "192.168.152.0/21", "192.168.160.0/21", "192.168.168.0/21",
                                         "192.168.176.0/21", "192.168.184.0/21"};
    for (size_t i = 0; i < 8; i++) {
        char name[32];
        snprintf(name, sizeof(name), "a4-rdma-sub-%zu", i);
        assert_int_equal(step_index(&plan, GC_CLOUD_SUBNETWORK, name), net + 1 + i);
        line = create_line(&plan, GC_CLOUD_SUBNETWORK, name);
        char *want = gc_xasprintf("gcloud compute networks subnets create %s --project=p1 "
                                  "--region=us-east5 --network=a4-rdma-net --range=%s",
                                  name, ranges[i]);
        assert_string_equal(line, want);
        free(want);
        free(line);
    }
    /* RoCE networks take no firewall rules, and the module makes no router */
    assert_int_equal(plan.steps[net + 9].kind, GC_CLOUD_SERVICE_ACCOUNT);
    assert_int_equal(pools_use_planned_networks(&plan), 9);

    gc_error err = {0};
    gc_cloud_plan destroy;
    if (deploy_destroy_plan_build(&bp, &(gc_cloud_target){0}, &destroy, &err))
        fail_msg("%s", err.message);
    size_t sub0 = step_index(&destroy, GC_CLOUD_SUBNETWORK, "a4-rdma-sub-0");
    assert_true(sub0 < step_index(&destroy, GC_CLOUD_NETWORK, "a4-rdma-net"));
    line = create_line(&destroy, GC_CLOUD_SUBNETWORK, "a4-rdma-sub-0");
    assert_string_equal(line, "gcloud compute networks subnets delete a4-rdma-sub-0 "
                              "--project=p1 --region=us-east5 --quiet");
    free(line);
    line = create_line(&destroy, GC_CLOUD_NETWORK, "a4-rdma-net");
    assert_string_equal(line, "gcloud compute networks delete a4-rdma-net --project=p1 --quiet");
    free(line);
    deploy_cloud_plan_free(&destroy);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);

    static const char *const mega[] = {"project_id=p1",       "region=us-east5",
                                       "zone=us-east5-b",     "authorized_cidr=10.0.0.0/8",
                                       "static_node_count=2", "reservation=r1"};
    load_example(GCLUSTER_SOURCE_DIR
                 "/tests/fixtures/cluster-toolkit/examples/gke-a3-megagpu/gke-a3-megagpu.yaml",
                 mega, sizeof(mega) / sizeof(*mega), &bp, &plan);
    for (size_t i = 0; i < 8; i++) {
        char name[64], sub[64];
        snprintf(name, sizeof(name), "gke-a3-mega-gpunet-%zu", i);
        snprintf(sub, sizeof(sub), "gke-a3-mega-gpunet-%zu-subnet", i);
        size_t at = step_index(&plan, GC_CLOUD_NETWORK, name);
        static const gc_cloud_step_kind kinds[] = {GC_CLOUD_NETWORK,  GC_CLOUD_SUBNETWORK,
                                                   GC_CLOUD_FIREWALL, GC_CLOUD_FIREWALL,
                                                   GC_CLOUD_ROUTER,   GC_CLOUD_NAT};
        for (size_t k = 0; k < 6; k++)
            assert_int_equal(plan.steps[at + k].kind, kinds[k]);
        line = create_line(&plan, GC_CLOUD_SUBNETWORK, sub);
        char *want = gc_xasprintf("gcloud compute networks subnets create %s --project=p1 "
                                  "--region=us-east5 --network=%s --range=192.168.%zu.0/20 "
                                  "--enable-private-ip-google-access",
                                  sub, name, i * 16);
        assert_string_equal(line, want);
        free(want);
        free(line);
    }
    line = create_line(&plan, GC_CLOUD_NETWORK, "gke-a3-mega-gpunet-7");
    assert_string_equal(line, "gcloud compute networks create gke-a3-mega-gpunet-7 --project=p1 "
                              "--subnet-mode=custom --mtu=8244 --bgp-routing-mode=regional");
    free(line);
    line = create_line(&plan, GC_CLOUD_FIREWALL, "gke-a3-mega-gpunet-7-fw-allow-internal-traffic");
    assert_string_equal(line, "gcloud compute firewall-rules create "
                              "gke-a3-mega-gpunet-7-fw-allow-internal-traffic --project=p1 "
                              "--network=gke-a3-mega-gpunet-7 --direction=INGRESS "
                              "--source-ranges=192.168.112.0/20 "
                              "--allow=tcp:0-65535,udp:0-65535,icmp");
    free(line);
    assert_int_equal(pools_use_planned_networks(&plan), 8);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);

    /* a range too small for the networks is refused before anything runs */
    char *path = gc_xasprintf("%s/small.yaml", tmp);
    kube_test_write(path, "blueprint_name: small\n"
                          "vars: {project_id: p1, deployment_name: sm, region: us-east5}\n"
                          "deployment_groups:\n"
                          "- group: primary\n"
                          "  modules:\n"
                          "  - id: nets\n"
                          "    source: modules/network/multivpc\n"
                          "    settings: {network_count: 4, global_ip_address_range: "
                          "10.0.0.0/16, subnetwork_cidr_suffix: 17}\n");
    if (deploy_blueprint_load(path, NULL, 0, &bp, &err))
        fail_msg("%s", err.message);
    assert_int_equal(deploy_cloud_plan_build(&bp, &(gc_cloud_target){0}, &plan, &err),
                     GC_EXIT_USAGE);
    assert_has(err.message, "module nets: global_ip_address_range 10.0.0.0/16 and "
                            "subnetwork_cidr_suffix 17 leave no room for 4 networks");
    gc_error_clear(&err);
    gc_blueprint_free(&bp);

    /* a vpc-roce-metal profile makes its own subnetwork; the default routes' removal is the
     * user's follow-up command */
    kube_test_write(path, "blueprint_name: metal\n"
                          "vars: {project_id: p1, deployment_name: mt, region: us-east5}\n"
                          "deployment_groups:\n"
                          "- group: primary\n"
                          "  modules:\n"
                          "  - id: rdma\n"
                          "    source: modules/network/gpu-rdma-vpc\n"
                          "    settings: {network_profile: us-east5-b-vpc-roce-metal, "
                          "subnetworks_template: null, "
                          "delete_default_internet_gateway_routes: true}\n");
    if (deploy_blueprint_load(path, NULL, 0, &bp, &err))
        fail_msg("%s", err.message);
    if (deploy_cloud_plan_build(&bp, &(gc_cloud_target){0}, &plan, &err))
        fail_msg("%s", err.message);
    assert_int_equal(plan.count, 1);
    line = create_line(&plan, GC_CLOUD_NETWORK, "mt-net");
    assert_string_equal(line, "gcloud compute networks create mt-net --project=p1 "
                              "--subnet-mode=custom --mtu=8896 --bgp-routing-mode=regional "
                              "--network-profile=us-east5-b-vpc-roce-metal");
    free(line);
    gc_buf notes;
    gc_buf_init(&notes);
    for (size_t i = 0; i < plan.notes.count; i++)
        gc_buf_printf(&notes, "%s\n", plan.notes.items[i]);
    assert_has(notes.data, "the us-east5-b-vpc-roce-metal profile makes its own subnetwork "
                           "default-subnet-1-mt-net; none is planned");
    assert_has(notes.data, "gcloud compute routes list --project=p1 --filter='network~/mt-net$ "
                           "AND name~^default-route AND "
                           "nextHopGateway~/default-internet-gateway$'");
    gc_buf_free(&notes);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
    free(path);
}

/* destroy: deploy's steps in reverse (the cluster's add-ons and the bootstrap pool removal are
 * not steps), each a describe and a delete; after a deploy it deletes everything in that order,
 * stops at a failed delete, a rerun resumes there, and a run after that deletes nothing. */
static void destroy_reverses_deploy_and_resumes(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan deploy, destroy;
    load(&bp, &deploy);
    gc_error err = {0};
    if (deploy_destroy_plan_build(&bp, &(gc_cloud_target){0}, &destroy, &err))
        fail_msg("%s", err.message);
    size_t j = 0;
    for (size_t i = deploy.count; i-- > 0;) {
        const gc_cloud_step *s = &deploy.steps[i];
        if (s->kind == GC_CLOUD_CLUSTER_ADDON || s->kind == GC_CLOUD_REMOVE_DEFAULT_POOL)
            continue;
        assert_true(j < destroy.count);
        assert_int_equal(destroy.steps[j].kind, s->kind);
        assert_string_equal(destroy.steps[j].name, s->name);
        assert_true(destroy.steps[j].removes);
        j++;
    }
    assert_int_equal(j, destroy.count);
    char *line = create_line(&destroy, GC_CLOUD_NAT, "cloud-nat-us-central1");
    assert_string_equal(line, "gcloud compute routers nats delete cloud-nat-us-central1 "
                              "--project=my-project --router=ev-set-net-1-router "
                              "--region=us-central1 --quiet");
    free(line);
    line = create_line(&destroy, GC_CLOUD_WORKLOAD_POLICY, "tpu7x-workload-policy");
    assert_string_equal(line, "gcloud compute resource-policies delete tpu7x-workload-policy "
                              "--project=my-project --region=us-central1 --quiet");
    free(line);

    gc_cloud_report report;
    run(&deploy, true, &report, &err, 0);
    deploy_cloud_report_free(&report);
    remove(calls);
    /* a subnetwork still in use fails its delete: everything before it is gone */
    size_t failing = step_index(&destroy, GC_CLOUD_SUBNETWORK, "ev-set-sub-1");
    kube_test_write(fail_on, "ev-set-sub-1\n");
    run(&destroy, true, &report, &err, GC_EXIT_RUNTIME);
    assert_has(err.message, "deleting subnetwork ev-set-sub-1");
    assert_has(err.message, "run gcluster destroy again");
    bool *include = gc_xcalloc(destroy.count, sizeof(*include));
    for (size_t i = 0; i <= failing; i++)
        include[i] = true;
    char *got = changes(), *want = expected_changes(&destroy, include);
    assert_string_equal(got, want);
    free(got);
    free(want);
    assert_int_equal(report.outcomes[0].state, GC_CLOUD_CREATED);
    assert_int_equal(report.outcomes[failing].state, GC_CLOUD_FAILED);
    deploy_cloud_report_free(&report);

    remove(fail_on);
    remove(calls);
    run(&destroy, true, &report, &err, 0);
    for (size_t i = 0; i < destroy.count; i++)
        include[i] = i >= failing;
    got = changes();
    want = expected_changes(&destroy, include);
    assert_string_equal(got, want);
    free(got);
    free(want);
    assert_int_equal(report.outcomes[0].state, GC_CLOUD_PRESENT); /* gone already */
    deploy_cloud_report_free(&report);

    remove(calls);
    run(&destroy, true, &report, &err, 0);
    got = changes();
    assert_string_equal(got, "");
    free(got);
    for (size_t i = 0; i < destroy.count; i++)
        assert_int_equal(report.outcomes[i].state, GC_CLOUD_PRESENT);
    deploy_cloud_report_free(&report);
    free(include);
    deploy_cloud_plan_free(&destroy);
    deploy_cloud_plan_free(&deploy);
    gc_blueprint_free(&bp);
}

/* The describes run at once, at most four at a time, and the answers are the same as one by
 * one. */
static void describes_run_concurrently_and_bounded(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan plan;
    load(&bp, &plan);
    char *slow = gc_xasprintf("%s/../slow", state);
    char *peaks = gc_xasprintf("%s/../peaks", state);
    remove(peaks);
    kube_test_write(slow, "\n");
    gc_cloud_report report;
    gc_error err;
    run(&plan, false, &report, &err, 0);
    for (size_t i = 0; i < plan.count; i++)
        assert_int_equal(report.outcomes[i].state, GC_CLOUD_MISSING);
    deploy_cloud_report_free(&report);
    remove(slow);
    char *text = kube_test_read(peaks);
    long most = 0;
    for (char *save, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        most = strtol(line, NULL, 10) > most ? strtol(line, NULL, 10) : most;
    free(text);
    assert_true(most >= 2);
    assert_true(most <= 4);
    free(slow);
    free(peaks);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

/* A rerun compares settings: an autoscaled pool whose largest size was changed is reported and,
 * when applying, updated in place; a fixed pool on another machine is reported and left (GKE
 * cannot change it); after the update a rerun finds everything as the blueprint says. */
static void settings_drift_is_reported_and_updated(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_cloud_plan plan;
    load(&bp, &plan);
    gc_cloud_report report;
    gc_error err;
    run(&plan, true, &report, &err, 0);
    deploy_cloud_report_free(&report);
    size_t flex = step_index(&plan, GC_CLOUD_NODE_POOL, "flex-pool");
    size_t fixed = step_index(&plan, GC_CLOUD_NODE_POOL, "tpu-7x-pool-0");
    assert_non_null(plan.steps[flex].update);
    assert_null(plan.steps[fixed].update);
    char *path = gc_xasprintf("%s/flex-pool", state);
    kube_test_write(path, "7\n");
    free(path);
    path = gc_xasprintf("%s/tpu-7x-pool-0", state);
    kube_test_write(path, "n2-standard-8\n");
    free(path);

    run(&plan, false, &report, &err, 0);
    assert_int_equal(report.outcomes[flex].state, GC_CLOUD_DIFFERS);
    char *want = gc_xasprintf("it has 7 where the blueprint gives %s", plan.steps[flex].expect);
    assert_string_equal(report.outcomes[flex].detail, want);
    free(want);
    char *line = deploy_argv_shell_line(plan.steps[flex].update);
    assert_string_equal(report.outcomes[flex].command, line);
    assert_has(line, "gcloud container node-pools update flex-pool --project=my-project "
                     "--cluster=ev-set --location=us-central1 --enable-autoscaling "
                     "--total-min-nodes=0 --total-max-nodes=");
    free(line);
    assert_int_equal(report.outcomes[fixed].state, GC_CLOUD_DIFFERS);
    assert_has(report.outcomes[fixed].detail, "it has n2-standard-8 where the blueprint gives");
    assert_has(report.outcomes[fixed].detail, "gcloud cannot change that in place");
    deploy_cloud_report_free(&report);

    remove(calls);
    run(&plan, true, &report, &err, 0);
    assert_int_equal(report.outcomes[flex].state, GC_CLOUD_UPDATED);
    assert_int_equal(report.outcomes[fixed].state, GC_CLOUD_DIFFERS);
    char *got = changes();
    want = gc_xasprintf("%s\n", report.outcomes[flex].command);
    assert_string_equal(got, want); /* the update alone */
    free(got);
    free(want);
    deploy_cloud_report_free(&report);

    remove(calls);
    run(&plan, true, &report, &err, 0);
    assert_int_equal(report.outcomes[flex].state, GC_CLOUD_PRESENT);
    got = changes();
    assert_string_equal(got, "");
    free(got);
    deploy_cloud_report_free(&report);
    deploy_cloud_plan_free(&plan);
    gc_blueprint_free(&bp);
}

/* The cluster that cannot be reached: get-credentials fails, as it does without an account. */
static int connect_fails(void *ctx, bool may_write, gc_kube **kube, gc_error *err)
{
    (void)kube;
    (*(int *)ctx)++;
    assert_true(may_write);
    return gc_fail(err, GC_EXIT_RUNTIME, "no credentials for cluster st");
}

static void destroy_run_once(const gc_blueprint *bp, const gc_destroy_request *r, int *opened,
                             gc_destroy_result *res, gc_error *err, int want_rc)
{
    memset(err, 0, sizeof(*err));
    remove(calls);
    int rc =
        gc_destroy_run(bp, r, gcloud, &(gc_deploy_connect){connect_fails, opened}, NULL, res, err);
    if (rc != want_rc)
        fail_msg("gc_destroy_run returned %d (wanted %d): %s", rc, want_rc, err->message);
    assert_int_equal(res->stage_count, 4);
    const gc_destroy_stage_kind order[] = {GC_DESTROY_CHECK, GC_DESTROY_JOBS, GC_DESTROY_OBJECTS,
                                           GC_DESTROY_DELETE};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(res->stages[i].kind, order[i]);
}

/* destroy's pipeline: every step described before anything is deleted; without --auto-approve
 * the cluster is not asked and nothing deleted; with it, a cluster whose jobs cannot be listed
 * stops destroy before any delete, unless --allow-running-jobs, and then its volumes go with it
 * and everything the plan names is deleted; a rerun finds it all gone and deletes nothing. */
static void destroy_pipeline_runs_its_stages_in_order(void **st)
{
    (void)st;
    gc_blueprint bp;
    gc_error err = {0};
    if (deploy_blueprint_load(STORAGE, NULL, 0, &bp, &err))
        fail_msg("%s", err.message);
    gc_cloud_plan plan;
    if (deploy_cloud_plan_build(&bp, &(gc_cloud_target){0}, &plan, &err))
        fail_msg("%s", err.message);
    gc_cloud_report report;
    run(&plan, true, &report, &err, 0);
    deploy_cloud_report_free(&report);
    deploy_cloud_plan_free(&plan);

    int opened = 0;
    gc_destroy_result res;
    destroy_run_once(&bp, &(gc_destroy_request){.kube_cluster = "st"}, &opened, &res, &err, 0);
    assert_int_equal(res.stages[0].state, GC_STAGE_DONE);
    for (size_t i = 1; i < 4; i++)
        assert_int_equal(res.stages[i].state, GC_STAGE_SKIPPED);
    assert_false(res.applied);
    assert_int_equal(res.object_count, 4);
    assert_int_equal(res.objects[0].state, GC_CLOUD_NOT_CHECKED);
    assert_int_equal(res.cloud_report.outcomes[0].state, GC_CLOUD_MISSING); /* still there */
    char *made = changes();
    assert_string_equal(made, "");
    free(made);
    assert_int_equal(opened, 0);
    gc_destroy_result_free(&res);

    destroy_run_once(&bp, &(gc_destroy_request){.kube_cluster = "st", .apply = true}, &opened, &res,
                     &err, GC_EXIT_USAGE);
    assert_has(err.message, "cannot check cluster st for running jobs (no credentials for "
                            "cluster st); get its credentials");
    assert_has(err.message, "--allow-running-jobs");
    assert_int_equal(res.stages[0].state, GC_STAGE_DONE);
    assert_int_equal(res.stages[1].state, GC_STAGE_FAILED);
    assert_int_equal(res.stages[2].state, GC_STAGE_NOT_RUN);
    assert_int_equal(res.stages[3].state, GC_STAGE_NOT_RUN);
    made = changes();
    assert_string_equal(made, "");
    free(made);
    assert_int_equal(opened, 1);
    gc_destroy_result_free(&res);

    gc_destroy_request allow = {.kube_cluster = "st", .apply = true, .allow_running_jobs = true};
    destroy_run_once(&bp, &allow, &opened, &res, &err, 0);
    assert_int_equal(res.stages[1].state, GC_STAGE_SKIPPED);
    assert_int_equal(res.stages[2].state, GC_STAGE_SKIPPED);
    assert_has(res.stages[2].detail, "not reached");
    assert_int_equal(res.stages[3].state, GC_STAGE_DONE);
    assert_int_equal(res.object_count, 4);
    for (size_t i = 0; i < res.cloud.count; i++)
        assert_int_equal(res.cloud_report.outcomes[i].state, GC_CLOUD_CREATED); /* deleted */
    bool *include = gc_xcalloc(res.cloud.count, sizeof(*include));
    for (size_t i = 0; i < res.cloud.count; i++)
        include[i] = true;
    made = changes();
    char *want = expected_changes(&res.cloud, include);
    assert_string_equal(made, want);
    free(made);
    free(want);
    free(include);
    gc_destroy_result_free(&res);

    destroy_run_once(&bp, &allow, &opened, &res, &err, 0);
    assert_has(res.stages[1].detail, "the cluster is gone");
    assert_int_equal(res.stages[2].state, GC_STAGE_SKIPPED);
    assert_int_equal(res.object_count, 0);
    assert_int_equal(res.stages[3].state, GC_STAGE_DONE);
    made = changes();
    assert_string_equal(made, "");
    free(made);
    assert_int_equal(opened, 2);
    gc_destroy_result_free(&res);
    gc_blueprint_free(&bp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(plan_names_everything_in_order, fresh),
        cmocka_unit_test_setup(apply_runs_in_order_and_resumes, fresh),
        cmocka_unit_test_setup(plan_only_describes, fresh),
        cmocka_unit_test_setup(gcloud_without_an_account, fresh),
        cmocka_unit_test_setup(plan_and_dry_run_change_nothing, fresh),
        cmocka_unit_test_setup(plan_and_dry_run_show_one_order, fresh),
        cmocka_unit_test_setup(storage_buckets_are_planned_created_and_destroyed, fresh),
        cmocka_unit_test_setup(storage_volumes_are_objects, fresh),
        cmocka_unit_test_setup(missing_values_say_the_fix, fresh),
        cmocka_unit_test_setup(kubernetes_only_blueprint_plans_nothing, fresh),
        cmocka_unit_test_setup(advanced_blueprint_keeps_the_safety_settings, fresh),
        cmocka_unit_test_setup(destroy_reverses_deploy_and_resumes, fresh),
        cmocka_unit_test_setup(destroy_pipeline_runs_its_stages_in_order, fresh),
        cmocka_unit_test_setup(describes_run_concurrently_and_bounded, fresh),
        cmocka_unit_test_setup(settings_drift_is_reported_and_updated, fresh),
        cmocka_unit_test_setup(gcloud_output_is_shown_escaped, fresh),
        cmocka_unit_test_setup(gpu_networks_are_planned, fresh),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
