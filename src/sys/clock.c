/*
 * Time: the monotonic clock deadlines are measured on, the wall clock dates are compared with,
 * RFC 3339 stamps as Kubernetes and exec credential plugins write them, durations as flags give
 * them and ages as kubectl shows them.
 */
#include "gcluster/sys.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long long gc_clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

time_t gc_clock_wall(void)
{
    return time(NULL);
}

void gc_clock_sleep_ms(long long ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static bool digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

bool gc_clock_parse_rfc3339(const char *s, time_t *out)
{
    int year, mon, day, hour, min, sec;
    if (!s || strlen(s) < 20 || !digits(s, 4, &year) || s[4] != '-' || !digits(s + 5, 2, &mon) ||
        s[7] != '-' || !digits(s + 8, 2, &day) || (s[10] != 'T' && s[10] != 't') ||
        !digits(s + 11, 2, &hour) || s[13] != ':' || !digits(s + 14, 2, &min) || s[16] != ':' ||
        !digits(s + 17, 2, &sec))
        return false;
    if (mon < 1 || mon > 12 || day < 1 || day > 31 || hour > 23 || min > 59 || sec > 60)
        return false;
    const char *p = s + 19;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return false;
        while (isdigit((unsigned char)*p))
            p++;
    }
    long offset = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 || om > 59)
            return false;
        offset = (oh * 3600L + om * 60L) * (*p == '-' ? -1 : 1);
        p += 6;
    } else {
        return false;
    }
    if (*p)
        return false;
    struct tm tm = {.tm_year = year - 1900,
                    .tm_mon = mon - 1,
                    .tm_mday = day,
                    .tm_hour = hour,
                    .tm_min = min,
                    .tm_sec = sec};
    *out = timegm(&tm) - offset;
    return true;
}

long long gc_clock_timestamp(const char *text)
{
    time_t t;
    return gc_clock_parse_rfc3339(text, &t) ? (long long)t : -1;
}

static long unit_seconds(char unit)
{
    switch (unit) {
    case 'h':
        return 3600;
    case 'm':
        return 60;
    case 's':
        return 1;
    default:
        return 0;
    }
}

int gc_clock_parse_duration(const char *flag, const char *text, long *seconds, gc_error *err)
{
    const char *p = text;
    long total = 0;
    bool any = false;
    /* Plain seconds: "3600". */
    if (*p && strspn(p, "0123456789") == strlen(p) && strlen(p) < 10) {
        *seconds = strtol(p, NULL, 10);
        return 0;
    }
    /* Units in decreasing order, each at most once: "1h", "1h30m", "90s", "2h0m5s". */
    long last_unit = LONG_MAX;
    while (*p) {
        size_t digits = strspn(p, "0123456789");
        long unit = digits ? unit_seconds(p[digits]) : 0;
        if (!digits || digits > 9 || !unit || unit >= last_unit)
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s \"%s\" is not a duration; use a number of seconds (3600) or units "
                           "h, m, s in that order (90s, 5m, 1h, 1h30m)",
                           flag, text);
        total += strtol(p, NULL, 10) * unit;
        last_unit = unit;
        p += digits + 1;
        any = true;
    }
    if (!any)
        return gc_fail(err, GC_EXIT_USAGE, "%s needs a duration such as 90s, 5m, 1h or 3600", flag);
    *seconds = total;
    return 0;
}

void gc_clock_format_duration(long long seconds, char *out, size_t size)
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

bool gc_clock_format_age(const char *timestamp, long long now, char *out, size_t size)
{
    long long then = gc_clock_timestamp(timestamp);
    if (then < 0 || now <= 0) {
        snprintf(out, size, "?");
        return false;
    }
    gc_clock_format_duration(now - then, out, size);
    return true;
}
