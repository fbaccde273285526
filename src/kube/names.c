/*
 * The forms of Kubernetes names, each written once: what the API server accepts as an object
 * name, a namespace or container name, a label key and a label value. Checking the form before
 * anything is sent turns a typo into a message naming the flag or field, instead of a 422 (or a
 * name that reaches into another API path).
 */
#include "gcluster/kube.h"

#include <stdlib.h>
#include <string.h>

static bool lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
    return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

bool gc_kube_is_dns_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

bool gc_kube_is_dns1035_label(const char *s)
{
    return gc_kube_is_dns_label(s) && s[0] >= 'a' && s[0] <= 'z';
}

bool gc_kube_is_dns_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253 || !lower_alnum(s[0]) || !lower_alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!lower_alnum(s[i]) && s[i] != '-' && s[i] != '.')
            return false;
    return true;
}

bool gc_kube_is_label_value(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return true;
    if (n > 63 || !alnum(s[0]) || !alnum(s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!alnum(s[i]) && !strchr("-_.", s[i]))
            return false;
    return true;
}

bool gc_kube_is_label_key(const char *s)
{
    const char *slash = strrchr(s, '/');
    const char *name = slash ? slash + 1 : s;
    if (!*name || !gc_kube_is_label_value(name))
        return false;
    if (!slash)
        return true;
    size_t plen = (size_t)(slash - s);
    char prefix[254];
    if (plen >= sizeof(prefix))
        return false;
    memcpy(prefix, s, plen);
    prefix[plen] = '\0';
    return gc_kube_is_dns_subdomain(prefix);
}
