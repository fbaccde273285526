"""The local GKE-shaped control plane (testenv/) for the cluster tests.

The session fixture `testenv` runs `testenv/up` once (building the binaries on first use) and
`testenv/down` at the end. Each pytest session gets its own environment (state directory
~/.cache/gcluster-testenv/pytest-<pid>), so sessions running at the same time on one machine do
not stop each other's control plane. Instead:
  KUBECONFIG_TESTENV=<kubeconfig>  use an environment that is already running (left alone);
  GCLUSTER_TESTENV_DIR=<dir>       use (or start) the environment of that state directory;
  GCLUSTER_TESTENV_KEEP=1          keep the environment after the session; without
                                   GCLUSTER_TESTENV_DIR it is then the default one of `testenv/up`,
                                   which the next session reuses.

Profiles (testenv/README.md): every test that uses the environment runs on the default profile
(Kueue "unified", head pool cpu-np, made for tpu-v6e-slice) unless it is marked, e.g.
  @pytest.mark.testenv_profile("xpk", head_pool="pathways-np", accelerator="tpu7x")
A test can also switch in its body with testenv.use_profile(...). `another_testenv(...)` starts
a second environment for the session, e.g. with the older JobSet and Kueue releases.
Every helper talks to 127.0.0.1 only, and every wait is bounded.
"""

import contextlib
import json
import os
import subprocess
import sys
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
UP_TIMEOUT = 3600  # a cold build of the control plane takes ~6-10 min on 2 cores
# The profile testenv/up puts an environment on: (Kueue profile, head pool, accelerator).
DEFAULT_PROFILE = ("unified", "cpu-np", "tpu-v6e-slice")


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
        self.profile = DEFAULT_PROFILE

    def use_profile(self, kueue=DEFAULT_PROFILE[0], head_pool=DEFAULT_PROFILE[1],
                    accelerator=DEFAULT_PROFILE[2], force=False):
        """Puts the environment on a profile (testenv/profile) and waits until it is in effect.
        Nothing is sent when this session already put it there, unless force=True (for a test
        that changed the Kueue objects or node labels itself)."""
        wanted = (kueue, head_pool, accelerator)
        if wanted == self.profile and not force:
            return
        proc = subprocess.run(
            [sys.executable, str(TESTENV / "testenv.py"), "profile", kueue, "--head-pool",
             head_pool, "--accelerator", accelerator, "--kubeconfig", str(self.kubeconfig)],
            capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            self.profile = None  # half applied: the next use applies it again
            pytest.fail(f"testenv profile {' '.join(wanted)} failed:\n{proc.stderr}")
        self.profile = wanted

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


CACHE = Path(os.environ.get("GCLUSTER_TESTENV_CACHE") or Path.home() / ".cache" / "gcluster-testenv")
SESSION_PREFIX = "pytest-"


def _run_testenv(command, state_dir, timeout, settings=None):
    env = dict(os.environ)
    if state_dir:
        env["GCLUSTER_TESTENV_DIR"] = str(state_dir)
    env.update(settings or {})
    return subprocess.run([str(TESTENV / command)], stdout=subprocess.PIPE, text=True,
                          timeout=timeout, env=env)


def _stop_abandoned_sessions():
    """Environments of pytest sessions that died without their teardown (e.g. SIGKILL); a
    session's state directories are pytest-<pid> and pytest-<pid>-<name>."""
    for state_dir in CACHE.glob(f"{SESSION_PREFIX}*"):
        pid = state_dir.name[len(SESSION_PREFIX):].split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            _run_testenv("down", state_dir, 120)
    for lock in CACHE.glob(f".{SESSION_PREFIX}*.lock"):
        pid = lock.name[len(SESSION_PREFIX) + 1:-len(".lock")].split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            lock.unlink(missing_ok=True)


def _start(state_dir, settings=None):
    proc = _run_testenv("up", state_dir, UP_TIMEOUT, settings)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not lines[-1].startswith("KUBECONFIG="):
        pytest.fail(f"testenv/up failed (exit {proc.returncode}); its log is above")
    return lines[-1].split("=", 1)[1]


@pytest.fixture
def cli(testenv, tmp_path):
    """A client for one test; every JobSet the test submitted is deleted afterwards and the test
    ends when their pods are gone, so the next test starts on a quiet cluster. A test file that
    needs more (nodes cordoned, objects of its own) defines its own `cli`."""
    from gcluster_cli import Cli  # here, not at the top: gcluster_cli is this folder's module

    client = Cli(testenv.kubeconfig, tmp_path)
    yield client
    for job in client.submitted:
        client.delete_job(job)
    wait_for(lambda: all(not client.pods(job) for job in client.submitted), timeout=120,
             what="the test's pods to be gone")


@pytest.fixture(scope="session")
def testenv():
    given = os.environ.get("KUBECONFIG_TESTENV")
    if given:
        yield TestEnv(given)
        return
    keep = os.environ.get("GCLUSTER_TESTENV_KEEP") == "1"
    state_dir = os.environ.get("GCLUSTER_TESTENV_DIR")
    if not state_dir and not keep:
        _stop_abandoned_sessions()
        state_dir = CACHE / f"{SESSION_PREFIX}{os.getpid()}"
    kubeconfig = _start(state_dir)
    try:
        yield TestEnv(kubeconfig)
    finally:
        if not keep:
            _run_testenv("down", state_dir, 120)


def older_releases():
    """The settings that start an environment on the older JobSet and Kueue releases pinned in
    testenv/versions.env, and how to name them ("JobSet v0.8.0, Kueue v0.14.0")."""
    pins = {}
    for line in (TESTENV / "versions.env").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not key.startswith("#"):
            pins[key.strip()] = value.strip()
    jobset, kueue = pins["OLD_JOBSET_VERSION"], pins["OLD_KUEUE_VERSION"]
    return ({"GCLUSTER_TESTENV_JOBSET_VERSION": jobset, "GCLUSTER_TESTENV_KUEUE_VERSION": kueue},
            f"JobSet {jobset}, Kueue {kueue}")


@contextlib.contextmanager
def another_testenv(name, **settings):
    """A second environment for this session, started with GCLUSTER_TESTENV_* settings (e.g.
    GCLUSTER_TESTENV_JOBSET_VERSION=<the older release>) in its own state directory and stopped
    when the block ends. Fails when KUBECONFIG_TESTENV names the only environment to use: a
    skip would hide the test's outcome (the Makefile's tiers unset it)."""
    if os.environ.get("KUBECONFIG_TESTENV"):
        pytest.fail("KUBECONFIG_TESTENV names the one environment to use, but this test starts "
                    f"its own ({', '.join(f'{k}={v}' for k, v in settings.items())}); unset "
                    "KUBECONFIG_TESTENV (make cluster-test does) or deselect the test",
                    pytrace=False)
    state_dir = CACHE / f"{SESSION_PREFIX}{os.getpid()}-{name}"
    kubeconfig = _start(state_dir, settings)
    try:
        yield TestEnv(kubeconfig)
    finally:
        _run_testenv("down", state_dir, 120)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "testenv_profile(kueue, head_pool='cpu-np', accelerator='tpu-v6e-slice'): "
        "run the test on that testenv profile (testenv/README.md, \"Profiles\")")


@pytest.fixture(autouse=True)
def _testenv_profile(request):
    """Every test that uses the environment runs on the profile its testenv_profile marker
    names, else on the default one (so a profile never leaks into the next test)."""
    if "testenv" in request.fixturenames:
        marker = request.node.get_closest_marker("testenv_profile")
        request.getfixturevalue("testenv").use_profile(
            *(marker.args if marker else ()), **(marker.kwargs if marker else {}))


def pytest_collection_modifyitems(items):
    """The compatibility matrix runs last: its older JobSet and Kueue releases may still be
    building in the background when the tier starts (scripts/background-builds), and every test
    before it gives that build time to finish."""
    compat = [item for item in items if item.path.name == "test_compat_matrix.py"]
    items[:] = [item for item in items if item.path.name != "test_compat_matrix.py"] + compat
