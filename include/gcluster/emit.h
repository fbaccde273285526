/*
 * emit: the one place where objects become text, and YAML text becomes objects.
 *
 * Manifests are built as jansson objects (insertion-ordered) and emitted here: as YAML for people
 * (and --dry-run-out), as JSON for the API server. The YAML emitter goes through libyaml, which
 * guarantees well-formed output, and decides quoting itself: libyaml would happily write the
 * string "true" or "0755" as a plain scalar that reads back as a boolean or a number, so every
 * string a YAML 1.1 or 1.2 parser could resolve to something else is quoted.
 *
 * The loader turns YAML (kubeconfig, blueprints, templates, manifests) into the same objects,
 * with the line and column of every value kept aside for error messages.
 */
#ifndef GCLUSTER_EMIT_H
#define GCLUSTER_EMIT_H

#include "gcluster/buf.h"
#include "gcluster/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Appends `doc` as one YAML document (no "---" line) to `out`. */
int gc_emit_yaml(const json_t *doc, gc_buf *out, gc_error *err);

/* Appends several documents, each introduced by a "---" line. */
int gc_emit_yaml_documents(const json_t *const *docs, size_t count, gc_buf *out, gc_error *err);

/* Appends `doc` as JSON: indented by two spaces for people, or compact for the API. */
void gc_emit_json(const json_t *doc, bool pretty, gc_buf *out);

/* Where a value came from in its YAML source (1-based). */
typedef struct gc_yaml_mark {
    const json_t *container; /* the object or array holding the value; NULL for a root */
    char *key;               /* its key in an object, or NULL for an array element */
    size_t index;            /* its index in an array */
    int line;
    int column;
} gc_yaml_mark;

/* A loaded YAML stream: one JSON value per document, plus the source marks. */
typedef struct gc_yaml_doc {
    char *name;        /* file name (or a label) used in messages */
    json_t *documents; /* array with one element per YAML document */
    gc_yaml_mark *marks;
    size_t mark_count;
    size_t mark_cap;
} gc_yaml_doc;

/* What aliases may copy in one YAML stream, in values (each scalar, list and mapping counts one)
 * and in bytes of strings and keys. An alias is a copy of its anchor's value, so aliases of
 * aliases grow exponentially ("billion laughs"); the real files gcluster reads (kubeconfigs,
 * Cluster Toolkit blueprints and Kueue templates) copy a few dozen values, if any. */
#define GC_YAML_MAX_ALIAS_VALUES 100000
#define GC_YAML_MAX_ALIAS_BYTES  (4u << 20)

/* Loads YAML text. Plain scalars resolve by the YAML 1.2 core schema (null, true/false, integers,
 * floats; everything else is a string); quoted scalars are strings. Anchors and aliases are
 * supported, within GC_YAML_MAX_ALIAS_VALUES/_BYTES for the stream ("alias expansion too large"
 * past them); an alias inside the value it names is refused. A plain "<<" key merges its value (a
 * mapping or a list of mappings, usually aliases) into the mapping, whose own keys win, as
 * Kubernetes' and Cluster Toolkit's YAML readers do. Errors carry
 * "<name>:<line>:<column>: <problem>". */
int gc_yaml_load(const char *text, size_t len, const char *name, gc_yaml_doc *doc, gc_error *err);
/* The same for a file (at most 4 MiB, as is the text gc_yaml_load takes); an unreadable file is a
 * usage error naming it. */
int gc_yaml_load_file(const char *path, gc_yaml_doc *doc, gc_error *err);
void gc_yaml_doc_free(gc_yaml_doc *doc);

/* The first document, or NULL when the stream is empty. Borrowed. */
json_t *gc_yaml_root(const gc_yaml_doc *doc);

/* What kind of YAML value `v` is, for messages: "a mapping", "a list", "a string",
 * "an integer", "a number", "a boolean" or "null". */
const char *gc_yaml_type_name(const json_t *v);

/* Finds where container[key] (key != NULL) or container[index] came from; false if unknown. */
bool gc_yaml_mark_of(const gc_yaml_doc *doc, const json_t *container, const char *key, size_t index,
                     int *line, int *column);

#endif
