/*
 * gcluster's entry point: runs the command and prints the error message it returned. The exit
 * status is the GC_EXIT_* code that came back with the message, chosen where the failure was
 * known (each gc_fail call, in the library or the command's file); main passes it on unchanged.
 */
#include "cli/commands.h"
#include "cli/render.h"

#include "gcluster/http.h"
#include "gcluster/text.h"

#include <stdio.h>
#include <string.h>

/* The library's last words before it aborts (out of memory, a broken libcrypto), escaped as
 * cli_line escapes but without allocating: memory may be what ran out. */
static void say_fatal(const char *message)
{
    fputs("gcluster: fatal: ", stderr);
    for (size_t i = 0, len = strlen(message); i < len;) {
        size_t n = gc_text_printable_char(message + i, len - i);
        if (n)
            fwrite(message + i, 1, n, stderr);
        else
            fprintf(stderr, "\\x%02x", (unsigned char)message[i]);
        i += n ? n : 1;
    }
    fputc('\n', stderr);
    fflush(stderr);
}

int main(int argc, char **argv)
{
    gc_fatal_set_handler(say_fatal);
    /* libcurl (and with it OpenSSL, ~10 ms) is initialised by the first client that needs it,
     * so offline commands never pay for it; cleaning up is a no-op when nothing did. */
    gc_error err = {0};
    int rc = cli_dispatch(argc - 1, argv + 1, &err);
    gc_http_cleanup();
    /* Messages carry the user's own input (flag values, names, file contents) as well as
     * server text; either may hold bytes a terminal acts on, so both are escaped here. */
    if (rc && err.message[0])
        cli_line(stderr, "gcluster: error: %s", err.message);
    return rc;
}
