/*
 * Node pools: the gcloud command that creates each one, as an argv (run without a shell) and as a
 * line a user can paste.
 */
#include "gcluster/deploy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct argv_builder {
    char **items;
    size_t count;
} argv_builder;

static void push(argv_builder *b, char *owned)
{
    b->items = gc_xrealloc(b->items, (b->count + 2) * sizeof(*b->items));
    b->items[b->count++] = owned;
    b->items[b->count] = NULL;
}

static void push_flag(argv_builder *b, const char *flag, const char *value)
{
    if (value)
        push(b, gc_xasprintf("--%s=%s", flag, value));
}

static void push_count(argv_builder *b, const char *flag, long value)
{
    push(b, gc_xasprintf("--%s=%ld", flag, value));
}

/* Sizes: TPU slices and static pools are fixed; others autoscale between total bounds. A
 * pool that may be empty starts empty (gcloud's own default is three nodes per zone). */
static void push_size(argv_builder *b, const gc_pool_spec *p)
{
    if (p->static_nodes >= 0) {
        push_count(b, "num-nodes", p->static_nodes);
        return;
    }
    push_count(b, "num-nodes", p->min_nodes && !p->zones ? p->min_nodes : 0);
    push(b, gc_xstrdup("--enable-autoscaling"));
    push_count(b, "total-min-nodes", p->min_nodes);
    push_count(b, "total-max-nodes", p->max_nodes);
}

char **gc_pool_create_argv(const gc_pool_spec *pool, const char *project, const char *cluster,
                           const char *location, const char *default_zone)
{
    argv_builder b = {0};
    static const char *const words[] = {"gcloud", "container", "node-pools", "create"};
    for (size_t i = 0; i < 4; i++)
        push(&b, gc_xstrdup(words[i]));
    push(&b, gc_xstrdup(pool->name));
    push_flag(&b, "project", project);
    push_flag(&b, "cluster", cluster);
    push_flag(&b, "location", location);
    push_flag(&b, "node-locations", pool->zones ? pool->zones : default_zone);
    push_flag(&b, "machine-type", pool->machine_type);
    if (pool->topology) {
        push_flag(&b, "tpu-topology", pool->topology);
        if (pool->static_nodes > 1) /* a multi-host slice's hosts must sit together */
            push(&b, gc_xstrdup("--placement-type=COMPACT"));
    }
    push_size(&b, pool);
    if (pool->spot)
        push(&b, gc_xstrdup("--spot"));
    push(&b, gc_xstrdup("--scopes=https://www.googleapis.com/auth/cloud-platform"));
    return b.items;
}

void gc_argv_free(char **argv)
{
    for (char **a = argv; a && *a; a++)
        free(*a);
    free(argv);
}

static bool needs_quotes(const char *s)
{
    if (!*s)
        return true;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") !=
           strlen(s);
}

char *gc_argv_shell_line(char *const *argv)
{
    gc_buf line;
    gc_buf_init(&line);
    for (char *const *a = argv; *a; a++) {
        if (line.len)
            gc_buf_putc(&line, ' ');
        if (!needs_quotes(*a)) {
            gc_buf_puts(&line, *a);
            continue;
        }
        gc_buf_putc(&line, '\'');
        for (const char *c = *a; *c; c++) {
            if (*c == '\'')
                gc_buf_puts(&line, "'\\''");
            else
                gc_buf_putc(&line, *c);
        }
        gc_buf_putc(&line, '\'');
    }
    return gc_buf_detach(&line);
}
