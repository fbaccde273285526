"""`gcluster job submit` on a cluster without JobSet and Kueue, as Google's gcluster handles it
before a submit: --skip-prereqs checks and installs nothing; a server dry run says what a submit
would install and installs nothing; a submit installs JobSet v0.10.1 and Kueue v0.17.1 (and
deploy's five PriorityClasses) through deploy's installer, then stops, saying that Kueue has no
queue yet and how to make one; once a queue exists, the next submit installs nothing and the job
is admitted.

The cluster is a testenv of its own started with GCLUSTER_TESTENV_PREREQS=none, as in
test_deploy_install.py (its docstring and testenv/README.md, "Installed by deploy", say how the
installed controllers' pods run and who serves the installed webhooks); the release files are
served by the same loopback HTTPS mirror, named by --manifests-mirror.
"""
import json
from pathlib import Path

import pytest

from conftest import another_testenv, wait_for
from gcluster_cli import CLUSTER, GCS, IMAGE, Cli, is_true
from test_deploy_install import Mirror

JOBSET = "/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml"
KUEUE = "/kubernetes-sigs/kueue/releases/download/v0.17.1/manifests.yaml"
CLASSES = ["very-low", "low", "medium", "high", "very-high"]


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    with another_testenv("bare-submit", GCLUSTER_TESTENV_PREREQS="none") as env:
        certs = Path(env.kubeconfig).parent / "certs"
        mirror = Mirror(certs)
        cli = Cli(env.kubeconfig, tmp_path_factory.mktemp("submit-install"))
        try:
            yield env, cli, mirror, {"SSL_CERT_FILE": str(certs / "ca.crt")}
        finally:
            mirror.close()


def submit(bare, name, *args, check=None, mirror=True):
    _, cli, server, extra = bare
    cli.submitted.append(name)
    flags = ["--manifests-mirror", server.url] if mirror else []
    return cli.gcluster("job", "submit", "--name", name, *CLUSTER, "--compute-type", "v6e-16",
                        "--num-slices", "2", "--pathways", "--pathways-gcs-location", GCS,
                        "--command", "python3 train.py", "--image", IMAGE, *flags, *args,
                        env=extra, check=check, timeout=400)


def served_apis(cli):
    groups = json.loads(cli.kubectl("get", "--raw", "/apis").stdout)["groups"]
    return {g["name"] for g in groups}


def priority_classes(cli):
    names = cli.kubectl("get", "priorityclasses", "-o", "name").stdout.split()
    return sorted(n.split("/", 1)[1] for n in names if not n.split("/", 1)[1].startswith("system-"))


def test_skip_prereqs_installs_nothing(bare):
    _, cli, mirror, _ = bare
    proc = submit(bare, "skip-1", "--skip-prereqs", mirror=False)
    assert proc.returncode != 0
    assert "Installed" not in proc.stderr, proc.stderr
    assert "the cluster does not serve JobSets" in proc.stderr, proc.stderr
    assert mirror.requests == []
    assert {"jobset.x-k8s.io", "kueue.x-k8s.io"}.isdisjoint(served_apis(cli))
    # --skip-prereqs with a mirror is a contradiction, refused before anything is sent.
    proc = submit(bare, "skip-2", "--skip-prereqs", check=2)
    assert "--skip-prereqs installs nothing" in proc.stderr, proc.stderr


def test_a_server_dry_run_says_what_a_submit_would_install(bare):
    _, cli, mirror, _ = bare
    proc = submit(bare, "dry-1", "--dry-run", "server")
    assert f"JobSet is not installed: a submit without --dry-run installs JobSet v0.10.1 from " \
        f"{mirror.url}{JOBSET}." in proc.stderr, proc.stderr
    assert f"Kueue is not installed: a submit without --dry-run installs Kueue v0.17.1 from " \
        f"{mirror.url}{KUEUE}." in proc.stderr, proc.stderr
    assert "A submit without --dry-run applies the PriorityClasses very-low, low, medium, high, " \
        "very-high (the cluster had none of its own)." in proc.stderr, proc.stderr
    assert "Kueue would have no ClusterQueue or LocalQueue yet" in proc.stderr, proc.stderr
    assert mirror.requests == []
    assert {"jobset.x-k8s.io", "kueue.x-k8s.io"}.isdisjoint(served_apis(cli))
    assert priority_classes(cli) == []


def test_a_submit_installs_jobset_and_kueue_and_says_what_is_missing(bare):
    _, cli, mirror, _ = bare
    proc = submit(bare, "inst-1", check=2)
    err = proc.stderr
    assert f"Installed JobSet v0.10.1 (18 objects, from {mirror.url}{JOBSET}): the cluster did " \
        "not have it." in err, err
    assert f"Installed Kueue v0.17.1 (79 objects, from {mirror.url}{KUEUE}): the cluster did " \
        "not have it." in err, err
    assert "Applied the PriorityClasses very-low, low, medium, high, very-high (the cluster had " \
        "none of its own)." in err, err
    assert "Kueue has no ClusterQueue or LocalQueue yet, so no job is admitted: apply your " \
        "blueprint's queues with gcluster deploy BLUEPRINT, or create a LocalQueue and pass " \
        "--queue" in err, err
    # Then the submit's own check stops it, with exit 2: no job waits for a queue that is not.
    assert "namespace default has no Kueue LocalQueue to submit to" in err, err
    assert cli.kubectl("get", "jobset", "inst-1", check=False).returncode != 0
    assert sorted(mirror.requests) == sorted([JOBSET, KUEUE])
    # Installed as deploy installs them: its field manager, the module's Helm values, and the
    # controllers Available with ready webhook endpoints (what the submit waited for).
    for ns, name in (("jobset-system", "jobset-controller-manager"),
                     ("kueue-system", "kueue-controller-manager")):
        deployment = cli.kubectl_json("get", "deployment", name, "-n", ns,
                                      "--show-managed-fields")
        assert is_true(deployment, "Available"), deployment["status"]
        assert "gcluster" in {m["manager"] for m in deployment["metadata"]["managedFields"]}
    manager = cli.kubectl_json("get", "deployment", "kueue-controller-manager", "-n",
                               "kueue-system")["spec"]["template"]["spec"]["containers"][0]
    assert manager["image"] == "registry.k8s.io/kueue/kueue:v0.17.1"
    assert "--feature-gates=TopologyAwareScheduling=true" in manager["args"], manager["args"]
    assert priority_classes(cli) == sorted(CLASSES)
    medium = cli.kubectl_json("get", "priorityclass", "medium")
    assert (medium["value"], medium.get("globalDefault", False)) == (500, False)


def test_once_a_queue_exists_the_job_is_admitted_and_nothing_is_installed(bare):
    env, cli, mirror, _ = bare
    before = len(mirror.requests)
    # The queues deploy applies for a Pathways v6e cluster (testenv's default profile).
    env.use_profile(force=True)
    proc = submit(bare, "inst-2", check=0)
    assert "Installed" not in proc.stderr and "PriorityClasses" not in proc.stderr, proc.stderr
    assert len(mirror.requests) == before
    try:
        workload = wait_for(
            lambda: (w := cli.workload("inst-2")) and is_true(w, "Admitted") and w,
            timeout=120, what="Kueue admission")
        assert workload["spec"]["queueName"] == "user-queue"
    finally:
        for job in cli.submitted:
            cli.delete_job(job)
