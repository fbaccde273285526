/*
 * Runs the real gcluster binary (GCLUSTER_CLI) as a subprocess and captures what it printed, so
 * tests exercise argument parsing, output and exit codes exactly as users see them.
 */
#ifndef GCLUSTER_TEST_RUN_CLI_H
#define GCLUSTER_TEST_RUN_CLI_H

#include "gcluster/buf.h"

typedef struct cli_result {
    int exit_code; /* or 128 + signal */
    gc_buf out;
    gc_buf err;
} cli_result;

/* Runs GCLUSTER_CLI with the NULL-terminated argument list (without the program name). `env`
 * is a NULL-terminated list of NAME=VALUE added to the environment, or NULL. */
void run_cli(cli_result *result, const char *const *args, const char *const *env);
void cli_result_free(cli_result *result);

/* Reads a whole file into `out`; returns 0 or -1. */
int read_file(const char *path, gc_buf *out);

#endif
