/*
 * Text: edit distance, for "did you mean ...?" hints on commands, flags and compute types, and
 * the UTF-8 check for strings on their way into a manifest, and text from elsewhere escaped for
 * a terminal.
 */
#include "gcluster/text.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

size_t gc_text_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    /* One row of the dynamic programming table: row[j] is the distance between the first i
     * characters of a and the first j of b. */
    size_t *row = gc_xcalloc(lb + 1, sizeof(*row));
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t above = row[j];
            size_t best =
                diagonal + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    size_t distance = row[lb];
    free(row);
    return distance;
}

/* How many bytes the sequence starting at p has, if it is one well-formed character within
 * `left` bytes; 0 if it is not. The second byte's range excludes overlong forms (after 0xE0 and
 * 0xF0), surrogates (after 0xED) and code points above U+10FFFF (after 0xF4). */
static size_t utf8_sequence(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char low = 0x80, high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        low = c == 0xE0 ? 0xA0 : 0x80;
        high = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        low = c == 0xF0 ? 0x90 : 0x80;
        high = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (left < n || p[1] < low || p[1] > high)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

size_t gc_text_utf8_prefix(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_sequence(p + i, len - i);
        if (!n)
            break;
        i += n;
    }
    return i;
}

size_t gc_text_printable_char(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    if (!len || *p < 0x20 || *p == 0x7f)
        return 0;
    size_t n = utf8_sequence(p, len);
    /* U+0080..U+009F (C2 80..C2 9F): C1 controls, which terminals act on like ESC sequences. */
    if (n == 2 && p[0] == 0xC2 && p[1] < 0xA0)
        return 0;
    return n;
}

void gc_text_escape(gc_buf *out, const char *text, size_t len, size_t max)
{
    size_t i = 0, shown = 0;
    while (i < len && shown < max) {
        size_t n = gc_text_printable_char(text + i, len - i);
        if (n) {
            gc_buf_append(out, text + i, n);
            i += n;
            shown++;
        } else {
            if (shown + 4 > max)
                break;
            gc_buf_printf(out, "\\x%02x", (unsigned char)text[i++]);
            shown += 4;
        }
    }
    if (i < len)
        gc_buf_puts(out, "...");
}
