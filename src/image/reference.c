#include "image/reference.h"

#include "image/digest.h"

#include "gcluster/buf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define DOCKER_HUB "docker.io"

void gc_image_ref_free(gc_image_ref *ref)
{
    free(ref->registry);
    free(ref->repository);
    free(ref->tag);
    free(ref->digest);
    memset(ref, 0, sizeof(*ref));
}

static bool is_lower_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A path component: lower-case letters and digits, separated by '.', '_' or runs of '-'. */
static const char *component_problem(const char *c, size_t len)
{
    if (len == 0)
        return "has an empty path component";
    if (!is_lower_alnum(c[0]) || !is_lower_alnum(c[len - 1]))
        return "has a path component that does not start and end with a lower-case letter or "
               "digit";
    for (size_t i = 0; i < len; i++) {
        if (isupper((unsigned char)c[i]))
            return "must be lower-case";
        if (!is_lower_alnum(c[i]) && c[i] != '.' && c[i] != '_' && c[i] != '-')
            return "may only contain lower-case letters, digits, '.', '_', '-' and '/'";
    }
    return NULL;
}

static const char *repository_problem(const char *repo)
{
    for (const char *p = repo;;) {
        size_t len = strcspn(p, "/");
        const char *problem = component_problem(p, len);
        if (problem)
            return problem;
        if (!p[len])
            return NULL;
        p += len + 1;
    }
}

static bool tag_is_valid(const char *tag)
{
    size_t len = strlen(tag);
    if (len == 0 || len > 128 || tag[0] == '.' || tag[0] == '-')
        return false;
    for (const char *p = tag; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-')
            return false;
    return true;
}

/* Docker's rule: the first component is a registry only if it looks like a host name. */
static bool looks_like_registry(const char *first, size_t len)
{
    return memchr(first, '.', len) || memchr(first, ':', len) ||
           (len == 9 && strncmp(first, "localhost", 9) == 0);
}

static void split_name(const char *name, gc_image_ref *ref)
{
    const char *slash = strchr(name, '/');
    if (slash && looks_like_registry(name, (size_t)(slash - name))) {
        ref->registry = gc_xstrndup(name, (size_t)(slash - name));
        ref->repository = gc_xstrdup(slash + 1);
    } else {
        ref->registry = gc_xstrdup(DOCKER_HUB);
        ref->repository = gc_xstrdup(name);
    }
    if (strcmp(ref->registry, "index.docker.io") == 0 ||
        strcmp(ref->registry, "registry-1.docker.io") == 0) {
        free(ref->registry);
        ref->registry = gc_xstrdup(DOCKER_HUB);
    }
    /* Official Docker Hub images live under "library/". */
    if (strcmp(ref->registry, DOCKER_HUB) == 0 && !strchr(ref->repository, '/')) {
        char *full = gc_xasprintf("library/%s", ref->repository);
        free(ref->repository);
        ref->repository = full;
    }
}

static int parse(const char *text, bool allow_version, gc_image_ref *ref, gc_error *err)
{
    memset(ref, 0, sizeof(*ref));
    if (!text || !*text)
        return gc_fail(err, GC_EXIT_USAGE, "empty image reference");
    char *name = gc_xstrdup(text);
    const char *problem = NULL;

    char *at = strchr(name, '@');
    if (at) {
        *at = '\0';
        ref->digest = gc_xstrdup(at + 1);
        if (!gc_digest_is_valid(ref->digest))
            problem = "has a digest that is not sha256: followed by 64 lower-case hex digits";
    }
    char *last_slash = strrchr(name, '/');
    char *colon = strrchr(last_slash ? last_slash : name, ':');
    if (colon && !problem) {
        *colon = '\0';
        ref->tag = gc_xstrdup(colon + 1);
        if (!tag_is_valid(ref->tag))
            problem = "has an invalid tag (up to 128 letters, digits, '_', '.' and '-', not "
                      "starting with '.' or '-')";
    }
    if (!problem && !allow_version && (ref->tag || ref->digest))
        problem = "names a tag or digest, but a repository to push to takes neither";
    if (!problem) {
        split_name(name, ref);
        problem = repository_problem(ref->repository);
    }
    free(name);
    if (problem) {
        gc_image_ref_free(ref);
        return gc_fail(err, GC_EXIT_USAGE, "invalid image reference \"%s\": it %s", text, problem);
    }
    if (allow_version && !ref->tag && !ref->digest)
        ref->tag = gc_xstrdup("latest");
    return 0;
}

int gc_image_ref_parse(const char *text, gc_image_ref *ref, gc_error *err)
{
    return parse(text, true, ref, err);
}

int gc_image_repo_parse(const char *text, gc_image_ref *ref, gc_error *err)
{
    return parse(text, false, ref, err);
}

char *gc_image_ref_string(const gc_image_ref *ref)
{
    if (ref->digest)
        return gc_xasprintf("%s/%s@%s", ref->registry, ref->repository, ref->digest);
    if (ref->tag)
        return gc_xasprintf("%s/%s:%s", ref->registry, ref->repository, ref->tag);
    return gc_xasprintf("%s/%s", ref->registry, ref->repository);
}

const char *gc_registry_api_host(const char *registry)
{
    return strcmp(registry, DOCKER_HUB) == 0 ? "registry-1.docker.io" : registry;
}

bool gc_registry_is_loopback(const char *registry)
{
    char host[256];
    size_t len;
    if (registry[0] == '[') {
        len = strcspn(registry, "]") + 1;
    } else {
        len = strcspn(registry, ":");
    }
    if (len >= sizeof(host))
        return false;
    memcpy(host, registry, len);
    host[len] = '\0';
    struct in_addr ipv4;
    if (inet_pton(AF_INET, host, &ipv4) == 1)
        return (ntohl(ipv4.s_addr) >> 24) == 127;
    return strcmp(host, "localhost") == 0 || strcmp(host, "[::1]") == 0;
}
