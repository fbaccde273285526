"""`gcluster cluster describe | info | list` and `job inspect` without a job name on the local
control plane: describe shows testenv's node pools (testenv/nodepools.yaml) and the default
profile's Kueue queues (testenv/profiles/kueue-unified.yaml) with their usage once a job is
admitted; list asks a fake gcloud (first on $PATH) for gcloud's configured project's clusters.
Also Google's drop-in flags against a real API server: --skip-prereqs really skips submit's
checks, --gke-namespace selects the namespace, and logs -c is the cluster.
"""

import json
import os
import stat
import textwrap

from gcluster_cli import CLUSTER, submit_pathways, is_true
from conftest import wait_for

POOLS = {  # testenv/nodepools.yaml: name -> (machine type, accelerator, topology, nodes, chips)
    "cpu-np": ("n4-standard-64", None, None, 3, 0),
    "tpu-v6e-np-0": ("ct6e-standard-4t", "tpu-v6e-slice", "4x4", 4, 16),
    "tpu-v6e-np-1": ("ct6e-standard-4t", "tpu-v6e-slice", "4x4", 4, 16),
    "tpu7x-np-0": ("tpu7x-standard-4t", "tpu7x", "2x2x2", 2, 8),
}


def describe(cli, *args):
    return json.loads(cli.gcluster("cluster", "describe", *CLUSTER, "-o", "json", *args,
                                   check=0).stdout)


def test_describe_shows_testenv_pools_and_queues(testenv, cli):
    testenv.use_profile()
    doc = describe(cli)
    pools = {p["name"]: p for p in doc["nodePools"]}
    assert set(POOLS) <= set(pools), pools
    for name, (machine, accel, topo, nodes, chips) in POOLS.items():
        p = pools[name]
        assert (p["machineType"], p["accelerator"], p["topology"], p["nodes"], p["chips"]) == \
            (machine, accel, topo, nodes, chips), p
        assert p["ready"] == nodes
    assert doc["kueue"]["api"] == "v1beta2"
    assert doc["jobset"]["api"] == "v1alpha2"
    # testenv runs the controllers as processes, not Deployments: no release to read.
    assert doc["kueue"]["version"] is None and doc["jobset"]["version"] is None
    queues = {q["name"]: q for q in doc["clusterQueues"]}
    assert "cluster-queue" in queues
    quotas = {(q["flavor"], q["resource"]): q for q in queues["cluster-queue"]["quotas"]}
    assert quotas[("tpu-flavor", "google.com/tpu")]["nominal"] == "32"  # two 4x4 v6e pools
    assert quotas[("pathways-flavor", "google.com/tpu")]["nominal"] == "0"
    local = {(q["namespace"], q["name"]): q for q in doc["localQueues"]}
    assert local[("default", "user-queue")]["clusterQueue"] == "cluster-queue"
    text = cli.gcluster("cluster", "describe", *CLUSTER, check=0).stdout
    assert "tpu-v6e-np-0" in text and "tpu-flavor:google.com/tpu" in text


def test_usage_follows_an_admitted_job(testenv, cli):
    testenv.use_profile()
    submit_pathways(cli, "usage-1", compute="v6e-16", slices="1")
    wait_for(lambda: (w := cli.workload("usage-1")) and is_true(w, "Admitted"), timeout=120,
             what="usage-1 admitted")

    def reserved():
        info = json.loads(cli.gcluster("cluster", "info", *CLUSTER, "-o", "json",
                                       check=0).stdout)
        cq = {q["name"]: q for q in info["clusterQueues"]}["cluster-queue"]
        quota = {(q["flavor"], q["resource"]): q for q in cq["quotas"]}
        return cq["admitted"] >= 1 and quota[("tpu-flavor", "google.com/tpu")]["reserved"] == "16"

    wait_for(reserved, timeout=60, what="cluster-queue to report 16 TPU chips reserved")
    assert "nodePools" not in json.loads(
        cli.gcluster("cluster", "info", *CLUSTER, "-o", "json", check=0).stdout)
    # job inspect without a name: the cluster, with the workload.
    doc = json.loads(cli.gcluster("job", "inspect", *CLUSTER, "--format", "json",
                                  check=0).stdout)
    mine = [w for w in doc["workloads"] if w["job"] == "usage-1"]
    assert mine and mine[0]["state"] == "admitted" and mine[0]["clusterQueue"] == "cluster-queue"
    text = cli.gcluster("cluster", "info", *CLUSTER, check=0).stdout
    assert "tpu-flavor:google.com/tpu 16/32" in text


def test_inspect_writes_googles_file(testenv, cli, tmp_path):
    testenv.use_profile()
    report = tmp_path / "inspect.log"
    proc = cli.gcluster("job", "inspect", *CLUSTER, "-o", str(report), check=0)
    assert proc.stdout == ""
    assert "Node pools:" in report.read_text() and "cluster-queue" in report.read_text()
    shown = cli.gcluster("job", "inspect", *CLUSTER, "-o", str(report), "-s", check=0)
    assert shown.stdout == report.read_text()
    refused = cli.gcluster("job", "inspect", *CLUSTER, "-o", "json", check=2)
    assert "--format json" in refused.stderr


def test_cluster_list_asks_gcloud(cli, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gcloud = bin_dir / "gcloud"
    gcloud.write_text(textwrap.dedent("""\
        #!/bin/sh
        if [ "$1 $2 $3" = "config get-value project" ]; then echo my-project; exit 0; fi
        if [ "$*" = "container clusters list --project my-project --format=json" ]; then
          echo '[{"name": "local", "location": "us-east5", "status": "RUNNING",
                  "currentMasterVersion": "1.35.4-gke.1", "currentNodeCount": 13}]'
          exit 0
        fi
        echo "ERROR: (gcloud) unexpected: $*" >&2; exit 1
        """))
    gcloud.chmod(gcloud.stat().st_mode | stat.S_IXUSR)
    path = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    doc = json.loads(cli.gcluster("cluster", "list", "-o", "json", env=path, check=0).stdout)
    assert doc == {"project": "my-project", "clusters": [
        {"name": "local", "location": "us-east5", "status": "RUNNING",
         "version": "1.35.4-gke.1", "nodes": 13}]}
    failed = cli.gcluster("cluster", "list", "--project", "other", env=path, check=1)
    assert "unexpected" in failed.stderr


def test_skip_prereqs_skips_submits_checks(testenv, cli):
    testenv.use_profile()
    # No such PriorityClass: submit refuses it before creating anything...
    refused = submit_pathways(cli, "prereq-1", "--priority", "no-such-class", check=2)
    assert "no such PriorityClass" in refused.stderr
    assert cli.kubectl("get", "jobset", "prereq-1", check=False).returncode != 0
    # ...and with --skip-prereqs the check is skipped: the JobSet is created (Kueue then holds
    # it, which is the cluster's answer rather than ours).
    submit_pathways(cli, "prereq-1", "--priority", "no-such-class", "--skip-prereqs", check=0)
    assert cli.kubectl_json("get", "jobset", "prereq-1")["metadata"]["name"] == "prereq-1"


def test_gke_namespace_and_logs_c(testenv, cli):
    testenv.use_profile()
    cli.kubectl("create", "namespace", "team-b", check=False)
    # --gke-namespace is --namespace: the list of an empty namespace says so.
    proc = cli.gcluster("job", "list", *CLUSTER, "--gke-namespace", "team-b", check=0)
    assert "No jobs found in team-b." in proc.stderr
    # logs -c CLUSTER -l LOCATION (Google's spelling): -c is the cluster, not a container.
    proc = cli.gcluster("job", "logs", "no-such-job", "-c", "local", "-l", "us-east5", check=1)
    assert "no-such-job" in proc.stderr and "container" not in proc.stderr
