"""The fault tier: gcluster against testenv through a TCP fault proxy (fault_proxy.py), with API
server restarts (testenv/apiserver) and line-numbered fake logs (testenv/README.md).

The fixtures build on tests/cluster/conftest.py (the `testenv` session fixture). Every scenario
records its tries and their outcomes (faults.record); the table is printed at the end of the
session and written to build/fault-results.md (or $GCLUSTER_FAULT_RESULTS).
"""

import os
import subprocess
from pathlib import Path

import pytest

from faults import NUMBERED_JOBSET, REPO, RESULTS, Env, NumberedLog, Proxied, remove_jobs


def pytest_terminal_summary(terminalreporter):
    if not RESULTS:
        return
    lines = ["| scenario | tries | outcomes |", "|---|---|---|"]
    for scenario, tries, outcomes in RESULTS:
        counted = {}
        for o in outcomes:
            counted[o] = counted.get(o, 0) + 1
        text = "; ".join(f"{n}x {o}" if n > 1 else o for o, n in counted.items())
        lines.append(f"| {scenario} | {tries} | {text} |")
    table = "\n".join(lines) + "\n"
    terminalreporter.write_sep("=", "fault tier: tries and outcomes")
    terminalreporter.write(table)
    out = Path(os.environ.get("GCLUSTER_FAULT_RESULTS") or REPO / "build" / "fault-results.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table)


@pytest.fixture(scope="session")
def env(testenv):
    e = Env(testenv)
    if "argv" not in e.state:
        # A skip would pass the tier without running it: fail, and say how to run it.
        pytest.fail("this testenv was started without the API server restart hook the fault "
                    "tier needs; let the fault tier start its own (unset KUBECONFIG_TESTENV; "
                    "make fault-test does)", pytrace=False)
    return e


@pytest.fixture
def proxied(env, tmp_path):
    p = Proxied(env, tmp_path)
    yield p
    p.proxy.close()


@pytest.fixture
def numbered_job(env):
    """Makes running JobSets (not queued through Kueue) whose one pod logs a numbered log: a
    function name -> (pod name, NumberedLog). They are deleted after the test."""
    created = []

    def make(name):
        log = NumberedLog(env, name)
        proc = subprocess.run(["kubectl", "apply", "-f", "-"],
                              input=NUMBERED_JOBSET.format(name=name), capture_output=True,
                              text=True, env=env.cli.env(), timeout=60)
        assert proc.returncode == 0, proc.stderr
        created.append(name)

        def running_pod():
            pods = [p for p in env.cli.pods(name) if p["status"].get("phase") == "Running"]
            return pods[0]["metadata"]["name"] if pods else None

        return env.wait_for(running_pod, timeout=90, what=f"the pod of {name} to run"), log

    yield make
    remove_jobs(env, created)
