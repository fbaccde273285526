/*
 * Naming: image references as Docker reads them, and the repository gcluster pushes to.
 */
#include "image/reference.h"

#include "gcluster/image.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void assert_ref(const char *text, const char *registry, const char *repository,
                       const char *tag, const char *digest)
{
    image_reference ref;
    gc_error err = {0};
    if (image_reference_parse(text, &ref, &err) != 0)
        fail_msg("%s: %s", text, err.message);
    assert_string_equal(ref.registry, registry);
    assert_string_equal(ref.repository, repository);
    if (tag)
        assert_string_equal(ref.tag, tag);
    else
        assert_null(ref.tag);
    if (digest)
        assert_string_equal(ref.digest, digest);
    else
        assert_null(ref.digest);
    image_reference_free(&ref);
}

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void references_follow_docker_defaults(void **state)
{
    (void)state;
    assert_ref("python", "docker.io", "library/python", "latest", NULL);
    assert_ref("python:3.11-slim", "docker.io", "library/python", "3.11-slim", NULL);
    assert_ref("bitnami/redis:7", "docker.io", "bitnami/redis", "7", NULL);
    assert_ref("docker.io/python", "docker.io", "library/python", "latest", NULL);
    assert_ref("index.docker.io/library/python:3", "docker.io", "library/python", "3", NULL);
    assert_ref("us-docker.pkg.dev/p/r/img:tag", "us-docker.pkg.dev", "p/r/img", "tag", NULL);
    assert_ref("localhost/img", "localhost", "img", "latest", NULL);
    assert_ref("127.0.0.1:5000/a/b", "127.0.0.1:5000", "a/b", "latest", NULL);
    assert_ref("127.0.0.1:5000/a/b:v1", "127.0.0.1:5000", "a/b", "v1", NULL);
    assert_ref("gcr.io/p/img@" DIGEST, "gcr.io", "p/img", NULL, DIGEST);
    assert_ref("python:3.11@" DIGEST, "docker.io", "library/python", "3.11", DIGEST);
    /* The grammar's corners: separators, \w tags, capitals only in the host, IPv6 hosts. */
    assert_ref("ghcr.io/a__b/c-d--e/f.g_h:_x.Y-1", "ghcr.io", "a__b/c-d--e/f.g_h", "_x.Y-1", NULL);
    assert_ref("Registry.Example.COM/p/img", "Registry.Example.COM", "p/img", "latest", NULL);
    assert_ref("MyHost/img:1", "MyHost", "img", "1", NULL);
    assert_ref("[::1]:5000/img:1", "[::1]:5000", "img", "1", NULL);
}

static void canonical_names_and_api_hosts(void **state)
{
    (void)state;
    image_reference ref;
    gc_error err = {0};
    assert_int_equal(image_reference_parse("python:3.11", &ref, &err), 0);
    char *s = image_reference_string(&ref);
    assert_string_equal(s, "docker.io/library/python:3.11");
    assert_string_equal(image_registry_api_host(ref.registry), "registry-1.docker.io");
    free(s);
    image_reference_free(&ref);
    assert_string_equal(image_registry_api_host("us-docker.pkg.dev"), "us-docker.pkg.dev");
}

static void bad_references_say_what_is_wrong(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        const char *says;
    } cases[] = {
        {"", "empty"},
        {"Python:3", "lower-case"},
        {"python:", "invalid tag"},
        {"python:-x", "invalid tag"},
        {"python@sha256:abc", "digest"},
        {"a//b", "empty path component"},
        {"repo/-x", "start and end"},
        {"ex ample/x", "may only contain"},
        {"x/a..b", "separator"},
        {"a/b___c", "separator"},
        {"a/b._c", "separator"},
        {"-host.io/x", "registry host"},
        {"host-.io/x", "registry host"},
        {"host..io/x", "registry host"},
        {"host.io:http/x", "registry port"},
        {"host.io:123456/x", "registry port"},
        {"[::g]:5000/x", "IPv6"},
        {"x@sha512:0123456789abcdef0123456789abcdef", "other than sha256"},
        {"x@sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
         "64 lower-case hex digits"},
        {"x@1sha:0123456789abcdef0123456789abcdef", "ALGORITHM:HEX"},
        {"x@sha+:0123456789abcdef0123456789abcdef", "ALGORITHM:HEX"},
        {"x:"
         "a123456789a123456789a123456789a123456789a123456789a123456789a123456789a123456789"
         "a123456789a123456789a123456789a123456789a123456789",
         "invalid tag"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        image_reference ref;
        gc_error err = {0};
        assert_int_equal(image_reference_parse(cases[i].text, &ref, &err), GC_EXIT_USAGE);
        if (!strstr(err.message, cases[i].says))
            fail_msg("%s: expected \"%s\" in: %s", cases[i].text, cases[i].says, err.message);
    }
    image_reference ref;
    gc_error err = {0};
    assert_int_equal(image_repo_parse("us-docker.pkg.dev/p/r/img:tag", &ref, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "takes neither"));

    char long_name[300];
    memset(long_name, 'a', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    long_name[100] = long_name[200] = '/';
    assert_int_equal(image_reference_parse(long_name, &ref, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "longer than 255"));

    /* The check a flag gets says which flag and what the form is. */
    assert_int_equal(gc_image_reference_check("--image", "my image:1", &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--image \"my image:1\" is not a valid image reference"));
    assert_non_null(strstr(err.message, "[HOST[:PORT]/]PATH[:TAG][@sha256:HEX]"));
    assert_int_equal(gc_image_reference_check("--image", "python:3.11", &err), 0);
}

static void only_this_machine_counts_as_loopback(void **state)
{
    (void)state;
    assert_true(image_registry_is_loopback("127.0.0.1:5000"));
    assert_true(image_registry_is_loopback("127.1.2.3"));
    assert_true(image_registry_is_loopback("localhost:80"));
    assert_true(image_registry_is_loopback("[::1]:5000"));
    assert_false(image_registry_is_loopback("127.example.com"));
    assert_false(image_registry_is_loopback("localhost.example.com"));
    assert_false(image_registry_is_loopback("10.0.0.1:5000"));
    assert_false(image_registry_is_loopback("docker.io"));
}

/* Runs gc_image_repository with exactly these variables set. */
static int repository(const char *repo, const char *user, const char *username, const char *project,
                      const char *location, char **out, gc_error *err)
{
    repo ? setenv("GCLUSTER_IMAGE_REPO", repo, 1) : unsetenv("GCLUSTER_IMAGE_REPO");
    user ? setenv("USER", user, 1) : unsetenv("USER");
    username ? setenv("USERNAME", username, 1) : unsetenv("USERNAME");
    *out = NULL;
    return gc_image_repository(project, location, out, err);
}

static void assert_repository(const char *repo, const char *user, const char *project,
                              const char *location, const char *want)
{
    char *got;
    gc_error err = {0};
    if (repository(repo, user, NULL, project, location, &got, &err) != 0)
        fail_msg("%s", err.message);
    assert_string_equal(got, want);
    free(got);
}

static void repository_follows_googles_naming(void **state)
{
    (void)state;
    assert_repository("gcluster-repo", "alice", "my-proj", "us-central1-a",
                      "us-central1-docker.pkg.dev/my-proj/gcluster-repo/alice-runner");
    assert_repository("gcluster-repo", "alice", "my-proj", "europe-west4",
                      "europe-west4-docker.pkg.dev/my-proj/gcluster-repo/alice-runner");
    assert_repository("gcluster-repo", "alice", "my-proj", "us",
                      "us-docker.pkg.dev/my-proj/gcluster-repo/alice-runner");
    assert_repository("gcluster-repo", "Jane.Doe@Corp", "p", "us-east5-b",
                      "us-east5-docker.pkg.dev/p/gcluster-repo/jane-doe-corp-runner");
    /* A full path needs no project or location. */
    assert_repository("127.0.0.1:5000/team/", "bob", NULL, NULL, "127.0.0.1:5000/team/bob-runner");
    assert_repository("us-docker.pkg.dev/other-proj/shared", "bob", "p", "us-central1",
                      "us-docker.pkg.dev/other-proj/shared/bob-runner");

    char *got;
    gc_error err = {0};
    assert_int_equal(repository("repo", NULL, "carol", "p", "asia-east1", &got, &err), 0);
    assert_string_equal(got, "asia-east1-docker.pkg.dev/p/repo/carol-runner");
    free(got);
}

static void expect_usage_error(const char *repo, const char *user, const char *project,
                               const char *location, const char *says)
{
    char *got;
    gc_error err = {0};
    assert_int_equal(repository(repo, user, NULL, project, location, &got, &err), GC_EXIT_USAGE);
    assert_null(got);
    if (!strstr(err.message, says))
        fail_msg("expected \"%s\" in: %s", says, err.message);
}

static void missing_settings_name_the_fix(void **state)
{
    (void)state;
    expect_usage_error(NULL, "alice", "p", "us-central1",
                       "set GCLUSTER_IMAGE_REPO to your Artifact Registry repository name "
                       "(export GCLUSTER_IMAGE_REPO=gcluster-repo) or to a repository path on any "
                       "OCI registry (export GCLUSTER_IMAGE_REPO=registry.example.com/team)");
    expect_usage_error("", "alice", "p", "us-central1", "GCLUSTER_IMAGE_REPO");
    expect_usage_error("repo", NULL, "p", "us-central1", "neither USER nor USERNAME");
    expect_usage_error("repo", "...", "p", "us-central1", "USER=\"...\"");
    expect_usage_error("repo", "alice", NULL, "us-central1", "--project is required");
    expect_usage_error("repo", "alice", "p", NULL, "--location is required");
    expect_usage_error("Bad_Repo", "alice", "p", "us-central1", "repository name only");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(references_follow_docker_defaults),
        cmocka_unit_test(canonical_names_and_api_hosts),
        cmocka_unit_test(bad_references_say_what_is_wrong),
        cmocka_unit_test(only_this_machine_counts_as_loopback),
        cmocka_unit_test(repository_follows_googles_naming),
        cmocka_unit_test(missing_settings_name_the_fix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
