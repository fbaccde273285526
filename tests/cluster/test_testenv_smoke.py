"""The local control plane behaves like a GKE cluster with JobSet and Kueue, driven by kubectl.

A hand-written Pathways JobSet (2 slices of TPU v6e 4x4 plus the head) is admitted by the real
Kueue, its pods are bound by the real scheduler to the right fake node pools, run, serve the fake
logs, and the JobSet completes when the head's user container succeeds. The real JobSet webhook
rejects a Pathways JobSet whose name is one character over the 22-character limit.
"""

import subprocess
import threading
import time
from pathlib import Path

import pytest
import yaml

from conftest import EXIT_CODE_ANNOTATION, FAKE_LOG_LINES

MANIFEST = Path(__file__).resolve().parent / "manifests" / "pathways-v6e-2x4x4.yaml"
NODEPOOL = "cloud.google.com/gke-nodepool"
ACCELERATOR = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY = "cloud.google.com/gke-tpu-topology"
SLICES, HOSTS_PER_SLICE = 2, 4


def pathways_jobset(name):
    manifest = yaml.safe_load(MANIFEST.read_text())
    manifest["metadata"]["name"] = name
    return manifest


def condition(obj, kind):
    for c in obj.get("status", {}).get("conditions") or []:
        if c["type"] == kind:
            return c
    return None


def is_true(obj, kind):
    c = condition(obj, kind)
    return c is not None and c["status"] == "True"


@pytest.fixture
def jobset(testenv):
    """Submits the Pathways JobSet under a fresh name; deletes it (and checks it is gone) after."""
    name = f"smoke-{int(time.time()) % 100000}"
    testenv.kubectl("create", "-f", "-", input=yaml.safe_dump(pathways_jobset(name)))
    yield name
    testenv.kubectl("delete", "jobset", name, "--ignore-not-found", "--wait=true",
                    "--timeout=60s", check=False)


def test_pathways_jobset_admitted_placed_running_logged_completed(testenv, jobset):
    selector = f"jobset.sigs.k8s.io/jobset-name={jobset}"
    uid = testenv.kubectl_json("get", "jobset", jobset)["metadata"]["uid"]

    # Kueue: the JobSet's Workload is admitted, the head on pathways-flavor, workers on tpu-flavor.
    def admitted_workload():
        items = testenv.kubectl_json("get", "workloads.kueue.x-k8s.io", "-l",
                                     f"kueue.x-k8s.io/job-uid={uid}")["items"]
        return items[0] if items and is_true(items[0], "Admitted") else None

    workload = testenv.wait_for(admitted_workload, timeout=60, what="the Workload to be Admitted")
    assert workload["status"]["admission"]["clusterQueue"] == "cluster-queue"
    flavors = {a["name"]: a["flavors"] for a in workload["status"]["admission"]["podSetAssignments"]}
    assert set(flavors["pathways-head"].values()) == {"pathways-flavor"}
    assert flavors["worker"] == {"google.com/tpu": "tpu-flavor", "cpu": "tpu-flavor",
                                 "memory": "tpu-flavor"}

    # All 1 + 2 x 4 pods Running.
    def all_running():
        pods = testenv.pods(selector)
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        return pods if len(pods) == 1 + SLICES * HOSTS_PER_SLICE == len(running) else None

    pods = testenv.wait_for(all_running, timeout=120, what="9 Running pods")
    nodes = testenv.nodes()
    heads = [p for p in pods
             if p["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "pathways-head"]
    assert len(heads) == 1
    head = heads[0]
    head_node = nodes[head["spec"]["nodeName"]]["metadata"]["labels"]
    assert head_node[NODEPOOL] == "cpu-np"
    assert ACCELERATOR not in head_node

    # Each worker on a v6e 4x4 host; each slice inside one node pool; the slices in different pools.
    pools_by_slice = {}
    for pod in pods:
        if pod is head:
            continue
        labels = nodes[pod["spec"]["nodeName"]]["metadata"]["labels"]
        assert labels[ACCELERATOR] == "tpu-v6e-slice", pod["metadata"]["name"]
        assert labels[TOPOLOGY] == "4x4", pod["metadata"]["name"]
        assert nodes[pod["spec"]["nodeName"]]["status"]["allocatable"]["google.com/tpu"] == "4"
        index = pod["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"]
        pools_by_slice.setdefault(index, set()).add(labels[NODEPOOL])
    assert sorted(pools_by_slice) == ["0", "1"]
    assert all(len(p) == 1 for p in pools_by_slice.values()), pools_by_slice
    assert len({next(iter(p)) for p in pools_by_slice.values()}) == SLICES, pools_by_slice
    assert len({p["spec"]["nodeName"] for p in pods}) == len(pods), "two pods share a host"

    # kwok must not complete pods on its own: still Running a moment later.
    time.sleep(3)
    assert all(p["status"]["phase"] == "Running" for p in testenv.pods(selector))

    # Logs: the fixed fake log, for the user container and the sidecars, also when following.
    head_name = head["metadata"]["name"]
    for container in ("jax-tpu", "pathways-proxy", "pathways-rm"):
        out = testenv.kubectl("logs", head_name, "-c", container).stdout
        assert out.splitlines() == FAKE_LOG_LINES, (container, out)
    assert follow_logs(testenv, head_name, "jax-tpu", len(FAKE_LOG_LINES)) == FAKE_LOG_LINES

    # The head's user container succeeds -> head Job complete -> JobSet Completed.
    testenv.finish_pod(head_name, 0)
    done = testenv.wait_for(
        lambda: (p := testenv.kubectl_json("get", "pod", head_name))["status"]["phase"]
        == "Succeeded" and p, timeout=30, what="the head pod to succeed")
    assert done["metadata"]["annotations"][EXIT_CODE_ANNOTATION] == "0"
    for status in done["status"]["containerStatuses"] + done["status"]["initContainerStatuses"]:
        assert status["state"]["terminated"]["exitCode"] == 0, status
    completed = testenv.wait_for(
        lambda: (js := testenv.kubectl_json("get", "jobset", jobset)) and is_true(js, "Completed")
        and js, timeout=60, what="the JobSet to complete")
    assert completed["status"].get("terminalState") == "Completed"
    assert not is_true(completed, "Failed")
    testenv.wait_for(lambda: is_true(testenv.kubectl_json(
        "get", "workloads.kueue.x-k8s.io", workload["metadata"]["name"]), "Finished"),
        timeout=30, what="the Workload to be Finished")

    # Deleting the JobSet removes its Jobs and pods (cascading delete through the real GC).
    testenv.kubectl("delete", "jobset", jobset, "--wait=true", "--timeout=60s")
    testenv.wait_for(lambda: not testenv.pods(selector) and not testenv.kubectl_json(
        "get", "jobs", "-l", selector)["items"], timeout=60, what="the pods and Jobs to be gone")


def follow_logs(testenv, pod, container, count, timeout=30):
    """`kubectl logs -f`: the fake container never ends, so read `count` lines and stop."""
    proc = subprocess.Popen(["kubectl", "logs", "-f", pod, "-c", container],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=testenv.env())
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if len(lines) == count:
                break
    finally:
        timer.cancel()
        still_streaming = proc.poll() is None
        proc.kill()
        proc.wait(timeout=10)
    assert still_streaming, "kubectl logs -f ended instead of following"
    return lines


def test_failed_pod_reports_exit_code(testenv):
    """A pod annotated with a non-zero exit code fails with it; its Job fails."""
    name = f"fail-{int(time.time()) % 100000}"
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
           "spec": {"backoffLimit": 0, "template": {"spec": {
               "restartPolicy": "Never", "nodeSelector": {NODEPOOL: "cpu-np"},
               "containers": [{"name": "main", "image": "busybox"},
                              {"name": "helper", "image": "busybox"}]}}}}
    testenv.kubectl("create", "-f", "-", input=yaml.safe_dump(job))
    try:
        pod = testenv.wait_for(
            lambda: next((p for p in testenv.pods(f"batch.kubernetes.io/job-name={name}")
                          if p["status"].get("phase") == "Running"), None),
            timeout=60, what="the Job's pod to run")
        testenv.finish_pod(pod["metadata"]["name"], 3)
        failed = testenv.wait_for(
            lambda: (p := testenv.kubectl_json("get", "pod", pod["metadata"]["name"]))
            ["status"]["phase"] == "Failed" and p, timeout=30, what="the pod to fail")
        for status in failed["status"]["containerStatuses"]:
            assert status["state"]["terminated"]["exitCode"] == 3
            assert status["state"]["terminated"]["reason"] == "Error"
        testenv.wait_for(lambda: is_true(testenv.kubectl_json("get", "job", name), "Failed"),
                         timeout=30, what="the Job to fail")
    finally:
        testenv.kubectl("delete", "job", name, "--cascade=foreground", "--ignore-not-found",
                        "--wait=true", "--timeout=60s", check=False)


def test_webhook_rejects_pathways_jobset_name_over_22_chars(testenv):
    """<name>-pathways-head-0-0.<name> must fit a 63-byte label value, so 22 is the limit."""
    ok_name = "pathways-name-22-chars"
    long_name = ok_name + "x"
    assert (len(ok_name), len(long_name)) == (22, 23)

    accepted = testenv.kubectl("create", "--dry-run=server", "-o", "name", "-f", "-",
                               input=yaml.safe_dump(pathways_jobset(ok_name)))
    assert accepted.stdout.strip() == f"jobset.jobset.x-k8s.io/{ok_name}"

    rejected = testenv.kubectl("create", "-f", "-", input=yaml.safe_dump(pathways_jobset(long_name)),
                               check=False)
    assert rejected.returncode != 0
    err = rejected.stderr
    assert 'admission webhook "vjobset.kb.io" denied the request' in err, err
    assert "spec will lead to invalid label value" in err, err
    assert f'"{long_name}-pathways-head-0-0.{long_name}"' in err, err
    assert 'for coordinator label "jobset.sigs.k8s.io/coordinator"' in err, err
    assert "must be no more than 63 bytes" in err, err
    assert testenv.kubectl("get", "jobset", long_name, check=False).returncode != 0
