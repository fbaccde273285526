"""The local GKE-shaped control plane (testenv/) for the cluster tests.

The session fixture `testenv` runs `testenv/up` once (building the binaries on first use) and
`testenv/down` at the end. Set KUBECONFIG_TESTENV=<kubeconfig> to use an environment that is
already running (it is then left alone), or GCLUSTER_TESTENV_KEEP=1 to keep the one the session
started. Every helper talks to 127.0.0.1 only, and every wait is bounded.
"""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TESTENV = REPO / "testenv"
CONTEXT = "gke_gcluster-testenv_us-east5_local"
EXIT_CODE_ANNOTATION = "testenv.gcluster.dev/exit-code"
# What every container of every pod logs (testenv/fake-logs/container.log; README.md).
FAKE_LOG_LINES = [
    "testenv: fake log line 1",
    "testenv: fake log line 2",
    "testenv: fake log line 3 (stderr)",
    "testenv: fake log end",
]
UP_TIMEOUT = 3600  # a cold build of the control plane takes ~10-15 min on 2 cores


def wait_for(predicate, timeout=60, interval=0.5, what=None):
    """Calls predicate() until it returns something true and returns that; fails the test after
    `timeout` seconds. Exceptions from predicate count as "not yet" (the last one is reported)."""
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        try:
            result = predicate()
            if result:
                return result
        except Exception as e:  # noqa: BLE001 - report it if the wait runs out
            last_error = e
        if time.monotonic() >= deadline:
            name = what or getattr(predicate, "__name__", "condition")
            detail = f"; last error: {last_error!r}" if last_error else ""
            pytest.fail(f"timed out after {timeout}s waiting for {name}{detail}")
        time.sleep(interval)


class TestEnv:
    """A running control plane: its kubeconfig and kubectl helpers bound to it."""

    __test__ = False  # not a test class

    def __init__(self, kubeconfig):
        self.kubeconfig = Path(kubeconfig)
        self.context = CONTEXT

    def env(self):
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig)
        return env

    def kubectl(self, *args, check=True, input=None, timeout=60):
        """Runs kubectl against the environment; check=True fails the test on a non-zero exit."""
        proc = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True,
                              timeout=timeout, env=self.env())
        if check and proc.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
        return proc

    def kubectl_json(self, *args, timeout=60):
        return json.loads(self.kubectl(*args, "-o", "json", timeout=timeout).stdout)

    def wait_for(self, predicate, timeout=60, interval=0.5, what=None):
        return wait_for(predicate, timeout, interval, what)

    def finish_pod(self, name, exit_code, namespace="default"):
        """Ends a Running fake pod: exit code 0 makes it Succeeded, anything else Failed."""
        self.kubectl("annotate", "--overwrite", "-n", namespace, f"pod/{name}",
                     f"{EXIT_CODE_ANNOTATION}={int(exit_code)}")

    def pods(self, selector, namespace="default"):
        return self.kubectl_json("get", "pods", "-n", namespace, "-l", selector)["items"]

    def nodes(self):
        return {n["metadata"]["name"]: n for n in self.kubectl_json("get", "nodes")["items"]}


def _start():
    proc = subprocess.run([str(TESTENV / "up")], stdout=subprocess.PIPE, text=True,
                          timeout=UP_TIMEOUT)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not lines[-1].startswith("KUBECONFIG="):
        pytest.fail(f"testenv/up failed (exit {proc.returncode}); its log is above")
    return lines[-1].split("=", 1)[1]


@pytest.fixture(scope="session")
def testenv():
    given = os.environ.get("KUBECONFIG_TESTENV")
    kubeconfig = given or _start()
    try:
        yield TestEnv(kubeconfig)
    finally:
        if not given and os.environ.get("GCLUSTER_TESTENV_KEEP") != "1":
            subprocess.run([str(TESTENV / "down")], timeout=120, check=False)
