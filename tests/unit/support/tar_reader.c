#include "tar_reader.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

char *tar_gunzip(const void *gz, size_t len, size_t *out_len)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return NULL;
    size_t cap = len * 4 + 1024, used = 0;
    char *out = malloc(cap);
    z.next_in = (unsigned char *)gz;
    z.avail_in = (uInt)len;
    int rc;
    do {
        if (used == cap)
            out = realloc(out, cap *= 2);
        z.next_out = (unsigned char *)out + used;
        z.avail_out = (uInt)(cap - used);
        rc = inflate(&z, Z_NO_FLUSH);
        used = cap - z.avail_out;
    } while (rc == Z_OK || (rc == Z_BUF_ERROR && z.avail_out == 0));
    inflateEnd(&z);
    if (rc != Z_STREAM_END || z.avail_in != 0) {
        free(out);
        return NULL;
    }
    *out_len = used;
    return out;
}

static unsigned long octal(const char *field, size_t width)
{
    unsigned long v = 0;
    for (size_t i = 0; i < width && field[i] >= '0' && field[i] <= '7'; i++)
        v = v * 8 + (unsigned long)(field[i] - '0');
    return v;
}

static char *field_string(const char *field, size_t width)
{
    size_t n = strnlen(field, width);
    char *s = malloc(n + 1);
    memcpy(s, field, n);
    s[n] = '\0';
    return s;
}

static int checksum_ok(const unsigned char *h)
{
    unsigned long sum = 0;
    for (size_t i = 0; i < 512; i++)
        sum += (i >= 148 && i < 156) ? ' ' : h[i];
    return sum == octal((const char *)h + 148, 8);
}

/* Applies "path" and "linkpath" records of a pax header to the next entry. */
static void pax_records(const char *p, size_t len, char **path, char **linkpath)
{
    const char *end = p + len;
    while (p < end) {
        char *sp;
        unsigned long rec = strtoul(p, &sp, 10);
        if (!rec || *sp != ' ' || p + rec > end)
            return;
        const char *kv = sp + 1, *eq = memchr(kv, '=', (size_t)(p + rec - kv));
        if (eq) {
            size_t klen = (size_t)(eq - kv), vlen = (size_t)(p + rec - 1 - (eq + 1));
            char **slot = klen == 4 && !strncmp(kv, "path", 4)       ? path
                          : klen == 8 && !strncmp(kv, "linkpath", 8) ? linkpath
                                                                     : NULL;
            if (slot) {
                free(*slot);
                *slot = malloc(vlen + 1);
                memcpy(*slot, eq + 1, vlen);
                (*slot)[vlen] = '\0';
            }
        }
        p += rec;
    }
}

int tar_parse(const char *data, size_t len, tar_archive *out, const char **why)
{
    memset(out, 0, sizeof(*out));
    char *pax_path = NULL, *pax_link = NULL;
    size_t off = 0;
    static const char zeros[512];
    while (off + 512 <= len) {
        const unsigned char *h = (const unsigned char *)data + off;
        if (memcmp(h, zeros, 512) == 0)
            return 0;
        if (!checksum_ok(h) || memcmp(h + 257, "ustar", 6) != 0) {
            *why = "bad header checksum or magic";
            return -1;
        }
        unsigned long size = octal((const char *)h + 124, 12);
        if (off + 512 + size > len) {
            *why = "truncated entry";
            return -1;
        }
        const char *body = data + off + 512;
        off += 512 + (size + 511) / 512 * 512;
        if (h[156] == 'x') {
            pax_records(body, size, &pax_path, &pax_link);
            continue;
        }
        out->entries = realloc(out->entries, (out->count + 1) * sizeof(tar_entry));
        tar_entry *e = &out->entries[out->count++];
        e->name = pax_path ? pax_path : field_string((const char *)h, 100);
        e->linkname = pax_link ? pax_link : field_string((const char *)h + 157, 100);
        pax_path = pax_link = NULL;
        e->type = (char)h[156];
        e->mode = (unsigned)octal((const char *)h + 100, 8);
        e->uid = octal((const char *)h + 108, 8);
        e->gid = octal((const char *)h + 116, 8);
        e->mtime = octal((const char *)h + 136, 12);
        e->size = size;
        e->data = malloc(size + 1);
        memcpy(e->data, body, size);
        e->data[size] = '\0';
    }
    free(pax_path);
    free(pax_link);
    *why = "no end-of-archive marker";
    return -1;
}

const tar_entry *tar_find(const tar_archive *a, const char *name)
{
    for (size_t i = 0; i < a->count; i++)
        if (strcmp(a->entries[i].name, name) == 0)
            return &a->entries[i];
    return NULL;
}

void tar_archive_free(tar_archive *a)
{
    for (size_t i = 0; i < a->count; i++) {
        free(a->entries[i].name);
        free(a->entries[i].linkname);
        free(a->entries[i].data);
    }
    free(a->entries);
    memset(a, 0, sizeof(*a));
}
