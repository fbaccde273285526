/*
 * `gcluster job submit --dry-run-out -` end to end through the real binary: golden manifests
 * for the shapes that matter (one case each, named golden/<file>), and every validation error
 * with its message and exit code 2. Set GCLUSTER_UPDATE_GOLDEN=1 to rewrite the golden files
 * after a deliberate change.
 */
#include "gcluster/emit.h"
#include "run_cli.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MAX_ARGS 64
#define IMAGE    "us-docker.pkg.dev/my-project/my-repo/jax:2026-12"
#define GCS      "gs://my-bucket/pathways"

/* Arguments shared by every case: a cluster (ignored offline) and stdout as the output. */
static const char *const common[] = {"job",        "submit",   "--cluster",     "demo",
                                     "--location", "us-east5", "--dry-run-out", "-"};

static void run_submit(cli_result *r, const char *const *args)
{
    const char *argv[MAX_ARGS];
    size_t n = 0;
    for (size_t i = 0; i < sizeof(common) / sizeof(*common); i++)
        argv[n++] = common[i];
    for (size_t i = 0; args[i]; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    const char *env[] = {"HOME=/nonexistent-home-for-tests", NULL};
    run_cli(r, argv, env);
}

typedef struct golden_case {
    const char *name;
    const char *args[64];
} golden_case;

static const golden_case goldens[] = {
    {"pathways-v6e-16x2",
     {"--name", "pw-demo", "--compute-type", "v6e-16", "--num-slices", "2", "--pathways",
      "--pathways-gcs-location", GCS, "--command", "python train.py --steps=100", "--image", IMAGE,
      NULL}},
    {"pathways-v5p-8",
     {"--name", "pw-v5p", "--compute-type", "v5p-8", "--pathways", "--pathways-gcs-location", GCS,
      "--command", "python train.py", "--image", IMAGE, NULL}},
    {"pathways-v5litepod-16",
     {"--name", "pw-v5e", "--compute-type", "v5litepod-16", "--pathways", "--pathways-gcs-location",
      GCS, "--command", "python train.py", "--image", IMAGE, NULL}},
    {"pathways-tpu7x-16",
     {"--name", "pw-7x", "--compute-type", "tpu7x-16", "--pathways", "--pathways-gcs-location", GCS,
      "--command", "python train.py", "--image", IMAGE, NULL}},
    {"pathways-tpu7x-4x4x8",
     {"--name", "pw-7x-big", "--compute-type", "tpu7x", "--topology", "4x4x8", "--num-slices", "2",
      "--pathways", "--pathways-gcs-location", GCS, "--command", "python train.py", "--image",
      IMAGE, NULL}},
    {"pathways-headless",
     {"--name", "pw-headless", "--compute-type", "v6e-16", "--pathways", "--pathways-gcs-location",
      GCS, "--pathways-headless", NULL}},
    {"pathways-colocated-sidecar",
     {"--name", "pw-sidecar", "--compute-type", "v6e-16", "--pathways", "--pathways-gcs-location",
      GCS, "--pathways-colocated-python-sidecar-image", "us-docker.pkg.dev/p/r/sidecar:1",
      "--command", "python train.py", "--image", IMAGE, NULL}},
    {"pathways-elastic",
     {"--name", "pw-elastic", "--compute-type", "v6e-16", "--num-slices", "4",
      "--pathways-elastic-slices", "1", "--pathways-max-slice-restarts", "3", "--pathways",
      "--pathways-gcs-location", GCS, "--command", "python train.py", "--image", IMAGE, NULL}},
    {"pathways-extra-args",
     {"--name", "pw-args", "--compute-type", "v6e-16", "--pathways", "--pathways-gcs-location", GCS,
      "--pathways-proxy-args", "  --xla_tpu_enable_x=true   --virtual_slices=tpuv6e:4x4  ",
      "--pathways-server-args", "--enable_metrics_collection=true    --enable_gcs_olm=false",
      "--pathways-worker-args", "\t--tpu_premapped_buffer_size=1024  \n  --a=b ", "--command",
      "python train.py", "--image", IMAGE, NULL}},
    {"pathways-everything",
     {"--name",
      "pw-all",
      "--compute-type",
      "ct6e-standard-4t",
      "--topology",
      "4x4",
      "--pathways",
      "--pathways-gcs-location",
      GCS,
      "--pathways-head-np",
      "pathways-np",
      "--queue",
      "team-a",
      "--priority",
      "High",
      "--service-account",
      "trainer",
      "--image-pull-secret",
      "s1, s2",
      "--mount",
      "gs://data-bucket/imagenet:/data",
      "--mount",
      "/mnt/disks/ssd:/scratch:rw",
      "--mount",
      "filestore://10.0.0.2/vol1:/ckpt:rw",
      "--restart-on-exit-codes",
      "42,43",
      "--node-constraint",
      "cloud.google.com/gke-spot=true",
      "--placement-policy",
      "compact-1",
      "--gke-ttl-after-finished",
      "1h30m",
      "--grace-period",
      "2m",
      "--restarts",
      "3",
      "--verbose",
      "--command",
      "set -e\necho \"start: $(date)\"\npython train.py --data=/data\n",
      "--image",
      IMAGE,
      NULL}},
    {"pathways-env",
     {"--name",
      "pw-env",
      "--compute-type",
      "v6e-16",
      "--pathways",
      "--pathways-gcs-location",
      GCS,
      "--pathways-colocated-python-sidecar-image",
      "us-docker.pkg.dev/p/r/sidecar:1",
      "--env",
      "WANDB_MODE=offline",
      "--env",
      "RUN_ID=",
      "--pathways-proxy-env",
      "GRPC_VERBOSITY=debug",
      "--pathways-proxy-env",
      "WANDB_MODE=disabled",
      "--pathways-server-env",
      "TPU_STDERR_LOG_LEVEL=0",
      "--pathways-worker-env",
      "LIBTPU_INIT_ARGS=--xla_tpu_enable_data_parallel_all_reduce_opt=true",
      "--pathways-worker-env",
      "ENDPOINT=$(PATHWAYS_HEAD):29001",
      "--command",
      "python train.py",
      "--image",
      IMAGE,
      NULL}},
    {"pathways-env-file",
     {"--name", "pw-env-file", "--compute-type", "v6e-16", "--pathways", "--pathways-gcs-location",
      GCS, "--env-file", GCLUSTER_SOURCE_DIR "/tests/fixtures/env/train.env", "--env",
      "RUN_NAME=demo-7", "--command", "python train.py $TRAIN_FLAGS", "--image", IMAGE, NULL}},
    {"plain-env",
     {"--name", "plain-env", "--compute-type", "v6e-16", "--num-slices", "2", "--verbose", "--env",
      "WANDB_MODE=offline", "--env", "TRUE_OR_NOT=true", "--command", "python train.py", "--image",
      IMAGE, NULL}},
    /* --mount in every form: Google's ';' form with gcsfuse options and CSI attributes, a
     * pvc:// claim and a bare claim name, Filestore, a host path, and the older ':' form (two
     * comma-separated in one flag). */
    {"plain-mounts",
     {"--name",
      "mounts",
      "--compute-type",
      "v6e-16",
      "--mount",
      "gs://ckpt-bucket/run-1;/ckpt;rw;options=implicit-dirs,file-cache:max-size-mb:-1;"
      "attributes=fileCacheCapacity=10Gi,gcsfuseMetadataPrefetchOnMount=true",
      "--mount",
      "gs://dataset-bucket;/data",
      "--mount",
      "pvc://shared-data;/shared;rw",
      "--mount",
      "team-claim;/team",
      "--mount",
      "filestore://10.0.0.2/vol1;/nfs;rw",
      "--mount",
      "/mnt/disks/ssd;/scratch;rw",
      "--mount",
      "gs://old-bucket/x:/old,pvc://old-claim:/old-claim:rw",
      "--command",
      "python train.py",
      "--image",
      IMAGE,
      NULL}},
    /* Storage profiles: each profile= mount reads its bucket through a gateway (a
     * PersistentVolume on the profile's gcsfusecsi-* class and a claim bound to it), written
     * before the JobSet; two mounts of one bucket alike share one gateway, a directory in the
     * bucket is the mount's subPath, and options= and attributes= (Anywhere Cache) go to the
     * PersistentVolume. */
    {"plain-profile-mounts",
     {"--name", "serve", "--compute-type", "n2-standard-32", "--mount",
      "gs://my-model-bucket/llama;/models;ro;profile=serving", "--mount",
      "gs://my-model-bucket/tokenizers/;/tokenizers;profile=gcsfusecsi-serving", "--mount",
      "gs://ckpt.bucket;/ckpt;rw;profile=Checkpointing;options=implicit-dirs;"
      "attributes=anywhereCacheZones=us-central1-a,anywhereCacheTTL=1h",
      "--command", "python serve.py", "--image", IMAGE, NULL}},
    /* NAP in a shared reservation of another project: the reservation's name and its project
     * as node labels, as Google's gcluster sets them. */
    {"plain-nap-shared-reservation",
     {"--name", "shared-res", "--compute-type", "v6e-4", "--gke-nap-provisioning", "reservation",
      "--gke-nap-reservation", "projects/owner-project/reservations/tpu-res/reservationBlocks/b1",
      "--command", "python train.py", "--image", IMAGE, NULL}},
    /* A headless job's workers get the mounts (the head has no workload container). */
    {"pathways-headless-mounts",
     {"--name", "pw-hl-mounts", "--compute-type", "v6e-16", "--pathways", "--pathways-gcs-location",
      GCS, "--pathways-headless", "--mount", "gs://data-bucket;/data;options=implicit-dirs", NULL}},
    /* Multi-tier checkpointing as MaxText's guide submits it: the MTC CSI volume and the
     * sidecar's shared memory on the workers, mounted in pathways-worker and the colocated
     * Python sidecar. */
    {"pathways-mtc",
     {"--name",
      "pw-mtc",
      "--compute-type",
      "tpu7x",
      "--topology",
      "2x2x2",
      "--num-slices",
      "2",
      "--pathways",
      "--pathways-gcs-location",
      GCS,
      "--pathways-colocated-python-sidecar-image",
      "us-docker.pkg.dev/p/r/colocated-python:1",
      "--gke-mtc-enabled",
      "--gke-mtc-ramdisk-dir",
      "/local",
      "--command",
      "python3 -m maxtext.trainers.pre_train.train",
      "--image",
      IMAGE,
      NULL}},
    {"plain-mtc",
     {"--name", "plain-mtc", "--compute-type", "v6e-16", "--gke-mtc-enabled", "--mount",
      "gs://ckpt;/ckpt;rw", "--command", "python train.py", "--image", IMAGE, NULL}},
    /* TPU7x dynamic slicing: Kueue's topology annotations instead of the topology node
     * selector and the one-slice-per-pool annotation. */
    {"plain-tpu7x-dynamic-slices",
     {"--name", "dyn", "--compute-type", "tpu-v7x-slice", "--topology", "4x4x8", "--num-slices",
      "2", "--command", "python train.py", "--image", IMAGE, NULL}},
    {"pathways-tpu7x-dynamic-slice",
     {"--name", "pw-dyn", "--compute-type", "tpu-v7x-slice", "--topology", "2x2x4", "--pathways",
      "--pathways-gcs-location", GCS, "--command", "python train.py", "--image", IMAGE, NULL}},
    {"plain-tpu-v6e-16x2",
     {"--name", "tpu-job", "--compute-type", "v6e-16", "--num-slices", "2", "--command",
      "python train.py", "--image", IMAGE, NULL}},
    {"plain-tpu7x-parallel",
     {"--name", "tpu7x-job", "--compute-type", "tpu7x-16", "--command", "python train.py",
      "--image", IMAGE, NULL}},
    {"plain-gpu-l4",
     {"--name", "gpu-job", "--compute-type", "l4-2", "--num-nodes", "2", "--command",
      "python train.py", "--image", IMAGE, NULL}},
    {"plain-cpu",
     {"--name", "cpu-job", "--compute-type", "n2-standard-32", "--num-slices", "3", "--command",
      "python preprocess.py", "--image", IMAGE, NULL}},
};

#define GOLDEN_COUNT (sizeof(goldens) / sizeof(*goldens))

/* One cmocka case per golden (its state is the golden_case), so that one changed manifest does
 * not hide the others. */
static void golden_manifest(void **state)
{
    const golden_case *c = *state;
    cli_result r;
    run_submit(&r, c->args);
    if (r.exit_code != 0)
        fail_msg("%s: exit %d: %s", c->name, r.exit_code, r.err.data);

    gc_yaml_doc doc;
    gc_error err = {0};
    if (gc_yaml_load(r.out.data, r.out.len, c->name, &doc, &err) != 0)
        fail_msg("%s: output is not YAML: %s", c->name, err.message);
    gc_yaml_doc_free(&doc);

    char path[512];
    snprintf(path, sizeof(path), "%s/tests/golden/%s.yaml", GCLUSTER_SOURCE_DIR, c->name);
    if (getenv("GCLUSTER_UPDATE_GOLDEN")) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fwrite(r.out.data, 1, r.out.len, f);
        fclose(f);
    }
    gc_buf want;
    gc_buf_init(&want);
    if (read_file(path, &want) != 0)
        fail_msg("%s: missing golden file %s (run with GCLUSTER_UPDATE_GOLDEN=1)", c->name, path);
    if (want.len != r.out.len || memcmp(want.data, r.out.data, want.len) != 0)
        fail_msg("%s: output differs from %s; run `diff` against it, and if the change is "
                 "intended, regenerate with GCLUSTER_UPDATE_GOLDEN=1\n--- got ---\n%s",
                 c->name, path, r.out.data);
    gc_buf_free(&want);
    cli_result_free(&r);
}

/* A golden file without a case is never compared: it would go stale unnoticed. */
static void every_golden_file_has_a_case(void **state)
{
    (void)state;
    DIR *dir = opendir(GCLUSTER_SOURCE_DIR "/tests/golden");
    assert_non_null(dir);
    size_t files = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0)
            continue;
        files++;
        bool found = false;
        for (size_t i = 0; i < GOLDEN_COUNT && !found; i++)
            found =
                strlen(goldens[i].name) == len - 5 && !strncmp(goldens[i].name, e->d_name, len - 5);
        if (!found)
            fail_msg("tests/golden/%s has no case in test_submit_cli.c: add one or delete it",
                     e->d_name);
    }
    closedir(dir);
    assert_int_equal(files, GOLDEN_COUNT);
}

static void output_is_byte_stable(void **state)
{
    (void)state;
    cli_result a, b;
    run_submit(&a, goldens[0].args);
    run_submit(&b, goldens[0].args);
    assert_int_equal(a.exit_code, 0);
    assert_string_equal(a.out.data, b.out.data);
    cli_result_free(&a);
    cli_result_free(&b);
}

typedef struct rejection {
    const char *args[32];
    const char *message; /* a phrase the error must contain */
} rejection;

#define PW  "--pathways", "--pathways-gcs-location", GCS
#define RUN "--command", "python train.py", "--image", IMAGE

static const rejection rejections[] = {
    /* --name */
    {{"--compute-type", "v6e-16", RUN, NULL}, "--name is required"},
    {{"--name", "My_Job", "--compute-type", "v6e-16", RUN, NULL}, "is not a valid name"},
    {{"--name", "1job", "--compute-type", "v6e-16", RUN, NULL}, "starting with a letter"},
    {{"--name", "job-", "--compute-type", "v6e-16", RUN, NULL}, "ending with a letter or digit"},
    {{"--name", "abcdefghijklmnopqrstuvw", "--compute-type", "v6e-16", PW, RUN, NULL},
     "has 23 characters; a Pathways job name can have at most 22"},
    {{"--name", "abcdefghijklmnopqrstuvw", "--compute-type", "v6e-16", PW, RUN, NULL},
     "(2 x 23 + 19 = 65 characters) and a label value holds at most 63"},
    {{"--name", "abcdefghijklmnopqrstuvwxyz123", "--compute-type", "v6e-16", RUN, NULL},
     "has 29 characters; a job name can have at most 28"},
    /* --pathways-gcs-location */
    {{"--name", "pw", "--compute-type", "v6e-16", "--pathways", RUN, NULL},
     "--pathways-gcs-location is required with --pathways"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--pathways", "--pathways-gcs-location",
      "s3://bucket", RUN, NULL},
     "must be a Cloud Storage location gs://BUCKET[/PREFIX]"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--pathways", "--pathways-gcs-location",
      "gs://Bad_Bucket/x", RUN, NULL},
     "\"Bad_Bucket\" is not a valid bucket name"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--pathways", "--pathways-gcs-location",
      "gs://ab", RUN, NULL},
     "\"ab\" is not a valid bucket name"},
    /* headless and the workload source */
    {{"--name", "pw", "--compute-type", "v6e-16", PW, "--pathways-headless", "--command", "x",
      NULL},
     "--command is not used with --pathways-headless"},
    {{"--name", "pw", "--compute-type", "v6e-16", PW, "--pathways-headless", "--base-image",
      "python:3.11", NULL},
     "--base-image is not used with --pathways-headless"},
    {{"--name", "pw", "--compute-type", "v6e-16", PW, "--pathways-headless",
      "--await-job-completion", NULL},
     "a headless job runs until you cancel it"},
    {{"--name", "pw", "--compute-type", "v6e-16", PW, "--image", IMAGE, NULL},
     "--command is required"},
    {{"--name", "pw", "--compute-type", "v6e-16", PW, "--command", "x", NULL},
     "an image is required"},
    {{"--name", "pw", "--compute-type", "v6e-16", RUN, "--base-image", "python:3.11", NULL},
     "--image cannot be combined with --base-image"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--command", "x", "--base-image", "python", NULL},
     "--base-image needs --build-context"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--command", "x", "--build-context", ".", NULL},
     "--build-context needs --base-image"},
    /* Pathways flags */
    {{"--name", "pw", "--compute-type", "l4-1", PW, RUN, NULL}, "--pathways needs a TPU"},
    {{"--name", "pw", "--compute-type", "n2-standard-32", PW, RUN, NULL}, "--pathways needs a TPU"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--pathways-headless", NULL},
     "--pathways-headless only applies to Pathways jobs: add --pathways"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--pathways-gcs-location", GCS, RUN, NULL},
     "--pathways-gcs-location only applies to Pathways jobs"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--pathways-worker-args", "--x", RUN, NULL},
     "--pathways-worker-args only applies to Pathways jobs"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--pathways-head-np", "cpu-np", RUN, NULL},
     "--pathways-head-np only applies to Pathways jobs"},
    /* counts */
    {{"--name", "pw", "--compute-type", "v6e-16", "--num-slices", "0", RUN, NULL},
     "--num-slices must be at least 1"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--num-slices", "2", "--pathways-elastic-slices",
      "3", PW, RUN, NULL},
     "--pathways-elastic-slices 3 must be less than --num-slices (2)"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--num-slices", "2", "--pathways-elastic-slices",
      "2", PW, RUN, NULL},
     "with all of them missing nothing would be left running"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--pathways-elastic-slices", "-1", PW, RUN, NULL},
     "--pathways-elastic-slices must be 0 or more"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--pathways-max-slice-restarts", "2", PW, RUN,
      NULL},
     "--pathways-max-slice-restarts only applies to elastic jobs"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--num-nodes", "2", RUN, NULL},
     "--num-nodes cannot be used with TPU compute types"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--num-slices", "two", RUN, NULL},
     "--num-slices takes a whole number"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--restarts", "-1", RUN, NULL},
     "--restarts must be 0 or more"},
    /* durations */
    {{"--name", "pw", "--compute-type", "v6e-16", "--grace-period", "10abc", RUN, NULL},
     "--grace-period \"10abc\" is not a duration"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--gke-ttl-after-finished", "1h30", RUN, NULL},
     "--gke-ttl-after-finished \"1h30\" is not a duration"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--gke-ttl-after-finished", "30m1h", RUN, NULL},
     "is not a duration"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--grace-period", "-5s", RUN, NULL},
     "is not a duration"},
    /* compute types */
    {{"--name", "pw", "--compute-type", "v6e-12", RUN, NULL}, "v6e-12"},
    {{"--name", "pw", "--compute-type", "v9z-8", RUN, NULL}, "v9z-8"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--topology", "2x4", RUN, NULL}, "--topology"},
    {{"--name", "pw", "--compute-type", "tpu7x", PW, RUN, NULL}, "--topology"},
    {{"--name", "pw", "--compute-type", "l4-1", "--topology", "2x2", RUN, NULL}, "--topology"},
    {{"--name", "pw", RUN, NULL}, "--compute-type is required"},
    /* other flags */
    {{"--name", "pw", "--compute-type", "v6e-16", "--nmae", "x", RUN, NULL},
     "unknown option --nmae; did you mean --name?"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--restart-on-exit-codes", "0", RUN, NULL},
     "0 means success"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--restart-on-exit-codes", "1,abc", RUN, NULL},
     "\"abc\" is not an exit code"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "gs://bucket", RUN, NULL},
     "missing the destination path"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "gs://bucket:data", RUN, NULL},
     "the destination must be an absolute path"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "gs://bucket-1:/d", "--mount", "/x:/d",
      RUN, NULL},
     "two mounts use the destination /d"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "filestore://Inst_1/share:/d", RUN,
      NULL},
     "the Filestore server is not an IPv4 address nor an instance name"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "gs://bucket;/d;sometimes", RUN, NULL},
     "\"sometimes\" is not ro, rw, options=, attributes= or profile="},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "gs://bucket;", RUN, NULL},
     "missing the destination path"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", ";/d", RUN, NULL},
     "missing the source"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "gs://bucket;data", RUN, NULL},
     "the destination must be an absolute path"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "/x;/d;options=implicit-dirs", RUN,
      NULL},
     "apply to gs:// sources only"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "gs://bucket;/d;ro;rw", RUN, NULL},
     "give the mode ro or rw once"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "gs://bucket;/d;profile=fast", RUN,
      NULL},
     "profile= is training, checkpointing or serving"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount",
      "gs://bucket;/d;profile=serving;profile=training", RUN, NULL},
     "give profile= once"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "my-claim;/d;profile=serving", RUN,
      NULL},
     "so they apply to gs:// sources only"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "gs://bucket;/usr/local/data", RUN,
      NULL},
     "is inside the container's system directory /usr"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "gs://bucket;/proc", RUN, NULL},
     "is the container's system directory /proc"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount",
      "gs://bucket;/d;attributes=bucketName=other", RUN, NULL},
     "bucketName comes from the gs:// source"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "gs://bucket;/d;attributes=a-b=1", RUN,
      NULL},
     "each attributes= item must be KEY=VALUE"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "pvc://Bad_Claim;/d", RUN, NULL},
     "not a valid PersistentVolumeClaim name"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--mount", "s3://bucket;/d", RUN, NULL},
     "unsupported scheme"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--gke-mtc-ramdisk-dir", "/local", RUN, NULL},
     "--gke-mtc-ramdisk-dir only applies with --gke-mtc-enabled"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--gke-mtc-enabled", "--gke-mtc-ramdisk-dir",
      "local", RUN, NULL},
     "--gke-mtc-ramdisk-dir \"local\": give an absolute directory"},
    {{"--name", "pw", "--compute-type", "v6e-16", PW, "--gke-mtc-enabled", "--gke-mtc-ramdisk-dir",
      "/tmp/", RUN, NULL},
     "the Pathways workers already mount the node's /tmp there"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--gke-mtc-enabled", "--mount",
      "gs://bucket;/tmp/mtc_checkpoints", RUN, NULL},
     "--gke-mtc-ramdisk-dir /tmp/mtc_checkpoints is also a --mount destination"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--gke-mtc-enabled", "--mount",
      "gs://bucket;/tmp/sidecar", PW, RUN, NULL},
     "mount the colocated sidecar's shared memory at /tmp/sidecar"},
    {{"--name", "pw", "--compute-type", "tpu-v7x-slice", RUN, NULL},
     "--compute-type tpu-v7x-slice needs --topology"},
    {{"--name", "pw", "--compute-type", "tpu-v7x-slice", "--topology", "2x4x8", RUN, NULL},
     "--topology 2x4x8 is not a dynamic TPU7x slice"},
    {{"--name", "pw", "--compute-type", "tpu-v7x-slice", "--topology", "4x4", RUN, NULL},
     "--topology 4x4 is not a dynamic TPU7x slice"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--node-constraint", "novalue", RUN, NULL},
     "use KEY=VALUE"},
    {{"--name", "pw", "--compute-type", "v6e-4", "--node-constraint",
      "cloud.google.com/gke-tpu-topology=2x2|4x4", RUN, NULL},
     "a TPU pod may ask for one cloud.google.com/gke-tpu-topology only"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--node-constraint", "zone=a||b", RUN, NULL},
     "empty elements are not allowed"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--gke-nap-provisioning", "cheap", RUN, NULL},
     "is not one of on-demand, spot, reservation"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--gke-nap-provisioning", "reservation", RUN,
      NULL},
     "--gke-nap-reservation NAME is required"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--gke-nap-reservation", "r1", RUN, NULL},
     "--gke-nap-reservation needs --gke-nap-provisioning=reservation"},
    /* The reservation's name and project become node label values: checked offline. */
    {{"--name", "pw", "--compute-type", "v6e-16", "--gke-nap-provisioning", "reservation",
      "--gke-nap-reservation", "bad!name", RUN, NULL},
     "--gke-nap-reservation \"bad!name\" is not a reservation"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--gke-nap-provisioning", "reservation",
      "--gke-nap-reservation", "projects/Bad_P/reservations/r1", RUN, NULL},
     "--gke-nap-reservation \"projects/Bad_P/reservations/r1\" is not a reservation"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--cpu-affinity", "core", RUN, NULL},
     "the one choice is \"numa\""},
    {{"--name", "pw", "--compute-type", "v6e-16", "--priority", "Not_Valid", RUN, NULL},
     "--priority \"not_valid\" is not a valid Kubernetes object name"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--await-job-completion", RUN, NULL},
     "cannot be combined with a dry run"},
    {{"--name", "pw", "--compute-type", "v6e-16", "--platform", "linux/arm64", RUN, NULL},
     "--platform only applies to image builds"},
    {{"--name", "pw", "--compute-type", "v6e-16", "extra", RUN, NULL},
     "job submit takes no arguments"},
};

static void every_validation_error_exits_2_with_its_message(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(rejections) / sizeof(*rejections); i++) {
        cli_result r;
        run_submit(&r, rejections[i].args);
        if (r.exit_code != 2 || !strstr(r.err.data, rejections[i].message) || r.out.len)
            fail_msg("case %zu: want exit 2 and \"%s\"\ngot exit %d, stderr: %sstdout: %s", i,
                     rejections[i].message, r.exit_code, r.err.data, r.out.data);
        cli_result_free(&r);
    }
}

static void durations_in_every_form_are_accepted(void **state)
{
    (void)state;
    static const char *const ok[] = {"90s", "5m", "1h", "1h30m", "2h0m5s", "3600"};
    static const long seconds[] = {90, 300, 3600, 5400, 7205, 3600};
    for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
        const char *args[] = {
            "--name", "pw", "--compute-type", "v6e-16", "--gke-ttl-after-finished", ok[i],
            RUN,      NULL};
        cli_result r;
        run_submit(&r, args);
        assert_int_equal(r.exit_code, 0);
        char want[64];
        snprintf(want, sizeof(want), "ttlSecondsAfterFinished: %ld\n", seconds[i]);
        if (!strstr(r.out.data, want))
            fail_msg("%s: no \"%s\" in\n%s", ok[i], want, r.out.data);
        cli_result_free(&r);
    }
}

/* Google's gcluster ignores --image for a headless job; so does ours, and says so. */
static void headless_ignores_image_with_a_notice(void **state)
{
    (void)state;
    const char *args[] = {"--name",  "pw",  "--compute-type",
                          "v6e-16",  PW,    "--pathways-headless",
                          "--image", IMAGE, NULL};
    cli_result r;
    run_submit(&r, args);
    assert_int_equal(r.exit_code, 0);
    assert_non_null(strstr(r.err.data, "--image is ignored with --pathways-headless"));
    assert_null(strstr(r.out.data, IMAGE));
    assert_null(strstr(r.out.data, "workload-container"));
    cli_result_free(&r);
}

/* A Shared Pathways Service ignores --image too; its notice names the flag the user typed,
 * --pathways-deploy-sps (the headless flag is implied, never typed), and where a client's
 * program runs instead. */
static void sps_ignores_image_with_its_own_notice(void **state)
{
    (void)state;
    const char *args[] = {"--name",
                          "svc",
                          "--compute-type",
                          "v6e-16",
                          "--pathways-gcs-location",
                          GCS,
                          "--pathways-deploy-sps",
                          "--image",
                          IMAGE,
                          NULL};
    cli_result r;
    run_submit(&r, args);
    assert_int_equal(r.exit_code, 0);
    const char *want = "--image is ignored with --pathways-deploy-sps: a Shared Pathways Service "
                       "runs only the Pathways servers (--pathways-server-image, "
                       "--pathways-worker-image); each client runs its own program against it "
                       "with job submit --pathways-run-sps-workload --pathways-service NAME "
                       "--command CMD";
    if (!strstr(r.err.data, want))
        fail_msg("no SPS notice in\n%s", r.err.data);
    assert_null(strstr(r.err.data, "--pathways-headless"));
    assert_null(strstr(r.out.data, IMAGE));
    cli_result_free(&r);
}

/* The worker Job's backoffLimit of a headless job is pathways-utils' reference budget,
 * 1,000,000 restarts per host (capped at the Job API's int32), unless
 * --pathways-max-slice-restarts says otherwise; batch jobs keep 4 per host. */
static void headless_workers_survive_reconnects(void **state)
{
    (void)state;
    static const struct {
        const char *args[24];
        const char *want;
    } cases[] = {
        {{"--name", "pw", "--compute-type", "v6e-16", PW, "--pathways-headless", NULL},
         "backoffLimit: 4000000\n"},
        {{"--name", "pw", "--compute-type", "tpu7x", "--topology", "16x16x36", PW,
          "--pathways-headless", NULL},
         "backoffLimit: 2147483647\n"},
        {{"--name", "pw", "--compute-type", "v6e-16", "--num-slices", "2",
          "--pathways-elastic-slices", "1", "--pathways-max-slice-restarts", "3", PW,
          "--pathways-headless", NULL},
         "backoffLimit: 12\n"},
        {{"--name", "pw", "--compute-type", "v6e-16", PW, RUN, NULL}, "backoffLimit: 16\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        cli_result r;
        run_submit(&r, cases[i].args);
        assert_int_equal(r.exit_code, 0);
        /* the head's Job comes first with backoffLimit 0; the worker's is the other one */
        const char *worker = strstr(r.out.data, "- name: worker\n");
        if (!worker || !strstr(worker, cases[i].want))
            fail_msg("case %zu: no \"%s\" in the worker Job:\n%s", i, cases[i].want,
                     worker ? worker : r.out.data);
        cli_result_free(&r);
    }
}

int main(void)
{
    static char names[GOLDEN_COUNT][80];
    struct CMUnitTest tests[GOLDEN_COUNT + 6] = {
        cmocka_unit_test(headless_ignores_image_with_a_notice),
        cmocka_unit_test(sps_ignores_image_with_its_own_notice),
        cmocka_unit_test(headless_workers_survive_reconnects),
        cmocka_unit_test(every_golden_file_has_a_case),
        cmocka_unit_test(output_is_byte_stable),
        cmocka_unit_test(every_validation_error_exits_2_with_its_message),
        cmocka_unit_test(durations_in_every_form_are_accepted),
    };
    for (size_t i = 0; i < GOLDEN_COUNT; i++) {
        snprintf(names[i], sizeof(names[i]), "golden/%s", goldens[i].name);
        tests[6 + i] = (struct CMUnitTest){
            .name = names[i], .test_func = golden_manifest, .initial_state = (void *)&goldens[i]};
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
