/*
 * Checked integer arithmetic for numbers that come from outside (a server's node allocatable,
 * replica counts and restart counts; a user's durations and counts): the one place they are
 * added and multiplied. Signed overflow is undefined behaviour in C, and a wrapped sum shows a
 * user a negative chip total, so every such sum goes through here and saturates instead: a
 * total past LLONG_MAX is shown as LLONG_MAX, which no real cluster reaches.
 */
#ifndef GCLUSTER_CHECKED_H
#define GCLUSTER_CHECKED_H

#include <limits.h>
#include <math.h>
#include <stdbool.h>

/* a + b and a * b into *out; false when the result does not fit (*out is then undefined). */
static inline bool gc_checked_add(long long a, long long b, long long *out)
{
    return !__builtin_add_overflow(a, b, out);
}

static inline bool gc_checked_mul(long long a, long long b, long long *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

/* a + b and a * b, or the nearest of LLONG_MIN and LLONG_MAX when the result does not fit. */
static inline long long gc_saturating_add(long long a, long long b)
{
    long long r;
    if (gc_checked_add(a, b, &r))
        return r;
    return b > 0 ? LLONG_MAX : LLONG_MIN;
}

static inline long long gc_saturating_mul(long long a, long long b)
{
    long long r;
    if (gc_checked_mul(a, b, &r))
        return r;
    return (a < 0) != (b < 0) ? LLONG_MIN : LLONG_MAX;
}

/* A count as an int: clamped to [INT_MIN, INT_MAX]. */
static inline int gc_saturating_int(long long v)
{
    return v > INT_MAX ? INT_MAX : v < INT_MIN ? INT_MIN : (int)v;
}

/* A double (a Kubernetes quantity's value) as a long long: the integer part, clamped to the
 * range (converting a double outside it is undefined behaviour); NaN is 0. */
static inline long long gc_saturating_from_double(double v)
{
    if (isnan(v))
        return 0;
    /* 2^63 is exactly representable; LLONG_MAX is not (it rounds up to 2^63). */
    if (v >= 9223372036854775808.0)
        return LLONG_MAX;
    if (v <= -9223372036854775808.0)
        return LLONG_MIN;
    return (long long)v;
}

#endif
