/*
 * A job's diagnosis (`job why`, and after a failed or timed-out --await-job-completion) as two
 * lines of text, with its evidence when asked, and as the JSON document README.md describes.
 */
#include "cli/render.h"

#include "gcluster/diagnose.h"

void cli_render_why_text(FILE *out, const gc_diagnosis *d, bool evidence)
{
    fprintf(out, "Cause: %s\n", d->cause);
    fprintf(out, "Fix:   %s\n", d->fix[0] ? d->fix : "-");
    if (!evidence || !d->evidence_count)
        return;
    fprintf(out, "Evidence:\n");
    for (size_t i = 0; i < d->evidence_count; i++)
        fprintf(out, "  %s\n", d->evidence[i]);
}

json_t *cli_why_json(const gc_diagnosis *d)
{
    return d ? gc_diagnosis_json(d) : json_null();
}
