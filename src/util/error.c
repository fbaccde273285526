#include "gcluster/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gc_fail(gc_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
        err->code = code;
        err->http_status = 0;
        err->reason[0] = '\0';
    }
    return code;
}

void gc_error_prefix(gc_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);

    /* Shift the message right to make room; a message too long for both is cut at the end. */
    size_t plen = strlen(prefix);
    size_t mlen = strlen(err->message);
    if (plen >= sizeof(err->message))
        plen = sizeof(err->message) - 1;
    if (plen + mlen >= sizeof(err->message))
        mlen = sizeof(err->message) - 1 - plen;
    memmove(err->message + plen, err->message, mlen);
    memcpy(err->message, prefix, plen);
    err->message[plen + mlen] = '\0';
}

void gc_error_clear(gc_error *err)
{
    if (err) {
        err->code = 0;
        err->http_status = 0;
        err->reason[0] = '\0';
        err->message[0] = '\0';
    }
}
