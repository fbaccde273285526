/*
 * sys/'s small plumbing: base64, reading files with a limit, edit distance, RFC 3339 time
 * stamps, and the fatal handler.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gcluster/error.h"
#include "gcluster/sys.h"
#include "kube_test.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* --- base64 ----------------------------------------------------------------------------- */

static void base64_round_trips(void **state)
{
    (void)state;
    static const struct {
        const char *data;
        size_t len;
    } samples[] = {{"", 0}, {"f", 1}, {"fo", 2}, {"foo", 3}, {"user:pa:ss", 10}, {"\xff\0\x01", 3}};
    for (size_t i = 0; i < sizeof(samples) / sizeof(*samples); i++) {
        char *enc = gc_base64_encode(samples[i].data, samples[i].len);
        size_t len = 99;
        unsigned char *dec = gc_base64_decode(enc, strlen(enc), &len);
        assert_non_null(dec);
        assert_int_equal(len, samples[i].len);
        assert_memory_equal(dec, samples[i].data, len);
        assert_int_equal(dec[len], '\0');
        free(enc);
        free(dec);
    }
}

static void base64_known_values(void **state)
{
    (void)state;
    char *enc = gc_base64_encode("alice:s3cret", 12);
    assert_string_equal(enc, "YWxpY2U6czNjcmV0");
    free(enc);
    enc = gc_base64_encode("fo", 2);
    assert_string_equal(enc, "Zm8=");
    free(enc);
    /* Padding is optional and whitespace (PEM line breaks) is skipped. */
    static const char *const foo[] = {"Zm9v", "Zm8=", "Zm8", " Zm\n9v\r\n"};
    static const char *const want[] = {"foo", "fo", "fo", "foo"};
    for (size_t i = 0; i < 4; i++) {
        size_t len;
        unsigned char *dec = gc_base64_decode(foo[i], strlen(foo[i]), &len);
        assert_non_null(dec);
        assert_string_equal((char *)dec, want[i]);
        free(dec);
    }
}

static void base64_rejects_what_is_not_base64(void **state)
{
    (void)state;
    static const char *const bad[] = {"not*base64", "Zm8=Zm8=", "Z", "Zm9v=====", "Zm9v\x80"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        if (gc_base64_decode(bad[i], strlen(bad[i]), NULL))
            fail_msg("\"%s\" was accepted as base64", bad[i]);
}

/* --- files ------------------------------------------------------------------------------ */

static char *file_of_size(const kube_test_env *env, const char *name, size_t size)
{
    char *path = gc_xasprintf("%s/%s", env->tmp, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < size; i++)
        fputc('a' + (int)(i % 26), f);
    fclose(f);
    return path;
}

static void file_read_whole_and_appended(void **state)
{
    const kube_test_env *env = *state;
    char *path = file_of_size(env, "whole", 100000);
    gc_buf b;
    gc_buf_init(&b);
    gc_buf_puts(&b, "before:");
    gc_error err = {0};
    assert_int_equal(gc_file_read(path, 100000, &b, &err), 0);
    assert_int_equal(b.len, 7 + 100000);
    assert_memory_equal(b.data, "before:abc", 10);
    assert_int_equal(b.data[b.len - 1], 'a' + (100000 - 1) % 26);
    assert_int_equal(b.data[b.len], '\0');
    gc_buf_free(&b);
    free(path);
}

static void file_read_refuses_a_file_over_the_limit(void **state)
{
    const kube_test_env *env = *state;
    char *path = file_of_size(env, "big", 2049);
    gc_buf b;
    gc_buf_init(&b);
    gc_buf_puts(&b, "kept");
    gc_error err = {0};
    assert_int_equal(gc_file_read(path, 2048, &b, &err), GC_EXIT_USAGE);
    assert_int_equal(errno, EFBIG);
    assert_non_null(strstr(err.message, path));
    assert_non_null(strstr(err.message, "is larger than 2 KiB"));
    assert_string_equal(b.data, "kept"); /* nothing of the file is left behind */
    assert_int_equal(b.len, 4);
    free(path);
    path = file_of_size(env, "exact", 2048);
    assert_int_equal(gc_file_read(path, 2048, &b, &err), 0);
    assert_int_equal(b.len, 4 + 2048);
    gc_buf_free(&b);
    free(path);
}

static void file_read_says_why_it_cannot(void **state)
{
    const kube_test_env *env = *state;
    gc_buf b;
    gc_buf_init(&b);
    gc_error err = {0};
    char *missing = gc_xasprintf("%s/missing.yaml", env->tmp);
    assert_int_equal(gc_file_read(missing, 1024, &b, &err), GC_EXIT_USAGE);
    assert_int_equal(errno, ENOENT);
    char *want = gc_xasprintf("cannot read %s: No such file or directory", missing);
    assert_string_equal(err.message, want);
    free(want);
    free(missing);
    assert_int_equal(gc_file_read(env->tmp, 1024, &b, &err), GC_EXIT_USAGE);
    assert_int_equal(errno, EISDIR);
    assert_non_null(strstr(err.message, "Is a directory"));
    assert_int_equal(b.len, 0);
    gc_buf_free(&b);
}

/* --- edit distance ---------------------------------------------------------------------- */

static void edit_distance(void **state)
{
    (void)state;
    assert_int_equal(gc_text_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(gc_text_edit_distance("", "abc"), 3);
    assert_int_equal(gc_text_edit_distance("abc", ""), 3);
    assert_int_equal(gc_text_edit_distance("", ""), 0);
    assert_int_equal(gc_text_edit_distance("--compute-typ", "--compute-type"), 1);
    assert_int_equal(gc_text_edit_distance("V6E-16", "v6e-16"), 0); /* case is not a typo */
    assert_int_equal(gc_text_edit_distance("v6e-16", "v5e-16"), 1);
    /* Long names are compared whole, not cut. */
    char a[201], b[201];
    memset(a, 'x', 200);
    memset(b, 'x', 200);
    a[200] = b[200] = '\0';
    b[199] = 'y';
    assert_int_equal(gc_text_edit_distance(a, b), 1);
    assert_int_equal(gc_text_edit_distance(a, "x"), 199);
}

/* --- time ------------------------------------------------------------------------------- */

static void rfc3339_time_stamps(void **state)
{
    (void)state;
    time_t t = 0;
    assert_true(gc_clock_parse_rfc3339("2024-05-01T12:00:00Z", &t));
    assert_int_equal(t, 1714564800);
    assert_true(gc_clock_parse_rfc3339("2024-05-01T14:00:00.5+02:00", &t));
    assert_int_equal(t, 1714564800);
    assert_true(gc_clock_parse_rfc3339("2024-05-01t07:30:00-04:30", &t));
    assert_int_equal(t, 1714564800);
    static const char *const bad[] = {"2024-05-01 12:00:00Z",  "2024-05-01T12:00:00",
                                      "2024-13-01T12:00:00Z",  "2024-05-01T12:00:00Zjunk",
                                      "2024-05-01T12:00:00.Z", "yesterday"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
        if (gc_clock_parse_rfc3339(bad[i], &t))
            fail_msg("\"%s\" was accepted as RFC 3339", bad[i]);
}

/* Object fields: the one parser behind every age, so an offset counts and trailing text does
 * not pass as a time (a copy with strptime once dropped "+01:00" and took "Zjunk"). */
static void timestamps_of_object_fields(void **state)
{
    (void)state;
    assert_int_equal(gc_clock_timestamp(NULL), -1);
    assert_int_equal(gc_clock_timestamp("2026-12-02T17:30:00Z"), 1796232600LL);
    assert_int_equal(gc_clock_timestamp("2026-12-02T18:30:00+01:00"), 1796232600LL);
    assert_int_equal(gc_clock_timestamp("2026-12-02T17:30:00Z and more"), -1);
    assert_int_equal(gc_clock_timestamp("2026-12-02T17:30:00"), -1);
    char age[16];
    assert_true(
        gc_clock_format_age("2026-12-02T18:30:00+01:00", 1796232600LL + 300, age, sizeof(age)));
    assert_string_equal(age, "5m");
    assert_false(gc_clock_format_age("2026-12-02T17:30:00Zjunk", 1796232600LL, age, sizeof(age)));
    assert_string_equal(age, "?");
    gc_clock_format_duration(3600, age, sizeof(age));
    assert_string_equal(age, "1h");
    gc_clock_format_duration(3 * 86400 + 5, age, sizeof(age));
    assert_string_equal(age, "3d");
}

static void durations(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        long seconds;
    } good[] = {{"3600", 3600},  {"90s", 90},      {"5m", 300}, {"1h", 3600},
                {"1h30m", 5400}, {"2h0m5s", 7205}, {"0", 0}};
    for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
        long s = -1;
        gc_error err = {0};
        if (gc_clock_parse_duration("--timeout", good[i].text, &s, &err) || s != good[i].seconds)
            fail_msg("\"%s\": %ld (%s)", good[i].text, s, err.message);
    }
    static const char *const bad[] = {"", "m5", "1m1h", "1h1h", "5d", "1h30", "-5s", "9999999999s"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        long s = 0;
        gc_error err = {0};
        if (gc_clock_parse_duration("--wait", bad[i], &s, &err) != GC_EXIT_USAGE)
            fail_msg("\"%s\" was accepted as a duration (%ld)", bad[i], s);
        assert_non_null(strstr(err.message, "--wait"));
    }
}

/* --- the fatal handler ------------------------------------------------------------------- */

static int fatal_pipe = -1;

static void to_pipe(const char *message)
{
    ssize_t ignored = write(fatal_pipe, message, strlen(message));
    (void)ignored;
}

static void fatal_goes_through_the_handler_then_aborts(void **state)
{
    (void)state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        fatal_pipe = fds[1];
        signal(SIGABRT, SIG_DFL);
        gc_fatal_set_handler(to_pipe);
        gc_fatal("out of memory allocating %zu bytes", (size_t)4096);
    }
    close(fds[1]);
    char said[256] = "";
    ssize_t n = read(fds[0], said, sizeof(said) - 1);
    said[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    assert_string_equal(said, "out of memory allocating 4096 bytes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(base64_round_trips),
        cmocka_unit_test(base64_known_values),
        cmocka_unit_test(base64_rejects_what_is_not_base64),
        cmocka_unit_test(file_read_whole_and_appended),
        cmocka_unit_test(file_read_refuses_a_file_over_the_limit),
        cmocka_unit_test(file_read_says_why_it_cannot),
        cmocka_unit_test(edit_distance),
        cmocka_unit_test(rfc3339_time_stamps),
        cmocka_unit_test(timestamps_of_object_fields),
        cmocka_unit_test(durations),
        cmocka_unit_test(fatal_goes_through_the_handler_then_aborts),
    };
    return cmocka_run_group_tests(tests, kube_test_env_setup_dir, kube_test_env_teardown);
}
