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
/* KEY=VALUE from `flag`, appended to w->env for the containers of `scope`. */
int submit_parse_env(const char *flag, const char *spec, gc_env_scope scope, gc_workload *w,
                     gc_error *err);
/* Every KEY=VALUE line of an env file, appended to w->env for the workload container. */
int submit_read_env_file(const char *path, gc_workload *w, gc_error *err);
int submit_parse_node_constraint(const char *spec, gc_node_term *term, gc_error *err);

#endif
