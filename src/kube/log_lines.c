/*
 * Log streams' bytes as lines: cut per stream into whole lines, each line's time stamp read (the
 * streams always ask for timestamps=true, see logs.c), and on a resume the lines already
 * delivered dropped as they arrive again.
 */
#include "kube/log_stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- time stamps ------------------------------------------------------------------------ */

static int stamp_cmp(stamp a, stamp b)
{
    if (a.sec != b.sec)
        return a.sec < b.sec ? -1 : 1;
    return a.nsec < b.nsec ? -1 : a.nsec > b.nsec;
}

/* The time stamp the kubelet puts in front of a line ("2026-01-02T03:04:05.123456789Z "), and
 * how many bytes it takes with its space. */
static bool parse_stamp(const char *line, size_t len, stamp *out, size_t *used)
{
    const char *space = memchr(line, ' ', len < 48 ? len : 48);
    if (!space || space - line < 20)
        return false;
    char text[48];
    size_t n = (size_t)(space - line);
    memcpy(text, line, n);
    text[n] = '\0';
    time_t sec;
    if (!gc_clock_parse_rfc3339(text, &sec))
        return false;
    long nsec = 0, scale = 100000000;
    if (text[19] == '.')
        for (const char *p = text + 20; *p >= '0' && *p <= '9' && scale; p++, scale /= 10)
            nsec += (*p - '0') * scale;
    *out = (stamp){.sec = sec, .nsec = nsec};
    *used = n + 1;
    return true;
}

void kube_log_format_stamp(stamp t, bool nanoseconds, char *out, size_t size)
{
    time_t sec = (time_t)t.sec;
    struct tm tm;
    gmtime_r(&sec, &tm);
    char day[32]; /* 19 characters: YYYY-MM-DDTHH:MM:SS */
    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
    if (nanoseconds)
        snprintf(out, size, "%.19s.%09dZ", day, (int)(t.nsec % 1000000000L));
    else
        snprintf(out, size, "%.19sZ", day);
}

/* --- lines ------------------------------------------------------------------------------ */

static void deliver(log_stream *s, const char *line, size_t len)
{
    logs_run *run = s->run;
    if (run->stop)
        return;
    if (run->on_line(s->index, line, len, run->ctx))
        run->stop = true;
    s->lines++;
    s->progressed = true;
    s->original = false;
}

/* One line (or, !complete, the first piece of a line longer than MAX_LINE): dropped when a
 * resume repeats it, else delivered without the time stamp the caller did not ask for. */
static void take_line(log_stream *s, const char *line, size_t len, bool complete)
{
    if (s->continuing) { /* the rest of a long line: as its start went */
        if (!s->dropping)
            deliver(s, line, len);
        s->continuing = !complete;
        return;
    }
    s->continuing = !complete;
    stamp t;
    size_t used = 0;
    bool stamped = parse_stamp(line, len, &t, &used);
    if (stamped && s->resuming) {
        int order = stamp_cmp(t, s->last);
        s->dropping = order < 0 || (order == 0 && s->dropped < s->last_count);
        if (s->dropping) {
            s->dropped += order == 0;
            return;
        }
        s->resuming = false;
    }
    s->dropping = false;
    if (stamped) {
        if (s->positioned && stamp_cmp(t, s->last) == 0) {
            s->last_count++;
        } else {
            s->last = t;
            s->last_count = 1;
        }
        s->positioned = true;
        s->from_start = false;
    }
    if (stamped && !s->run->opts.timestamps)
        deliver(s, line + used, len - used);
    else
        deliver(s, line, len);
}

/* Whole lines go straight from curl's buffer to the caller; only a line's incomplete end is
 * copied (into `partial`), so 64 followed streams hold 64 short line ends, not 64 chunks. */
static void split_lines(log_stream *s, const char *data, size_t len)
{
    const char *end = data + len;
    const char *nl = memchr(data, '\n', len);
    if (nl && s->partial.len) { /* finish the line begun in an earlier chunk */
        gc_buf_append(&s->partial, data, (size_t)(nl - data));
        take_line(s, s->partial.data, s->partial.len, true);
        gc_buf_reset(&s->partial);
        data = nl + 1;
        nl = memchr(data, '\n', (size_t)(end - data));
    }
    for (; nl; nl = memchr(data, '\n', (size_t)(end - data))) {
        take_line(s, data, (size_t)(nl - data), true);
        data = nl + 1;
    }
    gc_buf_append(&s->partial, data, (size_t)(end - data));
    if (s->partial.len >= MAX_LINE) { /* a line this long is handed out in pieces */
        take_line(s, s->partial.data, s->partial.len, false);
        gc_buf_reset(&s->partial);
    }
}

bool kube_log_on_log_data(const char *data, size_t len, void *ctx)
{
    log_stream *s = ctx;
    s->last_bytes = gc_clock_ms();
    split_lines(s, data, len);
    return !s->run->stop;
}

void kube_log_flush_partial(log_stream *s)
{
    if (s->partial.len)
        take_line(s, s->partial.data, s->partial.len, true);
    gc_buf_reset(&s->partial);
}
