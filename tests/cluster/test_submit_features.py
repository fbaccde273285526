"""Multi-tier checkpointing and TPU7x dynamic slicing against the real API server, JobSet and
Kueue (with their webhooks).

For each feature: on a cluster without what it needs, `job submit` refuses with the fix and
sends nothing but reads; with it (the objects GKE and Cluster Toolkit would leave, from
tests/cluster/manifests/), `--dry-run=server` passes, so the API server's validation and the
JobSet and Kueue webhooks accept the JobSet and the Jobs it makes: the MTC CSI volume and the
sidecar's shared memory on the workers, the dynamic slice's Kueue topology annotations.
"""

import json
import re
from pathlib import Path

import pytest

from gcluster_cli import CLUSTER, submit_pathways

MANIFESTS = Path(__file__).resolve().parent / "manifests"
SIDECAR = "us-docker.pkg.dev/test-project/test-repo/colocated-python:1"


def posts(proc):
    return re.findall(r"^POST (https://\S+)", proc.stderr, re.M)


def submit_mtc(cli, *extra, check):
    return submit_pathways(cli, "pw-mtc", "--gke-mtc-enabled", "--gke-mtc-ramdisk-dir", "/local",
                           "--pathways-colocated-python-sidecar-image", SIDECAR, "--dry-run",
                           "server", "-v", *extra, slices="1", check=check)


@pytest.fixture
def mtc_objects(testenv):
    """The CRD, the CSIDriver and a CheckpointConfiguration, removed afterwards."""
    testenv.kubectl("apply", "-f", str(MANIFESTS / "mtc-stand-in.yaml"))
    testenv.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                    "crd/checkpointconfigurations.checkpointing.gke.io")
    testenv.kubectl("apply", "-f", str(MANIFESTS / "mtc-configuration.yaml"))
    yield
    testenv.kubectl("delete", "-f", str(MANIFESTS / "mtc-configuration.yaml"),
                    "--ignore-not-found", check=False)
    testenv.kubectl("delete", "-f", str(MANIFESTS / "mtc-stand-in.yaml"), "--ignore-not-found",
                    check=False)


def test_mtc_without_the_add_on_is_refused_with_the_fix(cli):
    proc = submit_mtc(cli, check=2)
    assert "--gke-mtc-enabled: the cluster has no CheckpointConfiguration CRD" in proc.stderr
    assert "--update-addons=HighScaleCheckpointing=ENABLED" in proc.stderr
    assert posts(proc) == [], proc.stderr


def test_mtc_objects_pass_the_server_dry_run(cli, mtc_objects):
    proc = submit_mtc(cli, check=0)
    sent = posts(proc)
    # the JobSet's and the two Jobs' dry runs, nothing else
    assert len(sent) == 3 and all("dryRun=All" in p for p in sent), proc.stderr
    assert "gcluster: warning:" not in proc.stderr, proc.stderr
    assert cli.kubectl("get", "jobset", "pw-mtc", check=False).returncode != 0
    # What was validated: the workers carry the MTC volume and the sidecar's memory.
    offline = cli.gcluster("job", "submit", "--name", "pw-mtc", *CLUSTER, "--compute-type",
                           "v6e-16", "--num-slices", "1", "--pathways", "--pathways-gcs-location",
                           "gs://test-bucket/pathways", "--command", "python3 train.py",
                           "--image", "us-docker.pkg.dev/test-project/test-repo/jax:1",
                           "--gke-mtc-enabled", "--gke-mtc-ramdisk-dir", "/local",
                           "--pathways-colocated-python-sidecar-image", SIDECAR,
                           "--dry-run-out", "-", "--output", "json", check=0)
    jobset = json.loads(offline.stdout)
    worker = [rj for rj in jobset["spec"]["replicatedJobs"] if rj["name"] == "worker"][0]
    volumes = worker["template"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "cache", "csi": {"driver": "multitier-checkpoint.csi.storage.gke.io"}} in volumes


def test_mtc_without_a_checkpoint_configuration_is_refused(cli, testenv, mtc_objects):
    testenv.kubectl("delete", "-f", str(MANIFESTS / "mtc-configuration.yaml"))
    proc = submit_mtc(cli, check=2)
    assert "the cluster has no CheckpointConfiguration, so the multi-tier checkpointing driver" \
        in proc.stderr
    assert posts(proc) == [], proc.stderr


def submit_slice(cli, *extra, check):
    cli.submitted.append("pw-slice")
    return cli.gcluster("job", "submit", "--name", "pw-slice", *CLUSTER, "--compute-type",
                        "tpu-v7x-slice", "--topology", "2x2x2", "--pathways",
                        "--pathways-gcs-location", "gs://test-bucket/pathways", "--command",
                        "python3 train.py", "--image",
                        "us-docker.pkg.dev/test-project/test-repo/jax:1", "--dry-run", "server",
                        "-v", *extra, check=check)


@pytest.fixture
def slicing_objects(testenv):
    """The Topology and the slice controller's AdmissionCheck (Active), run by testenv's
    ClusterQueue; the profile is put back afterwards."""
    testenv.kubectl("apply", "-f", str(MANIFESTS / "dynamic-slicing.yaml"))
    testenv.kubectl(
        "patch", "admissionchecks.kueue.x-k8s.io", "dynamic-slicing-ac", "--subresource=status",
        "--type=merge", "-p",
        json.dumps({"status": {"conditions": [{
            "type": "Active", "status": "True", "reason": "Active",
            "message": "the slice controller is ready",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}))
    testenv.kubectl(
        "patch", "clusterqueues.kueue.x-k8s.io", "cluster-queue", "--type=merge", "-p",
        json.dumps({"spec": {"admissionChecksStrategy": {
            "admissionChecks": [{"name": "dynamic-slicing-ac"}]}}}))
    testenv.wait_for(
        lambda: any(c["type"] == "Active" and c["status"] == "True" for c in testenv.kubectl_json(
            "get", "clusterqueues.kueue.x-k8s.io", "cluster-queue").get("status", {}).get(
                "conditions", [])),
        timeout=60, what="cluster-queue to be active with the slice check")
    yield
    # Kueue keeps an AdmissionCheck (finalizer resource-in-use) while a ClusterQueue names it.
    testenv.kubectl("patch", "clusterqueues.kueue.x-k8s.io", "cluster-queue", "--type=json", "-p",
                    '[{"op": "remove", "path": "/spec/admissionChecksStrategy"}]', check=False)
    testenv.kubectl("delete", "-f", str(MANIFESTS / "dynamic-slicing.yaml"), "--ignore-not-found",
                    "--timeout=50s", check=False)
    testenv.use_profile("unified", "cpu-np", "tpu7x", force=True)


@pytest.mark.testenv_profile("unified", "cpu-np", "tpu7x")
def test_dynamic_slice_without_a_topology_is_refused_with_the_fix(cli):
    proc = submit_slice(cli, check=2)
    assert "--compute-type tpu-v7x-slice: the cluster has no Kueue Topology" in proc.stderr
    assert "kueue-configuration-dynamic-slicing" in proc.stderr
    assert posts(proc) == [], proc.stderr


@pytest.mark.testenv_profile("unified", "cpu-np", "tpu7x")
def test_dynamic_slice_passes_the_server_dry_run(cli, slicing_objects):
    proc = submit_slice(cli, check=0)
    sent = posts(proc)
    assert len(sent) == 3 and all("dryRun=All" in p for p in sent), proc.stderr
    assert "gcluster: warning:" not in proc.stderr, proc.stderr
    assert cli.kubectl("get", "jobset", "pw-slice", check=False).returncode != 0
