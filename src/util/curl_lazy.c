/*
 * libcurl, loaded when first used.
 *
 * Why: linking libcurl makes the dynamic loader map some thirty libraries it depends on (GnuTLS,
 * Kerberos, LDAP, libssh2, ...) and run their initialisers before main(): about 6 ms on every
 * start, three times what `job submit --dry-run-out` needs in total. So gcluster does not link
 * libcurl; this file defines the libcurl functions gcluster calls, and each one opens
 * libcurl.so.4 on first use and forwards to the real function. Commands that never talk to a
 * server never load it.
 *
 * Only the functions gcluster uses are here: calling another libcurl function fails at link time,
 * which is the reminder to add it. Variadic setters forward their one argument by the type
 * libcurl's option numbering encodes (CURLOPTTYPE_*).
 */
#define CURL_DISABLE_TYPECHECK /* the type-checking macros would rename our definitions */
#include <curl/curl.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIBCURL "libcurl.so.4"

static void *libcurl;
static pthread_once_t libcurl_once = PTHREAD_ONCE_INIT;

/* Without libcurl gcluster cannot reach any server; like a missing library at start-up, this
 * ends the process, with the fix. */
static void open_libcurl(void)
{
    libcurl = dlopen(LIBCURL, RTLD_NOW | RTLD_LOCAL);
    if (!libcurl) {
        fprintf(stderr, "gcluster: error: cannot load %s (%s); install Debian's libcurl4 package\n",
                LIBCURL, dlerror());
        exit(1);
    }
}

static void *resolve(const char *name)
{
    pthread_once(&libcurl_once, open_libcurl);
    void *fn = dlsym(libcurl, name);
    if (!fn) {
        fprintf(stderr, "gcluster: error: %s has no %s; libcurl 7.80 or newer is needed\n", LIBCURL,
                name);
        exit(1);
    }
    return fn;
}

/* The real function, looked up once. (POSIX guarantees a dlsym result converts to a function
 * pointer; the memcpy keeps ISO C's object/function pointer rule out of the way.) */
#define REAL(ret, name, params)                                                                    \
    static ret(*real_##name) params;                                                               \
    if (!__atomic_load_n(&real_##name, __ATOMIC_ACQUIRE)) {                                        \
        void *found = resolve(#name);                                                              \
        __typeof__(real_##name) fn;                                                                \
        memcpy(&fn, &found, sizeof(fn));                                                           \
        __atomic_store_n(&real_##name, fn, __ATOMIC_RELEASE);                                      \
    }

CURLcode curl_global_init(long flags)
{
    REAL(CURLcode, curl_global_init, (long));
    return real_curl_global_init(flags);
}

void curl_global_cleanup(void)
{
    if (!libcurl) /* never loaded: nothing to clean, and no reason to load it now */
        return;
    REAL(void, curl_global_cleanup, (void));
    real_curl_global_cleanup();
}

CURL *curl_easy_init(void)
{
    REAL(CURL *, curl_easy_init, (void));
    return real_curl_easy_init();
}

CURLcode curl_easy_perform(CURL *curl)
{
    REAL(CURLcode, curl_easy_perform, (CURL *));
    return real_curl_easy_perform(curl);
}

void curl_easy_cleanup(CURL *curl)
{
    REAL(void, curl_easy_cleanup, (CURL *));
    real_curl_easy_cleanup(curl);
}

void curl_easy_reset(CURL *curl)
{
    REAL(void, curl_easy_reset, (CURL *));
    real_curl_easy_reset(curl);
}

const char *curl_easy_strerror(CURLcode code)
{
    REAL(const char *, curl_easy_strerror, (CURLcode));
    return real_curl_easy_strerror(code);
}

char *curl_easy_escape(CURL *handle, const char *string, int length)
{
    REAL(char *, curl_easy_escape, (CURL *, const char *, int));
    return real_curl_easy_escape(handle, string, length);
}

void curl_free(void *p)
{
    REAL(void, curl_free, (void *));
    real_curl_free(p);
}

time_t curl_getdate(const char *p, const time_t *unused)
{
    REAL(time_t, curl_getdate, (const char *, const time_t *));
    return real_curl_getdate(p, unused);
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *data)
{
    REAL(struct curl_slist *, curl_slist_append, (struct curl_slist *, const char *));
    return real_curl_slist_append(list, data);
}

void curl_slist_free_all(struct curl_slist *list)
{
    REAL(void, curl_slist_free_all, (struct curl_slist *));
    real_curl_slist_free_all(list);
}

/* Options below CURLOPTTYPE_OBJECTPOINT take a long, below CURLOPTTYPE_OFF_T a pointer (object
 * or function), below CURLOPTTYPE_BLOB a curl_off_t, and blobs a pointer. Multi options number
 * the same way. */
#define FORWARD_OPTION(real, handle, option, ap)                                                   \
    ((option) < CURLOPTTYPE_OBJECTPOINT ? real(handle, option, va_arg(ap, long))                   \
     : (option) < CURLOPTTYPE_OFF_T     ? real(handle, option, va_arg(ap, void *))                 \
     : (option) < CURLOPTTYPE_BLOB      ? real(handle, option, va_arg(ap, curl_off_t))             \
                                        : real(handle, option, va_arg(ap, void *)))

CURLcode curl_easy_setopt(CURL *curl, CURLoption option, ...)
{
    REAL(CURLcode, curl_easy_setopt, (CURL *, CURLoption, ...));
    va_list ap;
    va_start(ap, option);
    CURLcode rc = FORWARD_OPTION(real_curl_easy_setopt, curl, option, ap);
    va_end(ap);
    return rc;
}

CURLcode curl_easy_getinfo(CURL *curl, CURLINFO info, ...)
{
    REAL(CURLcode, curl_easy_getinfo, (CURL *, CURLINFO, ...));
    va_list ap;
    va_start(ap, info);
    CURLcode rc = real_curl_easy_getinfo(curl, info, va_arg(ap, void *)); /* always a pointer */
    va_end(ap);
    return rc;
}

CURLM *curl_multi_init(void)
{
    REAL(CURLM *, curl_multi_init, (void));
    return real_curl_multi_init();
}

CURLMcode curl_multi_setopt(CURLM *multi, CURLMoption option, ...)
{
    REAL(CURLMcode, curl_multi_setopt, (CURLM *, CURLMoption, ...));
    va_list ap;
    va_start(ap, option);
    CURLMcode rc = FORWARD_OPTION(real_curl_multi_setopt, multi, option, ap);
    va_end(ap);
    return rc;
}

CURLMcode curl_multi_add_handle(CURLM *multi, CURL *curl)
{
    REAL(CURLMcode, curl_multi_add_handle, (CURLM *, CURL *));
    return real_curl_multi_add_handle(multi, curl);
}

CURLMcode curl_multi_remove_handle(CURLM *multi, CURL *curl)
{
    REAL(CURLMcode, curl_multi_remove_handle, (CURLM *, CURL *));
    return real_curl_multi_remove_handle(multi, curl);
}

CURLMcode curl_multi_perform(CURLM *multi, int *running)
{
    REAL(CURLMcode, curl_multi_perform, (CURLM *, int *));
    return real_curl_multi_perform(multi, running);
}

CURLMcode curl_multi_poll(CURLM *multi, struct curl_waitfd extra_fds[], unsigned int extra_nfds,
                          int timeout_ms, int *ret)
{
    REAL(CURLMcode, curl_multi_poll, (CURLM *, struct curl_waitfd *, unsigned int, int, int *));
    return real_curl_multi_poll(multi, extra_fds, extra_nfds, timeout_ms, ret);
}

CURLMsg *curl_multi_info_read(CURLM *multi, int *msgs_in_queue)
{
    REAL(CURLMsg *, curl_multi_info_read, (CURLM *, int *));
    return real_curl_multi_info_read(multi, msgs_in_queue);
}

CURLMcode curl_multi_cleanup(CURLM *multi)
{
    REAL(CURLMcode, curl_multi_cleanup, (CURLM *));
    return real_curl_multi_cleanup(multi);
}

CURLSH *curl_share_init(void)
{
    REAL(CURLSH *, curl_share_init, (void));
    return real_curl_share_init();
}

/* CURLSHOPT_SHARE and CURLSHOPT_UNSHARE take a long; the others a pointer. */
CURLSHcode curl_share_setopt(CURLSH *share, CURLSHoption option, ...)
{
    REAL(CURLSHcode, curl_share_setopt, (CURLSH *, CURLSHoption, ...));
    va_list ap;
    va_start(ap, option);
    CURLSHcode rc = option == CURLSHOPT_SHARE || option == CURLSHOPT_UNSHARE
                        ? real_curl_share_setopt(share, option, va_arg(ap, long))
                        : real_curl_share_setopt(share, option, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

CURLSHcode curl_share_cleanup(CURLSH *share)
{
    REAL(CURLSHcode, curl_share_cleanup, (CURLSH *));
    return real_curl_share_cleanup(share);
}

CURLU *curl_url(void)
{
    REAL(CURLU *, curl_url, (void));
    return real_curl_url();
}

void curl_url_cleanup(CURLU *handle)
{
    REAL(void, curl_url_cleanup, (CURLU *));
    real_curl_url_cleanup(handle);
}

CURLUcode curl_url_get(CURLU *handle, CURLUPart what, char **part, unsigned int flags)
{
    REAL(CURLUcode, curl_url_get, (CURLU *, CURLUPart, char **, unsigned int));
    return real_curl_url_get(handle, what, part, flags);
}

CURLUcode curl_url_set(CURLU *handle, CURLUPart what, const char *part, unsigned int flags)
{
    REAL(CURLUcode, curl_url_set, (CURLU *, CURLUPart, const char *, unsigned int));
    return real_curl_url_set(handle, what, part, flags);
}
