/*
 * The job name the following commands (inspect, logs, cancel) take.
 */
#include "cli/cli.h"

int cli_job_name(const char *flag_value, const cli_parsed *parsed, const char *command,
                 const char **name, gc_error *err)
{
    if (flag_value && parsed->positional_count)
        return gc_fail(err, GC_EXIT_USAGE,
                       "give the job name once: either --name %s or %s, not both", flag_value,
                       parsed->positional[0]);
    if (parsed->positional_count > 1)
        return gc_fail(err, GC_EXIT_USAGE, "job %s takes one job name, got %zu arguments", command,
                       parsed->positional_count);
    *name = flag_value ? flag_value : parsed->positional_count ? parsed->positional[0] : NULL;
    if (!*name || !**name)
        return gc_fail(err, GC_EXIT_USAGE,
                       "job %s needs the job name: gcluster job %s NAME (or --name NAME)", command,
                       command);
    return 0;
}
