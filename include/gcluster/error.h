/*
 * gc_error: how every core function reports failure.
 *
 * A function that can fail takes a `gc_error *err` last and returns 0 on success or one of the
 * GC_EXIT_* codes below, having written one message into `err` that says what is wrong and how
 * to fix it (naming the flag or object involved). Only main() prints the message and turns the
 * code into the process exit status, so the library never prints and never exits.
 */
#ifndef GCLUSTER_ERROR_H
#define GCLUSTER_ERROR_H

#include <stddef.h>

enum gc_exit_code {
    GC_EXIT_OK = 0,
    GC_EXIT_RUNTIME = 1,    /* the API server, the network or the system failed */
    GC_EXIT_USAGE = 2,      /* bad input; nothing was sent to the cluster */
    GC_EXIT_JOB_FAILED = 3, /* the job itself failed (--await-job-completion) */
    GC_EXIT_INCOMPLETE = 4, /* the output is incomplete: a log stream broke and could not be
                               resumed, so lines may be missing (job logs) */
};

#define GC_ERROR_MAX 4096

typedef struct gc_error {
    int code;
    /* Set by kube/ when the failure is an HTTP answer, so callers can tell NotFound (404) or
     * AlreadyExists (409) apart without parsing the message; 0 and "" otherwise. */
    int http_status;
    char reason[48]; /* the Kubernetes Status reason: "NotFound", "AlreadyExists", "Invalid" */
    char message[GC_ERROR_MAX];
} gc_error;

/* Records a failure and returns `code`, so callers can write `return gc_fail(err, ...)`. */
int gc_fail(gc_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Puts context in front of an already recorded message ("reading kubeconfig: ..."). */
void gc_error_prefix(gc_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Clears `err` so it can be reused. */
void gc_error_clear(gc_error *err);

/* The few failures no caller can handle (out of memory, a broken libcrypto) end the process
 * through gc_fatal: it hands the message to the handler the program installed (the CLI's
 * prints it), and aborts when the handler returns or none is installed. A library without a
 * terminal has nowhere to say it, so by default it just aborts. */
typedef void (*gc_fatal_fn)(const char *message);
void gc_fatal_set_handler(gc_fatal_fn handler);
_Noreturn void gc_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
