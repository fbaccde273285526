/*
 * spawn: run a helper program (an exec credential plugin, gcloud) by argv, never through a
 * shell, with a bounded run time and bounded output (private to kube/).
 */
#ifndef GCLUSTER_KUBE_SPAWN_H
#define GCLUSTER_KUBE_SPAWN_H

#include "gcluster/buf.h"
#include "gcluster/error.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct kube_spawn {
    const char *program;  /* path of the executable */
    char *const *argv;    /* NULL-terminated, argv[0] included */
    char *const *env_add; /* "NAME=value" entries set in the child's environment only */
    size_t env_add_count;
    bool inherit_stdin;  /* the child reads our stdin (interactive); else /dev/null */
    bool inherit_stderr; /* the child writes to our stderr; else it is captured */
    int timeout_ms;      /* the child (and its process group) is killed after this */
    size_t max_stdout;   /* more output than this kills the child */
} kube_spawn;

typedef struct kube_spawn_result {
    gc_buf out;      /* stdout; may hold credentials: wiped by kube_spawn_result_free */
    gc_buf err;      /* stderr, at most its last 4 KiB */
    int exit_status; /* exit code, or -1 when killed by a signal */
    int signal;      /* the terminating signal, or 0 */
    bool timed_out;
    bool too_much_output;
    int exec_errno; /* non-zero: the program could not be started */
} kube_spawn_result;

/* Runs the program to completion. Returns non-zero only when the system failed (no fork, no
 * pipe); how the child ended is described in `r`, which the caller frees in every case. */
int kube_spawn_run(const kube_spawn *s, kube_spawn_result *r, gc_error *err);
void kube_spawn_result_free(kube_spawn_result *r);

/* "exited with status 3", "was killed by signal 9", "did not finish within 60 s", ... */
void kube_spawn_describe(const kube_spawn_result *r, int timeout_ms, char *out, size_t size);

/* The last lines of a child's stderr, made printable and bounded, for an error message. */
void kube_spawn_stderr_tail(const kube_spawn_result *r, char *out, size_t size);

/* Looks `name` up on $PATH (or checks it when it holds a '/'). Caller frees; NULL if absent. */
char *kube_find_program(const char *name);

#endif
