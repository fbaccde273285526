"""The seed's commands, headless and normal, against the local control plane.

Each test submits with ./gcluster and asserts the cluster state after every step: the JobSet
and its fields, Kueue admission, where pods landed, what `job list` says as the job moves, the
logs, and that cancel leaves nothing behind.
"""

import json
import re
import subprocess
import time
from urllib.parse import unquote

import pytest
import yaml

from conftest import wait_for
from gcluster_cli import CLUSTER, GCLUSTER, GCS, IMAGE, condition, is_true, submit_pathways


def node_labels(cli):
    nodes = cli.kubectl_json("get", "nodes")["items"]
    return {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}


def role(pod):
    return pod["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]


def assert_pods_placed(cli, job, accelerator, topology, slices, hosts):
    """The head on cpu-np, each slice's hosts on TPU nodes of one pool with the right labels."""
    labels = node_labels(cli)
    pods = wait_for(
        lambda: [p for p in cli.pods(job) if p["status"].get("phase") == "Running"]
        if len([p for p in cli.pods(job) if p["status"].get("phase") == "Running"])
        == 1 + slices * hosts
        else None,
        what=f"{1 + slices * hosts} running pods of {job}",
    )
    pools_per_slice = {}
    for pod in pods:
        node = labels[pod["spec"]["nodeName"]]
        if role(pod) == "pathways-head":
            assert node["cloud.google.com/gke-nodepool"] == "cpu-np"
            continue
        assert node["cloud.google.com/gke-tpu-accelerator"] == accelerator
        assert node["cloud.google.com/gke-tpu-topology"] == topology
        index = pod["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"]
        pools_per_slice.setdefault(index, set()).add(node["cloud.google.com/gke-nodepool"])
    assert len(pools_per_slice) == slices
    for pools in pools_per_slice.values():
        assert len(pools) == 1, f"a slice spans node pools {pools}"
    if slices > 1:
        all_pools = [next(iter(p)) for p in pools_per_slice.values()]
        assert len(set(all_pools)) == slices, "two slices share a node pool"


def assert_gone(cli, job):
    """No JobSet, Job or Pod of the job is left."""
    assert cli.kubectl("get", "jobset", job, check=False).returncode != 0
    jobs = cli.kubectl_json("get", "jobs", "-l", f"jobset.sigs.k8s.io/jobset-name={job}")
    assert jobs["items"] == []
    assert cli.pods(job) == []


def test_headless_flow(cli):
    job = "pw-headless"
    out = submit_pathways(cli, job, slices="1", headless=True).stdout
    assert f"Created headless Pathways job {job}" in out
    assert f"gcluster job connect {job}" in out and "kubectl" not in out

    js = cli.kubectl_json("get", "jobset", job)
    # No success policy aimed at the head (the webhook defaults "all jobs", which servers
    # that never exit never reach).
    assert "targetReplicatedJobs" not in js["spec"].get("successPolicy", {})
    head = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert [c["name"] for c in head["containers"]] == ["pathways-proxy", "pathways-rm"]
    assert all("restartPolicy" not in c for c in head["containers"])
    assert "initContainers" not in head

    wait_for(lambda: is_true(cli.workload(job) or {}, "Admitted"), what="Kueue admission")
    assert_pods_placed(cli, job, "tpu-v6e-slice", "4x4", slices=1, hosts=4)

    # The seed's step 2: the head pod by its JobSet labels.
    pods = cli.kubectl(
        "get", "pods", "-l",
        f"jobset.sigs.k8s.io/jobset-name={job},jobset.sigs.k8s.io/replicatedjob-name=pathways-head",
        "-o", "name",
    ).stdout.split()
    assert len(pods) == 1

    row = wait_for(lambda: cli.list_json()[job]["status"] == "Running 5/5" and cli.list_json()[job],
                   what="job list to show Running 5/5")
    assert row["pathways"] == "headless"
    assert row["compute"] == "v6e-16 x1"
    assert row["phase"] == "Running" and row["queue"] == "user-queue"
    assert row["namespace"] == "default" and row["completed"] is None
    assert row["uid"] == cli.kubectl_json("get", "jobset", job)["metadata"]["uid"]

    traced = cli.gcluster("job", "logs", job, *CLUSTER, "-v", check=0)
    assert "testenv: fake log line 1" in traced.stdout  # the proxy's log, the headless default
    # The JobSet and its pods are asked for together, on a connection each (never as streams of
    # one: libcurl 7.88 stalls those); then the log stream.
    requests = re.findall(r"^GET https://.*$", traced.stderr, re.M)
    assert "/jobsets/" in requests[0] + requests[1] and "/pods?" in requests[0] + requests[1]
    assert sum("new connection" in r for r in requests[:2]) == 2, traced.stderr
    assert "/log?" in requests[2], traced.stderr

    cli.gcluster("job", "cancel", job, *CLUSTER, "--wait", "--timeout", "90s", check=0)
    assert_gone(cli, job)


def test_pathways_flow(cli):
    job = "pw-demo"
    proc = submit_pathways(cli, job, "-v")
    requests = re.findall(r"^(?:GET|POST|PUT|PATCH|DELETE) https://.*$", proc.stderr, re.M)
    # The namespace (it must exist), whether JobSet's API group is served (a submit installs a
    # missing JobSet; Kueue's LocalQueue list says whether Kueue is), LocalQueues, ClusterQueues,
    # ResourceFlavors and the nodes the job needs (sent together), the dry runs of the two Jobs
    # the JobSet will make (together), then the POST: in three round trips, the first eight on a
    # connection each, the rest on those.
    assert len(requests) == 11, f"{len(requests)} requests:\n{proc.stderr}"
    assert [("dryRun=All" in r) for r in requests] == [False] * 8 + [True] * 2 + [False]
    assert [("new connection" in r) for r in requests] == [True] * 8 + [False] * 3, proc.stderr
    assert sum("/apis/jobset.x-k8s.io " in r for r in requests[:8]) == 1, proc.stderr
    assert not any("/apis/kueue.x-k8s.io " in r for r in requests), proc.stderr
    assert any("/api/v1/namespaces/default " in r for r in requests), proc.stderr
    assert "gcluster: 11 API requests in 3 round trips" in proc.stderr
    # Nodes by label selector, never all of them: the two v6e 4x4 slices' hosts, one node of each
    # pool the head may be put on.
    nodes = sorted(unquote(r.split("?", 1)[1].split(" ")[0]) for r in requests if "/nodes?" in r)
    assert nodes == ["labelSelector=cloud.google.com/gke-nodepool=cpu-np&limit=1",
                     "labelSelector=cloud.google.com/gke-nodepool=pathways-np&limit=1",
                     "labelSelector=cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice,"
                     "cloud.google.com/gke-tpu-topology=4x4&limit=8"], proc.stderr
    assert all("HTTP/2" in r for r in requests), proc.stderr
    assert f"Created Pathways job {job} in namespace default, queued on user-queue" in proc.stdout

    js = cli.kubectl_json("get", "jobset", job)
    assert js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
    assert js["spec"]["coordinator"]["replicatedJob"] == "pathways-head"
    worker = js["spec"]["replicatedJobs"][1]
    assert worker["replicas"] == 2
    assert worker["template"]["spec"]["parallelism"] == 4

    wl = wait_for(lambda: cli.workload(job) if is_true(cli.workload(job) or {}, "Admitted") else None,
                  what="Kueue admission")
    assert wl["status"]["admission"]["clusterQueue"] == "cluster-queue"
    assert_pods_placed(cli, job, "tpu-v6e-slice", "4x4", slices=2, hosts=4)
    wait_for(lambda: cli.list_json()[job]["status"] == "Running 9/9", what="list shows 9/9")
    # JobSet's headless Service (the pods' DNS names) gets an endpoint for each of the 9 pods.
    # All are hostNetwork pods, which kwok gives their node's InternalIP; the API server refuses
    # endpoints in 127.0.0.0/8, so with loopback node addresses the endpointslice controller
    # failed on every update and inspect listed its FailedToUpdateEndpointSlices warnings.
    def endpoints():
        slices = cli.kubectl_json("get", "endpointslices",
                                  "-l", f"kubernetes.io/service-name={job}")["items"]
        found = [e for s in slices for e in s.get("endpoints") or []]
        return found if len(found) == 9 else None

    found = wait_for(endpoints, what=f"9 endpoints in the EndpointSlices of Service {job}")
    addresses = sorted(a for e in found for a in e["addresses"])
    assert len(set(addresses)) == 9 and not [a for a in addresses if a.startswith("127.")], found

    inspect = cli.gcluster("job", "inspect", "--name", job, *CLUSTER, "--manifest", check=0).stdout
    manifest = yaml.safe_load(inspect)
    assert manifest["kind"] == "JobSet" and "managedFields" not in manifest["metadata"]
    assert "status" not in manifest
    assert "# Status:     Running 9/9" in inspect
    assert "Admitted to ClusterQueue cluster-queue" in inspect
    report = inspect_json(cli, job)
    assert report["phase"] == "Running" and report["status"] == "Running 9/9"
    assert report["pathways"] == "yes" and report["compute"] == "v6e-16 x2"
    assert report["queue"] == "user-queue" and report["finished"] is None
    assert report["kueue"]["admitted"] is True
    assert report["kueue"]["cluster_queue"] == "cluster-queue"
    assert report["kueue"]["workload"] == wl["metadata"]["name"]
    assert {ps["name"] for ps in report["kueue"]["pod_sets"]} == {"pathways-head", "worker"}
    assert [(r["name"], r["replicas"]) for r in report["replicated_jobs"]] == \
        [("pathways-head", 1), ("worker", 2)]
    pods = report["pods"]
    assert len(pods) == 9 and pods[0]["role"] == "pathways-head"
    assert all(p["phase"] == "Running" and p["node"] for p in pods)
    assert sorted((p["slice"], p["host"]) for p in pods[1:]) == \
        [(s, h) for s in range(2) for h in range(4)]
    assert node_labels(cli)[pods[0]["node"]]["cloud.google.com/gke-nodepool"] == "cpu-np"
    assert "manifest" not in report
    # A healthy job: JobSet's exclusive placement made the first pod creations fail on its
    # webhook (FailedCreate) and the scheduler may have failed first tries; all succeeded since,
    # so they are counted as resolved, not listed.
    assert not [w for w in report["warnings"]
                if w["reason"] in ("FailedCreate", "FailedScheduling")], report["warnings"]
    assert isinstance(report["resolved_warnings"], int)
    assert "FailedCreate" not in inspect and "FailedScheduling" not in inspect, inspect
    # Nor anything else: a healthy job lists no warning at all (its Service's endpoints too).
    assert report["warnings"] == [], report["warnings"]
    assert not re.search(r"Recent warnings:$", inspect, re.M), inspect  # the list's heading
    shown = yaml.safe_load(cli.gcluster("job", "inspect", job, *CLUSTER, "--format", "yaml",
                                        "--manifest",
                                        check=0).stdout)
    assert shown["manifest"]["metadata"]["name"] == job and "status" not in shown["manifest"]
    # The JobSet, pods and events together (a connection each), then the Workload (on one of
    # them): four requests in two round trips; the job runs as it should, so the diagnosis asks
    # for nothing more (not even its child Jobs, which only a failed job's diagnosis reads).
    traced = cli.gcluster("job", "inspect", job, *CLUSTER, "-v", check=0).stderr
    requests = re.findall(r"^GET https://.*$", traced, re.M)
    assert len(requests) == 4 and sum("new connection" in r for r in requests) == 3, traced
    assert "4 API requests in 2 round trips" in traced, traced

    logs = cli.gcluster("job", "logs", job, *CLUSTER, check=0).stdout
    assert "testenv: fake log line 1" in logs

    follower = subprocess.Popen(
        [str(GCLUSTER), "job", "logs", job, *CLUSTER, "-f"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli.env(),
    )
    try:
        time.sleep(2)
        cli.finish_pod(cli.head_pod(job)["metadata"]["name"], 0)
        out, _ = follower.communicate(timeout=60)
    finally:
        follower.kill()
    assert follower.returncode == 0
    assert "testenv: fake log line 1" in out

    wait_for(lambda: cli.list_json()[job]["status"] == "Succeeded", what="Succeeded in job list")
    done = inspect_json(cli, job)
    assert done["phase"] == "Succeeded" and done["finished"]
    uid = cli.kubectl_json("get", "jobset", job)["metadata"]["uid"]
    before = len(cli.pods(job))  # the finished head pod stays until the JobSet is deleted
    assert before >= 1
    cancelled = json.loads(cli.gcluster("job", "cancel", job, *CLUSTER, "--wait", "--timeout",
                                        "90s", "-o", "json", check=0).stdout)
    assert cancelled == {"name": job, "namespace": "default", "uid": uid, "gone": True,
                         "pods_deleted": cancelled["pods_deleted"], "gateways_removed": []}
    # Every pod the wait saw went; the JobSet controller may have removed workers before it looked.
    assert 1 <= cancelled["pods_deleted"] <= before
    assert_gone(cli, job)


def inspect_json(cli, job):
    return json.loads(cli.gcluster("job", "inspect", job, *CLUSTER, "--format", "json", check=0).stdout)


def head_running(cli, job):
    pods = cli.pods(job)
    heads = [p for p in pods if role(p) == "pathways-head" and p["status"].get("phase") == "Running"]
    return heads[0] if heads else None


def test_job_failure_is_reported_with_pod_and_exit_code(cli):
    job = "pw-fails"
    submit_pathways(cli, job, "--restarts", "0", slices="1")
    head = wait_for(lambda: head_running(cli, job), what="head pod running")
    cli.finish_pod(head["metadata"]["name"], 7)
    wait_for(lambda: cli.list_json()[job]["status"] == "Failed", what="Failed in job list")
    inspect = cli.gcluster("job", "inspect", job, *CLUSTER, check=0).stdout
    assert "Status:     Failed" in inspect
    assert f"pod {head['metadata']['name']}: container workload-container exited with code 7" \
        in inspect
    report = inspect_json(cli, job)
    assert report["phase"] == "Failed" and report["finished"]
    assert "container workload-container exited with code 7" in report["detail"]
    head_row = report["pods"][0]
    assert head_row["name"] == head["metadata"]["name"] and head_row["phase"] == "Failed"


def test_await_returns_3_when_the_job_fails_and_0_when_it_succeeds(cli):
    for job, code, want in (("pw-await-ok", 0, 0), ("pw-await-bad", 3, 3)):
        waiter = subprocess.Popen(
            [str(GCLUSTER), "job", "submit", "--name", job, *CLUSTER, "--compute-type", "v6e-16",
             "--pathways", "--pathways-gcs-location", GCS, "--command", "true", "--image", IMAGE,
             "--restarts", "0", "--await-job-completion", "--timeout", "3m"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli.env(),
        )
        cli.submitted.append(job)
        try:
            head = wait_for(lambda: head_running(cli, job), what="head pod running")
            cli.finish_pod(head["metadata"]["name"], code)
            out, err = waiter.communicate(timeout=120)
        finally:
            waiter.kill()
        assert waiter.returncode == want, err
        if want == 3:
            assert f"job {job} failed" in err and "exited with code 3" in err
            assert re.search(r"^Cause: the head failed \d+s ago: container workload-container of "
                             rf"pod {job}-pathways-head-0-0-\w+ exited with code 3; no restarts "
                             r"were left \(0 of at most 0\)$", out, re.M), out
            assert f"\nFix:   see why: gcluster job logs {job}; fix it, then submit again" in out
        else:
            assert f"Job {job} succeeded." in out
        cli.gcluster("job", "cancel", job, *CLUSTER, "--wait", "--timeout", "90s", check=0)


def test_queued_while_the_queue_is_full(cli):
    first, second = "pw-fills", "pw-waits"
    cq = cli.kubectl_json("get", "clusterqueue", "cluster-queue")
    # One job of two v6e-16 slices takes all 32 chips the test quota allows.
    patch = [{"op": "replace", "path": path, "value": value}
             for path, value in tpu_quota_paths(cq, "32")]
    cli.kubectl("patch", "clusterqueue", "cluster-queue", "--type=json", "-p", json_dumps(patch))
    try:
        submit_pathways(cli, first)
        wait_for(lambda: is_true(cli.workload(first) or {}, "Admitted"), what="first admitted")
        submit_pathways(cli, second)
        row = wait_for(lambda: cli.list_json().get(second, {}).get("status") == "Queued"
                       and cli.list_json()[second], what="second job queued")
        assert row["status"] == "Queued"
        wide = cli.gcluster("job", "list", *CLUSTER, "-o", "wide", check=0).stdout
        assert re.search(rf"^{second}\s+Queued", wide, re.M)
        # Kueue rewrites the condition's message as it retries, so the workload is read on both
        # sides of the inspect and either message counts; a few tries, as a retry can fall
        # between the reads.
        def inspect_names_the_condition():
            before = condition(cli.workload(second), "QuotaReserved")
            out = cli.gcluster("job", "inspect", second, *CLUSTER, check=0).stdout
            after = condition(cli.workload(second), "QuotaReserved")
            said = [f"Not admitted: {c['reason']}: {c['message']}" for c in (before, after)]
            return any(s in out for s in said) or None
        wait_for(inspect_names_the_condition, timeout=30,
                 what="job inspect to give Kueue's reason for not admitting the job")
        def json_names_the_condition():
            before = condition(cli.workload(second), "QuotaReserved")
            report = inspect_json(cli, second)
            after = condition(cli.workload(second), "QuotaReserved")
            for c in (before, after):
                if (report["kueue"]["reason"], report["kueue"]["message"]) == \
                        (c["reason"], c["message"]) and \
                        report["detail"] == f"{c['reason']}: {c['message']}":
                    return report
            return None
        report = wait_for(json_names_the_condition, timeout=30,
                          what="job inspect -o json to give Kueue's reason")
        assert report["phase"] == "Queued" and report["pods"] == []
        assert report["kueue"]["admitted"] is False
        assert cli.list_json()[second]["detail"].split(":")[0] == report["kueue"]["reason"]
        cli.gcluster("job", "cancel", first, *CLUSTER, "--wait", "--timeout", "90s", check=0)
        wait_for(lambda: is_true(cli.workload(second) or {}, "Admitted"), what="second admitted")
    finally:
        for job in (first, second):
            cli.delete_job(job)
        restore = [{"op": "replace", "path": path, "value": value}
                   for path, value in tpu_quota_paths(cq, None)]
        cli.kubectl("patch", "clusterqueue", "cluster-queue", "--type=json", "-p",
                    json_dumps(restore))


def tpu_quota_paths(cq, value):
    """JSON-patch paths of every google.com/tpu quota, with `value` (None: the original)."""
    out = []
    for g, group in enumerate(cq["spec"]["resourceGroups"]):
        for f, flavor in enumerate(group["flavors"]):
            for r, res in enumerate(flavor["resources"]):
                if res["name"] == "google.com/tpu":
                    path = f"/spec/resourceGroups/{g}/flavors/{f}/resources/{r}/nominalQuota"
                    original = res["nominalQuota"]
                    out.append((path, original if value is None or original in (0, "0") else value))
    return out


def json_dumps(obj):
    return json.dumps(obj)


def test_unknown_job_is_one_clear_line(cli):
    for command in ("inspect", "logs", "cancel"):
        proc = cli.gcluster("job", command, "no-such-job", *CLUSTER, check=1)
        lines = proc.stderr.strip().splitlines()
        assert lines == ["gcluster: error: no job named no-such-job in namespace default "
                         "(gcluster job list shows the jobs)"], proc.stderr


def test_name_already_taken(cli):
    job = "pw-taken"
    submit_pathways(cli, job, slices="1")
    try:
        proc = submit_pathways(cli, job, slices="1", check=2)
        assert f"a job named {job} already exists in namespace default (created" in proc.stderr
        assert f"gcluster job cancel {job}" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    finally:
        cli.delete_job(job)


def test_missing_local_queue(cli):
    proc = submit_pathways(cli, "pw-noqueue", "--queue", "no-such-queue", slices="1", check=2)
    assert "--queue no-such-queue: no such LocalQueue in namespace default (it has: user-queue)" \
        in proc.stderr
    assert cli.kubectl("get", "jobset", "pw-noqueue", check=False).returncode != 0


QUEUES_FOR_CHECKS = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cpu-only-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [cpu, memory]
      flavors:
        - name: pathways-flavor
          resources: [{name: cpu, nominalQuota: 1}, {name: memory, nominalQuota: 1Gi}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: cpu-queue, namespace: default}
spec: {clusterQueue: cpu-only-cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: orphan-queue, namespace: default}
spec: {clusterQueue: no-such-cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: empty-pool-flavor}
spec:
  nodeLabels: {cloud.google.com/gke-nodepool: empty-np}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: empty-pool-cq}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [google.com/tpu, cpu, memory]
      flavors:
        - name: empty-pool-flavor
          resources:
            - {name: google.com/tpu, nominalQuota: 0}
            - {name: cpu, nominalQuota: 480}
            - {name: memory, nominalQuota: 2000G}
        - name: tpu-flavor
          resources:
            - {name: google.com/tpu, nominalQuota: 64}
            - {name: cpu, nominalQuota: 4000}
            - {name: memory, nominalQuota: 20Ti}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: empty-pool-queue, namespace: default}
spec: {clusterQueue: empty-pool-cq}
"""


@pytest.fixture
def queues_for_checks(cli, tmp_path):
    queues = tmp_path / "queues.yaml"
    queues.write_text(QUEUES_FOR_CHECKS)
    cli.kubectl("apply", "-f", str(queues))
    # Kueue marks the ClusterQueues Active (or not) once it has seen their flavors.
    wait_for(lambda: all(condition(cli.kubectl_json("get", "clusterqueue", cq), "Active")
                         for cq in ("cpu-only-cq", "empty-pool-cq")),
             what="Kueue to judge the test's ClusterQueues")
    yield
    cli.kubectl("delete", "-f", str(queues), "--wait=false", check=False)


def test_queue_and_priority_checks(cli, queues_for_checks):
    """What submit learns in its first round trip: a PriorityClass that does not exist, a
    LocalQueue whose ClusterQueue is missing, and a ClusterQueue without TPU quota are errors
    (exit 2, nothing created); a server dry run costs two round trips, the second on the
    connections of the first."""
    proc = submit_pathways(cli, "pw-prio", "--priority", "no-such-class", slices="1", check=2)
    assert "--priority no-such-class: no such PriorityClass in the cluster" in proc.stderr
    proc = submit_pathways(cli, "pw-prio", "--priority", "high", "--dry-run", "server", "-v",
                           slices="1")
    assert "The cluster accepted Pathways job pw-prio" in proc.stdout
    requests = re.findall(r"^(?:GET|POST) https://.*$", proc.stderr, re.M)
    # The namespace, JobSet's API group, LocalQueues, ClusterQueues, ResourceFlavors, the nodes
    # (the slice's hosts, one of each head pool candidate), the PriorityClass (selected by name);
    # then the two Jobs' and the JobSet's dry runs.
    assert len(requests) == 12, proc.stderr
    assert sum("dryRun=All" in r for r in requests) == 3, proc.stderr
    assert all(("new connection" in r) != ("dryRun=All" in r) for r in requests), proc.stderr
    assert "gcluster: 12 API requests in 2 round trips" in proc.stderr

    proc = submit_pathways(cli, "pw-orphan", "--queue", "orphan-queue", "--dry-run", "server",
                           slices="1", check=2)
    assert ('LocalQueue orphan-queue points to ClusterQueue "no-such-cq", which does not '
            'exist, so Kueue would never admit this job') in proc.stderr
    proc = submit_pathways(cli, "pw-cpuq", "--queue", "cpu-queue", slices="1", check=2)
    assert ("the workers request google.com/tpu, which ClusterQueue cpu-only-cq has no quota "
            "for, so Kueue would never admit this job") in proc.stderr
    assert "gcluster deploy" in proc.stderr
    assert cli.kubectl("get", "jobset", "pw-cpuq", check=False).returncode != 0


def test_no_head_node_pool(cli, queues_for_checks):
    # A head pool that no flavor of the ClusterQueue places pods on is never admitted...
    proc = submit_pathways(cli, "pw-nohead", "--pathways-head-np", "no-such-pool", slices="1",
                           check=2)
    assert ("ClusterQueue cluster-queue has no flavor for the cpu and memory of the head, whose "
            "pods select cloud.google.com/gke-nodepool=no-such-pool") in proc.stderr
    assert "--pathways-head-np cpu-np" in proc.stderr
    # ...while one a flavor places pods on, without nodes now, is only a warning (it may be
    # scaled to zero).
    proc = submit_pathways(cli, "pw-nohead", "--pathways-head-np", "empty-np", "--queue",
                           "empty-pool-queue", "--dry-run", "server", slices="1")
    assert "node pool empty-np has no nodes now" in proc.stderr
    # With no cpu-np or pathways-np nodes at all, auto-detection is an error.
    nodes = [n for n, labels in node_labels(cli).items()
             if labels.get("cloud.google.com/gke-nodepool") == "cpu-np"]
    try:
        for n in nodes:
            cli.kubectl("label", "--overwrite", "node", n, "cloud.google.com/gke-nodepool=hidden-np")
        proc = submit_pathways(cli, "pw-nohead2", slices="1", check=2)
        assert "no node pool for the Pathways head" in proc.stderr
        assert "--pathways-head-np" in proc.stderr and "gcluster deploy" in proc.stderr
    finally:
        for n in nodes:
            cli.kubectl("label", "--overwrite", "node", n, "cloud.google.com/gke-nodepool=cpu-np")


def test_server_rejection_shows_the_servers_reason(cli, tmp_path):
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "no-blocked-jobsets"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["jobset.x-k8s.io"], "apiVersions": ["*"],
                "operations": ["CREATE"], "resources": ["jobsets"]}]},
            "validations": [{"expression": "!object.metadata.name.startsWith('blocked-')",
                             "message": "JobSets named blocked-* are not allowed here"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "no-blocked-jobsets"},
        "spec": {"policyName": "no-blocked-jobsets", "validationActions": ["Deny"]},
    }
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump_all([policy, binding]))
    cli.kubectl("apply", "-f", str(path))
    try:
        # A server dry run until the policy is in effect (it runs for dry runs too), so no
        # attempt creates the job before that.
        wait_for(lambda: submit_pathways(cli, "blocked-job", "--dry-run", "server", slices="1",
                                         check=None).returncode == 1,
                 timeout=30, what="the policy to take effect")
        proc = submit_pathways(cli, "blocked-job", slices="1", check=1)
        assert "the cluster rejected JobSet blocked-job" in proc.stderr
        assert "JobSets named blocked-* are not allowed here" in proc.stderr
    finally:
        cli.kubectl("delete", "-f", str(path), "--ignore-not-found")
        cli.delete_job("blocked-job")


def container_env(pod_spec, name):
    containers = pod_spec.get("initContainers", []) + pod_spec["containers"]
    container = next(c for c in containers if c["name"] == name)
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def test_every_new_manifest_field_is_accepted_and_reaches_the_pods(cli, tmp_path):
    """--env, --env-file, the per-role env flags, XCLOUD_ENVIRONMENT and the head's safe-to-evict
    annotation: the real webhooks accept them (--dry-run=server creates nothing), and once created
    the JobSet controller makes Jobs and pods that carry them."""
    env_file = tmp_path / "train.env"
    env_file.write_text("# comment\nFROM_FILE='quoted value'\nmy.var-1=dots and dashes\n")
    flags = ["--env", "EVERY=1", "--env-file", str(env_file),
             "--pathways-proxy-env", "PROXY_ONLY=2", "--pathways-server-env", "SERVER_ONLY=3",
             "--pathways-worker-env", "WORKER_ONLY=$(PATHWAYS_HEAD):29001",
             "--pathways-elastic-slices", "1", "--mount", "/mnt/disks/ssd:/data//x/"]
    proc = submit_pathways(cli, "pw-env", *flags, "--dry-run", "server")
    assert "The cluster accepted Pathways job pw-env" in proc.stdout, proc.stdout + proc.stderr
    assert cli.kubectl("get", "jobset", "pw-env", check=False).returncode != 0

    submit_pathways(cli, "pw-env", *flags)
    pods = wait_for(lambda: cli.pods("pw-env") if len(cli.pods("pw-env")) == 9 else None,
                    what="the 9 pods of pw-env")
    head = next(p for p in pods if role(p) == "pathways-head")
    worker = next(p for p in pods if role(p) == "worker")
    assert head["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/safe-to-evict"] \
        == "false"
    user = container_env(head["spec"], "workload-container")
    assert user["XCLOUD_ENVIRONMENT"] == "GCP" and user["EVERY"] == "1"
    assert user["FROM_FILE"] == "quoted value" and user["my.var-1"] == "dots and dashes"
    assert "PROXY_ONLY" not in user and "WORKER_ONLY" not in user
    # --env and --env-file reach the workload container only, as in Google's gcluster.
    proxy_env = container_env(head["spec"], "pathways-proxy")
    assert proxy_env["PROXY_ONLY"] == "2" and "EVERY" not in proxy_env
    assert container_env(head["spec"], "pathways-rm")["SERVER_ONLY"] == "3"
    worker_env = container_env(worker["spec"], "pathways-worker")
    assert worker_env["WORKER_ONLY"] == "$(PATHWAYS_HEAD):29001" and "EVERY" not in worker_env
    mounts = [m["mountPath"] for m in next(
        c for c in head["spec"]["containers"] if c["name"] == "workload-container")["volumeMounts"]]
    assert mounts[:2] == ["/tmp", "/data/x"]  # then the service account token
    # and the mounts reach the TPU workers too
    worker_mounts = [m["mountPath"] for m in next(
        c for c in worker["spec"]["containers"] if c["name"] == "pathways-worker")["volumeMounts"]]
    assert worker_mounts[:2] == ["/tmp", "/data/x"]


def test_hostile_input_is_refused_before_anything_is_sent(cli, tmp_path):
    """What once got through: each exits 2 naming the flag, with no request in the -v trace."""
    bad_env = tmp_path / "bad.env"
    bad_env.write_text("A=1\nexport B=2\n")
    cases = [
        (["--command", "echo \udcff"], "--command is not valid UTF-8"),
        (["--image", "my image:1"], "--image \"my image:1\" is not a valid image reference"),
        (["--pathways-server-image", "us-docker.pkg.dev/P/r/server:1"], "lower-case"),
        (["--mount", "gs://test-bucket:/tmp"], "the Pathways head already mounts"),
        (["--pathways-elastic-slices", "2"], "nothing would be left running"),
        (["--env", "JAX_PLATFORMS=cpu"], "gcluster already sets in container workload-container"),
        (["--env-file", str(bad_env)], "bad.env:2"),
    ]
    for extra, message in cases:
        proc = submit_pathways(cli, "pw-hostile", *extra, "-v", check=2)
        assert message in proc.stderr, proc.stderr
        assert "https://" not in proc.stderr, proc.stderr
    assert cli.kubectl("get", "jobset", "pw-hostile", check=False).returncode != 0
    proc = cli.gcluster("job", "logs", "pw-hostile", *CLUSTER, "--slice", "-1", "-v", check=2)
    assert "--slice must be 0 or more" in proc.stderr and "https://" not in proc.stderr


def test_validation_errors_send_nothing(cli, tmp_path):
    """Bad input exits 2 before any request, even with an unreachable cluster."""
    bad = tmp_path / "unreachable"
    bad.write_text(UNREACHABLE_KUBECONFIG)
    proc = cli.gcluster("job", "submit", "--name", "Bad_Name", *CLUSTER, "--compute-type",
                        "v6e-16", "--command", "x", "--image", IMAGE, "-v",
                        env={"KUBECONFIG": str(bad)}, check=2)
    assert "https://" not in proc.stderr
    assert proc.stderr.startswith("gcluster: error: --name \"Bad_Name\" is not a valid name")


UNREACHABLE_KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: "secret-token-should-never-print"}
contexts:
- name: gke_p_us-east5_local
  context: {cluster: c, user: u}
current-context: gke_p_us-east5_local
"""


def test_apiserver_not_reachable(cli, tmp_path):
    bad = tmp_path / "unreachable"
    bad.write_text(UNREACHABLE_KUBECONFIG)
    proc = cli.gcluster("job", "list", *CLUSTER, "-v", env={"KUBECONFIG": str(bad)}, check=1)
    assert "secret-token-should-never-print" not in proc.stderr + proc.stdout
    errors = [l for l in proc.stderr.splitlines() if l.startswith("gcluster: error:")]
    assert len(errors) == 1 and "127.0.0.1:1" in errors[0]
