/*
 * What the files of kube/'s log streams share (logs.c runs the streams; log_lines.c cuts their
 * bytes into lines and drops what a resume repeats). Internal to kube/.
 */
#ifndef GCLUSTER_KUBE_LOG_STREAM_H
#define GCLUSTER_KUBE_LOG_STREAM_H

#include "kube/internal.h"

#include <stdbool.h>
#include <stddef.h>

#define MAX_LINE (1 << 20)

struct logs_run;

/* A log line's time stamp. */
typedef struct stamp {
    long long sec;
    long nsec;
} stamp;

typedef struct log_stream {
    struct logs_run *run;
    size_t index;
    const gc_kube_log_source *src;
    char *name; /* "pod/container", for messages */
    char *log_path, *pod_path;
    const char *query[20];
    char tail[32], since[32], since_time[32];
    kube_request req;
    kube_exchange x; /* the current attempt; x.http.body holds a non-2xx answer */
    CURL *e;
    gc_buf partial; /* an incomplete line */

    /* Where the stream is: the last line delivered, and how many delivered lines carry
     * exactly its time stamp. */
    bool positioned;
    stamp last;
    size_t last_count;
    size_t lines; /* delivered in all */

    /* The attempt under way. */
    bool locating;   /* asking for the pod, before a resume */
    bool resuming;   /* dropping lines up to `last` */
    size_t dropped;  /* lines carrying `last`'s time stamp dropped so far */
    bool continuing; /* the next text continues a line longer than MAX_LINE ... */
    bool dropping;   /* ... whose start was dropped */
    bool previous;   /* reading the container's previous instance */
    bool progressed; /* delivered a line */
    long long started_ms;
    long stall_ms;        /* no bytes for this long ends the attempt; 0: no limit */
    long long last_bytes; /* when the attempt last received something */
    bool stalled;         /* ended by stall_ms */

    /* What the next attempt does. */
    bool original;   /* nothing delivered yet: the caller's request as given */
    bool from_start; /* a new instance's whole log */
    bool located;    /* the pod was checked for this resume */
    bool ended;      /* the last attempt ended normally (following: ask again) */
    bool final;      /* no more following: read what is left */
    int failures;    /* consecutive attempts without progress */
    int ended_streak;
    bool refreshed;
    long long start_at; /* > 0: (re)start at this time */

    bool admitted; /* counted among the open streams (MAX_OPEN_STREAMS) until it ends */
    bool running, done, failed, incomplete;
    /* Why it failed, or why it is incomplete; allocated then: 4 KiB in every one of a thousand
     * streams would be most of what they take. */
    gc_error *error;
} log_stream;

typedef struct logs_run {
    gc_kube *k;
    CURLM *multi;
    log_stream *streams;
    size_t count;
    gc_kube_log_options opts;
    gc_kube_log_line_fn on_line;
    gc_kube_log_continue_fn keep_going;
    void *ctx;
    bool stop;          /* the line handler said so */
    bool following;     /* follow, and keep_going has not ended it */
    log_stream *opener; /* the first stream of the wave, while its connection is set up */
    size_t room;        /* streams the wave may still start */
    size_t max_open;    /* streams admitted at once */
    size_t open;        /* streams admitted and not ended */
    long long notice_at;
    bool noticed;         /* a reconnect notice is standing */
    kube_multi_pace pace; /* the loop's waits (kube_multi_wait) */
} logs_run;

static inline const gc_events *events(const log_stream *s)
{
    return s->run->k->trace.events;
}

/* A line's time stamp as the API server writes it, with or without the nanoseconds. */
void kube_log_format_stamp(stamp t, bool nanoseconds, char *out, size_t size);
/* libcurl's data callback of a stream (ctx: the log_stream): its bytes cut into lines. */
bool kube_log_on_log_data(const char *data, size_t len, void *ctx);
/* Delivers the incomplete last line of a stream that ended. */
void kube_log_flush_partial(log_stream *s);

#endif
