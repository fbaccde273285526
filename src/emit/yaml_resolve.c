/*
 * What a plain YAML scalar means.
 *
 * Kubernetes reads YAML with a YAML 1.1 flavoured parser (yes/no/on/off are booleans, 0755 is
 * octal, 12:30 is sexagesimal), Terraform and most modern tools with YAML 1.2's core schema.
 * An emitted string must stay a string under both, so the test for "ambiguous" is the union of
 * the two schemas, and deliberately broad for anything that starts like a number: quoting a
 * string such as "4x4" costs nothing, reading an env value back as an integer breaks a pod.
 */
#include "gcluster/emit.h"

#include "emit/internal.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static bool equals_word(const char *text, size_t len, const char *const *words)
{
    for (; *words; words++)
        if (strlen(*words) == len && strncasecmp(text, *words, len) == 0)
            return true;
    return false;
}

static bool is_boolean_or_null(const char *text, size_t len)
{
    static const char *const words[] = {"y",    "n",     "yes",   "no",   "true", "false",
                                        "on",   "off",   "null",  "~",    "<<",   "=",
                                        ".inf", "+.inf", "-.inf", ".nan", NULL};
    return equals_word(text, len, words);
}

/* Starts like a number and uses only characters that numbers, timestamps and sexagesimals of
 * either schema can contain. */
static bool looks_numeric(const char *text, size_t len)
{
    unsigned char first = (unsigned char)text[0];
    if (!isdigit(first) && first != '+' && first != '-' && first != '.')
        return false;
    bool has_digit = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (isdigit(c)) {
            has_digit = true;
            continue;
        }
        if (!strchr("+-._:abcdefABCDEFxXoOtTzZ ", c))
            return false;
    }
    return has_digit;
}

bool emit_yaml_plain_is_ambiguous(const char *text, size_t len)
{
    if (len == 0)
        return true;
    return is_boolean_or_null(text, len) || looks_numeric(text, len);
}
