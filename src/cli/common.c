/*
 * Helpers shared by the command files: stored defaults and writing output files.
 */
#include "cli/cli.h"
#include "cli/render.h"

#include "gcluster/buf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_apply_stored_defaults(cli_globals *g)
{
    /* An explicit --context names the cluster completely; stored GKE names must not mix in. */
    if (g->context)
        return;
    gc_stored_context ctx;
    gc_error err = {0};
    if (gc_context_load(&ctx, &err) != 0) {
        cli_line(stderr, "gcluster: warning: ignoring stored defaults: %s", err.message);
        return;
    }
    /* The strings live until exit: argument structs only borrow. */
    if (!g->cluster && ctx.cluster)
        g->cluster = ctx.cluster, ctx.cluster = NULL;
    if (!g->location && ctx.location)
        g->location = ctx.location, ctx.location = NULL;
    if (!g->project && ctx.project)
        g->project = ctx.project, ctx.project = NULL;
    gc_context_free(&ctx);
}

static int write_all(FILE *f, const char *data, size_t len)
{
    return fwrite(data, 1, len, f) == len && fflush(f) == 0 ? 0 : -1;
}

/* Writes to a temporary file beside `path` and renames it into place, so a reader never sees
 * half a manifest and a failed write leaves the old file as it was. */
static int write_atomically(const char *path, const char *data, size_t len, gc_error *err)
{
    char *tmp = gc_xasprintf("%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        int rc = gc_fail(err, GC_EXIT_USAGE, "cannot write %s: %s (does the directory exist?)",
                         path, strerror(errno));
        free(tmp);
        return rc;
    }
    int rc = 0;
    if (write_all(f, data, len) != 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        rc = gc_fail(err, GC_EXIT_RUNTIME, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return rc;
}

/* A device, a pipe or a socket (/dev/null, /dev/stdout, a FIFO) is written in place: renaming a
 * file over it would replace the device node itself. */
static int write_in_place(const char *path, const char *data, size_t len, gc_error *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return gc_fail(err, GC_EXIT_USAGE, "cannot write %s: %s", path, strerror(errno));
    int failed = write_all(f, data, len);
    if (fclose(f) != 0)
        failed = -1;
    return failed ? gc_fail(err, GC_EXIT_RUNTIME, "cannot write %s: %s", path, strerror(errno)) : 0;
}

int cli_check_output_path(const char *flag, const char *path, const char *format_flag,
                          gc_error *err)
{
    static const char *const formats[][2] = {{"json", "json"}, {"yaml", "yaml"},  {"yml", "yaml"},
                                             {"text", "text"}, {"table", "text"}, {"wide", "text"}};
    for (size_t i = 0; path && i < sizeof(formats) / sizeof(*formats); i++)
        if (!strcmp(path, formats[i][0]))
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s %s would write a file named \"%s\": %s takes a file path here, "
                           "as in Google's gcluster; for %s output use %s %s (for a file of that "
                           "name, give ./%s)",
                           flag, path, path, flag, formats[i][1], format_flag, formats[i][1], path);
    return 0;
}

int cli_write_output(const char *path, const char *data, size_t len, gc_error *err)
{
    if (!strcmp(path, "-"))
        return write_all(stdout, data, len) == 0
                   ? 0
                   : gc_fail(err, GC_EXIT_RUNTIME, "cannot write to stdout: %s", strerror(errno));
    struct stat st;
    size_t n = strlen(path);
    bool exists = stat(path, &st) == 0;
    if (n == 0 || path[n - 1] == '/' || (exists && S_ISDIR(st.st_mode)))
        return gc_fail(err, GC_EXIT_USAGE,
                       "--dry-run-out \"%s\" is a directory; give a file path such as %s%sjob.yaml",
                       path, path, n && path[n - 1] == '/' ? "" : "/");
    if (exists && !S_ISREG(st.st_mode))
        return write_in_place(path, data, len, err);
    /* A symbolic link keeps pointing where it did: the file it names is replaced. */
    char *target = exists ? realpath(path, NULL) : NULL;
    int rc = write_atomically(target ? target : path, data, len, err);
    free(target);
    return rc;
}
