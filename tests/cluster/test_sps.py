"""Shared Pathways Service on the local cluster: `job submit --pathways-deploy-sps` puts a
service on both v6e-16 slices of testenv; `job submit --pathways-run-sps-workload` clients each
get a proxy Job of their own, reached through job connect's tunnel by the real JAX client (the
venv of tests/jax) against the IFRT proxy stand-in (ifrt_proxy_server.py, routed to by a kwok
PortForward as in test_jax_client.py); a client that asks for more slices than are free waits and
`job why` names the holders; a client killed with SIGKILL leaves no proxy Job after
GC_SPS_LEASE_SECONDS (60) and the time Kubernetes takes to act; a proxy image of another release
than the service's server is refused with exit 2 before anything is created; and the service
cannot be cancelled under its clients without --force.
"""

import json
import os
import signal
import subprocess
import time

import grpc
import pytest

from conftest import wait_for
from gcluster_cli import CLUSTER, GCLUSTER, GCS, Cli
from ifrt_proxy_server import SERVICE as IFRT_SERVICE, IfrtProxyServer
from test_jax_client import DEVICES, readme_program, venv_python  # noqa: F401 (a fixture)
from test_job_connect import route, unroute

NAME = "sps-test"
SERVER = "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:jax-0.9.0"
PROXY = "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:jax-0.9.0"
INSECURE = "IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS"
LEASE = 60  # GC_SPS_LEASE_SECONDS
KILL_BOUND = LEASE + 45  # the lease, then the Job controller's deadline check and the TTL
CLIENT_TIMEOUT = 240  # jax's import and the program, two at once on 2 busy cores
USER_LABEL = "gcluster.google.com/sps-user"
SERVICE_LABEL = "gcluster.google.com/sps-service"


def deploy_args(*extra, name=NAME):
    return ["job", "submit", "--pathways-deploy-sps", "--name", name, "--compute-type",
            "v6e-16", "--num-slices", "2", "--pathways-gcs-location", GCS,
            "--pathways-server-image", SERVER, "--pathways-worker-image", SERVER, *CLUSTER,
            *extra]


@pytest.fixture(scope="module")
def sps(testenv, tmp_path_factory):
    """The service, deployed once for the module; cancelled (with its clients) at the end."""
    cli = Cli(testenv.kubeconfig, tmp_path_factory.mktemp("sps-home"))
    cli.gcluster(*deploy_args(), check=0)

    def head_running():
        return any(p["status"].get("phase") == "Running" for p in cli.pods(NAME)
                   if "pathways-head" in p["metadata"]["name"])
    wait_for(head_running, timeout=120, what="the service's head pod")
    yield cli
    cli.gcluster("job", "cancel", NAME, "--force", *CLUSTER, check=None)
    cli.kubectl("delete", "jobs", "-l", SERVICE_LABEL, "--ignore-not-found", check=False)
    wait_for(lambda: not cli.pods(NAME), timeout=120, what="the service's pods to be gone")


def proxy_jobs(cli, user=None):
    selector = f"{USER_LABEL}={user}" if user else SERVICE_LABEL
    return cli.kubectl_json("get", "jobs", "-l", selector)["items"]


def proxy_pod(cli, job):
    items = cli.kubectl_json("get", "pods", "-l", f"batch.kubernetes.io/job-name={job}")["items"]
    return items[0]["metadata"]["name"] if items else None


class Client:
    """`job submit --pathways-run-sps-workload` in the background as USER=user."""

    def __init__(self, cli, user, tmp, *args):
        self.cli, self.user = cli, user
        self.out, self.err = tmp / f"{user}.out", tmp / f"{user}.err"
        env = cli.env({"USER": user})
        env.pop(INSECURE, None)
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = subprocess.Popen(
                [str(GCLUSTER), "job", "submit", "--pathways-run-sps-workload",
                 "--pathways-service", NAME, "--local-port", "0", *CLUSTER, *args],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)

    def job(self):
        items = proxy_jobs(self.cli, self.user)
        return items[0]["metadata"]["name"] if items else None

    def state(self):
        items = proxy_jobs(self.cli, self.user)
        return items[0]["metadata"]["annotations"].get("gcluster.google.com/sps-state") \
            if items else None

    def wait(self, timeout=CLIENT_TIMEOUT):
        return self.proc.wait(timeout=timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def jax_client(cli, user, tmp, venv):
    """A client whose command writes its JAX_BACKEND_TARGET to a file, waits (bounded) for the
    test to route its proxy pod to the stand-in, then runs README's JAX program."""
    prog = tmp / f"{user}_program.py"
    prog.write_text(readme_program())
    target, go = tmp / f"{user}.target", tmp / f"{user}.go"
    script = (f'echo "$JAX_BACKEND_TARGET" > {target}; i=0; '
              f'while [ ! -f {go} ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done; '
              f'exec {venv} {prog}')
    c = Client(cli, user, tmp, "--pathways-proxy-env", f"{INSECURE}=true", "--", "/bin/sh",
               "-c", script)
    c.target, c.go = target, go
    return c


def route_client(cli, client, server):
    """Routes the client's proxy pod to `server` and waits until a GetVersion through the
    client's own tunnel reaches it; then lets the client's program go."""
    wait_for(lambda: client.target.exists() and client.target.read_text().strip(),
             timeout=120, what=f"{client.user}'s tunnel")
    target = client.target.read_text().strip().split("grpc://", 1)[1]
    pod = proxy_pod(cli, client.job())
    route(cli, pod, server.port)

    def get_version():
        with grpc.insecure_channel(target) as channel:
            return channel.unary_unary(f"/{IFRT_SERVICE}/GetVersion")(b"", timeout=5) is not None
    wait_for(get_version, timeout=60, what=f"the route to {client.user}'s stand-in")
    server.calls.clear()
    client.go.write_text("")
    return pod


def devices_line():
    return "[" + ", ".join(
        f"TpuDevice(id={d}, process_index=0, coords=({d % 4},{d // 4},0), core_on_chip=0)"
        for d in range(DEVICES)) + "]"


def test_service_passes_the_webhooks_and_is_the_pathways_utils_shape(sps):
    proc = sps.gcluster(*deploy_args("--dry-run=server", name="sps-dry"), check=0)
    assert proc.stdout.startswith("The cluster accepted Shared Pathways Service sps-dry "
                                  "(server dry run: nothing was created)."), proc.stdout
    js = sps.kubectl_json("get", "jobset", NAME)
    assert js["metadata"]["annotations"]["gcluster.google.com/pathways"] == "sps"
    assert js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]  # queued through Kueue
    head = js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert [c["name"] for c in head["containers"]] == ["pathways-rm"]
    assert "initContainers" not in head
    assert js["spec"]["replicatedJobs"][1]["replicas"] == 2
    assert sps.workload(NAME)["status"].get("admission"), "Kueue admitted the service"


def test_two_clients_reach_their_own_proxy_and_a_third_waits(sps, venv_python, tmp_path):
    servers = {u: IfrtProxyServer(devices=DEVICES, kind="TPU v6 lite") for u in ("ada", "bob")}
    clients = {}
    # ada_lovelace's $USER has an underscore: the proxy Job's name (and its user label) take it
    # DNS-safe, as ada-lovelace.
    clients["ada"] = jax_client(sps, "ada_lovelace", tmp_path, venv_python)
    clients["ada"].user = "ada-lovelace"
    clients["bob"] = jax_client(sps, "bob", tmp_path, venv_python)
    waiting = None
    pods = []
    try:
        for u in ("ada", "bob"):
            wait_for(lambda: clients[u].state() == "holding", timeout=120,
                     what=f"{u}'s proxy to hold its slice")
        jobs = {u: clients[u].job() for u in clients}
        assert jobs["ada"].startswith("isc-proxy-ada-lovelace-"), jobs
        assert jobs["bob"].startswith("isc-proxy-bob-") and jobs["ada"] != jobs["bob"], jobs

        # Both slices are held: a third client waits, and why names who holds them.
        waiting = Client(sps, "cy", tmp_path)
        wait_for(lambda: waiting.state() == "waiting", timeout=60, what="cy's proxy job")
        why = sps.gcluster("job", "why", waiting.job(), *CLUSTER, check=0).stdout
        assert (f"Cause: waiting for 1 tpuv6e:4x4 slice of service {NAME}: 0 of its 2 free; "
                f"held by ") in why, why
        for u in ("ada", "bob"):
            assert f"{jobs[u]} ({clients[u].user}, 1 slice)" in why, why
        assert "first in line" in why, why
        # list counts its clients, inspect shows its resource manager and who is attached.
        row = sps.list_json()[NAME]
        assert row["pathways"] == "sps"
        assert row["sps"] == {"resource_manager": f"{NAME}-pathways-head-0-0.{NAME}:29001",
                              "clients": 3, "held": 2}, row
        text = sps.gcluster("job", "inspect", NAME, *CLUSTER, check=0).stdout
        assert (f"Service:    resource manager {NAME}-pathways-head-0-0.{NAME}:29001; 2 slices "
                "of tpuv6e:4x4, 2 held") in text, text
        report = json.loads(sps.gcluster("job", "inspect", NAME, *CLUSTER, "--format", "json",
                                         check=0).stdout)
        assert report["pathways"] == "sps"
        assert report["sps"]["resource_manager"] == f"{NAME}-pathways-head-0-0.{NAME}:29001"
        # Oldest first: ada's and bob's clients started together, cy's after them.
        clients_seen = [(c["job"], c["state"]) for c in report["sps"]["clients"]]
        assert sorted(clients_seen[:2]) == sorted([(jobs["ada"], "holding"),
                                                   (jobs["bob"], "holding")]), clients_seen
        assert clients_seen[2] == (waiting.job(), "waiting"), clients_seen
        # Nor can the service go from under them.
        cancel = sps.gcluster("job", "cancel", NAME, *CLUSTER, check=2)
        assert f"service {NAME} has 3 clients attached" in cancel.stderr, cancel.stderr

        for u in ("ada", "bob"):
            pods.append(route_client(sps, clients[u], servers[u]))
        for u in ("ada", "bob"):
            rc = clients[u].wait()
            out = clients[u].out.read_text()
            assert rc == 0, out + clients[u].err.read_text()
            assert out.splitlines()[-1] == devices_line(), out
            methods = servers[u].methods()
            assert methods[:2] == [f"/{IFRT_SERVICE}/GetVersion",
                                   f"/{IFRT_SERVICE}/IfrtSession"], methods
            assert f"deleted proxy job {jobs[u]}" in clients[u].err.read_text()
        # The command ended: each client deleted its own proxy job.
        wait_for(lambda: not proxy_jobs(sps, "ada-lovelace") and not proxy_jobs(sps, "bob"),
                 timeout=60, what="the proxy jobs to be deleted")
        # The slices are free: cy, first in line, takes one.
        wait_for(lambda: waiting.state() == "holding", timeout=60, what="cy's turn")
    finally:
        for c in [*clients.values(), *([waiting] if waiting else [])]:
            c.stop()
        for pod in pods:
            unroute(sps, pod)
        for s in servers.values():
            s.close()
    # Ctrl-C (here SIGINT) ended cy: its proxy job went with it.
    wait_for(lambda: not proxy_jobs(sps, "cy"), timeout=60, what="cy's proxy job to go")


def test_sigkill_leaves_no_proxy_job_within_the_lease(sps, tmp_path):
    client = Client(sps, "dora", tmp_path)
    try:
        wait_for(lambda: "JAX_BACKEND_TARGET=grpc://127.0.0.1:" in client.out.read_text(),
                 timeout=120, what="dora's tunnel")
        job = client.job()
        spec = sps.kubectl_json("get", "job", job)["spec"]
        assert spec["ttlSecondsAfterFinished"] == 0
        assert spec["activeDeadlineSeconds"] >= LEASE
        client.proc.kill()  # SIGKILL: no cleanup runs
        client.proc.wait(timeout=10)
        killed = time.monotonic()
        wait_for(lambda: not proxy_jobs(sps, "dora"), timeout=KILL_BOUND,
                 what=f"dora's proxy job {job} to go after SIGKILL")
        assert time.monotonic() - killed <= KILL_BOUND
    finally:
        client.stop()


def test_mismatched_proxy_image_is_refused_before_anything_is_created(sps, tmp_path):
    other = "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:jax-0.8.0"
    proc = sps.gcluster("job", "submit", "--pathways-run-sps-workload", "--pathways-service",
                        NAME, "--pathways-proxy-server-image", other, "--local-port", "0",
                        *CLUSTER, "--command", "true", env={"USER": "eve"}, check=2)
    assert proc.stderr.strip() == (
        f"gcluster: error: --pathways-proxy-server-image {other} is release jax-0.8.0, but "
        f"service {NAME} runs server {SERVER} (release jax-0.9.0): a proxy of another release "
        f"fails with \"Protocol Mismatch\"; use --pathways-proxy-server-image {PROXY}, or leave "
        "the flag out"), proc.stderr
    assert proxy_jobs(sps, "eve") == []
    # More slices than the service has: refused the same way.
    proc = sps.gcluster("job", "submit", "--pathways-run-sps-workload", "--pathways-service",
                        NAME, "--num-slices", "3", *CLUSTER, "--command", "true",
                        env={"USER": "eve"}, check=2)
    assert f"service {NAME} has 2 slices in all; ask for at most 2" in proc.stderr
    assert proxy_jobs(sps, "eve") == []
