/*
 * gcluster's entry point: the only place that prints errors and chooses the exit status.
 */
#include "cli/commands.h"

#include <curl/curl.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    gc_error err = {0};
    int rc = cli_dispatch(argc - 1, argv + 1, &err);
    curl_global_cleanup();
    if (rc && err.message[0])
        fprintf(stderr, "gcluster: error: %s\n", err.message);
    return rc;
}
