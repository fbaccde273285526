/*
 * The verbs: get, create, server-side apply, merge patch, delete.
 *
 * A create is the one write that is not idempotent. Each carries a random submission id (an
 * annotation) made once per call. When its answer leaves open what happened (the connection
 * broke after sending, a 5xx, or an AlreadyExists that may answer our own earlier copy), the
 * object is read by name: with our id it is ours and the create succeeded; with another id or
 * none it is someone else's; absent, the POST is sent once more. Creation times cannot decide
 * this: another client's object made in the same second looks just like ours. A create is never
 * re-sent while it might have been applied. Several creates may go out together
 * (gc_kube_create_all): their first attempts share one round trip, then each is settled alone.
 */
#include "kube/internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define MAX_QUERY       16
#define CREATE_ATTEMPTS 3

int kube_decode_body(const kube_exchange *x, json_t **out, gc_error *err)
{
    if (!out)
        return 0;
    if (!x->http.body.len) {
        *out = json_object();
        return 0;
    }
    json_error_t jerr;
    *out = json_loadb(x->http.body.data, x->http.body.len, 0, &jerr);
    if (*out)
        return 0;
    return gc_fail(err, GC_EXIT_RUNTIME,
                   "%s %s: the API server answered HTTP %ld with a body "
                   "that is not JSON (%s at line %d, column %d)",
                   x->req->method, x->req->path, x->http.status, jerr.text, jerr.line, jerr.column);
}

static int call(gc_kube *k, const kube_request *req, json_t **out, gc_error *err)
{
    if (out)
        *out = NULL;
    kube_exchange x;
    kube_exchange_init(&x, req);
    int rc = kube_request_run(k, &x, err);
    if (!rc && x.http.status >= 300)
        rc = kube_http_error(k, &x, err);
    if (!rc)
        rc = kube_decode_body(&x, out, err);
    kube_exchange_free(&x);
    return rc;
}

/* Query parameters a write flag stands for. */
static size_t write_params(unsigned flags, const char **q, size_t n)
{
    if (flags & GC_KUBE_DRY_RUN) {
        q[n++] = "dryRun";
        q[n++] = "All";
    }
    if (flags & GC_KUBE_STRICT) {
        q[n++] = "fieldValidation";
        q[n++] = "Strict";
    }
    return n;
}

int gc_kube_get(gc_kube *kube, const char *path, const char *const *query, json_t **out,
                gc_error *err)
{
    kube_request req = {.method = "GET", .path = path, .query = query, .idempotent = true};
    return call(kube, &req, out, err);
}

/* A random submission id: 128 bits, hex. Unique across processes and machines, which the
 * client's jitter generator is not meant to be. */
static void new_submission_id(gc_kube *k, char out[33])
{
    unsigned char bytes[16];
    if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes))
        for (size_t i = 0; i < sizeof(bytes); i++) /* no getrandom: unique enough for one name */
            bytes[i] = (unsigned char)kube_random(k, 256);
    for (size_t i = 0; i < sizeof(bytes); i++)
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
}

static const char *submission_id_of(const json_t *obj)
{
    const json_t *annotations = json_object_get(json_object_get(obj, "metadata"), "annotations");
    return json_string_value(json_object_get(annotations, GC_KUBE_SUBMISSION_ID));
}

/* After an answer that leaves it open whether our POST created `name`: reads the object and
 * decides by its submission id. 0 with *out set when it is ours; KUBE_NOT_CREATED when it does
 * not exist; otherwise an error: AlreadyExists, with *out set, for someone else's. */
#define KUBE_NOT_CREATED 101

static int check_created(gc_kube *k, const char *collection, const char *name, const char *id,
                         const gc_error *why, json_t **out, gc_error *err)
{
    char *path = gc_xasprintf("%s/%s", collection, name);
    json_t *obj = NULL;
    int rc = gc_kube_get(k, path, NULL, &obj, err);
    free(path);
    if (rc && err->http_status == 404)
        return KUBE_NOT_CREATED;
    if (rc) {
        gc_error_prefix(err,
                        "whether \"%s\" was created is unknown (%s), and looking it up "
                        "failed too: ",
                        name, why->message);
        return rc;
    }
    const char *found = submission_id_of(obj);
    const char *ts =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "creationTimestamp"));
    if (found && !strcmp(found, id)) {
        gc_notice(k->trace.events,
                  "the answer to creating \"%s\" was lost (%s), but it exists with this "
                  "request's submission id: it was created",
                  name, why->message);
        if (out)
            *out = obj;
        else
            json_decref(obj);
        return 0;
    }
    gc_fail(err, GC_EXIT_RUNTIME, "\"%s\" already exists (created %s, not by this request)", name,
            ts ? ts : "at an unknown time");
    if (out)
        *out = obj; /* the caller may want to say what it is */
    else
        json_decref(obj);
    err->http_status = 409;
    snprintf(err->reason, sizeof(err->reason), "AlreadyExists");
    return GC_EXIT_RUNTIME;
}

/* Whether the create's answer leaves it open what happened: lost after sending, a 5xx, or an
 * AlreadyExists that may answer our own earlier copy (re-sent by libcurl, which we see, or by a
 * proxy on the way, which we cannot: so every one is checked). */
static bool ambiguous(const kube_exchange *x, int rc)
{
    if (rc)
        return x->http.sent;
    long status = x->http.status;
    return status == 500 || status == 502 || status == 503 || status == 504 || status == 409;
}

/* The reason of an answer: a 409 that is not AlreadyExists (a Conflict on a resourceVersion) is
 * an answer to report, not an ambiguity. */
static bool already_exists(const gc_kube *k, const kube_exchange *x)
{
    gc_error e = {0};
    kube_http_error(k, x, &e);
    return !strcmp(e.reason, "AlreadyExists");
}

/* A POST whose answer is lost when the object's name is left to the server cannot be checked. */
static int unknown_outcome(gc_kube *kube, const kube_exchange *x, const char *collection, int rc,
                           gc_error *err)
{
    if (!rc)
        rc = kube_http_error(kube, x, err);
    gc_error_prefix(err,
                    "the answer to POST %s was lost, and the object's name was left to the "
                    "server (generateName), so whether it was created is unknown; check before "
                    "retrying: ",
                    collection);
    return rc;
}

/* One create under way: its request (the object with its submission id) and first exchange. */
typedef struct pending_create {
    const char *collection;
    const char *name;
    bool idempotent;
    char id[33];
    char *body;
    const char *q[MAX_QUERY];
    kube_request req;
    kube_exchange x;
} pending_create;

static void create_start(gc_kube *kube, pending_create *c, const char *collection_path,
                         const json_t *object, unsigned flags)
{
    memset(c, 0, sizeof(*c));
    c->collection = collection_path;
    write_params(flags, c->q, 0);
    c->name = json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
    /* A dry run stores nothing, so sending it again is harmless. */
    c->idempotent = (flags & GC_KUBE_DRY_RUN) != 0;
    json_t *sent = json_deep_copy(object);
    if (!c->idempotent && c->name) {
        new_submission_id(kube, c->id);
        json_t *meta = json_object_get(sent, "metadata");
        if (!json_is_object(json_object_get(meta, "annotations")))
            json_object_set_new(meta, "annotations", json_object());
        json_object_set_new(json_object_get(meta, "annotations"), GC_KUBE_SUBMISSION_ID,
                            json_string(c->id));
    }
    c->body = json_dumps(sent, JSON_COMPACT);
    json_decref(sent);
    c->req = (kube_request){.method = "POST",
                            .path = collection_path,
                            .extra = c->q,
                            .content_type = "application/json",
                            .body = c->body,
                            .body_len = c->body ? strlen(c->body) : 0,
                            .idempotent = c->idempotent};
    kube_exchange_init(&c->x, &c->req);
}

/* After the first attempt (its outcome `rc`, `err`): the answer, or, when it leaves open what
 * happened, the object read by name and the POST sent again only when it is absent. */
static int create_end(gc_kube *kube, pending_create *c, int rc, json_t **out, gc_error *err)
{
    const char *name = c->name;
    kube_exchange *x = &c->x;
    for (int attempt = 1; attempt <= CREATE_ATTEMPTS; attempt++) {
        if (attempt > 1)
            rc = kube_request_run(kube, x, err);
        if (c->idempotent || !ambiguous(x, rc))
            break;
        if (!rc && x->http.status == 409 && (!c->id[0] || !already_exists(kube, x)))
            break;
        if (!name) {
            rc = unknown_outcome(kube, x, c->collection, rc, err);
            break;
        }
        gc_error why = *err;
        if (!rc)
            kube_http_error(kube, x, &why);
        if (x->http.resent)
            gc_error_prefix(&why, "the connection died and libcurl sent the request again: ");
        rc = check_created(kube, c->collection, name, c->id, &why, out, err);
        if (rc != KUBE_NOT_CREATED) {
            kube_exchange_free(x);
            free(c->body);
            return rc;
        }
        *err = why;
        rc = err->code ? err->code : GC_EXIT_RUNTIME;
        kube_trace(kube, "\"%s\" was not created; sending the create again", name);
    }
    if (!rc && x->http.status >= 300)
        rc = kube_http_error(kube, x, err);
    if (!rc)
        rc = kube_decode_body(x, out, err);
    kube_exchange_free(x);
    free(c->body);
    return rc;
}

int gc_kube_create(gc_kube *kube, const char *collection_path, json_t *object, unsigned flags,
                   json_t **out, gc_error *err)
{
    if (out)
        *out = NULL;
    pending_create c;
    create_start(kube, &c, collection_path, object, flags);
    int rc = kube_request_run(kube, &c.x, err);
    return create_end(kube, &c, rc, out, err);
}

void gc_kube_create_all(gc_kube *kube, gc_kube_create_request *creates, size_t count)
{
    pending_create *pending = gc_xcalloc(count ? count : 1, sizeof(*pending));
    kube_batch_entry *batch = gc_xcalloc(count ? count : 1, sizeof(*batch));
    for (size_t i = 0; i < count; i++) {
        gc_error_clear(&creates[i].err);
        if (creates[i].out)
            *creates[i].out = NULL;
        create_start(kube, &pending[i], creates[i].collection, creates[i].object, creates[i].flags);
        batch[i] = (kube_batch_entry){.x = &pending[i].x, .err = &creates[i].err};
    }
    kube_request_run_all(kube, batch, count);
    for (size_t i = 0; i < count; i++)
        creates[i].rc = create_end(kube, &pending[i], batch[i].rc, creates[i].out, &creates[i].err);
    free(batch);
    free(pending);
}

/* A PATCH is idempotent: the same patch applied twice leaves the same object. */
static int send_patch(gc_kube *kube, const char *path, const char *content_type, json_t *patch,
                      const char *const *query, json_t **out, gc_error *err)
{
    char *body = json_dumps(patch, JSON_COMPACT);
    kube_request req = {.method = "PATCH",
                        .path = path,
                        .extra = query,
                        .content_type = content_type,
                        .body = body,
                        .body_len = body ? strlen(body) : 0,
                        .idempotent = true};
    int rc = call(kube, &req, out, err);
    free(body);
    return rc;
}

int gc_kube_apply(gc_kube *kube, const char *path, json_t *object, const char *field_manager,
                  unsigned flags, json_t **out, gc_error *err)
{
    const char *q[MAX_QUERY] = {"fieldManager", field_manager ? field_manager : "gcluster"};
    size_t n = write_params(flags, q, 2);
    if (flags & GC_KUBE_FORCE) {
        q[n++] = "force";
        q[n++] = "true";
    }
    /* JSON is YAML, and apply-patch+yaml is the only content type apply accepts. */
    return send_patch(kube, path, "application/apply-patch+yaml", object, q, out, err);
}

int gc_kube_merge_patch(gc_kube *kube, const char *path, json_t *patch, json_t **out, gc_error *err)
{
    return send_patch(kube, path, "application/merge-patch+json", patch, NULL, out, err);
}

int gc_kube_delete(gc_kube *kube, const char *path, const char *propagation, json_t **out,
                   gc_error *err)
{
    if (out)
        *out = NULL;
    const char *q[] = {propagation ? "propagationPolicy" : NULL, propagation, NULL};
    kube_request req = {.method = "DELETE", .path = path, .extra = q, .idempotent = true};
    kube_exchange x;
    kube_exchange_init(&x, &req);
    int rc = kube_request_run(kube, &x, err);
    /* A 404 after a lost answer means the first attempt did the deletion. */
    if (!rc && x.http.status == 404 && x.retried_after_send) {
        if (out)
            *out = json_pack("{s:s, s:s, s:s}", "kind", "Status", "apiVersion", "v1", "status",
                             "Success");
    } else {
        if (!rc && x.http.status >= 300)
            rc = kube_http_error(kube, &x, err);
        if (!rc)
            rc = kube_decode_body(&x, out, err);
    }
    kube_exchange_free(&x);
    return rc;
}
