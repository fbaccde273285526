/*
 * --mount filestore://INSTANCE/SHARE with an instance name: its IP address, as Google's gcluster
 * finds it (the project's instances in every location, the one of that name, which must be
 * READY), asked of gcloud with the user's own credentials. The pod mounts the share over NFS at
 * that address. Run once per submit, after every offline check, before anything is sent to the
 * cluster; a mount given by IP address asks nothing.
 */
#include "gcluster/buf.h"
#include "gcluster/gcp.h"
#include "gcluster/process.h"
#include "submit/parse.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define GCLOUD_TIMEOUT_MS (120 * 1000)
#define GCLOUD_OUTPUT_MAX (16u << 20)

static bool by_name(const gc_mount *m)
{
    return m->kind == GC_MOUNT_NFS && !submit_filestore_is_ip(m->source);
}

static const char *str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

/* "projects/P/locations/L/instances/N": whether N is `name`; *location is L. */
static bool instance_named(const char *full, const char *name, char **location)
{
    const char *slash = full ? strrchr(full, '/') : NULL;
    if (!slash || strcmp(slash + 1, name) != 0)
        return false;
    const char *loc = strstr(full, "/locations/");
    size_t n = loc ? strcspn(loc + 11, "/") : 0;
    *location = gc_xstrndup(loc ? loc + 11 : "", n);
    return true;
}

static int where_to_look(const char *project, char *text, size_t size)
{
    if (project)
        return snprintf(text, size, "project %s", project);
    return snprintf(text, size, "gcloud's configured project");
}

/* The listing as gcloud printed it: a JSON array of instances. */
static int list_instances(const char *gcloud, const char *project, json_t **out, gc_error *err)
{
    char *project_arg = project ? gc_xasprintf("--project=%s", project) : NULL;
    char *argv[] = {"gcloud", "filestore", "instances", "list", "--format=json", project_arg, NULL};
    gc_process p = {.program = gcloud,
                    .argv = argv,
                    .timeout_ms = GCLOUD_TIMEOUT_MS,
                    .max_stdout = GCLOUD_OUTPUT_MAX};
    gc_process_result res;
    int rc = gc_process_run(&p, &res, err);
    if (!rc && res.exec_errno == ENOENT)
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "--mount: gcloud is not installed (or not on $PATH), and a Filestore instance "
                     "given by name is looked up with it; install the Google Cloud CLI, or give "
                     "the instance's IP address instead (filestore://10.0.0.2/SHARE)");
    else if (!rc && !gc_process_succeeded(&res)) {
        char how[768];
        gc_process_explain(&res, &p, how, sizeof(how));
        rc = gc_fail(err, GC_EXIT_RUNTIME,
                     "--mount: gcloud filestore instances list, which finds the Filestore "
                     "instance given by name, failed: %s; check `gcloud auth login` and the "
                     "project, or give the instance's IP address instead",
                     how);
    } else if (!rc) {
        json_error_t jerr;
        *out = json_loadb(res.out.data, res.out.len, 0, &jerr);
        if (!json_is_array(*out)) {
            json_decref(*out);
            *out = NULL;
            rc = gc_fail(err, GC_EXIT_RUNTIME,
                         "--mount: gcloud filestore instances list --format=json did not print a "
                         "JSON list (%s); give the instance's IP address instead",
                         jerr.text[0] ? jerr.text : "another JSON value");
        }
    }
    gc_process_result_free(&res);
    free(project_arg);
    return rc;
}

/* The first IPv4 address of the instance's first network, or NULL. */
static const char *instance_ip(const json_t *instance)
{
    const json_t *network = json_array_get(json_object_get(instance, "networks"), 0);
    const char *ip = json_string_value(json_array_get(json_object_get(network, "ipAddresses"), 0));
    return ip && submit_filestore_is_ip(ip) ? ip : NULL;
}

static int resolve_one(const json_t *instances, const char *project, gc_mount *m,
                       gc_strings *notices, gc_error *err)
{
    const char *name = m->source;
    const json_t *found = NULL;
    char *found_location = NULL;
    gc_buf locations;
    gc_buf_init(&locations);
    size_t matches = 0, i;
    const json_t *instance;
    json_array_foreach(instances, i, instance)
    {
        char *location;
        if (!instance_named(str(instance, "name"), name, &location))
            continue;
        gc_buf_printf(&locations, "%s%s", matches ? ", " : "", location);
        if (!matches++) {
            found = instance;
            found_location = location;
        } else {
            free(location);
        }
    }
    char where[128];
    where_to_look(project, where, sizeof(where));
    const char *state = found ? str(found, "state") : NULL;
    const char *ip = found ? instance_ip(found) : NULL;
    int rc = 0;
    if (!matches)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--mount filestore://%s%s: no Filestore instance named \"%s\" in %s (`gcloud "
                     "filestore instances list` shows them); give an instance's name or IP "
                     "address, or the project with --project",
                     name, m->source_dir, name, where);
    else if (matches > 1)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--mount filestore://%s%s: %zu Filestore instances are named \"%s\" in %s "
                     "(in %s); give the IP address of the one you mean instead",
                     name, m->source_dir, matches, name, where, locations.data);
    else if (!state || strcmp(state, "READY") != 0)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--mount filestore://%s%s: the Filestore instance \"%s\" (%s) is %s, not "
                     "READY; wait until it is, or use another",
                     name, m->source_dir, name, found_location, state ? state : "in no state");
    else if (!ip)
        rc = gc_fail(err, GC_EXIT_USAGE,
                     "--mount filestore://%s%s: the Filestore instance \"%s\" (%s) has no IPv4 "
                     "address on its network; give the address to mount instead",
                     name, m->source_dir, name, found_location);
    if (!rc) {
        char *notice = gc_xasprintf("--mount filestore://%s%s: the Filestore instance \"%s\" (%s) "
                                    "is at %s",
                                    name, m->source_dir, name, found_location, ip);
        gc_strings_push(notices, notice);
        free(notice);
        free(m->source);
        m->source = gc_xstrdup(ip);
    }
    free(found_location);
    gc_buf_free(&locations);
    return rc;
}

int submit_resolve_filestore(const char *gcloud, const char *project, gc_workload *w,
                             gc_strings *notices, gc_error *err)
{
    bool needed = false;
    for (size_t i = 0; i < w->mount_count; i++)
        needed |= by_name(&w->mounts[i]);
    if (!needed)
        return 0;
    if (project && !gc_gcp_is_project_id(project))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--project \"%s\" is not a Google Cloud project ID (6-30 lower-case "
                       "letters, digits and '-', a letter first)",
                       project);
    json_t *instances = NULL;
    int rc = list_instances(gcloud, project, &instances, err);
    for (size_t i = 0; !rc && i < w->mount_count; i++)
        if (by_name(&w->mounts[i]))
            rc = resolve_one(instances, project, &w->mounts[i], notices, err);
    json_decref(instances);
    return rc;
}
