/*
 * The terminal's side of job connect, shared by `job connect` and `job submit --connect`:
 * Ctrl-C (and SIGTERM, SIGHUP) turned into bytes the library's poll loop reads, and the JAX
 * variables on stdout.
 */
#include "cli/cli.h"
#include "cli/render.h"

#include "gcluster/connect.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const int caught[] = {SIGINT, SIGTERM, SIGHUP};
#define CAUGHT (sizeof(caught) / sizeof(*caught))

/* The write end of the pipe, for the signal handler (the only place it can come from). */
static int signal_pipe = -1;

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char byte = (unsigned char)sig;
    ssize_t ignored = write(signal_pipe, &byte, 1);
    (void)ignored;
    errno = saved;
}

/* SIGINT, SIGTERM and SIGHUP written as one byte each (the signal number) to a pipe whose read
 * end is `fd` (non-blocking), for the poll loop to notice; SIGPIPE ignored. Until released. */
typedef struct stop_signals {
    int fd;
    int write_fd;
    struct sigaction saved[CAUGHT];
    struct sigaction saved_pipe;
} stop_signals;

static int catch_stop_signals(stop_signals *s, gc_error *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK))
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot create a pipe: %s", strerror(errno));
    s->fd = fds[0];
    s->write_fd = fds[1];
    signal_pipe = fds[1];
    struct sigaction on = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
    sigemptyset(&on.sa_mask);
    for (size_t i = 0; i < CAUGHT; i++)
        sigaction(caught[i], &on, &s->saved[i]);
    /* A local client that hangs up must not kill us when we write to it. */
    struct sigaction ignore = {.sa_handler = SIG_IGN};
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &s->saved_pipe);
    return 0;
}

static void release_stop_signals(stop_signals *s)
{
    for (size_t i = 0; i < CAUGHT; i++)
        sigaction(caught[i], &s->saved[i], NULL);
    sigaction(SIGPIPE, &s->saved_pipe, NULL);
    signal_pipe = -1;
    close(s->fd);
    close(s->write_fd);
}

/* Points stdout at /dev/null after flushing it, so that a reader waiting for its end (a shell's
 * $(...)) goes on while connect keeps running. */
static void close_stdout(void)
{
    fflush(stdout);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDOUT_FILENO);
        close(null);
    }
}

/* Stdout carries the JAX variables and nothing else, and is closed after them: so
 * `eval "$(gcluster job connect NAME --env &)"` returns as soon as the tunnel works, while
 * connect stays in the background. With a command, stdout is the command's. */
static void print_ready(void *ctx, const gc_connect_ready *ready)
{
    const bool *exports = ctx;
    for (const char *const *e = ready->env; *e; e++)
        cli_line(stdout, "%s%s", *exports ? "export " : "", *e);
    close_stdout();
}

int cli_connect(gc_kube *kube, gc_connect_request *r, bool exports, gc_error *err)
{
    stop_signals stop;
    int rc = catch_stop_signals(&stop, err);
    if (rc)
        return rc;
    r->stop_fd = stop.fd;
    gc_connect_hooks hooks = {.ready = r->command ? NULL : print_ready, .ctx = &exports};
    gc_connect_result result;
    rc = gc_job_connect(kube, r, &hooks, cli_events(), &result, err);
    release_stop_signals(&stop);
    r->stop_fd = -1;
    return !rc && result.command_ran ? result.command_status : rc;
}

int cli_sps_run(gc_kube *kube, gc_sps_run_request *r, gc_error *err)
{
    stop_signals stop;
    int rc = catch_stop_signals(&stop, err);
    if (rc)
        return rc;
    r->connect.stop_fd = stop.fd;
    bool exports = false;
    gc_connect_hooks hooks = {.ready = r->connect.command ? NULL : print_ready, .ctx = &exports};
    gc_connect_result result;
    rc = gc_sps_run(kube, r, &hooks, cli_events(), &result, err);
    release_stop_signals(&stop);
    r->connect.stop_fd = -1;
    return !rc && result.command_ran ? result.command_status : rc;
}
