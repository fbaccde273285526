/*
 * Reading a whole file into memory: kubeconfigs, certificates and keys, token files,
 * blueprints, templates, Docker configs, .dockerignore. Writing the files gcluster writes
 * (manifests, reports, stored defaults, man pages) whole, through a new file renamed into place.
 *
 * The buffer grows by copying into a new allocation and wiping the old one rather than by
 * realloc, which may leave a copy of a private key in freed memory.
 */
#include "gcluster/sys.h"

#include "sys/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

static void grow(gc_buf *b, size_t need)
{
    if (need <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *data = gc_xmalloc(cap);
    memcpy(data, b->data, b->len + 1);
    explicit_bzero(b->data, b->cap);
    free(b->data);
    b->data = data;
    b->cap = cap;
}

void sys_append_wiping(gc_buf *b, const void *data, size_t len)
{
    grow(b, b->len + len + 1);
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
}

static void describe_size(size_t bytes, char *out, size_t size)
{
    if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0)
        snprintf(out, size, "%zu MiB", bytes / (1024 * 1024));
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(out, size, "%zu KiB", bytes / 1024);
    else
        snprintf(out, size, "%zu bytes", bytes);
}

static int failed(const char *path, int e, size_t max, gc_error *err)
{
    char limit[32];
    describe_size(max, limit, sizeof(limit));
    if (e == EFBIG)
        gc_fail(err, GC_EXIT_USAGE,
                "%s is larger than %s, more than such a file can sensibly be; check that the "
                "path names the right file",
                path, limit);
    else
        gc_fail(err, GC_EXIT_USAGE, "cannot read %s: %s", path, strerror(e));
    errno = e;
    return GC_EXIT_USAGE;
}

int gc_file_read(const char *path, size_t max, gc_buf *out, gc_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return failed(path, errno, max, err);
    struct stat st;
    int e = fstat(fd, &st) != 0                                           ? errno
            : S_ISDIR(st.st_mode)                                         ? EISDIR
            : S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max ? EFBIG
                                                                          : 0;
    size_t start = out->len;
    if (!e && S_ISREG(st.st_mode))
        grow(out, start + (size_t)st.st_size + 1);
    while (!e) {
        if (out->cap - out->len < 2)
            grow(out, out->len + 4096);
        ssize_t n = read(fd, out->data + out->len, out->cap - out->len - 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            e = errno;
        } else if (n == 0) {
            break;
        } else {
            out->len += (size_t)n;
            out->data[out->len] = '\0';
            if (out->len - start > max)
                e = EFBIG; /* it grew while being read, or is a pipe */
        }
    }
    close(fd);
    if (e) {
        explicit_bzero(out->data + start, out->len - start);
        out->len = start;
        out->data[start] = '\0';
        return failed(path, e, max, err);
    }
    return 0;
}

/* A name no other user of the directory can guess: 12 random letters and digits. */
static void random_suffix(char *out, size_t n)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char bytes[32];
    if (n > sizeof(bytes))
        n = sizeof(bytes);
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(bytes + got, n - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            gc_fatal("getrandom failed: %s", strerror(errno));
        got += (size_t)r;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = letters[bytes[i] % (sizeof(letters) - 1)];
    explicit_bzero(bytes, sizeof(bytes));
}

/* Opens a new file beside `path` (in the same directory, so rename() replaces `path` in one
 * step) under a name nobody can predict, with O_CREAT|O_EXCL|O_NOFOLLOW: whatever another user
 * planted there (a symbolic link to a file of ours, a file they can read) is never opened, the
 * open fails and another name is tried. *tmp_out is the name (caller frees). */
static int open_beside(const char *path, char **tmp_out)
{
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    const char *base = slash ? slash + 1 : path;
    for (int attempt = 0; attempt < 100; attempt++) {
        char suffix[13] = {0};
        random_suffix(suffix, 12);
        char *tmp = gc_xasprintf("%.*s.%s.%s.tmp", dir_len, path, base, suffix);
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0) {
            *tmp_out = tmp;
            return fd;
        }
        int e = errno;
        free(tmp);
        if (e != EEXIST) {
            errno = e;
            return -1;
        }
    }
    errno = EEXIST;
    return -1;
}

static int write_fd(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_failed(const char *path, int code, int e, gc_error *err)
{
    gc_fail(err, code, "cannot write %s: %s%s", path, strerror(e),
            e == ENOENT ? " (does the directory exist?)" : "");
    errno = e;
    return code;
}

int gc_file_write(const char *path, const void *data, size_t len, gc_error *err)
{
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return write_failed(path, GC_EXIT_USAGE, EISDIR, err);
    if (exists && !S_ISREG(st.st_mode)) {
        /* A device, a pipe or a socket (/dev/null, /dev/stdout, a FIFO) is written in place:
         * renaming a file over it would replace the node itself. Never created here. */
        int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
            return write_failed(path, GC_EXIT_USAGE, errno, err);
        int e = write_fd(fd, data, len) != 0 ? errno : 0;
        if (close(fd) != 0 && !e)
            e = errno;
        return e ? write_failed(path, GC_EXIT_RUNTIME, e, err) : 0;
    }
    /* A symbolic link the user made keeps pointing where it did: the file it names is replaced
     * (in that file's directory). */
    char *target = exists ? realpath(path, NULL) : NULL;
    const char *dest = target ? target : path;
    char *tmp = NULL;
    int fd = open_beside(dest, &tmp);
    if (fd < 0) {
        int rc = write_failed(path, GC_EXIT_USAGE, errno, err);
        free(target);
        return rc;
    }
    int e = write_fd(fd, data, len) != 0 ? errno : 0;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e && rename(tmp, dest) != 0)
        e = errno;
    if (e)
        unlink(tmp);
    free(tmp);
    free(target);
    return e ? write_failed(path, GC_EXIT_RUNTIME, e, err) : 0;
}
