/*
 * sys: small plumbing every part of the library shares, each written once: a monotonic clock,
 * RFC 3339 time stamps, durations, base64, reading a file whole. The subprocess runner
 * (gcluster/process.h) and the HTTP request layer (gcluster/http.h) live next to these in src/sys/.
 * The text helpers (gcluster/text.h) are in-memory work and live in src/util/; this header includes
 * theirs, so a file that uses both needs one include.
 */
#ifndef GCLUSTER_SYS_H
#define GCLUSTER_SYS_H

#include "gcluster/buf.h"
#include "gcluster/error.h"
#include "gcluster/text.h"

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

/* Milliseconds on the monotonic clock: for deadlines and durations, never for dates. */
long long gc_clock_ms(void);
/* The wall clock (seconds since the epoch): for dates other programs wrote (a credential's
 * expiry, an HTTP date), never for durations. Clients take it as an injectable function of this
 * type, so tests can move time on without waiting. */
typedef time_t (*gc_wall_clock_fn)(void);
time_t gc_clock_wall(void);
/* Sleeps `ms` milliseconds (nothing when ms <= 0), resuming after signals. */
void gc_clock_sleep_ms(long long ms);
/* Parses an RFC 3339 time stamp ("2024-05-01T12:00:00Z", "2024-05-01T14:00:00.5+02:00") as
 * the API server and exec plugins write them; false for anything else. */
bool gc_clock_parse_rfc3339(const char *text, time_t *out);
/* The same as seconds since the epoch, or -1 (also for NULL): for fields of API objects, which
 * may be missing. */
long long gc_clock_timestamp(const char *text);

/* Parses a duration flag: "90s", "5m", "1h", "1h30m", "2h0m5s" (units h, m, s in that order, each
 * at most once) or plain seconds ("3600"). GC_EXIT_USAGE naming `flag` otherwise. */
int gc_clock_parse_duration(const char *flag, const char *text, long *seconds, gc_error *err);
/* A duration as kubectl shows ages: "45s", "12m", "3h", "5d" (whole hours under two days as
 * hours: "1h", not "60m"). */
void gc_clock_format_duration(long long seconds, char *out, size_t size);
/* The age at `now` (seconds since the epoch) of an RFC 3339 time stamp, as
 * gc_clock_format_duration writes it; "?" and false when the time stamp is unparsable or `now`
 * is 0. */
bool gc_clock_format_age(const char *timestamp, long long now, char *out, size_t size);

/* Standard base64 (RFC 4648) with padding. Caller frees. */
char *gc_base64_encode(const void *data, size_t len);
/* Decodes standard base64; padding is optional and whitespace is ignored. Returns the bytes,
 * NUL-terminated (*out_len excludes the NUL), or NULL for input that is not base64. Caller
 * frees (and wipes, when the bytes are a secret). */
unsigned char *gc_base64_decode(const char *text, size_t len, size_t *out_len);

/* Reads the file at `path` whole into `out` (appended, NUL-terminated). A file larger than `max`
 * bytes is refused rather than read in part. On failure returns GC_EXIT_USAGE with err naming
 * the file and the reason, and leaves errno telling why (ENOENT for a missing file, EFBIG for one
 * too large), so that callers for which a missing file is normal can say so. Bytes read are
 * never left behind in freed memory: the file may hold a key. */
int gc_file_read(const char *path, size_t max, gc_buf *out, gc_error *err);

/* Writes `len` bytes to `path` whole: into a new file beside it, created with
 * O_CREAT|O_EXCL|O_NOFOLLOW under a random name (so a link planted in a shared directory is never
 * followed), then renamed over `path`; a reader never sees half of it, and a failure leaves the
 * old file as it was. `path` a symbolic link: the file it points to is replaced. `path` a
 * device, pipe or socket: written in place. A directory, or a directory that is missing or not
 * writable: GC_EXIT_USAGE; a failed write: GC_EXIT_RUNTIME; the message names the path and
 * errno tells why (EISDIR for a directory). */
int gc_file_write(const char *path, const void *data, size_t len, gc_error *err);

#endif
