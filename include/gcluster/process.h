/*
 * process: running another program (an exec credential plugin, gcloud) and collecting what it
 * printed.
 *
 * Programs run by argv, never through a shell. Both output streams are captured, with a cap, and
 * go nowhere else: the caller decides what, if anything, of them to show (a credential plugin's
 * output never is). The child runs in a process group of its own, so that a time limit or the
 * cleanup after it ends reaches everything it started (gcloud runs Python, which runs helpers):
 * SIGTERM to the group, SIGKILL after a grace period. An interactive child (one that talks to
 * the user on the terminal) keeps our stdin and stderr and our process group, which a terminal
 * needs; only it is signalled then.
 */
#ifndef GCLUSTER_PROCESS_H
#define GCLUSTER_PROCESS_H

#include "gcluster/buf.h"
#include "gcluster/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct gc_process {
    const char *program;  /* the executable's path; NULL: argv[0] looked up on $PATH */
    char *const *argv;    /* NULL-terminated, argv[0] included */
    char *const *env_add; /* "NAME=value" set in the child's environment only; may be NULL */
    size_t env_add_count;
    const void *input; /* bytes written to the child's stdin, then closed; NULL: none (EOF) */
    size_t input_len;
    bool interactive;  /* the child reads our stdin and writes to our stderr (see above) */
    int timeout_ms;    /* the child is stopped after this; <= 0: 60 s */
    int grace_ms;      /* between SIGTERM and SIGKILL; <= 0: 2 s */
    size_t max_stdout; /* more than this stops the child; 0: 1 MiB */
    size_t max_stderr; /* only the last this many bytes are kept; 0: 64 KiB */
} gc_process;

typedef struct gc_process_result {
    gc_buf out;           /* stdout; may hold a credential: gc_process_result_free wipes it */
    gc_buf err;           /* the end of stderr (not captured for an interactive child) */
    int exit_status;      /* the exit code, or -1 when a signal ended the child */
    int signal;           /* the signal that ended it, or 0 */
    bool timed_out;       /* stopped by the time limit */
    bool too_much_output; /* stopped for writing more than max_stdout */
    int exec_errno;       /* non-zero: the program could not be started (ENOENT: not found) */
} gc_process_result;

/* Runs the program to its end. Returns non-zero only when the system failed (no pipe, no
 * fork); how the child ended is in `r`, which the caller frees in every case. */
int gc_process_run(const gc_process *p, gc_process_result *r, gc_error *err);
void gc_process_result_free(gc_process_result *r);

/* A program that runs beside the caller's own work and uses the terminal (`job connect -- CMD`):
 * it inherits our stdin, stdout and stderr (nothing is captured) and stays in our process group,
 * so the terminal's Ctrl-C reaches it as it reaches us. It has no time limit. */
typedef struct gc_process_child {
    pid_t pid; /* -1 once it was reaped */
    int fd;    /* readable once it has exited (a pidfd); -1 where the kernel has none */
} gc_process_child;

/* Starts p->argv (p->program, p->env_add; the other fields are gc_process_run's). A program that
 * cannot be started is an error that says why. */
int gc_process_start(const gc_process *p, gc_process_child *child, gc_error *err);
/* Whether the child has exited; if so it is reaped and `r` says how it ended (exit_status,
 * signal). Never waits. */
bool gc_process_child_ended(gc_process_child *child, gc_process_result *r);
/* Sends `sig` to the child. */
void gc_process_child_signal(const gc_process_child *child, int sig);
/* Ends the child: SIGTERM, SIGKILL after `grace_ms`, and reaps it into `r`. */
void gc_process_child_stop(gc_process_child *child, int grace_ms, gc_process_result *r);

/* True when the program ran and exited with status 0. */
bool gc_process_succeeded(const gc_process_result *r);

/* How it ended, for a message: "exited with status 3", "was killed by signal 9 (Killed)",
 * "did not finish within 60 s and was stopped", "could not be started: ...". */
void gc_process_describe(const gc_process_result *r, const gc_process *p, char *out, size_t size);

/* The same, followed by ": " and the end of what the program wrote on stderr (as much as fits,
 * control characters made '?'), for an error message. Never for a program whose output may
 * hold a secret. */
void gc_process_explain(const gc_process_result *r, const gc_process *p, char *out, size_t size);

/* Looks `name` up on $PATH (or checks it when it holds a '/'). Caller frees; NULL if absent. */
char *gc_process_find_program(const char *name);

#endif
