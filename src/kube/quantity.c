/*
 * Kubernetes resource quantities ("16", "132Gi", "500m", "1.5e3"): checked, in their canonical
 * spelling, and as numbers. One parser for every reader of quantities (deploy's Kueue quotas,
 * the diagnosis of a job's quota).
 *
 * Why the canonical spelling: Kueue's webhook rewrites the quotas of a new ClusterQueue into the
 * canonical form
 * ("2000G" becomes "2T", 480 becomes "480") but an update stores what was sent. Applying the
 * blueprint's spelling would therefore change the object on the second run and settle only on the
 * third. Sending the canonical form makes the first apply final, as `deploy` promises.
 *
 * The rules are the API server's: decimal amounts keep a power-of-1000 suffix with an integral
 * mantissa as large a suffix as divides it ("1.5k" -> "1500", "0.5" -> "500m"); binary amounts
 * keep the largest power-of-1024 suffix that divides them ("2048Mi" -> "2Gi"); a binary amount
 * with a fraction that no binary suffix makes integral is left as written.
 */
#include "gcluster/buf.h"
#include "gcluster/kube.h"
#include "kube/internal.h"

#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const decimal_suffixes[] = {"n", "u", "m", "", "k", "M", "G", "T", "P", "E"};
#define DECIMAL_ZERO_INDEX 3 /* "" is 10^0; each step is a factor of 1000 */
static const char *const binary_suffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

typedef struct parsed_quantity {
    unsigned long long digits; /* the number without its decimal point */
    int fraction_digits;
    int decimal_power; /* 10^power from the suffix (decimal) or exponent */
    int binary_power;  /* 1024^power from the suffix, or -1 for decimal */
    bool exponent_form;
} parsed_quantity;

static int suffix_index(const char *s, const char *const *table, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!strcmp(s, table[i]))
            return (int)i;
    return -1;
}

static bool parse(const char *text, parsed_quantity *q)
{
    memset(q, 0, sizeof(*q));
    q->binary_power = -1;
    const char *p = text;
    if (*p == '+')
        p++;
    bool any = false, point = false;
    for (; (*p >= '0' && *p <= '9') || (*p == '.' && !point); p++) {
        if (*p == '.') {
            point = true;
            continue;
        }
        if (q->digits > (~0ULL - 9) / 10)
            return false;
        q->digits = q->digits * 10 + (unsigned long long)(*p - '0');
        q->fraction_digits += point;
        any = true;
    }
    if (!any)
        return false;
    int index = suffix_index(p, decimal_suffixes, 10);
    if (index >= 0) {
        q->decimal_power = 3 * (index - DECIMAL_ZERO_INDEX);
        return true;
    }
    index = suffix_index(p, binary_suffixes, 7);
    if (index > 0) {
        q->binary_power = index;
        return true;
    }
    if (*p != 'e' && *p != 'E')
        return false;
    char *end;
    long exponent = strtol(p + 1, &end, 10);
    if (end == p + 1 || *end || exponent < -30 || exponent > 30)
        return false;
    q->decimal_power = (int)exponent;
    q->exponent_form = true;
    return true;
}

bool kube_quantity_valid(const char *text)
{
    parsed_quantity q;
    return parse(text, &q);
}

static char *canonical_decimal(unsigned long long value, int power, bool exponent_form)
{
    /* Down to a multiple of 3 first (multiplying keeps the value exact)... */
    while (((power % 3) + 3) % 3) {
        if (value > ~0ULL / 10)
            return NULL;
        value *= 10;
        power--;
    }
    /* ...then as large a suffix as keeps the mantissa integral. */
    while (value && value % 1000 == 0 && power < 18) {
        value /= 1000;
        power += 3;
    }
    if (!value)
        return gc_xstrdup("0");
    if (exponent_form)
        return power ? gc_xasprintf("%llue%d", value, power) : gc_xasprintf("%llu", value);
    if (power < -9)
        return NULL;
    return gc_xasprintf("%llu%s", value, decimal_suffixes[power / 3 + DECIMAL_ZERO_INDEX]);
}

static char *canonical_binary(const parsed_quantity *q)
{
    /* The exact number of bytes, when the fraction resolves within the suffix's power. */
    unsigned long long value = q->digits;
    int power = q->binary_power, fraction = q->fraction_digits;
    while (fraction && power > 0) {
        /* value x 1024 / 10 stays exact only when the division works out */
        if (value > ~0ULL / 1024)
            return NULL;
        value *= 1024;
        power--;
        while (fraction && value % 10 == 0) {
            value /= 10;
            fraction--;
        }
    }
    if (fraction)
        return NULL;
    while (value && value % 1024 == 0 && power < 6) {
        value /= 1024;
        power++;
    }
    if (!value)
        return gc_xstrdup("0");
    return gc_xasprintf("%llu%s", value, binary_suffixes[power]);
}

char *gc_quantity_canonical(const char *text)
{
    parsed_quantity q;
    if (!parse(text, &q))
        return NULL;
    char *out =
        q.binary_power > 0
            ? canonical_binary(&q)
            : canonical_decimal(q.digits, q.decimal_power - q.fraction_digits, q.exponent_form);
    return out ? out : gc_xstrdup(text);
}

double gc_quantity_value(const char *text)
{
    parsed_quantity q;
    if (!text || !parse(text, &q))
        return -1;
    double value = (double)q.digits * pow(10.0, q.decimal_power - q.fraction_digits);
    return q.binary_power > 0 ? value * pow(1024.0, q.binary_power) : value;
}
