/*
 * Independent reads sent together (gc_kube_read_all): a submit's pre-flight lists, inspect's
 * pods and events next to the JobSet, a submit's dry runs of its Jobs. Their first requests go
 * out in one batch (kube_request_run_all); what follows (more pages, retries) goes one request
 * at a time, as gc_kube_list and gc_kube_get would.
 */
#include "kube/internal.h"

#include <stdlib.h>
#include <string.h>

/* One read's request: a list's first page, or a single request (a GET, a dry-run POST). */
typedef struct pending_read {
    kube_list_page page;
    kube_request single;
    kube_exchange single_exchange;
    char *body; /* a dry run's object as JSON */
} pending_read;

static const char *const dry_run_params[] = {"dryRun", "All", "fieldValidation", "Strict", NULL};

static kube_exchange *start_read(pending_read *p, gc_kube_read *r)
{
    if (r->dry_run) {
        p->body = json_dumps(r->dry_run, JSON_COMPACT);
        p->single = (kube_request){.method = "POST",
                                   .path = r->path,
                                   .extra = dry_run_params,
                                   .content_type = "application/json",
                                   .body = p->body,
                                   .body_len = p->body ? strlen(p->body) : 0,
                                   .idempotent = true};
        kube_exchange_init(&p->single_exchange, &p->single);
        return &p->single_exchange;
    }
    if (r->object) {
        p->single = (kube_request){.method = "GET", .path = r->path, .idempotent = true};
        kube_exchange_init(&p->single_exchange, &p->single);
        return &p->single_exchange;
    }
    kube_list_page_start(&p->page, r->path, r->opts, NULL, r->on_item, r->ctx, &r->err);
    return &p->page.x;
}

/* What gc_kube_get or gc_kube_list would have returned, given how the first request went. */
static int finish_read(gc_kube *k, pending_read *p, gc_kube_read *r, int rc)
{
    if (r->object || r->dry_run) {
        kube_exchange *x = &p->single_exchange;
        if (!rc && x->http.status >= 300)
            rc = kube_http_error(k, x, &r->err);
        if (!rc)
            rc = kube_decode_body(x, r->object, &r->err);
        kube_exchange_free(x);
        free(p->body);
        return rc;
    }
    json_t *head = NULL;
    long status = 0;
    rc = kube_list_page_end(k, &p->page, rc, &head, &status, &r->err);
    return kube_list_rest(k, r->path, r->opts, r->on_item, r->ctx, NULL, &r->err, rc, head, status);
}

int gc_kube_read_all(gc_kube *kube, gc_kube_read *reads, size_t count)
{
    pending_read *pending = gc_xcalloc(count, sizeof(*pending));
    kube_batch_entry *batch = gc_xcalloc(count, sizeof(*batch));
    for (size_t i = 0; i < count; i++) {
        gc_error_clear(&reads[i].err);
        if (reads[i].object)
            *reads[i].object = NULL;
        batch[i] =
            (kube_batch_entry){.x = start_read(&pending[i], &reads[i]), .err = &reads[i].err};
    }
    kube_request_run_all(kube, batch, count);
    int first_failure = 0;
    for (size_t i = 0; i < count; i++) {
        reads[i].rc = finish_read(kube, &pending[i], &reads[i], batch[i].rc);
        if (reads[i].rc && !first_failure)
            first_failure = reads[i].rc;
    }
    free(batch);
    free(pending);
    return first_failure;
}
