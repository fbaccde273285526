/*
 * What every loop that drives several transfers on a libcurl multi handle does alike: how
 * transfers share connections, and how the loop waits.
 *
 * Requests made at the same time get a connection each (idle ones are reused), not HTTP/2
 * streams on one. libcurl 7.88 (Debian bookworm's) can hold one stream's data in the shared
 * connection's buffers until the next socket event, so a stream sharing a connection may stall
 * for a whole poll interval or until the low-speed limit gives up on it; a connection of its
 * own cannot be held up by another stream. A batch is a handful of requests, so this costs a few
 * TLS handshakes made in parallel. Log streams are the exception: a thousand at once need
 * streams, and logs.c resumes one that stalls.
 *
 * Every such loop waits the same way: after the sockets were busy the next wait is short
 * (QUICK_WAIT_MS), doubling while they stay quiet, for about a second (QUIET_AFTER_MS), so data
 * libcurl holds in its buffers is found within milliseconds rather than at the caller's next
 * poll; then the loop goes back to the caller's own waits. A busy loop costs a handful more
 * wake-ups, an idle one none. (bench/README.md, "Batches on a connection each", has the runs.)
 */
#include "internal.h"

/* A batch larger than MAX_CONNECTIONS waits for a free connection: submit's first round (up to
 * 14 reads, cluster_facts.c) fits, so it stays one round trip. */
#define QUICK_WAIT_MS   1
#define MAX_CONNECTIONS 16
#define QUIET_AFTER_MS  1000 /* quiet this long after being busy: back to the caller's waits */

CURLM *kube_multi_new(void)
{
    CURLM *multi = curl_multi_init();
    if (multi) {
        curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);
        curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)MAX_CONNECTIONS);
    }
    return multi;
}

int kube_pace_wait(const kube_multi_pace *pace, int longest_ms)
{
    if (pace->quiet_wait && (longest_ms < 0 || pace->quiet_wait < longest_ms))
        return pace->quiet_wait;
    return longest_ms;
}

void kube_pace_waited(kube_multi_pace *pace, bool busy)
{
    if (busy)
        pace->quiet_wait = QUICK_WAIT_MS;
    else if (pace->quiet_wait)
        pace->quiet_wait = pace->quiet_wait * 2 < QUIET_AFTER_MS ? pace->quiet_wait * 2 : 0;
}

void kube_multi_wait(CURLM *multi, kube_multi_pace *pace, int longest_ms)
{
    int busy = 0;
    curl_multi_poll(multi, NULL, 0, kube_pace_wait(pace, longest_ms > 0 ? longest_ms : 1), &busy);
    kube_pace_waited(pace, busy > 0);
}
