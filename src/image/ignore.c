#include "image/ignore.h"

#include "gcluster/buf.h"
#include "gcluster/sys.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IGNORE_FILE (1u << 20)

typedef struct pattern {
    char *glob; /* cleaned: no leading '/', no "." or empty segments */
    bool exception;
} pattern;

struct image_ignore {
    pattern *items;
    size_t count;
    size_t cap;
};

/* What gcluster leaves out of every context before .dockerignore is read (so a '!' line there
 * can bring one back). Tool state and caches are junk at any depth; vendor/, bin/, pkg/ and tmp/
 * only at the root, because a nested directory with one of those names is often real source
 * (a Python package called "pkg", a project's "bin" scripts). */
static const char *const default_patterns[] = {
    "**/.git", "**/.terraform",   "**/.ghpc", "**/.ansible", "vendor",       "bin",
    "pkg",     "**/node_modules", "**/*.log", "tmp/",        "**/.DS_Store", "**/__pycache__",
};

image_ignore *image_ignore_new(void)
{
    return gc_xcalloc(1, sizeof(image_ignore));
}

void image_ignore_free(image_ignore *ig)
{
    if (!ig)
        return;
    for (size_t i = 0; i < ig->count; i++)
        free(ig->items[i].glob);
    free(ig->items);
    free(ig);
}

static bool ends_with_parent_ref(const gc_buf *b)
{
    return strcmp(b->data, "..") == 0 || (b->len >= 3 && strcmp(b->data + b->len - 3, "/..") == 0);
}

static void drop_last_segment(gc_buf *b)
{
    char *slash = strrchr(b->data, '/');
    b->len = slash ? (size_t)(slash - b->data) : 0;
    b->data[b->len] = '\0';
}

/* Like Go's path.Clean followed by dropping a leading '/', which is what Docker does to every
 * pattern: "/a//b/./c/" and "a/b/c" mean the same. */
static char *clean_pattern(const char *raw)
{
    gc_buf out;
    gc_buf_init(&out);
    for (const char *p = raw; *p;) {
        size_t len = strcspn(p, "/");
        if (len == 2 && strncmp(p, "..", 2) == 0 && out.len && !ends_with_parent_ref(&out)) {
            drop_last_segment(&out);
        } else if (len && !(len == 1 && *p == '.')) {
            if (out.len)
                gc_buf_putc(&out, '/');
            gc_buf_append(&out, p, len);
        }
        p += len;
        if (*p)
            p++;
    }
    return gc_buf_detach(&out);
}

/* A '[' without its ']' (or a trailing '\') can never match; Docker rejects such a pattern. */
static bool pattern_is_well_formed(const char *glob)
{
    for (const char *p = glob; *p; p++) {
        if (*p == '\\') {
            if (!p[1])
                return false;
            p++;
        } else if (*p == '[') {
            const char *q = p + 1;
            if (*q == '^' || *q == '!')
                q++;
            if (*q == ']')
                q++;
            while (*q && *q != ']')
                q += (*q == '\\' && q[1]) ? 2 : 1;
            if (!*q)
                return false;
            p = q;
        }
    }
    return true;
}

static void add_pattern(image_ignore *ig, char *glob, bool exception)
{
    if (ig->count == ig->cap) {
        ig->cap = ig->cap ? ig->cap * 2 : 16;
        ig->items = gc_xrealloc(ig->items, ig->cap * sizeof(*ig->items));
    }
    ig->items[ig->count++] = (pattern){glob, exception};
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    size_t len = strlen(s);
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        s[--len] = '\0';
    return s;
}

static int add_line(image_ignore *ig, char *line, const char *source, int lineno, gc_error *err)
{
    if (line[0] == '#')
        return 0;
    line = trim(line);
    bool exception = line[0] == '!';
    if (exception)
        line = trim(line + 1);
    if (!line[0])
        return 0;
    char *glob = clean_pattern(line);
    if (!pattern_is_well_formed(glob)) {
        free(glob);
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s:%d: bad pattern \"%s\": an unclosed '[' or a trailing '\\'; escape "
                       "special characters with '\\'",
                       source, lineno, line);
    }
    add_pattern(ig, glob, exception);
    return 0;
}

int image_ignore_add_text(image_ignore *ig, const char *text, const char *source, gc_error *err)
{
    char *copy = gc_xstrdup(text);
    char *line = copy;
    /* A UTF-8 byte order mark from a Windows editor is not part of the first pattern. */
    if (strncmp(line, "\xEF\xBB\xBF", 3) == 0)
        line += 3;
    int lineno = 1;
    int rc = 0;
    while (line && !rc) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        rc = add_line(ig, line, source, lineno++, err);
        line = next;
    }
    free(copy);
    return rc;
}

int image_ignore_load(const char *context_dir, image_ignore **out, gc_error *err)
{
    image_ignore *ig = image_ignore_new();
    for (size_t i = 0; i < sizeof(default_patterns) / sizeof(default_patterns[0]); i++)
        add_pattern(ig, clean_pattern(default_patterns[i]), false);

    char *path = gc_xasprintf("%s/.dockerignore", context_dir);
    gc_buf text;
    gc_buf_init(&text);
    int rc = gc_file_read(path, MAX_IGNORE_FILE, &text, err);
    if (rc == 0)
        rc = image_ignore_add_text(ig, text.data, path, err);
    else if (errno == ENOENT)
        rc = 0; /* no .dockerignore: the defaults alone */
    gc_buf_free(&text);
    free(path);
    if (rc) {
        gc_error_prefix(err, "failed to read .dockerignore patterns: ");
        image_ignore_free(ig);
        return rc;
    }
    *out = ig;
    return 0;
}

/* Matches one '[...]' class at *pp against c and moves *pp past it. */
static bool class_matches(const char **pp, char c)
{
    const char *p = *pp + 1;
    bool negated = *p == '^' || *p == '!';
    if (negated)
        p++;
    bool found = false;
    bool first = true;
    while (*p && (*p != ']' || first)) {
        first = false;
        char lo = *p == '\\' && p[1] ? *++p : *p;
        p++;
        char hi = lo;
        if (*p == '-' && p[1] && p[1] != ']') {
            p++;
            hi = *p == '\\' && p[1] ? *++p : *p;
            p++;
        }
        if (lo <= c && c <= hi)
            found = true;
    }
    *pp = *p ? p + 1 : p;
    return found != negated;
}

bool image_ignore_glob_match(const char *p, const char *s)
{
    while (*p) {
        if (p[0] == '*' && p[1] == '*') {
            /* "**" spans any number of whole directories (zero included), as in Docker's
             * regexp translation; at the end of a pattern it takes everything that is left. */
            p += 2;
            if (*p == '/')
                p++;
            if (!*p)
                return true;
            if (image_ignore_glob_match(p, s))
                return true;
            for (const char *t = s; *t; t++)
                if (*t == '/' && image_ignore_glob_match(p, t + 1))
                    return true;
            return false;
        }
        switch (*p) {
        case '*':
            p++;
            for (const char *t = s;; t++) {
                if (image_ignore_glob_match(p, t))
                    return true;
                if (!*t || *t == '/')
                    return false;
            }
        case '?':
            if (!*s || *s == '/')
                return false;
            p++;
            s++;
            break;
        case '[':
            if (!*s || *s == '/' || !class_matches(&p, *s))
                return false;
            s++;
            break;
        default:
            /* A '\' makes the next character literal. */
            if (*p == '\\' && p[1])
                p++;
            if (*p != *s)
                return false;
            p++;
            s++;
        }
    }
    return *s == '\0';
}

/* A pattern also covers everything below a directory it matches ("build" hides build/x/y). */
static bool matches_path_or_parent(const char *glob, const char *path)
{
    if (image_ignore_glob_match(glob, path))
        return true;
    char *prefix = gc_xstrdup(path);
    bool matched = false;
    for (char *slash = strchr(prefix, '/'); slash && !matched; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        matched = image_ignore_glob_match(glob, prefix);
        *slash = '/';
    }
    free(prefix);
    return matched;
}

bool image_ignore_excludes(const image_ignore *ig, const char *path)
{
    bool excluded = false;
    for (size_t i = 0; i < ig->count; i++)
        if (ig->items[i].exception == excluded && matches_path_or_parent(ig->items[i].glob, path))
            excluded = !ig->items[i].exception;
    return excluded;
}

bool image_ignore_has_exceptions(const image_ignore *ig)
{
    for (size_t i = 0; i < ig->count; i++)
        if (ig->items[i].exception)
            return true;
    return false;
}
