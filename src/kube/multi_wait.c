/*
 * The one wait of every loop that drives several transfers on a libcurl multi handle.
 *
 * libcurl 7.88 (Debian bookworm's) can leave an HTTP/2 stream's last frames, its end among them,
 * in its buffers after a read and take them up only at the next socket event or timeout. A loop
 * that then waits its full interval finishes a second late: a log's end, or the last answer of
 * a batch of reads (1 in 40 `logs --all` runs on testenv, 7 in 60 inspects of a job on a 2,000-node
 * one). So after the sockets were busy the next wait is short (QUICK_WAIT_MS), doubling while they
 * stay quiet, for about a second: a busy loop costs a handful more wake-ups, an idle one none.
 */
#include "internal.h"

#define QUICK_WAIT_MS  1
#define QUIET_AFTER_MS 1000 /* quiet this long after being busy: back to the caller's waits */

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
