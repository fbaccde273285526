/*
 * Parsers for the small value languages of `job submit` flags: durations, names, mounts, node
 * constraints, exit codes, environment variables (and env files), comma lists and
 * whitespace-split argument strings.
 */
#include "submit/parse.h"

#include "gcluster/buf.h"
#include "gcluster/gcp.h"
#include "gcluster/kube.h"
#include "gcluster/sys.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

void submit_split_commas(const char *text, gc_strings *out)
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

int submit_parse_exit_code(const char *text, long *code, gc_error *err)
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
int submit_validate_gcs_location(const char *flag, const char *location, gc_error *err)
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
                   "--mount \"%s\": %s; the format is SOURCE;DEST[;ro|rw][;profile=training|"
                   "checkpointing|serving][;options=GCSFUSE_OPTIONS][;attributes=KEY=VALUE,...] "
                   "(or SOURCE:DEST[:ro|rw]) with SOURCE gs://BUCKET[/DIR], /HOST/PATH, "
                   "filestore://INSTANCE/SHARE, pvc://CLAIM or a PersistentVolumeClaim name",
                   spec, why);
}

/* Cleans an absolute path in place: no empty or "." components, no trailing '/'. Two spellings
 * of one directory ("/data/", "/data//.") must compare equal, because two mounts there would
 * collide in the container. A ".." (which escapes the intended directory) or the root itself is
 * the problem returned. */
static const char *clean_path(char *path)
{
    char *out = path;
    for (const char *p = path; *p;) {
        while (*p == '/')
            p++;
        size_t n = strcspn(p, "/");
        if (n == 2 && !strncmp(p, "..", 2))
            return "the destination may not contain \"..\"";
        if (n && !(n == 1 && *p == '.')) {
            *out++ = '/';
            memmove(out, p, n);
            out += n;
        }
        p += n;
    }
    *out = '\0';
    if (out == path)
        return "the destination must be a directory below /";
    return NULL;
}

int submit_parse_directory(const char *flag, const char *text, char **out, gc_error *err)
{
    *out = NULL;
    if (!text || text[0] != '/')
        return gc_fail(err, GC_EXIT_USAGE, "%s \"%s\": give an absolute directory, e.g. /mnt/x",
                       flag, text ? text : "");
    char *cleaned = gc_xstrdup(text);
    const char *problem = clean_path(cleaned);
    if (problem) {
        free(cleaned);
        return gc_fail(err, GC_EXIT_USAGE, "%s \"%s\": %s", flag, text,
                       !strncmp(problem, "the destination ", 16) ? problem + 16 : problem);
    }
    *out = cleaned;
    return 0;
}

/* The container's own system directories: a volume over one (or inside one) hides what the
 * image needs to run, so Google's gcluster refuses them, as we do. */
static const char *reserved_directory(const char *path)
{
    static const char *const reserved[] = {"/dev",  "/proc", "/sys", "/etc",  "/bin",
                                           "/sbin", "/usr",  "/lib", "/lib64"};
    for (size_t i = 0; i < sizeof(reserved) / sizeof(*reserved); i++) {
        size_t n = strlen(reserved[i]);
        if (!strncmp(path, reserved[i], n) && (path[n] == '\0' || path[n] == '/'))
            return reserved[i];
    }
    return NULL;
}

/* The destination as given (len bytes at `dest`): absolute, cleaned. */
static int mount_target(const char *spec, const char *dest, size_t len, char **target,
                        gc_error *err)
{
    if (len == 0 || dest[0] != '/')
        return mount_error(spec, "the destination must be an absolute path", err);
    char *cleaned = gc_xstrndup(dest, len);
    const char *problem = clean_path(cleaned);
    if (problem) {
        free(cleaned);
        return mount_error(spec, problem, err);
    }
    const char *reserved = reserved_directory(cleaned);
    if (reserved) {
        char *why = gc_xasprintf("the destination %s is %sthe container's system directory %s, "
                                 "which the image needs; mount it elsewhere, e.g. /data",
                                 cleaned, strcmp(cleaned, reserved) ? "inside " : "", reserved);
        free(cleaned);
        int rc = mount_error(spec, why, err);
        free(why);
        return rc;
    }
    *target = cleaned;
    return 0;
}

/* The old form, "gs://b/dir:/data:rw": the scheme's "://" is not a separator. */
static int split_colon_spec(const char *spec, char **source, gc_mount *m, gc_error *err)
{
    const char *scheme = strstr(spec, "://");
    const char *search = scheme ? scheme + 3 : spec;
    const char *colon = strchr(search, ':');
    if (!colon)
        return mount_error(spec, "missing the destination path", err);
    const char *mode = strchr(colon + 1, ':');
    m->read_only = true;
    if (mode) {
        if (!strcmp(mode + 1, "rw"))
            m->read_only = false;
        else if (strcmp(mode + 1, "ro") != 0)
            return mount_error(spec, "the mode must be ro or rw", err);
    }
    size_t target_len = mode ? (size_t)(mode - colon - 1) : strlen(colon + 1);
    int rc = mount_target(spec, colon + 1, target_len, &m->target, err);
    if (rc)
        return rc;
    if (colon == spec)
        return mount_error(spec, "missing the source", err);
    *source = gc_xstrndup(spec, (size_t)(colon - spec));
    return 0;
}

/* attributes=KEY=VALUE[,KEY=VALUE...]: extra volumeAttributes of the GCS FUSE CSI volume
 * (fileCacheCapacity=10Gi, gcsfuseMetadataPrefetchOnMount=true, ...). The driver reads only
 * string values under names of letters and digits; bucketName and mountOptions come from the
 * source and options= and may not be given twice. */
static int parse_attributes(const char *spec, const char *list, gc_strings *out, gc_error *err)
{
    gc_strings items = {0};
    submit_split_commas(list, &items);
    int rc = items.count ? 0 : mount_error(spec, "attributes= lists no KEY=VALUE", err);
    for (size_t i = 0; !rc && i < items.count; i++) {
        const char *item = items.items[i];
        size_t key_len = strcspn(item, "=");
        bool ok = key_len > 0 && item[key_len] == '=' && item[key_len + 1];
        for (size_t k = 0; ok && k < key_len; k++)
            ok = isalnum((unsigned char)item[k]) != 0;
        if (!ok)
            rc = mount_error(spec,
                             "each attributes= item must be KEY=VALUE with a KEY of letters and "
                             "digits (a GCS FUSE CSI volume attribute such as "
                             "fileCacheCapacity=10Gi)",
                             err);
        else if ((key_len == 10 && !strncmp(item, "bucketName", 10)) ||
                 (key_len == 12 && !strncmp(item, "mountOptions", 12)))
            rc = mount_error(spec,
                             "bucketName comes from the gs:// source and mountOptions from "
                             "options=; do not set them in attributes=",
                             err);
        for (size_t j = 0; !rc && j < out->count; j++)
            if (!strncmp(out->items[j], item, key_len + 1))
                rc = mount_error(spec, "attributes= sets one attribute twice", err);
        if (!rc)
            gc_strings_push(out, item);
    }
    gc_strings_free(&items);
    return rc;
}

/* Google's form, "SOURCE;DEST[;ro|rw][;options=...][;attributes=...]": ';' separates, so a
 * gcsfuse option list keeps its commas. Read-only unless rw, as in Google's gcluster. */
static int split_semicolon_spec(const char *spec, char **source, gc_mount *m, gc_error *err)
{
    const char *first = strchr(spec, ';');
    const char *dest = first + 1;
    size_t dest_len = strcspn(dest, ";");
    if (first == spec)
        return mount_error(spec, "missing the source", err);
    if (dest_len == 0)
        return mount_error(spec, "missing the destination path", err);
    int rc = mount_target(spec, dest, dest_len, &m->target, err);
    if (rc)
        return rc;
    m->read_only = true;
    bool mode_seen = false;
    for (const char *p = dest + dest_len; !rc && *p == ';';) {
        p++;
        size_t n = strcspn(p, ";");
        char *part = gc_xstrndup(p, n);
        if (!strcmp(part, "ro") || !strcmp(part, "rw")) {
            rc = mode_seen ? mount_error(spec, "give the mode ro or rw once", err) : 0;
            m->read_only = !strcmp(part, "ro");
            mode_seen = true;
        } else if (!strncmp(part, "options=", 8)) {
            rc = m->options ? mount_error(spec, "give options= once", err)
                 : !part[8] ? mount_error(spec, "options= is empty", err)
                            : 0;
            if (!rc)
                m->options = gc_xstrdup(part + 8);
        } else if (!strncmp(part, "attributes=", 11)) {
            rc = parse_attributes(spec, part + 11, &m->attributes, err);
        } else if (!strncmp(part, "profile=", 8)) {
            /* GKE applies Cloud Storage FUSE profiles only through its gcsfusecsi-* StorageClasses,
             * so the mount goes through a gateway claim on one (gcluster/manifest.h). */
            const char *storage_class = gc_storage_profile_class(part + 8);
            rc = m->profile ? mount_error(spec, "give profile= once (a mount has one profile)", err)
                 : !storage_class
                     ? mount_error(spec,
                                   "profile= is training, checkpointing or serving (or "
                                   "gcsfusecsi-training, -checkpointing, -serving)",
                                   err)
                     : 0;
            if (!rc)
                m->profile = gc_xstrdup(storage_class);
        } else {
            char *why =
                gc_xasprintf("\"%s\" is not ro, rw, options=, attributes= or profile=", part);
            rc = mount_error(spec, why, err);
            free(why);
        }
        free(part);
        p += n;
    }
    if (!rc)
        *source = gc_xstrndup(spec, (size_t)(first - spec));
    return rc;
}

static void split_path(const char *text, char **head, char **rest)
{
    const char *slash = strchr(text, '/');
    *head = gc_xstrndup(text, slash ? (size_t)(slash - text) : strlen(text));
    *rest = slash && slash[1] ? gc_xstrdup(slash) : NULL;
}

/* Whether `path` has a ".." component: the API server refuses a volume mount's subPath or a
 * hostPath that has one (it would step out of the directory named). */
static bool has_backstep(const char *path)
{
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += n;
        p += *p == '/';
    }
    return false;
}

/* A Filestore instance is reached at its IPv4 address in the VPC: four decimal numbers of at
 * most 255 (what gcloud filestore instances list shows). */
bool submit_filestore_is_ip(const char *text)
{
    struct in_addr addr;
    return inet_pton(AF_INET, text, &addr) == 1;
}

/* The one check of every path of a mount that ends up inside the bucket, share or node
 * directory it names (the Cloud Storage directory that becomes volumeMounts.subPath, the
 * Filestore share path, the host path): none may climb out with "..", which the API server
 * refuses only when the JobSet controller creates the Job, after submit has returned. */
static int check_no_backstep(const char *spec, const char *what, const char *path, gc_error *err)
{
    if (!path || !has_backstep(path))
        return 0;
    char *why = gc_xasprintf("%s may not contain \"..\" (Kubernetes refuses it): name the "
                             "directory itself",
                             what);
    int rc = mount_error(spec, why, err);
    free(why);
    return rc;
}

static int classify_mount(const char *spec, char *source, gc_mount *m, gc_error *err)
{
    if (!strncmp(source, "gs://", 5)) {
        m->kind = GC_MOUNT_GCS;
        split_path(source + 5, &m->source, &m->source_dir);
        if (m->source_dir) {
            /* The mount's subPath: relative, no '/' at either end. */
            const char *start = m->source_dir + strspn(m->source_dir, "/");
            size_t n = strlen(start);
            while (n && start[n - 1] == '/')
                n--;
            char *dir = n ? gc_xstrndup(start, n) : NULL;
            free(m->source_dir);
            m->source_dir = dir;
        }
        int rc = check_no_backstep(spec, "a Cloud Storage directory", m->source_dir, err);
        return rc ? rc : submit_validate_gcs_location("--mount", source, err);
    }
    if (m->options || m->attributes.count || m->profile)
        return mount_error(spec,
                           "profile=, options= and attributes= configure the GCS FUSE CSI driver, "
                           "so they apply to gs:// sources only",
                           err);
    if (!strncmp(source, "filestore://", 12)) {
        m->kind = GC_MOUNT_NFS;
        split_path(source + 12, &m->source, &m->source_dir);
        /* An instance name is resolved to its IP address later (filestore.c), after every
         * offline check has passed. */
        const char *why = !m->source[0] ? "the Filestore instance's name or IP address is missing"
                          : !submit_filestore_is_ip(m->source) &&
                                  !gc_gcp_is_name(m->source, 1, FILESTORE_NAME_MAX)
                              ? "the Filestore server is not an IPv4 address nor an instance name "
                                "(lower-case letters, digits and '-', a letter first)"
                          : !m->source_dir ? "the share is missing"
                                           : NULL;
        if (why) {
            char *text = gc_xasprintf("%s: a Filestore mount names the instance (its name or IP "
                                      "address) and the share, e.g. filestore://my-nfs/share or "
                                      "filestore://10.0.0.2/share (`gcloud filestore instances "
                                      "list` shows both)",
                                      why);
            int rc = mount_error(spec, text, err);
            free(text);
            return rc;
        }
        return check_no_backstep(spec, "a Filestore share path", m->source_dir, err);
    }
    if (source[0] == '/') {
        int rc = check_no_backstep(spec, "a host path", source, err);
        if (rc)
            return rc;
        m->kind = GC_MOUNT_HOST_PATH;
        m->source = gc_xstrdup(source);
        return 0;
    }
    const char *claim = !strncmp(source, "pvc://", 6) ? source + 6 : source;
    if (claim == source && strstr(source, "://"))
        return mount_error(spec, "unsupported scheme", err);
    if (!gc_kube_is_dns_subdomain(claim))
        return mount_error(spec, "not a valid PersistentVolumeClaim name", err);
    m->kind = GC_MOUNT_PVC;
    m->source = gc_xstrdup(claim);
    return 0;
}

int submit_parse_mount(const char *spec, gc_mount *m, gc_error *err)
{
    memset(m, 0, sizeof(*m));
    char *source = NULL;
    int rc = strchr(spec, ';') ? split_semicolon_spec(spec, &source, m, err)
                               : split_colon_spec(spec, &source, m, err);
    if (!rc)
        rc = classify_mount(spec, source, m, err);
    free(source);
    return rc;
}

int submit_parse_node_constraint(const char *spec, gc_node_term *term, gc_error *err)
{
    memset(term, 0, sizeof(*term));
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--node-constraint \"%s\": use KEY=VALUE, or KEY=V1|V2 for any of "
                       "several values",
                       spec);
    term->key = gc_xstrndup(spec, (size_t)(eq - spec));
    if (!gc_kube_is_label_key(term->key))
        return gc_fail(err, GC_EXIT_USAGE, "--node-constraint: \"%s\" is not a valid label key",
                       term->key);
    const char *p = eq + 1;
    for (;;) {
        size_t n = strcspn(p, "|");
        char *value = gc_xstrndup(p, n);
        bool ok = n > 0 && gc_kube_is_label_value(value);
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

/* What the API server accepts as a variable name: [-._a-zA-Z][-._a-zA-Z0-9]*, except "." and
 * names starting with "..". */
static bool is_env_name(const char *s, size_t n)
{
    if (n == 0 || (n == 1 && s[0] == '.') || (n >= 2 && s[0] == '.' && s[1] == '.') ||
        isdigit((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-._", s[i]))
            return false;
    return true;
}

static void add_env(gc_workload *w, const char *name, size_t name_len, const char *value,
                    size_t value_len, gc_env_scope scope, char *source)
{
    w->env = gc_xrealloc(w->env, (w->env_count + 1) * sizeof(*w->env));
    w->env[w->env_count++] = (gc_env_var){
        .name = gc_xstrndup(name, name_len),
        .value = gc_xstrndup(value, value_len),
        .scope = scope,
        .source = source,
    };
}

/* Values are never echoed: one may well be a token. */
static int bad_env_name(const char *where, const char *name, size_t len, gc_error *err)
{
    bool exported = len > 7 && !strncmp(name, "export ", 7);
    return gc_fail(
        err, GC_EXIT_USAGE,
        "%s: \"%.*s\" is not a valid environment variable name: use letters, digits, "
        "'_', '-' and '.', not starting with a digit or \"..\"%s",
        where, (int)len, name,
        exported ? " (write KEY=VALUE without \"export\": the file is not a shell script)" : "");
}

int submit_parse_env(const char *flag, const char *spec, gc_env_scope scope, gc_workload *w,
                     gc_error *err)
{
    const char *eq = strchr(spec, '=');
    if (!eq)
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s %s: use KEY=VALUE (KEY= for an empty value); gcluster does not copy "
                       "variables from your own environment",
                       flag, spec);
    size_t name_len = (size_t)(eq - spec);
    if (!is_env_name(spec, name_len))
        return bad_env_name(flag, spec, name_len, err);
    add_env(w, spec, name_len, eq + 1, strlen(eq + 1), scope, gc_xstrdup(flag));
    return 0;
}

/* An env file's value: as written, except that one pair of matching quotes around all of it is
 * removed ("a b" and 'a b' are a b); nothing inside is unescaped or expanded. */
static void unquote(const char **value, size_t *len)
{
    if (*len >= 2 && ((*value)[0] == '"' || (*value)[0] == '\'') &&
        (*value)[*len - 1] == (*value)[0]) {
        (*value)++;
        *len -= 2;
    }
}

static int env_file_line(const char *path, int number, const char *line, size_t len, gc_workload *w,
                         gc_error *err)
{
    char *where = gc_xasprintf("--env-file %s:%d", path, number);
    int rc = 0;
    while (len && (*line == ' ' || *line == '\t')) {
        line++;
        len--;
    }
    const char *eq = memchr(line, '=', len);
    size_t good = gc_text_utf8_prefix(line, len);
    if (good < len)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "%s is not valid UTF-8 (it stops being UTF-8 at byte %zu of the line); "
                     "Kubernetes stores text as UTF-8: convert the file, e.g. with iconv -t UTF-8",
                     where, good + 1);
    else if (!eq)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "%s: expected KEY=VALUE (KEY= for an empty value, # for a comment); gcluster "
                     "does not copy variables from your own environment",
                     where);
    else if (!is_env_name(line, (size_t)(eq - line)))
        rc = bad_env_name(where, line, (size_t)(eq - line), err);
    if (rc) {
        free(where);
        return rc;
    }
    const char *value = eq + 1;
    size_t value_len = len - (size_t)(value - line);
    unquote(&value, &value_len);
    add_env(w, line, (size_t)(eq - line), value, value_len, GC_ENV_WORKLOAD, where);
    return 0;
}

/* An env file is at most this big: its variables go into the JobSet, which etcd keeps whole. */
#define ENV_FILE_MAX (1024 * 1024)

int submit_read_env_file(const char *path, gc_workload *w, gc_error *err)
{
    gc_buf text;
    gc_buf_init(&text);
    int rc = gc_file_read(path, ENV_FILE_MAX, &text, err);
    if (rc)
        gc_error_prefix(err, "--env-file: ");
    if (!rc && memchr(text.data, '\0', text.len))
        rc =
            gc_fail(err, GC_EXIT_USAGE,
                    "--env-file %s has a NUL byte: it is not a text file of KEY=VALUE lines", path);
    const char *p = text.data;
    const char *end = text.data + text.len;
    for (int number = 1; !rc && p < end; number++) {
        const char *newline = memchr(p, '\n', (size_t)(end - p));
        size_t len = newline ? (size_t)(newline - p) : (size_t)(end - p);
        size_t content = len && p[len - 1] == '\r' ? len - 1 : len; /* CRLF files */
        size_t indent = strspn(p, " \t");
        if (indent < content && p[indent] != '#')
            rc = env_file_line(path, number, p, content, w, err);
        p += len + 1;
    }
    gc_buf_free(&text);
    return rc;
}
