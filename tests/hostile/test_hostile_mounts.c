/*
 * --mount sources checked offline as the API server would check the volume: a Filestore mount
 * names an IPv4 address or an instance name and a share (an empty server or 999.999.999.999 is
 * neither), and no path that ends up inside what the mount names climbs out with ".." (a host
 * path, a bucket's directory, which becomes the volume mount's subPath, a Filestore share path:
 * Kubernetes refuses the first two, the last would leave the share). Each is bad input: exit 2
 * naming
 * --mount, nothing written, nothing sent. The well-formed ones still pass.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "run_cli.h"

#include <stdio.h>
#include <string.h>

static void submit_with_mount(cli_result *res, const char *mount)
{
    const char *args[] = {"job",
                          "submit",
                          "--name",
                          "m",
                          "--compute-type",
                          "v6e-16",
                          "--image",
                          "us-docker.pkg.dev/p/r/i:1",
                          "--command",
                          "true",
                          "--mount",
                          mount,
                          "--dry-run-out",
                          "-",
                          NULL};
    /* No kubeconfig anywhere: a check that sent anything would fail differently. */
    const char *env[] = {"HOME=/nonexistent-home-for-tests", "KUBECONFIG=/nonexistent/kubeconfig",
                         NULL};
    run_cli(res, args, env);
}

static void bad_sources_are_refused(void **state)
{
    (void)state;
    static const struct {
        const char *mount, *why;
    } cases[] = {
        {"filestore:///share:/data", "IP address is missing"},
        {"filestore:///share;/data", "IP address is missing"},
        {"filestore://999.999.999.999/share:/data", "not an IPv4 address"},
        {"filestore://10.0.0/share:/data", "not an IPv4 address"},
        {"filestore://10.0.0.2:/data", "the share is missing"},
        {"/host/../etc:/data", "may not contain \"..\""},
        {"/..:/data", "may not contain \"..\""},
        {"/a/b/..;/data;ro", "may not contain \"..\""},
        /* The directory in a bucket is the volume mount's subPath, which the API server refuses
         * with ".." only when the JobSet controller creates the Job. */
        {"gs://bucket/../etc:/data", "a Cloud Storage directory may not contain \"..\""},
        {"gs://bucket/a/..;/data;ro", "a Cloud Storage directory may not contain \"..\""},
        {"gs://bucket/..;/data;profile=serving", "a Cloud Storage directory may not contain"},
        {"filestore://10.0.0.2/share/../x:/data", "a Filestore share path may not contain"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        cli_result res;
        submit_with_mount(&res, cases[i].mount);
        if (res.exit_code != 2 || !strstr(res.err.data, "--mount \"") ||
            !strstr(res.err.data, cases[i].why) || res.out.len != 0)
            fail_msg("--mount %s: exit %d, stdout %zu bytes, stderr: %s", cases[i].mount,
                     res.exit_code, res.out.len, res.err.data);
        cli_result_free(&res);
    }
}

static void good_sources_pass(void **state)
{
    (void)state;
    static const char *const good[] = {"filestore://10.0.0.2/share:/data",
                                       "/host/data:/data",
                                       "/host/..data:/data",
                                       "/host/a..b;/data;ro",
                                       "gs://bucket/..data:/data",
                                       "gs://bucket/a../b;/data"};
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
        cli_result res;
        submit_with_mount(&res, good[i]);
        if (res.exit_code != 0 || !strstr(res.out.data, "kind: JobSet"))
            fail_msg("--mount %s: exit %d: %s", good[i], res.exit_code, res.err.data);
        cli_result_free(&res);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bad_sources_are_refused),
        cmocka_unit_test(good_sources_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
