#include "run_cli.h"

#include "gcluster/process.h"
#include "gcluster/sys.h"

#include <stdlib.h>
#include <string.h>

#ifndef GCLUSTER_CLI
#define GCLUSTER_CLI "gcluster"
#endif

/* A test never waits more than a minute for the binary. */
#define RUN_TIMEOUT_MS (60 * 1000)
#define OUTPUT_MAX     (64u << 20)

void run_cli(cli_result *result, const char *const *args, const char *const *env)
{
    size_t n = 0, env_count = 0;
    while (args[n])
        n++;
    while (env && env[env_count])
        env_count++;
    char **argv = calloc(n + 2, sizeof(*argv));
    argv[0] = (char *)GCLUSTER_CLI;
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = (char *)args[i];
    gc_process p = {.program = GCLUSTER_CLI,
                    .argv = argv,
                    .env_add = (char *const *)env,
                    .env_add_count = env_count,
                    .timeout_ms = RUN_TIMEOUT_MS,
                    .max_stdout = OUTPUT_MAX,
                    .max_stderr = OUTPUT_MAX};
    gc_process_result r;
    gc_error err = {0};
    if (gc_process_run(&p, &r, &err) != 0)
        r.exit_status = -1;
    result->exit_code = r.signal ? 128 + r.signal : r.exit_status;
    result->out = r.out;
    result->err = r.err;
    free(argv);
}

void cli_result_free(cli_result *result)
{
    gc_buf_free(&result->out);
    gc_buf_free(&result->err);
}

int read_file(const char *path, gc_buf *out)
{
    gc_error err;
    return gc_file_read(path, OUTPUT_MAX, out, &err) ? -1 : 0;
}
