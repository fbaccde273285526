/*
 * gcluster deploy BLUEPRINT: read the blueprint, then either write its Kubernetes objects
 * (--dry-run-out) or bring the cluster it names up to it (deploy/) and write the report.
 */
#include "cli/blueprint.h"
#include "gcluster/deploy.h"
#include "gcluster/emit.h"
#include "gcluster/gcp.h"
#include "gcluster/kueue.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct deploy_args {
    cli_globals g;
    cli_list vars;
    const char *deployment_file;
    const char *validation_level;
    const char *head_pool;
    const char *dry_run_out;
    const char *output;
    const char *manifests_dir;
    const char *manifests_mirror;
    bool upgrade;
    bool plan;
    bool auto_approve;
    bool create_node_pools;
    bool overwrite_deployment;
    bool download_dependencies;
} deploy_args;

/* Google's deploy levels for a failed blueprint validator. */
static const char *const validation_levels[] = {"ERROR", "WARNING", "IGNORE", NULL};
static const cli_values validation_level_values = {.names = validation_levels};

static const cli_option deploy_options[] = {
    CLI_BOOL(0, "plan", deploy_args, plan,
             "print every step (network, cluster, node pools, Kueue objects) and what would "
             "change; change nothing, not even the kubeconfig"),
    CLI_BOOL(0, "auto-approve", deploy_args, auto_approve,
             "create the missing Google Cloud resources with gcloud, in order, then apply the "
             "Kubernetes objects"),
    CLI_STRING(0, "pathways-head-np", deploy_args, head_pool, "NAME",
               "name of the Pathways head node pool (default cpu-np), in the plan and the "
               "Kueue flavor"),
    CLI_LIST(0, "vars", deploy_args, vars, "NAME=VALUE[,...]",
             "override blueprint variables (repeatable; values read as YAML scalars)"),
    CLI_STRING('d', "deployment-file", deploy_args, deployment_file, "FILE",
               "deployment file whose vars: override the blueprint's (--vars override it)"),
    /* Google's deploy takes -l as --validation-level; --location keeps its long name. */
    CLI_VALUES('l', "validation-level", deploy_args, validation_level, "LEVEL",
               &validation_level_values,
               "what a failed blueprint validator does: ERROR (exit 2, default), WARNING, "
               "IGNORE"),
    CLI_BOOL(0, "create-node-pools", deploy_args, create_node_pools,
             "the same as --auto-approve (its older name)"),
    /* Google's lines pass these two; what they control (a deployment directory, Terraform and
     * Packer) does not exist here, which --help says rather than refusing the line. */
    CLI_BOOL('w', "overwrite-deployment", deploy_args, overwrite_deployment,
             "Google's: overwrite an existing deployment directory; deploy writes none (a rerun "
             "updates the cluster in place), so it is accepted and changes nothing"),
    CLI_BOOL(0, "download-dependencies", deploy_args, download_dependencies,
             "Google's: download missing Terraform and Packer; deploy needs neither (only "
             "gcloud, for --auto-approve), so it is accepted and downloads nothing"),
    CLI_STRING(0, "dry-run-out", deploy_args, dry_run_out, "FILE|-",
               "write the Kubernetes objects in the order deploy applies them (the Kueue "
               "configuration; the cluster module's Network, ServiceAccount and "
               "CheckpointConfiguration; the gcsfuse and Filestore volumes) as YAML and stop; "
               "nothing is contacted"),
    CLI_STRING(0, "manifests-dir", deploy_args, manifests_dir, "DIR",
               "read the release manifests of what the blueprint installs (Kueue, JobSet, "
               "cert-manager) from DIR, each named NAME-VERSION.yaml (the files are listed "
               "below), instead of downloading them; each is still checked against its SHA-256"),
    CLI_STRING(0, "manifests-mirror", deploy_args, manifests_mirror, "URL",
               "download the release manifests from this https:// base URL (the same paths "
               "as under https://github.com) instead of GitHub"),
    CLI_BOOL(0, "upgrade", deploy_args, upgrade,
             "replace an older installed Kueue, JobSet or cert-manager with the blueprint's "
             "release (without it an older one is reported and left)"),
    CLI_VALUES('o', "output", deploy_args, output, NULL, &cli_text_formats,
               "the report as JSON or YAML (with --dry-run-out: the objects' format)"),
    CLI_END,
};

/* The objects without a cluster, in the order deploy applies them: YAML documents, or with
 * -o json one JSON List. */
static int write_objects(const gc_blueprint *bp, const char *head_pool, const char *path,
                         cli_format format, gc_error *err)
{
    json_t *objects;
    gc_buf warnings, text;
    gc_buf_init(&warnings);
    gc_buf_init(&text);
    int rc = gc_deploy_objects(bp, head_pool, GC_KUEUE_VERSION, &objects, &warnings, err);
    for (char *save, *line = strtok_r(warnings.data, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save))
        gc_warn(cli_events(), "%s", line);
    if (!rc && format == CLI_FORMAT_JSON) {
        json_t *list =
            json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", objects);
        gc_emit_json(list, true, &text);
        json_decref(list);
    } else if (!rc) {
        size_t count = json_array_size(objects);
        const json_t **docs = gc_xcalloc(count ? count : 1, sizeof(*docs));
        for (size_t i = 0; i < count; i++)
            docs[i] = json_array_get(objects, i);
        rc = gc_emit_yaml_documents(docs, count, &text, err);
        free(docs);
    }
    json_decref(objects);
    if (!rc)
        rc = cli_write_output("--dry-run-out", path, text.data, text.len, err);
    gc_buf_free(&warnings);
    gc_buf_free(&text);
    return rc;
}

/* The report is written also after a failure: what was found and done until then is true. */
static int deploy_to_cluster(const deploy_args *a, const gc_blueprint *bp, cli_format format,
                             gc_error *err)
{
    cli_globals g = cli_blueprint_globals(&a->g, bp);
    gc_deploy_request r = {.head_pool = a->head_pool,
                           .plan = a->plan,
                           .project = a->g.project,
                           .cluster = a->g.cluster,
                           .location = a->g.location,
                           .manifests_dir = a->manifests_dir,
                           .manifests_mirror = a->manifests_mirror,
                           .upgrade = a->upgrade};
    bool approve = (a->auto_approve || a->create_node_pools) && !a->plan;
    gc_deploy_result result;
    int rc = gc_deploy_run(bp, &r, approve, NULL, &(gc_deploy_connect){cli_blueprint_connect, &g},
                           cli_events(), &result, err);
    if (format == CLI_FORMAT_TEXT)
        cli_render_deploy_text(stdout, stderr, &result);
    rc = cli_pipeline_end(&g, result.kube,
                          format == CLI_FORMAT_TEXT ? NULL : cli_deploy_json(&result), format, rc,
                          err);
    gc_deploy_result_free(&result);
    return rc;
}

static int deploy_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    deploy_args *a = args;
    if (parsed->positional_count != 1)
        return gc_fail(err, GC_EXIT_USAGE,
                       "deploy takes one blueprint file: gcluster deploy BLUEPRINT.yaml "
                       "[--plan] (got %zu arguments)",
                       parsed->positional_count);
    if (a->head_pool && !gc_gcp_is_gke_name(a->head_pool))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--pathways-head-np %s: a node pool name is 1-40 lower-case letters, "
                       "digits and hyphens, starting with a letter",
                       a->head_pool);
    if (a->plan && (a->create_node_pools || a->auto_approve))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--plan changes nothing, so it cannot be combined with %s",
                       a->auto_approve ? "--auto-approve" : "--create-node-pools");
    if (a->manifests_mirror && strncmp(a->manifests_mirror, "https://", 8))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--manifests-mirror %s: give an https:// URL (release files are fetched "
                       "over HTTPS only)",
                       a->manifests_mirror);
    if (a->manifests_dir && a->manifests_mirror)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--manifests-dir and --manifests-mirror both say where the release files "
                       "come from; give one");
    struct stat st;
    if (a->manifests_dir && (stat(a->manifests_dir, &st) || !S_ISDIR(st.st_mode)))
        return gc_fail(err, GC_EXIT_USAGE, "--manifests-dir %s: not a folder", a->manifests_dir);
    cli_format format;
    int rc = cli_format_parse(a->output, false, &format, err);
    if (!rc)
        rc = cli_check_output_path("--dry-run-out", a->dry_run_out, NULL, err);
    if (rc)
        return rc;
    gc_blueprint_options o = {.deployment_file = a->deployment_file};
    if (a->validation_level &&
        (rc = gc_validation_level_parse(a->validation_level, &o.validation, err)) != 0)
        return rc;
    gc_blueprint bp;
    rc = cli_blueprint_open(parsed->positional[0], &a->vars, &o, &bp, err);
    if (rc)
        return rc;
    for (size_t i = 0; i < bp.warnings.count; i++)
        gc_warn(cli_events(), "%s", bp.warnings.items[i]);
    if (a->dry_run_out)
        rc = write_objects(&bp, a->head_pool, a->dry_run_out, format, err);
    else if ((rc = gc_kueue_check(&bp, a->head_pool, err)) == 0)
        rc = deploy_to_cluster(a, &bp, format, err);
    gc_blueprint_free(&bp);
    return rc;
}

static const char *deploy_footer(void)
{
    static gc_buf text;
    return cli_manifests_dir_help(&text, NULL, gc_deploy_release_files);
}

const cli_command cmd_deploy = {
    .name = "deploy",
    .summary = "make a cluster Pathways-ready from a Cluster Toolkit blueprint",
    .usage = "deploy BLUEPRINT [--plan | --auto-approve] [--pathways-head-np NAME] [-d FILE] "
             "[--vars NAME=VALUE] [-l LEVEL] [--manifests-dir DIR] [--upgrade]",
    .description =
        "Reads the blueprint (evaluated as Cluster Toolkit does: vars, expressions, module\n"
        "outputs, deployment files) and runs its stages in the order the report lists first:\n"
        "what its vpc, service-account, cloud-storage-bucket, gke-cluster, resource-policy and\n"
        "gke-node-pool modules create (each a gcloud command, checked first with a describe;\n"
        "--auto-approve creates the missing ones, and a rerun resumes), the cluster's\n"
        "credentials, then, on the cluster, installs what the kubectl-apply module installs "
        "(Kueue,\n"
        "JobSet, cert-manager at the module's versions, from each project's release manifest\n"
        "checked against the SHA-256 gcluster keeps, with the module's settings: Kueue's\n"
        "TopologyAwareScheduling gate, the toleration of GKE's system-pool taint), waits until\n"
        "their controllers are Available and their webhooks have ready endpoints, and applies\n"
        "the Kueue configuration by server-side apply, as the kubectl-apply module renders it:\n"
        "the blueprint's kueue.config_path template, else with Pathways the flavors\n"
        "flavor-<accelerator> and pathways-flavor, the ClusterQueue cluster-queue with one\n"
        "[google.com/tpu, cpu, memory] group, LocalQueue user-queue and five PriorityClasses,\n"
        "then the gke-cluster module's objects and each gke-persistent-volume's gcsfuse or\n"
        "Filestore PersistentVolume and claim (a Filestore volume's NFS server is its\n"
        "instance's IP address, read with gcloud just before), and waits until Kueue makes\n"
        "the ClusterQueues Active.\n"
        "Quotas come from kueue.config_template_vars: tpu_quota, tpu_flavor_cpu_quota,\n"
        "tpu_flavor_memory_quota (999999T), pathways_cpu_quota (480),\n"
        "pathways_memory_quota (2000G). The cluster is the blueprint's unless --cluster or\n"
        "--context says otherwise. Running it again changes nothing.",
    .options = deploy_options,
    .operands = &cli_paths,
    .args_size = sizeof(deploy_args),
    .run = deploy_run,
    .footer = deploy_footer,
};
