/*
 * Time stamps as the API server writes them (RFC 3339, UTC: "2026-12-02T17:30:00Z"), and ages
 * as kubectl shows them.
 */
#include "gcluster/job.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

long long gc_parse_timestamp(const char *timestamp)
{
    if (!timestamp)
        return -1;
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *end = strptime(timestamp, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!end)
        return -1;
    return (long long)timegm(&tm);
}

void gc_format_duration(long long seconds, char *out, size_t size)
{
    long long s = seconds < 0 ? 0 : seconds;
    if (s >= 3600 && s % 3600 == 0 && s < 2 * 86400)
        snprintf(out, size, "%lldh", s / 3600);
    else if (s < 120)
        snprintf(out, size, "%llds", s);
    else if (s < 2 * 3600)
        snprintf(out, size, "%lldm", s / 60);
    else if (s < 2 * 86400)
        snprintf(out, size, "%lldh", s / 3600);
    else
        snprintf(out, size, "%lldd", s / 86400);
}

bool gc_format_age(const char *timestamp, long long now, char *out, size_t size)
{
    long long then = gc_parse_timestamp(timestamp);
    if (then < 0 || now <= 0) {
        snprintf(out, size, "?");
        return false;
    }
    gc_format_duration(now - then, out, size);
    return true;
}
