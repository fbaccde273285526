/*
 * `job submit --pathways-run-sps-workload`: one client of a Shared Pathways Service
 * (gcluster/connect.h, gcluster/sps.h).
 *
 * Everything that can be refused is refused before anything is created: the service must exist
 * and be one, the slices asked for must be of its shape and no more than it has, and the proxy
 * image must be of its server's release (a proxy of another release fails at the first call with
 * "Protocol Mismatch"). Then the client's proxy Job is created with its pod behind a scheduling
 * gate, and the client waits for its turn: first in line with enough of the service's slices
 * free. It marks its Job holding, lifts the gate, and forwards a local port to the proxy pod
 * with job connect's self-healing tunnel, running the command (or, without one, until stopped).
 * Whatever ends it (the command, Ctrl-C, an error) deletes the Job; while it lives, it keeps
 * moving the Job's deadline GC_SPS_LEASE_SECONDS ahead, so a client killed outright leaves its
 * proxy only until then.
 */
#include "gcluster/connect.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"
#include "gcluster/manifest.h"
#include "gcluster/sps.h"
#include "gcluster/sys.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define WAIT_POLL_MS 2000

typedef struct sps_client {
    gc_kube *kube;
    const gc_sps_run_request *r;
    const gc_events *ev;
    char service[64];
    char job[64];
    char *job_path;
    char job_selector[160];
    long long created_ms; /* gc_clock_ms() when the Job's create returned */
    long long renewed_ms; /* when its deadline was last moved */
    bool renew_failed;    /* said once */
    gc_sps_usage usage;
} sps_client;

/* "svc" from "svc", "svc-pathways-head-0-0.svc:29001" or "svc-pathways-head:29001", as
 * pathways-utils reads its --pathways_service. */
static void service_name(const char *given, char *out, size_t size)
{
    size_t n = strcspn(given, ":.");
    const char *head = strstr(given, "-" GC_PATHWAYS_HEAD);
    if (head && (size_t)(head - given) < n)
        n = (size_t)(head - given);
    snprintf(out, size, "%.*s", (int)n, given);
}

int gc_sps_run_check(const gc_sps_run_request *r, gc_error *err)
{
    if (!r->service || !r->service[0])
        return gc_fail(err, GC_EXIT_USAGE,
                       "--pathways-run-sps-workload needs the service: --pathways-service NAME "
                       "(the name it was deployed with, or its address NAME-pathways-head-0-0."
                       "NAME:29001)");
    char name[64];
    service_name(r->service, name, sizeof(name));
    if (!gc_kube_is_dns1035_label(name))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--pathways-service %s: not a service name (a DNS label: lower-case "
                       "letters, digits and '-')",
                       r->service);
    if (r->slices < 1)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--num-slices %ld: a client asks for at least one of the service's slices",
                       r->slices);
    for (size_t i = 0; i < r->proxy_env_count; i++) {
        const char *eq = strchr(r->proxy_env[i], '=');
        if (!eq || eq == r->proxy_env[i])
            return gc_fail(err, GC_EXIT_USAGE, "--pathways-proxy-env %s: use KEY=VALUE",
                           r->proxy_env[i]);
    }
    return gc_job_connect_check(&r->connect, err);
}

/* The checks only the service can answer; nothing is created yet. */
static int check_against_service(sps_client *s, char *proxy_image, size_t image_size, gc_error *err)
{
    const gc_sps_run_request *r = s->r;
    const gc_sps_usage *u = &s->usage;
    if (r->instance_type && strcmp(r->instance_type, u->instance_type) != 0)
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s asks for %s slices; service %s serves %s slices only (leave "
                       "--compute-type out for its shape)",
                       r->shape_flags ? r->shape_flags : "--compute-type", r->instance_type,
                       s->service, u->instance_type);
    if (r->slices > u->slices)
        return gc_fail(err, GC_EXIT_USAGE,
                       "--num-slices %ld: service %s has %d slice%s in all; ask for at most %d",
                       r->slices, s->service, u->slices, u->slices == 1 ? "" : "s", u->slices);
    char *derived = gc_sps_proxy_image_for(u->server_image);
    char want[128], got[128];
    gc_sps_image_release(u->server_image, want, sizeof(want));
    int rc = 0;
    if (r->proxy_image) {
        gc_sps_image_release(r->proxy_image, got, sizeof(got));
        if (strcmp(want, got) != 0)
            rc = gc_fail(err, GC_EXIT_USAGE,
                         "--pathways-proxy-server-image %s is release %s, but service %s runs "
                         "server %s (release %s): a proxy of another release fails with "
                         "\"Protocol Mismatch\"; use --pathways-proxy-server-image %s, or leave "
                         "the flag out",
                         r->proxy_image, got, s->service, u->server_image, want, derived);
        else
            snprintf(proxy_image, image_size, "%s", r->proxy_image);
    } else {
        snprintf(proxy_image, image_size, "%s", derived);
    }
    free(derived);
    return rc;
}

static int read_usage(sps_client *s, json_t *jobset, gc_error *err)
{
    char *path = gc_kube_path("batch", "v1", gc_kube_namespace(s->kube), "jobs", NULL);
    json_t *jobs = NULL;
    char selector[128];
    snprintf(selector, sizeof(selector), "%s=%s", GC_LABEL_SPS_SERVICE, s->service);
    const char *query[] = {"labelSelector", selector, NULL};
    int rc = gc_kube_get(s->kube, path, query, &jobs, err);
    free(path);
    if (!rc) {
        gc_sps_usage_free(&s->usage);
        rc = gc_sps_usage_read(jobset, jobs, &s->usage, err);
    }
    json_decref(jobs);
    return rc;
}

static int read_service(sps_client *s, json_t **jobset, gc_error *err)
{
    char *path = gc_job_jobset_path(s->kube, s->service);
    int rc = gc_kube_get(s->kube, path, NULL, jobset, err);
    free(path);
    if (rc && err->http_status == 404)
        return gc_fail(err, GC_EXIT_USAGE,
                       "no Shared Pathways Service %s in namespace %s (deploy one with job submit "
                       "--pathways-deploy-sps --name %s, or see job list)",
                       s->service, gc_kube_namespace(s->kube), s->service);
    return rc;
}

static void proxy_job_name(const char *user, char *out, size_t size)
{
    char clean[32];
    gc_sps_user_name(user, clean, sizeof(clean));
    static const char digits[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char bytes[5];
    if (getrandom(bytes, sizeof(bytes), 0) != (ssize_t)sizeof(bytes))
        for (size_t i = 0; i < sizeof(bytes); i++)
            bytes[i] = (unsigned char)(gc_clock_ms() >> (i * 3)) ^ (unsigned char)getpid();
    char suffix[6];
    for (size_t i = 0; i < sizeof(bytes); i++)
        suffix[i] = digits[bytes[i] % (sizeof(digits) - 1)];
    suffix[5] = '\0';
    snprintf(out, size, "isc-proxy-%s-%s", clean, suffix);
}

static int create_proxy(sps_client *s, const char *image, gc_error *err)
{
    const gc_sps_run_request *r = s->r;
    char user[32];
    gc_sps_user_name(r->user, user, sizeof(user));
    gc_env_var *env = gc_xcalloc(r->proxy_env_count + 1, sizeof(*env));
    for (size_t i = 0; i < r->proxy_env_count; i++) {
        const char *eq = strchr(r->proxy_env[i], '=');
        env[i].name = gc_xasprintf("%.*s", (int)(eq - r->proxy_env[i]), r->proxy_env[i]);
        env[i].value = (char *)eq + 1;
    }
    gc_strings args = {0};
    gc_strings_split_words(r->proxy_args, &args);
    gc_sps_proxy p = {.name = s->job,
                      .service = s->service,
                      .user = user,
                      .image = image,
                      .gcs_location = s->usage.gcs_location,
                      .instance_type = s->usage.instance_type,
                      .slices = (int)r->slices,
                      .head_pool = s->usage.head_pool,
                      .deadline_seconds = GC_SPS_LEASE_SECONDS,
                      .waiting = true,
                      .env = env,
                      .env_count = r->proxy_env_count,
                      .args = &args};
    json_t *job = gc_sps_proxy_job(&p);
    for (size_t i = 0; i < r->proxy_env_count; i++)
        free(env[i].name);
    free(env);
    gc_strings_free(&args);
    if (!job)
        return gc_fail(err, GC_EXIT_USAGE,
                       "the proxy Job cannot be built: a --pathways-proxy-env or "
                       "--pathways-proxy-args value is not valid UTF-8");
    json_object_set_new(json_object_get(json_object_get(job, "metadata"), "annotations"),
                        GC_ANNOTATION_SPS_STATE, json_string("waiting"));
    char *jobs = gc_kube_path("batch", "v1", gc_kube_namespace(s->kube), "jobs", NULL);
    /* The API server and its webhooks judge it first: a refusal leaves nothing behind. */
    int rc = gc_kube_create(s->kube, jobs, job, GC_KUBE_DRY_RUN | GC_KUBE_STRICT, NULL, err);
    if (rc && err->http_status >= 400 && err->http_status < 500)
        rc = GC_EXIT_USAGE;
    if (!rc)
        rc = gc_kube_create(s->kube, jobs, job, 0, NULL, err);
    free(jobs);
    json_decref(job);
    s->created_ms = s->renewed_ms = gc_clock_ms();
    return rc;
}

/* Moves the Job's deadline GC_SPS_LEASE_SECONDS past now. The deadline counts from the Job's
 * start, which follows its creation; counting from the create's answer keeps it a little
 * later than that, never earlier. */
static void renew(sps_client *s, bool force)
{
    long long now = gc_clock_ms();
    if (!force && now - s->renewed_ms < GC_SPS_RENEW_SECONDS * 1000LL)
        return;
    long long seconds = (now - s->created_ms) / 1000 + GC_SPS_LEASE_SECONDS;
    json_t *patch = json_pack("{s:{s:I}}", "spec", "activeDeadlineSeconds", (json_int_t)seconds);
    gc_error err = {0};
    if (gc_kube_merge_patch(s->kube, s->job_path, patch, NULL, &err) == 0) {
        s->renewed_ms = now;
        s->renew_failed = false;
    } else if (!s->renew_failed) {
        s->renew_failed = true;
        gc_warn(s->ev,
                "cannot extend proxy job %s's deadline (%s); it ends %d s after the last "
                "extension unless a retry works",
                s->job, err.message, GC_SPS_LEASE_SECONDS);
    }
    json_decref(patch);
}

static void renew_tick(void *ctx)
{
    renew(ctx, false);
}

/* The stop descriptor said something (or was closed). */
static bool stopped(int fd, int timeout_ms)
{
    if (fd < 0) {
        poll(NULL, 0, timeout_ms);
        return false;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, timeout_ms);
    if (n <= 0)
        return false;
    unsigned char sig;
    ssize_t got = read(fd, &sig, 1);
    return got >= 0 || errno != EAGAIN;
}

/* Waits for this client's turn, saying why it waits whenever that changes. */
static int wait_turn(sps_client *s, json_t *jobset, long long deadline_ms, bool *stop,
                     gc_error *err)
{
    char last[1024] = "";
    for (;;) {
        int rc = read_usage(s, jobset, err);
        if (rc)
            return rc;
        if (!gc_sps_find(&s->usage, s->job))
            return gc_fail(err, GC_EXIT_RUNTIME,
                           "proxy job %s is gone (deleted, or its deadline passed)", s->job);
        if (gc_sps_may_start(&s->usage, s->job))
            return 0;
        char why[1024];
        gc_sps_wait_reason(&s->usage, s->job, why, sizeof(why));
        if (strcmp(why, last) != 0) {
            gc_progress(s->ev, "%s: %s", s->job, why);
            snprintf(last, sizeof(last), "%s", why);
        }
        if (gc_clock_ms() >= deadline_ms)
            return gc_fail(err, GC_EXIT_RUNTIME, "gave up after --wait: %s", why);
        renew(s, false);
        if (stopped(s->r->connect.stop_fd, WAIT_POLL_MS)) {
            *stop = true;
            return 0;
        }
    }
}

/* Marks the Job holding (so the next client sees the slices taken) and lifts its pod's gate.
 * The pod may not exist yet a moment after the Job was created. */
static int take_turn(sps_client *s, long long deadline_ms, gc_error *err)
{
    json_t *patch =
        json_pack("{s:{s:{s:s}}}", "metadata", "annotations", GC_ANNOTATION_SPS_STATE, "holding");
    int rc = gc_kube_merge_patch(s->kube, s->job_path, patch, NULL, err);
    json_decref(patch);
    char *pods = gc_kube_path(NULL, "v1", gc_kube_namespace(s->kube), "pods", NULL);
    const char *query[] = {"labelSelector", s->job_selector, NULL};
    while (!rc) {
        json_t *list = NULL;
        rc = gc_kube_get(s->kube, pods, query, &list, err);
        const json_t *pod = json_array_get(json_object_get(list, "items"), 0);
        const char *name = gc_kube_field(pod, NULL, "name");
        if (!rc && name) {
            char *path = gc_kube_path(NULL, "v1", gc_kube_namespace(s->kube), "pods", name);
            json_t *ungate = json_pack("{s:{s:n}}", "spec", "schedulingGates");
            rc = gc_kube_merge_patch(s->kube, path, ungate, NULL, err);
            json_decref(ungate);
            free(path);
            json_decref(list);
            break;
        }
        json_decref(list);
        if (!rc && gc_clock_ms() >= deadline_ms)
            rc = gc_fail(err, GC_EXIT_RUNTIME, "proxy job %s made no pod within --wait", s->job);
        if (!rc)
            poll(NULL, 0, 500);
    }
    free(pods);
    return rc;
}

static void delete_proxy(sps_client *s)
{
    gc_error err = {0};
    if (gc_kube_delete(s->kube, s->job_path, "Background", NULL, &err) == 0)
        gc_notice(s->ev, "deleted proxy job %s", s->job);
    else if (err.http_status != 404)
        gc_warn(s->ev, "cannot delete proxy job %s (%s); it ends within %d s without its client",
                s->job, err.message, GC_SPS_LEASE_SECONDS);
}

int gc_sps_run(gc_kube *kube, const gc_sps_run_request *r, const gc_connect_hooks *hooks,
               const gc_events *ev, gc_connect_result *result, gc_error *err)
{
    memset(result, 0, sizeof(*result));
    int rc = gc_sps_run_check(r, err);
    if (rc)
        return rc;
    sps_client s = {.kube = kube, .r = r, .ev = ev};
    service_name(r->service, s.service, sizeof(s.service));
    json_t *jobset = NULL;
    char image[512];
    rc = read_service(&s, &jobset, err);
    if (!rc)
        rc = read_usage(&s, jobset, err);
    if (!rc)
        rc = check_against_service(&s, image, sizeof(image), err);
    if (rc) {
        json_decref(jobset);
        gc_sps_usage_free(&s.usage);
        return rc;
    }
    proxy_job_name(r->user, s.job, sizeof(s.job));
    s.job_path = gc_kube_path("batch", "v1", gc_kube_namespace(kube), "jobs", s.job);
    snprintf(s.job_selector, sizeof(s.job_selector), "batch.kubernetes.io/job-name=%s", s.job);
    rc = create_proxy(&s, image, err);
    if (!rc) {
        gc_notice(ev, "created proxy job %s for service %s (%ld %s slice%s, proxy %s)", s.job,
                  s.service, r->slices, s.usage.instance_type, r->slices == 1 ? "" : "s", image);
        long long wait_ms = 0;
        gc_error werr = {0};
        long seconds = 0;
        if (gc_clock_parse_duration("--wait",
                                    r->connect.wait ? r->connect.wait : GC_CONNECT_DEFAULT_WAIT,
                                    &seconds, &werr) == 0)
            wait_ms = seconds * 1000LL;
        long long deadline = gc_clock_ms() + wait_ms;
        bool stop = false;
        rc = wait_turn(&s, jobset, deadline, &stop, err);
        if (!rc && stop)
            rc = gc_fail(err, GC_EXIT_RUNTIME,
                         "stopped while waiting for service %s's slices; nothing ran", s.service);
        if (!rc)
            rc = take_turn(&s, deadline, err);
        if (!rc) {
            renew(&s, true);
            gc_connect_request c = r->connect;
            c.name = s.job;
            c.proxy_job = s.job;
            gc_connect_hooks h = hooks ? *hooks : (gc_connect_hooks){0};
            h.tick = renew_tick;
            h.tick_ctx = &s;
            rc = gc_job_connect(kube, &c, &h, ev, result, err);
        }
        delete_proxy(&s);
    }
    free(s.job_path);
    json_decref(jobset);
    gc_sps_usage_free(&s.usage);
    return rc;
}
