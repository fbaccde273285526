/*
 * The forms of Google Cloud names gcluster stores, prints and passes to gcloud: project IDs, GKE
 * cluster and node-pool names, regions and zones, machine types. Checking the form early turns a
 * typo (or a control byte) into a message that names the value's source, instead of a context
 * name that never matches, a gcloud error, or text that draws on the terminal.
 */
#include "gcluster/gcp.h"

#include <string.h>

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_lower_name(const char *s, size_t len, size_t min, size_t max)
{
    if (len < min || len > max || !(s[0] >= 'a' && s[0] <= 'z') || s[len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

/* 6 to 30 characters of that form; projects created in a Google Workspace domain before 2017
 * keep an ID scoped by it, "example.com:my-project". */
bool gc_gcp_is_project_id(const char *s)
{
    const char *colon = strchr(s, ':');
    if (colon) {
        size_t dlen = (size_t)(colon - s);
        if (dlen < 3 || dlen > 253 || !memchr(s, '.', dlen) || s[0] == '.' || s[dlen - 1] == '.')
            return false;
        for (size_t i = 0; i < dlen; i++)
            if (!is_lower_alnum(s[i]) && s[i] != '-' && s[i] != '.')
                return false;
        s = colon + 1;
    }
    return is_lower_name(s, strlen(s), 6, 30);
}

/* GKE cluster and node-pool names: 1 to 40 characters of that form. */
bool gc_gcp_is_gke_name(const char *s)
{
    return is_lower_name(s, strlen(s), 1, 40);
}

/* A region is words of lower-case letters joined by '-' and ending in a number (us-central1,
 * northamerica-northeast2); a zone is a region, '-' and one letter (us-east5-b). */
bool gc_gcp_is_location(const char *s)
{
    size_t len = strlen(s);
    if (len > 2 && s[len - 2] == '-' && s[len - 1] >= 'a' && s[len - 1] <= 'z')
        len -= 2;
    size_t digits = 0;
    while (digits < len && s[len - 1 - digits] >= '0' && s[len - 1 - digits] <= '9')
        digits++;
    size_t words = len - digits;
    if (!digits || digits > 3 || words < 2 || words > 40 || s[0] == '-' || s[words - 1] == '-' ||
        !memchr(s, '-', words))
        return false;
    for (size_t i = 0; i < words; i++)
        if (s[i] == '-' ? s[i + 1] == '-' : !(s[i] >= 'a' && s[i] <= 'z'))
            return false;
    return true;
}

bool gc_gcp_is_name(const char *s, size_t min, size_t max)
{
    return is_lower_name(s, strlen(s), min, max);
}

/* Machine types: that form (n2-standard-32, ct6e-standard-4t, n2-custom-8-16384), at most 63. */
bool gc_gcp_is_machine_type(const char *s)
{
    return is_lower_name(s, strlen(s), 1, 63);
}
