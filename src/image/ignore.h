/*
 * ignore: which files of a build context stay out of the image.
 *
 * Patterns follow .dockerignore (moby's patternmatcher): one pattern per line, '#' comments,
 * paths relative to the context root, '*' and '?' within one path segment, '**' across
 * segments, '[...]' classes, '\' escapes, and a leading '!' that re-includes what an earlier
 * pattern excluded. A pattern that matches a directory also matches everything under it, and
 * the last pattern that matches a path decides.
 */
#ifndef GCLUSTER_IMAGE_IGNORE_H
#define GCLUSTER_IMAGE_IGNORE_H

#include "gcluster/error.h"

#include <stdbool.h>

typedef struct image_ignore image_ignore;

/* An empty list (nothing ignored). */
image_ignore *image_ignore_new(void);
void image_ignore_free(image_ignore *ig);

/* Adds the lines of a .dockerignore text; `source` names it in error messages. */
int image_ignore_add_text(image_ignore *ig, const char *text, const char *source, gc_error *err);

/* The defaults plus <context_dir>/.dockerignore when it exists. */
int image_ignore_load(const char *context_dir, image_ignore **out, gc_error *err);

/* True when `path` (relative to the context root, '/'-separated, no leading "./") is excluded. */
bool image_ignore_excludes(const image_ignore *ig, const char *path);

/* True when some '!' pattern exists, so an excluded directory may still hold included files and
 * has to be walked rather than skipped whole. */
bool image_ignore_has_exceptions(const image_ignore *ig);

/* One cleaned pattern against one path, without the parent-directory rule. */
bool image_ignore_glob_match(const char *pattern, const char *path);

#endif
