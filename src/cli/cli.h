/*
 * What the command files share: stored defaults, opening the cluster and output helpers.
 */
#ifndef GCLUSTER_CLI_CLI_H
#define GCLUSTER_CLI_CLI_H

#include "cli/commands.h"
#include "gcluster/events.h"
#include "gcluster/job.h"
#include "gcluster/kube.h"

/* Fills --cluster/--location/--project from ~/.gcluster/context.json where not given. A
 * missing or unreadable file changes nothing (with a warning for a corrupt one). */
void cli_apply_stored_defaults(cli_globals *g);

/* Opens a client for the selected cluster (SPEC §2, cluster selection). */
int cli_open_kube(const cli_globals *g, gc_kube **kube, gc_error *err);

/* Where the library's warnings, notices, traces and progress go: stderr, progress redrawn on
 * one line when stderr is a terminal and left out when it is not. */
const gc_events *cli_events(void);

/* stdout for results, stderr for progress (redrawn when it is a terminal). */
gc_output cli_output(void);

/* Writes `data` to `path` atomically (a temporary file renamed into place); "-" is stdout. */
int cli_write_output(const char *path, const char *data, size_t len, gc_error *err);

#endif
