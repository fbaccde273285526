#!/usr/bin/env python3
"""scripts/check-layers on a small tree made for each test: the clean tree passes, and each rule
fails on a violation planted in it, naming the file, the line and the rule.

The tree's HACKING.md is the repository's own, so the test also proves that the script reads
the real tables. The call rules read object files: each run compiles the tree's .c files with
the C compiler into build/CMakeFiles/ as CMake lays them out, and the real tree is checked
against the build in GCLUSTER_BUILD_DIR (default: build/). Run by CTest (label unit): python3 tests/scripts/test_check_layers.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "check-layers")

# A mini tree: a few folders of the real table, each with a file that keeps every rule, and
# prose and strings that only look like violations.
CLEAN = {
    "include/gcluster/buf.h": "int gc_buf_len(void);\n",
    "include/gcluster/sys.h": '#include "gcluster/buf.h"\nint gc_file_size(void);\n',
    "include/gcluster/kube.h": "int gc_kube_open(void);\n",
    "include/gcluster/catalog.h": "int gc_catalog_find(void);\n",
    "src/util/buf.c": textwrap.dedent("""\
        #include "gcluster/buf.h"

        int gc_buf_len(void)
        {
            return 0;
        }
        """),
    "src/sys/http.c": textwrap.dedent("""\
        #include "gcluster/sys.h"
        #include "sys/internal.h"

        #include <curl/curl.h>

        void sys_http_start(CURL *e)
        {
            curl_easy_setopt(e, CURLOPT_URL, "https://x");
        }
        """),
    "src/sys/internal.h": "void sys_http_start(void *e);\n",
    "src/sys/file.c": textwrap.dedent("""\
        #include "gcluster/sys.h"

        static int helper(void)
        {
            return 1;
        }

        int gc_file_size(void)
        {
            return helper();
        }
        """),
    "src/catalog/find.c": textwrap.dedent("""\
        /* Never printf() to stderr here: the caller shows what it returns. */
        #include "gcluster/buf.h"
        #include "gcluster/catalog.h"
        #include "catalog/internal.h"

        static const char words[] = "printf(stdout) and curl_easy_init() are only words here";

        int catalog_rank(void)
        {
            return (int)sizeof(words);
        }

        int gc_catalog_find(void)
        {
            return catalog_rank() + gc_buf_len();
        }
        """),
    "src/catalog/internal.h": "int catalog_rank(void);\n",
    "src/kube/api.c": textwrap.dedent("""\
        #include "gcluster/kube.h"
        #include "gcluster/sys.h"
        #include "internal.h"

        #include <curl/curl.h>

        void kube_set_connection(CURL *e)
        {
            curl_easy_setopt(e, CURLOPT_PROXY, "http://proxy");
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
            curl_easy_perform(e);
        }

        int gc_kube_open(void)
        {
            return 0;
        }
        """),
    "src/kube/internal.h": "void kube_set_connection(void *e);\n",
    "src/kube/tunnel/portforward_tunnel.c": textwrap.dedent("""\
        #include "kube/internal.h"

        #include <curl/curl.h>

        void kube_tunnel_connect(CURL *e)
        {
            curl_easy_setopt(e, CURLOPT_CONNECT_ONLY, 1L);
            size_t n;
            curl_easy_send(e, "x", 1, &n);
        }
        """),
    "src/cli/main.c": textwrap.dedent("""\
        #include "gcluster/catalog.h"
        #include "gcluster/kube.h"
        #include "gcluster/sys.h"

        #include <stdio.h>

        int main(void)
        {
            fprintf(stderr, "gcluster: %d\\n", gc_kube_open() + gc_file_size() + gc_catalog_find());
            return 0;
        }
        """),
}


class CheckLayers(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="check-layers-")
        shutil.copy(os.path.join(REPO, "HACKING.md"), self.root)
        for path, text in CLEAN.items():
            self.write(path, text)

    def tearDown(self):
        shutil.rmtree(self.root)

    def write(self, path, text):
        full = os.path.join(self.root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)

    def build(self):
        """Compiles every .c file of the tree whose object is missing or older, as CMake would."""
        objects = os.path.join(self.root, "build", "CMakeFiles", "gcluster_core.dir")
        for dirpath, _, names in os.walk(os.path.join(self.root, "src")):
            for name in names:
                if not name.endswith(".c"):
                    continue
                source = os.path.join(dirpath, name)
                obj = os.path.join(objects, os.path.relpath(source, self.root) + ".o")
                if os.path.exists(obj) and os.path.getmtime(obj) >= os.path.getmtime(source):
                    continue
                os.makedirs(os.path.dirname(obj), exist_ok=True)
                subprocess.run(["cc", "-std=gnu17", "-w", "-c", "-I", "include", "-I", "src",
                                "-o", obj, source], cwd=self.root, check=True, timeout=60)

    def run_check(self, build=True):
        if build:
            self.build()
        r = subprocess.run([sys.executable, SCRIPT, "--root", self.root, "--build",
                            os.path.join(self.root, "build")], capture_output=True, text=True,
                           timeout=60)
        return r.returncode, r.stdout, r.stderr

    def assert_fails(self, where, rule, words, build=True):
        rc, out, err = self.run_check(build)
        self.assertEqual(rc, 1, f"a planted violation passed:\n{out}{err}")
        self.assertIn(f"{where}: {rule}: ", out)
        self.assertIn(words, out)
        self.assertIn("violation", err)

    def test_clean_tree_passes(self):
        rc, out, err = self.run_check()
        self.assertEqual(rc, 0, out + err)
        self.assertIn("check-layers: 10 files", out)

    def test_public_header_of_a_folder_not_in_may_include(self):
        # catalog/ may include only util: sys.h belongs to sys/.
        self.write("src/catalog/more.c", '#include "gcluster/catalog.h"\n#include "gcluster/sys.h"\n')
        self.assert_fails("src/catalog/more.c:2", "includes", "gcluster/sys.h (sys/'s)")

    def test_private_header_of_another_folder(self):
        self.write("src/kube/watch.c", '#include "kube/internal.h"\n#include "sys/internal.h"\n')
        self.assert_fails("src/kube/watch.c:2", "includes", "a private header of sys/")

    def test_public_header_without_a_row(self):
        self.write("include/gcluster/tunnel2.h", "int gc_tunnel2(void);\n")
        self.assert_fails("include/gcluster/tunnel2.h:0", "includes", "public header table")

    def test_folder_without_a_row(self):
        self.write("src/widgets/a.c", "static int a(void)\n{\n    return 0;\n}\n")
        self.assert_fails("src/widgets/:0", "includes", "layer table")

    def test_printing_outside_cli(self):
        self.write("src/kube/trace.c", textwrap.dedent("""\
            #include <stdio.h>

            void kube_trace(const char *s)
            {
                fputs(s, stderr);
            }
            """))
        self.assert_fails("src/kube/trace.c:5", "printing", "fputs outside src/cli/")

    def test_a_standard_stream_outside_cli(self):
        self.write("src/sys/log.c", "#include <stdio.h>\n\nvoid *sys_sink(void)\n{\n"
                   "    return stdout;\n}\n")
        self.assert_fails("src/sys/log.c:5", "printing", "stdout outside src/cli/")

    def test_libcurl_in_a_folder_that_does_not_talk_http(self):
        self.write("src/catalog/net.c", "#include <curl/curl.h>\n\nvoid catalog_net(void)\n{\n"
                   "    curl_easy_init();\n}\n")
        self.assert_fails("src/catalog/net.c:5", "libcurl", "libcurl is called only in")

    def test_request_setup_outside_the_request_layer(self):
        self.write("src/kube/logs.c", textwrap.dedent("""\
            #include <curl/curl.h>

            void kube_logs_start(CURL *e)
            {
                curl_easy_setopt(e, CURLOPT_PRIVATE, e);
                curl_easy_setopt(e, CURLOPT_HTTPHEADER, NULL);
            }
            """))
        self.assert_fails("src/kube/logs.c:6", "libcurl", "CURLOPT_HTTPHEADER sets up a request")

    def test_raw_socket_bytes_outside_the_tunnel(self):
        self.write("src/image/push.c", textwrap.dedent("""\
            #include <curl/curl.h>

            void image_push(CURL *e, size_t *n)
            {
                curl_easy_send(e, "x", 1, n);
            }
            """))
        self.assert_fails("src/image/push.c:5", "libcurl", "curl_easy_send outside the tunnel")

    def test_shared_function_without_the_folder_prefix(self):
        self.write("src/kube/quantity.c", "int parse_quantity(const char *s)\n{\n    return !s;\n}\n")
        self.assert_fails("src/kube/quantity.c:1", "prefixes",
                          "parse_quantity is shared (not static) without the folder prefix kube_")

    def test_private_function_named_as_public(self):
        self.write("src/sys/digest.c", "int gc_sha256_new(void)\n{\n    return 0;\n}\n")
        self.assert_fails("src/sys/digest.c:1", "prefixes",
                          "gc_sha256_new is named as public (gc_) but no header")

    def test_a_subfolder_uses_its_folders_prefix(self):
        self.write("src/kube/tunnel/spdy.c", "int tunnel_frame(void)\n{\n    return 0;\n}\n")
        self.assert_fails("src/kube/tunnel/spdy.c:1", "prefixes", "folder prefix kube_")

    def plant_circle(self, header_of_part):
        # diagnose.c calls into its part, and the part calls back into diagnose.c.
        self.write("src/kube/diagnose.h", "int kube_diagnose(void);\n")
        self.write("src/kube/diagnose.c",
                   f'#include "kube/diagnose.h"\n#include "kube/{header_of_part}"\n'
                   "int kube_diagnose(void)\n{\n    return kube_part();\n}\n")
        self.write(f"src/kube/{header_of_part}", "int kube_part(void);\n")
        self.write("src/kube/diagnose_part.c",
                   f'#include "kube/diagnose.h"\n#include "kube/{header_of_part}"\n'
                   "int kube_part(void)\n{\n    return kube_diagnose();\n}\n")

    def test_a_circle_of_calls_between_two_files(self):
        self.plant_circle("diagnose_part.h")
        self.assert_fails("src/kube/diagnose.c:0", "calls",
                          "a circle of calls between files: kube/diagnose.c calls kube_part in "
                          "kube/diagnose_part.c; kube/diagnose_part.c calls kube_diagnose in "
                          "kube/diagnose.c. Move the shared piece to one home")

    def test_a_circle_through_a_shared_header(self):
        # The part's function is declared in a header the folder shares, not one beside it: the
        # objects still show the circle.
        self.plant_circle("parts.h")
        self.assert_fails("src/kube/diagnose.c:0", "calls", "kube/diagnose_part.c calls "
                          "kube_diagnose in kube/diagnose.c")

    def test_a_circle_of_three_names_every_file(self):
        for me, nxt in (("a", "b"), ("b", "c"), ("c", "a")):
            self.write(f"src/catalog/{me}.c", f"int catalog_{nxt}(void);\nint catalog_{me}(void)\n"
                       f"{{\n    return catalog_{nxt}();\n}}\n")
        self.assert_fails("src/catalog/a.c:0", "calls", "catalog/a.c calls catalog_b in catalog/b.c; "
                          "catalog/b.c calls catalog_c in catalog/c.c; catalog/c.c calls catalog_a "
                          "in catalog/a.c (the circle holds catalog/a.c, catalog/b.c, catalog/c.c)")

    def test_a_table_that_lists_a_function_is_not_a_call(self):
        # A command table names each command's function; the command reads the table back. Only
        # calls make a circle, so this passes (as cli/dispatch.c's commands[] does).
        self.write("src/catalog/table.c", "int catalog_entry(void);\n"
                   "int (*const catalog_table[])(void) = {catalog_entry};\n")
        self.write("src/catalog/entry.c", "extern int (*const catalog_table[])(void);\n"
                   "int catalog_entry(void)\n{\n    return catalog_table[0] != 0;\n}\n")
        rc, out, err = self.run_check()
        self.assertEqual(rc, 0, out + err)

    def test_a_file_without_an_object_fails(self):
        # Never passes by reading nothing: a source the build did not compile is named.
        self.run_check()
        self.write("src/catalog/late.c", "int catalog_late(void)\n{\n    return 0;\n}\n")
        self.assert_fails("src/catalog/late.c:0", "calls", "no object file under build/",
                          build=False)

    def test_a_stale_object_fails(self):
        self.run_check()
        path = os.path.join(self.root, "src/catalog/find.c")
        later = os.path.getmtime(path) + 10
        os.utime(path, (later, later))
        self.assert_fails("src/catalog/find.c:0", "calls", "older than the source", build=False)

    def test_raw_outside_text_in_cli(self):
        self.write("src/cli/render_job.c", textwrap.dedent("""\
            #include <stdio.h>

            void cli_render_job(FILE *out, const char *name, int ready)
            {
                fprintf(out, "Job %s: %d ready%s\\n", "x", ready, ready ? "" : " (none)");
                fprintf(out, "Job %-20s is %s\\n",
                        name, ready ? "ready" : "waiting");
            }
            """))
        self.assert_fails("src/cli/render_job.c:6", "raw text",
                          "fprintf prints name with %-20s as it is: text from outside")
        rc, out, _ = self.run_check()
        self.assertEqual(out.count("raw text"), 1, out)

    def test_raw_outside_text_through_a_precision(self):
        self.write("src/cli/render_log.c", "#include <stdio.h>\n\nvoid cli_log(const char *s, int n)"
                   "\n{\n    printf(\"  %.*s\\n\", n, s);\n}\n")
        self.assert_fails("src/cli/render_log.c:5", "raw text", "printf prints s with %.*s")

    def test_the_escaping_renderer_may(self):
        self.write("src/cli/render.c", "#include <stdio.h>\n\nvoid cli_put(FILE *f, const char *s)"
                   "\n{\n    fprintf(f, \"%s\", s);\n}\n")
        rc, out, err = self.run_check()
        self.assertEqual(rc, 0, out + err)

    def test_a_public_function_only_its_folder_calls(self):
        self.write("include/gcluster/kube.h", "int gc_kube_open(void);\nint gc_kube_token(void);\n")
        self.write("src/kube/token.c", '#include "gcluster/kube.h"\n\nint gc_kube_token(void)\n'
                   "{\n    return 1;\n}\n")
        self.write("src/kube/watch.c", '#include "gcluster/kube.h"\n\nint kube_watch(void)\n'
                   "{\n    return gc_kube_token();\n}\n")
        self.assert_fails("src/kube/token.c:0", "public",
                          "gc_kube_token is public (include/gcluster/kube.h) but nothing outside "
                          "src/kube/ calls it: name it kube_token and declare it in the folder's "
                          "private header")

    def test_a_public_function_called_from_another_folder_passes(self):
        self.write("include/gcluster/kube.h", "int gc_kube_open(void);\nint gc_kube_token(void);\n")
        self.write("src/kube/token.c", '#include "gcluster/kube.h"\n\nint gc_kube_token(void)\n'
                   "{\n    return 1;\n}\n")
        self.write("src/cli/token.c", '#include "gcluster/kube.h"\n\nint cli_token(void)\n'
                   "{\n    return gc_kube_token();\n}\n")
        rc, out, err = self.run_check()
        self.assertEqual(rc, 0, out + err)

    def test_the_real_tree_passes(self):
        # What `make format-check` runs: the repository keeps its own rules.
        build = os.environ.get("GCLUSTER_BUILD_DIR", os.path.join(REPO, "build"))
        r = subprocess.run([sys.executable, SCRIPT, "--build", build], capture_output=True,
                           text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
