"""`gcluster deploy --auto-approve` of Cluster Toolkit's advanced v6e blueprint on a cluster
without Kueue, JobSet and cert-manager: deploy installs the three from their release manifests
(the blueprint sets cert_manager.install, jobset.install and kueue.install), waits for them,
applies the Kueue configuration, changes nothing when run again, and the seed's Pathways job runs.

The cluster is a testenv of its own started with GCLUSTER_TESTENV_PREREQS=none (testenv/README.md,
"Installed by deploy"): no JobSet or Kueue CRDs, webhook configurations or namespaces. The
release files (tests/fixtures/releases, and its README for what they are and how they were made)
are served by a loopback HTTPS server under GitHub's release paths, and deploy is pointed at it
with --manifests-mirror (its certificate is signed by testenv's CA, named by SSL_CERT_FILE).

What runs the installed objects: kwok makes the installed controller Deployments' pods Running and
Ready, so the Deployments become Available and the webhook Services get ready endpoints, as
deploy waits for. Behind those Services, testenv's `installed-webhooks` serves the installed
webhooks with the locally built JobSet (v0.11.1) and Kueue (v0.17.0) controllers: it starts them
once the installed CRDs are Established, is the API server's egress proxy that sends the two
webhook Services' ClusterIPs to their loopback ports, and writes testenv's CA into the installed
configurations' caBundle as the projects' certificate rotators do. So every object deploy and the
job create afterwards passes the admission chain deploy installed. cert-manager's Deployments
become Available and its webhook Service gets ready endpoints the same way, through kwok; nothing
serves its webhook behind them, and nothing here needs it: its webhook configurations select only
cert-manager's own API groups (cert-manager.io, acme.cert-manager.io), which no object of the
test uses.

gcloud is a stand-in on PATH (tests/cluster/test_deploy.py's fake_gcloud) for a project where
every Google Cloud step exists: the Google Cloud half of --auto-approve only describes.
"""
import hashlib
import http.server
import json
import ssl
import threading
from pathlib import Path

import pytest

from conftest import REPO, another_testenv, wait_for
from gcluster_cli import CLUSTER, Cli, is_true, submit_pathways
from test_deploy import fake_gcloud

RELEASES = REPO / "tests" / "fixtures" / "releases"
EXAMPLES = REPO / "tests" / "fixtures" / "cluster-toolkit" / "examples" / "gke-tpu-v6e"
BLUEPRINT = str(EXAMPLES / "gke-tpu-v6e-advanced.yaml")
DEPLOYMENT = str(EXAMPLES / "gke-tpu-v6e-deployment.yaml")
VARS = "project_id=gcluster-testenv,region=us-east5,zone=us-east5-b,authorized_cidr=10.0.0.0/32," \
       "reservation=test-reservation"
NETWORK_CRDS = Path(__file__).resolve().parent / "manifests" / "gke-multi-network-stand-in.yaml"
# GitHub's release download paths, and the files that stand for them.
SERVED = {
    "/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml": "jobset-v0.10.1.yaml",
    "/kubernetes-sigs/kueue/releases/download/v0.17.1/manifests.yaml": "kueue-v0.17.1.yaml",
    "/cert-manager/cert-manager/releases/download/v1.17.2/cert-manager.yaml":
        "cert-manager-v1.17.2.yaml",
}
TOLERATION = {"key": "components.gke.io/gke-managed-components", "operator": "Exists",
              "effect": "NoSchedule"}


class Mirror:
    """A loopback HTTPS server for the release files (or `override`: path -> bytes)."""

    def __init__(self, certs):
        self.override, self.requests = {}, []
        mirror = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                mirror.requests.append(self.path)
                name = SERVED.get(self.path)
                data = mirror.override.get(self.path) or (
                    (RELEASES / name).read_bytes() if name else None)
                if data is None:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certs / "apiserver.crt", certs / "apiserver.key")
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def bare(tmp_path_factory):
    with another_testenv("bare", GCLUSTER_TESTENV_PREREQS="none") as env:
        certs = Path(env.kubeconfig).parent / "certs"
        mirror = Mirror(certs)
        home = tmp_path_factory.mktemp("install")
        cli = Cli(env.kubeconfig, home)
        cli.kubectl("apply", "-f", str(NETWORK_CRDS))
        gcloud_env, _ = fake_gcloud(home, 0, missing=())
        extra = {**gcloud_env, "SSL_CERT_FILE": str(certs / "ca.crt")}
        try:
            yield cli, mirror, extra
        finally:
            mirror.close()


def deploy(bare, *args, check=0):
    cli, mirror, extra = bare
    return cli.gcluster("deploy", BLUEPRINT, "-d", DEPLOYMENT, "--vars", VARS, "--vars",
                        "kueue_configuration_path=null", *CLUSTER, "--auto-approve",
                        "--manifests-mirror", mirror.url, *args, env=extra, check=check,
                        timeout=400)


def served_apis(cli):
    groups = json.loads(cli.kubectl("get", "--raw", "/apis").stdout)["groups"]
    return {g["name"] for g in groups}


def test_a_digest_mismatch_is_refused_before_anything_is_applied(bare):
    cli, mirror, _ = bare
    kueue = "/kubernetes-sigs/kueue/releases/download/v0.17.1/manifests.yaml"
    changed = (RELEASES / "kueue-v0.17.1.yaml").read_bytes().replace(b"--zap-log-level=2",
                                                                    b"--zap-log-level=9")
    mirror.override[kueue] = changed
    try:
        proc = deploy(bare, check=1)
    finally:
        mirror.override.clear()
    assert f"{mirror.url}{kueue}: SHA-256 {hashlib.sha256(changed).hexdigest()}, but Kueue " \
        f"v0.17.1 is {hashlib.sha256((RELEASES / 'kueue-v0.17.1.yaml').read_bytes()).hexdigest()}"\
        "; nothing was applied" in proc.stderr, proc.stderr
    # cert-manager's and JobSet's files were fetched and good, but nothing of any was applied.
    assert {"cert-manager.io", "jobset.x-k8s.io", "kueue.x-k8s.io"}.isdisjoint(served_apis(cli))
    for ns in ("cert-manager", "jobset-system"):
        assert cli.kubectl("get", "namespace", ns, check=False).returncode != 0


def test_deploy_installs_kueue_and_jobset_then_the_configuration(bare):
    cli, mirror, _ = bare
    proc = deploy(bare)
    out = proc.stdout
    assert "  JobSet v0.10.1: installed, 18 objects applied\n" \
        f"      from {mirror.url}/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml" \
        in out, out
    assert "  Kueue v0.17.1: installed, 79 objects applied\n" in out, out
    assert "  cert-manager v1.17.2: installed, 49 objects applied\n      from " \
        f"{mirror.url}/cert-manager/cert-manager/releases/download/v1.17.2/cert-manager.yaml" \
        in out, out
    assert "cert-manager" not in proc.stderr, proc.stderr
    assert "Installed: Kueue v0.17.1, JobSet v0.10.1" in out
    assert "clusterqueue.kueue.x-k8s.io/cluster-queue is Active" in out, out
    assert "resourceflavor.kueue.x-k8s.io/pathways-flavor created" in out
    assert "was not applied" not in proc.stderr and "ERROR" not in out

    # What deploy waited for holds, with deploy's field manager on every installed object.
    for ns, name, service in (("jobset-system", "jobset-controller-manager",
                               "jobset-webhook-service"),
                              ("kueue-system", "kueue-controller-manager",
                               "kueue-webhook-service"),
                              ("cert-manager", "cert-manager-webhook", "cert-manager-webhook")):
        deployment = cli.kubectl_json("get", "deployment", name, "-n", ns,
                                      "--show-managed-fields")
        assert is_true(deployment, "Available"), deployment["status"]
        managers = {m["manager"] for m in deployment["metadata"]["managedFields"]}
        assert "gcluster" in managers, managers
        pod_spec = deployment["spec"]["template"]["spec"]
        # The module's Helm values tolerate GKE's system-pool taint for JobSet and Kueue; its
        # cert-manager chart is installed with the chart's defaults.
        if ns == "cert-manager":
            assert TOLERATION not in (pod_spec.get("tolerations") or []), pod_spec
        else:
            assert TOLERATION in pod_spec["tolerations"], pod_spec.get("tolerations")
        slices = cli.kubectl_json("get", "endpointslices", "-n", ns, "-l",
                                  f"kubernetes.io/service-name={service}")["items"]
        assert any(ep["conditions"].get("ready", True) for s in slices
                   for ep in s.get("endpoints") or []), slices
    manager = cli.kubectl_json("get", "deployment", "kueue-controller-manager", "-n",
                               "kueue-system")["spec"]["template"]["spec"]["containers"][0]
    assert manager["image"] == "registry.k8s.io/kueue/kueue:v0.17.1"
    assert "--feature-gates=TopologyAwareScheduling=true" in manager["args"], manager["args"]
    # The installed webhook configurations are what admitted the configuration.
    hooks = cli.kubectl_json("get", "validatingwebhookconfiguration",
                             "kueue-validating-webhook-configuration")
    assert hooks["webhooks"][0]["clientConfig"]["service"]["name"] == "kueue-webhook-service"


def test_a_second_run_changes_nothing(bare):
    cli, mirror, _ = bare
    before = len(mirror.requests)
    proc = deploy(bare)
    out = proc.stdout
    assert "  JobSet v0.10.1: present (running v0.10.1)\n" in out, out
    assert "  Kueue v0.17.1: present (running v0.17.1)\n" in out, out
    assert "  cert-manager v1.17.2: present (running v1.17.2)\n" in out, out
    assert len(mirror.requests) == before, "a second run downloaded a release again"
    # The configuration's lines, up to the blank line before the missing pools' commands.
    kueue_lines = out.split("Kueue configuration (kueue.x-k8s.io/v1beta2):\n", 1)[1]
    kueue_lines = kueue_lines.split("\n\n", 1)[0]
    applied = [line for line in kueue_lines.splitlines()
               if line.startswith("  ") and not line.endswith(" is Active")]
    assert applied and all(line.endswith(" unchanged") for line in applied), applied
    # Its JSON report says the same.
    doc = json.loads(deploy(bare, "-o", "json").stdout)
    assert [(i["name"], i["state"]) for i in doc["installs"]] == [
        ("cert-manager", "present"), ("JobSet", "present"), ("Kueue", "present")]


def test_the_seed_pathways_job_runs_there(bare):
    cli, _, _ = bare
    try:
        submit_pathways(cli, "pw-installed")
        workload = wait_for(
            lambda: (w := cli.workload("pw-installed")) and is_true(w, "Admitted") and w,
            what="Kueue admission")
        assignments = {a["name"]: a["flavors"] for a in workload["status"]["admission"][
            "podSetAssignments"]}
        assert assignments["pathways-head"] == {"cpu": "pathways-flavor",
                                                "memory": "pathways-flavor"}
        wait_for(lambda: (pods := cli.pods("pw-installed")) and len(pods) == 9 and all(
            p["status"].get("phase") == "Running" for p in pods),
            timeout=120, what="the head and 8 worker pods to run")
    finally:
        for job in cli.submitted:
            cli.delete_job(job)
