/*
 * `job submit`'s result as text and as the JSON document README.md describes.
 */
#include "cli/render.h"

#include <string.h>

static const char *kind_of(const gc_submit_result *r)
{
    return r->pathways == GC_PATHWAYS_SPS        ? "Shared Pathways Service"
           : r->pathways == GC_PATHWAYS_HEADLESS ? "headless Pathways job"
           : r->pathways == GC_PATHWAYS_FULL     ? "Pathways job"
                                                 : "job";
}

void cli_render_submit_text(FILE *out, const gc_submit_result *r)
{
    if (r->dry_run) {
        cli_line(out, "The cluster accepted %s %s (server dry run: nothing was created).",
                 kind_of(r), r->name);
        return;
    }
    cli_line(out, "Created %s %s in namespace %s, queued on %s (%s x%d).", kind_of(r), r->name,
             r->ns, r->queue, r->compute, r->num_slices);
    /* Notes line up in one column after the longest command that has one. */
    size_t column = 0;
    for (size_t i = 0; i < r->next_count; i++)
        if (r->next[i].note && strlen(r->next[i].command) > column)
            column = strlen(r->next[i].command);
    for (size_t i = 0; i < r->next_count; i++) {
        if (r->next[i].note)
            cli_line(out, "  %-*s  # %s", (int)column, r->next[i].command, r->next[i].note);
        else
            cli_line(out, "  %s", r->next[i].command);
    }
}

void cli_render_submit_final_text(FILE *out, const gc_submit_result *r, const gc_diagnosis *why)
{
    if (r->awaited && r->final.phase == GC_JOB_SUCCEEDED)
        cli_line(out, "Job %s succeeded.", r->name);
    if (why)
        cli_render_why_text(out, why, false);
}

static json_t *next_json(const gc_submit_result *r)
{
    json_t *steps = json_array();
    for (size_t i = 0; i < r->next_count; i++)
        json_array_append_new(steps,
                              json_pack("{s:o, s:o}", "command", cli_json_text(r->next[i].command),
                                        "note", cli_json_text(r->next[i].note)));
    return steps;
}

static json_t *final_json(const gc_submit_result *r)
{
    if (!r->awaited || !r->final.text[0])
        return json_null(); /* not awaited, or the job was never seen */
    return json_pack("{s:s, s:o, s:o}", "phase", gc_job_phase_name(r->final.phase), "status",
                     cli_json_text(r->final.text), "detail",
                     cli_json_text(r->final.detail[0] ? r->final.detail : NULL));
}

json_t *cli_submit_json(const gc_submit_result *r, const gc_diagnosis *why)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:i, s:s, s:o, s:o, s:b, s:o, s:o, s:o, s:o, s:o}",
                     "name", cli_json_text(r->name), "namespace", cli_json_text(r->ns), "queue",
                     cli_json_text(r->queue), "compute", cli_json_text(r->compute), "num_slices",
                     r->num_slices, "pathways", gc_pathways_mode_name(r->pathways), "head_pool",
                     cli_json_text(r->head_pool), "image", cli_json_text(r->image), "dry_run",
                     r->dry_run, "tpu_requests_note", cli_json_text(r->tpu_requests_note),
                     "warnings", cli_json_strings(&r->warnings), "next_commands", next_json(r),
                     "final", final_json(r), "diagnosis", cli_why_json(why));
}
