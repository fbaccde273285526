/*
 * --version: what was built (the version and the commit) and what it runs with (the libcurl
 * loaded at run time, which the package does not pin to one build).
 */
#include "cli/commands.h"
#include "cli/render.h"

#include "gcluster/http.h"
#include "gcluster_commit.h" /* generated at build time by scripts/commit-header.cmake */

#include <stdio.h>

void cli_print_version(FILE *out)
{
    fprintf(out, "gcluster %s\ncommit: %s\n", GCLUSTER_VERSION, GCLUSTER_COMMIT);
    char library[512];
    gc_error err = {0};
    if (gc_http_library(library, sizeof(library), &err) == 0)
        cli_line(out, "libcurl: %s", library);
    else
        cli_line(out, "libcurl: cannot be loaded: %s", err.message);
}
