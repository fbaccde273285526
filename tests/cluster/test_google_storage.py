"""Google's gcluster after v1.98 on the local control plane: `cluster volume` lists the claims
Cluster Toolkit's file-system modules made and the storage-profile gateways; a `profile=` mount
creates its gateway (a PersistentVolume on the profile's gcsfusecsi-* StorageClass and a claim
bound to it), a second job reuses it, and `job cancel` removes it once no job uses it.

testenv has no GCS FUSE CSI driver, so a stand-in gcsfusecsi-serving StorageClass (a
provisioner nothing serves) stands for GKE's; the PersistentVolume controller binds the
pre-bound pair all the same.
"""

import json
import textwrap

import pytest

from gcluster_cli import CLUSTER, IMAGE
from conftest import wait_for

STORAGE_CLASS = textwrap.dedent("""\
    apiVersion: storage.k8s.io/v1
    kind: StorageClass
    metadata:
      name: gcsfusecsi-serving
      labels: {gke-gcsfuse/profile: "true"}
    provisioner: gcsfuse.csi.storage.gke.io
    volumeBindingMode: Immediate
    reclaimPolicy: Retain
    """)

FILE_SYSTEM_CLAIM = textwrap.dedent("""\
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata:
      name: shared-filestore
      namespace: default
      labels: {ghpc_role: file-system, ghpc_module: filestore}
    spec:
      accessModes: [ReadWriteMany]
      resources: {requests: {storage: 1Ti}}
      storageClassName: ""
      volumeName: shared-filestore-pv
    """)

GATEWAY_LABELS = "gcluster.google.com/managed-by=cluster-toolkit,gcluster.google.com/storage-type=gcsfuse"


@pytest.fixture
def serving_class(testenv):
    testenv.kubectl("apply", "-f", "-", input=STORAGE_CLASS)
    yield
    testenv.kubectl("delete", "storageclass", "gcsfusecsi-serving", "--ignore-not-found",
                    check=False)


def gateways(testenv, kind):
    return testenv.kubectl_json("get", kind, "-A", "-l", GATEWAY_LABELS)["items"]


def test_cluster_volume_lists_file_systems(testenv, cli):
    testenv.kubectl("apply", "-f", "-", input=FILE_SYSTEM_CLAIM)
    try:
        doc = json.loads(cli.gcluster("cluster", "volume", *CLUSTER, "-o", "json",
                                      check=0).stdout)
        mine = [v for v in doc["volumes"] if v["name"] == "shared-filestore"]
        assert mine == [{"namespace": "default", "name": "shared-filestore", "type": "filestore",
                         "phase": mine[0]["phase"], "gateway": False}], doc
        text = cli.gcluster("cluster", "volume", *CLUSTER, check=0).stdout
        header, *rows = text.splitlines()
        assert header.split() == ["NAME", "TYPE", "CLUSTER", "NAMESPACE", "STATUS"]
        assert any(r.split()[:4] == ["shared-filestore", "filestore", "local", "default"]
                   for r in rows), text
    finally:
        testenv.kubectl("delete", "pvc", "shared-filestore", "--ignore-not-found", check=False,
                        timeout=30)


def submit_with_profile(cli, name, check=0):
    cli.submitted.append(name)
    return cli.gcluster("job", "submit", "--name", name, *CLUSTER, "--compute-type", "v6e-16",
                        "--image", IMAGE, "--command", "python serve.py",
                        "--mount", "gs://gcluster-models/llama;/models;ro;profile=serving",
                        check=check)


def cancel(cli, name):
    # The gateways a cancel removes must be older than two minutes (a submit racing the cancel
    # may be about to mount one); the test cannot wait that long.
    return json.loads(cli.gcluster("job", "cancel", name, *CLUSTER, "-o", "json",
                                   env={"GCLUSTER_GATEWAY_MIN_AGE": "0"}, check=0).stdout)


def test_profile_mount_gateway_is_created_reused_and_removed(testenv, cli, serving_class):
    first = submit_with_profile(cli, "serve-a")
    assert "created gateway PersistentVolume gcluster-gcsfuse-gcluster-models-serving-" in \
        first.stderr, first.stderr
    claims = gateways(testenv, "pvc")
    volumes = gateways(testenv, "pv")
    assert len(claims) == 1 and len(volumes) == 1, (claims, volumes)
    claim, volume = claims[0], volumes[0]
    name = claim["metadata"]["name"]
    assert name.startswith("gcluster-gcsfuse-gcluster-models-serving-")
    assert claim["metadata"]["namespace"] == "default"
    assert claim["spec"]["storageClassName"] == "gcsfusecsi-serving"
    assert volume["metadata"]["name"] == name + "-default"
    assert volume["spec"]["csi"] == {"driver": "gcsfuse.csi.storage.gke.io",
                                     "volumeHandle": "gcluster-models"}
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    # Kubernetes' volume controller binds the pair.
    wait_for(lambda: testenv.kubectl_json("get", "pvc", name)["status"].get("phase") == "Bound",
             timeout=60, what="the gateway claim to be Bound")
    # The job's pods mount the claim, the directory as the subPath, read-only.
    spec = testenv.kubectl_json("get", "jobset", "serve-a")["spec"]["replicatedJobs"][0][
        "template"]["spec"]["template"]["spec"]
    assert spec["volumes"] == [{"name": "user-mount-0", "persistentVolumeClaim":
                                {"claimName": name}}]
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": "user-mount-0", "mountPath": "/models", "subPath": "llama", "readOnly": True}]

    # A second job of the namespace reuses the gateway.
    second = submit_with_profile(cli, "serve-b")
    assert "reusing gateway PersistentVolume " + name + "-default" in second.stderr, second.stderr
    assert "reusing gateway claim " + name in second.stderr
    assert [c["metadata"]["name"] for c in gateways(testenv, "pvc")] == [name]
    assert len(gateways(testenv, "pv")) == 1

    # Cancelling one keeps the gateway the other still mounts; cancelling the last removes it.
    assert cancel(cli, "serve-a")["gateways_removed"] == []
    assert [c["metadata"]["name"] for c in gateways(testenv, "pvc")] == [name]
    assert cancel(cli, "serve-b")["gateways_removed"] == [name]
    wait_for(lambda: not gateways(testenv, "pvc") and not gateways(testenv, "pv"), timeout=120,
             what="the gateway claim and volume to be gone")


def test_profile_mount_needs_the_storage_class(cli):
    proc = submit_with_profile(cli, "serve-nosc", check=2)
    assert "the cluster has no StorageClass gcsfusecsi-serving, which profile= needs" in \
        proc.stderr, proc.stderr


def test_missing_namespace_is_refused_as_google(cli):
    proc = cli.gcluster("job", "submit", "--name", "ns-gone", *CLUSTER, "--gke-namespace",
                        "no-such-ns", "--compute-type", "v6e-16", "--image", IMAGE,
                        "--command", "true", check=2)
    assert "target namespace no-such-ns does not exist" in proc.stderr, proc.stderr
