"""`job inspect` slice by slice on the local control plane: a two-slice v6e-16 job with one v6e
host cordoned, so one slice has three pods running and one the scheduler cannot place. The text
sums the slices up and shows the stuck pod with its reason; --pods and -o json list every pod.
"""

import json
import re

import pytest

from conftest import wait_for
from gcluster_cli import CLUSTER, Cli, submit_pathways


@pytest.fixture
def cli(testenv, tmp_path):
    cli = Cli(testenv.kubeconfig, tmp_path)
    cordoned = []
    yield cli, cordoned
    for node in cordoned:
        cli.kubectl("uncordon", node)
    for job in cli.submitted:
        cli.delete_job(job)
    wait_for(lambda: all(not cli.pods(job) for job in cli.submitted), timeout=120,
             what="the test's pods to be gone")


def unschedulable(pod):
    return any(c["type"] == "PodScheduled" and c["status"] == "False"
               and c.get("reason") == "Unschedulable"
               for c in pod.get("status", {}).get("conditions", []))


def test_one_slice_with_a_stuck_pod(cli):
    cli, cordoned = cli
    nodes = cli.kubectl_json("get", "nodes", "-l",
                             "cloud.google.com/gke-nodepool=tpu-v6e-np-1")["items"]
    cordoned.append(nodes[0]["metadata"]["name"])
    cli.kubectl("cordon", cordoned[0])
    job = "pw-slices"
    submit_pathways(cli, job, slices="2")

    def settled():
        pods = cli.pods(job)
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        stuck = [p for p in pods if unschedulable(p)]
        return len(pods) == 9 and len(running) == 8 and len(stuck) == 1 and stuck[0]

    stuck = wait_for(settled, timeout=120, what="8 pods running and one unschedulable")
    stuck_name = stuck["metadata"]["name"]
    stuck_slice = int(stuck["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"])

    text = cli.gcluster("job", "inspect", job, *CLUSTER, check=0).stdout
    assert "  pathways-head    1 slice of 1 pod: 1 fully running\n" in text
    assert "  worker           2 slices of 4 pods: 1 fully running, 1 with problems\n" in text
    assert re.search(rf"^Head pod:   {job}-pathways-head-0-0-\w+ \(Running, on \S+\)$", text, re.M)
    assert f"  worker slice {stuck_slice}: 3 of 4 pods running\n" in text
    assert re.search(rf"^    Pending\s+Unschedulable\s+\(unscheduled\)\s+{stuck_name}$", text,
                     re.M)
    # The running workers are counted, not listed.
    for pod in cli.pods(job):
        if pod["metadata"]["name"] != stuck_name and "worker" in pod["metadata"]["name"]:
            assert pod["metadata"]["name"] not in text
    assert "ROLE" not in text

    every = cli.gcluster("job", "inspect", job, *CLUSTER, "--pods", check=0).stdout
    for pod in cli.pods(job):
        assert re.search(rf" {pod['metadata']['name']}\s", every), pod["metadata"]["name"]
    assert re.search(rf"{stuck_name}\s+Unschedulable$", every, re.M)

    report = json.loads(cli.gcluster("job", "inspect", job, *CLUSTER, "--format", "json",
                                     check=0).stdout)
    assert len(report["pods"]) == 9
    row = next(p for p in report["pods"] if p["name"] == stuck_name)
    assert row["phase"] == "Pending" and row["reason"] == "Unschedulable" and row["node"] is None
    workers = next(s for s in report["slices"] if s["role"] == "worker")
    assert workers == {"role": "worker", "slices": 2, "hosts": 4, "running": 1, "succeeded": 0,
                       "without_pods": 0, "with_problems": [stuck_slice]}
