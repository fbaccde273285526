"""`gcluster deploy` against the local control plane.

The module starts from a cluster without any Kueue configuration (the minimal one testenv/up
applies is removed), lets deploy create it from the example blueprint, and checks that the real
Kueue accepts it and charges a Pathways job's head and workers to the right flavors. Afterwards
testenv's own configuration is put back, so the other test modules see what they expect.
"""

import json
import os
import stat

import pytest
import yaml

from conftest import REPO, wait_for
from gcluster_cli import CLUSTER, Cli, is_true, submit_pathways

BLUEPRINT = str(REPO / "examples" / "gke-tpu-v6e-pathways.yaml")
KUEUE_OBJECTS = [
    ("resourceflavors.kueue.x-k8s.io", "flavor-tpu-v6e-slice", None),
    ("resourceflavors.kueue.x-k8s.io", "pathways-flavor", None),
    ("clusterqueues.kueue.x-k8s.io", "cluster-queue", None),
    ("localqueues.kueue.x-k8s.io", "user-queue", "default"),
] + [("priorityclasses.scheduling.k8s.io", name, None)
     for name in ("very-low", "low", "medium", "high", "very-high")]


def ns_args(ns):
    return ["-n", ns] if ns else []


def remove_kueue_config(cli):
    for resource, name, ns in reversed(KUEUE_OBJECTS):
        cli.kubectl("delete", resource, name, "--ignore-not-found", "--wait=false", *ns_args(ns))
    wait_for(lambda: all(cli.kubectl("get", r, n, *ns_args(ns), check=False).returncode != 0
                         for r, n, ns in KUEUE_OBJECTS),
             timeout=60, what="the Kueue configuration to be deleted")


def resource_versions(cli):
    versions = {}
    for resource, name, ns in KUEUE_OBJECTS:
        proc = cli.kubectl("get", resource, name, *ns_args(ns), "-o", "json", check=False)
        versions[name] = json.loads(proc.stdout)["metadata"]["resourceVersion"] \
            if proc.returncode == 0 else None
    return versions


def deploy(cli, *args, check=0, env=None):
    return cli.gcluster("deploy", BLUEPRINT, *CLUSTER, *args, check=check, env=env)


@pytest.fixture(scope="module")
def cluster(testenv, tmp_path_factory):
    testenv.use_profile()
    cli = Cli(testenv.kubeconfig, tmp_path_factory.mktemp("deploy-home"))
    remove_kueue_config(cli)
    yield cli
    remove_kueue_config(cli)
    testenv.use_profile(force=True)


@pytest.fixture
def cli(cluster):
    yield cluster
    for job in cluster.submitted:
        cluster.delete_job(job)
    wait_for(lambda: all(not cluster.pods(job) for job in cluster.submitted), timeout=120,
             what="the test's pods to be gone")
    cluster.submitted.clear()


def test_plan_shows_pools_and_objects_and_changes_nothing(cli):
    proc = deploy(cli, "--plan")
    out = proc.stdout
    assert "Pathways enabled (head pool cpu-np)" in out
    # The vpc module is planned (gcloud has no account here, so nothing is checked).
    assert "1. network gke-tpu-v6e-net: not checked" in out
    assert "gcloud compute networks create gke-tpu-v6e-net --project=my-project" in out
    assert "not handled by gcluster deploy" not in out
    lines = {line.split()[0]: line for line in out.splitlines()[1:] if line.startswith("  ")}
    assert "n4-standard-64" in lines["cpu-np"] and "autoscaling 0-100" in lines["cpu-np"]
    assert "present, 3 nodes" in lines["cpu-np"]
    for pool in ("tpu-v6e-np-0", "tpu-v6e-np-1"):
        assert "ct6e-standard-4t" in lines[pool] and "tpu-v6e-slice 4x4, 4 hosts" in lines[pool]
        assert "present, 4 nodes" in lines[pool]
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue would be created" in out
    assert "priorityclass.scheduling.k8s.io/very-high would be created" in out
    assert "missing" not in out
    assert all(v is None for v in resource_versions(cli).values()), "--plan created objects"


def test_deploy_creates_an_active_queue_and_is_idempotent(cli):
    proc = deploy(cli)
    for resource, name, ns in KUEUE_OBJECTS:
        plural, group = resource.split(".", 1)
        kind = plural[:-2] if plural.endswith("sses") else plural[:-1]
        assert f"{kind}.{group}/{name} created" in proc.stdout, proc.stdout
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue is Active" in proc.stdout
    cq = cli.kubectl_json("get", "clusterqueue", "cluster-queue", "--show-managed-fields")
    assert is_true(cq, "Active")
    groups = cq["spec"]["resourceGroups"]
    assert len(groups) == 1 and groups[0]["coveredResources"] == ["google.com/tpu", "cpu", "memory"]
    assert [f["name"] for f in groups[0]["flavors"]] == ["flavor-tpu-v6e-slice", "pathways-flavor"]
    managers = {m["manager"] for m in cq["metadata"]["managedFields"] if m["operation"] == "Apply"}
    assert managers == {"gcluster"}

    before = resource_versions(cli)
    again = deploy(cli)
    assert again.stdout.count(" unchanged") == len(KUEUE_OBJECTS), again.stdout
    assert " created" not in again.stdout and " configured" not in again.stdout
    assert resource_versions(cli) == before

    plan = deploy(cli, "--plan")
    assert plan.stdout.count(" unchanged") == len(KUEUE_OBJECTS), plan.stdout


def flavors_by_pod_set(workload):
    assignments = workload["status"]["admission"]["podSetAssignments"]
    return {a["name"]: a["flavors"] for a in assignments}


def test_pathways_job_is_charged_to_the_right_flavors(cli):
    deploy(cli)
    submit_pathways(cli, "pw-deployed")
    workload = wait_for(lambda: (w := cli.workload("pw-deployed")) and is_true(w, "Admitted") and w,
                        what="Kueue admission")
    flavors = flavors_by_pod_set(workload)
    assert flavors["pathways-head"] == {"cpu": "pathways-flavor", "memory": "pathways-flavor"}
    assert flavors["worker"] == {"google.com/tpu": "flavor-tpu-v6e-slice",
                                 "cpu": "flavor-tpu-v6e-slice", "memory": "flavor-tpu-v6e-slice"}


def test_tpu_quota_below_one_slice_is_refused(cli):
    """A job Kueue could never admit, even with the queue empty, is refused before it is created
    (exit 2), naming the quota and the deploy that sets it."""
    proc = deploy(cli, "--vars", "tpu_quota=8")
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue configured" in proc.stdout
    try:
        proc = submit_pathways(cli, "pw-too-big", slices="1", check=2)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("gcluster: error:")]
        assert errors == [
            "gcluster: error: the workers need 16 google.com/tpu (4 pods x 4), and ClusterQueue "
            "cluster-queue has at most 8 in flavor-tpu-v6e-slice, so Kueue would never admit this job; "
            "submit fewer --num-slices or a smaller --compute-type, or raise that quota (gcluster "
            "deploy BLUEPRINT sets it)"], proc.stderr
        assert cli.kubectl("get", "jobset", "pw-too-big", check=False).returncode != 0
    finally:
        deploy(cli)  # the example's quota again


def fake_gcloud(tmp_path, exit_code, missing=("default-pool",)):
    """A gcloud on PATH for a project where everything but `missing` exists: describe answers
    from that (NOT_FOUND, exit 1, as gcloud does), other calls record their argv (one JSON list
    per line) and exit with `exit_code`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    record = tmp_path / "gcloud-calls"
    script = bin_dir / "gcloud"
    script.write_text("#!/usr/bin/env python3\nimport json, sys\n"
                      "args = sys.argv[1:]\n"
                      "if 'describe' in args:\n"
                      "    name = args[args.index('describe') + 1]\n"
                      f"    if name in {list(missing)!r}:\n"
                      "        sys.stderr.write(f'ERROR: NOT_FOUND: {name} was not found\\n')\n"
                      "        sys.exit(1)\n"
                      "    sys.exit(0)\n"
                      f"open({str(record)!r}, 'a').write(json.dumps(args) + '\\n')\n"
                      f"sys.exit({exit_code})\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}, record


# The Pathways head pool as Cluster Toolkit's gke-cluster module creates cpu-np, renamed.
EXPECTED_HEAD_POOL_ARGV = [
    "container", "node-pools", "create", "head-np", "--project=my-project", "--cluster=local",
    "--location=us-east5", "--machine-type=n4-standard-64", "--num-nodes=0",
    "--enable-autoscaling", "--total-min-nodes=0", "--total-max-nodes=100",
    "--enable-autorepair", "--enable-autoupgrade", "--image-type=COS_CONTAINERD",
    "--enable-gvnic", "--shielded-secure-boot", "--shielded-integrity-monitoring",
    "--workload-metadata=GKE_METADATA", "--metadata=disable-legacy-endpoints=true",
    "--scopes=https://www.googleapis.com/auth/cloud-platform",
    "--labels=ghpc_blueprint=gke-tpu-v6e-pathways,ghpc_deployment=gke-tpu-v6e,"
    "ghpc_module=gke-cluster,ghpc_role=scheduler",
]


def test_missing_head_pool_is_reported_and_created_only_when_asked(cli, tmp_path):
    env, record = fake_gcloud(tmp_path, 0, missing=("default-pool", "head-np"))
    try:
        proc = deploy(cli, "--pathways-head-np", "head-np", env=env)
        assert "node pool head-np: would be created" in proc.stdout, proc.stdout
        assert "gcloud " + " ".join(EXPECTED_HEAD_POOL_ARGV) in proc.stdout
        assert "node pool tpu-v6e-np-0: present" in proc.stdout
        assert "--auto-approve" in proc.stdout
        assert not record.exists(), "gcloud changed something without --auto-approve"
        flavor = cli.kubectl_json("get", "resourceflavor", "pathways-flavor")
        assert flavor["spec"]["nodeLabels"] == {"cloud.google.com/gke-nodepool": "head-np"}

        for flag in ("--auto-approve", "--create-node-pools"):
            record.unlink(missing_ok=True)
            deploy(cli, "--pathways-head-np", "head-np", flag, env=env)
            calls = [json.loads(line) for line in record.read_text().splitlines()]
            assert calls == [EXPECTED_HEAD_POOL_ARGV], calls

        (tmp_path / "failing").mkdir()
        failing_env, _ = fake_gcloud(tmp_path / "failing", 7, missing=("default-pool", "head-np"))
        proc = deploy(cli, "--pathways-head-np", "head-np", "--auto-approve",
                      env=failing_env, check=1)
        assert "gcloud exited with status 7 creating node pool head-np" in proc.stderr, proc.stderr
    finally:
        deploy(cli)  # the flavor back on cpu-np


def test_auto_approve_on_a_ready_project_creates_nothing_and_the_job_runs(cli, tmp_path):
    """Everything the plan names exists (the fake gcloud describes it all): --auto-approve sends
    no create, applies the Kueue configuration, and the seed's Pathways job is admitted."""
    env, record = fake_gcloud(tmp_path, 0)
    proc = deploy(cli, "--auto-approve", env=env)
    assert not record.exists(), record.read_text()
    assert "1. network gke-tpu-v6e-net: present" in proc.stdout, proc.stdout
    steps = [line for line in proc.stdout.splitlines() if line[:6].strip().endswith(".")]
    assert steps and all(line.endswith(": present") for line in steps), proc.stdout
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue is Active" in proc.stdout
    submit_pathways(cli, "pw-approved")
    wait_for(lambda: (w := cli.workload("pw-approved")) and is_true(w, "Admitted") and w,
             what="Kueue admission")


def test_plan_with_create_node_pools_is_refused(cli):
    proc = deploy(cli, "--plan", "--create-node-pools", check=2)
    assert "--plan changes nothing" in proc.stderr
    proc = deploy(cli, "--plan", "--auto-approve", check=2)
    assert "cannot be combined with --auto-approve" in proc.stderr


def test_template_without_head_flavor_warns(cli, tmp_path):
    template = tmp_path / "kueue.yaml.tftpl"
    template.write_text(yaml.safe_dump({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "tpu-flavor"},
        "spec": {"nodeLabels": {"cloud.google.com/gke-tpu-accelerator": "${accelerator_type}"}},
    }))
    blueprint = yaml.safe_load(open(BLUEPRINT))
    for group in blueprint["deployment_groups"]:
        for module in group["modules"]:
            if module["source"].endswith("kubectl-apply"):
                module["settings"]["kueue"]["config_path"] = str(template)
    path = tmp_path / "blueprint.yaml"
    path.write_text(yaml.safe_dump(blueprint))
    proc = cli.gcluster("deploy", str(path), *CLUSTER, "--plan", check=0)
    assert "no ResourceFlavor selects the Pathways head pool" in proc.stderr
    assert "resourceflavor.kueue.x-k8s.io/tpu-flavor" in proc.stdout
