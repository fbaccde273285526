#include "cli/options.h"

#include "gcluster/sys.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const cli_option cli_global_options[] = {
    CLI_GROUP("Cluster selection (every job, cluster and deploy command)"),
    CLI_STRING(
        'c', "cluster", cli_globals, cluster, "NAME",
        "GKE cluster name; with --location selects the context gke_<project>_<location>_<name>"),
    CLI_STRING('l', "location", cli_globals, location, "LOCATION",
               "zone or region of the GKE cluster"),
    CLI_STRING('p', "project", cli_globals, project, "PROJECT", "Google Cloud project ID"),
    CLI_STRING(0, "context", cli_globals, context, "CONTEXT",
               "kubeconfig context to use (wins over --cluster/--location)"),
    CLI_STRING(0, "kubeconfig", cli_globals, kubeconfig, "FILE",
               "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)"),
    CLI_STRING(0, "namespace", cli_globals, ns, "NAMESPACE",
               "namespace (default: the context's namespace, else \"default\")"),
    CLI_STRING(0, "request-timeout", cli_globals, request_timeout, "DURATION",
               "the longest one API request may take, as 30s or 2m (default 60s; a list read as "
               "it arrives: that long without content, five times that in all)"),
    CLI_COUNT('v', "verbose", cli_globals, verbose,
              "trace API requests (credentials redacted); twice for headers and bodies"),
    CLI_BOOL('h', "help", cli_globals, help, "show this help"),
    CLI_BOOL(0, "version", cli_globals, version, "print the version"),
    CLI_END,
};

static void *field(void *args, size_t offset)
{
    return (char *)args + offset;
}

static const cli_option *find_long(const cli_option *table, const char *name, size_t len)
{
    for (const cli_option *o = table; o->kind != CLI_OPT_END; o++)
        if (o->long_name && strlen(o->long_name) == len && !strncmp(o->long_name, name, len))
            return o;
    return NULL;
}

static const cli_option *find_short(const cli_option *table, char name)
{
    for (const cli_option *o = table; o->kind != CLI_OPT_END; o++)
        if (o->kind != CLI_OPT_GROUP && o->short_name == name)
            return o;
    return NULL;
}

const cli_option *cli_find_option(const cli_option *options, const char *name, size_t len,
                                  char short_name)
{
    const cli_option *o = !options ? NULL
                          : name   ? find_long(options, name, len)
                                   : find_short(options, short_name);
    if (!o)
        o = name ? find_long(cli_global_options, name, len)
                 : find_short(cli_global_options, short_name);
    return o;
}

/* The closest long option name in either table, if it is close enough to be a likely typo. */
static const char *suggest(const cli_option *options, const char *typed)
{
    const cli_option *tables[] = {options, cli_global_options};
    const char *best = NULL;
    size_t best_distance = 4;
    for (size_t t = 0; t < 2; t++) {
        for (const cli_option *o = tables[t]; o->kind != CLI_OPT_END; o++) {
            if (!o->long_name)
                continue;
            size_t d = gc_text_edit_distance(typed, o->long_name);
            if (d < best_distance || (strstr(o->long_name, typed) && !best)) {
                best = o->long_name;
                best_distance = d;
            }
        }
    }
    return best;
}

static int unknown_option(const cli_option *options, const char *typed, gc_error *err)
{
    const char *hint = suggest(options, typed);
    if (hint)
        return gc_fail(err, GC_EXIT_USAGE, "unknown option --%s; did you mean --%s? (see --help)",
                       typed, hint);
    return gc_fail(err, GC_EXIT_USAGE, "unknown option --%s (see --help)", typed);
}

static int parse_bool_value(const cli_option *o, const char *value, bool *out, gc_error *err)
{
    if (!strcasecmp(value, "true") || !strcmp(value, "1") || !strcasecmp(value, "yes"))
        *out = true;
    else if (!strcasecmp(value, "false") || !strcmp(value, "0") || !strcasecmp(value, "no"))
        *out = false;
    else
        return gc_fail(err, GC_EXIT_USAGE, "--%s takes true or false, not \"%s\"", o->long_name,
                       value);
    return 0;
}

static int parse_int_value(const cli_option *o, const char *value, long *out, gc_error *err)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (!*value || *end || errno == ERANGE || v > INT_MAX || v < INT_MIN)
        return gc_fail(err, GC_EXIT_USAGE, "--%s takes a whole number, not \"%s\"", o->long_name,
                       value);
    *out = v;
    return 0;
}

static const char *option_label(const cli_option *o, char buf[80])
{
    if (o->long_name)
        snprintf(buf, 80, "--%s", o->long_name);
    else
        snprintf(buf, 80, "-%c", o->short_name);
    return buf;
}

/* Every value on the command line may end up in a manifest or a request, and Kubernetes (like
 * JSON) carries only UTF-8: a value that is not is refused here, with where the bad byte is
 * rather than the byte itself (it could be half of a terminal escape). */
static int check_utf8(const char *what, const char *value, gc_error *err)
{
    size_t len = strlen(value);
    size_t good = gc_text_utf8_prefix(value, len);
    if (good == len)
        return 0;
    return gc_fail(err, GC_EXIT_USAGE,
                   "%s is not valid UTF-8 (it stops being UTF-8 at byte %zu (0x%02x)); "
                   "Kubernetes stores text as UTF-8: convert the value, e.g. with iconv -t UTF-8",
                   what, good + 1, (unsigned char)value[good]);
}

/* Stores one occurrence of option `o` (value NULL for flags). */
static int store(const cli_option *o, void *args, const char *value, gc_error *err)
{
    char label[80];
    if (value && check_utf8(option_label(o, label), value, err))
        return err->code;
    void *slot = field(args, o->offset);
    if (value && o->values && !cli_value_allowed(o->values, value)) {
        char choices[256];
        cli_values_join(o->values, NULL, choices, sizeof(choices));
        return gc_fail(err, GC_EXIT_USAGE, "--%s %s: use %s", o->long_name, value, choices);
    }
    if (o->seen_offset)
        *(bool *)field(args, o->seen_offset) = true;
    switch (o->kind) {
    case CLI_OPT_STRING:
        *(const char **)slot = value;
        return 0;
    case CLI_OPT_INT:
        return parse_int_value(o, value, (long *)slot, err);
    case CLI_OPT_BOOL:
        if (!value)
            return *(bool *)slot = true, 0;
        return parse_bool_value(o, value, (bool *)slot, err);
    case CLI_OPT_COUNT:
        (*(int *)slot)++;
        return 0;
    case CLI_OPT_LIST: {
        cli_list *list = slot;
        if (list->count == CLI_LIST_MAX)
            return gc_fail(err, GC_EXIT_USAGE, "--%s given more than %d times", o->long_name,
                           CLI_LIST_MAX);
        list->items[list->count++] = value;
        return 0;
    }
    default:
        return 0;
    }
}

bool cli_option_takes_value(const cli_option *o)
{
    return o->kind == CLI_OPT_STRING || o->kind == CLI_OPT_INT || o->kind == CLI_OPT_LIST;
}

const char *cli_option_arg(const cli_option *o, char *buf, size_t size)
{
    if (!cli_option_takes_value(o))
        return "";
    if (o->arg_name)
        return o->arg_name;
    if (o->values && o->values->names) {
        cli_values_join(o->values, "|", buf, size);
        return buf;
    }
    return "VALUE";
}

/* "--name=value", "--name value" or "--flag". Consumes the value argument when needed. */
static int parse_long(const cli_option *options, void *args, int argc, char **argv, int *i,
                      gc_error *err)
{
    const char *spec = argv[*i] + 2;
    const char *eq = strchr(spec, '=');
    size_t len = eq ? (size_t)(eq - spec) : strlen(spec);
    const cli_option *o = cli_find_option(options, spec, len, 0);
    if (!o) {
        char typed[128];
        snprintf(typed, sizeof(typed), "%.*s", (int)len, spec);
        return unknown_option(options, typed, err);
    }
    const char *value = eq ? eq + 1 : NULL;
    char arg[256];
    if (cli_option_takes_value(o) && !value) {
        if (*i + 1 >= argc)
            return gc_fail(err, GC_EXIT_USAGE, "--%s needs a value (%s)", o->long_name,
                           cli_option_arg(o, arg, sizeof(arg)));
        value = argv[++*i];
    }
    if (!cli_option_takes_value(o) && value && o->kind != CLI_OPT_BOOL)
        return gc_fail(err, GC_EXIT_USAGE, "--%s does not take a value", o->long_name);
    return store(o, args, value, err);
}

/* "-n value", "-nvalue" or bundled flags "-vv". */
static int parse_short(const cli_option *options, void *args, int argc, char **argv, int *i,
                       gc_error *err)
{
    const char *p = argv[*i] + 1;
    while (*p) {
        const cli_option *o = cli_find_option(options, NULL, 0, *p);
        if (!o)
            return gc_fail(err, GC_EXIT_USAGE, "unknown option -%c (see --help)", *p);
        if (!cli_option_takes_value(o)) {
            int rc = store(o, args, NULL, err);
            if (rc)
                return rc;
            p++;
            continue;
        }
        const char *value = p[1] ? p + 1 : NULL;
        if (!value) {
            char label[80];
            if (*i + 1 >= argc)
                return gc_fail(err, GC_EXIT_USAGE, "-%c (%s) needs a value", *p,
                               option_label(o, label));
            value = argv[++*i];
        }
        return store(o, args, value, err);
    }
    return 0;
}

int cli_parse(const cli_option *options, void *args, int argc, char **argv, cli_parsed *parsed,
              gc_error *err)
{
    memset(parsed, 0, sizeof(*parsed));
    bool only_positional = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc = 0;
        if (!only_positional && !strcmp(a, "--")) {
            only_positional = true;
            parsed->dashdash = true;
            parsed->dashdash_at = parsed->positional_count;
        } else if (!only_positional && a[0] == '-' && a[1] == '-')
            rc = parse_long(options, args, argc, argv, &i, err);
        else if (!only_positional && a[0] == '-' && a[1])
            rc = parse_short(options, args, argc, argv, &i, err);
        else if (check_utf8("an argument", a, err))
            rc = err->code;
        else if (parsed->positional_count == CLI_POSITIONAL_MAX)
            rc = gc_fail(err, GC_EXIT_USAGE, "too many arguments (\"%s\")", a);
        else
            parsed->positional[parsed->positional_count++] = a;
        if (rc)
            return rc;
    }
    return 0;
}

char cli_shown_short(const cli_option *o, const cli_option *command_options)
{
    if (!o->short_name || !command_options)
        return o->short_name;
    const cli_option *own = find_short(command_options, o->short_name);
    return own && own != o ? 0 : o->short_name;
}

void cli_print_options(FILE *out, const cli_option *options, const cli_option *command_options)
{
    for (const cli_option *o = options; o->kind != CLI_OPT_END; o++) {
        if (o->kind == CLI_OPT_GROUP) {
            fprintf(out, "\n%s:\n", o->help);
            continue;
        }
        char arg[256];
        char left[400];
        char short_name = cli_shown_short(o, command_options);
        snprintf(left, sizeof(left), "  %c%c%s--%s%s%s", short_name ? '-' : ' ',
                 short_name ? short_name : ' ', short_name ? ", " : "  ", o->long_name,
                 cli_option_takes_value(o) ? " " : "", cli_option_arg(o, arg, sizeof(arg)));
        if (strlen(left) > 34)
            fprintf(out, "%s\n%36s%s\n", left, "", o->help);
        else
            fprintf(out, "%-36s%s\n", left, o->help);
    }
}
