/*
 * Shared Pathways Service objects against pathways-utils 0.1.13, field by field: the service
 * JobSet as its deploy_pathways_service.py builds it (PathwaysJobSet(shared_pathways_service=
 * True) in pathwaysutils/experimental/gke/jobset.py) and the client's proxy Job as its
 * isc_pathways.py fills yamls/pw-proxy.yaml. Every expected value names the file and line it
 * comes from (paths below pathwaysutils/experimental/); where ours differs on purpose, the
 * table says what pathways-utils has and why ours is different. The objects are checked after
 * the emitter and the YAML loader, as the cluster gets them.
 */
#include "gcluster/buf.h"
#include "gcluster/catalog.h"
#include "gcluster/emit.h"
#include "gcluster/manifest.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define SERVICE "sps"
#define GCS     "gs://bucket/sps"
#define SERVER  "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:jax-0.9.0"
#define PROXY   "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:jax-0.9.0"
#define SIDECAR "us-docker.pkg.dev/p/r/sidecar:1"

/* The service as `job submit --pathways-deploy-sps` prepares it: two v6e-16 slices. */
static gc_workload service_workload(gc_compute *compute, bool sidecar)
{
    gc_error err = {0};
    if (gc_catalog_resolve("v6e-16", NULL, NULL, compute, &err) != 0)
        fail_msg("%s", err.message);
    gc_workload w = {0};
    w.name = SERVICE;
    w.compute = *compute;
    w.num_slices = 2;
    w.nodes_per_slice = compute->vms_per_slice;
    w.queue = "multislice-queue";
    w.ttl_seconds = 3600;
    w.grace_seconds = 30;
    w.restarts = 30;
    w.verbose = true;
    w.pathways = w.headless = w.sps = true;
    w.gcs_location = GCS;
    w.head_pool = "cpu-np";
    w.server_image = w.worker_image = SERVER;
    w.sidecar_image = sidecar ? SIDECAR : NULL;
    w.max_slice_restarts = 1;
    return w;
}

/* Emits `object` as YAML and reads it back. */
static json_t *round_trip(json_t *object)
{
    assert_non_null(object);
    gc_buf yaml;
    gc_buf_init(&yaml);
    gc_error err = {0};
    assert_int_equal(gc_emit_yaml(object, &yaml, &err), 0);
    json_decref(object);
    gc_yaml_doc doc;
    if (gc_yaml_load(yaml.data, yaml.len, "manifest", &doc, &err) != 0)
        fail_msg("not YAML: %s", err.message);
    json_t *root = json_incref(gc_yaml_root(&doc));
    gc_yaml_doc_free(&doc);
    gc_buf_free(&yaml);
    return root;
}

/* Follows "a.b[2].c[\"k.e/y\"]"; a segment [name=X] picks the array element whose "name" is X. */
static json_t *at(json_t *root, const char *path)
{
    json_t *node = root;
    const char *p = path;
    char key[128];
    while (node && *p) {
        size_t n = strcspn(p, ".[");
        snprintf(key, sizeof(key), "%.*s", (int)n, p);
        if (n)
            node = json_object_get(node, key);
        p += n;
        if (!strncmp(p, "[\"", 2)) {
            const char *end = strstr(p, "\"]");
            snprintf(key, sizeof(key), "%.*s", (int)(end - p - 2), p + 2);
            node = json_object_get(node, key);
            p = end + 2;
        } else if (*p == '[') {
            const char *end = strchr(p, ']');
            if (!strncmp(p + 1, "name=", 5)) {
                char want[128];
                snprintf(want, sizeof(want), "%.*s", (int)(end - p - 6), p + 6);
                json_t *found = NULL, *item;
                size_t i;
                json_array_foreach(node, i, item)
                {
                    const char *name = json_string_value(json_object_get(item, "name"));
                    if (name && !strcmp(name, want))
                        found = item;
                }
                node = found;
            } else {
                node = json_array_get(node, strtoul(p + 1, NULL, 10));
            }
            p = end + 1;
        }
        if (*p == '.')
            p++;
    }
    return node;
}

/* One field: where it is, the value pathways-utils gives it (JSON), and where that value is. */
typedef struct field {
    const char *path;
    const char *value;
    const char *source;
} field;

/* A field where ours differs on purpose: pathways-utils' value, ours, and why. */
typedef struct difference {
    const char *path;
    const char *theirs;
    const char *ours; /* JSON, or NULL for "absent in ours" */
    const char *source;
    const char *why;
} difference;

static void check_field(json_t *root, const field *f)
{
    json_error_t jerr;
    json_t *want = json_loads(f->value, JSON_DECODE_ANY, &jerr);
    if (!want)
        fail_msg("bad expected JSON for %s: %s", f->path, jerr.text);
    json_t *got = at(root, f->path);
    if (!got || !json_equal(got, want)) {
        char *text = got ? json_dumps(got, JSON_ENCODE_ANY) : NULL;
        fail_msg("%s: pathways-utils has %s (%s), ours %s", f->path, f->value, f->source,
                 text ? text : "nothing");
    }
    json_decref(want);
}

static void check_difference(json_t *root, const difference *d)
{
    json_t *got = at(root, d->path);
    if (!d->ours) {
        if (got)
            fail_msg("%s: expected absent (%s)", d->path, d->why);
        return;
    }
    check_field(root, &(field){d->path, d->ours, d->why});
}

/* Every element of `list` (a JSON array of strings) is in the array at `path`, and nothing else:
 * the arguments of a server, whose order does not matter to its flag parser. */
static void check_same_set(json_t *root, const char *path, const char *list, const char *source)
{
    json_t *want = json_loads(list, 0, NULL);
    json_t *got = at(root, path);
    assert_non_null(want);
    if (json_array_size(got) != json_array_size(want))
        fail_msg("%s: %zu entries, pathways-utils %zu (%s)", path, json_array_size(got),
                 json_array_size(want), source);
    size_t i;
    json_t *w;
    json_array_foreach(want, i, w)
    {
        bool found = false;
        size_t j;
        json_t *g;
        json_array_foreach(got, j, g) found = found || json_equal(g, w);
        if (!found)
            fail_msg("%s lacks %s (%s)", path, json_string_value(w), source);
    }
    json_decref(want);
}

#define HEAD       "spec.replicatedJobs[name=pathways-head].template"
#define HEAD_POD   HEAD ".spec.template.spec"
#define RM         HEAD_POD ".containers[name=pathways-rm]"
#define WORKERS    "spec.replicatedJobs[1]"
#define WORKER_JOB WORKERS ".template.spec"
#define WORKER_POD WORKER_JOB ".template.spec"
#define WORKER     WORKER_POD ".containers[name=pathways-worker]"

static const field service_fields[] = {
    {"apiVersion", "\"jobset.x-k8s.io/v1alpha2\"",
     "gke/jobset.py:1171, jobset_api_version default v1alpha2 (:401)"},
    {"kind", "\"JobSet\"", "gke/jobset.py:1172"},
    {"metadata.name", "\"" SERVICE "\"",
     "gke/jobset.py:1174, --jobset_name (shared_pathways_service/deploy_pathways_service.py:21)"},
    {"spec.startupPolicy", "{\"startupPolicyOrder\": \"InOrder\"}", "gke/jobset.py:1178"},
    {"spec.failurePolicy.restartStrategy", "\"Recreate\"", "gke/jobset.py:1165"},
    {"spec.failurePolicy.maxRestarts", "30",
     "gke/jobset.py:1168; --max_restarts default 30 "
     "(shared_pathways_service/deploy_pathways_service.py:55-57)"},
    {"spec.network", "{\"enableDNSHostnames\": true, \"publishNotReadyAddresses\": true}",
     "gke/jobset.py:1180-1183"},
    {"spec.coordinator", "{\"replicatedJob\": \"pathways-head\"}", "gke/jobset.py:1160-1162, 1184"},
    {"spec.replicatedJobs[0].name", "\"pathways-head\"", "gke/jobset.py:41, 1150"},
    {"spec.replicatedJobs[0].replicas", "1", "gke/jobset.py:1151"},
    {HEAD ".metadata.annotations",
     "{\"alpha.jobset.sigs.k8s.io/exclusive-topology\": \"kubernetes.io/hostname\"}",
     "gke/jobset.py:628-633"},
    {HEAD ".spec.backoffLimit", "0", "gke/jobset.py:635"},
    {HEAD ".spec.completionMode", "\"Indexed\"", "gke/jobset.py:636"},
    {HEAD ".spec.completions", "1", "gke/jobset.py:637"},
    {HEAD ".spec.parallelism", "1", "gke/jobset.py:638"},
    {HEAD_POD ".restartPolicy", "\"Never\"", "gke/jobset.py:619"},
    {HEAD_POD ".nodeSelector", "{\"cloud.google.com/gke-nodepool\": \"cpu-np\"}",
     "gke/jobset.py:55, 620"},
    {RM ".image", "\"" SERVER "\"",
     "gke/jobset.py:602, server_image "
     "(shared_pathways_service/deploy_pathways_service.py:237-239)"},
    {RM ".ports", "[{\"containerPort\": 29001}, {\"containerPort\": 29002}]",
     "gke/jobset.py:52, 311-316 (protocol TCP is the default)"},
    {RM ".env[name=REPLICATED_JOB_NAME].valueFrom.fieldRef.fieldPath",
     "\"metadata.annotations['jobset.sigs.k8s.io/replicatedjob-name']\"", "gke/jobset.py:275-282"},
    {RM ".env[name=JOBSET_NAME].valueFrom.fieldRef.fieldPath",
     "\"metadata.annotations['jobset.sigs.k8s.io/jobset-name']\"", "gke/jobset.py:283-292"},
    {RM ".env[name=HOST_ADDRESS].valueFrom.fieldRef.fieldPath",
     "\"metadata.labels['jobset.sigs.k8s.io/coordinator']\"", "gke/jobset.py:293-302"},
    {RM ".env[name=TPU_SKIP_MDS_QUERY].value", "\"true\"", "gke/jobset.py:303"},
    {RM ".resources.limits.cpu", "\"8\"", "gke/jobset.py:318"},
    {WORKERS ".replicas", "2",
     "gke/jobset.py:1156, --num_slices (shared_pathways_service/deploy_pathways_service.py:42)"},
    {WORKER_JOB ".backoffLimit", "4000000",
     "gke/jobset.py:759 (num_vms * max_slice_restarts), max_slice_restarts=1000000 "
     "(shared_pathways_service/deploy_pathways_service.py:236)"},
    {WORKER_JOB ".completionMode", "\"Indexed\"", "gke/jobset.py:785"},
    {WORKER_JOB ".completions", "4", "gke/jobset.py:786, 495-501 (16 chips / 4 per VM)"},
    {WORKER_JOB ".parallelism", "4", "gke/jobset.py:787"},
    {WORKER_POD ".restartPolicy", "\"OnFailure\"", "gke/jobset.py:773"},
    {WORKER ".image", "\"" SERVER "\"", "gke/jobset.py:663, 733"},
    {WORKER ".ports",
     "[{\"containerPort\": 29005}, {\"containerPort\": 29006}, {\"containerPort\": 8471}, "
     "{\"containerPort\": 8080}]",
     "gke/jobset.py:53, 737-744"},
    {WORKER ".volumeMounts[name=shared-tmp].mountPath", "\"/tmp\"", "gke/jobset.py:745-747"},
    {WORKER_POD ".volumes[name=shared-tmp].hostPath",
     "{\"path\": \"/tmp\", \"type\": \"DirectoryOrCreate\"}", "gke/jobset.py:765-771"},
    {WORKER ".env[name=TPU_MIN_LOG_LEVEL].value", "\"0\"", "gke/jobset.py:671"},
    {WORKER ".env[name=TF_CPP_MIN_LOG_LEVEL].value", "\"0\"", "gke/jobset.py:672"},
    {WORKER ".env[name=XCLOUD_ENVIRONMENT].value", "\"GCP\"", "gke/jobset.py:673"},
    {WORKER ".env[name=MEGASCALE_GRPC_ENABLE_XOR_TRACER].value", "\"false\"", "gke/jobset.py:674"},
    {WORKER ".env[name=MEGASCALE_NUM_SLICES].valueFrom.fieldRef.fieldPath",
     "\"metadata.labels['jobset.sigs.k8s.io/replicatedjob-replicas']\"", "gke/jobset.py:675-682"},
    {WORKER ".env[name=JOBSET_NAME].valueFrom.fieldRef.fieldPath",
     "\"metadata.annotations['jobset.sigs.k8s.io/jobset-name']\"", "gke/jobset.py:683-692"},
    {WORKER ".env[name=REPLICATED_JOB_NAME].valueFrom.fieldRef.fieldPath",
     "\"metadata.annotations['jobset.sigs.k8s.io/replicatedjob-name']\"", "gke/jobset.py:693-700"},
    {WORKER ".env[name=MEGASCALE_SLICE_ID].valueFrom.fieldRef.fieldPath",
     "\"metadata.labels['jobset.sigs.k8s.io/job-index']\"", "gke/jobset.py:701-708"},
    {WORKER ".env[name=PATHWAYS_HEAD].valueFrom.fieldRef.fieldPath",
     "\"metadata.labels['jobset.sigs.k8s.io/coordinator']\"", "gke/jobset.py:709-718"},
    {WORKER ".env[name=MEGASCALE_COORDINATOR_ADDRESS].valueFrom.fieldRef.fieldPath",
     "\"metadata.labels['jobset.sigs.k8s.io/coordinator']\"", "gke/jobset.py:719-728"},
};

static const difference service_differences[] = {
    {"spec.replicatedJobs[1].name", "\"pathways-worker\" (gke/jobset.py:42, 1155)", "\"worker\"",
     "gke/jobset.py:42",
     "every gcluster Pathways job names it worker; pathways-utils reads the images of either "
     "name (shared_pathways_service/gke_utils.py:854)"},
    {HEAD ".spec.template.metadata.annotations[\"alpha.jobset.sigs.k8s.io/exclusive-topology\"]",
     "\"kubernetes.io/hostname\" (gke/jobset.py:640-641)", NULL, "gke/jobset.py:640",
     "JobSet reads the annotation from the Job template only; the pod copy does nothing"},
    {HEAD_POD ".hostNetwork", "absent (gke/jobset.py:616-621)", "true", "gke/jobset.py:616",
     "as every gcluster Pathways head: the resource manager's address is its node's, which the "
     "workers (on the host network) reach"},
    {RM ".resources.limits.memory", "\"32G\" (gke/jobset.py:318)", "\"32Gi\"", "gke/jobset.py:318",
     "gcluster's Pathways head asks for 32Gi, as Google's gcluster"},
    {RM ".imagePullPolicy", "\"Always\" (gke/jobset.py:308)", NULL, "gke/jobset.py:308",
     "Kubernetes' default: Always for :latest, IfNotPresent for a fixed release"},
    {WORKER_POD ".metadata", "absent", NULL, "gke/jobset.py:789-795",
     "the exclusive-topology annotation is on the worker Job template, where JobSet reads it"},
    {WORKERS ".template.metadata.annotations[\"alpha.jobset.sigs.k8s.io/exclusive-topology\"]",
     "on the pod template (gke/jobset.py:789-795)", "\"cloud.google.com/gke-nodepool\"",
     "gke/jobset.py:791", "one slice per node pool, read by JobSet from the Job template"},
};

static void test_service_jobset_matches_pathways_utils(void **state)
{
    (void)state;
    gc_compute compute;
    gc_workload w = service_workload(&compute, false);
    json_t *jobset = NULL;
    gc_error err = {0};
    assert_int_equal(gc_workload_jobset(&w, &jobset, &err), 0);
    json_t *root = round_trip(jobset);

    for (size_t i = 0; i < sizeof(service_fields) / sizeof(*service_fields); i++) {
        const field *f = &service_fields[i];
        check_field(root, f);
    }
    /* Values the catalog fills: the v6e-16 slice's labels and chips per host. */
    check_field(root, &(field){WORKER_POD ".nodeSelector",
                               "{\"cloud.google.com/gke-tpu-accelerator\": \"tpu-v6e-slice\", "
                               "\"cloud.google.com/gke-tpu-topology\": \"4x4\"}",
                               "gke/jobset.py:754-757, 76 (v6e -> tpu-v6e-slice)"});
    check_field(root, &(field){WORKER ".resources.limits", "{\"google.com/tpu\": 4}",
                               "gke/jobset.py:749, chips_per_vm 4 (gke/jobset.py:497)"});
    check_same_set(root, RM ".args",
                   "[\"--server_port=29001\", \"--gcs_scratch_location=" GCS "\", "
                   "\"--node_type=resource_manager\", \"--instance_count=2\", "
                   "\"--instance_type=tpuv6e:4x4\"]",
                   "gke/jobset.py:267-273, instance_type tpuv6e:TOPOLOGY (:61, 503)");
    check_same_set(root, WORKER ".args",
                   "[\"--resource_manager_address=$(PATHWAYS_HEAD):29001\", "
                   "\"--server_port=29005\", \"--gcs_scratch_location=" GCS "\"]",
                   "gke/jobset.py:665-669");
    /* The head runs the resource manager alone: no proxy, no user container
     * (gke/jobset.py:597-614: the proxy only when not shared_pathways_service). */
    assert_int_equal(json_array_size(at(root, HEAD_POD ".containers")), 1);
    assert_null(at(root, HEAD_POD ".initContainers"));
    assert_null(at(root, "spec.successPolicy")); /* gke/jobset.py:897-901, 1192 */

    for (size_t i = 0; i < sizeof(service_differences) / sizeof(*service_differences); i++)
        check_difference(root, &service_differences[i]);
    /* How gcluster tells a service from other jobs (list, inspect, cancel). */
    assert_string_equal(
        json_string_value(at(root, "metadata.annotations[\"gcluster.google.com/pathways\"]")),
        "sps");
    json_decref(root);
}

static void test_service_sidecar_matches_pathways_utils(void **state)
{
    (void)state;
    gc_compute compute;
    gc_workload w = service_workload(&compute, true);
    json_t *jobset = NULL;
    gc_error err = {0};
    assert_int_equal(gc_workload_jobset(&w, &jobset, &err), 0);
    json_t *root = round_trip(jobset);
    const char *sidecar = WORKER_POD ".initContainers[name=colocated-python-sidecar]";
    char path[256];
    /* gke/jobset.py:960-982 (add_colocated_python, called from
     * shared_pathways_service/deploy_pathways_service.py:201-207 with --sidecar_image). */
    snprintf(path, sizeof(path), "%s.image", sidecar);
    check_field(root, &(field){path, "\"" SIDECAR "\"", "gke/jobset.py:962"});
    snprintf(path, sizeof(path), "%s.restartPolicy", sidecar);
    check_field(root, &(field){path, "\"Always\"", "gke/jobset.py:982"});
    snprintf(path, sizeof(path), "%s.ports", sidecar);
    check_field(root, &(field){path, "[{\"containerPort\": 50051}]", "gke/jobset.py:971"});
    snprintf(path, sizeof(path), "%s.env[name=GRPC_SERVER_ADDRESS].value", sidecar);
    check_field(root, &(field){path, "\"0.0.0.0:50051\"", "gke/jobset.py:965"});
    snprintf(path, sizeof(path), "%s.volumeMounts[name=shared-tmp].mountPath", sidecar);
    check_field(root, &(field){path, "\"/tmp\"", "gke/jobset.py:973"});
    json_decref(root);
}

static gc_sps_proxy client_proxy(void)
{
    gc_sps_proxy p = {0};
    p.name = "isc-proxy-ada-x1y2z";
    p.service = SERVICE;
    p.user = "ada";
    p.image = PROXY;
    p.gcs_location = GCS;
    p.instance_type = "tpuv6e:4x4";
    p.slices = 2;
    p.head_pool = "cpu-np";
    p.deadline_seconds = 120;
    return p;
}

#define PROXY_POD "spec.template.spec"
#define PROXY_C   PROXY_POD ".containers[name=pathways-proxy]"

static const field proxy_fields[] = {
    {"apiVersion", "\"batch/v1\"", "shared_pathways_service/yamls/pw-proxy.yaml:1"},
    {"kind", "\"Job\"", "shared_pathways_service/yamls/pw-proxy.yaml:2"},
    {"metadata.name", "\"isc-proxy-ada-x1y2z\"",
     "shared_pathways_service/yamls/pw-proxy.yaml:4, isc-proxy-USER-SUFFIX "
     "(shared_pathways_service/isc_pathways.py:628-633)"},
    {"spec.backoffLimit", "0", "shared_pathways_service/yamls/pw-proxy.yaml:6"},
    {"spec.completions", "1", "shared_pathways_service/yamls/pw-proxy.yaml:7"},
    {"spec.parallelism", "1", "shared_pathways_service/yamls/pw-proxy.yaml:8"},
    {"spec.template.metadata.labels.app", "\"pathways-proxy\"",
     "shared_pathways_service/yamls/pw-proxy.yaml:10-12"},
    {PROXY_POD ".automountServiceAccountToken", "false",
     "shared_pathways_service/yamls/pw-proxy.yaml:14"},
    {PROXY_C ".image", "\"" PROXY "\"", "shared_pathways_service/yamls/pw-proxy.yaml:17"},
    {PROXY_C ".imagePullPolicy", "\"Always\"", "shared_pathways_service/yamls/pw-proxy.yaml:18"},
    {PROXY_C ".args",
     "[\"--server_port=29000\", \"--resource_manager_address=sps-pathways-head-0-0.sps:29001\", "
     "\"--gcs_scratch_location=" GCS "\", \"--virtual_slices=tpuv6e:4x4,tpuv6e:4x4\"]",
     "shared_pathways_service/yamls/pw-proxy.yaml:19-23; port 29000 (isc_pathways.py:38); head "
     "address (gke_utils.py:810); one instance type per slice (isc_pathways.py:133-136)"},
    {PROXY_C ".ports", "[{\"containerPort\": 29000}]",
     "shared_pathways_service/yamls/pw-proxy.yaml:26-28 (protocol TCP is the default)"},
    {PROXY_C ".resources", "{\"limits\": {\"cpu\": \"16\", \"memory\": \"100G\"}}",
     "shared_pathways_service/yamls/pw-proxy.yaml:29-32"},
    {PROXY_C ".securityContext",
     "{\"runAsUser\": 1000, \"runAsGroup\": 1000, \"readOnlyRootFilesystem\": false, "
     "\"capabilities\": {\"drop\": [\"ALL\"]}, \"seccompProfile\": {\"type\": \"RuntimeDefault\"}, "
     "\"allowPrivilegeEscalation\": false}",
     "shared_pathways_service/yamls/pw-proxy.yaml:33-42"},
    {PROXY_POD ".dnsPolicy", "\"ClusterFirstWithHostNet\"",
     "shared_pathways_service/yamls/pw-proxy.yaml:43"},
    {PROXY_POD ".hostNetwork", "true", "shared_pathways_service/yamls/pw-proxy.yaml:44"},
    {PROXY_POD ".restartPolicy", "\"OnFailure\"", "shared_pathways_service/yamls/pw-proxy.yaml:45"},
};

static const difference proxy_differences[] = {
    {PROXY_POD ".nodeSelector", "absent", "{\"cloud.google.com/gke-nodepool\": \"cpu-np\"}",
     "shared_pathways_service/yamls/pw-proxy.yaml:13-45",
     "the service's head pool, so a proxy never lands on (and blocks) a TPU host"},
    {"spec.activeDeadlineSeconds", "absent", "120",
     "shared_pathways_service/yamls/pw-proxy.yaml:5-8",
     "the client's hold: it moves the deadline forward while it lives, so a dead client's proxy "
     "ends within it"},
    {"spec.ttlSecondsAfterFinished", "absent", "0",
     "shared_pathways_service/yamls/pw-proxy.yaml:5-8",
     "a proxy past its deadline is deleted at once, not left holding the service's slices"},
    {PROXY_POD ".schedulingGates", "absent", NULL, "shared_pathways_service/yamls/pw-proxy.yaml:15",
     "only while the client waits for slices"},
};

static void test_proxy_job_matches_pathways_utils(void **state)
{
    (void)state;
    gc_sps_proxy p = client_proxy();
    json_t *root = round_trip(gc_sps_proxy_job(&p));
    for (size_t i = 0; i < sizeof(proxy_fields) / sizeof(*proxy_fields); i++)
        check_field(root, &proxy_fields[i]);
    for (size_t i = 0; i < sizeof(proxy_differences) / sizeof(*proxy_differences); i++)
        check_difference(root, &proxy_differences[i]);
    /* No variable unless asked: IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS only with the proxy
     * option use_insecure_credentials:true (shared_pathways_service/isc_pathways.py:140-145). */
    assert_int_equal(json_array_size(at(root, PROXY_C ".env")), 0);
    assert_string_equal(
        json_string_value(at(root, "metadata.labels[\"" GC_LABEL_SPS_SERVICE "\"]")), SERVICE);
    assert_string_equal(
        json_string_value(at(root, "metadata.annotations[\"" GC_ANNOTATION_SPS_SIZE "\"]")), "2");
    json_decref(root);
}

static void test_proxy_job_waiting_and_env(void **state)
{
    (void)state;
    gc_sps_proxy p = client_proxy();
    gc_env_var env = {.name = "IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS", .value = "true"};
    gc_strings args = {0};
    gc_strings_push(&args, "--xla_tpu_enable_latency_hiding_scheduler=true");
    p.env = &env;
    p.env_count = 1;
    p.args = &args;
    p.waiting = true;
    p.slices = 1;
    json_t *root = round_trip(gc_sps_proxy_job(&p));
    /* shared_pathways_service/isc_pathways.py:141-145: the variable as a string "true". */
    check_field(root, &(field){PROXY_C ".env",
                               "[{\"name\": \"IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS\", "
                               "\"value\": \"true\"}]",
                               "shared_pathways_service/isc_pathways.py:141-145"});
    /* Extra flags after --virtual_slices (shared_pathways_service/isc_pathways.py:147-152). */
    check_field(root,
                &(field){PROXY_C ".args[4]", "\"--xla_tpu_enable_latency_hiding_scheduler=true\"",
                         "shared_pathways_service/isc_pathways.py:147-152"});
    check_field(root, &(field){PROXY_C ".args[3]", "\"--virtual_slices=tpuv6e:4x4\"",
                               "shared_pathways_service/isc_pathways.py:133-136"});
    check_field(root, &(field){PROXY_POD ".schedulingGates",
                               "[{\"name\": \"" GC_SPS_WAIT_GATE "\"}]", "ours: the wait"});
    gc_strings_free(&args);
    json_decref(root);
}

static void test_user_names_are_dns_labels(void **state)
{
    (void)state;
    char out[64];
    static const char *const cases[][2] = {
        {"ada", "ada"},
        {"ada_lovelace",
         "ada-lovelace"}, /* pathways-utils keeps "ada" only (isc_pathways.py:532) */
        {"Ada.Lovelace@corp", "ada-lovelace-corp"},
        {"__x__", "x"},
        {"", "user"},
        {"___", "user"},
        {"a_very_long_user_name_indeed_longer", "a-very-long-user-nam"},
        {"trailing_", "trailing"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        gc_sps_user_name(cases[i][0], out, sizeof(out));
        assert_string_equal(out, cases[i][1]);
    }
    gc_sps_user_name(NULL, out, sizeof(out));
    assert_string_equal(out, "user");
}

static void test_proxy_image_follows_server_release(void **state)
{
    (void)state;
    /* shared_pathways_service/gke_utils.py:878-903: "server" -> "proxy_server" in the last path
     * element, the tag or digest kept. */
    static const char *const cases[][2] = {
        {SERVER, PROXY},
        {"us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server",
         "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server"},
        {"localhost:5000/pathways/server@sha256:ab",
         "localhost:5000/pathways/proxy_server@sha256:ab"},
        {"registry.example:443/server-team/unified:1",
         "registry.example:443/server-team/unified:1"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        char *image = gc_sps_proxy_image_for(cases[i][0]);
        assert_string_equal(image, cases[i][1]);
        free(image);
    }
    char release[128];
    gc_sps_image_release(SERVER, release, sizeof(release));
    assert_string_equal(release, "jax-0.9.0");
    gc_sps_image_release("localhost:5000/pathways/server", release, sizeof(release));
    assert_string_equal(release, "latest");
    gc_sps_image_release("r/server@sha256:ab", release, sizeof(release));
    assert_string_equal(release, "@sha256:ab");
    char *rm = gc_sps_resource_manager_address("svc");
    assert_string_equal(rm, "svc-pathways-head-0-0.svc:29001");
    free(rm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_service_jobset_matches_pathways_utils),
        cmocka_unit_test(test_service_sidecar_matches_pathways_utils),
        cmocka_unit_test(test_proxy_job_matches_pathways_utils),
        cmocka_unit_test(test_proxy_job_waiting_and_env),
        cmocka_unit_test(test_user_names_are_dns_labels),
        cmocka_unit_test(test_proxy_image_follows_server_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
