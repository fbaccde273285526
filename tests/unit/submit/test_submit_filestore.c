/*
 * --mount filestore://INSTANCE/SHARE with an instance name, against a fake gcloud: the name is
 * looked up in every location of the project (`gcloud filestore instances list`), its IP
 * address goes into the pod's NFS volume, and each way it can fail (not found, several of that
 * name, not READY, no IPv4 address, gcloud missing or failing) is an error naming --mount. A
 * mount by IP address asks gcloud nothing.
 */
#include "gcluster/submit.h"
#include "kube_test.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define IMAGE "us-docker.pkg.dev/my-project/my-repo/jax:1"

/* Prints the project's instances for `filestore instances list --format=json [--project=P]`
 * (P must be proj-1 when given), and records every call in args; $FAKE_FAIL makes it fail as
 * gcloud does without credentials. */
static const char fake_script[] =
    "#!/bin/sh\n"
    "echo \"$@\" >> \"$(dirname \"$0\")/args\"\n"
    "if [ -n \"$FAKE_FAIL\" ]; then\n"
    "  echo 'ERROR: (gcloud.filestore.instances.list) You do not currently have an active "
    "account selected.' >&2; exit 1\n"
    "fi\n"
    "case \"$*\" in\n"
    "'filestore instances list --format=json'|'filestore instances list --format=json "
    "--project=proj-1')\n"
    "  cat <<'EOF'\n"
    "[{\"name\": \"projects/proj-1/locations/us-central1-c/instances/nfs-a\", \"state\": "
    "\"READY\", \"networks\": [{\"ipAddresses\": [\"10.0.5.2\"]}], \"fileShares\": [{\"name\": "
    "\"share\", \"capacityGb\": \"1024\"}]},\n"
    " {\"name\": \"projects/proj-1/locations/us-east1-b/instances/twin\", \"state\": \"READY\", "
    "\"networks\": [{\"ipAddresses\": [\"10.0.6.2\"]}]},\n"
    " {\"name\": \"projects/proj-1/locations/us-east5-a/instances/twin\", \"state\": \"READY\", "
    "\"networks\": [{\"ipAddresses\": [\"10.0.7.2\"]}]},\n"
    " {\"name\": \"projects/proj-1/locations/us-east5-a/instances/making\", \"state\": "
    "\"CREATING\", \"networks\": [{\"ipAddresses\": [\"10.0.8.2\"]}]},\n"
    " {\"name\": \"projects/proj-1/locations/us-east5-a/instances/odd\", \"state\": \"READY\", "
    "\"networks\": [{\"ipAddresses\": [\"10.0.9.2; rm -rf /\"]}]}]\n"
    "EOF\n"
    "  exit 0;;\n"
    "esac\n"
    "echo \"ERROR: (gcloud) unexpected: $*\" >&2; exit 1\n";

typedef struct fixture {
    char *dir;
    char *gcloud;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    f->dir = kube_test_tmpdir();
    kube_test_put(f->dir, "gcloud", fake_script, 0755);
    f->gcloud = gc_xasprintf("%s/gcloud", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    unsetenv("FAKE_FAIL");
    free(f->gcloud);
    kube_test_rmtree(f->dir);
    free(f);
    return 0;
}

static gc_submit_request request(const fixture *f, const char *mount)
{
    gc_submit_request r;
    gc_submit_request_defaults(&r);
    r.name = "nfs-job";
    r.compute_type = "v6e-16";
    r.command = "python train.py";
    r.image = IMAGE;
    r.dry_run_out = "-";
    r.mounts[0] = mount;
    r.mount_count = 1;
    r.gcloud = f->gcloud;
    return r;
}

/* The gcloud calls made so far, one a line ("" when none). */
static char *calls(const fixture *f)
{
    char *path = gc_xasprintf("%s/args", f->dir);
    FILE *in = fopen(path, "r");
    free(path);
    char *text = gc_xcalloc(4096, 1);
    if (in) {
        size_t n = fread(text, 1, 4095, in);
        text[n] = '\0';
        fclose(in);
    }
    return text;
}

static void the_name_becomes_the_instances_ip(void **state)
{
    fixture *f = *state;
    gc_submit_request r = request(f, "filestore://nfs-a/share;/data;rw");
    gc_submit_plan p;
    gc_error err = {0};
    assert_int_equal(gc_submit_prepare(&r, &p, &err), 0);
    const gc_mount *m = &p.workload.mounts[0];
    assert_int_equal(m->kind, GC_MOUNT_NFS);
    assert_string_equal(m->source, "10.0.5.2");
    assert_string_equal(m->source_dir, "/share");
    assert_int_equal(p.notices.count, 1);
    assert_string_equal(p.notices.items[0], "--mount filestore://nfs-a/share: the Filestore "
                                            "instance \"nfs-a\" (us-central1-c) is at 10.0.5.2");
    gc_submit_plan_free(&p);
    char *made = calls(f);
    assert_string_equal(made, "filestore instances list --format=json\n");
    free(made);
    /* --project names where to look. */
    r.project = "proj-1";
    assert_int_equal(gc_submit_prepare(&r, &p, &err), 0);
    assert_string_equal(p.workload.mounts[0].source, "10.0.5.2");
    gc_submit_plan_free(&p);
    made = calls(f);
    assert_non_null(strstr(made, "filestore instances list --format=json --project=proj-1\n"));
    free(made);
}

static void an_ip_address_asks_nothing(void **state)
{
    fixture *f = *state;
    gc_submit_request r = request(f, "filestore://10.0.0.2/share:/data");
    r.gcloud = "/nonexistent/gcloud";
    gc_submit_plan p;
    gc_error err = {0};
    assert_int_equal(gc_submit_prepare(&r, &p, &err), 0);
    assert_string_equal(p.workload.mounts[0].source, "10.0.0.2");
    assert_int_equal(p.notices.count, 0);
    gc_submit_plan_free(&p);
    char *made = calls(f);
    assert_string_equal(made, "");
    free(made);
}

static void each_failure_names_mount_and_the_fix(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *mount, *project, *want;
        int code;
    } cases[] = {
        {"filestore://nope/share:/data", NULL,
         "--mount filestore://nope/share: no Filestore instance named \"nope\" in gcloud's "
         "configured project (`gcloud filestore instances list` shows them); give an instance's "
         "name or IP address, or the project with --project",
         2},
        {"filestore://nope/share:/data", "proj-1",
         "no Filestore instance named \"nope\" in project "
         "proj-1",
         2},
        {"filestore://twin/share:/data", NULL,
         "2 Filestore instances are named \"twin\" in gcloud's configured project (in "
         "us-east1-b, us-east5-a); give the IP address of the one you mean instead",
         2},
        {"filestore://making/share:/data", NULL,
         "the Filestore instance \"making\" (us-east5-a) is CREATING, not READY", 2},
        {"filestore://odd/share:/data", NULL,
         "the Filestore instance \"odd\" (us-east5-a) has no IPv4 address", 2},
        {"filestore://nfs-a/share:/data", "Not_A_Project",
         "--project \"Not_A_Project\" is not a Google Cloud project ID", 2},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
        gc_submit_request r = request(f, cases[i].mount);
        r.project = cases[i].project;
        gc_submit_plan p;
        gc_error err = {0};
        int rc = gc_submit_prepare(&r, &p, &err);
        if (rc != cases[i].code || !strstr(err.message, cases[i].want))
            fail_msg("%s: exit %d: %s", cases[i].mount, rc, err.message);
        gc_submit_plan_free(&p);
    }
}

static void gcloud_missing_or_failing(void **state)
{
    fixture *f = *state;
    gc_submit_request r = request(f, "filestore://nfs-a/share:/data");
    r.gcloud = "/nonexistent/gcloud";
    gc_submit_plan p;
    gc_error err = {0};
    assert_int_equal(gc_submit_prepare(&r, &p, &err), GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "--mount: gcloud is not installed (or not on $PATH)"));
    assert_non_null(strstr(err.message, "give the instance's IP address instead"));
    gc_submit_plan_free(&p);

    r.gcloud = f->gcloud;
    setenv("FAKE_FAIL", "1", 1);
    err = (gc_error){0};
    assert_int_equal(gc_submit_prepare(&r, &p, &err), GC_EXIT_RUNTIME);
    assert_non_null(strstr(err.message, "--mount: gcloud filestore instances list, which finds "
                                        "the Filestore instance given by name, failed"));
    assert_non_null(strstr(err.message, "You do not currently have an active account"));
    gc_submit_plan_free(&p);
}

/* A name that is neither an address nor an instance name is refused before gcloud is asked. */
static void a_bad_name_is_refused_offline(void **state)
{
    fixture *f = *state;
    gc_submit_request r = request(f, "filestore://-rf/share:/data");
    gc_submit_plan p;
    gc_error err = {0};
    assert_int_equal(gc_submit_prepare(&r, &p, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "not an IPv4 address nor an instance name"));
    gc_submit_plan_free(&p);
    char *made = calls(f);
    assert_string_equal(made, "");
    free(made);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_name_becomes_the_instances_ip, setup, teardown),
        cmocka_unit_test_setup_teardown(an_ip_address_asks_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(each_failure_names_mount_and_the_fix, setup, teardown),
        cmocka_unit_test_setup_teardown(gcloud_missing_or_failing, setup, teardown),
        cmocka_unit_test_setup_teardown(a_bad_name_is_refused_offline, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
