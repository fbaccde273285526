/*
 * gcluster job gke-template-extract [--output-dir DIR] [--overwrite]
 */
#include "cli/cli.h"
#include "cli/render.h"

#include "gcluster/submit.h"

#include <stdio.h>

typedef struct extract_args {
    cli_globals g;
    const char *output_dir;
    bool overwrite;
    const char *gke_namespace;
    bool skip_prereqs;
} extract_args;

static const cli_option extract_options[] = {
    CLI_VALUES(0, "output-dir", extract_args, output_dir, "DIR", &cli_paths,
               "where to write the files (default ./gke-templates)"),
    CLI_BOOL(0, "overwrite", extract_args, overwrite, "replace files that are there already"),
    CLI_GROUP("Google's gcluster job flags (refused here: the files do not depend on a cluster)"),
    CLI_STRING(0, "gke-namespace", extract_args, gke_namespace, "NAMESPACE",
               "refused: the overlays apply in whatever namespace a job goes to"),
    CLI_BOOL(0, "skip-prereqs", extract_args, skip_prereqs, "refused: nothing is checked"),
    CLI_END,
};

static int extract_run(void *args, const cli_parsed *parsed, gc_error *err)
{
    extract_args *a = args;
    if (parsed->positional_count)
        return gc_fail(err, GC_EXIT_USAGE,
                       "job gke-template-extract takes no arguments (got \"%s\"); name the "
                       "directory with --output-dir",
                       parsed->positional[0]);
    /* The files are the same for every cluster, so a flag that names one would do nothing. */
    int rc = cli_refuse_cluster_flags(&a->g, a->gke_namespace, a->skip_prereqs,
                                      "job gke-template-extract",
                                      "the files it writes are the same for every cluster (pass "
                                      "--gke-custom-templates-path to job submit)",
                                      err);
    if (rc)
        return rc;
    const char *dir = a->output_dir ? a->output_dir : "gke-templates";
    gc_strings written = {0};
    rc = gc_submit_templates_extract(dir, a->overwrite, &written, err);
    for (size_t i = 0; i < written.count; i++)
        cli_line(stdout, "Wrote %s", written.items[i]);
    if (!rc)
        cli_line(stdout,
                 "Edit the overlay at the end of each file (or delete the file), then: gcluster "
                 "job submit --gke-custom-templates-path %s ...",
                 dir);
    gc_strings_free(&written);
    return rc;
}

const cli_command cmd_job_template_extract = {
    .name = "gke-template-extract",
    .summary = "write the overlay files job submit --gke-custom-templates-path reads",
    .usage = "job gke-template-extract [--output-dir DIR] [--overwrite]",
    .description =
        "One file per kind of object job submit generates (jobset.yaml, pathways_jobset.yaml,\n"
        "indexed_job.yaml, indexed_job_service.yaml): the object generated for an example job, "
        "as a\ncommented reference, then an overlay that changes nothing. Edit the overlay; "
        "submit merges it onto\nevery object of that kind as a JSON merge patch (RFC 7386). "
        "README.md explains the migration\nfrom Google's Go templates.",
    .options = extract_options,
    .args_size = sizeof(extract_args),
    .run = extract_run,
};
