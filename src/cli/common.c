/*
 * Helpers shared by the command files: stored defaults, flags a command refuses, writing output
 * files, the --manifests-dir note of --help.
 */
#include "cli/cli.h"
#include "cli/render.h"

#include "gcluster/buf.h"
#include "gcluster/sys.h"

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
    cli_stored_context ctx;
    gc_error err = {0};
    if (cli_context_load(&ctx, &err) != 0) {
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
    cli_context_free(&ctx);
}

int cli_refuse_cluster_flags(const cli_globals *g, const char *gke_namespace, bool skip_prereqs,
                             const char *command, const char *why, gc_error *err)
{
    const struct {
        bool given;
        const char *name;
    } flags[] = {
        {g->cluster != NULL, "--cluster"},          {g->location != NULL, "--location"},
        {g->project != NULL, "--project"},          {g->context != NULL, "--context"},
        {g->kubeconfig != NULL, "--kubeconfig"},    {g->ns != NULL, "--namespace"},
        {gke_namespace != NULL, "--gke-namespace"}, {skip_prereqs, "--skip-prereqs"},
    };
    for (size_t i = 0; i < sizeof(flags) / sizeof(*flags); i++)
        if (flags[i].given)
            return gc_fail(err, GC_EXIT_USAGE, "%s does not take %s: %s", command, flags[i].name,
                           why);
    return 0;
}

static int write_all(FILE *f, const char *data, size_t len)
{
    return fwrite(data, 1, len, f) == len && fflush(f) == 0 ? 0 : -1;
}

/* A path that can only name a directory ("", "dir/", an existing directory): refused with the
 * flag the user gave it with, before anything is sent. */
static int refuse_directory(const char *flag, const char *path, gc_error *err)
{
    size_t n = strlen(path);
    if (n == 0)
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s \"\" is empty: give a file path, or - for the terminal", flag);
    struct stat st;
    if (path[n - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
        return gc_fail(err, GC_EXIT_USAGE,
                       "%s \"%s\" is a directory; give the path of a file in it", flag, path);
    return 0;
}

int cli_check_output_path(const char *flag, const char *path, const char *format_flag,
                          gc_error *err)
{
    static const char *const formats[][2] = {{"json", "json"}, {"yaml", "yaml"},  {"yml", "yaml"},
                                             {"text", "text"}, {"table", "text"}, {"wide", "text"}};
    if (!path || !strcmp(path, "-"))
        return 0;
    for (size_t i = 0; format_flag && i < sizeof(formats) / sizeof(*formats); i++)
        if (!strcmp(path, formats[i][0]))
            return gc_fail(err, GC_EXIT_USAGE,
                           "%s %s would write a file named \"%s\": %s takes a file path here, "
                           "as in Google's gcluster; for %s output use %s %s (for a file of that "
                           "name, give ./%s)",
                           flag, path, path, flag, formats[i][1], format_flag, formats[i][1], path);
    return refuse_directory(flag, path, err);
}

int cli_write_output(const char *flag, const char *path, const char *data, size_t len,
                     gc_error *err)
{
    if (!strcmp(path, "-"))
        return write_all(stdout, data, len) == 0
                   ? 0
                   : gc_fail(err, GC_EXIT_RUNTIME, "cannot write to stdout: %s", strerror(errno));
    int rc = refuse_directory(flag, path, err);
    if (!rc && (rc = gc_file_write(path, data, len, err)) != 0)
        gc_error_prefix(err, "%s: ", flag);
    return rc;
}

/* Whether every comma-separated piece of `s` looks like NAME=VALUE. */
static bool every_piece_is_a_pair(const char *s)
{
    for (const char *piece = s; piece;) {
        const char *comma = strchr(piece, ',');
        const char *eq = strchr(piece, '=');
        if (!eq || eq == piece || (comma && eq > comma))
            return false;
        piece = comma ? comma + 1 : NULL;
    }
    return true;
}

/* --vars a=1,b=2 and --vars a=1 --vars b=2 both work; a comma stays part of a value unless
 * every piece is NAME=VALUE. `storage` keeps the split copies; the pieces are as many as given
 * (a NULL-terminated array to free). */
const char **cli_split_vars(const cli_list *list, char **storage, size_t *count)
{
    size_t n = 0, cap = list->count + 1;
    for (size_t i = 0; i < list->count; i++)
        for (const char *c = list->items[i]; *c; c++)
            cap += *c == ',';
    const char **out = gc_xcalloc(cap, sizeof(*out));
    for (size_t i = 0; i < list->count; i++) {
        char *copy = storage[i] = gc_xstrdup(list->items[i]);
        if (!every_piece_is_a_pair(copy)) {
            out[n++] = copy;
            continue;
        }
        for (char *save, *piece = strtok_r(copy, ",", &save); piece;
             piece = strtok_r(NULL, ",", &save))
            out[n++] = piece;
    }
    *count = n;
    return out;
}

const char *cli_manifests_dir_help(gc_buf *text, const char *before, void (*files)(gc_strings *))
{
    if (text->data)
        return text->data;
    gc_buf_init(text);
    gc_strings names = {0};
    files(&names);
    if (before)
        gc_buf_printf(text, "%s\n", before);
    gc_buf_puts(text, "Release files --manifests-dir reads (each project's release file renamed "
                      "NAME-VERSION.yaml;\nthe kubectl-apply module's default releases):\n");
    for (size_t i = 0; i < names.count; i++)
        gc_buf_printf(text, "  %s\n", names.items[i]);
    gc_strings_free(&names);
    return text->data;
}
