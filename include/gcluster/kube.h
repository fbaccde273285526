/*
 * kube: a small Kubernetes REST client on libcurl and jansson.
 *
 * It knows Kubernetes (kubeconfig, credentials, verbs, Status errors, list paging, watch, pod
 * logs) and GKE's conventions for finding a cluster, but nothing about Pathways or JobSets.
 * Every function returns 0 or a GC_EXIT_* code with `err` filled in; HTTP failures also set
 * err->http_status and err->reason (the Kubernetes Status reason) so callers can branch on
 * NotFound/AlreadyExists without reading messages.
 *
 * One gc_kube holds one connection pool (connections are reused; HTTP/2 when the server offers
 * it) and one credential cache; it is not thread-safe.
 */
#ifndef GCLUSTER_KUBE_H
#define GCLUSTER_KUBE_H

#include "gcluster/error.h"
#include "gcluster/events.h"

#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

typedef struct gc_kube gc_kube;

/* How to find the cluster, and where the client reports what it does. */
typedef struct gc_kube_options {
    const char *kubeconfig; /* --kubeconfig; NULL: $KUBECONFIG (a ':' list), else ~/.kube/config */
    const char *context;    /* --context; wins over everything else */
    const char
        *cluster; /* --cluster/--location/--project select gke_<project>_<location>_<cluster> */
    const char *location;
    const char *project;
    const char *ns; /* --namespace; NULL: the context's namespace, else "default" */
    int verbose;    /* -v: one trace line per request (and headers at 2), secrets redacted */
    /* Traces (-v), notices ("running gcloud ... get-credentials", a skipped log stream, a create
     * whose answer was lost) and the API server's Warning headers; NULL: dropped. */
    const gc_events *events;
    bool allow_gcloud; /* may run `gcloud container clusters get-credentials` if no context */
    int exec_timeout_seconds;    /* exec credential plugin run time limit; <= 0: 60 */
    int request_timeout_seconds; /* the whole of one non-streaming request; <= 0: 60. A list
                                    read as it arrives: this long without content, and five
                                    times this in all (watches and log follows are not limited
                                    by it) */
    /* The wall clock that credential expiry times and Retry-After dates are compared with;
     * NULL: gc_clock_wall (gcluster/sys.h). Tests pass their own to move time on. */
    time_t (*wall_clock)(void);
} gc_kube_options;

/* Reads the kubeconfig and selects the context; sends nothing (the first request connects,
 * and an exec plugin runs only when a credential is first needed). Selection: --context; else
 * --cluster and --location (and --project) pick gke_<project>_<location>_<cluster> (without a
 * project: the one context ending in _<location>_<cluster>); if there is none and allow_gcloud
 * is set and gcloud is on PATH, gcloud writes it (with a notice); else current-context. A --cluster
 * that matches no context is an error, never a silent fallback to current-context. Bad kubeconfigs
 * and selections return GC_EXIT_USAGE. */

int gc_kube_open(const gc_kube_options *opts, gc_kube **out, gc_error *err);
void gc_kube_close(gc_kube *kube);

const char *gc_kube_namespace(const gc_kube *kube);
/* HTTP requests sent so far (retries included), for -v summaries and tests. */
unsigned gc_kube_request_count(const gc_kube *kube);
/* The round trips those requests cost: requests sent together (gc_kube_read_all, log streams)
 * while others are in flight share one; a request made from inside another's callback costs
 * its own. */
unsigned gc_kube_round_trip_count(const gc_kube *kube);

/* Query parameters are a NULL-terminated array of key, value, key, value, ...; values are
 * URL-encoded by the client. `query` may be NULL. */

/* Every `out` below may be NULL when the caller does not need the answer. */

/* GET; *out is the decoded JSON body (json_decref it). 404 → err->http_status == 404. */
int gc_kube_get(gc_kube *kube, const char *path, const char *const *query, json_t **out,
                gc_error *err);

enum gc_kube_write_flags {
    GC_KUBE_DRY_RUN = 1 << 0, /* dryRun=All: admission and schemas run, nothing is stored */
    GC_KUBE_STRICT = 1 << 1,  /* fieldValidation=Strict: unknown or duplicate fields are errors */
    GC_KUBE_FORCE = 1 << 2,   /* apply: take ownership of conflicting fields */
};

/* The annotation gc_kube_create adds to every object it creates (dry runs aside): a random id made
 * once per call, by which the client tells its own object from someone else's of the same name. */
#define GC_KUBE_SUBMISSION_ID "gcluster.google.com/submission-id"

/* POST to a collection, the object carrying a new GC_KUBE_SUBMISSION_ID annotation (the caller's
 * object is not changed). Never retried blindly: when the answer leaves open what happened (a
 * transport failure after sending, a 5xx, an AlreadyExists, a request libcurl re-sent), the
 * client reads the object by name: with this call's id it is the result (with a notice); with
 * another id or none, the error is AlreadyExists (err->http_status 409) naming its creation
 * time, and *out receives that other object (json_decref it); absent, the POST is sent again
 * (at most 3 times in all). 429 is retried (the server did
 * nothing). Dry runs are retried like reads. */
int gc_kube_create(gc_kube *kube, const char *collection_path, json_t *object, unsigned flags,
                   json_t **out, gc_error *err);

/* Several creates at once, each as gc_kube_create: their first POSTs go out together (one round
 * trip, as gc_kube_read_all's reads), then each answer is settled alone (an ambiguous one read by
 * name, a POST sent again only when its object is absent). Each entry's outcome is in its rc and
 * err; one failing does not stop the others, which were sent already. */
typedef struct gc_kube_create_request {
    const char *collection; /* the collection's path */
    const json_t *object;   /* not changed */
    unsigned flags;         /* GC_KUBE_DRY_RUN, GC_KUBE_STRICT */
    json_t **out;           /* may be NULL: as gc_kube_create's */
    int rc;                 /* out */
    gc_error err;           /* out */
} gc_kube_create_request;
void gc_kube_create_all(gc_kube *kube, gc_kube_create_request *creates, size_t count);

/* Server-side apply (PATCH application/apply-patch+yaml with a field manager). */
int gc_kube_apply(gc_kube *kube, const char *path, json_t *object, const char *field_manager,
                  unsigned flags, json_t **out, gc_error *err);

/* JSON merge patch (application/merge-patch+json). */
int gc_kube_merge_patch(gc_kube *kube, const char *path, json_t *patch, json_t **out,
                        gc_error *err);

/* DELETE with propagationPolicy ("Foreground", "Background", "Orphan" or NULL). A 404 on a
 * retry after a lost answer counts as success (the first attempt deleted it). */
int gc_kube_delete(gc_kube *kube, const char *path, const char *propagation, json_t **out,
                   gc_error *err);

typedef struct gc_kube_list_options {
    const char *label_selector;
    const char *field_selector;
    long page_size;     /* limit per request; 0 = server default (everything at once) */
    const char *accept; /* Accept header override, e.g. GC_KUBE_ACCEPT_METADATA; NULL = JSON */
    /* Only these fields of each item are decoded (a gc_json_load_fields shape, see
     * gcluster/json_scan.h); NULL: whole items. gc_kube_list only: gc_kube_list_watch
     * ignores it, as watch events arrive whole. */
    const json_t *fields;
    /* The consumer can forget the items it was given (it collects them and acts at the end):
     * when a page's answer breaks on the wire after handing out items, the list starts over from
     * its first page after this is called, rather than failing. NULL: such a list fails.
     * gc_kube_list and gc_kube_read_all only. */
    void (*on_restart)(void *ctx);
} gc_kube_list_options;

/* Items carry only apiVersion, kind and metadata (labels, annotations, timestamps): a fraction of
 * the bytes when nothing else is needed. */
#define GC_KUBE_ACCEPT_METADATA                                                                    \
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"

/* Called once per item (borrowed: json_incref to keep it; kind and apiVersion are filled in
 * from the list); return 0 to continue, GC_KUBE_STOP to end the list successfully, or a
 * GC_EXIT_* code (with err set) to fail. */
typedef int (*gc_kube_item_fn)(json_t *item, void *ctx, gc_error *err);

/* Lists a collection page by page (limit/continue), calling `on_item` for every item as soon as
 * it has arrived, so memory holds one item, not a page (an item over 64 MiB is an error). A page
 * whose answer breaks before any of its items was handed out is asked again (like any read); one
 * that breaks after some were starts the list over when opts->on_restart says the consumer can
 * forget them, and fails it otherwise. `resource_version` (may be NULL) receives the list's
 * resourceVersion for a following watch. An expired continue token (410) also restarts the list
 * from the beginning (calling on_restart when set, else on_item may then see an item twice); at
 * most 3 restarts in all. */
int gc_kube_list(gc_kube *kube, const char *path, const gc_kube_list_options *opts,
                 gc_kube_item_fn on_item, void *ctx, char resource_version[64], gc_error *err);

/* One read of a gc_kube_read_all batch: a list (gc_kube_list's arguments); with `object` set, a
 * GET of the one object `path` names; or, with `dry_run` set, a server-side dry run of creating
 * that object in the collection `path` (dryRun=All, fieldValidation=Strict), which stores
 * nothing, so it batches and retries like a read. */
typedef struct gc_kube_read {
    const char *path;
    const gc_kube_list_options *opts; /* lists */
    gc_kube_item_fn on_item;          /* lists: called for every item */
    void *ctx;                        /* of on_item */
    json_t **object;                  /* gets and dry runs: receives the answer (json_decref it);
                                         may be NULL for a dry run */
    const json_t *dry_run;            /* dry runs: the object to create */
    int rc;                           /* out: what gc_kube_list or gc_kube_get returned */
    gc_error err;                     /* out: why it failed */
} gc_kube_read;

/* Several independent reads at once: their requests (a list's first page) go out together, each
 * on a connection of its own (reused afterwards), one round trip instead of one each; further pages
 * and retries follow one at a time. Items of different lists may interleave. Returns the first
 * failing read's rc (its reason in reads[i].err), or 0. */
int gc_kube_read_all(gc_kube *kube, gc_kube_read *reads, size_t count);

/*
 * Background reads: gc_kube_read_all's GETs started without waiting for them, whose answers
 * arrive while gc_kube_background_poll waits on the caller's file descriptors. Each read is a
 * GET of `path` (with opts->label_selector and field_selector as the query) whose whole answer,
 * a list or an object, goes to *read->object; `on_item` is not used. The reads go out together,
 * a connection each, which later rounds reuse. A round is not retried: its failures are in each
 * read's rc and err (a 401 drops the credential, so the next round gets a fresh one).
 */
typedef struct gc_kube_background gc_kube_background;

gc_kube_background *gc_kube_background_new(gc_kube *kube);
/* Frees it, abandoning reads under way. */
void gc_kube_background_free(gc_kube_background *b);
/* Starts a round; `reads` must live until it is done. Fails while a round is under way, and
 * when credentials cannot be had. */
int gc_kube_background_start(gc_kube_background *b, gc_kube_read *reads, size_t count,
                             gc_error *err);
/* poll(2) on `fds` and the round's sockets, for up to timeout_ms (-1: no limit), then moves the
 * round along. Returns poll's count of `fds` entries with revents (0 on timeout), or -1 with
 * errno. */
int gc_kube_background_poll(gc_kube_background *b, struct pollfd *fds, size_t count,
                            int timeout_ms);
/* Whether the round is over (every read's rc, err and object are set); true before any. */
bool gc_kube_background_done(const gc_kube_background *b);

enum gc_kube_event_type {
    GC_KUBE_ADDED,
    GC_KUBE_MODIFIED,
    GC_KUBE_DELETED,
    GC_KUBE_SYNCED, /* object NULL: every existing object has been announced (after each list) */
};

/* Return 0 to keep watching, GC_KUBE_STOP to end the watch successfully, or a GC_EXIT_* code. */
#define GC_KUBE_STOP (-1)
typedef int (*gc_kube_event_fn)(enum gc_kube_event_type type, json_t *object, void *ctx,
                                gc_error *err);

/* List then watch (like an informer): `on_event` first sees every existing object as ADDED,
 * then one GC_KUBE_SYNCED, then changes as they happen (objects are borrowed). Bookmarks are
 * requested and followed; dropped connections resume from the last resourceVersion; 410 Gone
 * re-lists (objects are re-announced as ADDED, and objects that vanished meanwhile are announced as
 * DELETED with their last known state). Connections that break, are refused or answer 429/5xx
 * (an API server restarting) are made again with capped, jittered backoff, said as notices
 * ("connection to the API server lost (...); reconnecting in 2.0 s (attempt 3)", then
 * "reconnected to the API server"), and a connection silent for 30 s is replaced; only answers
 * that trying again cannot change (403, 404, a certificate problem) end the watch with an error.
 * Ends when on_event returns GC_KUBE_STOP (returns 0) or a GC_EXIT_* code (returned), or after
 * `timeout_seconds` (> 0) with GC_EXIT_RUNTIME and err->reason "Timeout". timeout_seconds <= 0
 * waits forever. */
int gc_kube_list_watch(gc_kube *kube, const char *path, const gc_kube_list_options *opts,
                       int timeout_seconds, gc_kube_event_fn on_event, void *ctx, gc_error *err);

/* One container's log stream. */
typedef struct gc_kube_log_source {
    const char *ns; /* NULL: the client's namespace */
    const char *pod;
    const char *container; /* required when the pod has several containers */
} gc_kube_log_source;

typedef struct gc_kube_log_options {
    bool follow;
    long tail_lines;    /* < 0: all */
    long since_seconds; /* <= 0: from the start */
    bool timestamps;    /* keep the kubelet's time stamp in front of each line */
    /* Without follow (and once keep_going has ended following): a stream that sends nothing
     * for this long is taken as broken and resumed; <= 0: 20. A followed stream may be quiet
     * for as long as its container is; dead connections are found by TCP keepalive. */
    int stall_seconds;
} gc_kube_log_options;

/* Called with one complete line (without its newline; not NUL-terminated) from source
 * `index`; a last line without a newline is delivered when its stream ends. Return non-zero
 * to end all streams. */
typedef int (*gc_kube_log_line_fn)(size_t index, const char *line, size_t len, void *ctx);
/* Polled about once a second while following; return false to end following. */
typedef bool (*gc_kube_log_continue_fn)(void *ctx);

/* Without follow, gc_kube_logs keeps at most this many log streams open at once (the next
 * starts when one ends), so its memory does not grow with the number of containers. */
#define GC_KUBE_LOGS_MAX_OPEN 100

/* Streams the logs of several containers at once over one connection pool (HTTP/2 streams
 * when available; following, all at once, else at most GC_KUBE_LOGS_MAX_OPEN at a time), delivering
 * whole lines, each exactly once: a stream that breaks (a reset or cut connection, an API server
 * restart, no bytes for stall_seconds) is asked again from its last line's time stamp and the lines
 * already delivered are dropped; a container that restarted meanwhile is read to the end of the
 * instance that was being read, then (following) from the start of its new one, with a notice.
 *
 * With `follow`, broken streams are reconnected for as long as the caller follows (a notice
 * says so while the API server cannot be reached), and a stream whose container exited is asked
 * again now and then, as the container may restart, until `keep_going` (may be NULL: streams
 * then end with their containers) returns false; each stream then reads what is left and ends.
 * Without follow a broken stream is resumed a bounded number of times.
 *
 * Returns when every stream has ended. A stream that never started (a container still waiting)
 * is skipped with a notice ("no logs from pod/container: ..."), and is an error only when every
 * stream is. A stream that broke and could not be resumed makes it GC_EXIT_INCOMPLETE, the
 * message naming the pod, the container and the time after which lines may be missing. */
int gc_kube_logs(gc_kube *kube, const gc_kube_log_source *sources, size_t count,
                 const gc_kube_log_options *opts, gc_kube_log_line_fn on_line,
                 gc_kube_log_continue_fn keep_going, void *ctx, gc_error *err);

/* The API server's canonical spelling ("2000G" -> "2T"); NULL if `text` is not a quantity.
 * Caller frees. */
char *gc_quantity_canonical(const char *text);
/* The amount as a number ("132Gi" -> 141733920768, "500m" -> 0.5); -1 if not a quantity. */
double gc_quantity_value(const char *text);

/* Builds "/apis/<group>/<version>/namespaces/<ns>/<resource>[/<name>]" (group NULL or "" for the
 * core API "/api/v1/..."); ns NULL for cluster-scoped resources. Caller frees. */
char *gc_kube_path(const char *group, const char *version, const char *ns, const char *resource,
                   const char *name);

/* Reading Kubernetes objects as the API server returns them (JSON): metadata fields, conditions,
 * quantities, a pod's requests as Kueue counts them, container states, and whether a pod's node
 * selection and tolerations let it onto a node (or a Kueue flavor). They read only what they are
 * given, and an absent or mistyped field reads as missing. */

bool gc_kube_same(const char *a, const char *b); /* both set and equal */
const char *gc_kube_string(const json_t *object, const char *key);
/* The same, or `fallback` when the key is missing or not a string. */
const char *gc_kube_string_or(const json_t *object, const char *key, const char *fallback);
/* metadata[key], or metadata[section][key] (section "labels", "annotations"). */
const char *gc_kube_field(const json_t *object, const char *section, const char *key);

const json_t *gc_kube_condition(const json_t *object, const char *type);
bool gc_kube_condition_true(const json_t *object, const char *type);

/* Kubernetes quantities ("16", "132Gi", "500m", "1.5e3") as numbers; -1 if not one. */
double gc_kube_quantity(const json_t *value);
/* A number back in the style of `like` ("2880Gi" style for memory, plain for counts). */
void gc_kube_format_quantity(double value, const char *resource, char *out, size_t size);

/* Kueue's view of a pod: its requests after the API server's defaulting (a limit stands in for
 * a missing request), containers and native sidecars together, an ordinary init container
 * counted only where it alone (beside the sidecars) asks for more. A new object: resource ->
 * amount. Submit's admission check and the why engine both count with it. */
json_t *gc_kube_pod_requests(const json_t *pod_spec);

/* Whether a pod spec's node selection (nodeSelector, and the required node affinity: its terms
 * ORed, each term's requirements ANDed) admits a node or flavor with `labels`. With `keys` (an
 * object whose member names are label keys), only requirements on those keys count and a term
 * left with none matches (Kueue compares a pod set with a flavor on the label keys of the
 * flavors of the resource group only); without, every requirement counts, as for a node. */
bool gc_kube_selection_matches(const json_t *pod_spec, const json_t *labels, const json_t *keys);
/* The first NoSchedule or NoExecute taint of `taints` that neither `tolerations` nor `more`
 * tolerates (PreferNoSchedule only steers the scheduler: it never keeps a pod off), or NULL. A
 * toleration tolerates a taint when its effect is empty or the same, its key empty or the same,
 * and its operator Exists or (Equal, the default) its value the same. */
const json_t *gc_kube_untolerated_taint(const json_t *taints, const json_t *tolerations,
                                        const json_t *more);
/* "key=value:Effect", as kubectl prints a taint. */
void gc_kube_taint_words(const json_t *taint, char *out, size_t size);

/* One container's state, as found by gc_kube_each_container. */
typedef struct gc_kube_container_state {
    const json_t *pod;
    const json_t *status; /* the container's status */
    const char *name;
    const char *reason; /* waiting or terminated reason */
    const char *message;
    int exit_code;
} gc_kube_container_state;

/* A container status's termination: the current one, else the last one (it restarted). */
const json_t *gc_kube_last_termination(const json_t *cs);
/* The first container (init containers first) for which `match` is true. */
bool gc_kube_each_container(const json_t *pod, bool (*match)(const json_t *cs, void *ctx),
                            void *ctx, gc_kube_container_state *out);

/* Kubernetes name forms (kube/names.c). A DNS-1123 label (namespaces, container names, most
 * object names): 1 to 63 lower-case letters, digits and '-', alphanumeric at both ends. */
bool gc_kube_is_dns_label(const char *s);
/* A DNS-1035 label (Service names, JobSet names, whose Services take them): the same, starting
 * with a letter. */
bool gc_kube_is_dns1035_label(const char *s);
/* A DNS-1123 subdomain (object names, label key prefixes): 1 to 253 lower-case letters, digits,
 * '-' and '.', alphanumeric at both ends. */
bool gc_kube_is_dns_subdomain(const char *s);
/* A label value: empty, or at most 63 of [A-Za-z0-9-_.] starting and ending alphanumeric. */
bool gc_kube_is_label_value(const char *s);
/* A label key: an optional DNS subdomain prefix and '/', then a non-empty name of the label
 * value's form. */
bool gc_kube_is_label_key(const char *s);

#endif
