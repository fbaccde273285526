/*
 * `job cancel` as one sentence and as a JSON object.
 */
#include "cli/render.h"

void cli_render_cancel_text(FILE *out, const gc_cancel_result *r)
{
    if (r->gone)
        cli_line(out, "Cancelled job %s: its JobSet, Jobs and pods are gone.", r->name);
    else
        cli_line(out,
                 "Cancelled job %s: its Jobs and pods are being deleted (add --wait to wait for "
                 "them).",
                 r->name);
    for (size_t i = 0; i < r->gateways_removed.count; i++)
        cli_line(out, "Removed storage-profile gateway %s: no job mounts it any more.",
                 r->gateways_removed.items[i]);
}

json_t *cli_cancel_json(const gc_cancel_result *r)
{
    return json_pack("{s:s, s:s, s:o, s:b, s:I, s:o}", "name", r->name, "namespace", r->ns, "uid",
                     cli_json_text(r->uid), "gone", r->gone, "pods_deleted",
                     (json_int_t)r->pods_deleted, "gateways_removed",
                     cli_json_strings(&r->gateways_removed));
}
