"""The scale tier: a ~2,000-node control plane (testenv/nodepools-scale.yaml) and a Pathways job
of 64 slices of v6e-64 (1,024 workers and the head), for what issue 17 asks of the commands at
that size. Not part of `make test`; run it with `make scale-test`.

The session fixture `scale_env` starts its own environment (state directory
~/.cache/gcluster-testenv/pytest-<pid>-scale, stopped at the end, also by the next session if
this one was killed), or:
  KUBECONFIG_TESTENV=<kubeconfig>  use a running environment of this size (left alone);
  GCLUSTER_TESTENV_KEEP=1          keep it after the session, in GCLUSTER_TESTENV_DIR or else
                                   ~/.cache/gcluster-testenv/scale (reused by the next session).
Startup takes ~2.5 min; the environment holds ~2.1 GiB (RSS) with the 1,025-pod job running
(testenv/README.md, "At scale"). Every wait is bounded and everything talks to 127.0.0.1 only.
"""

import importlib.util
import os
import sys
from pathlib import Path

import pytest

CLUSTER_TESTS = Path(__file__).resolve().parents[1] / "cluster"
sys.path.insert(0, str(CLUSTER_TESTS))
from gcluster_cli import Cli, submit_pathways  # noqa: E402


def _cluster_conftest():
    """tests/cluster/conftest.py under another name: its start/stop helpers and wait_for."""
    spec = importlib.util.spec_from_file_location("cluster_conftest",
                                                  CLUSTER_TESTS / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cluster = _cluster_conftest()
wait_for = cluster.wait_for
NODEPOOLS = cluster.TESTENV / "nodepools-scale.yaml"
BIG_JOB_SLICES = 64
HOSTS_PER_SLICE = 16  # v6e-64: 8x8 chips, 4 per host
# Scheduling, admitting and starting 1,025 pods on the 2-core test machine takes ~2 min.
BIG_JOB_START_TIMEOUT = 900


@pytest.fixture(scope="session")
def scale_env():
    given = os.environ.get("KUBECONFIG_TESTENV")
    if given:
        yield cluster.TestEnv(given)
        return
    keep = os.environ.get("GCLUSTER_TESTENV_KEEP") == "1"
    if keep:
        state_dir = os.environ.get("GCLUSTER_TESTENV_DIR") or cluster.CACHE / "scale"
    else:
        cluster._stop_abandoned_sessions()
        state_dir = cluster.CACHE / f"{cluster.SESSION_PREFIX}{os.getpid()}-scale"
    kubeconfig = cluster._start(state_dir, {"GCLUSTER_TESTENV_NODEPOOLS": str(NODEPOOLS)})
    try:
        yield cluster.TestEnv(kubeconfig)
    finally:
        if not keep:
            cluster._run_testenv("down", state_dir, 300)


@pytest.fixture(scope="module")
def big_job(scale_env, tmp_path_factory):
    """The running 64-slice job: (client, name, its pods). Deleted at the end of the module."""
    cli = Cli(scale_env.kubeconfig, tmp_path_factory.mktemp("home"))
    name = "scale-64"
    submit_pathways(cli, name, compute="v6e-64", slices=str(BIG_JOB_SLICES))
    want = 1 + BIG_JOB_SLICES * HOSTS_PER_SLICE

    def running():
        pods = cli.pods(name)
        ok = len(pods) == want and all(p["status"].get("phase") == "Running" for p in pods)
        return pods if ok else None

    pods = wait_for(running, timeout=BIG_JOB_START_TIMEOUT, interval=5,
                    what=f"{want} Running pods of {name}")
    yield cli, name, pods
    cli.delete_job(name)
    wait_for(lambda: not cli.pods(name), timeout=600, interval=5, what=f"{name}'s pods to be gone")
