/*
 * Which context to use: --context; else --cluster and --location (and --project)
 * name a GKE context "gke_<project>_<location>_<cluster>"; else current-context. Then the
 * selected context must lead to a complete cluster and a usable user.
 */
#include "kube/kubeconfig.h"

#include "gcluster/buf.h"

#include <stdlib.h>
#include <string.h>

/* "a, b, c" (at most 12, then "..."), or "none". Caller frees. */
static char *context_names(const kube_config *cfg)
{
    if (!cfg->context_count)
        return gc_xstrdup("none");
    gc_buf b;
    gc_buf_init(&b);
    for (size_t i = 0; i < cfg->context_count; i++) {
        if (i == 12) {
            gc_buf_printf(&b, ", ... (%zu in all)", cfg->context_count);
            break;
        }
        gc_buf_printf(&b, "%s%s", i ? ", " : "", cfg->contexts[i].id.name);
    }
    return gc_buf_detach(&b);
}

static int fail_with_contexts(const kube_config *cfg, gc_error *err, const char *what,
                              const char *fix)
{
    char *files = kube_config_file_list(cfg);
    char *names = context_names(cfg);
    gc_fail(err, GC_EXIT_USAGE, "%s in %s (contexts there: %s); %s", what, files, names, fix);
    free(files);
    free(names);
    return GC_EXIT_USAGE;
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Project IDs, locations and cluster names never contain '_', so the suffix is unambiguous. */
static int find_gke_context(const kube_config *cfg, const gc_kube_options *opts,
                            const kube_context **out, gc_error *err)
{
    if (opts->project && opts->project[0]) {
        char *name = gc_xasprintf("gke_%s_%s_%s", opts->project, opts->location, opts->cluster);
        *out = kube_config_context(cfg, name);
        if (!*out)
            gc_fail(err, KUBE_NO_GKE_CONTEXT,
                    "no kubeconfig context \"%s\" for cluster \"%s\" "
                    "in location \"%s\" of project \"%s\"",
                    name, opts->cluster, opts->location, opts->project);
        free(name);
        return *out ? 0 : KUBE_NO_GKE_CONTEXT;
    }
    char *suffix = gc_xasprintf("_%s_%s", opts->location, opts->cluster);
    gc_buf matches;
    gc_buf_init(&matches);
    size_t count = 0;
    for (size_t i = 0; i < cfg->context_count; i++) {
        const char *name = cfg->contexts[i].id.name;
        if (strncmp(name, "gke_", 4) || !has_suffix(name, suffix) ||
            strlen(name) <= 4 + strlen(suffix))
            continue;
        gc_buf_printf(&matches, "%s%s", count ? ", " : "", name);
        *out = &cfg->contexts[i];
        count++;
    }
    int rc = 0;
    if (count == 0)
        rc = gc_fail(err, KUBE_NO_GKE_CONTEXT,
                     "no kubeconfig context \"gke_<project>%s\" for "
                     "cluster \"%s\" in location \"%s\"",
                     suffix, opts->cluster, opts->location);
    else if (count > 1)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--cluster %s --location %s matches %zu contexts (%s); "
                     "pass --project (-p) to choose one, or --context",
                     opts->cluster, opts->location, count, matches.data);
    if (rc)
        *out = NULL;
    gc_buf_free(&matches);
    free(suffix);
    return rc;
}

static int check_exec(const kube_user *u, gc_error *err)
{
    const kube_exec_config *x = u->exec;
    if (!x->command || !x->command[0])
        return gc_fail(err, GC_EXIT_USAGE, "%s: the exec section of user \"%s\" has no command",
                       x->where, u->id.name);
    const char *v = x->api_version ? x->api_version : "";
    bool v1 = !strcmp(v, "client.authentication.k8s.io/v1");
    if (!v1 && strcmp(v, "client.authentication.k8s.io/v1beta1"))
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s: exec apiVersion \"%s\" of user \"%s\" is not "
                       "supported; use client.authentication.k8s.io/v1 (or v1beta1)",
                       x->where, v, u->id.name);
    /* client-go's own wording: v1 has no default, v1beta1 defaults to IfAvailable. */
    if (v1 && x->interactive_mode == KUBE_INTERACTIVE_UNSET)
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s: interactiveMode must be specified for %s to use "
                       "exec authentication plugin (Never, IfAvailable or Always)",
                       x->where, u->id.name);
    if (x->interactive_mode == KUBE_INTERACTIVE_INVALID)
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s: interactiveMode of user \"%s\" must be Never, "
                       "IfAvailable or Always",
                       x->where, u->id.name);
    return 0;
}

static int check_user(const kube_user *u, gc_error *err)
{
    if (u->auth_provider)
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s: user \"%s\" uses auth-provider \"%s\", which "
                       "kubectl removed in 1.26 and gcluster does not support; for GKE install "
                       "gke-gcloud-auth-plugin and run `gcloud container clusters get-credentials` "
                       "to switch the user to an exec plugin",
                       u->id.where, u->id.name, u->auth_provider);
    bool has_cert = u->client_certificate || u->client_certificate_data.data;
    bool has_key = u->client_key || u->client_key_data.data;
    if (has_cert != has_key)
        return gc_fail(err, GC_EXIT_USAGE, "%s: user \"%s\" has a client %s but no client %s",
                       u->id.where, u->id.name, has_cert ? "certificate" : "key",
                       has_cert ? "key (client-key or client-key-data)"
                                : "certificate (client-certificate or client-certificate-data)");
    return u->exec ? check_exec(u, err) : 0;
}

static int resolve(const kube_config *cfg, const kube_context *ctx, kube_selection *sel,
                   gc_error *err)
{
    char *files = kube_config_file_list(cfg);
    int rc = 0;
    sel->context = ctx;
    sel->cluster = kube_config_cluster(cfg, ctx->cluster);
    sel->user = ctx->user && ctx->user[0] ? kube_config_user(cfg, ctx->user) : NULL;
    if (!ctx->cluster || !ctx->cluster[0])
        rc = gc_fail(err, GC_EXIT_USAGE, "%s: context \"%s\" names no cluster", ctx->id.where,
                     ctx->id.name);
    else if (!sel->cluster)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "%s: context \"%s\" refers to cluster \"%s\", which is "
                     "not defined in %s",
                     ctx->id.where, ctx->id.name, ctx->cluster, files);
    else if (!sel->cluster->server || !sel->cluster->server[0])
        rc = gc_fail(err, GC_EXIT_USAGE, "%s: cluster \"%s\" has no server", sel->cluster->id.where,
                     sel->cluster->id.name);
    else if (ctx->user && ctx->user[0] && !sel->user)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "%s: context \"%s\" refers to user \"%s\", which is not "
                     "defined in %s",
                     ctx->id.where, ctx->id.name, ctx->user, files);
    else if (sel->user)
        rc = check_user(sel->user, err);
    free(files);
    return rc;
}

int kube_select(const kube_config *cfg, const gc_kube_options *opts, kube_selection *sel,
                gc_error *err)
{
    memset(sel, 0, sizeof(*sel));
    const kube_context *ctx = NULL;
    bool by_cluster = (opts->cluster && opts->cluster[0]) || (opts->location && opts->location[0]);
    if (opts->context && opts->context[0]) {
        sel->how = "--context";
        ctx = kube_config_context(cfg, opts->context);
        if (!ctx) {
            char *what = gc_xasprintf("context \"%s\" (--context) is not defined", opts->context);
            fail_with_contexts(cfg, err, what, "check the name or pass --kubeconfig");
            free(what);
            return GC_EXIT_USAGE;
        }
    } else if (by_cluster) {
        sel->how = "--cluster/--location";
        if (!opts->cluster || !opts->cluster[0] || !opts->location || !opts->location[0])
            return gc_fail(err, GC_EXIT_USAGE,
                           "--%s needs --%s too: together (with --project) "
                           "they select the kubeconfig context gke_<project>_<location>_<cluster>",
                           opts->cluster && opts->cluster[0] ? "cluster" : "location",
                           opts->cluster && opts->cluster[0] ? "location (-l)" : "cluster (-c)");
        int rc = find_gke_context(cfg, opts, &ctx, err);
        if (rc)
            return rc;
    } else {
        sel->how = "current-context";
        if (!cfg->current_context)
            return fail_with_contexts(cfg, err, "no cluster selected: there is no current-context",
                                      "pass --cluster and --location (GKE), or --context");
        ctx = kube_config_context(cfg, cfg->current_context);
        if (!ctx) {
            char *what =
                gc_xasprintf("current-context \"%s\" is not defined", cfg->current_context);
            fail_with_contexts(cfg, err, what, "pass --context, or fix current-context");
            free(what);
            return GC_EXIT_USAGE;
        }
    }
    return resolve(cfg, ctx, sel, err);
}
