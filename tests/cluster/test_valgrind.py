"""The live main paths under valgrind: no leaks and no memory errors when talking to a real
API server (the offline paths are covered by scripts/valgrind-main-paths)."""

import shutil

from conftest import REPO, wait_for
from gcluster_cli import CLUSTER, GCS, IMAGE, Cli

VALGRIND = ["valgrind", "--quiet", "--leak-check=full", "--show-leak-kinds=definite,indirect,possible",
            "--errors-for-leak-kinds=definite,indirect,possible", "--error-exitcode=99"]


class ValgrindCli(Cli):
    def gcluster(self, *args, timeout=300, env=None, check=None):
        import subprocess

        from gcluster_cli import GCLUSTER

        proc = subprocess.run([*VALGRIND, str(GCLUSTER), *args], capture_output=True, text=True,
                              timeout=timeout, env=self.env(env))
        assert proc.returncode != 99, f"valgrind found errors in gcluster {' '.join(args)}:\n{proc.stderr}"
        if check is not None:
            assert proc.returncode == check, proc.stderr
        return proc


ECHO_CLIENT = """
import os, socket
host, port = os.environ["JAX_BACKEND_TARGET"][len("grpc://"):].rsplit(":", 1)
with socket.create_connection((host, int(port)), timeout=60) as s:
    s.sendall(b"ping")
    print("echoed", s.recv(4))
"""


def test_live_commands_are_clean_under_valgrind(testenv, tmp_path):
    # scripts/install-deps installs valgrind, as `make cluster-test` runs it: missing is a failure.
    assert shutil.which("valgrind"), "valgrind is not on PATH: run scripts/install-deps"
    cli = ValgrindCli(testenv.kubeconfig, tmp_path)
    job = "pw-valgrind"
    cli.submitted.append(job)
    try:
        cli.gcluster("job", "submit", "--name", job, *CLUSTER, "--compute-type", "v6e-16",
                     "--pathways", "--pathways-gcs-location", GCS, "--command", "python3 x.py",
                     "--image", IMAGE, "-v", check=0)
        wait_for(lambda: len([p for p in cli.pods(job) if p["status"].get("phase") == "Running"]) == 5,
                 timeout=90, what="the job's pods to run")
        cli.gcluster("job", "list", *CLUSTER, "-o", "wide", check=0)
        cli.gcluster("job", "inspect", job, *CLUSTER, "--manifest", check=0)
        cli.gcluster("job", "logs", job, *CLUSTER, "--all", "--timestamps", check=0)
        # A tunnel through the API server to the head pod's proxy port (testenv's echo server),
        # a command run with it, and everything closed again.
        echoed = cli.gcluster("job", "connect", job, *CLUSTER, "--local-port", "0", "--",
                              "python3", "-c", ECHO_CLIENT, check=0)
        assert "echoed b'ping'" in echoed.stdout
        cli.gcluster("job", "inspect", "no-such-job", *CLUSTER, check=1)
        cli.gcluster("job", "cancel", job, *CLUSTER, "--wait", "--timeout", "2m", check=0)
        # --plan runs every request of a deploy (server-side dry runs) and changes nothing.
        cli.gcluster("deploy", str(REPO / "examples" / "gke-tpu-v6e-pathways.yaml"), *CLUSTER,
                     "--plan", "--pathways-head-np", "head-np", check=0)
    finally:
        cli.delete_job(job)
