/*
 * Running helper programs with fork/execve.
 *
 * Everything the child needs (argv, environment, file descriptors) is prepared before fork, so
 * the child only calls async-signal-safe functions. A non-interactive child gets its own
 * process group, so that a timeout also kills whatever it started (gcloud runs Python, which
 * runs more helpers). A CLOEXEC pipe carries execve's errno back, so "not found" and
 * "permission denied" are told apart from a plugin that ran and failed.
 */
#include "kube/spawn.h"

#include "kube/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define STDERR_KEEP 4096

extern char **environ;

/* The parent's environment with `add` entries replacing same-named ones. */
static char **child_environment(char *const *add, size_t add_count)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    char **env = gc_xcalloc(n + add_count + 1, sizeof(*env));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t name_len = strcspn(environ[i], "=");
        bool replaced = false;
        for (size_t j = 0; j < add_count && !replaced; j++)
            replaced = !strncmp(add[j], environ[i], name_len) && add[j][name_len] == '=';
        if (!replaced)
            env[k++] = environ[i];
    }
    for (size_t j = 0; j < add_count; j++)
        env[k++] = add[j];
    return env;
}

static int cloexec_pipe(int fds[2])
{
    if (pipe(fds))
        return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
}

static void child_exec(const kube_spawn *s, char **env, int in_fd, int out_fd, int err_fd,
                       int status_fd)
{
    if (!s->inherit_stdin)
        setpgid(0, 0);
    if ((in_fd >= 0 && dup2(in_fd, 0) < 0) || dup2(out_fd, 1) < 0 ||
        (err_fd >= 0 && dup2(err_fd, 2) < 0))
        _exit(126);
    /* Keep only 0-2 and the status pipe (moved to 3, close-on-exec). */
    if (status_fd != 3 && dup2(status_fd, 3) < 0)
        _exit(126);
    fcntl(3, F_SETFD, FD_CLOEXEC);
    closefrom(4);
    signal(SIGPIPE, SIG_DFL);
    execve(s->program, s->argv, env);
    int e = errno;
    ssize_t ignored = write(3, &e, sizeof(e));
    (void)ignored;
    _exit(127);
}

static void keep_tail(gc_buf *b, const char *data, size_t len)
{
    gc_buf_append(b, data, len);
    if (b->len > STDERR_KEEP) {
        size_t drop = b->len - STDERR_KEEP;
        memmove(b->data, b->data + drop, b->len - drop + 1);
        b->len -= drop;
    }
}

static void kill_child(pid_t pid, bool own_group)
{
    if (own_group)
        kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
}

/* Reads stdout and stderr until both close or the deadline passes. */
static void collect_output(const kube_spawn *s, kube_spawn_result *r, pid_t pid, int out_fd,
                           int err_fd)
{
    struct pollfd fds[2] = {{.fd = out_fd, .events = POLLIN}, {.fd = err_fd, .events = POLLIN}};
    long long deadline = kube_now_ms() + s->timeout_ms;
    char chunk[4096];
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        long long left = deadline - kube_now_ms();
        if (left <= 0) {
            r->timed_out = true;
            kill_child(pid, !s->inherit_stdin);
            break;
        }
        int n = poll(fds, 2, (int)(left > 1000 ? 1000 : left));
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2 && n > 0; i++) {
            if (fds[i].fd < 0 || !fds[i].revents)
                continue;
            ssize_t got = read(fds[i].fd, chunk, sizeof(chunk));
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                fds[i].fd = -1;
                continue;
            }
            if (i == 1) {
                keep_tail(&r->err, chunk, (size_t)got);
            } else if (r->out.len + (size_t)got > s->max_stdout) {
                r->too_much_output = true;
                kill_child(pid, !s->inherit_stdin);
                fds[0].fd = fds[1].fd = -1;
            } else {
                gc_buf_append(&r->out, chunk, (size_t)got);
            }
        }
    }
    explicit_bzero(chunk, sizeof(chunk));
}

/* Waits for the child; one that closed its output but lingers past the deadline is killed. */
static void reap(const kube_spawn *s, kube_spawn_result *r, pid_t pid, long long deadline)
{
    int status = 0;
    for (;;) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid || (got < 0 && errno != EINTR))
            break;
        if (got == 0 && kube_now_ms() >= deadline && !r->timed_out) {
            r->timed_out = true;
            kill_child(pid, !s->inherit_stdin);
        }
        if (got == 0)
            kube_sleep_ms(r->timed_out || r->too_much_output ? 5 : 10);
    }
    r->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

int kube_spawn_run(const kube_spawn *s, kube_spawn_result *r, gc_error *err)
{
    memset(r, 0, sizeof(*r));
    gc_buf_init(&r->out);
    gc_buf_init(&r->err);
    int out[2] = {-1, -1}, errp[2] = {-1, -1}, status[2] = {-1, -1};
    int devnull = s->inherit_stdin ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
    if ((!s->inherit_stdin && devnull < 0) || cloexec_pipe(out) ||
        (!s->inherit_stderr && cloexec_pipe(errp)) || cloexec_pipe(status)) {
        int e = errno;
        int fds[] = {devnull, out[0], out[1], errp[0], errp[1], status[0], status[1]};
        for (size_t i = 0; i < sizeof(fds) / sizeof(*fds); i++)
            if (fds[i] >= 0)
                close(fds[i]);
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot start %s: %s", s->program, strerror(e));
    }
    char **env = child_environment(s->env_add, s->env_add_count);
    long long deadline = kube_now_ms() + s->timeout_ms;
    pid_t pid = fork();
    if (pid == 0)
        child_exec(s, env, devnull, out[1], errp[1], status[1]);
    int fork_errno = errno;
    free(env);
    close(out[1]);
    close(status[1]);
    if (errp[1] >= 0)
        close(errp[1]);
    if (devnull >= 0)
        close(devnull);
    if (pid > 0) {
        ssize_t got;
        do
            got = read(status[0], &r->exec_errno, sizeof(r->exec_errno));
        while (got < 0 && errno == EINTR);
        if (got != (ssize_t)sizeof(r->exec_errno))
            r->exec_errno = 0;
        collect_output(s, r, pid, out[0], errp[0]);
        reap(s, r, pid, deadline);
    }
    close(out[0]);
    close(status[0]);
    if (errp[0] >= 0)
        close(errp[0]);
    if (pid < 0)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot start %s: %s", s->program,
                       strerror(fork_errno));
    return 0;
}

void kube_spawn_result_free(kube_spawn_result *r)
{
    if (r->out.data)
        explicit_bzero(r->out.data, r->out.cap);
    gc_buf_free(&r->out);
    gc_buf_free(&r->err);
}

void kube_spawn_describe(const kube_spawn_result *r, int timeout_ms, char *out, size_t size)
{
    if (r->exec_errno)
        snprintf(out, size, "could not be started: %s", strerror(r->exec_errno));
    else if (r->timed_out)
        snprintf(out, size, "did not finish within %d s and was stopped", timeout_ms / 1000);
    else if (r->too_much_output)
        snprintf(out, size, "wrote more output than a credential can be, and was stopped");
    else if (r->signal)
        snprintf(out, size, "was killed by signal %d (%s)", r->signal, strsignal(r->signal));
    else
        snprintf(out, size, "exited with status %d", r->exit_status);
}

void kube_spawn_stderr_tail(const kube_spawn_result *r, char *out, size_t size)
{
    const char *s = r->err.data;
    size_t len = r->err.len;
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' '))
        len--;
    size_t keep = size > 1 ? size - 1 : 0;
    if (len > keep) {
        s += len - keep;
        len = keep;
    }
    size_t o = 0;
    for (size_t i = 0; i < len && o + 1 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f)) ? (char)c : '?';
    }
    if (size)
        out[o] = '\0';
}

static bool is_executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *kube_find_program(const char *name)
{
    if (!name || !name[0])
        return NULL;
    if (strchr(name, '/'))
        return is_executable_file(name) ? gc_xstrdup(name) : NULL;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; p++) {
        size_t len = strcspn(p, ":");
        char *candidate = len ? gc_xasprintf("%.*s/%s", (int)len, p, name) : gc_xstrdup(name);
        if (is_executable_file(candidate))
            return candidate;
        free(candidate);
        p += len;
        if (!*p)
            return NULL;
    }
}
