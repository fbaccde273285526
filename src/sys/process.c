/*
 * The subprocess runner (see gcluster/process.h).
 *
 * Everything the child needs (argv, environment, file descriptors) is prepared before fork, so
 * the child only calls async-signal-safe functions. A close-on-exec pipe carries execve's errno
 * back, so "not found" and "permission denied" are told apart from a program that ran and
 * failed. The parent waits for the child's exit with WNOWAIT, which leaves it a zombie: its pid,
 * and so its process group id, cannot be reused until it is reaped, so the group can still be
 * signalled safely after the leader has exited.
 */
#include "gcluster/process.h"

#include "gcluster/sys.h"
#include "sys/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_TIMEOUT_MS (60 * 1000)
#define DEFAULT_GRACE_MS   (2 * 1000)
#define DEFAULT_MAX_STDOUT (1u << 20)
#define DEFAULT_MAX_STDERR (64u << 10)
/* After the child exits, how long helpers it left behind may keep its output open before
 * they are stopped with the rest of the group. */
#define LINGER_MS 100
/* How often a child that closed its output is checked for having exited. */
#define EXIT_POLL_MS 2

extern char **environ;

/* One run, as the parent sees it. */
typedef struct run {
    const gc_process *p;
    gc_process_result *r;
    pid_t pid;
    bool own_group;
    int in_fd, out_fd, err_fd; /* the parent's ends; -1 once closed */
    size_t written;            /* of p->input */
    int timeout_ms, grace_ms;
    size_t max_stdout, max_stderr;
    long long deadline, kill_at, exited_at;
    bool exited, killed;
} run;

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
    return pipe2(fds, O_CLOEXEC);
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* In the child, after fork: only async-signal-safe calls. */
_Noreturn static void child_exec(const char *program, char *const *argv, char **env, bool own_group,
                                 int in_fd, int out_fd, int err_fd, int status_fd)
{
    if (own_group)
        setpgid(0, 0);
    if ((in_fd >= 0 && dup2(in_fd, 0) < 0) || (out_fd >= 0 && dup2(out_fd, 1) < 0) ||
        (err_fd >= 0 && dup2(err_fd, 2) < 0))
        _exit(126);
    /* Keep only 0-2 and the status pipe (moved to 3, close-on-exec). */
    if (status_fd != 3 && dup2(status_fd, 3) < 0)
        _exit(126);
    fcntl(3, F_SETFD, FD_CLOEXEC);
    closefrom(4);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    execve(program, argv, env);
    int e = errno;
    ssize_t ignored = write(3, &e, sizeof(e));
    (void)ignored;
    _exit(127);
}

static void signal_child(run *x, int sig)
{
    if (x->own_group)
        kill(-x->pid, sig);
    else
        kill(x->pid, sig);
    if (sig == SIGKILL)
        x->killed = true;
}

/* write(2) to the child's stdin without dying of SIGPIPE when it has closed it: SIGPIPE is
 * blocked for this thread for the call, and one it raised is taken back, so the process's
 * signal dispositions stay the caller's. */
static ssize_t write_without_sigpipe(int fd, const void *data, size_t len)
{
    sigset_t pipe_only, old, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    sigpending(&pending);
    bool was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    ssize_t n = write(fd, data, len);
    int e = errno;
    if (n < 0 && e == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_only, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return n;
}

static void feed_input(run *x)
{
    const char *data = x->p->input;
    size_t left = x->p->input_len - x->written;
    ssize_t n = left ? write_without_sigpipe(x->in_fd, data + x->written, left) : 0;
    if (n > 0)
        x->written += (size_t)n;
    if ((n < 0 && errno != EAGAIN && errno != EINTR) || x->written == x->p->input_len)
        close_fd(&x->in_fd); /* all written, or the child will not read more */
}

static void keep_tail(gc_buf *b, const char *data, size_t len, size_t max)
{
    gc_buf_append(b, data, len);
    if (b->len > max) {
        size_t drop = b->len - max;
        memmove(b->data, b->data + drop, b->len - drop + 1);
        b->len -= drop;
    }
}

/* Reads what one stream has; closes it at its end. */
static void drain(run *x, int *fd, bool is_stdout)
{
    char chunk[4096];
    ssize_t got = read(*fd, chunk, sizeof(chunk));
    if (got < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (got <= 0) {
        close_fd(fd);
    } else if (!is_stdout) {
        keep_tail(&x->r->err, chunk, (size_t)got, x->max_stderr);
    } else if (x->r->out.len + (size_t)got > x->max_stdout) {
        x->r->too_much_output = true;
        signal_child(x, SIGKILL);
        close_fd(fd);
    } else {
        sys_append_wiping(&x->r->out, chunk, (size_t)got);
    }
    explicit_bzero(chunk, sizeof(chunk));
}

static bool child_exited(run *x)
{
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    return waitid(P_PID, (id_t)x->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           info.si_pid == x->pid;
}

static int min_wait(int current, long long until, long long now)
{
    long long left = until - now;
    if (left < 0)
        left = 0;
    return left < current ? (int)left : current;
}

/* Feeds stdin and reads stdout and stderr until the child has exited and its output is closed
 * (or its helpers had LINGER_MS to close it), enforcing the time limit on the way. */
static void supervise(run *x)
{
    for (;;) {
        long long now = gc_clock_ms();
        if (!x->exited && child_exited(x)) {
            x->exited = true;
            x->exited_at = now;
        }
        bool streams_open = x->out_fd >= 0 || x->err_fd >= 0;
        if (x->exited && (!streams_open || now - x->exited_at >= LINGER_MS))
            return;
        if (!x->exited && !x->kill_at && now >= x->deadline) {
            x->r->timed_out = true;
            signal_child(x, SIGTERM);
            x->kill_at = now + x->grace_ms;
        }
        if (x->kill_at && !x->killed && now >= x->kill_at)
            signal_child(x, SIGKILL);

        int wait = streams_open ? 50 : EXIT_POLL_MS;
        if (!x->kill_at)
            wait = min_wait(wait, x->deadline, now);
        else if (!x->killed)
            wait = min_wait(wait, x->kill_at, now);
        if (x->exited)
            wait = min_wait(wait, x->exited_at + LINGER_MS, now);
        struct pollfd fds[3] = {{.fd = x->out_fd, .events = POLLIN},
                                {.fd = x->err_fd, .events = POLLIN},
                                {.fd = x->in_fd, .events = POLLOUT}};
        int n = poll(fds, 3, wait);
        if (n <= 0)
            continue;
        if (fds[0].revents)
            drain(x, &x->out_fd, true);
        if (fds[1].revents)
            drain(x, &x->err_fd, false);
        if (fds[2].revents)
            feed_input(x);
    }
}

static void reap(run *x)
{
    /* Whatever the child left running in its group goes with it. */
    if (x->own_group)
        kill(-x->pid, SIGKILL);
    int status = 0;
    while (waitpid(x->pid, &status, 0) < 0 && errno == EINTR)
        ;
    x->r->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    x->r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void apply_defaults(const gc_process *p, run *x)
{
    x->timeout_ms = p->timeout_ms > 0 ? p->timeout_ms : DEFAULT_TIMEOUT_MS;
    x->grace_ms = p->grace_ms > 0 ? p->grace_ms : DEFAULT_GRACE_MS;
    x->max_stdout = p->max_stdout ? p->max_stdout : DEFAULT_MAX_STDOUT;
    x->max_stderr = p->max_stderr ? p->max_stderr : DEFAULT_MAX_STDERR;
}

/* The pipes the child gets; on failure everything opened is closed again. */
typedef struct child_fds {
    int in[2], out[2], err[2], status[2];
} child_fds;

static void close_all(child_fds *f)
{
    int *fds[] = {&f->in[0],  &f->in[1],  &f->out[0],    &f->out[1],
                  &f->err[0], &f->err[1], &f->status[0], &f->status[1]};
    for (size_t i = 0; i < sizeof(fds) / sizeof(*fds); i++)
        close_fd(fds[i]);
}

static int open_child_fds(const gc_process *p, child_fds *f)
{
    *f = (child_fds){{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
    /* Without input, stdin is a pipe closed at once rather than /dev/null: end of file is
     * certain even where /dev/null is not the device it should be. */
    bool own_stdin = p->input || !p->interactive;
    if ((own_stdin && cloexec_pipe(f->in)) || cloexec_pipe(f->out) ||
        (!p->interactive && cloexec_pipe(f->err)) || cloexec_pipe(f->status)) {
        int e = errno;
        close_all(f);
        errno = e;
        return -1;
    }
    return 0;
}

int gc_process_run(const gc_process *p, gc_process_result *r, gc_error *err)
{
    memset(r, 0, sizeof(*r));
    gc_buf_init(&r->out);
    gc_buf_init(&r->err);
    r->exit_status = -1;
    char *program = p->program ? gc_xstrdup(p->program) : gc_process_find_program(p->argv[0]);
    if (!program) {
        r->exec_errno = ENOENT;
        r->exit_status = 127;
        return 0;
    }
    child_fds f;
    if (open_child_fds(p, &f)) {
        int e = errno;
        free(program);
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot start %s: %s", p->argv[0], strerror(e));
    }
    run x = {.p = p, .r = r, .own_group = !p->interactive};
    apply_defaults(p, &x);
    char **env = child_environment(p->env_add, p->env_add_count);
    x.deadline = gc_clock_ms() + x.timeout_ms;
    x.pid = fork();
    if (x.pid == 0)
        child_exec(program, p->argv, env, x.own_group, f.in[0], f.out[1], f.err[1], f.status[1]);
    int fork_errno = errno;
    free(env);
    free(program);
    close_fd(&f.in[0]);
    close_fd(&f.out[1]);
    close_fd(&f.err[1]);
    close_fd(&f.status[1]);
    if (!p->input)
        close_fd(&f.in[1]);
    if (x.pid < 0) {
        close_all(&f);
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot start %s: %s", p->argv[0],
                       strerror(fork_errno));
    }
    if (x.own_group) /* also here: the child may not have run yet when we signal it */
        setpgid(x.pid, x.pid);
    ssize_t got;
    do
        got = read(f.status[0], &r->exec_errno, sizeof(r->exec_errno));
    while (got < 0 && errno == EINTR);
    if (got != (ssize_t)sizeof(r->exec_errno))
        r->exec_errno = 0;
    close_fd(&f.status[0]);
    x.in_fd = f.in[1];
    x.out_fd = f.out[0];
    x.err_fd = f.err[0];
    if (x.in_fd >= 0)
        fcntl(x.in_fd, F_SETFL, O_NONBLOCK);
    supervise(&x);
    close_fd(&x.in_fd);
    close_fd(&x.out_fd);
    close_fd(&x.err_fd);
    reap(&x);
    return 0;
}

/* --- a child that runs beside the caller ------------------------------------------------- */

/* Waits for the exec (the status pipe closes on success, or carries execve's errno). */
static int exec_errno_of(int status_fd)
{
    int e = 0;
    ssize_t got;
    do
        got = read(status_fd, &e, sizeof(e));
    while (got < 0 && errno == EINTR);
    return got == (ssize_t)sizeof(e) ? e : 0;
}

static void reap_into(pid_t pid, gc_process_result *r)
{
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    r->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

int gc_process_start(const gc_process *p, gc_process_child *child, gc_error *err)
{
    child->pid = -1;
    child->fd = -1;
    char *program = p->program ? gc_xstrdup(p->program) : gc_process_find_program(p->argv[0]);
    if (!program)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot run %s: not found on PATH", p->argv[0]);
    int status[2];
    if (cloexec_pipe(status)) {
        int e = errno;
        free(program);
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot start %s: %s", p->argv[0], strerror(e));
    }
    char **env = child_environment(p->env_add, p->env_add_count);
    pid_t pid = fork();
    if (pid == 0)
        child_exec(program, p->argv, env, false, -1, -1, -1, status[1]);
    int fork_errno = errno;
    free(env);
    free(program);
    close(status[1]);
    if (pid < 0) {
        close(status[0]);
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot start %s: %s", p->argv[0],
                       strerror(fork_errno));
    }
    int exec_errno = exec_errno_of(status[0]);
    close(status[0]);
    if (exec_errno) {
        gc_process_result r;
        reap_into(pid, &r);
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot run %s: %s", p->argv[0], strerror(exec_errno));
    }
    child->pid = pid;
    /* Linux >= 5.3: a descriptor that polls readable when the child exits. */
    child->fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (child->fd >= 0)
        fcntl(child->fd, F_SETFD, FD_CLOEXEC);
    return 0;
}

bool gc_process_child_ended(gc_process_child *child, gc_process_result *r)
{
    siginfo_t info;
    memset(&info, 0, sizeof(info));
    if (child->pid <= 0 ||
        waitid(P_PID, (id_t)child->pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
        info.si_pid != child->pid)
        return false;
    memset(r, 0, sizeof(*r));
    gc_buf_init(&r->out);
    gc_buf_init(&r->err);
    reap_into(child->pid, r);
    child->pid = -1;
    if (child->fd >= 0)
        close(child->fd);
    child->fd = -1;
    return true;
}

void gc_process_child_stop(gc_process_child *child, int grace_ms, gc_process_result *r)
{
    if (child->pid <= 0)
        return;
    kill(child->pid, SIGTERM);
    long long deadline = gc_clock_ms() + grace_ms;
    while (!gc_process_child_ended(child, r)) {
        if (gc_clock_ms() >= deadline) {
            kill(child->pid, SIGKILL);
            deadline = gc_clock_ms() + 60 * 1000;
        }
        struct pollfd p = {.fd = child->fd, .events = POLLIN}; /* a -1 fd just waits */
        poll(&p, 1, EXIT_POLL_MS * 10);
    }
}

void gc_process_child_signal(const gc_process_child *child, int sig)
{
    if (child->pid > 0)
        kill(child->pid, sig);
}

void gc_process_result_free(gc_process_result *r)
{
    if (r->out.data)
        explicit_bzero(r->out.data, r->out.cap);
    gc_buf_free(&r->out);
    gc_buf_free(&r->err);
}

bool gc_process_succeeded(const gc_process_result *r)
{
    return !r->exec_errno && !r->timed_out && !r->too_much_output && !r->signal &&
           r->exit_status == 0;
}

void gc_process_describe(const gc_process_result *r, const gc_process *p, char *out, size_t size)
{
    int timeout_ms = p->timeout_ms > 0 ? p->timeout_ms : DEFAULT_TIMEOUT_MS;
    if (r->exec_errno == ENOENT && !p->program)
        snprintf(out, size, "was not found on PATH");
    else if (r->exec_errno)
        snprintf(out, size, "could not be started: %s", strerror(r->exec_errno));
    else if (r->timed_out && timeout_ms % 1000)
        snprintf(out, size, "did not finish within %d ms and was stopped", timeout_ms);
    else if (r->timed_out)
        snprintf(out, size, "did not finish within %d s and was stopped", timeout_ms / 1000);
    else if (r->too_much_output)
        snprintf(out, size, "wrote more output than expected (over %zu bytes) and was stopped",
                 p->max_stdout ? p->max_stdout : DEFAULT_MAX_STDOUT);
    else if (r->signal)
        snprintf(out, size, "was killed by signal %d (%s)", r->signal, strsignal(r->signal));
    else
        snprintf(out, size, "exited with status %d", r->exit_status);
}

void gc_process_explain(const gc_process_result *r, const gc_process *p, char *out, size_t size)
{
    gc_process_describe(r, p, out, size);
    size_t o = strlen(out);
    const char *s = r->err.data;
    size_t len = r->err.len;
    while (len && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' '))
        len--;
    if (!len || o + 3 >= size)
        return;
    out[o++] = ':';
    out[o++] = ' ';
    size_t room = size - o - 1;
    if (len > room) { /* the end says what went wrong */
        s += len - room;
        len = room;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        out[o++] = (c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f)) ? (char)c : '?';
    }
    out[o] = '\0';
}

static bool is_executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *gc_process_find_program(const char *name)
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
