"""`gcluster deploy` of Cluster Toolkit's own advanced v6e blueprint (v1.98.0,
tests/fixtures/cluster-toolkit) with its deployment file, against the local control plane, then
the seed's Pathways job on the cluster it configured.

The blueprint keeps enable_pathways_for_tpus: true but sets kueue.config_path to its own
template, whose only flavor is the TPU one and whose ClusterQueue covers google.com/tpu only:
rendered as the toolkit renders it, a Pathways head pod (cpu and memory) has no quota, and
deploy says so. With --vars kueue_configuration_path=null the module's built-in Pathways
configuration applies instead (flavor-tpu-v6e-slice, pathways-flavor on cpu-np), and the job is
admitted and runs. testenv's TPU hosts are two v6e 4x4 slices, as the blueprint asks for with
num_slices 2; the blueprint names its pools gke-tpu-v6e-pool-N, so deploy lists those as missing
and the job runs on testenv's slices, which the flavor selects by accelerator.

The blueprint also asks for cert-manager (cert_manager.install: true). This shared testenv does
not run it and its pods do not come up here, so the test deploys a copy of the blueprint folder
with that one setting false; deploy installing cert-manager (with Kueue and JobSet) is
tests/cluster/test_deploy_install.py's, on a bare cluster of its own.
"""
import shutil
import hashlib
from pathlib import Path

import pytest

from conftest import REPO, wait_for
from gcluster_cli import CLUSTER, Cli, is_true, submit_pathways

EXAMPLES = REPO / "tests" / "fixtures" / "cluster-toolkit" / "examples" / "gke-tpu-v6e"
DEPLOYMENT = str(EXAMPLES / "gke-tpu-v6e-deployment.yaml")
CERT_MANAGER_ON = "      cert_manager:\n        install: true\n"
# What the deployment file leaves empty.
VARS = "project_id=gcluster-testenv,region=us-east5,zone=us-east5-b,authorized_cidr=10.0.0.0/32," \
       "reservation=test-reservation"
# GKE's multi-networking kinds, which the blueprint's additional network (gvnic-1) needs.
NETWORK_CRDS = Path(__file__).resolve().parent / "manifests" / "gke-multi-network-stand-in.yaml"
OBJECTS = [("resourceflavor", "pathways-flavor"), ("resourceflavor", "tpu-flavor"),
           ("resourceflavor", "flavor-tpu-v6e-slice"), ("resourceflavor", "tpuv6e-flavor"),
           ("clusterqueue", "cluster-queue")]


# The blueprint's two buckets as deploy names them: name_prefix, deployment name, and the first 8
# hex digits of SHA-256("PROJECT/DEPLOYMENT/MODULE_ID") where Terraform draws random ones.
BUCKETS = [f"{prefix}-gke-tpu-v6e-" +
           hashlib.sha256(f"gcluster-testenv/gke-tpu-v6e/{module}".encode()).hexdigest()[:8]
           for prefix, module in (("training-data", "training_bucket"),
                                  ("checkpoint-data", "checkpoint_bucket"))]
VOLUMES = "ghpc_module=gke-persistent-volume"


def remove_kueue_config(cli):
    for kind, name in OBJECTS:
        cli.kubectl("delete", kind, name, "--ignore-not-found", "--wait=false")
    cli.kubectl("delete", "pvc,pv", "-A", "-l", VOLUMES, "--ignore-not-found", "--wait=false")
    wait_for(lambda: all(cli.kubectl("get", k, n, check=False).returncode != 0
                         for k, n in OBJECTS), timeout=60, what="the Kueue objects to be deleted")


@pytest.fixture(scope="module")
def cli(testenv, tmp_path_factory):
    testenv.use_profile()
    home = tmp_path_factory.mktemp("ct-advanced")
    cli = Cli(testenv.kubeconfig, home)
    folder = shutil.copytree(EXAMPLES, home / "gke-tpu-v6e")
    blueprint = folder / "gke-tpu-v6e-advanced.yaml"
    text = blueprint.read_text()
    assert text.count(CERT_MANAGER_ON) == 1, "the blueprint's cert_manager setting moved"
    blueprint.write_text(text.replace(CERT_MANAGER_ON, CERT_MANAGER_ON.replace("true", "false")))
    cli.blueprint = str(blueprint)
    remove_kueue_config(cli)
    testenv.kubectl("apply", "-f", str(NETWORK_CRDS))
    testenv.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                    "crd/networks.networking.gke.io", "crd/gkenetworkparamsets.networking.gke.io")
    yield cli
    for job in cli.submitted:
        cli.delete_job(job)
    wait_for(lambda: all(not cli.pods(job) for job in cli.submitted), timeout=120,
             what="the test's pods to be gone")
    remove_kueue_config(cli)
    testenv.kubectl("delete", "-f", str(NETWORK_CRDS), "--ignore-not-found", check=False)
    testenv.use_profile(force=True)


def deploy(cli, *args, check=0):
    return cli.gcluster("deploy", cli.blueprint, "-d", DEPLOYMENT, "--vars", VARS, *CLUSTER, *args,
                        check=check)


def test_its_own_template_leaves_the_head_without_quota(cli):
    proc = deploy(cli)
    # The cluster module's multi-networking objects for the second VPC, applied beside Kueue's.
    network = cli.kubectl_json("get", "networks.networking.gke.io", "gvnic-1")
    assert network["spec"]["parametersRef"]["kind"] == "GKENetworkParamSet", network
    params = cli.kubectl_json("get", "gkenetworkparamsets.networking.gke.io", "gvnic-1")
    assert params["spec"]["vpc"] == "gke-tpu-v6e-net-1", params
    assert "resourceflavor.kueue.x-k8s.io/tpuv6e-flavor created" in proc.stdout, proc.stdout
    # gke-persistent-volume's gcsfuse volume and claim over each bucket, applied as well.
    pvs = cli.kubectl_json("get", "pv", "-l", VOLUMES)["items"]
    assert sorted(p["spec"]["csi"]["volumeHandle"] for p in pvs) == sorted(BUCKETS), pvs
    claims = cli.kubectl_json("get", "pvc", "-n", "default", "-l", VOLUMES)["items"]
    assert sorted(c["spec"]["volumeName"] for c in claims) == sorted(f"{b}-pv" for b in BUCKETS)
    assert "no ResourceFlavor selects the Pathways head pool" in proc.stderr, proc.stderr
    assert "pass --vars kueue_configuration_path=null to use the module's built-in Pathways " \
        "configuration" in proc.stderr, proc.stderr
    refused = submit_pathways(cli, "pw-ct-own", check=2)
    assert "the head requests cpu, which ClusterQueue cluster-queue has no quota for" in \
        refused.stderr, refused.stderr
    cli.submitted.remove("pw-ct-own")
    remove_kueue_config(cli)


def test_builtin_pathways_configuration_runs_the_seed_job(cli):
    proc = deploy(cli, "--vars", "kueue_configuration_path=null")
    out = proc.stdout
    assert "gke-tpu-v6e-pool-0" in out and "gke-tpu-v6e-pool-1" in out
    assert "resourceflavor.kueue.x-k8s.io/flavor-tpu-v6e-slice created" in out, out
    assert "resourceflavor.kueue.x-k8s.io/pathways-flavor created" in out, out
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue is Active" in out, out
    cq = cli.kubectl_json("get", "clusterqueue", "cluster-queue")
    flavors = cq["spec"]["resourceGroups"][0]["flavors"]
    assert [f["name"] for f in flavors] == ["flavor-tpu-v6e-slice", "pathways-flavor"]
    tpu = {r["name"]: r["nominalQuota"] for r in flavors[0]["resources"]}
    assert tpu["google.com/tpu"] == "32"  # num_slices 2 x 4 hosts x 4 chips, from the outputs

    submit_pathways(cli, "pw-ct-advanced")
    workload = wait_for(
        lambda: (w := cli.workload("pw-ct-advanced")) and is_true(w, "Admitted") and w,
        what="Kueue admission")
    assignments = {a["name"]: a["flavors"] for a in workload["status"]["admission"][
        "podSetAssignments"]}
    assert assignments["pathways-head"] == {"cpu": "pathways-flavor", "memory": "pathways-flavor"}
    assert set(assignments["worker"].values()) == {"flavor-tpu-v6e-slice"}
    wait_for(lambda: (pods := cli.pods("pw-ct-advanced")) and len(pods) == 9 and all(
        p["status"].get("phase") == "Running" for p in pods),
        timeout=120, what="the head and 8 worker pods to run")
