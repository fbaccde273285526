/*
 * Shared Pathways Service: the proxy Job each client brings to a shared service, and the image
 * and name rules around it. (The service itself is the Pathways JobSet with `sps` set:
 * pathways.c leaves its proxy out.)
 *
 * The proxy is the one pathways-utils deploys for a client (its yamls/pw-proxy.yaml): one pod
 * running the IFRT proxy server on port 29000 of its node, pointed at the service's resource
 * manager, asking it for `slices` slices of one shape (--virtual_slices lists the shape once
 * per slice). What this adds is the client's hold on it: the Job's activeDeadlineSeconds is
 * short and the client keeps moving it forward while it runs, and ttlSecondsAfterFinished 0
 * has Kubernetes delete the Job once the deadline passes; so a client that dies without
 * cleaning up (SIGKILL, a lost laptop) leaves its proxy, and the slices it held, only until
 * the deadline.
 */
#include "manifest/pod.h"

#include "gcluster/buf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROXY_PORT = 29000, RM_PORT = 29001, USER_MAX = 20, PROXY_UID = 1000 };

char *gc_sps_resource_manager_address(const char *service)
{
    return gc_xasprintf("%s-%s-0-0.%s:%d", service, GC_PATHWAYS_HEAD, service, RM_PORT);
}

void gc_sps_user_name(const char *user, char *out, size_t size)
{
    size_t n = 0, limit = size ? size - 1 : 0;
    if (limit > USER_MAX)
        limit = USER_MAX;
    for (const char *p = user ? user : ""; *p && n < limit; p++) {
        unsigned char c = (unsigned char)*p;
        char d = isalnum(c) && c < 0x80 ? (char)tolower(c) : '-';
        if (d == '-' && (n == 0 || out[n - 1] == '-'))
            continue; /* a label starts with a letter or digit and has no "--" runs */
        out[n++] = d;
    }
    while (n > 0 && out[n - 1] == '-')
        n--; /* nor ends with '-' */
    if (n == 0 && size > 4) {
        memcpy(out, "user", 4);
        n = 4;
    }
    if (size)
        out[n] = '\0';
}

/* Where the tag or digest of `image` starts (at its ':' or '@'), or NULL. A ':' before the last
 * '/' belongs to a registry's port, not a tag. */
static const char *release_mark(const char *image)
{
    const char *at = strchr(image, '@');
    if (at)
        return at;
    const char *slash = strrchr(image, '/');
    return strchr(slash ? slash : image, ':');
}

void gc_sps_image_release(const char *image, char *out, size_t size)
{
    const char *mark = release_mark(image);
    const char *release = !mark ? "latest" : *mark == ':' ? mark + 1 : mark;
    snprintf(out, size, "%s", release);
}

char *gc_sps_proxy_image_for(const char *server_image)
{
    const char *mark = release_mark(server_image);
    size_t repo_len = mark ? (size_t)(mark - server_image) : strlen(server_image);
    char *repo = gc_xasprintf("%.*s", (int)repo_len, server_image);
    char *last = strrchr(repo, '/');
    last = last ? last + 1 : repo;
    char *server = strstr(last, "server");
    char *image;
    if (server)
        image =
            gc_xasprintf("%.*sproxy_%s%s", (int)(server - repo), repo, server, mark ? mark : "");
    else
        image = gc_xstrdup(server_image);
    free(repo);
    return image;
}

static json_t *proxy_args(const gc_sps_proxy *p)
{
    char *rm = gc_sps_resource_manager_address(p->service);
    gc_buf slices;
    gc_buf_init(&slices);
    for (int i = 0; i < p->slices; i++)
        gc_buf_printf(&slices, "%s%s", i ? "," : "", p->instance_type);
    char *port = gc_xasprintf("--server_port=%d", PROXY_PORT);
    char *rm_arg = gc_xasprintf("--resource_manager_address=%s", rm);
    char *gcs = gc_xasprintf("--gcs_scratch_location=%s", p->gcs_location);
    char *virtual = gc_xasprintf("--virtual_slices=%s", slices.data ? slices.data : "");
    json_t *args = json_pack("[s, s, s, s]", port, rm_arg, gcs, virtual);
    free(port);
    free(rm_arg);
    free(gcs);
    free(virtual);
    free(rm);
    gc_buf_free(&slices);
    if (p->args && args)
        for (size_t i = 0; i < p->args->count; i++)
            args = manifest_jappend(args, json_string(p->args->items[i]));
    return args;
}

static json_t *proxy_env(const gc_sps_proxy *p)
{
    json_t *env = json_array();
    for (size_t i = 0; i < p->env_count; i++)
        env = manifest_jappend(env, manifest_env_value(p->env[i].name, p->env[i].value));
    return env;
}

/* As pathways-utils runs it: not as root, no capabilities, no privilege escalation. */
static json_t *security_context(void)
{
    return json_pack("{s:i, s:i, s:b, s:{s:[s]}, s:{s:s}, s:b}", "runAsUser", PROXY_UID,
                     "runAsGroup", PROXY_UID, "readOnlyRootFilesystem", 0, "capabilities", "drop",
                     "ALL", "seccompProfile", "type", "RuntimeDefault", "allowPrivilegeEscalation",
                     0);
}

static json_t *proxy_container(const gc_sps_proxy *p)
{
    const int ports[] = {PROXY_PORT};
    return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:{s:{s:s, s:s}}, s:o}", "name",
                     PROXY_CONTAINER, "image", p->image, "imagePullPolicy", "Always", "args",
                     proxy_args(p), "env", proxy_env(p), "ports",
                     manifest_container_ports(ports, 1), "resources", "limits", "cpu", "16",
                     "memory", "100G", "securityContext", security_context());
}

static json_t *pod_spec(const gc_sps_proxy *p)
{
    json_t *spec = json_pack("{s:b, s:{s:s}, s:s, s:b, s:s, s:[o]}", "automountServiceAccountToken",
                             0, "nodeSelector", "cloud.google.com/gke-nodepool", p->head_pool,
                             "dnsPolicy", "ClusterFirstWithHostNet", "hostNetwork", 1,
                             "restartPolicy", "OnFailure", "containers", proxy_container(p));
    if (p->waiting)
        spec =
            manifest_jset(spec, "schedulingGates", json_pack("[{s:s}]", "name", GC_SPS_WAIT_GATE));
    return spec;
}

json_t *gc_sps_proxy_job(const gc_sps_proxy *p)
{
    char slices[16];
    snprintf(slices, sizeof(slices), "%d", p->slices);
    json_t *labels = json_pack("{s:s, s:s, s:s}", GC_LABEL_WORKLOAD, p->name, GC_LABEL_SPS_SERVICE,
                               p->service, GC_LABEL_SPS_USER, p->user);
    json_t *pod_labels = json_pack("{s:s, s:s, s:s}", "app", GC_SPS_PROXY_APP, GC_LABEL_SPS_SERVICE,
                                   p->service, GC_LABEL_WORKLOAD, p->name);
    json_t *template =
        json_pack("{s:{s:o}, s:o}", "metadata", "labels", pod_labels, "spec", pod_spec(p));
    /* backoffLimit 0: a proxy that fails is not restarted into a session its client has lost;
     * the client sees the failure and says so. */
    json_t *spec =
        json_pack("{s:i, s:i, s:i, s:I, s:i, s:o}", "backoffLimit", 0, "completions", 1,
                  "parallelism", 1, "activeDeadlineSeconds", (json_int_t)p->deadline_seconds,
                  "ttlSecondsAfterFinished", 0, "template", template);
    return json_pack("{s:s, s:s, s:{s:s, s:o, s:{s:s, s:s}}, s:o}", "apiVersion", "batch/v1",
                     "kind", "Job", "metadata", "name", p->name, "labels", labels, "annotations",
                     GC_ANNOTATION_SPS_SIZE, slices, GC_ANNOTATION_PATHWAYS, "sps-proxy", "spec",
                     spec);
}
