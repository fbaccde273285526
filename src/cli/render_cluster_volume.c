/*
 * `cluster volume`: NAME TYPE CLUSTER as Google's gcluster prints it, with the namespace and the
 * claim's phase beside; as JSON {volumes: [{namespace, name, type, phase, gateway}]}.
 */
#include "cli/render.h"
#include "cli/render_cluster.h"

void cli_render_cluster_volumes(FILE *out, const gc_cluster_volume_list *list, const char *cluster)
{
    if (!list->count) {
        cli_line(out, "No volumes: no claim is labelled ghpc_role=file-system (Cluster Toolkit's "
                      "file-system modules) and no storage-profile gateway exists.");
        return;
    }
    cli_line(out, "%-48s %-28s %-20s %-16s %s", "NAME", "TYPE", "CLUSTER", "NAMESPACE", "STATUS");
    for (size_t i = 0; i < list->count; i++) {
        const gc_cluster_volume *v = &list->items[i];
        cli_line(out, "%-48s %-28s %-20s %-16s %s", v->name, v->type,
                 cluster && *cluster ? cluster : "-", v->ns, v->phase ? v->phase : "-");
    }
}

json_t *cli_cluster_volumes_json(const gc_cluster_volume_list *list)
{
    json_t *items = json_array();
    for (size_t i = 0; i < list->count; i++) {
        const gc_cluster_volume *v = &list->items[i];
        json_array_append_new(items, json_pack("{s:s, s:s, s:s, s:o, s:b}", "namespace", v->ns,
                                               "name", v->name, "type", v->type, "phase",
                                               cli_json_text(v->phase), "gateway", v->gateway));
    }
    return json_pack("{s:o}", "volumes", items);
}
