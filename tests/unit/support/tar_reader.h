/*
 * tar_reader: reads back the layers gcluster writes (gzip + ustar/pax), for tests.
 *
 * Written independently of src/image/layer.c from the POSIX format, so a test that round-trips
 * a layer through it checks the format, not the writer against itself.
 */
#ifndef GCLUSTER_TEST_TAR_READER_H
#define GCLUSTER_TEST_TAR_READER_H

#include <stddef.h>

typedef struct tar_entry {
    char *name;
    char type; /* '0' file, '5' directory, '2' symlink */
    unsigned mode;
    unsigned long uid, gid, mtime;
    char *linkname;
    char *data; /* file content (NUL-terminated copy) */
    size_t size;
} tar_entry;

typedef struct tar_archive {
    tar_entry *entries;
    size_t count;
} tar_archive;

/* Gunzips `gz` into a newly allocated buffer; returns NULL if it is not valid gzip. */
char *tar_gunzip(const void *gz, size_t len, size_t *out_len);

/* Parses an uncompressed tar; returns 0, or -1 with a reason in `why` when malformed. */
int tar_parse(const char *data, size_t len, tar_archive *out, const char **why);

const tar_entry *tar_find(const tar_archive *a, const char *name);
void tar_archive_free(tar_archive *a);

#endif
