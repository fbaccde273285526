/*
 * image: build a container image from a local directory without Docker, and push it.
 *
 * `--base-image B --build-context DIR` appends DIR as one layer on top of B (like Google's
 * gcluster does with crane): pull B's manifest and config from its registry, tar DIR
 * deterministically (sorted entries, fixed times and owners, honouring .dockerignore), push the
 * layer, a new config and a new manifest. The tag is derived from the content, so the same
 * context gives the same image name, a dry run can name the image without building it, and a
 * push of an image that already exists is skipped.
 */
#ifndef GCLUSTER_IMAGE_H
#define GCLUSTER_IMAGE_H

#include "gcluster/error.h"
#include "gcluster/events.h"

#include <stdbool.h>

typedef struct gc_image_build {
    /* "python:3.11-slim", "us-docker.pkg.dev/p/r/img:tag", "...@sha256:.." */
    const char *base_image;
    const char *context_dir; /* the directory to add at the image root */
    const char *platform;    /* "linux/amd64" (selects from a multi-platform base index) */
    /* where to push, without tag: "us-central1-docker.pkg.dev/p/r/alice-runner" */
    const char *repository;
    int verbose; /* trace registry requests (credentials redacted) */
    /* Progress notices ("pushing layer ..."), warnings and traces; NULL: dropped. */
    const gc_events *events;
} gc_image_build;

/* The repository images are pushed to: $GCLUSTER_IMAGE_REPO as a repository name under
 * <region>-docker.pkg.dev/<project>/ (Google's convention; region from the zone or region in
 * `location`), or used as the full repository prefix when it contains a '/'. The image name is
 * "<user>-runner" with <user> from $USER/$USERNAME. Caller frees *repository. */
int gc_image_repository(const char *project, const char *location, char **repository,
                        gc_error *err);

/* The image reference a build will produce ("<repository>:<content tag>"), computed from the
 * context directory, base image reference and platform alone (no network). Caller frees. */
int gc_image_plan(const gc_image_build *build, char **image_ref, gc_error *err);

/* Checks an image reference against the reference grammar registries and container runtimes
 * share ([HOST[:PORT]/]PATH[:TAG][@sha256:HEX], PATH in lower case), so a typo is refused
 * before a job waits in the queue only to fail pulling. GC_EXIT_USAGE naming `flag` and the rule
 * that was broken. */
int gc_image_reference_check(const char *flag, const char *reference, gc_error *err);

/* Builds and pushes; *image_ref is the pushed reference (caller frees). */
int gc_image_build_push(const gc_image_build *build, char **image_ref, gc_error *err);

#endif
