/*
 * A stand-in for `gcloud container clusters get-credentials CLUSTER --location L [--project P]`
 * (fake_gcloud.c stands in for `gcloud auth print-access-token`).
 *
 * Like gcloud, it writes a context gke_<project>_<location>_<cluster> (project from --project,
 * else FAKE_GCLOUD_PROJECT) into the first file of $KUBECONFIG, with the server from
 * FAKE_GCLOUD_SERVER. It appends its argv to FAKE_GCLOUD_LOG, and with FAKE_GCLOUD_FAIL set it
 * fails the way gcloud does, with a message on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *arg_after(int argc, char **argv, const char *name)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], name))
            return argv[i + 1];
    return NULL;
}

int main(int argc, char **argv)
{
    const char *log = getenv("FAKE_GCLOUD_LOG");
    FILE *f = log ? fopen(log, "a") : NULL;
    for (int i = 0; f && i < argc; i++)
        fprintf(f, "%s%s", i ? " " : "", argv[i]);
    if (f) {
        fputc('\n', f);
        fclose(f);
    }
    if (argc < 5 || strcmp(argv[1], "container") || strcmp(argv[2], "clusters") ||
        strcmp(argv[3], "get-credentials")) {
        fprintf(stderr, "fake gcloud: unexpected command\n");
        return 2;
    }
    if (getenv("FAKE_GCLOUD_FAIL")) {
        fprintf(stderr,
                "ERROR: (gcloud.container.clusters.get-credentials) ResponseError: "
                "code=404, message=Not found: cluster %s.\n",
                argv[4]);
        return 1;
    }
    const char *location = arg_after(argc, argv, "--location");
    const char *project = arg_after(argc, argv, "--project");
    if (!project)
        project = getenv("FAKE_GCLOUD_PROJECT") ? getenv("FAKE_GCLOUD_PROJECT") : "default-project";
    const char *server = getenv("FAKE_GCLOUD_SERVER");
    char *paths = strdup(getenv("KUBECONFIG") ? getenv("KUBECONFIG") : "");
    char *first = strtok(paths, ":");
    FILE *out = first ? fopen(first, "w") : NULL;
    if (!location || !out) {
        fprintf(stderr, "fake gcloud: need --location and $KUBECONFIG\n");
        free(paths);
        return 2;
    }
    char name[512];
    snprintf(name, sizeof(name), "gke_%s_%s_%s", project, location, argv[4]);
    fprintf(out,
            "apiVersion: v1\nkind: Config\ncurrent-context: %s\n"
            "clusters:\n- name: %s\n  cluster:\n    server: %s\n"
            "contexts:\n- name: %s\n  context:\n    cluster: %s\n    user: %s\n"
            "users:\n- name: %s\n  user:\n    token: fake-gcloud-token\n",
            name, name, server ? server : "https://127.0.0.1:1", name, name, name, name);
    fclose(out);
    free(paths);
    fprintf(stderr,
            "Fetching cluster endpoint and auth data.\nkubeconfig entry generated for "
            "%s.\n",
            argv[4]);
    return 0;
}
