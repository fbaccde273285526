/*
 * text: pure functions on strings that several layers share: the edit distance behind "did you
 * mean" hints (catalog/, cli/), the UTF-8 check every string bound for the API passes, and
 * server or file text made safe to show on a terminal. In src/util/text.c, so that catalog/ and
 * emit/, which may include only util, can use them.
 */
#ifndef GCLUSTER_TEXT_H
#define GCLUSTER_TEXT_H

#include "gcluster/buf.h"

#include <stddef.h>

/* The Levenshtein distance between two names, ignoring ASCII case: how many single-character
 * insertions, deletions or substitutions turn one into the other. For "did you mean" hints. */
size_t gc_text_edit_distance(const char *a, const char *b);

/* The length of the longest prefix of s[0, len) that is well-formed UTF-8 (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF), so len when all of it is. Kubernetes
 * and JSON carry only such text. */
size_t gc_text_utf8_prefix(const char *s, size_t len);

/* The length of the character at s (at most len bytes) when a terminal shows it as itself: a
 * printable ASCII byte, or a whole UTF-8 sequence that is not a C1 control; 0 for a control
 * character, a C1 control or a byte that is not UTF-8, which a terminal may act on. */
size_t gc_text_printable_char(const char *s, size_t len);
/* Appends `len` bytes of text from elsewhere (a server, a file) to `out` as it can be shown:
 * what gc_text_printable_char refuses as \xNN (newlines too), at most `max` columns of it, then
 * "..." when some was left out. */
void gc_text_escape(gc_buf *out, const char *text, size_t len, size_t max);

#endif
