#include "image/reference.h"

#include "image/digest.h"

#include "gcluster/buf.h"
#include "gcluster/image.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define DOCKER_HUB "docker.io"

void image_reference_free(image_reference *ref)
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

/* A path component: runs of lower-case letters and digits joined by one separator each: '.',
 * '_', "__" or any run of '-'. */
static const char *component_problem(const char *c, size_t len)
{
    if (len == 0)
        return "has an empty path component";
    for (size_t i = 0; i < len; i++) {
        if (isupper((unsigned char)c[i]))
            return "must be lower-case in its repository path (only the registry host may have "
                   "capitals)";
        if (!is_lower_alnum(c[i]) && c[i] != '.' && c[i] != '_' && c[i] != '-')
            return "may only contain lower-case letters, digits and the separators '.', '_', "
                   "'__' and '-' in its repository path";
    }
    if (!is_lower_alnum(c[0]) || !is_lower_alnum(c[len - 1]))
        return "has a path component that does not start and end with a lower-case letter or "
               "digit";
    for (size_t i = 0; i < len;) {
        size_t run = strspn(c + i, "._-");
        bool dashes = run && strspn(c + i, "-") == run;
        bool underscores = run == 2 && c[i] == '_' && c[i + 1] == '_';
        if (run > 1 && !dashes && !underscores)
            return "has a separator other than '.', '_', '__' or a run of '-' between two "
                   "letters or digits of its path";
        i += run ? run : 1;
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

/* [A-Za-z0-9_][A-Za-z0-9_.-]{0,127} */
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

/* ALGORITHM:HEX, with ALGORITHM as components [A-Za-z][A-Za-z0-9]* joined by one of "+._-"
 * and HEX at least 32 hex digits; then what gcluster and the registries it talks to verify
 * content with: sha256. */
static const char *digest_problem(const char *digest)
{
    const char *colon = strchr(digest, ':');
    bool ok = colon && colon > digest;
    for (const char *p = digest; ok && p < colon; p++) {
        bool starts = p == digest || strchr("+._-", p[-1]);
        ok = starts ? isalpha((unsigned char)*p) : isalnum((unsigned char)*p) || strchr("+._-", *p);
    }
    ok = ok && !strchr("+._-", colon[-1]) && strlen(colon + 1) >= 32 &&
         strspn(colon + 1, "0123456789abcdefABCDEF") == strlen(colon + 1);
    if (!ok)
        return "has a digest that is not ALGORITHM:HEX (e.g. sha256: and 64 hex digits)";
    if (strncmp(digest, "sha256:", 7) != 0)
        return "has a digest algorithm other than sha256, the one registries name images by";
    if (!image_digest_is_valid(digest))
        return "has a sha256 digest that is not 64 lower-case hex digits";
    return NULL;
}

/* [a-zA-Z0-9] or [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9], joined by '.'. */
static bool domain_name_is_valid(const char *s, size_t len)
{
    const char *end = s + len;
    for (const char *p = s; p <= end;) {
        size_t n = 0;
        while (p + n < end && p[n] != '.')
            n++;
        if (n == 0 || !isalnum((unsigned char)p[0]) || !isalnum((unsigned char)p[n - 1]))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!isalnum((unsigned char)p[i]) && p[i] != '-')
                return false;
        p += n + 1;
    }
    return true;
}

/* HOST[:PORT], with HOST a domain name, an IPv4 address or [IPv6]. */
static const char *registry_problem(const char *registry, size_t len)
{
    size_t host_len;
    if (registry[0] == '[') {
        const char *close = memchr(registry, ']', len);
        char inner[64];
        size_t inner_len = close ? (size_t)(close - registry - 1) : 0;
        struct in6_addr ipv6;
        if (!close || inner_len >= sizeof(inner))
            return "has an invalid registry host (an IPv6 address goes in brackets: [::1]:5000)";
        memcpy(inner, registry + 1, inner_len);
        inner[inner_len] = '\0';
        if (inet_pton(AF_INET6, inner, &ipv6) != 1)
            return "has an invalid registry host (an IPv6 address goes in brackets: [::1]:5000)";
        host_len = inner_len + 2;
    } else {
        const char *colon = memchr(registry, ':', len);
        host_len = colon ? (size_t)(colon - registry) : len;
        if (!domain_name_is_valid(registry, host_len))
            return "has an invalid registry host: use letters, digits and '-' in dot-separated "
                   "names, each starting and ending with a letter or digit";
    }
    if (host_len == len)
        return NULL;
    size_t digits = len - host_len - 1;
    if (registry[host_len] != ':' || digits == 0 || digits > 5 ||
        strspn(registry + host_len + 1, "0123456789") < digits)
        return "has a registry port that is not a number (HOST:PORT, e.g. localhost:5000)";
    return NULL;
}

/* Docker's rule: the first component names a registry if it looks like a host name (a '.', a
 * ':', "localhost") or has capitals, which a repository path never has. */
static bool looks_like_registry(const char *first, size_t len)
{
    bool capitals = false;
    for (size_t i = 0; i < len; i++)
        capitals |= isupper((unsigned char)first[i]) != 0;
    return memchr(first, '.', len) || memchr(first, ':', len) || capitals ||
           (len == 9 && strncmp(first, "localhost", 9) == 0);
}

static const char *split_name(const char *name, image_reference *ref)
{
    const char *slash = strchr(name, '/');
    if (slash && looks_like_registry(name, (size_t)(slash - name))) {
        const char *problem = registry_problem(name, (size_t)(slash - name));
        if (problem)
            return problem;
        ref->registry = gc_xstrndup(name, (size_t)(slash - name));
        ref->repository = gc_xstrdup(slash + 1);
    } else {
        ref->registry = gc_xstrdup(DOCKER_HUB);
        ref->repository = gc_xstrdup(name);
    }
    const char *problem = repository_problem(ref->repository);
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
    return problem;
}

/* The distribution reference grammar: [HOST[:PORT]/]PATH[:TAG][@DIGEST]. NULL when `text`
 * follows it, else what is wrong, as "it <problem>". */
static const char *parse(const char *text, bool allow_version, image_reference *ref)
{
    memset(ref, 0, sizeof(*ref));
    if (!text || !*text)
        return "is empty";
    char *name = gc_xstrdup(text);
    const char *problem = NULL;

    char *at = strchr(name, '@');
    if (at) {
        *at = '\0';
        ref->digest = gc_xstrdup(at + 1);
        problem = digest_problem(ref->digest);
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
    if (!problem && strlen(name) > 255)
        problem = "has a name (registry and path) longer than 255 characters";
    if (!problem)
        problem = split_name(name, ref);
    free(name);
    if (problem) {
        image_reference_free(ref);
        return problem;
    }
    if (allow_version && !ref->tag && !ref->digest)
        ref->tag = gc_xstrdup("latest");
    return NULL;
}

static int invalid(const char *text, const char *problem, gc_error *err)
{
    return gc_fail(err, GC_EXIT_USAGE, "invalid image reference \"%s\": it %s", text ? text : "",
                   problem);
}

int image_reference_parse(const char *text, image_reference *ref, gc_error *err)
{
    const char *problem = parse(text, true, ref);
    return problem ? invalid(text, problem, err) : 0;
}

int image_repo_parse(const char *text, image_reference *ref, gc_error *err)
{
    const char *problem = parse(text, false, ref);
    return problem ? invalid(text, problem, err) : 0;
}

int gc_image_reference_check(const char *flag, const char *text, gc_error *err)
{
    image_reference ref;
    const char *problem = parse(text, true, &ref);
    image_reference_free(&ref);
    if (!problem)
        return 0;
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s \"%s\" is not a valid image reference: it %s; the form is "
                   "[HOST[:PORT]/]PATH[:TAG][@sha256:HEX] with PATH in lower case, e.g. "
                   "us-docker.pkg.dev/my-project/my-repo/my-image:tag",
                   flag, text, problem);
}

char *image_reference_string(const image_reference *ref)
{
    if (ref->digest)
        return gc_xasprintf("%s/%s@%s", ref->registry, ref->repository, ref->digest);
    if (ref->tag)
        return gc_xasprintf("%s/%s:%s", ref->registry, ref->repository, ref->tag);
    return gc_xasprintf("%s/%s", ref->registry, ref->repository);
}

const char *image_registry_api_host(const char *registry)
{
    return strcmp(registry, DOCKER_HUB) == 0 ? "registry-1.docker.io" : registry;
}

bool image_registry_is_loopback(const char *registry)
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
