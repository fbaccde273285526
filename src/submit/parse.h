/*
 * Value parsers for `job submit` flags. Internal to submit/; each returns GC_EXIT_USAGE with a
 * message naming the flag on bad input.
 */
#ifndef GCLUSTER_SUBMIT_PARSE_H
#define GCLUSTER_SUBMIT_PARSE_H

#include "gcluster/job.h"
#include "gcluster/manifest.h"

#include <stdbool.h>

/* Comma-separated items, trimmed; empty items are dropped. */
void submit_split_commas(const char *text, gc_strings *out);

int submit_parse_exit_code(const char *text, long *code, gc_error *err);
/* An absolute directory given to `flag`, cleaned as --mount destinations are (*out: caller
 * frees). */
int submit_parse_directory(const char *flag, const char *text, char **out, gc_error *err);
int submit_validate_gcs_location(const char *flag, const char *location, gc_error *err);
/* Google's SOURCE;DEST[;ro|rw][;options=...][;attributes=K=V,...], or the older
 * SOURCE:DEST[:ro|rw] (a spec without ';'); DEST comes back cleaned ("/data//x/" is "/data/x"). */
int submit_parse_mount(const char *spec, gc_mount *mount, gc_error *err);
/* A Filestore instance name: 1-63 lower-case letters, digits and '-', a letter first. */
#define FILESTORE_NAME_MAX 63
/* Whether a filestore:// server is an IPv4 address (else it names an instance). */
bool submit_filestore_is_ip(const char *text);
/* Every filestore://INSTANCE/SHARE mount of `w` named by instance (not by IP address) gets the
 * instance's IP address from `gcloud filestore instances list` (filestore.c): the instance of
 * that name in any location of `project` (NULL: gcloud's configured project), READY, one only.
 * `gcloud` is the program to run (NULL: gcloud on $PATH). Each instance found is told in
 * `notices`. Errors name --mount: exit 2 when the instance is missing, ambiguous, not ready or
 * without an address, 1 when gcloud is missing or fails. */
int submit_resolve_filestore(const char *gcloud, const char *project, gc_workload *w,
                             gc_strings *notices, gc_error *err);
/* KEY=VALUE from `flag`, appended to w->env for the containers of `scope`. */
int submit_parse_env(const char *flag, const char *spec, gc_env_scope scope, gc_workload *w,
                     gc_error *err);
/* Every KEY=VALUE line of an env file, appended to w->env for the workload container. */
int submit_read_env_file(const char *path, gc_workload *w, gc_error *err);
int submit_parse_node_constraint(const char *spec, gc_node_term *term, gc_error *err);

#endif
