#include "run_cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GCLUSTER_CLI
#define GCLUSTER_CLI "gcluster"
#endif

static void drain(int fds[2], gc_buf *bufs[2])
{
    struct pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    int open_fds = 2;
    char chunk[65536];
    while (open_fds > 0) {
        if (poll(p, 2, 60000) <= 0)
            break; /* bounded: a test never waits more than a minute for output */
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP)))
                continue;
            ssize_t n = read(p[i].fd, chunk, sizeof(chunk));
            if (n > 0) {
                gc_buf_append(bufs[i], chunk, (size_t)n);
            } else {
                close(p[i].fd);
                p[i].fd = -1;
                open_fds--;
            }
        }
    }
}

void run_cli(cli_result *result, const char *const *args, const char *const *env)
{
    gc_buf_init(&result->out);
    gc_buf_init(&result->err);
    int out_pipe[2], err_pipe[2];
    if (pipe(out_pipe) || pipe(err_pipe)) {
        result->exit_code = -1;
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        close(out_pipe[0]);
        close(err_pipe[0]);
        for (const char *const *e = env; e && *e; e++)
            putenv((char *)*e);
        size_t n = 0;
        while (args[n])
            n++;
        char **argv = calloc(n + 2, sizeof(*argv));
        argv[0] = (char *)GCLUSTER_CLI;
        for (size_t i = 0; i < n; i++)
            argv[i + 1] = (char *)args[i];
        execv(GCLUSTER_CLI, argv);
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    int fds[2] = {out_pipe[0], err_pipe[0]};
    gc_buf *bufs[2] = {&result->out, &result->err};
    drain(fds, bufs);
    int status = 0;
    waitpid(pid, &status, 0);
    result->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void cli_result_free(cli_result *result)
{
    gc_buf_free(&result->out);
    gc_buf_free(&result->err);
}

int read_file(const char *path, gc_buf *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        gc_buf_append(out, chunk, n);
    fclose(f);
    return 0;
}
