/*
 * A job's diagnosis (`job why`, and after a failed or timed-out --await-job-completion) as two
 * lines of text, with its evidence when asked, and as the JSON document README.md describes.
 */
#include "cli/render.h"

#include "gcluster/diagnose.h"

void cli_render_why_text(FILE *out, const gc_diagnosis *d, bool evidence)
{
    cli_line(out, "Cause: %s", d->cause);
    cli_line(out, "Fix:   %s", d->fix[0] ? d->fix : "-");
    if (!evidence || !d->evidence_count)
        return;
    cli_line(out, "Evidence:");
    for (size_t i = 0; i < d->evidence_count; i++)
        cli_line(out, "  %s", d->evidence[i]);
}

json_t *cli_why_json(const gc_diagnosis *d)
{
    return d ? gc_diagnosis_json(d) : json_null();
}
