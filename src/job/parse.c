/*
 * Parsers for the small value languages of `job submit` flags: durations, names, mounts, node
 * constraints, exit codes, comma lists and whitespace-split argument strings.
 */
#include "job/parse.h"

#include "gcluster/buf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

bool gc_is_dns1035_label(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || !islower((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
            return false;
    return s[n - 1] != '-';
}

bool job_is_dns1123_subdomain(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!islower(c) && !isdigit(c) && c != '-' && c != '.')
            return false;
    }
    return isalnum((unsigned char)s[0]) && isalnum((unsigned char)s[n - 1]);
}

/* A label value: at most 63 of [A-Za-z0-9-_.], starting and ending alphanumeric, or empty. */
bool job_is_label_value(const char *s)
{
    size_t n = strlen(s);
    if (n == 0)
        return true;
    if (n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i]))
            return false;
    return true;
}

/* A label key: an optional DNS subdomain prefix and '/', then a name like a label value. */
bool job_is_label_key(const char *s)
{
    const char *slash = strrchr(s, '/');
    const char *name = slash ? slash + 1 : s;
    if (!*name || !job_is_label_value(name))
        return false;
    if (!slash)
        return true;
    char *prefix = gc_xstrndup(s, (size_t)(slash - s));
    bool ok = job_is_dns1123_subdomain(prefix);
    free(prefix);
    return ok;
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

int gc_parse_duration(const char *flag, const char *text, long *seconds, gc_error *err)
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

void job_split_words(const char *text, gc_strings *out)
{
    const char *p = text ? text : "";
    while (*p) {
        while (*p && isspace((unsigned char)*p))
            p++;
        size_t n = 0;
        while (p[n] && !isspace((unsigned char)p[n]))
            n++;
        if (n) {
            char *word = gc_xstrndup(p, n);
            gc_strings_push(out, word);
            free(word);
        }
        p += n;
    }
}

void job_split_commas(const char *text, gc_strings *out)
{
    const char *p = text ? text : "";
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *start = p;
        const char *end = p + n;
        while (start < end && isspace((unsigned char)*start))
            start++;
        while (end > start && isspace((unsigned char)end[-1]))
            end--;
        if (end > start) {
            char *item = gc_xstrndup(start, (size_t)(end - start));
            gc_strings_push(out, item);
            free(item);
        }
        p += n;
        if (*p == ',')
            p++;
    }
}

int job_parse_exit_code(const char *text, long *code, gc_error *err)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno || v < 0 || v > 255)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--restart-on-exit-codes: \"%s\" is not an exit code (1-255)", text);
    if (v == 0)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--restart-on-exit-codes: 0 means success and never restarts a job; list "
                       "only failure codes (1-255)");
    *code = v;
    return 0;
}

/* gs://BUCKET[/PREFIX] with a bucket name of 3-63 characters of a-z 0-9 - _ . that starts and
 * ends with a letter or digit. */
int job_validate_gcs_location(const char *flag, const char *location, gc_error *err)
{
    if (strncmp(location, "gs://", 5) != 0)
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s must be a Cloud Storage location gs://BUCKET[/PREFIX], not \"%s\"", flag,
                       location);
    const char *bucket = location + 5;
    size_t n = strcspn(bucket, "/");
    bool ok = n >= 3 && n <= 63 && isalnum((unsigned char)bucket[0]) &&
              isalnum((unsigned char)bucket[n - 1]);
    for (size_t i = 0; ok && i < n; i++) {
        unsigned char c = (unsigned char)bucket[i];
        ok = islower(c) || isdigit(c) || c == '-' || c == '_' || c == '.';
    }
    if (!ok)
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s: \"%.*s\" is not a valid bucket name: use 3-63 lower-case letters, "
                       "digits, '-', '_' or '.', starting and ending with a letter or digit",
                       flag, (int)n, bucket);
    return 0;
}

static int mount_error(const char *spec, const char *why, gc_error *err)
{
    return gc_fail(err, GC_EXIT_USAGE,
                   "--mount \"%s\": %s; the format is SOURCE:DEST[:ro|rw] with SOURCE gs://BUCKET"
                   "[/DIR], /HOST/PATH, filestore://IP/SHARE or a PersistentVolumeClaim name",
                   spec, why);
}

/* Splits "gs://b/dir:/data:rw": the scheme's "://" is not a separator. */
static int split_mount_spec(const char *spec, char **source, char **target, bool *read_only,
                            gc_error *err)
{
    const char *scheme = strstr(spec, "://");
    const char *search = scheme ? scheme + 3 : spec;
    const char *colon = strchr(search, ':');
    if (!colon)
        return mount_error(spec, "missing the destination path", err);
    const char *mode = strchr(colon + 1, ':');
    *read_only = true;
    if (mode) {
        if (!strcmp(mode + 1, "rw"))
            *read_only = false;
        else if (strcmp(mode + 1, "ro") != 0)
            return mount_error(spec, "the mode must be ro or rw", err);
    }
    size_t target_len = mode ? (size_t)(mode - colon - 1) : strlen(colon + 1);
    if (target_len == 0 || colon[1] != '/')
        return mount_error(spec, "the destination must be an absolute path", err);
    if (colon == spec)
        return mount_error(spec, "missing the source", err);
    *source = gc_xstrndup(spec, (size_t)(colon - spec));
    *target = gc_xstrndup(colon + 1, target_len);
    return 0;
}

static void split_path(const char *text, char **head, char **rest)
{
    const char *slash = strchr(text, '/');
    *head = gc_xstrndup(text, slash ? (size_t)(slash - text) : strlen(text));
    *rest = slash && slash[1] ? gc_xstrdup(slash) : NULL;
}

static int classify_mount(const char *spec, char *source, gc_mount *m, gc_error *err)
{
    if (!strncmp(source, "gs://", 5)) {
        m->kind = GC_MOUNT_GCS;
        split_path(source + 5, &m->source, &m->source_dir);
        if (m->source_dir) {
            char *dir = gc_xstrdup(m->source_dir + 1); /* only-dir takes no leading '/' */
            free(m->source_dir);
            m->source_dir = dir;
        }
        return job_validate_gcs_location("--mount", source, err);
    }
    if (!strncmp(source, "filestore://", 12)) {
        m->kind = GC_MOUNT_NFS;
        split_path(source + 12, &m->source, &m->source_dir);
        if (!m->source_dir || strspn(m->source, "0123456789.") != strlen(m->source))
            return mount_error(spec,
                               "a Filestore mount needs the instance's IP address and share, "
                               "e.g. filestore://10.0.0.2/share (find them with `gcloud "
                               "filestore instances list`)",
                               err);
        return 0;
    }
    if (source[0] == '/') {
        m->kind = GC_MOUNT_HOST_PATH;
        m->source = gc_xstrdup(source);
        return 0;
    }
    if (strstr(source, "://"))
        return mount_error(spec, "unsupported scheme", err);
    if (!job_is_dns1123_subdomain(source))
        return mount_error(spec, "not a valid PersistentVolumeClaim name", err);
    m->kind = GC_MOUNT_PVC;
    m->source = gc_xstrdup(source);
    return 0;
}

int job_parse_mount(const char *spec, gc_mount *m, gc_error *err)
{
    memset(m, 0, sizeof(*m));
    char *source = NULL;
    int rc = split_mount_spec(spec, &source, &m->target, &m->read_only, err);
    if (!rc)
        rc = classify_mount(spec, source, m, err);
    free(source);
    return rc;
}

int job_parse_node_constraint(const char *spec, gc_node_term *term, gc_error *err)
{
    memset(term, 0, sizeof(*term));
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--node-constraint \"%s\": use KEY=VALUE, or KEY=V1|V2 for any of "
                       "several values",
                       spec);
    term->key = gc_xstrndup(spec, (size_t)(eq - spec));
    if (!job_is_label_key(term->key))
        return gc_fail(err, GC_EXIT_USAGE, "--node-constraint: \"%s\" is not a valid label key",
                       term->key);
    const char *p = eq + 1;
    for (;;) {
        size_t n = strcspn(p, "|");
        char *value = gc_xstrndup(p, n);
        bool ok = n > 0 && job_is_label_value(value);
        if (ok)
            gc_strings_push(&term->values, value);
        free(value);
        if (!ok)
            return gc_fail(err, GC_EXIT_USAGE,
                           "--node-constraint \"%s\": \"%.*s\" is not a valid label value "
                           "(empty elements are not allowed either)",
                           spec, (int)n, p);
        if (!p[n])
            break;
        p += n + 1;
    }
    return 0;
}
