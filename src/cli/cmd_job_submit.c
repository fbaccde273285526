/*
 * gcluster job submit: flags (Google's gcluster names and short forms, plus --queue, --topology,
 * --priority, --dry-run-out, --dry-run=server and --output), then job/ plans the submit and, unless
 * it is offline, carries it out against the cluster, after deploy/'s installer has installed a
 * missing JobSet or Kueue (unless --skip-prereqs); this file writes what came of it.
 */
#include "cli/cli.h"
#include "cli/render.h"

#include "gcluster/catalog.h"
#include "gcluster/connect.h"
#include "gcluster/deploy.h"
#include "gcluster/diagnose.h"
#include "gcluster/emit.h"
#include "gcluster/job.h"
#include "gcluster/submit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct submit_args {
    cli_globals g;
    gc_submit_request r;
    cli_list mounts;
    cli_list env;
    cli_list env_files;
    cli_list proxy_env;
    cli_list server_env;
    cli_list worker_env;
    cli_list node_constraints;
    cli_list exit_codes;
    const char *output;
    bool connect;
    gc_connect_request connect_request;
    bool run_sps; /* --pathways-run-sps-workload */
    const char *sps_service;
    long local_port;
    bool local_port_set;
    const char *templates_dir; /* --gke-custom-templates-path */
    gc_prereq_request prereqs; /* JobSet and Kueue, installed when missing */
} submit_args;

#define R(field) r.field

/* gc_submit_prepare checks it itself, with a message that explains each choice. */
static const char *const dry_run_names[] = {"server", "client", NULL};
static const cli_values dry_runs = {.names = dry_run_names, .open = true};

static const cli_option submit_options[] = {
    CLI_GROUP("Workload"),
    CLI_STRING('n', "name", submit_args, R(name), "NAME",
               "name of the JobSet (DNS label; at most 22 characters with --pathways, else 28)"),
    CLI_STRING('e', "command", submit_args, R(command), "COMMAND",
               "command run by /bin/bash -c in the workload container (any bytes)"),
    CLI_STRING('i', "image", submit_args, R(image), "IMAGE",
               "pre-built container image, with registry (us-docker.pkg.dev/p/r/img:tag)"),
    CLI_STRING('B', "base-image", submit_args, R(base_image), "IMAGE",
               "build an image: this base plus --build-context as one layer (no Docker)"),
    CLI_STRING('b', "build-context", submit_args, R(build_context), "DIR",
               "directory added to --base-image (pushed to $GCLUSTER_IMAGE_REPO)"),
    CLI_STRING('f', "platform", submit_args, R(platform), "OS/ARCH",
               "platform of the base image to build on (default linux/amd64)"),
    CLI_LIST(0, "mount", submit_args, mounts, "SRC;DEST[;ro|rw][;options=O]",
             "mount gs://BUCKET[/DIR] (;options=, ;attributes=K=V), pvc://CLAIM, "
             "filestore://INSTANCE/SHARE (name or IP) or /HOST/PATH; SRC:DEST[:ro|rw] too "
             "(repeatable)"),
    CLI_LIST(0, "env", submit_args, env, "KEY=VALUE",
             "environment variable for the workload container (repeatable)"),
    CLI_LIST(0, "env-file", submit_args, env_files, "FILE",
             "KEY=VALUE lines for the workload container (# comments, outer quotes dropped, no "
             "$ expansion)"),
    CLI_STRING(0, "service-account", submit_args, R(service_account), "NAME",
               "Kubernetes service account of the pods"),
    CLI_STRING(0, "image-pull-secret", submit_args, R(image_pull_secret), "S1,S2",
               "comma-separated secrets for pulling images"),
    CLI_BOOL(0, "verbose", submit_args, R(verbose),
             "verbose TPU/GPU logging in the workload (and trace API requests, like -v)"),
    CLI_VALUES(0, "gke-custom-templates-path", submit_args, templates_dir, "DIR", &cli_paths,
               "merge the overlays in DIR onto the generated objects (job gke-template-extract "
               "writes them; README.md)"),

    CLI_GROUP("Compute"),
    CLI_VALUES(0, "compute-type", submit_args, R(compute_type), "TYPE", &cli_compute_types,
               "v6e-16, v5p-8, tpu7x-16, ct6e-standard-4t, tpu7x or tpu-v7x-slice (dynamic "
               "slicing; with --topology), l4-1, n2-standard-32, ..."),
    CLI_STRING(0, "topology", submit_args, R(topology), "AxB[xC]",
               "TPU slice shape (4x4, 2x2x2); must agree with a sized --compute-type"),
    CLI_INT(0, "num-slices", submit_args, R(num_slices), "N",
            "number of TPU slices (or GPU/CPU groups) (default 1)"),
    CLI_INT_SEEN(0, "num-nodes", submit_args, R(num_nodes), R(num_nodes_set), "N",
                 "hosts per group for GPU/CPU jobs (TPU: from the topology) (default 1)"),
    CLI_BOOL(0, "gke-disable-parallel-containers", submit_args, R(disable_parallel_containers),
             "run one container per TPU7x host instead of two"),
    CLI_STRING(0, "cpu-affinity", submit_args, R(cpu_affinity), "numa",
               "numa: Guaranteed QoS so TPU containers get exclusive NUMA-local CPUs"),
    CLI_BOOL(0, "gke-mtc-enabled", submit_args, R(mtc_enabled),
             "multi-tier checkpointing: GKE's MTC volume on the TPU hosts"),
    CLI_STRING(0, "gke-mtc-ramdisk-dir", submit_args, R(mtc_ramdisk_dir), "DIR",
               "where the MTC volume is mounted (default /tmp/mtc_checkpoints)"),

    CLI_GROUP("Scheduling"),
    CLI_STRING('q', "queue", submit_args, R(queue), "QUEUE",
               "Kueue LocalQueue (default: discovered; offline \"user-queue\")"),
    CLI_STRING(0, "priority", submit_args, R(priority), "CLASS",
               "PriorityClass: very-low, low, medium, high, very-high or your own"),
    CLI_STRING(0, "placement-policy", submit_args, R(placement_policy), "NAME",
               "GKE compact placement policy of the TPU/GPU nodes"),
    CLI_LIST(0, "node-constraint", submit_args, node_constraints, "KEY=VALUE[|VALUE]",
             "extra node label requirement for TPU/GPU pods (repeatable)"),
    CLI_STRING(0, "gke-scheduler", submit_args, R(scheduler), "NAME",
               "scheduler for the TPU/GPU pods (e.g. gke.io/topology-aware-auto)"),
    CLI_STRING(0, "gke-nap-provisioning", submit_args, R(nap_provisioning), "MODEL",
               "node auto-provisioning capacity: on-demand, spot or reservation"),
    CLI_STRING(0, "gke-nap-reservation", submit_args, R(nap_reservation), "NAME",
               "reservation for --gke-nap-provisioning=reservation"),

    CLI_GROUP("Lifecycle"),
    CLI_INT_SEEN(0, "restarts", submit_args, R(restarts), R(restarts_set), "N",
                 "times the whole JobSet may be recreated after a failure (default 1; 30 with "
                 "--pathways-deploy-sps)"),
    CLI_LIST(0, "restart-on-exit-codes", submit_args, exit_codes, "C1,C2",
             "exit codes that restart the JobSet; any other failure fails it at once"),
    CLI_STRING(0, "gke-ttl-after-finished", submit_args, R(ttl_after_finished), "DURATION",
               "keep the finished JobSet this long, e.g. 5m, 1h (default 1h)"),
    CLI_STRING(0, "grace-period", submit_args, R(grace_period), "DURATION",
               "time to stop cleanly (checkpoints) before pods are killed (default 30s)"),
    CLI_BOOL(0, "await-job-completion", submit_args, R(await_completion),
             "wait until the job finishes; exit 3 if it fails"),
    CLI_STRING(0, "timeout", submit_args, R(timeout), "DURATION",
               "wait at most this long for completion (implies --await-job-completion; 0 looks "
               "once and does not wait)"),
    CLI_VALUES('o', "dry-run-out", submit_args, R(dry_run_out), "FILE|-", &cli_paths,
               "write the manifest to FILE (or stdout) without contacting any cluster"),
    CLI_VALUES(0, "dry-run", submit_args, R(dry_run), NULL, &dry_runs,
               "server: let the cluster's webhooks and schemas validate it, create nothing"),
    CLI_VALUES(0, "output", submit_args, output, NULL, &cli_text_formats,
               "what was submitted as JSON or YAML (with --dry-run-out: the manifest's format)"),
    CLI_VALUES(0, "manifests-dir", submit_args, prereqs.manifests_dir, "DIR", &cli_paths,
               "install a missing JobSet or Kueue from the release files in DIR "
               "(NAME-VERSION.yaml, listed below), checked against their SHA-256"),
    CLI_STRING(0, "manifests-mirror", submit_args, prereqs.manifests_mirror, "URL",
               "download a missing JobSet's or Kueue's release file from this https:// base "
               "URL (GitHub's paths) instead of GitHub"),

    CLI_GROUP("Pathways"),
    CLI_BOOL(0, "pathways", submit_args, R(pathways),
             "run as a Pathways job: resource manager, IFRT proxy and TPU workers"),
    CLI_STRING(0, "pathways-gcs-location", submit_args, R(pathways_gcs_location),
               "gs://BUCKET/PREFIX", "scratch space for Pathways (required with --pathways)"),
    CLI_BOOL(0, "pathways-headless", submit_args, R(pathways_headless),
             "only the Pathways servers, for a JAX client outside the cluster"),
    CLI_BOOL(0, "connect", submit_args, connect,
             "headless: then connect to its IFRT proxy as `job connect` does (-- CMD runs CMD)"),
    CLI_BOOL(0, "pathways-deploy-sps", submit_args, R(pathways_deploy_sps),
             "a Shared Pathways Service: resource manager and TPU workers, no proxy, for many "
             "clients"),
    CLI_BOOL(0, "pathways-run-sps-workload", submit_args, run_sps,
             "run --command (or -- CMD) here against a Shared Pathways Service, through a proxy "
             "of its own"),
    CLI_STRING(0, "pathways-service", submit_args, sps_service, "NAME",
               "the service for --pathways-run-sps-workload (or its address "
               "NAME-pathways-head-0-0.NAME:29001; default: --name)"),
    CLI_INT_SEEN(0, "local-port", submit_args, local_port, local_port_set, "PORT",
                 "with --connect or --pathways-run-sps-workload: where the proxy is reached "
                 "(default 29000; 0: any free port)"),
    CLI_STRING(0, "pathways-head-np", submit_args, R(pathways_head_np), "POOL",
               "node pool of the head pod (default: cpu-np, else pathways-np)"),
    CLI_STRING(0, "pathways-proxy-server-image", submit_args, R(pathways_proxy_image), "IMAGE",
               "IFRT proxy image (default .../pathways/proxy_server:latest)"),
    CLI_STRING(0, "pathways-server-image", submit_args, R(pathways_server_image), "IMAGE",
               "resource manager image (default .../pathways/server:latest)"),
    CLI_STRING(0, "pathways-worker-image", submit_args, R(pathways_worker_image), "IMAGE",
               "TPU worker image (default: the server image)"),
    CLI_STRING(0, "pathways-colocated-python-sidecar-image", submit_args, R(pathways_sidecar_image),
               "IMAGE", "colocated Python sidecar beside every TPU worker"),
    CLI_INT_SEEN(0, "pathways-elastic-slices", submit_args, R(pathways_elastic_slices),
                 R(pathways_elastic_slices_set), "N",
                 "slices that may be missing while the job keeps running (default 0)"),
    CLI_INT_SEEN(0, "pathways-max-slice-restarts", submit_args, R(pathways_max_slice_restarts),
                 R(pathways_max_slice_restarts_set), "N",
                 "restarts allowed per slice with --pathways-elastic-slices (default 1)"),
    CLI_STRING(0, "pathways-proxy-args", submit_args, R(pathways_proxy_args), "ARGS",
               "extra arguments for pathways-proxy (split on whitespace)"),
    CLI_STRING(0, "pathways-server-args", submit_args, R(pathways_server_args), "ARGS",
               "extra arguments for pathways-rm (split on whitespace)"),
    CLI_STRING(0, "pathways-worker-args", submit_args, R(pathways_worker_args), "ARGS",
               "extra arguments for pathways-worker (split on whitespace)"),
    CLI_LIST(0, "pathways-proxy-env", submit_args, proxy_env, "KEY=VALUE",
             "environment variable for pathways-proxy only (repeatable)"),
    CLI_LIST(0, "pathways-server-env", submit_args, server_env, "KEY=VALUE",
             "environment variable for pathways-rm only (repeatable)"),
    CLI_LIST(0, "pathways-worker-env", submit_args, worker_env, "KEY=VALUE",
             "environment variable for pathways-worker only (repeatable)"),
    CLI_JOB_GLOBALS,
    CLI_END,
};

static void submit_defaults(void *args)
{
    gc_submit_request_defaults(&((submit_args *)args)->r);
}

static void copy_list(const cli_list *from, const char **to, size_t *count)
{
    for (size_t i = 0; i < from->count; i++)
        to[i] = from->items[i];
    *count = from->count;
}

/* --output; -o stays --dry-run-out, as in Google's gcluster. */
static int parse_output(const char *text, cli_format *format, gc_error *err)
{
    if (cli_format_parse(text, false, format, err) == 0)
        return 0;
    return gc_fail(err, GC_EXIT_USAGE,
                   "--output %s: use text, json or yaml (-o is --dry-run-out, as in Google's "
                   "gcluster)",
                   text);
}

/* The manifest without a cluster: YAML headed by what was defaulted, or the JobSet as JSON. */
static int write_manifest(const gc_submit_plan *plan, cli_format format, gc_error *err)
{
    gc_buf text;
    gc_buf_init(&text);
    int rc = 0;
    if (format == CLI_FORMAT_JSON) {
        json_t *jobset;
        rc = gc_submit_plan_jobset(plan, &jobset, err);
        /* With gateways, every object in one document, as kubectl writes several (a List). */
        if (!rc && json_array_size(plan->gateways)) {
            json_t *items = json_deep_copy(plan->gateways);
            json_array_append(items, jobset);
            json_decref(jobset);
            jobset =
                json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", items);
        }
        if (!rc)
            gc_emit_json(jobset, true, &text);
        json_decref(jobset);
    } else {
        rc = gc_submit_render_offline(plan, &text, err);
    }
    if (!rc)
        rc = cli_write_output("--dry-run-out", plan->output_path, text.data, text.len, err);
    const gc_workload *w = &plan->workload;
    if (!rc && strcmp(plan->output_path, "-") != 0)
        cli_line(stderr, "Wrote the %sJobSet \"%s\" to %s.",
                 w->sps        ? "Shared Pathways Service "
                 : w->pathways ? (w->headless ? "headless Pathways " : "Pathways ")
                               : "",
                 w->name, plan->output_path);
    gc_buf_free(&text);
    return rc;
}

typedef struct live_submit {
    gc_submit_plan *plan;
    cli_format format;
    gc_connect_request *connect; /* --connect: what to connect to once it is created */
    gc_prereq_request *prereqs;
} live_submit;

/* What installing the prerequisites found and did, on stderr before the job's own lines: what
 * was installed (or a dry run would install), and what the cluster still lacks for a job. An
 * older release that runs is not mentioned: the submit's own checks say whether it can run
 * this job (Kueue 0.15.0 or later serves kueue.x-k8s.io/v1beta2). */
static void render_prereqs(const gc_prereq_report *rep, bool plan)
{
    for (size_t i = 0; i < rep->install_count; i++) {
        const gc_deploy_install *in = &rep->installs[i];
        if (in->state == GC_INSTALL_INSTALLED)
            cli_line(stderr, "Installed %s %s (%zu objects, from %s): the cluster did not have it.",
                     in->name, in->version, in->objects, in->source);
        else if (in->state == GC_INSTALL_MISSING && plan)
            cli_line(stderr,
                     "%s is not installed: a submit without --dry-run installs %s %s from %s.",
                     in->name, in->name, in->version, in->source);
    }
    if (rep->priority_classes.count) {
        gc_buf names;
        gc_buf_init(&names);
        for (size_t i = 0; i < rep->priority_classes.count; i++)
            gc_buf_printf(&names, "%s%s", i ? ", " : "", rep->priority_classes.items[i]);
        cli_line(stderr, "%s the PriorityClasses %s (the cluster had none of its own).",
                 plan ? "A submit without --dry-run applies" : "Applied", names.data);
        gc_buf_free(&names);
    }
    if (rep->priority_classes_unknown)
        gc_warn(cli_events(),
                "you may not list PriorityClasses, so whether the cluster has classes of its own "
                "is unknown and none were applied (gcluster deploy applies very-low, low, "
                "medium, high and very-high)");
    if (rep->needs_queue)
        cli_line(stderr,
                 "Kueue %s no ClusterQueue or LocalQueue yet, so no job is admitted: apply your "
                 "blueprint's queues with gcluster deploy BLUEPRINT, or create a LocalQueue and "
                 "pass --queue (gcluster makes no queue itself: quotas are the blueprint's).",
                 plan ? "would have" : "has");
}

/* Google's gcluster installs JobSet and Kueue when a submit finds them missing; so does this,
 * through deploy's installer: the submit's first round trip found them missing and stopped, so
 * they are installed and the submit runs again. A dry run only says what a submit would install
 * (the job is not checked against a cluster without them). */
static int install_prereqs(gc_kube *kube, const live_submit *s, gc_submit_result *result,
                           bool *again, gc_error *err)
{
    gc_prereq_request q = *s->prereqs;
    q.plan = s->plan->mode != GC_SUBMIT_CREATE;
    q.jobset_missing = result->jobset_missing;
    q.kueue_missing = result->kueue_missing;
    gc_prereq_report rep;
    int rc = gc_prereq_install(kube, &q, cli_events(), &rep, err);
    render_prereqs(&rep, q.plan);
    gc_prereq_report_free(&rep);
    *again = !rc && !q.plan;
    if (!rc && q.plan)
        cli_line(stderr, "The job itself was not checked: a server dry run needs %s installed.",
                 q.jobset_missing && q.kueue_missing ? "JobSet and Kueue"
                 : q.jobset_missing                  ? "JobSet"
                                                     : "Kueue");
    return rc;
}

/* The submit, with the prerequisites it found missing installed first (once: a cluster that
 * still lacks them after the install is an error, not a loop). */
static int submit_installing(gc_kube *kube, const live_submit *s, gc_submit_result *result,
                             bool *created, gc_error *err)
{
    *created = false;
    int rc = gc_submit_live(kube, s->plan, cli_events(), result, err);
    if (rc || !(result->jobset_missing || result->kueue_missing))
        return (*created = rc == 0, rc);
    bool again = false;
    rc = install_prereqs(kube, s, result, &again, err);
    if (rc || !again)
        return rc;
    gc_submit_result_free(result);
    rc = gc_submit_live(kube, s->plan, cli_events(), result, err);
    if (!rc && (result->jobset_missing || result->kueue_missing))
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "%s was installed, but the cluster does not serve its API yet; run the "
                       "submit again in a minute",
                       result->jobset_missing ? "JobSet" : "Kueue");
    *created = rc == 0;
    return rc;
}

/* Text is written as soon as each part is known (the job is created long before an awaited one
 * ends); JSON and YAML are one document at the end. */
static int submit_with(gc_kube *kube, void *ctx, gc_error *err)
{
    live_submit *s = ctx;
    const gc_events *ev = cli_events();
    gc_submit_result result;
    bool created;
    int rc = submit_installing(kube, s, &result, &created, err);
    if (created && s->format == CLI_FORMAT_TEXT) {
        cli_render_submit_text(stdout, &result);
        fflush(stdout);
    }
    if (created && s->plan->await_completion)
        rc = gc_submit_await(kube, s->plan, ev, &result, err);
    if (created && s->connect)
        rc = cli_connect(kube, s->connect, false, err);
    /* A job that failed, or is still not done when the wait ends: say why. */
    gc_diagnosis why;
    gc_error why_err = {0};
    bool diagnosed =
        created && rc && result.final.text[0] && gc_job_why(kube, result.name, &why, &why_err) == 0;
    if (created && s->format == CLI_FORMAT_TEXT) {
        cli_render_submit_final_text(stdout, &result, diagnosed ? &why : NULL);
    } else if (created) {
        gc_error print_err = {0};
        if (cli_print_document(cli_submit_json(&result, diagnosed ? &why : NULL), s->format,
                               &print_err) &&
            !rc)
            rc = gc_fail(err, print_err.code, "%s", print_err.message);
    }
    gc_submit_result_free(&result);
    return rc;
}

/* --connect [-- CMD ...]: the job connect that follows the submit, checked before anything is
 * sent, like every other flag. */
static int prepare_connect(submit_args *a, const cli_parsed *parsed, cli_format format,
                           char **command, gc_error *err)
{
    if (parsed->dashdash && !a->connect)
        return gc_fail(err, GC_EXIT_USAGE,
                       "-- %s: a command after -- runs with --connect only (job submit "
                       "--pathways-headless --connect -- CMD)",
                       parsed->positional_count > parsed->dashdash_at
                           ? parsed->positional[parsed->dashdash_at]
                           : "");
    if (!a->connect)
        return 0;
    if (!a->r.pathways_headless)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--connect reaches the IFRT proxy of a headless job: add "
                       "--pathways-headless (a full Pathways job runs its client in the cluster)");
    if (a->r.dry_run_out || a->r.dry_run || a->r.await_completion || a->r.timeout ||
        format != CLI_FORMAT_TEXT)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--connect stays connected to the job it created: it does not go with "
                       "--dry-run-out, --dry-run, --await-job-completion, --timeout or --output");
    gc_connect_request *c = &a->connect_request;
    c->name = a->r.name;
    c->local_port = a->local_port_set ? a->local_port : GC_CONNECT_PROXY_PORT;
    c->stop_fd = -1;
    if (parsed->dashdash) {
        for (size_t i = parsed->dashdash_at; i < parsed->positional_count; i++)
            command[i - parsed->dashdash_at] = (char *)parsed->positional[i];
        c->command = command;
    }
    return gc_job_connect_check(c, err);
}

static int sps_with(gc_kube *kube, void *ctx, gc_error *err)
{
    return cli_sps_run(kube, ctx, err);
}

/* --pathways-run-sps-workload: no JobSet of its own, a client of the service (gc_sps_run). Its
 * flags are checked before anything is sent. */
static int run_sps_workload(submit_args *a, const cli_parsed *parsed, gc_error *err)
{
    gc_submit_request *r = &a->r;
    if (r->pathways_deploy_sps || a->connect || r->dry_run_out || r->dry_run ||
        r->await_completion || r->timeout)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--pathways-run-sps-workload runs your program here against a running "
                       "service: it does not go with --pathways-deploy-sps, --connect, "
                       "--dry-run-out, --dry-run, --await-job-completion or --timeout");
    if (r->command && parsed->dashdash)
        return gc_fail(err, GC_EXIT_USAGE,
                       "give the program once: --command CMD or -- CMD ARGS..., not both");
    gc_compute compute;
    char shape[160] = "";
    gc_sps_run_request q = {
        .service = a->sps_service ? a->sps_service : r->name,
        .slices = r->num_slices,
        .proxy_image = r->pathways_proxy_image,
        .user = getenv("USER"),
        .proxy_env = a->proxy_env.items,
        .proxy_env_count = a->proxy_env.count,
        .proxy_args = r->pathways_proxy_args,
        .connect = {.local_port = a->local_port_set ? a->local_port : GC_CONNECT_PROXY_PORT,
                    .stop_fd = -1,
                    .name = "sps"},
    };
    if (r->compute_type) {
        int rc = gc_catalog_resolve(r->compute_type, r->topology, NULL, &compute, err);
        if (rc)
            return rc;
        if (compute.kind != GC_ACCEL_TPU)
            return gc_fail(err, GC_EXIT_USAGE,
                           "--compute-type %s: a Shared Pathways Service serves TPU slices",
                           r->compute_type);
        snprintf(shape, sizeof(shape), "--compute-type %s%s%s", r->compute_type,
                 r->topology ? " --topology " : "", r->topology ? r->topology : "");
        q.instance_type = compute.pathways_instance_type;
        q.shape_flags = shape;
    }
    char *command[CLI_POSITIONAL_MAX + 4] = {0};
    if (r->command) {
        command[0] = "/bin/sh";
        command[1] = "-c";
        command[2] = (char *)r->command;
        q.connect.command = command;
    } else if (parsed->dashdash && parsed->positional_count > parsed->dashdash_at) {
        for (size_t i = parsed->dashdash_at; i < parsed->positional_count; i++)
            command[i - parsed->dashdash_at] = (char *)parsed->positional[i];
        q.connect.command = command;
    }
    int rc = gc_sps_run_check(&q, err);
    if (!rc)
        rc = cli_with_kube(&a->g, sps_with, &q, err);
    return rc;
}

static int submit_run(void *opaque, const cli_parsed *parsed, gc_error *err)
{
    submit_args *a = opaque;
    size_t before = parsed->dashdash ? parsed->dashdash_at : parsed->positional_count;
    if (before)
        return gc_fail(err, GC_EXIT_USAGE,
                       "job submit takes no arguments (got \"%s\"); did you mean --name %s?",
                       parsed->positional[0], parsed->positional[0]);
    cli_format format;
    int rc = parse_output(a->output, &format, err);
    if (!rc)
        rc = cli_check_output_path("--dry-run-out", a->r.dry_run_out, "--output", err);
    if (rc)
        return rc;
    gc_submit_request *r = &a->r;
    copy_list(&a->mounts, r->mounts, &r->mount_count);
    copy_list(&a->env, r->env, &r->env_count);
    copy_list(&a->env_files, r->env_files, &r->env_file_count);
    copy_list(&a->proxy_env, r->pathways_proxy_env, &r->pathways_proxy_env_count);
    copy_list(&a->server_env, r->pathways_server_env, &r->pathways_server_env_count);
    copy_list(&a->worker_env, r->pathways_worker_env, &r->pathways_worker_env_count);
    copy_list(&a->node_constraints, r->node_constraints, &r->node_constraint_count);
    copy_list(&a->exit_codes, r->restart_on_exit_codes, &r->restart_on_exit_code_count);
    r->verbose = r->verbose || a->g.verbose > 0;
    if (r->verbose && !a->g.verbose)
        a->g.verbose = 1;
    cli_apply_stored_defaults(&a->g);
    r->project = a->g.project;
    r->location = a->g.location;
    r->skip_prereqs = a->g.skip_prereqs;
    a->prereqs.skip = a->g.skip_prereqs;
    r->ns = a->g.ns;
    if (a->run_sps && a->templates_dir)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--gke-custom-templates-path changes the objects a submit generates; "
                       "--pathways-run-sps-workload generates none (drop one of them)");
    if (a->run_sps && (a->prereqs.manifests_dir || a->prereqs.manifests_mirror))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--pathways-run-sps-workload creates no JobSet and installs nothing: "
                       "drop --manifests-dir and --manifests-mirror");
    if (a->run_sps)
        return run_sps_workload(a, parsed, err);
    rc = gc_prereq_check(&a->prereqs, err);
    if (rc)
        return rc;

    /* Bad input is reported before anything (credentials included) is touched. */
    gc_submit_plan plan;
    rc = gc_submit_prepare(r, &plan, err);
    if (!rc && a->templates_dir)
        rc = gc_submit_overlays_load(&plan, a->templates_dir, err);
    for (size_t i = 0; !rc && i < plan.notices.count; i++)
        gc_notice(cli_events(), "%s", plan.notices.items[i]);
    char *command[CLI_POSITIONAL_MAX + 1] = {0};
    if (!rc)
        rc = prepare_connect(a, parsed, format, command, err);
    if (!rc && plan.mode == GC_SUBMIT_OFFLINE &&
        (a->prereqs.manifests_dir || a->prereqs.manifests_mirror))
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--dry-run-out contacts no cluster and installs nothing: drop "
                     "--manifests-dir and --manifests-mirror");
    if (!rc && plan.mode == GC_SUBMIT_OFFLINE)
        rc = write_manifest(&plan, format, err);
    else if (!rc)
        rc = cli_with_kube(&a->g, submit_with,
                           &(live_submit){.plan = &plan,
                                          .format = format,
                                          .connect = a->connect ? &a->connect_request : NULL,
                                          .prereqs = &a->prereqs},
                           err);
    gc_submit_plan_free(&plan);
    return rc;
}

static const char *submit_footer(void)
{
    static gc_buf text;
    return cli_manifests_dir_help(&text, gc_catalog_help(), gc_prereq_release_files);
}

const cli_command cmd_job_submit = {
    .name = "submit",
    .summary = "build the JobSet, check it against the cluster and create it",
    .usage = "job submit --name NAME --compute-type TYPE (--command CMD --image IMAGE | "
             "--pathways-headless) [flags]",
    .description =
        "Pathways: add --pathways --pathways-gcs-location gs://BUCKET/PREFIX. With "
        "--dry-run-out FILE the manifest\nis written without contacting any cluster; --output "
        "json writes it (or what was submitted) as JSON.\n"
        "Exit codes: 0 created (or succeeded), 1 API or runtime failure, 2 bad input (nothing "
        "sent),\n3 the job failed (--await-job-completion).",
    .options = submit_options,
    .args_size = sizeof(submit_args),
    .init_args = submit_defaults,
    .run = submit_run,
    .footer = submit_footer,
};
