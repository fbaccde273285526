/*
 * `job wait`: one line or one JSON object per job.
 */
#include "cli/render.h"

void cli_render_wait_text(FILE *out, const gc_wait_result *r)
{
    for (size_t i = 0; i < r->count; i++) {
        const gc_wait_job *job = &r->jobs[i];
        if (job->outcome == GC_WAIT_CANCELLED)
            cli_line(out, "%s: Cancelled", job->name);
        else
            cli_line(out, "%s: %s%s%s", job->name,
                     job->status.text[0] ? job->status.text : "not seen yet",
                     job->status.detail[0] ? " - " : "", job->status.detail);
    }
}

json_t *cli_wait_json(const gc_wait_result *r)
{
    json_t *jobs = json_array();
    for (size_t i = 0; i < r->count; i++) {
        const gc_wait_job *job = &r->jobs[i];
        bool known = job->status.text[0] != '\0';
        bool cancelled = job->outcome == GC_WAIT_CANCELLED;
        json_array_append_new(
            jobs,
            json_pack(
                "{s:s, s:s, s:s, s:s, s:o, s:o, s:o}", "name", job->name, "namespace", r->ns, "for",
                gc_wait_for_name(r->state), "outcome", gc_wait_outcome_name(job->outcome), "phase",
                known ? json_string(gc_job_phase_name(job->status.phase)) : json_null(), "status",
                known ? cli_json_text(job->status.text) : json_null(), "detail",
                cli_json_text(job->status.detail[0] && !cancelled ? job->status.detail : NULL)));
    }
    return jobs;
}
