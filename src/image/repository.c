/*
 * Where built images go: Google's naming, <region>-docker.pkg.dev/<project>/<repo>/<user>-runner,
 * or <path>/<user>-runner when GCLUSTER_IMAGE_REPO is a path on any OCI registry
 * (registry.example.com:5000/team), as Google's gcluster allows since v1.110.
 */
#include "gcluster/gcp.h"
#include "gcluster/image.h"

#include "gcluster/buf.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* The user as an image path component: lower-cased, anything outside [a-z0-9] runs become one
 * '-' ("Jane.Doe@corp" -> "jane-doe-corp"), so every login name gives a valid name. */
static char *image_user(const char *user)
{
    gc_buf out;
    gc_buf_init(&out);
    for (const char *p = user; *p; p++) {
        char c = (char)tolower((unsigned char)*p);
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
            gc_buf_putc(&out, c);
        else if (out.len && out.data[out.len - 1] != '-')
            gc_buf_putc(&out, '-');
    }
    while (out.len && out.data[out.len - 1] == '-')
        out.data[--out.len] = '\0';
    return gc_buf_detach(&out);
}

/* "us-central1-a" (a zone) -> "us-central1"; a region or multi-region stays as it is. */
static char *region_of(const char *location)
{
    const char *first = strchr(location, '-');
    const char *second = first ? strchr(first + 1, '-') : NULL;
    return second ? gc_xstrndup(location, (size_t)(second - location)) : gc_xstrdup(location);
}

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static int repository_prefix(const char *repo, const char *project, const char *location,
                             char **prefix, gc_error *err)
{
    if (strchr(repo, '/')) {
        size_t len = strlen(repo);
        while (len && repo[len - 1] == '/')
            len--;
        *prefix = gc_xstrndup(repo, len);
        return 0;
    }
    if (!gc_gcp_is_name(repo, 1, 63))
        return gc_fail(err, GC_EXIT_USAGE,
                       "GCLUSTER_IMAGE_REPO=\"%s\" is not an Artifact Registry repository name "
                       "(lower-case letters, digits and '-', starting with a letter); set it to "
                       "the repository name only, e.g. export GCLUSTER_IMAGE_REPO=gcluster-repo",
                       repo);
    if (!project || !*project)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--project is required to name the image repository "
                       "<region>-docker.pkg.dev/<project>/%s; pass --project, or set "
                       "GCLUSTER_IMAGE_REPO to a full path such as "
                       "us-docker.pkg.dev/my-project/%s",
                       repo, repo);
    if (!location || !*location)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--location is required to name the image repository "
                       "<region>-docker.pkg.dev/%s/%s; pass --location (a zone or region), or "
                       "set GCLUSTER_IMAGE_REPO to a full path such as "
                       "us-docker.pkg.dev/%s/%s",
                       project, repo, project, repo);
    char *region = region_of(location);
    *prefix = gc_xasprintf("%s-docker.pkg.dev/%s/%s", region, project, repo);
    free(region);
    return 0;
}

int gc_image_repository(const char *project, const char *location, char **repository, gc_error *err)
{
    const char *repo = env_nonempty("GCLUSTER_IMAGE_REPO");
    if (!repo)
        return gc_fail(err, GC_EXIT_USAGE,
                       "GCLUSTER_IMAGE_REPO is not set, and --build-context needs a repository "
                       "to push to: set GCLUSTER_IMAGE_REPO to your Artifact Registry "
                       "repository name (export GCLUSTER_IMAGE_REPO=gcluster-repo) or to a "
                       "repository path on any OCI registry "
                       "(export GCLUSTER_IMAGE_REPO=registry.example.com/team)");
    const char *user = env_nonempty("USER");
    if (!user)
        user = env_nonempty("USERNAME");
    if (!user)
        return gc_fail(err, GC_EXIT_USAGE,
                       "cannot tell who you are (neither USER nor USERNAME is set), and built "
                       "images are named <user>-runner so that users do not overwrite each "
                       "other's: set USER, e.g. export USER=$(id -un)");
    char *name = image_user(user);
    if (!*name) {
        free(name);
        return gc_fail(err, GC_EXIT_USAGE,
                       "USER=\"%s\" has no letters or digits to name the image <user>-runner; "
                       "set USER to your login name",
                       user);
    }
    char *prefix = NULL;
    int rc = repository_prefix(repo, project, location, &prefix, err);
    if (!rc)
        *repository = gc_xasprintf("%s/%s-runner", prefix, name);
    free(prefix);
    free(name);
    return rc;
}
