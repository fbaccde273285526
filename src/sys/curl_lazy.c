/*
 * libcurl, loaded when first used.
 *
 * Why: linking libcurl makes the dynamic loader map some thirty libraries it depends on (GnuTLS,
 * Kerberos, LDAP, libssh2, ...) and run their initialisers before main(): about 6 ms on every
 * start, three times what `job submit --dry-run-out` needs in total. So gcluster does not link
 * libcurl; this file defines the libcurl functions gcluster calls, each forwarding to the real
 * function of libcurl.so.4, which is opened (and every function looked up) the first time one is
 * needed. Commands that never talk to a server never load it.
 *
 * A missing or too old libcurl is an error like any other: sys_curl_load (called by
 * gc_http_init before any client starts) returns it with the fix, and the forwarders then answer
 * as libcurl does when it fails (NULL, CURLE_FAILED_INIT) instead of calling anything.
 *
 * Only the functions gcluster uses are here: calling another libcurl function fails at link time,
 * which is the reminder to add it to CURL_FUNCTIONS. Variadic setters forward their one argument
 * by the type libcurl's option numbering encodes (CURLOPTTYPE_*).
 */
#define CURL_DISABLE_TYPECHECK /* the type-checking macros would rename our definitions */
#include <curl/curl.h>

#include "sys/internal.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define LIBCURL "libcurl.so.4"

/* Every libcurl function gcluster calls: return type, name, parameters. */
#define CURL_FUNCTIONS(X)                                                                          \
    X(CURLcode, curl_global_init, (long))                                                          \
    X(void, curl_global_cleanup, (void))                                                           \
    X(char *, curl_version, (void))                                                                \
    X(CURL *, curl_easy_init, (void))                                                              \
    X(CURLcode, curl_easy_perform, (CURL *))                                                       \
    X(CURLcode, curl_easy_send, (CURL *, const void *, size_t, size_t *))                          \
    X(CURLcode, curl_easy_recv, (CURL *, void *, size_t, size_t *))                                \
    X(void, curl_easy_cleanup, (CURL *))                                                           \
    X(void, curl_easy_reset, (CURL *))                                                             \
    X(const char *, curl_easy_strerror, (CURLcode))                                                \
    X(char *, curl_easy_escape, (CURL *, const char *, int))                                       \
    X(void, curl_free, (void *))                                                                   \
    X(time_t, curl_getdate, (const char *, const time_t *))                                        \
    X(struct curl_slist *, curl_slist_append, (struct curl_slist *, const char *))                 \
    X(void, curl_slist_free_all, (struct curl_slist *))                                            \
    X(CURLcode, curl_easy_setopt, (CURL *, CURLoption, ...))                                       \
    X(CURLcode, curl_easy_getinfo, (CURL *, CURLINFO, ...))                                        \
    X(CURLM *, curl_multi_init, (void))                                                            \
    X(CURLMcode, curl_multi_setopt, (CURLM *, CURLMoption, ...))                                   \
    X(CURLMcode, curl_multi_add_handle, (CURLM *, CURL *))                                         \
    X(CURLMcode, curl_multi_remove_handle, (CURLM *, CURL *))                                      \
    X(CURLMcode, curl_multi_perform, (CURLM *, int *))                                             \
    X(CURLMcode, curl_multi_poll, (CURLM *, struct curl_waitfd *, unsigned int, int, int *))       \
    X(CURLMcode, curl_multi_fdset, (CURLM *, fd_set *, fd_set *, fd_set *, int *))                 \
    X(CURLMcode, curl_multi_timeout, (CURLM *, long *))                                            \
    X(CURLMsg *, curl_multi_info_read, (CURLM *, int *))                                           \
    X(CURLMcode, curl_multi_cleanup, (CURLM *))                                                    \
    X(CURLSH *, curl_share_init, (void))                                                           \
    X(CURLSHcode, curl_share_setopt, (CURLSH *, CURLSHoption, ...))                                \
    X(CURLSHcode, curl_share_cleanup, (CURLSH *))                                                  \
    X(CURLU *, curl_url, (void))                                                                   \
    X(void, curl_url_cleanup, (CURLU *))                                                           \
    X(CURLUcode, curl_url_get, (CURLU *, CURLUPart, char **, unsigned int))                        \
    X(CURLUcode, curl_url_set, (CURLU *, CURLUPart, const char *, unsigned int))

static struct {
#define DECLARE(ret, name, params) ret(*name) params;
    CURL_FUNCTIONS(DECLARE)
#undef DECLARE
} real;

static void *libcurl;
static bool loaded;
static char problem[512]; /* why it could not be loaded */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

/* POSIX guarantees a dlsym result converts to a function pointer; the memcpy keeps ISO C's
 * object/function pointer rule out of the way. */
static bool lookup(const char *name, void *slot, size_t size)
{
    void *found = dlsym(libcurl, name);
    if (!found) {
        snprintf(problem, sizeof(problem),
                 "%s has no %s; libcurl 7.80 or newer is needed (install Debian's libcurl4 "
                 "package)",
                 LIBCURL, name);
        return false;
    }
    memcpy(slot, &found, size);
    return true;
}

static void load(void)
{
    libcurl = dlopen(LIBCURL, RTLD_NOW | RTLD_LOCAL);
    if (!libcurl) {
        snprintf(problem, sizeof(problem), "cannot load %s (%s); install Debian's libcurl4 package",
                 LIBCURL, dlerror());
        return;
    }
#define LOOKUP(ret, name, params)                                                                  \
    if (!lookup(#name, &real.name, sizeof(real.name)))                                             \
        return;
    CURL_FUNCTIONS(LOOKUP)
#undef LOOKUP
    loaded = true;
}

static bool available(void)
{
    pthread_once(&load_once, load);
    return loaded;
}

int sys_curl_load(gc_error *err)
{
    return available() ? 0 : gc_fail(err, GC_EXIT_RUNTIME, "%s", problem);
}

int gc_http_library(char *out, size_t size, gc_error *err)
{
    if (!available())
        return gc_fail(err, GC_EXIT_RUNTIME, "%s", problem);
    struct link_map *map = NULL;
    const char *file = dlinfo(libcurl, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name[0]
                           ? map->l_name
                           : LIBCURL;
    snprintf(out, size, "%s (%s)", real.curl_version(), file);
    return 0;
}

CURLcode curl_global_init(long flags)
{
    return available() ? real.curl_global_init(flags) : CURLE_FAILED_INIT;
}

void curl_global_cleanup(void)
{
    if (loaded) /* never loaded: nothing to clean, and no reason to load it now */
        real.curl_global_cleanup();
}

CURL *curl_easy_init(void)
{
    return available() ? real.curl_easy_init() : NULL;
}

CURLcode curl_easy_perform(CURL *curl)
{
    return available() ? real.curl_easy_perform(curl) : CURLE_FAILED_INIT;
}

CURLcode curl_easy_send(CURL *curl, const void *buffer, size_t buflen, size_t *n)
{
    *n = 0;
    return available() ? real.curl_easy_send(curl, buffer, buflen, n) : CURLE_FAILED_INIT;
}

CURLcode curl_easy_recv(CURL *curl, void *buffer, size_t buflen, size_t *n)
{
    *n = 0;
    return available() ? real.curl_easy_recv(curl, buffer, buflen, n) : CURLE_FAILED_INIT;
}

void curl_easy_cleanup(CURL *curl)
{
    if (available())
        real.curl_easy_cleanup(curl);
}

void curl_easy_reset(CURL *curl)
{
    if (available())
        real.curl_easy_reset(curl);
}

const char *curl_easy_strerror(CURLcode code)
{
    return available() ? real.curl_easy_strerror(code) : problem;
}

char *curl_easy_escape(CURL *handle, const char *string, int length)
{
    return available() ? real.curl_easy_escape(handle, string, length) : NULL;
}

void curl_free(void *p)
{
    if (available())
        real.curl_free(p);
}

time_t curl_getdate(const char *p, const time_t *unused)
{
    return available() ? real.curl_getdate(p, unused) : -1;
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *data)
{
    return available() ? real.curl_slist_append(list, data) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
    if (available())
        real.curl_slist_free_all(list);
}

/* Options below CURLOPTTYPE_OBJECTPOINT take a long, below CURLOPTTYPE_OFF_T a pointer (object
 * or function), below CURLOPTTYPE_BLOB a curl_off_t, and blobs a pointer. Multi options number
 * the same way. */
#define FORWARD_OPTION(fn, handle, option, ap)                                                     \
    ((option) < CURLOPTTYPE_OBJECTPOINT ? fn(handle, option, va_arg(ap, long))                     \
     : (option) < CURLOPTTYPE_OFF_T     ? fn(handle, option, va_arg(ap, void *))                   \
     : (option) < CURLOPTTYPE_BLOB      ? fn(handle, option, va_arg(ap, curl_off_t))               \
                                        : fn(handle, option, va_arg(ap, void *)))

CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...)
{
    if (!available())
        return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, option);
    CURLcode rc = FORWARD_OPTION(real.curl_easy_setopt, curl, option, ap);
    va_end(ap);
    return rc;
}

CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
    if (!available())
        return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, info);
    CURLcode rc = real.curl_easy_getinfo(curl, info, va_arg(ap, void *)); /* always a pointer */
    va_end(ap);
    return rc;
}

CURLM *curl_multi_init(void)
{
    return available() ? real.curl_multi_init() : NULL;
}

CURLMcode curl_multi_setopt(CURLM *multi, CURLMoption option, ...)
{
    if (!available())
        return CURLM_BAD_HANDLE;
    va_list ap;
    va_start(ap, option);
    CURLMcode rc = FORWARD_OPTION(real.curl_multi_setopt, multi, option, ap);
    va_end(ap);
    return rc;
}

CURLMcode curl_multi_add_handle(CURLM *multi, CURL *curl)
{
    return available() ? real.curl_multi_add_handle(multi, curl) : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_remove_handle(CURLM *multi, CURL *curl)
{
    return available() ? real.curl_multi_remove_handle(multi, curl) : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_perform(CURLM *multi, int *running)
{
    if (available())
        return real.curl_multi_perform(multi, running);
    *running = 0;
    return CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_poll(CURLM *multi, struct curl_waitfd extra_fds[], unsigned int extra_nfds,
                          int timeout_ms, int *ret)
{
    return available() ? real.curl_multi_poll(multi, extra_fds, extra_nfds, timeout_ms, ret)
                       : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_fdset(CURLM *multi, fd_set *read_fd_set, fd_set *write_fd_set,
                           fd_set *exc_fd_set, int *max_fd)
{
    *max_fd = -1;
    return available() ? real.curl_multi_fdset(multi, read_fd_set, write_fd_set, exc_fd_set, max_fd)
                       : CURLM_BAD_HANDLE;
}

CURLMcode curl_multi_timeout(CURLM *multi, long *milliseconds)
{
    *milliseconds = -1;
    return available() ? real.curl_multi_timeout(multi, milliseconds) : CURLM_BAD_HANDLE;
}

CURLMsg *curl_multi_info_read(CURLM *multi, int *msgs_in_queue)
{
    return available() ? real.curl_multi_info_read(multi, msgs_in_queue) : NULL;
}

CURLMcode curl_multi_cleanup(CURLM *multi)
{
    return available() ? real.curl_multi_cleanup(multi) : CURLM_BAD_HANDLE;
}

CURLSH *curl_share_init(void)
{
    return available() ? real.curl_share_init() : NULL;
}

/* CURLSHOPT_SHARE and CURLSHOPT_UNSHARE take a long; the others a pointer. */
CURLSHcode curl_share_setopt(CURLSH *share, CURLSHoption option, ...)
{
    if (!available())
        return CURLSHE_NOT_BUILT_IN;
    va_list ap;
    va_start(ap, option);
    CURLSHcode rc = option == CURLSHOPT_SHARE || option == CURLSHOPT_UNSHARE
                        ? real.curl_share_setopt(share, option, va_arg(ap, long))
                        : real.curl_share_setopt(share, option, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

CURLSHcode curl_share_cleanup(CURLSH *share)
{
    return available() ? real.curl_share_cleanup(share) : CURLSHE_NOT_BUILT_IN;
}

CURLU *curl_url(void)
{
    return available() ? real.curl_url() : NULL;
}

void curl_url_cleanup(CURLU *handle)
{
    if (available())
        real.curl_url_cleanup(handle);
}

CURLUcode curl_url_get(CURLU *handle, CURLUPart what, char **part, unsigned int flags)
{
    return available() ? real.curl_url_get(handle, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}

CURLUcode curl_url_set(CURLU *handle, CURLUPart what, const char *part, unsigned int flags)
{
    return available() ? real.curl_url_set(handle, what, part, flags) : CURLUE_OUT_OF_MEMORY;
}
