/*
 * Time: the monotonic clock deadlines are measured on, the wall clock dates are compared with,
 * and RFC 3339 stamps as Kubernetes and exec credential plugins write them.
 */
#include "gcluster/sys.h"

#include <ctype.h>
#include <errno.h>
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
    if (strlen(s) < 20 || !digits(s, 4, &year) || s[4] != '-' || !digits(s + 5, 2, &mon) ||
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
