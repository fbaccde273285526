/*
 * Where `--dry-run-out FILE` writes: a regular file is replaced atomically, but a device or a pipe
 * (/dev/null, /dev/stdout, a FIFO) must be written in place — renaming a file over it replaced
 * /dev/null itself once — and a symbolic link must keep pointing at the file it names.
 */
#include "run_cli.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[] = "/tmp/gcluster-output-XXXXXX";

static int make_dir(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    char *cmd = gc_xasprintf("rm -rf '%s'", dir);
    int rc = system(cmd);
    free(cmd);
    return rc == 0 ? 0 : -1;
}

static void submit_to(cli_result *r, const char *path)
{
    const char *args[] = {"job",
                          "submit",
                          "--name",
                          "out-test",
                          "--compute-type",
                          "v6e-16",
                          "--image",
                          "registry.example/img:1",
                          "--command",
                          "true",
                          "--dry-run-out",
                          path,
                          NULL};
    const char *env[] = {"HOME=/nonexistent-home-for-tests", NULL};
    run_cli(r, args, env);
}

static void a_fifo_is_written_in_place(void **state)
{
    (void)state;
    char *fifo = gc_xasprintf("%s/fifo", dir);
    char *copy = gc_xasprintf("%s/copy", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    /* A reader that copies whatever arrives through the FIFO until the writer closes it; if the
     * FIFO is replaced, nobody ever opens it for writing, and the alarm ends the wait. */
    pid_t reader = fork();
    assert_true(reader >= 0);
    if (reader == 0) {
        alarm(20);
        int in = open(fifo, O_RDONLY);
        int out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        char buf[4096];
        ssize_t n;
        while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
            if (write(out, buf, (size_t)n) != n)
                _exit(1);
        _exit(in >= 0 && out >= 0 ? 0 : 1);
    }
    cli_result r;
    submit_to(&r, fifo);
    int status = 0;
    assert_int_equal(waitpid(reader, &status, 0), reader);
    assert_int_equal(r.exit_code, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    struct stat st;
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    gc_buf written;
    gc_buf_init(&written);
    assert_int_equal(read_file(copy, &written), 0);
    assert_non_null(strstr(written.data, "kind: JobSet"));
    assert_non_null(strstr(written.data, "name: out-test"));
    gc_buf_free(&written);
    cli_result_free(&r);
    free(fifo);
    free(copy);
}

static void a_symlink_keeps_pointing_at_its_file(void **state)
{
    (void)state;
    char *file = gc_xasprintf("%s/real.yaml", dir);
    char *link = gc_xasprintf("%s/link.yaml", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fputs("old\n", f);
    fclose(f);
    assert_int_equal(symlink(file, link), 0);

    cli_result r;
    submit_to(&r, link);
    assert_int_equal(r.exit_code, 0);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    gc_buf written;
    gc_buf_init(&written);
    assert_int_equal(read_file(file, &written), 0);
    assert_non_null(strstr(written.data, "name: out-test"));
    gc_buf_free(&written);
    cli_result_free(&r);
    free(file);
    free(link);
}

static void a_regular_file_is_replaced(void **state)
{
    (void)state;
    char *file = gc_xasprintf("%s/plain.yaml", dir);
    cli_result r;
    submit_to(&r, file);
    assert_int_equal(r.exit_code, 0);
    gc_buf written;
    gc_buf_init(&written);
    assert_int_equal(read_file(file, &written), 0);
    assert_non_null(strstr(written.data, "kind: JobSet"));
    gc_buf_free(&written);
    cli_result_free(&r);
    free(file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_fifo_is_written_in_place),
        cmocka_unit_test(a_symlink_keeps_pointing_at_its_file),
        cmocka_unit_test(a_regular_file_is_replaced),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
