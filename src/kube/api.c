/*
 * The verbs: get, create, server-side apply, merge patch, delete.
 *
 * A create is the one write that is not idempotent. When its answer is lost (the connection
 * broke after sending, or a 5xx), the object is looked up by name: if it exists and was
 * created no earlier than the request, the create succeeded; if it does not exist, the POST
 * is sent once more. It is never re-sent while it might have been applied.
 */
#include "kube/internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_QUERY       16
#define CREATE_ATTEMPTS 2

int kube_http_error(const gc_kube *k, const kube_exchange *x, gc_error *err)
{
    int rc = kube_status_error(x->req, x->http.status, &x->http.body, err);
    if (x->http.status == 401) {
        const kube_user *u = k->sel.user;
        size_t len = strlen(err->message);
        snprintf(err->message + len, sizeof(err->message) - len,
                 "; the API server rejected the credentials of %s%s%s%s; %s", u ? "user \"" : "",
                 u ? u->id.name : "anonymous requests", u ? "\" from " : "", u ? u->id.where : "",
                 u && u->exec ? "for GKE, run `gcloud auth login` and `gcloud container clusters "
                                "get-credentials` again"
                              : "refresh the credentials in the kubeconfig");
    }
    return rc;
}

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

/* The server's clock now, as far as this client knows it. */
static time_t server_now(const gc_kube *k)
{
    return time(NULL) + (time_t)(k->clock_known ? k->clock_offset_s : 0);
}

/* After a lost answer: did our POST create `name`? 0 with *out set if so; KUBE_NOT_CREATED if
 * it does not exist; otherwise an error. */
#define KUBE_NOT_CREATED 101

static int check_created(gc_kube *k, const char *collection, const char *name, time_t sent_at,
                         const gc_error *lost, json_t **out, gc_error *err)
{
    char *path = gc_xasprintf("%s/%s", collection, name);
    json_t *obj = NULL;
    int rc = gc_kube_get(k, path, NULL, &obj, err);
    free(path);
    if (rc && err->http_status == 404)
        return KUBE_NOT_CREATED;
    if (rc) {
        gc_error_prefix(err,
                        "the answer to creating \"%s\" was lost (%s), and looking it up "
                        "failed too: ",
                        name, lost->message);
        return rc;
    }
    const char *ts =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "creationTimestamp"));
    time_t created = 0;
    /* creationTimestamp has whole seconds; without a Date header the clocks may differ more. */
    long slack = k->clock_known ? 2 : 120;
    if (ts && gc_clock_parse_rfc3339(ts, &created) && created >= sent_at - slack) {
        gc_notice(k->trace.events,
                  "the answer to creating \"%s\" was lost, but it exists now (created %s): the "
                  "create went through",
                  name, ts);
        if (out)
            *out = obj;
        else
            json_decref(obj);
        return 0;
    }
    gc_fail(err, GC_EXIT_RUNTIME, "\"%s\" already exists (created %s, before this request)", name,
            ts ? ts : "at an unknown time");
    json_decref(obj);
    err->http_status = 409;
    snprintf(err->reason, sizeof(err->reason), "AlreadyExists");
    return GC_EXIT_RUNTIME;
}

static bool answer_lost(const kube_exchange *x, int rc)
{
    if (rc)
        return x->http.sent;
    return x->http.status == 500 || x->http.status == 502 || x->http.status == 503 ||
           x->http.status == 504;
}

int gc_kube_create(gc_kube *kube, const char *collection_path, json_t *object, unsigned flags,
                   json_t **out, gc_error *err)
{
    if (out)
        *out = NULL;
    const char *q[MAX_QUERY] = {0};
    write_params(flags, q, 0);
    char *body = json_dumps(object, JSON_COMPACT);
    const char *name =
        json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
    /* A dry run stores nothing, so sending it again is harmless. */
    kube_request req = {.method = "POST",
                        .path = collection_path,
                        .extra = q,
                        .content_type = "application/json",
                        .body = body,
                        .body_len = body ? strlen(body) : 0,
                        .idempotent = (flags & GC_KUBE_DRY_RUN) != 0};
    kube_exchange x;
    kube_exchange_init(&x, &req);
    int rc = 0;
    for (int attempt = 1; attempt <= CREATE_ATTEMPTS; attempt++) {
        time_t sent_at = server_now(kube);
        rc = kube_request_run(kube, &x, err);
        if (req.idempotent || !answer_lost(&x, rc))
            break;
        if (!name) {
            if (!rc)
                rc = kube_http_error(kube, &x, err);
            gc_error_prefix(err,
                            "the answer to POST %s was lost, and the object's name was left "
                            "to the server (generateName), so whether it was created is unknown; "
                            "check before retrying: ",
                            collection_path);
            break;
        }
        gc_error lost = *err;
        if (!rc)
            kube_http_error(kube, &x, &lost);
        rc = check_created(kube, collection_path, name, sent_at, &lost, out, err);
        if (rc != KUBE_NOT_CREATED) {
            kube_exchange_free(&x);
            free(body);
            return rc;
        }
        *err = lost;
        rc = err->code;
        kube_trace(kube, "\"%s\" was not created; sending the create again", name);
    }
    if (!rc && x.http.status >= 300)
        rc = kube_http_error(kube, &x, err);
    if (!rc)
        rc = kube_decode_body(&x, out, err);
    kube_exchange_free(&x);
    free(body);
    return rc;
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
