/*
 * Exec credential plugins (client.authentication.k8s.io/v1 and v1beta1), e.g. GKE's
 * gke-gcloud-auth-plugin.
 *
 * The plugin runs by argv, with the kubeconfig's `env` entries and KUBERNETES_EXEC_INFO added
 * to its environment only. Its stdout is a credential: it is parsed and never shown, not even
 * in a parse error (jansson's messages quote the input, so only line and column are kept), and
 * not at any -v level. An interactive plugin talks to the user on the terminal itself.
 */
#include "kube/internal.h"

#include "gcluster/process.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_PLUGIN_OUTPUT (1 << 20)

static int plugin_error(const gc_kube *k, const char *what, gc_error *err)
{
    const kube_user *u = k->sel.user;
    const char *hint = u->exec->install_hint;
    return gc_fail(err, GC_EXIT_RUNTIME,
                   "exec plugin \"%s\" of user \"%s\" (%s) %s; run it yourself to see its "
                   "message%s%s",
                   u->exec->command, u->id.name, u->exec->where, what, hint ? "; " : "",
                   hint ? hint : "");
}

static json_t *cluster_info(const gc_kube *k)
{
    const kube_cluster *c = k->sel.cluster;
    json_t *info = json_object();
    json_object_set_new(info, "server", json_string(c->server));
    if (c->tls_server_name)
        json_object_set_new(info, "tls-server-name", json_string(c->tls_server_name));
    if (c->insecure_skip_tls_verify)
        json_object_set_new(info, "insecure-skip-tls-verify", json_true());
    if (k->ca.data) {
        char *b64 = gc_base64_encode(k->ca.data, k->ca.len);
        json_object_set_new(info, "certificate-authority-data", json_string(b64));
        free(b64);
    }
    if (c->proxy_url)
        json_object_set_new(info, "proxy-url", json_string(c->proxy_url));
    if (c->disable_compression)
        json_object_set_new(info, "disable-compression", json_true());
    if (c->exec_config)
        json_object_set(info, "config", c->exec_config);
    return info;
}

/* The KUBERNETES_EXEC_INFO environment entry. */
static char *exec_info(const gc_kube *k, bool interactive)
{
    const kube_exec_config *x = k->sel.user->exec;
    json_t *spec = json_object();
    json_object_set_new(spec, "interactive", json_boolean(interactive));
    if (x->provide_cluster_info)
        json_object_set_new(spec, "cluster", cluster_info(k));
    json_t *cred = json_pack("{s:s, s:s, s:o}", "apiVersion", x->api_version, "kind",
                             "ExecCredential", "spec", spec);
    char *text = json_dumps(cred, JSON_COMPACT);
    char *entry = gc_xasprintf("KUBERNETES_EXEC_INFO=%s", text);
    free(text);
    json_decref(cred);
    return entry;
}

static int decide_interactive(const gc_kube *k, bool *interactive, gc_error *err)
{
    bool tty = isatty(STDIN_FILENO);
    switch (k->sel.user->exec->interactive_mode) {
    case KUBE_INTERACTIVE_NEVER:
        *interactive = false;
        return 0;
    case KUBE_INTERACTIVE_ALWAYS:
        *interactive = true;
        return tty ? 0
                   : plugin_error(k,
                                  "needs a terminal (interactiveMode: Always), but standard "
                                  "input is not one",
                                  err);
    default: /* IfAvailable, and v1beta1's default */
        *interactive = tty;
        return 0;
    }
}

static bool pem_field(const json_t *status, const char *key, kube_blob *out)
{
    const char *s = json_string_value(json_object_get(status, key));
    if (!s || !s[0])
        return false;
    out->len = strlen(s);
    out->data = (unsigned char *)gc_xstrdup(s);
    return true;
}

/* Reads the plugin's ExecCredential into cred. Messages never quote the output. */
static int parse_credential(const gc_kube *k, const gc_buf *out, kube_credential *cred,
                            gc_error *err)
{
    json_error_t jerr;
    json_t *doc = json_loadb(out->data, out->len, 0, &jerr);
    if (!doc) {
        char what[256];
        snprintf(what, sizeof(what),
                 "printed something that is not an ExecCredential (invalid "
                 "JSON at line %d, column %d; the output is not shown because it may hold "
                 "credentials)",
                 jerr.line, jerr.column);
        return plugin_error(k, what, err);
    }
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *version = json_string_value(json_object_get(doc, "apiVersion"));
    json_t *status = json_object_get(doc, "status");
    const char *token = json_string_value(json_object_get(status, "token"));
    const char *expiry = json_string_value(json_object_get(status, "expirationTimestamp"));
    int rc = 0;
    if (!kind || strcmp(kind, "ExecCredential"))
        rc = plugin_error(k, "printed JSON that is not an ExecCredential (kind differs)", err);
    else if (!version || strcmp(version, k->sel.user->exec->api_version))
        rc = plugin_error(k,
                          "answered with a different apiVersion than the kubeconfig's "
                          "exec.apiVersion",
                          err);
    else if (!json_is_object(status))
        rc = plugin_error(k, "printed an ExecCredential without status", err);
    else if (expiry && !gc_clock_parse_rfc3339(expiry, &cred->expiry))
        rc = plugin_error(k, "printed an expirationTimestamp that is not an RFC 3339 time", err);
    else if (token && token[0])
        cred->authorization = gc_xasprintf("Bearer %s", token);
    else if (!pem_field(status, "clientCertificateData", &cred->cert) ||
             !pem_field(status, "clientKeyData", &cred->key))
        rc = plugin_error(k,
                          "printed neither status.token nor both status.clientCertificateData "
                          "and status.clientKeyData",
                          err);
    if (!rc && cred->authorization && strpbrk(cred->authorization, "\r\n"))
        rc = plugin_error(k, "printed a token with a line break", err);
    json_decref(doc);
    return rc;
}

static int run_plugin(gc_kube *k, const char *program, bool interactive, gc_process *p,
                      gc_process_result *r, gc_error *err)
{
    const kube_exec_config *x = k->sel.user->exec;
    char **argv = gc_xcalloc(x->arg_count + 2, sizeof(*argv));
    argv[0] = x->command;
    for (size_t i = 0; i < x->arg_count; i++)
        argv[i + 1] = x->args[i];
    char **env = gc_xcalloc(x->env_count + 1, sizeof(*env));
    for (size_t i = 0; i < x->env_count; i++)
        env[i] = x->env[i];
    env[x->env_count] = exec_info(k, interactive);
    *p = (gc_process){.program = program,
                      .argv = argv,
                      .env_add = env,
                      .env_add_count = x->env_count + 1,
                      .interactive = interactive,
                      .timeout_ms = k->exec_timeout_ms,
                      .max_stdout = MAX_PLUGIN_OUTPUT};
    int rc = gc_process_run(p, r, err);
    k->exec_runs++;
    free(env[x->env_count]);
    free(env);
    free(argv);
    return rc;
}

int kube_exec_credential(gc_kube *k, kube_credential *cred, gc_error *err)
{
    const kube_exec_config *x = k->sel.user->exec;
    bool interactive;
    if (decide_interactive(k, &interactive, err))
        return err->code;
    char *program = gc_process_find_program(x->command);
    if (!program)
        return plugin_error(k,
                            strchr(x->command, '/') ? "does not exist or is not executable"
                                                    : "was not found on PATH",
                            err);
    gc_process p;
    gc_process_result r;
    int rc = run_plugin(k, program, interactive, &p, &r, err);
    /* Nothing the plugin printed is shown, not even its stderr: plugins have been known to
     * echo tokens there, so all plugin output stays out of messages and traces. */
    if (!rc && !gc_process_succeeded(&r)) {
        char how[256];
        gc_process_describe(&r, &p, how, sizeof(how));
        rc = plugin_error(k, how, err);
    }
    if (!rc)
        rc = parse_credential(k, &r.out, cred, err);
    if (!rc)
        kube_trace(k, "exec plugin %s: credential obtained%s", x->command,
                   cred->expiry ? "" : " (no expiry: kept for this run)");
    gc_process_result_free(&r);
    free(program);
    return rc;
}
