/*
 * job connect (see gcluster/connect.h): one thread and one poll loop over the stop descriptor,
 * the command's exit descriptor, the local listener, the tunnel's socket, every local client and,
 * through gc_kube_background_poll, the reads that check on the job every few seconds, so
 * forwarding never waits for the API. Only opening a tunnel blocks (TCP, TLS and one round
 * trip), and only when there is no tunnel to forward on anyway. The listener, the local clients
 * and the bytes between them and the tunnel are kube/'s forwarder (gcluster/portforward.h); this
 * file decides where the tunnel goes, when a new one is needed, and what the user is told.
 */
#include "gcluster/connect.h"

#include "connect/connect_status.h"
#include "connect/ports.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/kueue.h"
#include "gcluster/manifest.h"
#include "gcluster/portforward.h"
#include "gcluster/process.h"
#include "gcluster/sys.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHECK_WAITING_MS 2000 /* while waiting: progress stays current */
#define CHECK_FORWARD_MS 5000 /* while forwarding: a replaced pod is noticed */
#define OPEN_TIMEOUT_MS  30000
#define REOPEN_DELAY_MS  250
#define REOPEN_DELAY_MAX 5000
#define REPORT_EVERY_MS  10000 /* failed connections and failed checks: one line per this */
#define COMMAND_GRACE_MS 5000
#define MAX_WAIT_MS      1000

typedef enum read_slot { READ_JOBSET, READ_PODS, READ_WORKLOADS, READ_COUNT } read_slot;

typedef struct connect_run {
    gc_kube *kube;
    const gc_connect_request *r;
    const gc_connect_hooks *hooks;
    const gc_events *ev;
    gc_connect_result *result;
    long long wait_ms;

    gc_kube_forwarder *fwd;
    connect_ports ports; /* --port: the extra ones */
    char listen[96];     /* "127.0.0.1:29000" as bound */
    char backend[128];   /* "JAX_BACKEND_TARGET=grpc://127.0.0.1:29000" */

    /* Checking on the job. */
    gc_kube_background *checks;
    char *jobset_path, *pods_path;
    char pods_selector[320], workloads_selector[160];
    gc_kube_list_options pods_opts, workloads_opts;
    const char *workloads_version; /* Kueue's API: the preferred one until it is not served */
    gc_kube_read reads[READ_COUNT];
    json_t *objects[READ_COUNT];
    size_t read_count;
    bool checking;
    long long next_check_ms;
    connect_view view;
    bool seen_job; /* its JobSet existed: a 404 now means it was deleted */
    char jobset_uid[64];
    long long check_failure_reported_ms;

    /* Where connections go. */
    bool have_target;
    char pod[256], pod_uid[64];
    connect_proxy_credentials credentials; /* of the target's proxy */
    char forwarded[256];                   /* the pod of the last tunnel that worked */
    char open_error[GC_ERROR_MAX];         /* why the last tunnel could not be opened */
    long long reopen_at_ms;
    int reopen_failures;
    bool healing;   /* a tunnel was lost: say so when the next one works */
    bool announced; /* the first tunnel worked: hooks->ready ran */
    long long wait_deadline_ms;
    char progress[1200];

    unsigned failures;
    char failure[256];
    long long failure_reported_ms;

    gc_process_child child;
    bool child_running;
    int stop_requests;
    bool stop_closed;
} connect_run;

/* What connect forwards to: a JobSet's head pod, or an SPS client's proxy pod. */
static const char *what(const connect_run *c)
{
    return c->r->proxy_job ? "proxy pod" : "head pod";
}

/* --- checking the request --------------------------------------------------------------- */

static int parse_wait(const gc_connect_request *r, long long *ms, gc_error *err)
{
    long seconds = 0;
    int rc = gc_clock_parse_duration("--wait", r->wait ? r->wait : GC_CONNECT_DEFAULT_WAIT,
                                     &seconds, err);
    *ms = seconds * 1000LL;
    return rc;
}

static int resolve_address(const gc_connect_request *r, struct addrinfo **res, gc_error *err)
{
    const char *address = r->address ? r->address : "127.0.0.1";
    char port[16];
    snprintf(port, sizeof(port), "%ld", r->local_port);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    int rc = getaddrinfo(address, port, &hints, res);
    if (rc)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--address %s: %s; give an address of this machine to listen on, such as "
                       "127.0.0.1 (the default), ::1 or 0.0.0.0",
                       address, gai_strerror(rc));
    return 0;
}

int gc_job_connect_check(const gc_connect_request *r, gc_error *err)
{
    int rc = gc_job_name_check(r->name, err);
    if (rc)
        return rc;
    if (r->local_port < 0 || r->local_port > 65535)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--local-port %ld: a TCP port is 1 to 65535 (0: any free port)",
                       r->local_port);
    long long ms;
    rc = parse_wait(r, &ms, err);
    if (rc)
        return rc;
    struct addrinfo *res;
    rc = resolve_address(r, &res, err);
    if (rc)
        return rc;
    freeaddrinfo(res);
    rc = connect_ports_parse(r, NULL, err);
    if (rc)
        return rc;
    if (r->command) {
        if (!r->command[0] || !r->command[0][0])
            return gc_fail(err, GC_EXIT_USAGE,
                           "nothing to run after --: give the command, as in `gcluster job "
                           "connect %s -- python3 train.py`",
                           r->name);
        char *program = gc_process_find_program(r->command[0]);
        if (!program)
            return gc_fail(err, GC_EXIT_USAGE,
                           "-- %s: no such program%s; give the command's path or put it on PATH",
                           r->command[0], strchr(r->command[0], '/') ? "" : " on PATH");
        free(program);
    }
    return 0;
}

/* --- the local listener ----------------------------------------------------------------- */

static bool is_loopback(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127;
    return a->ss_family == AF_INET6 &&
           IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

static bool is_unspecified(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
    return a->ss_family == AF_INET6 &&
           IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
}

/* What the listener is (as bound: a port 0 becomes the port the system chose) and the address a
 * client on this machine reaches it by. */
static void describe_listener(connect_run *c, const struct sockaddr_storage *bound)
{
    char host[INET6_ADDRSTRLEN] = "";
    char port[16] = "";
    getnameinfo((const struct sockaddr *)bound, sizeof(*bound), host, sizeof(host), port,
                sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
    bool v6 = bound->ss_family == AF_INET6;
    snprintf(c->listen, sizeof(c->listen), "%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
    const char *reach = is_unspecified(bound) ? (v6 ? "::1" : "127.0.0.1") : host;
    snprintf(c->backend, sizeof(c->backend), "JAX_BACKEND_TARGET=grpc://%s%s%s:%s", v6 ? "[" : "",
             reach, v6 ? "]" : "", port);
}

/* Bound before anything is waited for: a port in use fails now, not minutes later. */
static int listen_local(connect_run *c, gc_error *err)
{
    struct addrinfo *res;
    int rc = resolve_address(c->r, &res, err);
    if (rc)
        return rc;
    int e = gc_kube_forwarder_listen(res->ai_addr, res->ai_addrlen, &c->fwd);
    const char *address = c->r->address ? c->r->address : "127.0.0.1";
    if (!e && !(rc = connect_ports_parse(c->r, &c->ports, err)))
        rc = connect_ports_listen(&c->ports, res->ai_addr, res->ai_addrlen, address, err);
    freeaddrinfo(res);
    if (rc)
        return rc;
    if (e == EADDRINUSE)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "cannot listen on %s port %ld: it is in use (another job connect or "
                       "kubectl port-forward?); pick a free one with --local-port",
                       address, c->r->local_port);
    if (e)
        return gc_fail(err, GC_EXIT_RUNTIME, "cannot listen on %s port %ld: %s", address,
                       c->r->local_port, strerror(e));
    struct sockaddr_storage bound;
    gc_kube_forwarder_bound(c->fwd, &bound);
    describe_listener(c, &bound);
    if (!is_loopback(&bound))
        gc_warn(c->ev,
                "listening on %s, which other machines can reach: whoever connects uses job %s's "
                "TPUs",
                c->listen, c->r->name);
    return 0;
}

/* --- forwarding ------------------------------------------------------------------------ */

/* One line now and then about connections the pod side refused or broke, not one per
 * connection: a client that retries would flood the terminal. */
static void report_failures(connect_run *c, bool now)
{
    char last[sizeof(c->failure)];
    unsigned more = gc_kube_forwarder_failures(c->fwd, last, sizeof(last));
    if (more) {
        c->failures += more;
        snprintf(c->failure, sizeof(c->failure), "%s", last);
    }
    long long t = gc_clock_ms();
    if (!c->failures || (!now && t - c->failure_reported_ms < REPORT_EVERY_MS))
        return;
    if (c->failures == 1)
        gc_warn(c->ev, "a connection to port %d of %s failed: %s", GC_CONNECT_PROXY_PORT, c->pod,
                c->failure);
    else
        gc_warn(c->ev, "%u connections to port %d of %s failed, the last with: %s", c->failures,
                GC_CONNECT_PROXY_PORT, c->pod, c->failure);
    c->failures = 0;
    c->failure_reported_ms = t;
}

static const char *plural(size_t n)
{
    return n == 1 ? "" : "s";
}

static int start_command(connect_run *c, const char *const *env, size_t count, gc_error *err)
{
    gc_process p = {.argv = c->r->command, .env_add = (char *const *)env, .env_add_count = count};
    int rc = gc_process_start(&p, &c->child, err);
    c->child_running = rc == 0;
    return rc;
}

/* jaxlib's IFRT proxy client must speak the proxy's kind of gRPC: plaintext when the proxy's
 * container has IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS=true (then the client needs the same
 * variable, and gets it here), ALTS otherwise (which only Google Cloud machines have: elsewhere
 * the client fails with "Invalid credentials" before it sends a byte, and the fix is on the
 * server's side, so it is said, not set). */
static void credentials_advice(connect_run *c, const char **env, size_t *count)
{
    if (c->credentials == JOB_PROXY_PLAINTEXT) {
        env[(*count)++] = GC_CONNECT_INSECURE_ENV "=true";
    } else if (c->credentials == JOB_PROXY_ALTS) {
        gc_notice(c->ev,
                  "the IFRT proxy of %s %s uses ALTS credentials (its pathways-proxy "
                  "container does not set " GC_CONNECT_INSECURE_ENV "=true), which only Google "
                  "Cloud machines have; elsewhere jaxlib fails with \"Invalid credentials\": "
                  "submit the job with --pathways-proxy-env " GC_CONNECT_INSECURE_ENV "=true, "
                  "and job connect sets the variable for the client too",
                  what(c), c->pod);
    } else {
        gc_notice(c->ev,
                  "the IFRT proxy of %s %s takes " GC_CONNECT_INSECURE_ENV " from a "
                  "ConfigMap or Secret, so job connect cannot tell which gRPC credentials it "
                  "uses: if it is \"true\" there, set " GC_CONNECT_INSECURE_ENV "=true for the "
                  "client too",
                  what(c), c->pod);
    }
}

/* The first tunnel works: the client may come. */
static int announce(connect_run *c, gc_error *err)
{
    c->announced = true;
    snprintf(c->forwarded, sizeof(c->forwarded), "%s", c->pod);
    gc_event(c->ev, GC_EVENT_PROGRESS_END, "%s", "");
    gc_notice(c->ev, "forwarding %s to port %d of %s %s (job %s) through the API server%s",
              c->listen, GC_CONNECT_PROXY_PORT, what(c), c->pod, c->r->name,
              c->r->command ? "" : "; Ctrl-C ends it");
    const char *env[4] = {"JAX_PLATFORMS=proxy", c->backend};
    size_t count = 2;
    credentials_advice(c, env, &count);
    int rc =
        connect_ports_open(&c->ports, c->kube, c->pod, what(c), c->r->stop_fd, true, c->ev, err);
    if (rc)
        return rc;
    if (c->hooks && c->hooks->ready) {
        gc_connect_ready ready = {.pod = c->pod, .listen = c->listen, .env = env};
        c->hooks->ready(c->hooks->ctx, &ready);
    }
    return c->r->command ? start_command(c, env, count, err) : 0;
}

static bool stop_pending(const connect_run *c)
{
    struct pollfd p = {.fd = c->r->stop_fd, .events = POLLIN};
    return c->r->stop_fd >= 0 && !c->stop_closed && poll(&p, 1, 0) > 0;
}

/* A refusal the API server will not change its mind about (the credential, RBAC). */
static bool lasting(const gc_error *e)
{
    return e->http_status == 401 || e->http_status == 403;
}

static int open_tunnel(connect_run *c, gc_error *err)
{
    gc_tunnel_options o = {.pod = c->pod,
                           .port = GC_CONNECT_PROXY_PORT,
                           .deadline_ms = gc_clock_ms() + OPEN_TIMEOUT_MS,
                           .cancel_fd = c->r->stop_fd};
    gc_error e = {0};
    if (gc_kube_forwarder_open(c->fwd, c->kube, &o, &e) == 0) {
        c->reopen_failures = 0;
        if (!c->announced)
            return announce(c, err);
        if (strcmp(c->pod, c->forwarded) != 0)
            gc_notice(c->ev, "new connections go to %s %s", what(c), c->pod);
        else if (c->healing)
            gc_notice(c->ev, "reconnected: new connections go to %s %s again", what(c), c->pod);
        snprintf(c->forwarded, sizeof(c->forwarded), "%s", c->pod);
        c->healing = false;
        return 0;
    }
    if (lasting(&e))
        return gc_fail(err, GC_EXIT_RUNTIME, "%s", e.message);
    if (stop_pending(c))
        return 0; /* Ctrl-C cut the wait short: the loop ends next */
    snprintf(c->open_error, sizeof(c->open_error), "%s", e.message);
    if (e.http_status == 404) /* the pod is gone: the next check finds its successor */
        c->next_check_ms = gc_clock_ms();
    long delay = REOPEN_DELAY_MS << (c->reopen_failures < 5 ? c->reopen_failures : 5);
    c->reopen_at_ms = gc_clock_ms() + (delay < REOPEN_DELAY_MAX ? delay : REOPEN_DELAY_MAX);
    if (c->reopen_failures++ == 0)
        gc_warn(c->ev, "cannot open a tunnel to %s %s: %s; retrying", what(c), c->pod, e.message);
    c->healing = true;
    return 0;
}

/* `open`: the connections it carried when it broke (the forwarder dropped it). */
static void tunnel_broke(connect_run *c, const char *why, size_t open)
{
    gc_warn(c->ev,
            "the tunnel to %s %s broke (%s); %zu open connection%s closed; "
            "reconnecting",
            what(c), c->pod, why, open, plural(open));
    c->healing = true;
    c->reopen_at_ms = gc_clock_ms();
    c->wait_deadline_ms = gc_clock_ms() + c->wait_ms;
}

/* --- checking on the job ---------------------------------------------------------------- */

/* The tunnel may well still work: say so now and then, and try again. */
static void check_failed(connect_run *c, const char *why)
{
    if (gc_clock_ms() - c->check_failure_reported_ms < REPORT_EVERY_MS)
        return;
    gc_warn(c->ev, "cannot check on job %s: %s", c->r->name, why);
    c->check_failure_reported_ms = gc_clock_ms();
}

static void start_check(connect_run *c)
{
    if (c->hooks && c->hooks->tick)
        c->hooks->tick(c->hooks->tick_ctx);
    memset(c->reads, 0, sizeof(c->reads));
    memset(c->objects, 0, sizeof(c->objects));
    c->reads[READ_JOBSET] =
        (gc_kube_read){.path = c->jobset_path, .object = &c->objects[READ_JOBSET]};
    c->reads[READ_PODS] = (gc_kube_read){
        .path = c->pods_path, .opts = &c->pods_opts, .object = &c->objects[READ_PODS]};
    c->read_count = 2;
    char *workloads = NULL;
    if (c->view.queued && c->jobset_uid[0]) {
        snprintf(c->workloads_selector, sizeof(c->workloads_selector), "kueue.x-k8s.io/job-uid=%s",
                 c->jobset_uid);
        workloads =
            gc_kueue_path(c->workloads_version, gc_kube_namespace(c->kube), "workloads", NULL);
        c->reads[READ_WORKLOADS] = (gc_kube_read){
            .path = workloads, .opts = &c->workloads_opts, .object = &c->objects[READ_WORKLOADS]};
        c->read_count = 3;
    }
    gc_error err = {0};
    c->checking = gc_kube_background_start(c->checks, c->reads, c->read_count, &err) == 0;
    if (!c->checking) {
        free(workloads);
        c->reads[READ_WORKLOADS].path = NULL;
        c->next_check_ms = gc_clock_ms() + CHECK_WAITING_MS;
        check_failed(c, err.message);
    }
}

static void release_check(connect_run *c)
{
    for (size_t i = 0; i < READ_COUNT; i++) {
        json_decref(c->objects[i]);
        c->objects[i] = NULL;
    }
    free((char *)c->reads[READ_WORKLOADS].path);
    c->reads[READ_WORKLOADS].path = NULL;
    c->checking = false;
}

/* The target pod is gone (`successor` NULL: none is ready yet) or replaced by `successor`. */
static void lose_target(connect_run *c, const char *successor)
{
    report_failures(c, true);
    size_t open = gc_kube_forwarder_drop(c->fwd) + connect_ports_drop(&c->ports);
    if (successor)
        gc_warn(c->ev, "%s %s was replaced by %s; %zu open connection%s closed", what(c), c->pod,
                successor, open, plural(open));
    else
        gc_warn(c->ev,
                "%s %s is gone (job %s: %s); %zu open connection%s closed; waiting "
                "for its replacement",
                what(c), c->pod, c->r->name, c->view.text, open, plural(open));
    c->have_target = false;
    c->healing = false;
    c->wait_deadline_ms = gc_clock_ms() + c->wait_ms;
}

static void show_progress(connect_run *c)
{
    char line[sizeof(c->progress)];
    snprintf(line, sizeof(line), "%s: %s", c->r->name, c->view.text);
    if (strcmp(line, c->progress) != 0) {
        snprintf(c->progress, sizeof(c->progress), "%s", line);
        gc_progress(c->ev, "%s", line);
    }
}

/* Acts on what the job looks like now. */
static int apply_view(connect_run *c, gc_error *err)
{
    const connect_view *v = &c->view;
    if (v->state == JOB_CONNECT_ENDED)
        return gc_fail(err, GC_EXIT_RUNTIME, "%s; nothing left to connect to", v->text);
    if (v->state == JOB_CONNECT_WAIT) {
        if (c->have_target)
            lose_target(c, NULL);
        show_progress(c);
        return 0;
    }
    if (c->have_target && !strcmp(c->pod_uid, v->uid))
        return 0;
    if (c->have_target)
        lose_target(c, v->pod);
    show_progress(c);
    c->have_target = true;
    snprintf(c->pod, sizeof(c->pod), "%s", v->pod);
    snprintf(c->pod_uid, sizeof(c->pod_uid), "%s", v->uid);
    c->credentials = v->credentials;
    c->reopen_at_ms = gc_clock_ms();
    c->reopen_failures = 0;
    return 0;
}

static int finish_check(connect_run *c, gc_error *err)
{
    gc_kube_read *js = &c->reads[READ_JOBSET], *pods = &c->reads[READ_PODS];
    gc_kube_read *wl = c->read_count > READ_WORKLOADS ? &c->reads[READ_WORKLOADS] : NULL;
    bool gone = js->rc && js->err.http_status == 404;
    const gc_kube_read *failed = gone ? NULL : js->rc ? js : pods->rc ? pods : NULL;
    int rc = 0;
    if (failed) {
        check_failed(c, failed->err.message);
    } else if (gone && !c->seen_job && c->r->proxy_job) {
        rc = gc_fail(err, GC_EXIT_RUNTIME, "proxy job %s does not exist", c->r->proxy_job);
    } else if (gone && !c->seen_job) {
        rc = gc_job_not_found(c->kube, c->r->name, err);
    } else {
        c->seen_job = true;
        /* Not served: the next check asks the older version (Kueue before 0.15). */
        const char *older = gc_kueue_older_version(c->workloads_version);
        if (wl && gc_kueue_not_served(wl) && older)
            c->workloads_version = older;
        const json_t *jobset = gone ? NULL : c->objects[READ_JOBSET];
        const char *uid = gc_kube_field(jobset, NULL, "uid");
        snprintf(c->jobset_uid, sizeof(c->jobset_uid), "%s", uid ? uid : "");
        if (c->r->proxy_job)
            connect_judge_proxy(c->r->proxy_job, jobset, c->objects[READ_PODS], &c->view);
        else
            connect_judge(c->r->name, jobset, c->objects[READ_PODS],
                          wl && !wl->rc ? c->objects[READ_WORKLOADS] : NULL, &c->view);
        rc = apply_view(c, err);
    }
    release_check(c);
    c->next_check_ms = gc_clock_ms() +
                       (gc_kube_forwarder_has_tunnel(c->fwd) ? CHECK_FORWARD_MS : CHECK_WAITING_MS);
    return rc;
}

/* --- the loop --------------------------------------------------------------------------- */

/* The stop descriptor said something: without a command that is the end; a command is told
 * (except of a first SIGINT, which the terminal gave it already) and ends connect by exiting. */
static bool stop_requested(connect_run *c)
{
    unsigned char sig;
    ssize_t n;
    bool stop = false;
    while ((n = read(c->r->stop_fd, &sig, 1)) > 0) {
        if (!c->child_running) {
            stop = true;
        } else {
            if (sig != SIGINT || c->stop_requests > 0)
                gc_process_child_signal(&c->child, sig);
            c->stop_requests++;
        }
    }
    if (n == 0) { /* the caller closed it: the same as a request, once */
        c->stop_closed = true;
        stop = stop || !c->child_running;
    }
    return stop;
}

static bool child_exited(connect_run *c)
{
    gc_process_result r;
    if (!c->child_running || !gc_process_child_ended(&c->child, &r))
        return false;
    c->child_running = false;
    c->result->command_ran = true;
    c->result->command_status = r.signal ? 128 + r.signal : r.exit_status;
    gc_process_result_free(&r);
    return true;
}

static int until(long long now, long long at, int current)
{
    long long left = at > now ? at - now : 0;
    return left < current ? (int)left : current;
}

typedef struct poll_set {
    struct pollfd *fds;
    size_t count, cap;
    int stop, child;
} poll_set;

static int add_fd(poll_set *p, int fd, short events)
{
    if (p->count == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->fds = gc_xrealloc(p->fds, p->cap * sizeof(*p->fds));
    }
    p->fds[p->count] = (struct pollfd){.fd = fd, .events = events};
    return (int)p->count++;
}

static short revents_of(const poll_set *p, int index)
{
    return index >= 0 ? p->fds[index].revents : 0;
}

static int wait_timeout(connect_run *c, long long now)
{
    int t = MAX_WAIT_MS;
    if (!c->checking)
        t = until(now, c->next_check_ms, t);
    bool tunnel = gc_kube_forwarder_has_tunnel(c->fwd);
    if (c->have_target && !tunnel)
        t = until(now, c->reopen_at_ms, t);
    if (!tunnel)
        t = until(now, c->wait_deadline_ms, t);
    int forwarder = gc_kube_forwarder_timeout_ms(c->fwd);
    t = forwarder >= 0 && forwarder < t ? forwarder : t;
    return connect_ports_timeout(&c->ports, c->announced && tunnel, now, t);
}

static void build_poll_set(connect_run *c, poll_set *p)
{
    p->count = 0;
    p->stop = c->r->stop_fd >= 0 && !c->stop_closed ? add_fd(p, c->r->stop_fd, POLLIN) : -1;
    p->child = c->child_running && c->child.fd >= 0 ? add_fd(p, c->child.fd, POLLIN) : -1;
    gc_kube_forwarder_poll(c->fwd, &p->fds, &p->count, &p->cap);
    connect_ports_poll(&c->ports, &p->fds, &p->count, &p->cap);
}

static int waited_too_long(const connect_run *c, gc_error *err)
{
    const char *wait = c->r->wait ? c->r->wait : GC_CONNECT_DEFAULT_WAIT;
    if (c->have_target)
        return gc_fail(err, GC_EXIT_RUNTIME,
                       "cannot reach %s %s of job %s through the API server within --wait "
                       "%s: %s",
                       what(c), c->pod, c->r->name, wait, c->open_error);
    return gc_fail(err, GC_EXIT_RUNTIME,
                   "job %s has no head pod to forward to after --wait %s (%s); see `gcluster job "
                   "inspect %s`, or wait longer with --wait",
                   c->r->name, wait, c->progress[0] ? c->view.text : "its state is not known",
                   c->r->name);
}

/* One turn of the loop; non-zero ends connect (with err set unless it is a clean end). */
static int turn(connect_run *c, poll_set *p, bool *finished, gc_error *err)
{
    long long now = gc_clock_ms();
    if (!c->checking && now >= c->next_check_ms)
        start_check(c);
    if (c->have_target && !gc_kube_forwarder_has_tunnel(c->fwd) && now >= c->reopen_at_ms) {
        int rc = open_tunnel(c, err);
        if (rc)
            return rc;
    }
    if (c->announced && gc_kube_forwarder_has_tunnel(c->fwd)) {
        int rc = connect_ports_open(&c->ports, c->kube, c->pod, what(c), c->r->stop_fd, false,
                                    c->ev, err);
        if (rc)
            return rc;
    }
    now = gc_clock_ms();
    if (!gc_kube_forwarder_has_tunnel(c->fwd) && now >= c->wait_deadline_ms)
        return waited_too_long(c, err);
    build_poll_set(c, p);
    if (gc_kube_background_poll(c->checks, p->fds, p->count, wait_timeout(c, now)) < 0 &&
        errno != EINTR)
        return gc_fail(err, GC_EXIT_RUNTIME, "poll: %s", strerror(errno));
    if ((revents_of(p, p->stop) && stop_requested(c)) || child_exited(c)) {
        *finished = true;
        return 0;
    }
    if (c->checking && gc_kube_background_done(c->checks)) {
        int rc = finish_check(c, err);
        if (rc)
            return rc;
    }
    size_t open = 0;
    gc_error why = {0};
    if (gc_kube_forwarder_serve(c->fwd, p->fds, &open, &why))
        tunnel_broke(c, why.message, open);
    connect_ports_serve(&c->ports, p->fds, c->pod, what(c), c->ev);
    report_failures(c, false);
    return 0;
}

static int run(connect_run *c, gc_error *err)
{
    poll_set p = {0};
    bool finished = false;
    int rc = 0;
    while (!rc && !finished)
        rc = turn(c, &p, &finished, err);
    free(p.fds);
    return rc;
}

static void setup_checks(connect_run *c)
{
    gc_kube *kube = c->kube;
    c->checks = gc_kube_background_new(kube);
    c->pods_path = gc_kube_path(NULL, "v1", gc_kube_namespace(kube), "pods", NULL);
    if (c->r->proxy_job) {
        /* An SPS client's proxy: a Job (read in the JobSet's place) and the pod it made. */
        c->jobset_path =
            gc_kube_path("batch", "v1", gc_kube_namespace(kube), "jobs", c->r->proxy_job);
        snprintf(c->pods_selector, sizeof(c->pods_selector), "batch.kubernetes.io/job-name=%s",
                 c->r->proxy_job);
    } else {
        c->jobset_path = gc_job_jobset_path(kube, c->r->name);
        snprintf(c->pods_selector, sizeof(c->pods_selector),
                 "jobset.sigs.k8s.io/jobset-name=%s,jobset.sigs.k8s.io/replicatedjob-name=%s",
                 c->r->name, GC_PATHWAYS_HEAD);
    }
    c->pods_opts.label_selector = c->pods_selector;
    c->workloads_opts.label_selector = c->workloads_selector;
    c->workloads_version = gc_kueue_versions[0];
}

static void teardown(connect_run *c)
{
    if (c->child_running) {
        gc_process_result r;
        gc_process_child_stop(&c->child, COMMAND_GRACE_MS, &r);
        gc_process_result_free(&r);
    }
    gc_kube_forwarder_free(c->fwd);
    connect_ports_free(&c->ports);
    gc_kube_background_free(c->checks); /* abandons a round under way before its objects go */
    release_check(c);
    free(c->jobset_path);
    free(c->pods_path);
}

int gc_job_connect(gc_kube *kube, const gc_connect_request *r, const gc_connect_hooks *hooks,
                   const gc_events *ev, gc_connect_result *result, gc_error *err)
{
    memset(result, 0, sizeof(*result));
    connect_run c = {.kube = kube, .r = r, .hooks = hooks, .ev = ev, .result = result};
    c.child.pid = c.child.fd = -1;
    int rc = gc_job_connect_check(r, err);
    if (!rc)
        rc = parse_wait(r, &c.wait_ms, err);
    if (!rc)
        rc = listen_local(&c, err);
    if (!rc) {
        setup_checks(&c);
        c.wait_deadline_ms = gc_clock_ms() + c.wait_ms;
        rc = run(&c, err);
        if (c.child_running && rc)
            gc_notice(ev, "stopping %s: %s", r->command[0], err->message);
    }
    teardown(&c);
    return rc;
}
