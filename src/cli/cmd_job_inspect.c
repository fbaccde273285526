/*
 * gcluster job inspect [NAME] [--manifest] [--pods] [--format text|json|yaml] [-o PATH [-s]]
 *
 * Google's gcluster: `inspect [--name N] [-o PATH] [-s]` inspects the cluster (and the named
 * workload) and writes the report to a file, -s printing it as well. Here: with a job name the
 * job's report, without one the cluster's (queues, workloads, nodes); to the terminal, or with
 * -o to PATH (and with -s to the terminal too). The format is --format.
 */
#include "cli/cli.h"
#include "cli/render.h"
#include "cli/render_cluster.h"

#include "gcluster/buf.h"
#include "gcluster/cluster.h"
#include "gcluster/diagnose.h"
#include "gcluster/emit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct inspect_args {
    cli_globals g;
    const char *name;
    bool manifest;
    bool pods;
    const char *format_name;
    cli_format format;
    const char *output; /* -o PATH: Google's report file */
    bool show;          /* -s: with -o, on the terminal too */
} inspect_args;

static const cli_option inspect_options[] = {
    CLI_VALUES('n', "name", inspect_args, name, "NAME", &cli_job_names,
               "the job (or give it as an argument; none: the whole cluster)"),
    CLI_BOOL(0, "manifest", inspect_args, manifest,
             "also print the stored manifest as YAML (status lines become comments)"),
    CLI_BOOL(0, "pods", inspect_args, pods,
             "list every pod (text; by default the slices are summed up, with the pods of those "
             "with problems; --format json|yaml always carries every pod)"),
    CLI_VALUES(0, "format", inspect_args, format_name, NULL, &cli_text_formats,
               "output format (default text; README.md describes the fields)"),
    CLI_VALUES('o', "output", inspect_args, output, "PATH", &cli_paths,
               "write the report to PATH instead of the terminal (Google's inspect file)"),
    CLI_BOOL('s', "show", inspect_args, show,
             "with -o: print the report on the terminal too; with a job name, also the job's "
             "generated manifest (as --manifest)"),
    CLI_JOB_GLOBALS,
    CLI_END,
};

/* The report as the format says, into `text`. */
static int render_job(const inspect_args *a, const gc_inspect_report *report, gc_buf *text,
                      gc_error *err)
{
    if (a->format != CLI_FORMAT_TEXT)
        return cli_document_text(cli_inspect_json(report), a->format, text, err);
    char *data = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&data, &len);
    if (!out)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot render the report: %s", strerror(errno));
    int rc = cli_render_inspect_text(out, report, a->pods, err);
    fclose(out);
    gc_buf_append(text, data, len);
    free(data);
    return rc;
}

static int render_cluster(const inspect_args *a, const gc_cluster_report *report, gc_buf *text,
                          gc_error *err)
{
    if (a->format != CLI_FORMAT_TEXT)
        return cli_document_text(cli_cluster_json(report, true, true), a->format, text, err);
    char *data = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&data, &len);
    if (!out)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot render the report: %s", strerror(errno));
    cli_render_cluster(out, report, true);
    fclose(out);
    gc_buf_append(text, data, len);
    free(data);
    return 0;
}

/* To the terminal; with -o to the file, and with -s to both. */
static int deliver(const inspect_args *a, const gc_buf *text, gc_error *err)
{
    int rc = 0;
    if (a->output)
        rc = cli_write_output("-o", a->output, text->data, text->len, err);
    if (!rc && a->output && strcmp(a->output, "-") != 0)
        cli_line(stderr, "Wrote the inspect report to %s.", a->output);
    if (!rc && (!a->output || a->show))
        rc = cli_write_output("-o", "-", text->data, text->len, err);
    return rc;
}

static int inspect_with(gc_kube *kube, void *ctx, gc_error *err)
{
    inspect_args *a = ctx;
    gc_buf text;
    gc_buf_init(&text);
    int rc;
    if (a->name) {
        gc_inspect_report report;
        /* Google's report of a named job carries the JobSet's spec, and Cluster Toolkit's
         * guide reads "the JobSet status and generated manifest" from `inspect --name J
         * --show`: with a name, -s adds the stored manifest. */
        rc = gc_job_inspect(kube, a->name, a->manifest || a->show, &report, err);
        if (!rc) {
            rc = render_job(a, &report, &text, err);
            gc_inspect_report_free(&report);
        }
    } else {
        gc_cluster_request req = {.pools = true, .workloads = true};
        gc_cluster_report report;
        rc = gc_cluster_describe(kube, &req, &report, err);
        if (!rc) {
            rc = render_cluster(a, &report, &text, err);
            gc_cluster_report_free(&report);
        }
    }
    if (!rc)
        rc = deliver(a, &text, err);
    gc_buf_free(&text);
    return rc;
}

static int inspect_check(void *args, const cli_parsed *parsed, gc_error *err)
{
    (void)parsed;
    inspect_args *a = args;
    int rc = cli_check_output_path("-o", a->output, "--format", err);
    if (rc)
        return rc;
    if (a->manifest && !a->name)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--manifest prints a job's stored manifest: name the job (gcluster job "
                       "inspect NAME --manifest)");
    return 0;
}

static const cli_opening inspect_opening = {
    .names = CLI_JOB_ONE_OR_NONE,
    .name_flag = offsetof(inspect_args, name),
    .name = offsetof(inspect_args, name),
    .output = offsetof(inspect_args, format_name),
    .format = offsetof(inspect_args, format),
    .check = inspect_check,
    .with = inspect_with,
};

const cli_command cmd_job_inspect = {
    .name = "inspect",
    .summary = "status of one job (admission, slices, pods, warnings), or of the whole cluster",
    .usage = "job inspect [NAME] [--manifest] [--pods] [--format text|json|yaml] [-o PATH [-s]]",
    .description =
        "With a job name: its admission, replicated jobs, slices and their pods, and warnings.\n"
        "Without: the cluster (JobSet and Kueue versions, node pools, queues and their usage,\n"
        "every workload). -o PATH writes the report to a file as Google's gcluster does (-s: "
        "also\nprint it); --format chooses text, json or yaml.",
    .options = inspect_options,
    .args_size = sizeof(inspect_args),
    .opening = &inspect_opening,
};
