"""What issue 17 asks of the commands on a 1,024-host job (64 slices of v6e-64) in a ~2,000-node
cluster: every pod listed by `job inspect --pods`, every container's last log line delivered by
`job logs --all` (prefixed [pod/container]), nothing left after `job cancel --wait`. Times and memory are the bench's
(`make bench-scale`); here only outcomes are asserted. The tests run in file order: cancel last.
"""

import json

from gcluster_cli import CLUSTER  # tests/cluster, put on the path by conftest.py

# The last line of every fake container log (testenv/fake-logs/container.log).
LAST_LOG_LINE = "testenv: fake log end"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"


def containers(pod):
    spec = pod["spec"]
    return [c["name"] for c in spec.get("initContainers", []) + spec["containers"]]


def test_inspect_pods_lists_every_pod(big_job):
    cli, name, pods = big_job
    proc = cli.gcluster("job", "inspect", name, "--pods", *CLUSTER, timeout=300, check=0)
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed = {word for line in proc.stdout.splitlines() for word in line.split()}
    missing = sorted(p["metadata"]["name"] for p in pods if p["metadata"]["name"] not in listed)
    assert not missing, f"{len(missing)} of {len(pods)} pods not listed, e.g. {missing[:3]}"
    as_json = cli.gcluster("job", "inspect", name, "--format", "json", *CLUSTER, timeout=300, check=0)
    assert as_json.returncode == 0, as_json.stderr[-2000:]
    report = json.loads(as_json.stdout)
    assert sorted(p["name"] for p in report["pods"]) == sorted(p["metadata"]["name"] for p in pods)
    summary = cli.gcluster("job", "inspect", name, *CLUSTER, timeout=300, check=0)
    assert summary.returncode == 0, summary.stderr[-2000:]
    assert len(summary.stdout.splitlines()) < 60, "the default view sums the slices up"


def test_logs_all_has_every_containers_last_line(big_job):
    cli, name, pods = big_job
    proc = cli.gcluster("job", "logs", name, "--all", *CLUSTER, timeout=600, check=0)
    lines = set(proc.stdout.splitlines())
    want = [f"[{p['metadata']['name']}/{c}] {LAST_LOG_LINE}" for p in pods
            for c in containers(p)]
    missing = [line for line in want if line not in lines]
    assert len(want) > len(pods), "every worker has a container and the head several"
    assert not missing, (f"{len(missing)} of {len(want)} containers' last lines missing, "
                         f"e.g. {missing[:3]}\nstderr:\n{proc.stderr[-2000:]}")


def test_cancel_wait_leaves_nothing(big_job):
    cli, name, pods = big_job
    proc = cli.gcluster("job", "cancel", name, "--wait", "--timeout", "600s", "-o", "json",
                        *CLUSTER, timeout=660, check=0)
    assert json.loads(proc.stdout)["gone"] is True
    selector = f"{JOBSET_LABEL}={name}"
    assert cli.kubectl("get", "jobset", name, "--ignore-not-found", "-o", "name").stdout == ""
    assert cli.kubectl_json("get", "jobs", "-l", selector)["items"] == []
    assert cli.kubectl_json("get", "pods", "-l", selector)["items"] == []
