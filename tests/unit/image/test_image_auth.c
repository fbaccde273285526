/*
 * Registry credentials: challenges, Docker config entries, gcloud, and keeping secrets quiet.
 */
#include "image/credentials.h"
#include "image/registry.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static void bearer_challenges_are_parsed(void **state)
{
    (void)state;
    image_auth_challenge ch;
    assert_int_equal(image_auth_challenge_parse(
                         "Bearer realm=\"https://auth.docker.io/token\",service=\"registry.docker."
                         "io\",scope=\"repository:library/python:pull\"",
                         &ch),
                     0);
    assert_string_equal(ch.scheme, "Bearer");
    assert_string_equal(ch.realm, "https://auth.docker.io/token");
    assert_string_equal(ch.service, "registry.docker.io");
    assert_string_equal(ch.scope, "repository:library/python:pull");
    image_auth_challenge_free(&ch);

    assert_int_equal(image_auth_challenge_parse("Bearer realm=\"https://x/t\", "
                                                "error=\"insufficient_scope\", "
                                                "scope=\"repository:a:pull,push\"",
                                                &ch),
                     0);
    assert_string_equal(ch.scope, "repository:a:pull,push");
    assert_null(ch.service);
    image_auth_challenge_free(&ch);

    assert_int_equal(image_auth_challenge_parse("Basic realm=\"Registry \\\"Realm\\\"\"", &ch), 0);
    assert_string_equal(ch.scheme, "Basic");
    assert_string_equal(ch.realm, "Registry \"Realm\"");
    image_auth_challenge_free(&ch);
}

static const char docker_config[] =
    "{\"auths\": {"
    "\"https://index.docker.io/v1/\": {\"auth\": \"YWxpY2U6czNjcmV0\"},"
    "\"registry.example.com:5000\": {\"username\": \"bob\", \"password\": \"hunter2\"},"
    "\"https://quay.io\": {\"auth\": \"Ym9ndXM=\"}"
    "}, \"credsStore\": \"desktop\"}";

static void docker_config_auths_are_matched_by_host(void **state)
{
    (void)state;
    image_credentials c;
    gc_error err = {0};
    assert_int_equal(
        image_credentials_from_docker_config(docker_config, "cfg", "docker.io", &c, &err), 0);
    assert_string_equal(c.username, "alice");
    assert_string_equal(c.password, "s3cret");
    image_credentials_free(&c);

    assert_int_equal(image_credentials_from_docker_config(docker_config, "cfg",
                                                          "registry.example.com:5000", &c, &err),
                     0);
    assert_string_equal(c.username, "bob");
    assert_string_equal(c.password, "hunter2");
    image_credentials_free(&c);

    assert_int_equal(
        image_credentials_from_docker_config(docker_config, "cfg", "ghcr.io", &c, &err), 0);
    assert_null(c.username);
    image_credentials_free(&c);

    /* "bogus" has no ':' after decoding: a broken entry is an error that says where. */
    assert_int_equal(
        image_credentials_from_docker_config(docker_config, "cfg", "quay.io", &c, &err),
        GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "cfg"));
    assert_int_equal(image_credentials_from_docker_config("{not json", "cfg", "quay.io", &c, &err),
                     GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "cfg:1:"));
}

static void docker_config_is_found_through_docker_config_dir(void **state)
{
    (void)state;
    char dir[] = "/tmp/gcluster-dockercfg-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512];
    snprintf(path, sizeof(path), "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fputs(docker_config, f);
    fclose(f);
    setenv("DOCKER_CONFIG", dir, 1);
    image_credentials c;
    gc_error err = {0};
    assert_int_equal(image_credentials_lookup("registry.example.com:5000", &c, &err), 0);
    assert_string_equal(c.username, "bob");
    assert_string_equal(c.source, path);
    image_credentials_free(&c);
    unsetenv("DOCKER_CONFIG");
    unlink(path);
    rmdir(dir);
}

/* Puts the fake gcloud first on PATH, as "gcloud". */
static char *fake_gcloud_path(char *old_path)
{
    char dir[] = "/tmp/gcluster-gcloud-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char link[512];
    snprintf(link, sizeof(link), "%s/gcloud", dir);
    assert_int_equal(symlink(GCLUSTER_TEST_PROGRAMS_DIR "/fake_gcloud", link), 0);
    char *path = malloc(strlen(dir) + strlen(old_path) + 2);
    sprintf(path, "%s:%s", dir, old_path);
    setenv("PATH", path, 1);
    free(path);
    return strdup(dir);
}

static void remove_fake_gcloud(char *dir, const char *old_path)
{
    char link[512];
    snprintf(link, sizeof(link), "%s/gcloud", dir);
    unlink(link);
    rmdir(dir);
    free(dir);
    setenv("PATH", old_path, 1);
}

static void google_registries_use_gcloud_tokens(void **state)
{
    (void)state;
    assert_true(image_registry_uses_gcloud("us-docker.pkg.dev"));
    assert_true(image_registry_uses_gcloud("europe-west4-docker.pkg.dev"));
    assert_true(image_registry_uses_gcloud("gcr.io"));
    assert_true(image_registry_uses_gcloud("eu.gcr.io"));
    assert_false(image_registry_uses_gcloud("docker.io"));
    assert_false(image_registry_uses_gcloud("pkg.dev.example.com"));

    char *old_path = strdup(getenv("PATH"));
    char *dir = fake_gcloud_path(old_path);
    image_credentials c;
    gc_error err = {0};
    assert_int_equal(image_credentials_lookup("us-docker.pkg.dev", &c, &err), 0);
    assert_string_equal(c.username, "oauth2accesstoken");
    assert_string_equal(c.password, "ya29.fake-access-token");
    image_credentials_free(&c);

    setenv("FAKE_GCLOUD_FAIL", "1", 1);
    assert_int_equal(image_credentials_lookup("us-docker.pkg.dev", &c, &err), GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "gcloud auth login"));
    assert_non_null(strstr(err.message, "You do not currently have an active account"));
    unsetenv("FAKE_GCLOUD_FAIL");
    remove_fake_gcloud(dir, old_path);

    setenv("PATH", "/nonexistent", 1);
    assert_int_equal(image_credentials_lookup("gcr.io", &c, &err), GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "not installed or not on PATH"));
    setenv("PATH", old_path, 1);
    free(old_path);
}

static void plain_http_is_only_for_this_machine(void **state)
{
    (void)state;
    image_registry *r;
    gc_error err = {0};
    assert_int_equal(image_registry_open("registry.example.com", NULL, &r, &err), 0);
    image_registry_response resp;
    image_registry_response_init(&resp);
    /* An upload location (or token realm) pointing at plain HTTP elsewhere is refused before
     * anything is sent, and the message does not repeat the query string. */
    assert_int_equal(image_registry_send(r, "GET", "http://registry.example.com/v2/x?sig=secret",
                                         NULL, NULL, &resp, &err),
                     GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "refusing to contact http://registry.example.com/v2/x"));
    assert_null(strstr(err.message, "secret"));
    image_registry_response_free(&resp);
    image_registry_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bearer_challenges_are_parsed),
        cmocka_unit_test(docker_config_auths_are_matched_by_host),
        cmocka_unit_test(docker_config_is_found_through_docker_config_dir),
        cmocka_unit_test(google_registries_use_gcloud_tokens),
        cmocka_unit_test(plain_http_is_only_for_this_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
