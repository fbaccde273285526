/*
 * gc_image_plan and gc_image_build_push: the build context as one layer on top of a base image.
 *
 * The push order is the one registries require: every layer blob, then the config blob, then
 * the manifest that refers to them. Blobs the target already has are skipped, base layers on
 * the same registry are mounted rather than copied, and base layers from another registry are
 * streamed through a temporary file, so no layer is ever held in memory.
 */
#include "gcluster/image.h"

#include "image/digest.h"
#include "image/layer.h"
#include "image/reference.h"
#include "image/registry.h"

#include "gcluster/buf.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_PLATFORM "linux/amd64"
#define TAG_HEX_DIGITS   12

typedef struct platform {
    char os[64];
    char arch[64];
    char variant[64]; /* "" when not given */
} platform;

/* Everything one build needs, freed by build_free. */
typedef struct build {
    const gc_image_build *in;
    const gc_events *events;
    gc_http_trace trace; /* of registry requests */
    const char *platform_text;
    platform want;
    image_reference base;
    image_reference target;
    char *base_name; /* canonical base reference, part of the tag */
    char tag[TAG_HEX_DIGITS + 1];
    image_layer layer;
    image_registry *target_registry;
    image_registry *base_registry; /* == target_registry when both are on one registry */
} build;

static void build_free(build *b)
{
    image_reference_free(&b->base);
    image_reference_free(&b->target);
    free(b->base_name);
    image_layer_close(&b->layer);
    if (b->base_registry != b->target_registry)
        image_registry_free(b->base_registry);
    image_registry_free(b->target_registry);
}

static int parse_platform(const char *text, platform *p, gc_error *err)
{
    memset(p, 0, sizeof(*p));
    const char *slash = strchr(text, '/');
    const char *slash2 = slash ? strchr(slash + 1, '/') : NULL;
    size_t os_len = slash ? (size_t)(slash - text) : 0;
    size_t arch_len = slash ? (slash2 ? (size_t)(slash2 - slash - 1) : strlen(slash + 1)) : 0;
    size_t variant_len = slash2 ? strlen(slash2 + 1) : 0;
    if (!slash || !os_len || !arch_len || (slash2 && (!variant_len || strchr(slash2 + 1, '/'))) ||
        os_len >= sizeof(p->os) || arch_len >= sizeof(p->arch) || variant_len >= sizeof(p->variant))
        return gc_fail(err, GC_EXIT_USAGE,
                       "invalid platform format: \"%s\", expected \"os/arch\" (e.g. --platform "
                       "linux/amd64 or linux/arm64)",
                       text);
    memcpy(p->os, text, os_len);
    memcpy(p->arch, slash + 1, arch_len);
    if (slash2)
        memcpy(p->variant, slash2 + 1, variant_len);
    return 0;
}

/* The tag names the content: base reference, platform and the layer's diff_id. Neither file
 * times nor the clock enter it, so rebuilding an unchanged context names the same image. */
static void content_tag(build *b)
{
    /* v2: the context lands in the base image's working directory (v1 put it at the root), so
     * an image named by a v1 tag is not this build. */
    char *input = gc_xasprintf("gcluster-image-v2\n%s\n%s\n%s\n", b->base_name, b->platform_text,
                               b->layer.context_id);
    char digest[GC_DIGEST_LEN];
    image_sha256_digest(input, strlen(input), digest);
    free(input);
    memcpy(b->tag, digest + strlen("sha256:"), TAG_HEX_DIGITS);
    b->tag[TAG_HEX_DIGITS] = '\0';
}

/* Checks the input and names the image: the tag needs only the tar's hash, not the gzip blob,
 * so this pass is cheap (no compression, nothing written). */
static int prepare(const gc_image_build *in, build *b, gc_error *err)
{
    memset(b, 0, sizeof(*b));
    b->in = in;
    b->events = in->events;
    b->trace = (gc_http_trace){.events = in->events, .verbose = in->verbose};
    b->platform_text = in->platform && *in->platform ? in->platform : DEFAULT_PLATFORM;
    if (!in->base_image || !*in->base_image)
        return gc_fail(err, GC_EXIT_USAGE, "--base-image is required to build an image");
    if (!in->context_dir || !*in->context_dir)
        return gc_fail(err, GC_EXIT_USAGE,
                       "a --build-context must be provided when "
                       "--base-image is used");
    if (!in->repository || !*in->repository)
        return gc_fail(err, GC_EXIT_USAGE, "no repository to push the image to");
    int rc = parse_platform(b->platform_text, &b->want, err);
    if (!rc && (rc = image_reference_parse(in->base_image, &b->base, err)) != 0)
        gc_error_prefix(err, "--base-image: ");
    if (!rc && (rc = image_repo_parse(in->repository, &b->target, err)) != 0)
        gc_error_prefix(err, "image repository: ");
    if (rc)
        return rc;
    b->base_name = image_reference_string(&b->base);
    rc = image_layer_build(in->context_dir, false, NULL, &b->layer, err);
    if (rc)
        return rc;
    content_tag(b);
    return 0;
}

static char *image_name(const gc_image_build *in, const char *tag)
{
    size_t len = strlen(in->repository);
    while (len && in->repository[len - 1] == '/')
        len--;
    return gc_xasprintf("%.*s:%s", (int)len, in->repository, tag);
}

int gc_image_plan(const gc_image_build *in, char **image_ref, gc_error *err)
{
    build b;
    int rc = prepare(in, &b, err);
    if (!rc)
        *image_ref = image_name(in, b.tag);
    build_free(&b);
    return rc;
}

static double mib(long long bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

/* --- the base image -------------------------------------------------------------------- */

static bool is_index(const char *media_type)
{
    return strcmp(media_type, GC_MEDIA_OCI_INDEX) == 0 ||
           strcmp(media_type, GC_MEDIA_DOCKER_LIST) == 0;
}

static bool is_image_manifest(const char *media_type)
{
    return strcmp(media_type, GC_MEDIA_OCI_MANIFEST) == 0 ||
           strcmp(media_type, GC_MEDIA_DOCKER_V2) == 0;
}

/* Some registries send a manifest as plain JSON; its own mediaType field then tells. */
static const char *effective_media_type(const char *content_type, json_t *doc)
{
    const char *declared = json_string_value(json_object_get(doc, "mediaType"));
    if (is_index(content_type) || is_image_manifest(content_type) || !declared)
        return content_type;
    return declared;
}

static bool platform_matches(json_t *p, const platform *want)
{
    const char *os = json_string_value(json_object_get(p, "os"));
    const char *arch = json_string_value(json_object_get(p, "architecture"));
    const char *variant = json_string_value(json_object_get(p, "variant"));
    if (!os || !arch || strcmp(os, want->os) != 0 || strcmp(arch, want->arch) != 0)
        return false;
    return !want->variant[0] || (variant && strcmp(variant, want->variant) == 0);
}

static int pick_platform(build *b, json_t *index, char **digest, gc_error *err)
{
    gc_buf available;
    gc_buf_init(&available);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(index, "manifests"), i, m)
    {
        json_t *p = json_object_get(m, "platform");
        const char *d = json_string_value(json_object_get(m, "digest"));
        if (d && platform_matches(p, &b->want)) {
            *digest = gc_xstrdup(d);
            gc_buf_free(&available);
            return 0;
        }
        const char *variant = json_string_value(json_object_get(p, "variant"));
        gc_buf_printf(&available, "%s%s/%s%s%s", available.len ? ", " : "",
                      json_string_value(json_object_get(p, "os")),
                      json_string_value(json_object_get(p, "architecture")), variant ? "/" : "",
                      variant ? variant : "");
    }
    int rc = gc_fail(err, GC_EXIT_USAGE,
                     "base image %s has no %s variant (it has: %s); pick another --platform or "
                     "--base-image",
                     b->base_name, b->platform_text, available.len ? available.data : "none");
    gc_buf_free(&available);
    return rc;
}

/* The base image's manifest for our platform, and its digest. */
static int resolve_base(build *b, json_t **manifest, char *media_type_out, size_t mt_size,
                        char digest[GC_DIGEST_LEN], gc_error *err)
{
    const char *reference = b->base.digest ? b->base.digest : b->base.tag;
    char *next = gc_xstrdup(reference);
    gc_buf body;
    gc_buf_init(&body);
    int rc = 0;
    /* At most two hops: an index, then the manifest it points to for our platform. */
    for (int hop = 0; hop < 2 && next && !rc; hop++) {
        char *content_type = NULL;
        rc = image_registry_get_manifest(b->base_registry, b->base.repository, next, &body,
                                         &content_type, digest, err);
        free(next);
        next = NULL;
        json_t *doc = rc ? NULL : json_loadb(body.data, body.len, 0, NULL);
        if (!rc && !doc)
            rc = gc_fail(err, GC_EXIT_RUNTIME, "the manifest of %s is not JSON", b->base_name);
        const char *mt = doc ? effective_media_type(content_type, doc) : "";
        if (!rc && is_index(mt) && hop == 0) {
            rc = pick_platform(b, doc, &next, err);
            json_decref(doc);
        } else if (!rc && is_image_manifest(mt)) {
            snprintf(media_type_out, mt_size, "%s", mt);
            *manifest = doc;
        } else if (!rc) {
            rc = gc_fail(err, GC_EXIT_RUNTIME,
                         "base image %s has a manifest of type \"%s\", which cannot be built on "
                         "(expected an OCI or Docker v2 image manifest or index)",
                         b->base_name, mt);
            json_decref(doc);
        }
        free(content_type);
    }
    free(next);
    gc_buf_free(&body);
    if (rc && err && err->http_status == 404)
        gc_error_prefix(
            err, "failed to pull base image \"%s\" (check the name and tag): ", b->in->base_image);
    else if (rc)
        gc_error_prefix(err, "failed to pull base image \"%s\": ", b->in->base_image);
    return rc;
}

static int check_config_platform(build *b, json_t *config, gc_error *err)
{
    const char *os = json_string_value(json_object_get(config, "os"));
    const char *arch = json_string_value(json_object_get(config, "architecture"));
    if (os && arch && (strcmp(os, b->want.os) != 0 || strcmp(arch, b->want.arch) != 0))
        return gc_fail(err, GC_EXIT_USAGE,
                       "base image %s is %s/%s only, not %s; pick another --platform or "
                       "--base-image",
                       b->base_name, os, arch, b->platform_text);
    return 0;
}

/* The base image's config, checked against the platform asked for. */
static int base_config(build *b, json_t *manifest, json_t **config, gc_error *err)
{
    *config = NULL;
    const char *digest =
        json_string_value(json_object_get(json_object_get(manifest, "config"), "digest"));
    if (!digest || !image_digest_is_valid(digest))
        return gc_fail(err, GC_EXIT_RUNTIME, "the manifest of %s has no valid config digest",
                       b->base_name);
    gc_buf raw;
    gc_buf_init(&raw);
    int rc = image_registry_get_blob(b->base_registry, b->base.repository, digest, NULL, &raw, err);
    *config = rc ? NULL : json_loadb(raw.data, raw.len, 0, NULL);
    gc_buf_free(&raw);
    if (!rc && !json_is_object(*config))
        rc = gc_fail(err, GC_EXIT_RUNTIME, "the config of %s is not a JSON object", b->base_name);
    if (!rc)
        rc = check_config_platform(b, *config, err);
    if (rc) {
        json_decref(*config);
        *config = NULL;
        gc_error_prefix(err, "failed to pull base image \"%s\": ", b->in->base_image);
    }
    return rc;
}

/* Where the context goes: the base image's working directory (WORKDIR), as Google's gcluster
 * puts it since v1.110, so the command finds its files where a Dockerfile's `COPY . .` would
 * have put them; the root when the image has none. Relative, without "." parts; NULL for the
 * root. A ".." (which would climb out) is refused. */
static int context_directory(build *b, const json_t *config, char **dir, gc_error *err)
{
    *dir = NULL;
    const char *workdir =
        json_string_value(json_object_get(json_object_get(config, "config"), "WorkingDir"));
    gc_buf out;
    gc_buf_init(&out);
    for (const char *p = workdir ? workdir : ""; *p;) {
        p += strspn(p, "/");
        size_t n = strcspn(p, "/");
        if (n == 2 && !strncmp(p, "..", 2)) {
            gc_buf_free(&out);
            return gc_fail(err, GC_EXIT_USAGE,
                           "base image %s has the working directory \"%s\", which climbs out of "
                           "the root; pick another --base-image",
                           b->base_name, workdir);
        }
        if (n && !(n == 1 && *p == '.'))
            gc_buf_printf(&out, "%s%.*s", out.len ? "/" : "", (int)n, p);
        p += n;
    }
    *dir = out.len ? gc_buf_detach(&out) : NULL;
    gc_buf_free(&out);
    return 0;
}

/* The base config with our layer on top: one more diff_id and one more history entry; the
 * entrypoint, environment and working directory stay as the base image has them. */
static void extend_config(build *b, json_t *config, const char *dir, gc_buf *out)
{
    json_t *rootfs = json_object_get(config, "rootfs");
    if (!json_is_object(rootfs))
        json_object_set_new(config, "rootfs", rootfs = json_pack("{s:s}", "type", "layers"));
    json_t *diff_ids = json_object_get(rootfs, "diff_ids");
    if (!json_is_array(diff_ids))
        json_object_set_new(rootfs, "diff_ids", diff_ids = json_array());
    json_array_append_new(diff_ids, json_string(b->layer.diff_id));
    json_t *history = json_object_get(config, "history");
    if (json_is_array(history)) {
        char *created_by = gc_xasprintf("gcluster: COPY build context /%s", dir ? dir : "");
        json_array_append_new(history, json_pack("{s:s,s:s}", "created_by", created_by, "comment",
                                                 "added by gcluster from --build-context"));
        free(created_by);
    }
    char *text = json_dumps(config, JSON_COMPACT);
    gc_buf_puts(out, text);
    free(text);
}

static json_t *descriptor(const char *media_type, long long size, const char *digest)
{
    return json_pack("{s:s,s:I,s:s}", "mediaType", media_type, "size", (json_int_t)size, "digest",
                     digest);
}

static char *new_manifest(build *b, json_t *base, const char *media_type, const gc_buf *config,
                          const char *config_digest, const char *base_digest)
{
    bool oci = strcmp(media_type, GC_MEDIA_OCI_MANIFEST) == 0;
    const char *config_type =
        json_string_value(json_object_get(json_object_get(base, "config"), "mediaType"));
    json_t *layers = json_array();
    size_t i;
    json_t *layer;
    json_array_foreach(json_object_get(base, "layers"), i, layer) json_array_append(layers, layer);
    json_array_append_new(layers, descriptor(oci ? GC_MEDIA_OCI_LAYER : GC_MEDIA_DOCKER_LAYER,
                                             b->layer.size, b->layer.digest));
    json_t *m =
        json_pack("{s:i,s:s,s:o,s:o}", "schemaVersion", 2, "mediaType", media_type, "config",
                  descriptor(config_type ? config_type
                             : oci       ? GC_MEDIA_OCI_CONFIG
                                         : GC_MEDIA_DOCKER_CONFIG,
                             (long long)config->len, config_digest),
                  "layers", layers);
    /* OCI's standard annotations record what the image was built on; Docker v2 has none. */
    if (oci)
        json_object_set_new(m, "annotations",
                            json_pack("{s:s,s:s}", "org.opencontainers.image.base.name",
                                      b->base_name, "org.opencontainers.image.base.digest",
                                      base_digest));
    char *text = json_dumps(m, JSON_COMPACT);
    json_decref(m);
    return text;
}

/* --- pushing --------------------------------------------------------------------------- */

/* A base layer the target lacks, from another registry: through a temporary file, verified
 * against its digest on the way in, and uploaded with the size that actually arrived. */
static int copy_layer(build *b, const char *digest, long long size, gc_error *err)
{
    gc_notice(b->events, "copying base layer %s (%.1f MiB) from %s", digest, mib(size),
              b->base.registry);
    FILE *spool;
    int rc = image_temp_file(&spool, err);
    if (rc)
        return rc;
    rc = image_registry_get_blob(b->base_registry, b->base.repository, digest, spool, NULL, err);
    long long received = -1;
    if (!rc && (fseeko(spool, 0, SEEK_END) != 0 || (received = ftello(spool)) < 0))
        rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot measure the download of %s", digest);
    if (!rc) {
        image_registry_body body = {.file = spool, .size = received};
        rc = image_registry_upload_blob(b->target_registry, b->target.repository, digest, &body,
                                        err);
    }
    fclose(spool);
    return rc;
}

static int push_base_layer(build *b, json_t *layer, gc_error *err)
{
    const char *digest = json_string_value(json_object_get(layer, "digest"));
    json_int_t size = json_integer_value(json_object_get(layer, "size"));
    if (!digest || !image_digest_is_valid(digest))
        return gc_fail(err, GC_EXIT_RUNTIME, "a layer of %s has no valid digest", b->base_name);
    bool present = false;
    int rc =
        image_registry_blob_exists(b->target_registry, b->target.repository, digest, &present, err);
    if (rc || present)
        return rc;
    if (b->base_registry == b->target_registry) {
        bool mounted = false;
        rc = image_registry_mount_blob(b->target_registry, b->target.repository, digest,
                                       b->base.repository, &mounted, err);
        if (rc || mounted)
            return rc;
    }
    return copy_layer(b, digest, size, err);
}

static int push_own_layer(build *b, gc_error *err)
{
    bool present = false;
    int rc = image_registry_blob_exists(b->target_registry, b->target.repository, b->layer.digest,
                                        &present, err);
    if (rc || present)
        return rc;
    gc_notice(b->events, "pushing layer %s (%.1f MiB)", b->layer.digest, mib(b->layer.size));
    image_registry_body body = {.file = b->layer.blob, .size = b->layer.size};
    return image_registry_upload_blob(b->target_registry, b->target.repository, b->layer.digest,
                                      &body, err);
}

static int push_config(build *b, const gc_buf *config, const char *digest, gc_error *err)
{
    bool present = false;
    int rc =
        image_registry_blob_exists(b->target_registry, b->target.repository, digest, &present, err);
    if (rc || present)
        return rc;
    image_registry_body body = {.data = config->data, .len = config->len};
    return image_registry_upload_blob(b->target_registry, b->target.repository, digest, &body, err);
}

static int push_image(build *b, json_t *base, const char *media_type, const char *base_digest,
                      const gc_buf *config, gc_error *err)
{
    char config_digest[GC_DIGEST_LEN];
    image_sha256_digest(config->data, config->len, config_digest);
    int rc = 0;
    size_t i;
    json_t *layer;
    json_array_foreach(json_object_get(base, "layers"), i, layer)
    {
        if (!rc)
            rc = push_base_layer(b, layer, err);
    }
    if (!rc)
        rc = push_own_layer(b, err);
    if (!rc)
        rc = push_config(b, config, config_digest, err);
    if (!rc) {
        char *text = new_manifest(b, base, media_type, config, config_digest, base_digest);
        gc_buf manifest = {text, strlen(text), strlen(text) + 1};
        rc = image_registry_put_manifest(b->target_registry, b->target.repository, b->tag,
                                         media_type, &manifest, err);
        free(text);
    }
    return rc;
}

static int connect_registries(build *b, gc_error *err)
{
    int rc = image_registry_open(b->target.registry, &b->trace, &b->target_registry, err);
    if (rc)
        return rc;
    char *scope = gc_xasprintf("repository:%s:pull,push", b->target.repository);
    image_registry_add_scope(b->target_registry, scope);
    free(scope);
    /* On one registry, one client and one token cover reading the base and mounting from it. */
    if (strcmp(b->base.registry, b->target.registry) == 0) {
        b->base_registry = b->target_registry;
        scope = gc_xasprintf("repository:%s:pull", b->base.repository);
        image_registry_add_scope(b->target_registry, scope);
        free(scope);
        return 0;
    }
    return image_registry_open(b->base.registry, &b->trace, &b->base_registry, err);
}

/* The second pass over the context, writing the gzip blob to push, under `dir`. Files edited
 * since the first pass change the context's identity, and then the tag follows the content
 * actually pushed. */
static int write_layer(build *b, const char *dir, char **name, gc_error *err)
{
    char planned[GC_DIGEST_LEN];
    memcpy(planned, b->layer.context_id, sizeof(planned));
    image_layer_close(&b->layer);
    int rc = image_layer_build_at(b->in->context_dir, dir, true, b->events, &b->layer, err);
    if (!rc && strcmp(planned, b->layer.context_id) != 0) {
        content_tag(b);
        free(*name);
        *name = image_name(b->in, b->tag);
        gc_warn(b->events, "the build context changed while it was read; the image is now %s",
                *name);
    }
    return rc;
}

/* Pulls what the base image is made of and pushes it with our layer on top, the context in the
 * base image's working directory. */
static int build_on_base(build *b, char **name, gc_error *err)
{
    json_t *base = NULL, *config = NULL;
    char media_type[128];
    char base_digest[GC_DIGEST_LEN];
    char *dir = NULL;
    gc_buf out;
    gc_buf_init(&out);
    int rc = resolve_base(b, &base, media_type, sizeof(media_type), base_digest, err);
    if (!rc)
        rc = base_config(b, base, &config, err);
    if (!rc)
        rc = context_directory(b, config, &dir, err);
    if (!rc)
        rc = write_layer(b, dir, name, err);
    if (!rc) {
        extend_config(b, config, dir, &out);
        if ((rc = push_image(b, base, media_type, base_digest, &out, err)) != 0)
            gc_error_prefix(err, "failed to push image \"%s\": ", *name);
    }
    gc_buf_free(&out);
    free(dir);
    json_decref(config);
    json_decref(base);
    return rc;
}

int gc_image_build_push(const gc_image_build *in, char **image_ref, gc_error *err)
{
    build b;
    int rc = prepare(in, &b, err);
    char *name = rc ? NULL : image_name(in, b.tag);
    bool present = false;
    if (!rc) {
        rc = connect_registries(&b, err);
        if (!rc)
            rc = image_registry_manifest_exists(b.target_registry, b.target.repository, b.tag,
                                                &present, err);
        if (rc)
            gc_error_prefix(err, "failed to push image \"%s\": ", name);
    }
    /* The tag names the content, so an image already under it is this very build. */
    if (!rc && present) {
        gc_notice(b.events, "image %s already exists; not pushing it again", name);
    } else if (!rc) {
        rc = build_on_base(&b, &name, err);
        if (!rc)
            gc_notice(b.events, "pushed %s", name);
    }
    build_free(&b);
    if (!rc)
        *image_ref = name;
    else
        free(name);
    return rc;
}
