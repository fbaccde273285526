/*
 * What the blueprint's kubectl-apply module installs on the cluster: cert-manager, JobSet and
 * Kueue, at the versions its settings name (else the module's defaults), from each project's
 * release manifest with the module's Helm values applied as changes to the objects (Kueue's
 * TopologyAwareScheduling gate; the toleration of GKE's system-pool taint on the JobSet and
 * Kueue controllers: the module's cert-manager chart is installed with its defaults, CRDs on).
 *
 * A release file is fetched over HTTPS at run time (or read from --manifests-dir) and must
 * match the SHA-256 digest kept below; every file is checked before the first object is sent,
 * so a mismatch changes nothing. Objects go in by server-side apply with deploy's field
 * manager, in the release file's order (namespace and CRDs first, webhook configurations last).
 * Then deploy waits, bounded, until each controller Deployment is Available and each webhook
 * Service has a ready endpoint, so the Kueue configuration applied next reaches a webhook that
 * answers. An installed release is left alone; an older one is reported and replaced only with
 * --upgrade.
 */
#include "deploy/internal.h"

#include "gcluster/emit.h"
#include "gcluster/http.h"
#include "gcluster/kube.h"
#include "gcluster/kueue.h"
#include "gcluster/sys.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RELEASE_HOST      "https://github.com"
#define RELEASE_MAX_BYTES (4u << 20)
#define FETCH_TIMEOUT_MS  120000
#define READY_TIMEOUT_MS  300000 /* image pulls on a fresh node pool take minutes */
#define WEBHOOK_WAIT_MS   60000  /* the toolkit's wait for Kueue's webhook */
#define GKE_SYSTEM_TAINT  "components.gke.io/gke-managed-components"

typedef struct component {
    const char *name;    /* as reported: "Kueue" */
    const char *setting; /* the kubectl-apply module's setting: "kueue" */
    const char *version; /* the module's default release */
    const char *project; /* below RELEASE_HOST (or the mirror): /<project>/releases/download/ */
    const char *file;    /* ...<version>/<file> */
    const char *group;   /* the API group it serves: present when served */
    const char *api;     /* the version of it jobs use */
    const char *ns;
    const char *deployments[3];
    const char *webhook_service;
    bool topology_gate;     /* Kueue: the module's Helm values enable TopologyAwareScheduling */
    bool system_toleration; /* the module's Helm values tolerate GKE's system-pool taint */
} component;

/* In install order: JobSet before Kueue, whose JobSet integration needs JobSet's CRD. */
static const component components[] = {
    {"cert-manager",
     "cert_manager",
     "v1.17.2",
     "cert-manager/cert-manager",
     "cert-manager.yaml",
     "cert-manager.io",
     "v1",
     "cert-manager",
     {"cert-manager", "cert-manager-cainjector", "cert-manager-webhook"},
     "cert-manager-webhook",
     false,
     false},
    {"JobSet",
     "jobset",
     "v0.10.1",
     "kubernetes-sigs/jobset",
     "manifests.yaml",
     "jobset.x-k8s.io",
     "v1alpha2",
     GC_JOBSET_CONTROLLER_NS,
     {GC_JOBSET_CONTROLLER},
     "jobset-webhook-service",
     false,
     true},
    {"Kueue",
     "kueue",
     "v0.17.1",
     "kubernetes-sigs/kueue",
     "manifests.yaml",
     GC_KUEUE_GROUP,
     GC_KUEUE_VERSION,
     GC_KUEUE_CONTROLLER_NS,
     {GC_KUEUE_CONTROLLER},
     "kueue-webhook-service",
     true,
     true},
};
#define COMPONENT_COUNT (sizeof(components) / sizeof(*components))

/* The SHA-256 of each release file deploy accepts. A release not listed is not installed:
 * adding one means recording its digest here. The files these were taken from, and how they
 * were made, are described in tests/fixtures/releases/README.md. */
static const struct {
    const char *setting, *version, *sha256;
} release_digests[] = {
    {"cert_manager", "v1.17.2", "dab2794176629d8042ce97b885f378dfe4ef7b5bed5859e9f06616ead9980f4b"},
    {"jobset", "v0.10.1", "41ad53ab43555e4adc92b3e59c01d1cb1c77bf7ce12737375db134ed4d7c219e"},
    {"kueue", "v0.17.1", "0d7d36c884dd8b7fe6704ec14becc1724e1f2d4b7f1f657a6bbd59ebcb76f387"},
};

static const char *digest_of(const component *c, const char *version)
{
    for (size_t i = 0; i < sizeof(release_digests) / sizeof(*release_digests); i++)
        if (!strcmp(release_digests[i].setting, c->setting) &&
            !strcmp(release_digests[i].version, version))
            return release_digests[i].sha256;
    return NULL;
}

/* The version a kubectl-apply module asks for ("0.17.1" or "v0.17.1"), with the v. */
static char *normalized_version(const char *v)
{
    return v[0] == 'v' ? gc_xstrdup(v) : gc_xasprintf("v%s", v);
}

/* Whether some kubectl-apply module installs `c`, and at which version (owned). */
static char *wanted_version(const gc_blueprint *bp, const component *c)
{
    char *version = NULL;
    for (size_t i = 0; i < bp->module_count; i++) {
        const gc_bp_module *m = &bp->modules[i];
        if (m->kind != GC_BP_MODULE_KUBECTL_APPLY)
            continue;
        const json_t *s = deploy_blueprint_setting(bp, m, c->setting);
        if (!json_is_object(s) || !json_is_true(json_object_get(s, "install")))
            continue;
        const char *v = json_string_value(json_object_get(s, "version"));
        free(version);
        version = normalized_version(v && *v ? v : c->version);
    }
    return version;
}

static char *release_url(const component *c, const char *version, const char *mirror)
{
    const char *host = mirror ? mirror : RELEASE_HOST;
    size_t len = strlen(host);
    return gc_xasprintf("%.*s/%s/releases/download/%s/%s",
                        (int)(len && host[len - 1] == '/' ? len - 1 : len), host, c->project,
                        version, c->file);
}

/* The file a --manifests-dir holds for `c`: the release file renamed <name>-<version>.yaml in
 * lower case ("kueue-v0.17.1.yaml", "cert-manager-v1.17.2.yaml"), since JobSet and Kueue both
 * call theirs manifests.yaml. */
static char *dir_name(const component *c, const char *version)
{
    char *name = gc_xasprintf("%s-%s.yaml", c->name, version);
    for (size_t i = 0; i < strlen(c->name); i++)
        if (name[i] >= 'A' && name[i] <= 'Z')
            name[i] = (char)(name[i] - 'A' + 'a');
    return name;
}

static char *dir_file(const component *c, const char *version, const char *dir)
{
    char *name = dir_name(c, version);
    char *path = gc_xasprintf("%s/%s", dir, name);
    free(name);
    return path;
}

static const component *component_named(const char *name)
{
    for (size_t i = 0; i < COMPONENT_COUNT; i++)
        if (!strcmp(components[i].name, name))
            return &components[i];
    return NULL;
}

void deploy_release_file(const char *name, gc_strings *out)
{
    const component *c = component_named(name);
    char *file = dir_name(c, c->version);
    gc_strings_push(out, file);
    free(file);
}

void gc_deploy_release_files(gc_strings *out)
{
    for (size_t i = 0; i < COMPONENT_COUNT; i++)
        deploy_release_file(components[i].name, out);
}

static char *source_of(const component *c, const char *version, const deploy_release_source *src)
{
    return src->dir ? dir_file(c, version, src->dir) : release_url(c, version, src->mirror);
}

int deploy_install_check_one(gc_kube *kube, json_t *cache, const char *name, const char *version,
                             const deploy_release_source *src, gc_deploy_install *in, gc_error *err)
{
    const component *c = component_named(name);
    memset(in, 0, sizeof(*in));
    in->name = gc_xstrdup(c->name);
    in->version = normalized_version(version ? version : c->version);
    in->source = source_of(c, in->version, src);
    if (!kube) {
        in->state = GC_INSTALL_NOT_CHECKED;
        return 0;
    }
    char api[16];
    int rc = deploy_served(kube, cache, c->group, c->api, api, sizeof(api), err);
    if (rc)
        return rc;
    if (api[0])
        in->installed = deploy_running_version(kube, cache, c->ns, c->deployments[0]);
    long have = deploy_version_number(in->installed);
    if (!api[0])
        in->state = GC_INSTALL_MISSING;
    else if (have >= 0 && have < deploy_version_number(in->version))
        in->state = src->upgrade ? GC_INSTALL_MISSING : GC_INSTALL_OLDER;
    else
        in->state = GC_INSTALL_PRESENT; /* this release or newer, or run by other means */
    if (in->state == GC_INSTALL_MISSING && !digest_of(c, in->version))
        in->state = GC_INSTALL_UNVERIFIABLE;
    return 0;
}

int deploy_install_check(gc_kube *kube, json_t *cache, const gc_blueprint *bp,
                         const gc_deploy_request *r, gc_deploy_report *report, gc_error *err)
{
    deploy_release_source src = {
        .dir = r->manifests_dir, .mirror = r->manifests_mirror, .upgrade = r->upgrade};
    for (size_t i = 0; i < COMPONENT_COUNT; i++) {
        const component *c = &components[i];
        char *version = wanted_version(bp, c);
        if (!version)
            continue;
        report->installs =
            gc_xrealloc(report->installs, (report->install_count + 1) * sizeof(*report->installs));
        int rc = deploy_install_check_one(kube, cache, c->name, version, &src,
                                          &report->installs[report->install_count++], err);
        free(version);
        if (rc)
            return rc;
    }
    return 0;
}

static void sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    if (EVP_Digest(data, len, md, &md_len, EVP_sha256(), NULL) != 1 || md_len != 32)
        gc_fatal("libcrypto failed in EVP_Digest");
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

/* The module's Helm values, as changes to the release's objects. */
static void apply_values(const component *c, json_t *obj)
{
    if (!c->system_toleration ||
        strcmp(json_string_value(json_object_get(obj, "kind")), "Deployment"))
        return;
    json_t *pod =
        json_object_get(json_object_get(json_object_get(obj, "spec"), "template"), "spec");
    if (!json_is_object(pod))
        return;
    json_t *tolerations = json_object_get(pod, "tolerations");
    if (!json_is_array(tolerations)) {
        tolerations = json_array();
        json_object_set_new(pod, "tolerations", tolerations);
    }
    json_array_append_new(tolerations, json_pack("{s:s, s:s, s:s}", "key", GKE_SYSTEM_TAINT,
                                                 "operator", "Exists", "effect", "NoSchedule"));
    if (!c->topology_gate)
        return;
    size_t i;
    json_t *container;
    json_array_foreach(json_object_get(pod, "containers"), i, container)
    {
        if (strcmp(json_string_value(json_object_get(container, "name")), "manager"))
            continue;
        json_t *args = json_object_get(container, "args");
        if (!json_is_array(args)) {
            args = json_array();
            json_object_set_new(container, "args", args);
        }
        json_array_append_new(args, json_string("--feature-gates=TopologyAwareScheduling=true"));
    }
}

/* The release file of one component, checked against its digest, as objects to apply. */
static int load_release(const component *c, const gc_deploy_install *in,
                        const deploy_release_source *src, json_t **objects, gc_error *err)
{
    const char *want = digest_of(c, in->version);
    gc_buf text;
    gc_buf_init(&text);
    int rc = src->dir
                 ? gc_file_read(in->source, RELEASE_MAX_BYTES, &text, err)
                 : gc_http_fetch(in->source, RELEASE_MAX_BYTES, FETCH_TIMEOUT_MS, NULL, &text, err);
    if (rc && !src->dir) {
        /* Most often a cluster's network without the way out: say the two other sources. */
        char *why = gc_xstrdup(err->message);
        char *name = dir_name(c, in->version);
        gc_error_clear(err);
        rc = gc_fail(err, rc,
                     "%s %s: %s (without internet access: --manifests-dir DIR with the release "
                     "file saved as %s, or --manifests-mirror https://HOST)",
                     c->name, in->version, why, name);
        free(why);
        free(name);
    } else if (rc) {
        gc_error_prefix(err, "%s %s: ", c->name, in->version);
    }
    if (rc) {
        gc_buf_free(&text);
        return rc;
    }
    char got[65];
    sha256_hex(text.data, text.len, got);
    if (strcmp(got, want)) {
        gc_buf_free(&text);
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "%s: SHA-256 %s, but %s %s is %s; nothing was applied (a changed or "
                       "damaged download: fetch it again, or check what %s serves)",
                       in->source, got, c->name, in->version, want,
                       src->dir ? "--manifests-dir" : "the server");
    }
    gc_yaml_doc doc;
    rc = gc_yaml_load(text.data, text.len, in->source, &doc, err);
    gc_buf_free(&text);
    if (rc)
        return rc;
    *objects = json_array();
    size_t i;
    json_t *obj;
    json_array_foreach(doc.documents, i, obj)
    {
        if (!json_is_object(obj))
            continue;
        apply_values(c, obj);
        json_array_append(*objects, obj);
    }
    gc_yaml_doc_free(&doc);
    return 0;
}

static int apply_release(gc_kube *kube, const component *c, gc_deploy_install *in, json_t *objects,
                         const gc_events *ev, gc_error *err)
{
    gc_progress(ev, "installing %s %s (%zu objects)", c->name, in->version,
                json_array_size(objects));
    int rc = deploy_apply_objects(kube, objects, &in->objects, err);
    gc_event(ev, GC_EVENT_PROGRESS_END, "%s", "");
    if (rc)
        gc_error_prefix(err,
                        "installing %s %s (%zu of %zu objects applied; run the same command "
                        "again to resume): ",
                        c->name, in->version, in->objects, json_array_size(objects));
    return rc;
}

/* The Deployment rolled out its current spec and is Available. */
static int deployment_ready(gc_kube *kube, const char *ns, const char *name, bool *ready,
                            gc_error *err)
{
    char *path = gc_kube_path("apps", "v1", ns, "deployments", name);
    json_t *d = NULL;
    int rc = gc_kube_get(kube, path, NULL, &d, err);
    free(path);
    if (rc)
        return rc;
    const json_t *status = json_object_get(d, "status");
    json_int_t generation =
        json_integer_value(json_object_get(json_object_get(d, "metadata"), "generation"));
    json_int_t replicas =
        json_integer_value(json_object_get(json_object_get(d, "spec"), "replicas"));
    *ready = json_integer_value(json_object_get(status, "observedGeneration")) >= generation &&
             json_integer_value(json_object_get(status, "updatedReplicas")) >= replicas &&
             gc_kube_condition_true(d, "Available");
    json_decref(d);
    return 0;
}

/* Some EndpointSlice of the Service lists a ready endpoint. */
static int endpoints_ready(gc_kube *kube, const char *ns, const char *service, bool *ready,
                           gc_error *err)
{
    char *path = gc_kube_path("discovery.k8s.io", "v1", ns, "endpointslices", NULL);
    char selector[160];
    snprintf(selector, sizeof(selector), "kubernetes.io/service-name=%s", service);
    const char *query[] = {"labelSelector", selector, NULL};
    json_t *list = NULL;
    int rc = gc_kube_get(kube, path, query, &list, err);
    free(path);
    if (rc)
        return rc;
    *ready = false;
    size_t i, j;
    json_t *slice, *ep;
    json_array_foreach(json_object_get(list, "items"), i, slice)
    {
        json_array_foreach(json_object_get(slice, "endpoints"), j, ep)
        {
            const json_t *r = json_object_get(json_object_get(ep, "conditions"), "ready");
            if (!r || json_is_true(r))
                *ready = true;
        }
    }
    json_decref(list);
    return 0;
}

/* Waits for one component's Deployments and webhook endpoints; the error names what is not
 * ready and how to look. */
static int wait_ready(gc_kube *kube, const component *c, const gc_events *ev, long long deadline,
                      gc_error *err)
{
    gc_progress(ev,
                "waiting for %s's controllers to be Available and its webhook to have "
                "ready endpoints",
                c->name);
    int rc = 0;
    const char *waiting = NULL;
    for (;;) {
        waiting = NULL;
        for (size_t i = 0; i < 3 && c->deployments[i] && !waiting && !rc; i++) {
            bool ready = false;
            rc = deployment_ready(kube, c->ns, c->deployments[i], &ready, err);
            if (!rc && !ready)
                waiting = c->deployments[i];
        }
        bool ready = false;
        if (!rc && !waiting &&
            (rc = endpoints_ready(kube, c->ns, c->webhook_service, &ready, err)) == 0 && !ready)
            waiting = c->webhook_service;
        if (rc || !waiting || gc_clock_ms() >= deadline)
            break;
        deploy_sleep_ms(1000);
    }
    gc_event(ev, GC_EVENT_PROGRESS_END, "%s", "");
    if (!rc && waiting)
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "%s was installed, but %s/%s is not ready after %d s (look at the pods "
                     "of namespace %s for why); run the same command again to go on waiting",
                     c->name, c->ns, waiting, READY_TIMEOUT_MS / 1000, c->ns);
    return rc;
}

int deploy_install_apply(gc_kube *kube, const deploy_release_source *src, const gc_events *ev,
                         gc_deploy_install *installs, size_t count, gc_error *err)
{
    json_t *releases[COMPONENT_COUNT] = {NULL};
    int rc = 0;
    /* Every file is read and checked before anything is applied. */
    for (size_t i = 0; i < count && !rc; i++) {
        gc_deploy_install *in = &installs[i];
        const component *c = component_named(in->name);
        /* A release without a kept digest was reported and is skipped. */
        if (in->state == GC_INSTALL_MISSING)
            rc = load_release(c, in, src, &releases[c - components], err);
    }
    for (size_t i = 0; i < count && !rc; i++) {
        gc_deploy_install *in = &installs[i];
        const component *c = component_named(in->name);
        if (in->state != GC_INSTALL_MISSING)
            continue;
        rc = apply_release(kube, c, in, releases[c - components], ev, err);
        if (!rc)
            in->state = in->installed ? GC_INSTALL_UPGRADED : GC_INSTALL_INSTALLED;
    }
    long long deadline = gc_clock_ms() + READY_TIMEOUT_MS;
    for (size_t i = 0; i < count && !rc; i++) {
        gc_deploy_install *in = &installs[i];
        if (in->state == GC_INSTALL_INSTALLED || in->state == GC_INSTALL_UPGRADED)
            rc = wait_ready(kube, component_named(in->name), ev, deadline, err);
    }
    for (size_t i = 0; i < COMPONENT_COUNT; i++)
        json_decref(releases[i]);
    return rc;
}

int deploy_install_run(gc_kube *kube, const gc_deploy_request *r, const gc_events *ev,
                       gc_deploy_report *report, gc_error *err)
{
    deploy_release_source src = {
        .dir = r->manifests_dir, .mirror = r->manifests_mirror, .upgrade = r->upgrade};
    return deploy_install_apply(kube, &src, ev, report->installs, report->install_count, err);
}

bool deploy_install_changed(const gc_deploy_report *report)
{
    for (size_t i = 0; i < report->install_count; i++)
        if (report->installs[i].state == GC_INSTALL_INSTALLED ||
            report->installs[i].state == GC_INSTALL_UPGRADED)
            return true;
    return false;
}

/* A webhook that is not answering yet: its Service has endpoints, but the server behind them
 * may still be loading its certificate. */
static bool webhook_not_answering(const gc_error *err)
{
    return strstr(err->message, "failed calling webhook") ||
           strstr(err->message, "conversion webhook") ||
           strstr(err->message, "no endpoints available");
}

int deploy_apply_after_install(gc_kube *kube, json_t *obj, const deploy_object_ref *ref,
                               bool wait_for_webhook, gc_apply_outcome *outcome, gc_error *err)
{
    long long deadline = gc_clock_ms() + (wait_for_webhook ? WEBHOOK_WAIT_MS : 0);
    for (;;) {
        int rc = deploy_apply_object(kube, obj, ref, false, outcome, err);
        if (!rc || !webhook_not_answering(err) || gc_clock_ms() >= deadline)
            return rc;
        gc_error_clear(err);
        deploy_sleep_ms(1000);
    }
}

void deploy_install_free(gc_deploy_install *in)
{
    free(in->name);
    free(in->version);
    free(in->installed);
    free(in->source);
    memset(in, 0, sizeof(*in));
}
