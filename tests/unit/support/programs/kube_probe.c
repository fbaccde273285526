/*
 * kube_probe: the kube client's verbs from the command line, for tests against a real API
 * server (tests/cluster/test_kube_client.py). Every command prints JSON on stdout and exits
 * with the client's return code.
 *
 *   kube_probe [--kubeconfig F] [--context C] [-n NS] [-v|-vv] COMMAND ARGS...
 *
 *   get PATH
 *   create COLLECTION FILE [strict] [dry-run]          FILE is JSON; "-" reads stdin
 *   apply PATH FILE [force] [dry-run] [strict] [manager=NAME]
 *   patch PATH FILE                                    JSON merge patch
 *   delete PATH [Foreground|Background|Orphan]
 *   list PATH [limit=N] [label=SEL] [field=SEL] [metadata]
 *   watch PATH SECONDS [label=SEL] [until=TYPE:NAME] [metadata]
 *   logs NS/POD/CONTAINER... [follow] [tail=N] [since=N] [timestamps] [for=SECONDS]
 *   namespace                                          the selected namespace and context
 *
 * Single answers print {"ok": true, "result": ..., "requests": N} or {"ok": false, "error":
 * ..., "http_status": ..., "reason": ...}. watch and logs print one JSON line per event or log
 * line as it arrives (flushed), then that summary line.
 */
#include "gcluster/kube.h"
#include "kube/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct probe {
    gc_kube *kube;
    int argc;
    char **argv;
} probe;

static const char *option(const probe *p, const char *name)
{
    size_t n = strlen(name);
    for (int i = 0; i < p->argc; i++)
        if (!strncmp(p->argv[i], name, n) && p->argv[i][n] == '=')
            return p->argv[i] + n + 1;
    return NULL;
}

static int flag(const probe *p, const char *name)
{
    for (int i = 0; i < p->argc; i++)
        if (!strcmp(p->argv[i], name))
            return 1;
    return 0;
}

static void print_line(json_t *doc)
{
    char *text = json_dumps(doc, JSON_COMPACT);
    printf("%s\n", text);
    fflush(stdout);
    free(text);
    json_decref(doc);
}

static int finish(const probe *p, int rc, json_t *result, const gc_error *err)
{
    json_t *doc = json_object();
    json_object_set_new(doc, "ok", json_boolean(rc == 0));
    if (rc == 0) {
        json_object_set_new(doc, "result", result ? result : json_null());
    } else {
        json_decref(result);
        json_object_set_new(doc, "error", json_string(err->message));
        json_object_set_new(doc, "http_status", json_integer(err->http_status));
        json_object_set_new(doc, "reason", json_string(err->reason));
    }
    json_object_set_new(doc, "requests",
                        json_integer(p->kube ? gc_kube_request_count(p->kube) : 0));
    print_line(doc);
    return rc;
}

static json_t *load_json(const char *file, gc_error *err)
{
    json_error_t jerr;
    json_t *doc = !strcmp(file, "-") ? json_loadf(stdin, 0, &jerr) : json_load_file(file, 0, &jerr);
    if (!doc)
        gc_fail(err, 2, "%s:%d:%d: %s", file, jerr.line, jerr.column, jerr.text);
    return doc;
}

static unsigned write_flags(const probe *p)
{
    return (flag(p, "strict") ? GC_KUBE_STRICT : 0) | (flag(p, "dry-run") ? GC_KUBE_DRY_RUN : 0) |
           (flag(p, "force") ? GC_KUBE_FORCE : 0);
}

static int cmd_write(probe *p, const char *verb, gc_error *err)
{
    if (p->argc < 2)
        return gc_fail(err, 2, "%s needs a path and a file", verb);
    json_t *body = load_json(p->argv[1], err), *out = NULL;
    if (!body)
        return finish(p, 2, NULL, err);
    int rc;
    if (!strcmp(verb, "create"))
        rc = gc_kube_create(p->kube, p->argv[0], body, write_flags(p), &out, err);
    else if (!strcmp(verb, "apply"))
        rc = gc_kube_apply(p->kube, p->argv[0], body, option(p, "manager"), write_flags(p), &out,
                           err);
    else
        rc = gc_kube_merge_patch(p->kube, p->argv[0], body, &out, err);
    json_decref(body);
    return finish(p, rc, out, err);
}

static int collect_name(json_t *item, void *ctx, gc_error *err)
{
    (void)err;
    const char *name =
        json_string_value(json_object_get(json_object_get(item, "metadata"), "name"));
    json_array_append_new(ctx, json_string(name ? name : ""));
    return 0;
}

static gc_kube_list_options list_options(const probe *p)
{
    const char *limit = option(p, "limit");
    return (gc_kube_list_options){.label_selector = option(p, "label"),
                                  .field_selector = option(p, "field"),
                                  .page_size = limit ? atol(limit) : 0,
                                  .accept = flag(p, "metadata") ? GC_KUBE_ACCEPT_METADATA : NULL};
}

static int cmd_list(probe *p, gc_error *err)
{
    gc_kube_list_options opts = list_options(p);
    json_t *names = json_array();
    char rv[64] = "";
    int rc = gc_kube_list(p->kube, p->argv[0], &opts, collect_name, names, rv, err);
    return finish(p, rc, json_pack("{s:o, s:s}", "names", names, "resourceVersion", rv), err);
}

typedef struct watch_state {
    const char *until; /* "TYPE:NAME" */
    int events;
} watch_state;

static int on_event(enum gc_kube_event_type type, json_t *obj, void *ctx, gc_error *err)
{
    (void)err;
    watch_state *w = ctx;
    static const char *const types[] = {"ADDED", "MODIFIED", "DELETED", "SYNCED"};
    const json_t *meta = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    print_line(json_pack("{s:s, s:s?, s:s?, s:s?}", "type", types[type], "name", name,
                         "resourceVersion", rv, "kind",
                         json_string_value(json_object_get(obj, "kind"))));
    w->events++;
    char here[512];
    snprintf(here, sizeof(here), "%s:%s", types[type], name ? name : "");
    return w->until && !strcmp(w->until, here) ? GC_KUBE_STOP : 0;
}

static int cmd_watch(probe *p, gc_error *err)
{
    if (p->argc < 2)
        return gc_fail(err, 2, "watch needs a path and seconds");
    gc_kube_list_options opts = list_options(p);
    watch_state w = {.until = option(p, "until")};
    int rc = gc_kube_list_watch(p->kube, p->argv[0], &opts, atoi(p->argv[1]), on_event, &w, err);
    return finish(p, rc, json_pack("{s:i}", "events", w.events), err);
}

typedef struct logs_state {
    time_t until;
    int lines;
    bool stopped; /* keep_going said stop: the streams ended because the caller asked */
} logs_state;

static int on_line(size_t index, const char *line, size_t len, void *ctx)
{
    logs_state *l = ctx;
    l->lines++;
    print_line(json_pack("{s:I, s:s%}", "index", (json_int_t)index, "line", line, len));
    return 0;
}

static bool keep_going(void *ctx)
{
    logs_state *l = ctx;
    l->stopped = l->until && time(NULL) >= l->until;
    return !l->stopped;
}

static int cmd_logs(probe *p, gc_error *err)
{
    gc_kube_log_source sources[64];
    char *copies[64];
    size_t n = 0;
    for (int i = 0; i < p->argc && n < 64; i++) {
        if (!strchr(p->argv[i], '/') || strchr(p->argv[i], '='))
            continue;
        char *s = copies[n] = strdup(p->argv[i]);
        char *pod = strchr(s, '/');
        *pod++ = '\0';
        char *container = strchr(pod, '/');
        if (container)
            *container++ = '\0';
        sources[n++] = (gc_kube_log_source){.ns = s, .pod = pod, .container = container};
    }
    const char *tail = option(p, "tail"), *since = option(p, "since"), *secs = option(p, "for");
    gc_kube_log_options opts = {.follow = flag(p, "follow"),
                                .tail_lines = tail ? atol(tail) : -1,
                                .since_seconds = since ? atol(since) : 0,
                                .timestamps = flag(p, "timestamps")};
    logs_state l = {.until = secs ? time(NULL) + atol(secs) : 0};
    int rc = gc_kube_logs(p->kube, sources, n, &opts, on_line, keep_going, &l, err);
    for (size_t i = 0; i < n; i++)
        free(copies[i]);
    return finish(p, rc, json_pack("{s:i, s:b}", "lines", l.lines, "stopped_by_caller", l.stopped),
                  err);
}

static int run(probe *p, const char *cmd, gc_error *err)
{
    json_t *out = NULL;
    if (!strcmp(cmd, "namespace"))
        return finish(p, 0,
                      json_pack("{s:s, s:s, s:s}", "namespace", gc_kube_namespace(p->kube),
                                "context", kube_context_name(p->kube), "server",
                                kube_server(p->kube)),
                      err);
    if (p->argc < 1)
        return finish(p, gc_fail(err, 2, "%s needs a path", cmd), NULL, err);
    if (!strcmp(cmd, "get")) {
        int rc = gc_kube_get(p->kube, p->argv[0], NULL, &out, err);
        return finish(p, rc, out, err);
    }
    if (!strcmp(cmd, "delete")) {
        const char *propagation = p->argc > 1 ? p->argv[1] : NULL;
        int rc = gc_kube_delete(p->kube, p->argv[0], propagation, &out, err);
        return finish(p, rc, out, err);
    }
    if (!strcmp(cmd, "create") || !strcmp(cmd, "apply") || !strcmp(cmd, "patch"))
        return cmd_write(p, cmd, err);
    if (!strcmp(cmd, "list"))
        return cmd_list(p, err);
    if (!strcmp(cmd, "watch"))
        return cmd_watch(p, err);
    if (!strcmp(cmd, "logs"))
        return cmd_logs(p, err);
    return finish(p, gc_fail(err, 2, "unknown command %s", cmd), NULL, err);
}

/* The client's traces, notices and warnings, one line each on stderr as the CLI shows them. */
static void to_stderr(void *ctx, gc_event_kind kind, const char *text)
{
    (void)ctx;
    const char *prefix = kind == GC_EVENT_WARNING  ? "gcluster: warning: "
                         : kind == GC_EVENT_NOTICE ? "gcluster: "
                                                   : "";
    fprintf(stderr, "%s%s\n", prefix, text);
}

int main(int argc, char **argv)
{
    static const gc_events events = {.emit = to_stderr};
    gc_kube_options opts = {.events = &events};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "--kubeconfig") && i + 1 < argc)
            opts.kubeconfig = argv[++i];
        else if (!strcmp(argv[i], "--context") && i + 1 < argc)
            opts.context = argv[++i];
        else if (!strcmp(argv[i], "-n") && i + 1 < argc)
            opts.ns = argv[++i];
        else if (!strcmp(argv[i], "-v"))
            opts.verbose = 1;
        else if (!strcmp(argv[i], "-vv"))
            opts.verbose = 2;
    }
    probe p = {.argc = argc - i - 1, .argv = argv + i + 1};
    gc_error err = {0};
    if (i >= argc)
        return finish(&p, gc_fail(&err, 2, "usage: kube_probe [options] COMMAND ARGS"), NULL, &err);
    int rc = gc_kube_open(&opts, &p.kube, &err);
    if (!rc)
        rc = run(&p, argv[i], &err);
    else
        finish(&p, rc, NULL, &err);
    gc_kube_close(p.kube);
    return rc;
}
