/*
 * The build-context layer: reproducible bytes, what goes in, and the tag derived from it.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include "image/layer.h"

#include "gcluster/buf.h"
#include "gcluster/image.h"
#include "kube_test.h"
#include "tar_reader.h"

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

static char *make_dir(void)
{
    char tmpl[] = "/tmp/gcluster-layer-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    return strdup(tmpl);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tree(char *dir)
{
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

/* A context with a bit of everything. */
static char *sample_context(void)
{
    char *dir = make_dir();
    kube_test_put(dir, "train.py", "print('hello')\n", 0644);
    kube_test_put(dir, "run.sh", "#!/bin/sh\nexec python train.py\n", 0755);
    kube_test_put(dir, "src/model/layers.py", "LAYERS = 4\n", 0600);
    kube_test_put(dir, ".git/HEAD", "ref: refs/heads/main\n", 0644);
    kube_test_put(dir, "debug.log", "noise\n", 0644);
    kube_test_put(dir, "src/__pycache__/layers.cpython-311.pyc", "bytecode", 0644);
    char link[8192];
    snprintf(link, sizeof(link), "%s/current", dir);
    assert_int_equal(symlink("src/model", link), 0);
    return dir;
}

static void build(const char *dir, image_layer *layer)
{
    gc_error err = {0};
    if (image_layer_build(dir, true, NULL, layer, &err) != 0)
        fail_msg("layer build failed: %s", err.message);
}

static char *read_blob(image_layer *layer, size_t *len)
{
    gc_buf b;
    gc_buf_init(&b);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), layer->blob)) > 0)
        gc_buf_append(&b, chunk, n);
    assert_int_equal((long long)b.len, layer->size);
    *len = b.len;
    return gc_buf_detach(&b);
}

static void read_archive(image_layer *layer, tar_archive *archive)
{
    size_t gz_len, tar_len;
    char *gz = read_blob(layer, &gz_len);
    char *tar = tar_gunzip(gz, gz_len, &tar_len);
    assert_non_null(tar);
    assert_int_equal((long long)tar_len, layer->tar_size);
    const char *why = NULL;
    if (tar_parse(tar, tar_len, archive, &why) != 0)
        fail_msg("layer is not a valid tar: %s", why);
    free(gz);
    free(tar);
}

static void same_context_gives_the_same_bytes(void **state)
{
    (void)state;
    char *dir = sample_context();
    image_layer a, b;
    build(dir, &a);
    build(dir, &b);
    assert_string_equal(a.digest, b.digest);
    assert_string_equal(a.diff_id, b.diff_id);
    size_t la, lb;
    char *ba = read_blob(&a, &la), *bb = read_blob(&b, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(ba, bb, la);
    free(ba);
    free(bb);
    image_layer_close(&a);
    image_layer_close(&b);
    remove_tree(dir);
}

/* Gives every file another time and owner, as another checkout on another machine would. */
static int touch_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    struct timeval times[2] = {{1234567890, 0}, {1234567890, 0}};
    lutimes(path, times);
    if (lchown(path, 4321, 4321) != 0 && geteuid() == 0)
        fail_msg("lchown %s failed", path);
    return 0;
}

static void file_times_and_owners_do_not_change_the_bytes(void **state)
{
    (void)state;
    char *dir = sample_context();
    image_layer before, after;
    build(dir, &before);
    nftw(dir, touch_one, 16, FTW_PHYS);
    build(dir, &after);
    assert_string_equal(before.digest, after.digest);
    assert_string_equal(before.diff_id, after.diff_id);
    image_layer_close(&before);
    image_layer_close(&after);
    remove_tree(dir);
}

static void entries_are_sorted_owned_by_root_and_keep_modes(void **state)
{
    (void)state;
    char *dir = sample_context();
    nftw(dir, touch_one, 16, FTW_PHYS);
    image_layer layer;
    build(dir, &layer);
    assert_int_equal(layer.files, 3);
    tar_archive a;
    read_archive(&layer, &a);
    static const char *const want[] = {
        "current", "run.sh", "src/", "src/model/", "src/model/layers.py", "train.py"};
    assert_int_equal(a.count, sizeof(want) / sizeof(want[0]));
    for (size_t i = 0; i < a.count; i++) {
        assert_string_equal(a.entries[i].name, want[i]);
        assert_int_equal(a.entries[i].uid, 0);
        assert_int_equal(a.entries[i].gid, 0);
        assert_int_equal(a.entries[i].mtime, 0);
    }
    assert_int_equal(tar_find(&a, "run.sh")->mode, 0755);
    assert_int_equal(tar_find(&a, "src/model/layers.py")->mode, 0600);
    assert_int_equal(tar_find(&a, "src/")->type, '5');
    assert_string_equal(tar_find(&a, "train.py")->data, "print('hello')\n");
    const tar_entry *link = tar_find(&a, "current");
    assert_int_equal(link->type, '2');
    assert_string_equal(link->linkname, "src/model");
    tar_archive_free(&a);
    image_layer_close(&layer);
    remove_tree(dir);
}

static void gzip_header_is_fixed(void **state)
{
    (void)state;
    char *dir = sample_context();
    image_layer layer;
    build(dir, &layer);
    size_t len;
    unsigned char *gz = (unsigned char *)read_blob(&layer, &len);
    assert_true(len > 10);
    assert_int_equal(gz[0], 0x1f);
    assert_int_equal(gz[1], 0x8b);
    assert_int_equal(gz[3], 0);                         /* flags: no name, no comment, no extra */
    assert_int_equal(gz[4] | gz[5] | gz[6] | gz[7], 0); /* mtime 0 */
    assert_int_equal(gz[9], 255);                       /* OS unknown */
    free(gz);
    image_layer_close(&layer);
    remove_tree(dir);
}

static void long_names_and_link_targets_use_pax(void **state)
{
    (void)state;
    char *dir = make_dir();
    char rel[512] = "";
    for (int i = 0; i < 6; i++)
        strcat(rel, "a-rather-long-directory-name/");
    strcat(rel, "file-with-a-long-name.txt");
    assert_true(strlen(rel) > 100);
    kube_test_put(dir, rel, "deep\n", 0644);
    char link[8192];
    snprintf(link, sizeof(link), "%s/shortcut", dir);
    assert_int_equal(symlink(rel, link), 0);

    image_layer layer;
    build(dir, &layer);
    tar_archive a;
    read_archive(&layer, &a);
    const tar_entry *e = tar_find(&a, rel);
    assert_non_null(e);
    assert_string_equal(e->data, "deep\n");
    assert_string_equal(tar_find(&a, "shortcut")->linkname, rel);
    tar_archive_free(&a);
    image_layer_close(&layer);
    remove_tree(dir);
}

static void an_exception_reaches_into_an_ignored_directory(void **state)
{
    (void)state;
    char *dir = make_dir();
    kube_test_put(dir, ".dockerignore", "data\n!data/labels.csv\n", 0644);
    kube_test_put(dir, "data/big.bin", "xxxx", 0644);
    kube_test_put(dir, "data/labels.csv", "a,b\n", 0644);
    kube_test_put(dir, "cache/blob", "zzz", 0644);
    kube_test_put(dir, "keep.py", "pass\n", 0644);
    image_layer layer;
    build(dir, &layer);
    tar_archive a;
    read_archive(&layer, &a);
    assert_non_null(tar_find(&a, "data/"));
    assert_non_null(tar_find(&a, "data/labels.csv"));
    assert_null(tar_find(&a, "data/big.bin"));
    assert_non_null(tar_find(&a, "keep.py"));
    assert_non_null(tar_find(&a, ".dockerignore"));
    tar_archive_free(&a);
    image_layer_close(&layer);
    remove_tree(dir);
}

static void system_tar_reads_the_layer(void **state)
{
    (void)state;
    char *dir = sample_context();
    image_layer layer;
    build(dir, &layer);
    size_t len;
    char *gz = read_blob(&layer, &len);
    char *out = make_dir();
    char path[8192], cmd[16384];
    snprintf(path, sizeof(path), "%s/layer.tar.gz", out);
    FILE *f = fopen(path, "wb");
    fwrite(gz, 1, len, f);
    fclose(f);
    snprintf(cmd, sizeof(cmd), "mkdir %s/x && tar -xzf %s -C %s/x", out, path, out);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof(path), "%s/x/src/model/layers.py", out);
    f = fopen(path, "r");
    assert_non_null(f);
    char line[64] = "";
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    assert_string_equal(line, "LAYERS = 4\n");
    free(gz);
    image_layer_close(&layer);
    remove_tree(out);
    remove_tree(dir);
}

static char *plan(const char *dir, const char *base, const char *platform)
{
    gc_image_build b = {.base_image = base,
                        .context_dir = dir,
                        .platform = platform,
                        .repository = "us-docker.pkg.dev/p/r/alice-runner"};
    char *ref = NULL;
    gc_error err = {0};
    if (gc_image_plan(&b, &ref, &err) != 0)
        fail_msg("plan failed: %s", err.message);
    return ref;
}

static void the_tag_follows_the_content_not_the_clock(void **state)
{
    (void)state;
    char *dir = sample_context();
    char *first = plan(dir, "python:3.11-slim", "linux/amd64");
    assert_int_equal(strlen(first), strlen("us-docker.pkg.dev/p/r/alice-runner:") + 12);
    assert_memory_equal(first, "us-docker.pkg.dev/p/r/alice-runner:", 35);

    nftw(dir, touch_one, 16, FTW_PHYS);
    char *touched = plan(dir, "python:3.11-slim", "linux/amd64");
    assert_string_equal(first, touched);
    /* The same base spelled out in full is the same base. */
    char *spelled = plan(dir, "docker.io/library/python:3.11-slim", "linux/amd64");
    assert_string_equal(first, spelled);

    char *other_base = plan(dir, "python:3.12-slim", "linux/amd64");
    assert_string_not_equal(first, other_base);
    char *other_platform = plan(dir, "python:3.11-slim", "linux/arm64");
    assert_string_not_equal(first, other_platform);

    kube_test_put(dir, "train.py", "print('changed')\n", 0644);
    char *changed = plan(dir, "python:3.11-slim", "linux/amd64");
    assert_string_not_equal(first, changed);

    /* The plan and a full build hash the same tar. */
    image_layer layer;
    build(dir, &layer);
    image_layer_close(&layer);
    char *again = plan(dir, "python:3.11-slim", "linux/amd64");
    assert_string_equal(changed, again);

    free(first);
    free(touched);
    free(spelled);
    free(other_base);
    free(other_platform);
    free(changed);
    free(again);
    remove_tree(dir);
}

static void plan_rejects_bad_input_clearly(void **state)
{
    (void)state;
    char *dir = sample_context();
    gc_image_build b = {.base_image = "python:3.11",
                        .context_dir = dir,
                        .platform = "amd64",
                        .repository = "us-docker.pkg.dev/p/r/alice-runner"};
    char *ref = NULL;
    gc_error err = {0};
    assert_int_equal(gc_image_plan(&b, &ref, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "invalid platform format: \"amd64\""));

    b.platform = "linux/amd64";
    b.base_image = "Python:3.11";
    assert_int_equal(gc_image_plan(&b, &ref, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "--base-image"));
    assert_non_null(strstr(err.message, "lower-case"));

    b.base_image = "python:3.11";
    b.context_dir = "/nonexistent/context";
    assert_int_equal(gc_image_plan(&b, &ref, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "/nonexistent/context"));

    b.context_dir = dir;
    b.repository = "us-docker.pkg.dev/p/r/alice-runner:v1";
    assert_int_equal(gc_image_plan(&b, &ref, &err), GC_EXIT_USAGE);
    assert_non_null(strstr(err.message, "repository"));
    remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(same_context_gives_the_same_bytes),
        cmocka_unit_test(file_times_and_owners_do_not_change_the_bytes),
        cmocka_unit_test(entries_are_sorted_owned_by_root_and_keep_modes),
        cmocka_unit_test(gzip_header_is_fixed),
        cmocka_unit_test(long_names_and_link_targets_use_pax),
        cmocka_unit_test(an_exception_reaches_into_an_ignored_directory),
        cmocka_unit_test(system_tar_reads_the_layer),
        cmocka_unit_test(the_tag_follows_the_content_not_the_clock),
        cmocka_unit_test(plan_rejects_bad_input_clearly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
