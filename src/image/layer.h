/*
 * layer: a build context as one image layer, byte-for-byte reproducible.
 *
 * The context is walked in sorted order and written as a POSIX tar (ustar headers, pax records
 * for names, link targets and sizes ustar cannot hold) with every owner 0 and every time 0, then
 * gzip-compressed with a fixed header. The same files therefore always give the same diff_id, and
 * with the same zlib the same compressed digest, however the files were checked out or touched.
 */
#ifndef GCLUSTER_IMAGE_LAYER_H
#define GCLUSTER_IMAGE_LAYER_H

#include "image/digest.h"

#include "gcluster/error.h"
#include "gcluster/events.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct image_layer {
    char diff_id[GC_DIGEST_LEN]; /* sha256 of the uncompressed tar: what the config lists */
    char digest[GC_DIGEST_LEN];  /* sha256 of the gzip blob: what the manifest lists */
    /* sha256 of the tar the context makes at the root: diff_id without a directory; with one,
     * what the context is wherever it goes (the image's tag is made from it) */
    char context_id[GC_DIGEST_LEN];
    long long size;          /* bytes of the gzip blob */
    long long tar_size;      /* bytes of the uncompressed tar */
    long long content_bytes; /* bytes of regular file content in the context */
    size_t files;            /* regular files written */
    size_t entries;          /* tar entries: files, directories and symlinks */
    FILE *blob;              /* the gzip blob in an unlinked temporary file, rewound */
} image_layer;

/* Tars `context_dir`. With `compress` the gzip blob is written to layer->blob and `digest` and
 * `size` are set; without it only the tar is hashed (enough for the diff_id, and cheaper).
 * Progress and skipped entries are reported through `events` (may be NULL). */
int image_layer_build(const char *context_dir, bool compress, const gc_events *events,
                      image_layer *layer, gc_error *err);

/* The same with every entry under `dir` (a relative path such as "app" or "srv/app", or NULL
 * for the root), the directories of `dir` included: the context lands in the image's working
 * directory. */
int image_layer_build_at(const char *context_dir, const char *dir, bool compress,
                         const gc_events *events, image_layer *layer, gc_error *err);

/* An unlinked read-write file in $TMPDIR (or /tmp): it disappears with the process, however the
 * process ends, so no build leaves layers behind. */
int image_temp_file(FILE **out, gc_error *err);

/* Closes the temporary blob file. */
void image_layer_close(image_layer *layer);

#endif
