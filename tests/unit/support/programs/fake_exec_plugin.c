/*
 * A stand-in for an exec credential plugin such as gke-gcloud-auth-plugin.
 *
 * It checks the KUBERNETES_EXEC_INFO it was given (exit 3 when it is wrong), counts its runs
 * in a file, optionally writes what it saw to a file for the test to inspect, and prints an
 * ExecCredential, or misbehaves on request:
 *
 *   --mode=token|cert|fail|garbage|sleep|huge|wrong-version   (default token)
 *   --count-file=PATH  --token-prefix=STR  --expires-in=SECONDS (omitted: no expiry)
 *   --expect-api-version=V  --expect-interactive=true|false  --dump=PATH
 *   --cert-file=PATH --key-file=PATH   (for --mode=cert)
 *   --pid-file=PATH    write the plugin's process id there first, and "finished" when it ends
 *                      on its own (so a test can tell it was stopped)
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define LEAK_MARKER "SECRET-STDOUT-SHOULD-NOT-LEAK"

typedef struct options {
    const char *mode, *count_file, *prefix, *expect_version, *expect_interactive, *dump;
    const char *cert_file, *key_file, *pid_file;
    long expires_in;
    bool expires;
} options;

static const char *flag(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(arg, name, n) && arg[n] == '=' ? arg + n + 1 : NULL;
}

static void parse(int argc, char **argv, options *o)
{
    *o = (options){.mode = "token", .prefix = "tok"};
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = flag(argv[i], "--mode")))
            o->mode = v;
        else if ((v = flag(argv[i], "--count-file")))
            o->count_file = v;
        else if ((v = flag(argv[i], "--token-prefix")))
            o->prefix = v;
        else if ((v = flag(argv[i], "--expires-in")))
            o->expires_in = atol(v), o->expires = true;
        else if ((v = flag(argv[i], "--expect-api-version")))
            o->expect_version = v;
        else if ((v = flag(argv[i], "--expect-interactive")))
            o->expect_interactive = v;
        else if ((v = flag(argv[i], "--dump")))
            o->dump = v;
        else if ((v = flag(argv[i], "--cert-file")))
            o->cert_file = v;
        else if ((v = flag(argv[i], "--key-file")))
            o->key_file = v;
        else if ((v = flag(argv[i], "--pid-file")))
            o->pid_file = v;
    }
}

static int count_run(const char *path)
{
    if (!path)
        return 1;
    int n = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%d", &n) != 1)
            n = 0;
        fclose(f);
    }
    f = fopen(path, "w");
    if (f) {
        fprintf(f, "%d\n", ++n);
        fclose(f);
    }
    return n;
}

static int fail(const char *why)
{
    fprintf(stderr, "fake_exec_plugin: %s\n", why);
    return 3;
}

/* The checks a real plugin relies on. */
static int check_info(const options *o, json_t **info)
{
    const char *text = getenv("KUBERNETES_EXEC_INFO");
    if (!text)
        return fail("KUBERNETES_EXEC_INFO is not set");
    *info = json_loads(text, 0, NULL);
    if (!*info)
        return fail("KUBERNETES_EXEC_INFO is not JSON");
    const char *kind = json_string_value(json_object_get(*info, "kind"));
    const char *version = json_string_value(json_object_get(*info, "apiVersion"));
    json_t *interactive = json_object_get(json_object_get(*info, "spec"), "interactive");
    if (!kind || strcmp(kind, "ExecCredential"))
        return fail("kind is not ExecCredential");
    if (o->expect_version && (!version || strcmp(version, o->expect_version)))
        return fail("unexpected apiVersion");
    if (!json_is_boolean(interactive))
        return fail("spec.interactive is not a boolean");
    if (o->expect_interactive &&
        json_is_true(interactive) != !strcmp(o->expect_interactive, "true"))
        return fail("unexpected spec.interactive");
    return 0;
}

static void dump(const options *o, json_t *info, int argc, char **argv)
{
    if (!o->dump)
        return;
    json_t *env = json_object(), *args = json_array();
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq && !strncmp(*e, "FAKE_", 5)) {
            char name[128];
            snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
            json_object_set_new(env, name, json_string(eq + 1));
        }
    }
    for (int i = 0; i < argc; i++)
        json_array_append_new(args, json_string(argv[i]));
    char cwd[4096];
    json_t *doc = json_pack("{s:O, s:o, s:o, s:s}", "exec_info", info, "env", env, "argv", args,
                            "cwd", getcwd(cwd, sizeof(cwd)) ? cwd : "");
    json_dump_file(doc, o->dump, JSON_INDENT(2));
    json_decref(doc);
}

static char *read_all(const char *path)
{
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void print_credential(const options *o, const char *version, int run)
{
    json_t *status = json_object();
    if (!strcmp(o->mode, "cert")) {
        const char *cert = read_all(o->cert_file);
        json_object_set_new(status, "clientCertificateData", json_string(cert ? cert : ""));
        const char *key = read_all(o->key_file);
        json_object_set_new(status, "clientKeyData", json_string(key ? key : ""));
    } else {
        char token[256];
        snprintf(token, sizeof(token), "%s-%d", o->prefix, run);
        json_object_set_new(status, "token", json_string(token));
    }
    if (o->expires) {
        time_t t = time(NULL) + o->expires_in;
        struct tm tm;
        char ts[32];
        gmtime_r(&t, &tm);
        strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_object_set_new(status, "expirationTimestamp", json_string(ts));
    }
    bool wrong = !strcmp(o->mode, "wrong-version");
    json_t *cred = json_pack("{s:s, s:s, s:o}", "apiVersion",
                             wrong ? "client.authentication.k8s.io/v1alpha1" : version, "kind",
                             "ExecCredential", "status", status);
    char *text = json_dumps(cred, JSON_COMPACT);
    puts(text);
    free(text);
    json_decref(cred);
}

static int run(const options *o, json_t *info, int count, int argc, char **argv)
{
    dump(o, info, argc, argv);
    const char *version = json_string_value(json_object_get(info, "apiVersion"));
    if (!strcmp(o->mode, "fail")) {
        printf("%s\n", LEAK_MARKER);
        fprintf(stderr, "plugin failed on purpose\n");
        return 7;
    }
    if (!strcmp(o->mode, "garbage")) {
        printf("this is not json %s\n", LEAK_MARKER);
        return 0;
    }
    if (!strcmp(o->mode, "sleep")) {
        sleep(30);
    } else if (!strcmp(o->mode, "huge")) {
        for (int i = 0; i < 4096; i++)
            printf("%0511d\n", i);
        return 0;
    }
    print_credential(o, version, count);
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    parse(argc, argv, &o);
    FILE *pid_file = o.pid_file ? fopen(o.pid_file, "w") : NULL;
    if (pid_file) {
        fprintf(pid_file, "%d\n", (int)getpid());
        fclose(pid_file);
    }
    int count = count_run(o.count_file);
    json_t *info = NULL;
    int rc = check_info(&o, &info);
    if (!rc)
        rc = run(&o, info, count, argc, argv);
    json_decref(info);
    pid_file = o.pid_file ? fopen(o.pid_file, "a") : NULL;
    if (pid_file) {
        fputs("finished\n", pid_file);
        fclose(pid_file);
    }
    return rc;
}
