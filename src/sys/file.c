/*
 * Reading a whole file into memory: kubeconfigs, certificates and keys, token files,
 * blueprints, templates, Docker configs, .dockerignore.
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
