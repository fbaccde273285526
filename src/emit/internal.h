/*
 * What the emitter and the loader share inside emit/.
 */
#ifndef GCLUSTER_EMIT_INTERNAL_H
#define GCLUSTER_EMIT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* Whether a plain (unquoted) YAML scalar with this text would be read back as anything other
 * than a string (a boolean, null, a number, a timestamp) by a YAML 1.1 or 1.2 parser. */
bool emit_yaml_plain_is_ambiguous(const char *text, size_t len);

#endif
