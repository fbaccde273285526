/*
 * kubeconfig: the merged view of one or more kubeconfig files (private to kube/).
 *
 * Every value is validated for its type when a file is read, so that a malformed file is
 * reported with its file, line and column; whether the selected entries are complete (a server,
 * an existing cluster, a valid exec section) is checked only when a context is selected, as
 * kubectl does, so that one broken entry does not lock a user out of the others.
 */
#ifndef GCLUSTER_KUBE_KUBECONFIG_H
#define GCLUSTER_KUBE_KUBECONFIG_H

#include "gcluster/error.h"
#include "gcluster/kube.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Where a value came from, "file:line:column", for messages. */
#define KUBE_WHERE_MAX 512

/* The first member of every cluster, user and context: its name and where it was defined. */
typedef struct kube_entry {
    char *name;
    char where[KUBE_WHERE_MAX];
} kube_entry;

typedef struct kube_blob {
    unsigned char *data; /* decoded bytes (PEM), NUL-terminated; NULL when unset */
    size_t len;
} kube_blob;

enum kube_interactive {
    KUBE_INTERACTIVE_UNSET,
    KUBE_INTERACTIVE_NEVER,
    KUBE_INTERACTIVE_IF_AVAILABLE,
    KUBE_INTERACTIVE_ALWAYS,
    KUBE_INTERACTIVE_INVALID, /* reported when the user is selected */
};

typedef struct kube_exec_config {
    char where[KUBE_WHERE_MAX];
    char *api_version;
    char *command; /* as written, or resolved against the file's directory if it holds a '/' */
    char **args;
    size_t arg_count;
    char **env; /* "NAME=value", added to the plugin's environment only */
    size_t env_count;
    char *install_hint;
    bool provide_cluster_info;
    enum kube_interactive interactive_mode;
} kube_exec_config;

typedef struct kube_cluster {
    kube_entry id;
    char *server;
    char *ca_file; /* absolute, or relative to the current directory */
    kube_blob ca_data;
    bool insecure_skip_tls_verify;
    char *tls_server_name;
    char *proxy_url;
    bool disable_compression;
    json_t *exec_config; /* extensions["client.authentication.k8s.io/exec"], for the plugin */
} kube_cluster;

typedef struct kube_user {
    kube_entry id;
    char *token;
    char *token_file;
    char *client_certificate; /* paths */
    char *client_key;
    kube_blob client_certificate_data;
    kube_blob client_key_data;
    char *username;
    char *password;
    kube_exec_config *exec;
    char *auth_provider; /* name of a legacy auth-provider; not supported */
} kube_user;

typedef struct kube_context {
    kube_entry id;
    char *cluster;
    char *user;
    char *ns;
} kube_context;

typedef struct kube_config {
    kube_cluster *clusters;
    size_t cluster_count;
    kube_user *users;
    size_t user_count;
    kube_context *contexts;
    size_t context_count;
    char *current_context;
    char **files; /* the files that were read, in merge order */
    size_t file_count;
} kube_config;

/* Reads and merges `paths` in order: the first file that names a cluster, user or context, or
 * sets current-context, wins. Missing files are skipped unless `must_exist`. */
int kube_config_load_files(const char *const *paths, size_t count, bool must_exist,
                           kube_config *cfg, gc_error *err);

/* `explicit_path` (--kubeconfig), else $KUBECONFIG (a ':' list), else ~/.kube/config. */
int kube_config_load(const char *explicit_path, kube_config *cfg, gc_error *err);

/* The file `gcloud get-credentials` writes to for this configuration (the first candidate). */
char *kube_config_primary_file(const char *explicit_path);

void kube_config_free(kube_config *cfg);

const kube_context *kube_config_context(const kube_config *cfg, const char *name);
const kube_cluster *kube_config_cluster(const kube_config *cfg, const char *name);
const kube_user *kube_config_user(const kube_config *cfg, const char *name);

/* "a, b and c" for messages. Caller frees. */
char *kube_config_file_list(const kube_config *cfg);

/* The outcome of cluster selection. Pointers borrow from the kube_config. */
typedef struct kube_selection {
    const kube_context *context;
    const kube_cluster *cluster;
    const kube_user *user; /* NULL: the context names no user (anonymous) */
    const char *how;       /* "--context", "--cluster/--location", "current-context" */
} kube_selection;

/* Returned by kube_select when --cluster/--location matched no context, so that the caller can
 * try `gcloud container clusters get-credentials` and select again. err is filled in. */
#define KUBE_NO_GKE_CONTEXT 100

int kube_select(const kube_config *cfg, const gc_kube_options *opts, kube_selection *sel,
                gc_error *err);

/* Releases a blob, wiping it first: blobs hold client keys. */
void kube_blob_free(kube_blob *b);

/* Reads a whole file (at most `max` bytes) into `out`; on failure err says which file and why
 * (see gc_file_read). */
int kube_blob_read(const char *path, size_t max, kube_blob *out, gc_error *err);

#endif
