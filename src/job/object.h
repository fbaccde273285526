/*
 * Reading Kubernetes objects as the API server returns them (JSON): metadata fields, conditions,
 * quantities, a pod's requests as Kueue counts them, container states, and whether a pod's node
 * selection and tolerations let it onto a node (or a Kueue flavor). Every file of job/ reads
 * objects with these; they read only what they are given. Internal to job/.
 */
#ifndef GCLUSTER_JOB_OBJECT_H
#define GCLUSTER_JOB_OBJECT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

bool job_same(const char *a, const char *b); /* both set and equal */
const char *job_string(const json_t *object, const char *key);
/* The same, or `fallback` when the key is missing or not a string. */
const char *job_string_or(const json_t *object, const char *key, const char *fallback);
/* metadata[key], or metadata[section][key] (section "labels", "annotations"). */
const char *job_field(const json_t *object, const char *section, const char *key);

const json_t *job_condition(const json_t *object, const char *type);
bool job_condition_true(const json_t *object, const char *type);

/* The JobSet a Workload or pod belongs to (owner or label), else the object's own name. */
const char *job_owner_name(const json_t *object);
/* A pod's replicated job (label jobset.sigs.k8s.io/replicatedjob-name). */
const char *job_pod_role(const json_t *pod);
/* The JobSet's restarts so far and its failurePolicy.maxRestarts. */
long job_restarts(const json_t *jobset);
long job_max_restarts(const json_t *jobset);
/* "5m" for the time since `timestamp` (RFC 3339) at `now`; "" when either is unknown. */
void job_age(const char *timestamp, long long now, char *out, size_t size);

/* Kubernetes quantities ("16", "132Gi", "500m", "1.5e3") as numbers; -1 if not one. */
double job_quantity(const json_t *value);
/* A number back in the style of `like` ("2880Gi" style for memory, plain for counts). */
void job_format_quantity(double value, const char *resource, char *out, size_t size);

/* Kueue's view of a pod: its requests after the API server's defaulting (a limit stands in for
 * a missing request), containers and native sidecars together, an ordinary init container
 * counted only where it alone (beside the sidecars) asks for more. A new object: resource ->
 * amount. Submit's admission check and the why engine both count with it. */
json_t *job_pod_requests(const json_t *pod_spec);

/* Whether a pod spec's node selection (nodeSelector, and the required node affinity: its terms
 * ORed, each term's requirements ANDed) admits a node or flavor with `labels`. With `keys` (an
 * object whose member names are label keys), only requirements on those keys count and a term
 * left with none matches (Kueue compares a pod set with a flavor on the label keys of the
 * flavors of the resource group only); without, every requirement counts, as for a node. */
bool job_selection_matches(const json_t *pod_spec, const json_t *labels, const json_t *keys);
/* The first NoSchedule or NoExecute taint of `taints` that neither `tolerations` nor `more`
 * tolerates (PreferNoSchedule only steers the scheduler: it never keeps a pod off), or NULL. A
 * toleration tolerates a taint when its effect is empty or the same, its key empty or the same,
 * and its operator Exists or (Equal, the default) its value the same. */
const json_t *job_untolerated_taint(const json_t *taints, const json_t *tolerations,
                                    const json_t *more);
/* "key=value:Effect", as kubectl prints a taint. */
void job_taint_words(const json_t *taint, char *out, size_t size);

/* One container's state, as found by job_each_container. */
typedef struct container_state {
    const json_t *pod;
    const json_t *status; /* the container's status */
    const char *name;
    const char *reason; /* waiting or terminated reason */
    const char *message;
    int exit_code;
} container_state;

/* A container status's termination: the current one, else the last one (it restarted). */
const json_t *job_last_termination(const json_t *cs);
/* The first container (init containers first) for which `match` is true. */
bool job_each_container(const json_t *pod, bool (*match)(const json_t *cs, void *ctx), void *ctx,
                        container_state *out);

#endif
