#include "image/layer.h"

#include "image/ignore.h"

#include "gcluster/buf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define TAR_BLOCK  512
#define IO_CHUNK   (64 * 1024)
#define USTAR_NAME 100
/* The largest size an 11-digit octal field holds; bigger files need a pax "size" record. */
#define USTAR_MAX_SIZE 077777777777LL

/* One thing to put in the layer, found by the walk. */
typedef struct entry {
    char *path; /* relative to the context, '/'-separated */
    struct stat st;
} entry;

typedef struct entry_list {
    entry *items;
    size_t count;
    size_t cap;
} entry_list;

/* Where tar bytes go: the diff_id hash, and when compressing, zlib, the digest hash and a file. */
/* Where sink_write sends bytes when the context goes under a directory: the layer's tar gets the
 * entries under their directory, and a second hash sees the same tar as it would be at the root
 * (the context's identity, which names the image before the base image is read). */
typedef enum sink_route { TO_BOTH, TO_LAYER, TO_PLAIN } sink_route;

typedef struct layer_sink {
    image_sha256 *tar_hash;
    image_sha256 *plain_hash; /* with a directory: the tar at the root */
    sink_route route;
    image_sha256 *blob_hash;
    bool compress;
    z_stream z;
    gz_header gzip_header;
    FILE *out;
    long long tar_size;
    long long blob_size;
    unsigned char zbuf[IO_CHUNK];
} layer_sink;

static void entry_list_free(entry_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        free(list->items[i].path);
    free(list->items);
}

static void entry_list_push(entry_list *list, char *path, const struct stat *st)
{
    if (list->count == list->cap) {
        list->cap = list->cap ? list->cap * 2 : 64;
        list->items = gc_xrealloc(list->items, list->cap * sizeof(*list->items));
    }
    list->items[list->count++] = (entry){path, *st};
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in a directory, sorted bytewise so the order never depends on the file system. */
static int sorted_names(const char *dir, char ***names, size_t *count, gc_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return gc_fail(err, GC_EXIT_USAGE, "cannot read directory %s: %s", dir, strerror(errno));
    size_t n = 0, cap = 16;
    char **list = gc_xmalloc(cap * sizeof(*list));
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (n == cap)
            list = gc_xrealloc(list, (cap *= 2) * sizeof(*list));
        list[n++] = gc_xstrdup(de->d_name);
    }
    closedir(d);
    qsort(list, n, sizeof(*list), compare_names);
    *names = list;
    *count = n;
    return 0;
}

static void free_names(char **names, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(names[i]);
    free(names);
}

typedef struct walk {
    const char *root;
    const image_ignore *ignore;
    bool has_exceptions;
    const gc_events *events;
    entry_list *entries;
} walk;

static int walk_dir(walk *w, const char *rel, gc_error *err);

static int walk_entry(walk *w, const char *rel, gc_error *err)
{
    char *abs = gc_xasprintf("%s/%s", w->root, rel);
    struct stat st;
    int rc = 0;
    if (lstat(abs, &st) != 0) {
        rc = gc_fail(err, GC_EXIT_USAGE, "cannot read %s: %s", abs, strerror(errno));
    } else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
        gc_warn(w->events, "skipping %s: not a file, directory or symlink", abs);
    } else {
        bool excluded = image_ignore_excludes(w->ignore, rel);
        if (!S_ISDIR(st.st_mode)) {
            if (!excluded)
                entry_list_push(w->entries, gc_xstrdup(rel), &st);
        } else if (!excluded || w->has_exceptions) {
            /* An excluded directory is walked only because a '!' pattern may re-include
             * something inside; it is kept in the layer only if something was. */
            size_t mark = w->entries->count;
            entry_list_push(w->entries, gc_xstrdup(rel), &st);
            rc = walk_dir(w, rel, err);
            if (!rc && excluded && w->entries->count == mark + 1) {
                free(w->entries->items[mark].path);
                w->entries->count = mark;
            }
        }
    }
    free(abs);
    return rc;
}

static int walk_dir(walk *w, const char *rel, gc_error *err)
{
    char *abs = rel ? gc_xasprintf("%s/%s", w->root, rel) : gc_xstrdup(w->root);
    char **names = NULL;
    size_t count = 0;
    int rc = sorted_names(abs, &names, &count, err);
    free(abs);
    for (size_t i = 0; !rc && i < count; i++) {
        char *child = rel ? gc_xasprintf("%s/%s", rel, names[i]) : gc_xstrdup(names[i]);
        rc = walk_entry(w, child, err);
        free(child);
    }
    free_names(names, count);
    return rc;
}

static int sink_init(layer_sink *s, bool compress, gc_error *err)
{
    s->tar_hash = image_sha256_new();
    s->compress = compress;
    if (!compress)
        return 0;
    s->blob_hash = image_sha256_new();
    /* windowBits 15 + 16 asks zlib for a gzip wrapper; the explicit header pins the fields a
     * gzip tool would fill from the environment (name, mtime, OS) to fixed values. The fastest
     * level, as crane uses: contexts often carry incompressible data (weights, archives), where
     * higher levels cost seconds per build and save almost nothing. */
    if (deflateInit2(&s->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot start gzip compression");
    s->gzip_header.os = 255; /* "unknown", as Go's gzip writes it */
    if (deflateSetHeader(&s->z, &s->gzip_header) != Z_OK)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot set the gzip header");
    return 0;
}

static int sink_deflate(layer_sink *s, const void *data, size_t len, int flush, gc_error *err)
{
    s->z.next_in = (unsigned char *)data;
    s->z.avail_in = (uInt)len;
    int zrc;
    do {
        s->z.next_out = s->zbuf;
        s->z.avail_out = sizeof(s->zbuf);
        zrc = deflate(&s->z, flush);
        if (zrc == Z_STREAM_ERROR)
            return gc_fail(err, GC_EXIT_RUNTIME, "gzip compression failed");
        size_t produced = sizeof(s->zbuf) - s->z.avail_out;
        if (produced && fwrite(s->zbuf, 1, produced, s->out) != produced)
            return gc_fail(err, GC_EXIT_RUNTIME, "cannot write the layer to a temporary file: %s",
                           strerror(errno));
        image_sha256_update(s->blob_hash, s->zbuf, produced);
        s->blob_size += (long long)produced;
    } while (s->z.avail_out == 0 || (flush == Z_FINISH && zrc != Z_STREAM_END));
    return 0;
}

static int sink_write(layer_sink *s, const void *data, size_t len, gc_error *err)
{
    if (s->plain_hash && s->route != TO_LAYER)
        image_sha256_update(s->plain_hash, data, len);
    if (s->route == TO_PLAIN)
        return 0;
    image_sha256_update(s->tar_hash, data, len);
    s->tar_size += (long long)len;
    return s->compress ? sink_deflate(s, data, len, Z_NO_FLUSH, err) : 0;
}

static void sink_discard(layer_sink *s)
{
    if (s->plain_hash) {
        char ignored[GC_DIGEST_LEN];
        image_sha256_finish(s->plain_hash, ignored);
    }
    if (s->tar_hash) {
        char ignored[GC_DIGEST_LEN];
        image_sha256_finish(s->tar_hash, ignored);
    }
    if (s->blob_hash) {
        char ignored[GC_DIGEST_LEN];
        image_sha256_finish(s->blob_hash, ignored);
        deflateEnd(&s->z);
    }
}

/* Writes `value` as zero-padded octal filling `width - 1` digits and a NUL. */
static void put_octal(char *field, size_t width, unsigned long long value)
{
    field[width - 1] = '\0';
    for (size_t i = width - 1; i-- > 0; value >>= 3)
        field[i] = (char)('0' + (value & 7));
}

static void put_string(char *field, size_t width, const char *s)
{
    size_t len = strlen(s);
    memcpy(field, s, len < width ? len : width);
}

/* Offsets of the ustar header fields (POSIX.1-2001). */
enum {
    H_NAME = 0,
    H_MODE = 100,
    H_UID = 108,
    H_GID = 116,
    H_SIZE = 124,
    H_MTIME = 136,
    H_CHKSUM = 148,
    H_TYPE = 156,
    H_LINKNAME = 157,
    H_MAGIC = 257,
    H_VERSION = 263,
    H_DEVMAJOR = 329,
    H_DEVMINOR = 337,
};

static void finish_header(unsigned char *h)
{
    memcpy(h + H_MAGIC, "ustar", 6);
    memcpy(h + H_VERSION, "00", 2);
    put_octal((char *)h + H_UID, 8, 0);
    put_octal((char *)h + H_GID, 8, 0);
    put_octal((char *)h + H_MTIME, 12, 0);
    put_octal((char *)h + H_DEVMAJOR, 8, 0);
    put_octal((char *)h + H_DEVMINOR, 8, 0);
    memset(h + H_CHKSUM, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < TAR_BLOCK; i++)
        sum += h[i];
    put_octal((char *)h + H_CHKSUM, 7, sum);
    h[H_CHKSUM + 7] = ' ';
}

static int write_padding(layer_sink *s, long long written, gc_error *err)
{
    static const unsigned char zeros[TAR_BLOCK];
    size_t pad = (size_t)((TAR_BLOCK - written % TAR_BLOCK) % TAR_BLOCK);
    return pad ? sink_write(s, zeros, pad, err) : 0;
}

static size_t decimal_digits(size_t n)
{
    size_t d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

/* A pax record is "<length> <key>=<value>\n" where <length> counts its own digits too. */
static void pax_record(gc_buf *b, const char *key, const char *value)
{
    size_t payload = strlen(key) + strlen(value) + 3;
    size_t len = payload + decimal_digits(payload);
    if (decimal_digits(len) != decimal_digits(payload))
        len = payload + decimal_digits(len);
    gc_buf_printf(b, "%zu %s=%s\n", len, key, value);
}

static int write_pax_header(layer_sink *s, const gc_buf *records, gc_error *err)
{
    unsigned char h[TAR_BLOCK] = {0};
    put_string((char *)h + H_NAME, USTAR_NAME, "././@PaxHeader");
    put_octal((char *)h + H_MODE, 8, 0644);
    put_octal((char *)h + H_SIZE, 12, records->len);
    h[H_TYPE] = 'x';
    finish_header(h);
    int rc = sink_write(s, h, sizeof(h), err);
    if (!rc)
        rc = sink_write(s, records->data, records->len, err);
    return rc ? rc : write_padding(s, (long long)records->len, err);
}

/* Writes the header(s) of one entry: a pax header first when a field does not fit ustar. */
static int write_header(layer_sink *s, const char *name, char type, unsigned mode, long long size,
                        const char *link, gc_error *err)
{
    gc_buf pax;
    gc_buf_init(&pax);
    if (strlen(name) > USTAR_NAME)
        pax_record(&pax, "path", name);
    if (link && strlen(link) > USTAR_NAME)
        pax_record(&pax, "linkpath", link);
    if (size > USTAR_MAX_SIZE) {
        char digits[32];
        snprintf(digits, sizeof(digits), "%lld", size);
        pax_record(&pax, "size", digits);
    }
    int rc = pax.len ? write_pax_header(s, &pax, err) : 0;
    gc_buf_free(&pax);
    if (rc)
        return rc;

    unsigned char h[TAR_BLOCK] = {0};
    put_string((char *)h + H_NAME, USTAR_NAME, name);
    put_octal((char *)h + H_MODE, 8, mode & 07777);
    put_octal((char *)h + H_SIZE, 12, (unsigned long long)(size > USTAR_MAX_SIZE ? 0 : size));
    h[H_TYPE] = (unsigned char)type;
    if (link)
        put_string((char *)h + H_LINKNAME, USTAR_NAME, link);
    finish_header(h);
    return sink_write(s, h, sizeof(h), err);
}

/* An entry's header: under `dir` in the layer, at the root in the context's identity. */
static int entry_header(layer_sink *s, const char *dir, const char *name, char type, unsigned mode,
                        long long size, const char *link, gc_error *err)
{
    if (!dir)
        return write_header(s, name, type, mode, size, link, err);
    char *full = gc_xasprintf("%s/%s", dir, name);
    s->route = TO_LAYER;
    int rc = write_header(s, full, type, mode, size, link, err);
    s->route = TO_PLAIN;
    if (!rc)
        rc = write_header(s, name, type, mode, size, link, err);
    s->route = TO_BOTH;
    free(full);
    return rc;
}

static int copy_file_body(layer_sink *s, int fd, const char *abs, long long size, gc_error *err)
{
    unsigned char *buf = gc_xmalloc(IO_CHUNK);
    long long left = size;
    int rc = 0;
    while (left > 0 && !rc) {
        size_t want = left < IO_CHUNK ? (size_t)left : IO_CHUNK;
        ssize_t n = read(fd, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            rc = gc_fail(err, GC_EXIT_RUNTIME, "%s %s while it was being added to the layer", abs,
                         n < 0 ? strerror(errno) : "shrank");
        else {
            rc = sink_write(s, buf, (size_t)n, err);
            left -= n;
        }
    }
    free(buf);
    return rc ? rc : write_padding(s, size, err);
}

static int write_file(layer_sink *s, const char *root, const char *dir, const entry *e,
                      gc_error *err)
{
    char *abs = gc_xasprintf("%s/%s", root, e->path);
    int fd = open(abs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    int rc = 0;
    if (fd < 0 || fstat(fd, &st) != 0)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "cannot read %s: %s (list it in .dockerignore to leave it "
                     "out of the image)",
                     abs, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = gc_fail(err, GC_EXIT_RUNTIME, "%s changed while the layer was being built", abs);
    /* The header takes the size from the open file, so a file that grows meanwhile is cut at
     * that size and one that shrinks is an error, never a corrupt tar. */
    if (!rc)
        rc = entry_header(s, dir, e->path, '0', st.st_mode, st.st_size, NULL, err);
    if (!rc)
        rc = copy_file_body(s, fd, abs, st.st_size, err);
    if (fd >= 0)
        close(fd);
    free(abs);
    return rc;
}

static int write_symlink(layer_sink *s, const char *root, const char *dir, const entry *e,
                         gc_error *err)
{
    char *abs = gc_xasprintf("%s/%s", root, e->path);
    char target[PATH_MAX + 1];
    ssize_t n = readlink(abs, target, PATH_MAX);
    int rc;
    if (n < 0) {
        rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot read symlink %s: %s", abs, strerror(errno));
    } else {
        target[n] = '\0';
        rc = entry_header(s, dir, e->path, '2', 0777, 0, target, err);
    }
    free(abs);
    return rc;
}

static int write_entry(layer_sink *s, const char *root, const char *dir, const entry *e,
                       gc_error *err)
{
    if (S_ISREG(e->st.st_mode))
        return write_file(s, root, dir, e, err);
    if (S_ISLNK(e->st.st_mode))
        return write_symlink(s, root, dir, e, err);
    char *name = gc_xasprintf("%s/", e->path);
    int rc = entry_header(s, dir, name, '5', e->st.st_mode, 0, NULL, err);
    free(name);
    return rc;
}

int image_temp_file(FILE **out, gc_error *err)
{
    const char *dir = getenv("TMPDIR");
    char *path = gc_xasprintf("%s/gcluster-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        int rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot create a temporary file %s: %s", path,
                         strerror(errno));
        free(path);
        return rc;
    }
    unlink(path);
    free(path);
    *out = fdopen(fd, "w+b");
    if (!*out) {
        close(fd);
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot open a temporary file: %s", strerror(errno));
    }
    return 0;
}

static int collect_entries(const char *context_dir, const gc_events *events, entry_list *entries,
                           gc_error *err)
{
    struct stat st;
    if (stat(context_dir, &st) != 0)
        return gc_fail(err, GC_EXIT_USAGE, "build context %s: %s", context_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return gc_fail(err, GC_EXIT_USAGE, "build context %s is not a directory", context_dir);
    image_ignore *ignore;
    int rc = image_ignore_load(context_dir, &ignore, err);
    if (rc)
        return rc;
    walk w = {context_dir, ignore, image_ignore_has_exceptions(ignore), events, entries};
    rc = walk_dir(&w, NULL, err);
    image_ignore_free(ignore);
    return rc;
}

static int write_tar(layer_sink *s, const char *root, const char *dir, const entry_list *entries,
                     gc_error *err)
{
    static const unsigned char end_of_archive[2 * TAR_BLOCK];
    /* The directory itself and each one above it, so the runtime creates them as the image's
     * build would (mode 0755, owner root). */
    size_t dir_len = dir ? strlen(dir) : 0;
    for (size_t end = 1; end <= dir_len; end++) {
        if (end < dir_len && dir[end] != '/')
            continue;
        char *name = gc_xasprintf("%.*s/", (int)end, dir);
        s->route = TO_LAYER;
        int rc = write_header(s, name, '5', 0755, 0, NULL, err);
        s->route = TO_BOTH;
        free(name);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < entries->count; i++) {
        int rc = write_entry(s, root, dir, &entries->items[i], err);
        if (rc)
            return rc;
    }
    return sink_write(s, end_of_archive, sizeof(end_of_archive), err);
}

static void count_content(const entry_list *entries, image_layer *layer)
{
    for (size_t i = 0; i < entries->count; i++) {
        if (S_ISREG(entries->items[i].st.st_mode)) {
            layer->files++;
            layer->content_bytes += entries->items[i].st.st_size;
        }
    }
    layer->entries = entries->count;
}

static int finish_sink(layer_sink *s, image_layer *layer, gc_error *err)
{
    if (s->compress) {
        int rc = sink_deflate(s, NULL, 0, Z_FINISH, err);
        if (!rc && (fflush(s->out) != 0 || fseeko(s->out, 0, SEEK_SET) != 0))
            rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot write the layer to a temporary file: %s",
                         strerror(errno));
        if (rc)
            return rc;
        deflateEnd(&s->z);
        image_sha256_finish(s->blob_hash, layer->digest);
        s->blob_hash = NULL;
    }
    image_sha256_finish(s->tar_hash, layer->diff_id);
    s->tar_hash = NULL;
    if (s->plain_hash) {
        image_sha256_finish(s->plain_hash, layer->context_id);
        s->plain_hash = NULL;
    } else {
        memcpy(layer->context_id, layer->diff_id, sizeof(layer->context_id));
    }
    layer->tar_size = s->tar_size;
    layer->size = s->blob_size;
    return 0;
}

int image_layer_build(const char *context_dir, bool compress, const gc_events *events,
                      image_layer *layer, gc_error *err)
{
    return image_layer_build_at(context_dir, NULL, compress, events, layer, err);
}

int image_layer_build_at(const char *context_dir, const char *dir, bool compress,
                         const gc_events *events, image_layer *layer, gc_error *err)
{
    memset(layer, 0, sizeof(*layer));
    entry_list entries = {0};
    int rc = collect_entries(context_dir, events, &entries, err);
    if (!rc) {
        count_content(&entries, layer);
        gc_notice(events, "building layer from %s: %zu files, %.1f MiB", context_dir, layer->files,
                  (double)layer->content_bytes / (1024.0 * 1024.0));
    }
    layer_sink *sink = gc_xcalloc(1, sizeof(*sink));
    if (!rc)
        rc = sink_init(sink, compress, err);
    if (!rc && dir)
        sink->plain_hash = image_sha256_new();
    if (!rc && compress)
        rc = image_temp_file(&sink->out, err);
    if (!rc)
        rc = write_tar(sink, context_dir, dir, &entries, err);
    if (!rc)
        rc = finish_sink(sink, layer, err);
    if (rc) {
        sink_discard(sink);
        if (sink->out)
            fclose(sink->out);
    } else {
        layer->blob = sink->out;
    }
    free(sink);
    entry_list_free(&entries);
    return rc;
}

void image_layer_close(image_layer *layer)
{
    if (layer->blob)
        fclose(layer->blob);
    layer->blob = NULL;
}
