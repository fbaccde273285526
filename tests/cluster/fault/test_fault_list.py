"""`job list` whose answer is cut or stalls. A list is idempotent and job list prints nothing
before its last row has arrived, so a cut anywhere must end with the whole list (read again) or,
failing that, a clean error with nothing on stdout: never a partial table.
"""

import json
import re
import subprocess

import pytest

from faults import SUSPENDED_JOBSET, finish, kubectl_apply, record
from gcluster_cli import CLUSTER

NAMESPACE = "fault-list"
JOBS = 40
CUT_POINTS = 36

@pytest.fixture(scope="module")
def listed(env):
    """JOBS suspended JobSets (no pods) in a namespace of their own: their names."""
    names = [f"listed-{i:02d}" for i in range(JOBS)]
    docs = "---".join(SUSPENDED_JOBSET.format(name=n, ns=NAMESPACE) for n in names)
    env.cli.kubectl("create", "namespace", NAMESPACE, check=False)
    kubectl_apply(env, docs)
    yield names
    env.cli.kubectl("delete", "namespace", NAMESPACE, "--wait=false", check=False)


def list_args(*extra):
    return ("job", "list", *CLUSTER, "--namespace", NAMESPACE, "-o", "json", *extra)


def judge(proxied, names, proc):
    """"listed ..." (every job, once), "failed cleanly" (an error, nothing on stdout) or
    "WRONG: ..."."""
    proxied.assert_clean(proc.stdout, proc.stderr)
    restarts = len(re.findall(r"^GET https://\S+/jobsets\?", proc.stderr, re.M)) - 1
    if proc.returncode == 0:
        try:
            rows = sorted(r["name"] for r in json.loads(proc.stdout))
        except ValueError:
            return f"WRONG: exit 0 with output that is not JSON: {proc.stdout[-200:]}"
        if rows != names:
            return f"WRONG: exit 0 with {len(rows)} of {len(names)} rows"
        return f"listed all {len(names)} rows, {max(restarts, 0)} lists read again"
    errors = [l for l in proc.stderr.splitlines() if l.startswith("gcluster: error:")]
    if proc.stdout or len(errors) != 1:
        return f"WRONG: exit {proc.returncode} with {len(proc.stdout)} bytes on stdout"
    return "failed cleanly before printing"


def test_list_cut_at_every_point(env, proxied, listed):
    proc = proxied.run(*list_args())
    assert judge(proxied, listed, proc).startswith("listed"), proc.stderr
    size = proxied.proxy.most_down
    outcomes = []
    for i in range(CUT_POINTS):
        proxied.proxy.clear()
        proxied.proxy.cut_after(round((i + 1) * size / (CUT_POINTS + 1)), count=1)
        outcomes.append(judge(proxied, listed, proxied.run(*list_args("-v"))))
    proxied.proxy.clear()
    record(f"list of {JOBS} jobs, the connection ({size} B) cut once at {CUT_POINTS} points",
           outcomes)
    assert not [o for o in outcomes if o.startswith("WRONG")], outcomes
    assert all(o.startswith("listed") for o in outcomes), outcomes


def test_list_that_stalls_is_read_again(env, proxied, listed):
    """The answer stops halfway and the connection stays open: the stall limit (the request
    timeout) ends it and the list is read again on a fresh connection."""
    proxied.run(*list_args())
    size = proxied.proxy.most_down
    proxied.proxy.clear()
    proxied.proxy.stall_after(size // 2, count=1)
    rc, out, err = finish(proxied.start(*list_args("-v")), 180)
    proc = subprocess.CompletedProcess([], rc, out, err)
    result = judge(proxied, listed, proc)
    record("list, the answer stalls (held open) halfway", [result])
    assert proxied.proxy.stats["stalls"] == 1
    assert result.startswith("listed"), err[-2000:]
