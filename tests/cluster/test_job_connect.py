"""`gcluster job connect` through the real kube-apiserver and kwok.

testenv routes port 29000 of every pod (the IFRT proxy's port) to a TCP echo server; a kwok
PortForward object named like a pod sends that pod's port elsewhere (a real gRPC server, or a
server that says which pod it stands for). Every wait is bounded, and no test asserts how long
something took (bench/ measures that): after a cut, the outcome asserted is that the same
listener works again through a new tunnel.

kwok's tunnel does not pass a client's half-close on to the target (it never calls CloseWrite),
so nothing here expects an end of file to reach the echo server: half-close is proven against
the kubelet's own port-forward code in the peer tier (tests/peer/test_portforward_peer.c,
tunnel_echoes_and_half_closes).
"""

import concurrent.futures
import json
import os
import re
import signal
import socket
import subprocess
import threading
from concurrent import futures

import grpc
import pytest
import yaml
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from conftest import wait_for
from fault.fault_proxy import FaultProxy
from gcluster_cli import CLUSTER, GCLUSTER, Cli, submit_pathways

READY_TIMEOUT = 120  # a headless job admitted, scheduled and its proxy ready on testenv
EXIT_TIMEOUT = 60


@pytest.fixture(scope="module")
def headless(testenv, tmp_path_factory):
    """One headless job for the tests that only connect to it: (its name, a Cli)."""
    cli = Cli(testenv.kubeconfig, tmp_path_factory.mktemp("headless"))
    job = "cx-shared"
    submit_pathways(cli, job, slices="1", headless=True)
    wait_for(lambda: proxy_ready(cli, job), timeout=READY_TIMEOUT, what=f"{job}'s proxy")
    yield job, cli
    cli.delete_job(job)
    wait_for(lambda: not cli.pods(job), timeout=120, what=f"{job}'s pods to be gone")


def head_pods(cli, job):
    return [p for p in cli.pods(job)
            if p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name")
            == "pathways-head" and "deletionTimestamp" not in p["metadata"]]


def proxy_ready(cli, job):
    """The name of the head pod whose pathways-proxy container is ready, or None."""
    for pod in head_pods(cli, job):
        for cs in pod["status"].get("containerStatuses", []):
            if cs["name"] == "pathways-proxy" and cs.get("ready"):
                return pod["metadata"]["name"]
    return None


class Connect:
    """`gcluster job connect` running in the background, its output in files."""

    def __init__(self, cli, job, *extra, kubeconfig=None, tmp):
        self.out_path, self.err_path = tmp / f"{job}.out", tmp / f"{job}.err"
        env = cli.env({"KUBECONFIG": str(kubeconfig)} if kubeconfig else None)
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(
                [str(GCLUSTER), "job", "connect", job, *CLUSTER, "--local-port", "0", *extra],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)

    def stdout(self):
        return self.out_path.read_text()

    def stderr(self):
        return self.err_path.read_text()

    def port(self):
        """The local port, once the variables are printed (the tunnel works)."""
        def printed():
            assert self.proc.poll() is None, f"connect ended early:\n{self.stderr()}"
            for line in self.stdout().splitlines():
                if line.startswith("JAX_BACKEND_TARGET=grpc://127.0.0.1:"):
                    return int(line.rsplit(":", 1)[1])
            return None
        return wait_for(printed, timeout=READY_TIMEOUT, interval=0.2, what="job connect to be ready")

    def wait(self, timeout=EXIT_TIMEOUT):
        return self.proc.wait(timeout=timeout)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        return self.wait()


@pytest.fixture
def started(tmp_path):
    """Starts job connect processes and makes sure none outlives the test."""
    procs = []

    def start(cli, job, *extra, kubeconfig=None):
        c = Connect(cli, job, *extra, kubeconfig=kubeconfig, tmp=tmp_path)
        procs.append(c)
        return c

    yield start
    for c in procs:
        if c.proc.poll() is None:
            c.proc.kill()
            c.proc.wait()


def echo(port, payload, timeout=30):
    """Sends payload on a new connection and reads back as many bytes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        got = bytearray()
        sender = threading.Thread(target=s.sendall, args=(payload,))
        sender.start()
        while len(got) < len(payload):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            got.extend(chunk)
        sender.join()
        return bytes(got)


def pattern(n, seed):
    block = bytes((i * 7 + seed * 13 + i // 251) & 0xFF for i in range(65536))
    return (block * (n // len(block) + 1))[:n]


def port_forward_object(pod, targets):
    return {"apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "PortForward",
            "metadata": {"name": pod, "namespace": "default"},
            "spec": {"forwards": [{"ports": [pod_port],
                                   "target": {"address": "127.0.0.1", "port": port}}
                                  for pod_port, port in targets.items()]}}


def route(cli, pod, port, more=None):
    """Sends port 29000 of `pod` to 127.0.0.1:port instead of the echo server (and each port of
    `more`, {pod port: local port}, to its local port)."""
    proc = subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(
        port_forward_object(pod, {29000: port, **(more or {})})), capture_output=True, text=True,
        env=cli.env(), timeout=60)
    assert proc.returncode == 0, proc.stderr


def unroute(cli, pod):
    cli.kubectl("delete", "portforwards.kwok.x-k8s.io", pod, "--ignore-not-found", check=False)


class Banner:
    """A TCP server that greets every connection with one line, to tell a pod by."""

    def __init__(self, text):
        self.text = text.encode() + b"\n"
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.sendall(self.text)

    def close(self):
        self.sock.close()


def first_line(port, timeout=5):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(100)
            if not chunk:
                break
            data += chunk
        return data


# --- the command and its environment --------------------------------------------------------

CLIENT = """
import os, socket, sys
assert os.environ["JAX_PLATFORMS"] == "proxy", os.environ["JAX_PLATFORMS"]
target = os.environ["JAX_BACKEND_TARGET"]
host, port = target[len("grpc://"):].rsplit(":", 1)
with socket.create_connection((host, int(port)), timeout=30) as s:
    s.sendall(b"through the tunnel")
    got = b""
    while len(got) < 18:
        got += s.recv(100)
print("echoed:", got.decode(), "target:", target)
sys.exit(int(sys.argv[1]))
"""


def test_command_gets_the_variables_and_its_exit_status(headless):
    job, cli = headless
    proc = cli.gcluster("job", "connect", job, *CLUSTER, "--local-port", "0", "--",
                        "python3", "-c", CLIENT, "7", timeout=READY_TIMEOUT)
    assert proc.returncode == 7, proc.stderr
    assert "echoed: through the tunnel target: grpc://127.0.0.1:" in proc.stdout
    assert "JAX_BACKEND_TARGET" not in proc.stderr  # the variables are CMD's, not printed
    assert "forwarding 127.0.0.1:" in proc.stderr and f"(job {job})" in proc.stderr

    ok = cli.gcluster("job", "connect", job, *CLUSTER, "--local-port", "0", "--",
                      "python3", "-c", CLIENT, "0", timeout=READY_TIMEOUT)
    assert ok.returncode == 0, ok.stderr


def test_env_lines_for_eval(headless, tmp_path):
    job, cli = headless
    # Its stderr goes to a file: a pipe would keep this test's capture open as long as the
    # background connect runs.
    script = (f'eval "$({GCLUSTER} job connect {job} {" ".join(CLUSTER)} --local-port 0 --env '
              f'2>{tmp_path / "connect.err"} & echo CONNECT_PID=$!)"; '
              f'echo "$JAX_PLATFORMS $JAX_BACKEND_TARGET $CONNECT_PID"')
    proc = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=cli.env(),
                          timeout=READY_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    platforms, target, pid = proc.stdout.split()
    try:
        assert platforms == "proxy"
        assert target.startswith("grpc://127.0.0.1:")
        # The shell got its variables while connect keeps forwarding in the background.
        port = int(target.rsplit(":", 1)[1])
        assert echo(port, b"after eval") == b"after eval"
    finally:
        os.kill(int(pid), signal.SIGTERM)
    wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
             open(f"/proc/{pid}/stat").read().split()[2] == "Z",
             timeout=EXIT_TIMEOUT, what="the background connect to end")


# --- data -----------------------------------------------------------------------------------

def test_64_mib_echoed_byte_exact(headless, started):
    job, cli = headless
    c = started(cli, job)
    port = c.port()
    payload = pattern(64 << 20, 1)
    assert echo(port, payload, timeout=120) == payload
    assert c.stop() == 0
    assert "Traceback" not in c.stderr() and "error" not in c.stderr()


def test_100_concurrent_connections(headless, started):
    job, cli = headless
    c = started(cli, job)
    port = c.port()
    payloads = [pattern(64 << 10, i) for i in range(100)]
    barrier = threading.Barrier(100)

    def one(i):
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            barrier.wait(timeout=60)  # all 100 are open at once
            s.sendall(payloads[i])
            got = bytearray()
            while len(got) < len(payloads[i]):
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                got.extend(chunk)
            return bytes(got) == payloads[i]

    with concurrent.futures.ThreadPoolExecutor(max_workers=100) as pool:
        results = list(pool.map(one, range(100), timeout=180))
    assert results == [True] * 100
    assert c.stop() == 0


def test_grpc_call_through_connect(headless, started):
    """A real gRPC server behind the head pod's port 29000: HTTP/2 end to end, as JAX speaks to
    the IFRT proxy."""
    job, cli = headless
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    servicer = health.HealthServicer()
    servicer.set("ifrt-proxy", health_pb2.HealthCheckResponse.SERVING)
    health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
    grpc_port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    pod = proxy_ready(cli, job)
    try:
        route(cli, pod, grpc_port)
        c = started(cli, job)
        port = c.port()

        def check():
            # The first calls may still reach the echo server, until kwok has seen the route.
            with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                return stub.Check(health_pb2.HealthCheckRequest(service="ifrt-proxy"), timeout=5)

        reply = wait_for(check, timeout=60, what="a gRPC health check through job connect")
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        assert c.stop() == 0
    finally:
        unroute(cli, pod)
        server.stop(0)


# --- healing --------------------------------------------------------------------------------

def proxied_kubeconfig(testenv, tmp_path, proxy):
    """The testenv kubeconfig with the fault proxy (tests/cluster/fault/) as its server."""
    config = yaml.safe_load(testenv.kubeconfig.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    path = tmp_path / "proxied-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def api_port(testenv):
    config = yaml.safe_load(testenv.kubeconfig.read_text())
    return int(config["clusters"][0]["cluster"]["server"].rsplit(":", 1)[1])


def test_api_connection_cut_mid_transfer_heals(testenv, headless, started, tmp_path):
    job, cli = headless
    proxy = FaultProxy(api_port(testenv))
    try:
        c = started(cli, job, kubeconfig=proxied_kubeconfig(testenv, tmp_path, proxy))
        port = c.port()
        assert echo(port, b"before the cut") == b"before the cut"

        # A transfer under way when every connection to the API server is reset.
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            s.sendall(pattern(1 << 20, 2))
            s.recv(1)
            # Counted before the cut: connect may open its new tunnel as soon as the old one
            # breaks, before this test has read the old connection to its end.
            connections_at_cut = proxy.stats["connections"]
            proxy.cut_all()
            assert proxy.stats["cuts"] >= 1  # the tunnel's connection, at least
            # That connection is closed (the client reconnects), not left hanging.
            s.settimeout(30)
            try:
                while s.recv(1 << 20):
                    pass
            except ConnectionResetError:
                pass

        # The listener stayed: new connections on the same port work again, through a new
        # tunnel (a new connection to the API server), and connect said it healed.
        def echoes():
            try:
                return echo(port, b"after the cut", timeout=5) == b"after the cut"
            except OSError:
                return False

        wait_for(echoes, timeout=60, what="a working connection on the same port after the cut")
        assert proxy.stats["connections"] > connections_at_cut
        wait_for(lambda: "reconnected: new connections go to head pod" in c.stderr(), timeout=30,
                 what="connect to say it reconnected")
        assert c.proc.poll() is None
        assert "the tunnel to head pod" in c.stderr() and "broke" in c.stderr()
        assert c.stop() == 0
    finally:
        proxy.close()


def extra_port(c, remote, pod):
    """The local port connect said it forwards to `remote` of `pod` (--port :REMOTE)."""
    said = re.compile(rf"forwarding 127\.0\.0\.1:(\d+) to port {remote} of head pod {pod}")
    return wait_for(lambda: (m := said.search(c.stderr())) and int(m.group(1)), timeout=30,
                    what=f"connect to say where port {remote} is")


def test_extra_port_reaches_a_second_server_and_heals(testenv, headless, started, tmp_path):
    """--port :8888 forwards a second port of the head pod (a notebook server there) on its own
    listener, and that listener works again through a new tunnel after the API connection is
    cut."""
    job, cli = headless
    pod = proxy_ready(cli, job)
    notebook = Banner("notebook server")
    proxy = FaultProxy(api_port(testenv))
    forward = port_forward_object(pod, {8888: notebook.port})
    try:
        applied = subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(forward),
                                 capture_output=True, text=True, env=cli.env(), timeout=60)
        assert applied.returncode == 0, applied.stderr
        c = started(cli, job, "--port", ":8888",
                    kubeconfig=proxied_kubeconfig(testenv, tmp_path, proxy))
        c.port()
        local = extra_port(c, 8888, pod)

        def greets():
            try:
                return first_line(local) == b"notebook server\n"
            except OSError:
                return False

        wait_for(greets, timeout=60, what="the notebook server through --port")
        proxy.cut_all()
        wait_for(lambda: "the tunnel to port 8888 of head pod" in c.stderr(), timeout=30,
                 what="connect to say the port's tunnel broke")
        wait_for(greets, timeout=60, what="the notebook server on the same port after the cut")
        wait_for(lambda: f"reconnected: 127.0.0.1:{local} to port 8888" in c.stderr(),
                 timeout=30, what="connect to say the port reconnected")
        assert c.stop() == 0
    finally:
        proxy.close()
        notebook.close()
        unroute(cli, pod)


def test_follows_the_replacement_head_pod(cli, started):
    job = "cx-replace"
    submit_pathways(cli, job, slices="1", headless=True)
    old = wait_for(lambda: proxy_ready(cli, job), timeout=READY_TIMEOUT, what="the head pod")
    c = started(cli, job, "--port", ":8888")
    port = c.port()
    assert echo(port, b"old pod") == b"old pod"
    notebook_port = extra_port(c, 8888, old)

    cli.kubectl("delete", "pod", old, "--wait=false")
    new = wait_for(lambda: (lambda p: p if p and p != old else None)(proxy_ready(cli, job)),
                   timeout=READY_TIMEOUT, what="the replacement head pod")
    banner = Banner(f"this is {new}")
    notebook = Banner(f"notebook in {new}")
    try:
        route(cli, new, banner.port, {8888: notebook.port})

        def reaches_new_pod():
            try:
                return first_line(port) == f"this is {new}\n".encode()
            except OSError:
                return False

        wait_for(reaches_new_pod, timeout=60, what=f"connections to reach {new}")

        def notebook_on_new_pod():  # --port follows the proxy's port to the new pod
            try:
                return first_line(notebook_port) == f"notebook in {new}\n".encode()
            except OSError:
                return False

        wait_for(notebook_on_new_pod, timeout=60, what=f"--port 8888 to reach {new}")
        assert c.proc.poll() is None, c.stderr()
        err = c.stderr()
        assert f"head pod {old}" in err and ("is gone" in err or "was replaced" in err), err
        assert f"new connections go to head pod {new}" in err, err
        assert c.stop() == 0
    finally:
        unroute(cli, new)
        banner.close()
        notebook.close()


def test_cancelling_the_job_ends_connect(cli, started):
    job = "cx-cancel"
    submit_pathways(cli, job, slices="1", headless=True)
    c = started(cli, job)
    c.port()
    cli.gcluster("job", "cancel", job, *CLUSTER, check=0)
    assert c.wait() == 1
    err = c.stderr()
    assert f"gcluster: error: job {job}" in err and "cancelled" in err, err


# --- credentials and the one-step submit ------------------------------------------------------

ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
    "metadata": {"name": "connect-tester", "namespace": "default"},
    "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["create"]},
        {"apiGroups": ["jobset.x-k8s.io"], "resources": ["jobsets"], "verbs": ["get"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["list"]},
    ],
}


def token_kubeconfig(cli, testenv, tmp_path):
    """A kubeconfig that authenticates with a service account's bearer token: (path, token)."""
    cli.kubectl("create", "serviceaccount", "connect-tester", check=False)
    proc = subprocess.run(["kubectl", "apply", "-f", "-"], input=json.dumps(ROLE),
                          capture_output=True, text=True, env=cli.env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    cli.kubectl("create", "rolebinding", "connect-tester", "--role=connect-tester",
                "--serviceaccount=default:connect-tester", check=False)
    token = cli.kubectl("create", "token", "connect-tester").stdout.strip()
    config = yaml.safe_load(testenv.kubeconfig.read_text())
    config["users"] = [{"name": "token-user", "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = "token-user"
    path = tmp_path / "token-kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path, token


def test_no_token_in_verbose_output(testenv, headless, tmp_path):
    """With a bearer token, and RBAC as roles written before Kubernetes 1.31 grant it (create on
    pods/portforward, no get): the WebSocket is refused, SPDY works, and neither request shows
    the token."""
    job, cli = headless
    kubeconfig, token = token_kubeconfig(cli, testenv, tmp_path)
    proc = cli.gcluster("job", "connect", job, *CLUSTER, "--local-port", "0", "-v", "-v", "--",
                        "python3", "-c", CLIENT, "0", env={"KUBECONFIG": str(kubeconfig)},
                        timeout=READY_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert "echoed: through the tunnel" in proc.stdout
    out = proc.stdout + proc.stderr
    assert token not in out
    assert token[-20:] not in out
    # Both upgrade requests were traced, with their credential redacted.
    assert proc.stderr.count("> Authorization: Bearer <redacted>") >= 2
    assert "-> 403 Forbidden" in proc.stderr and "WebSocket tunnel" in proc.stderr
    assert "-> 101 Switching Protocols" in proc.stderr and "SPDY tunnel)" in proc.stderr


def test_submit_connect_in_one_step(cli):
    job = "cx-submit"
    proc = submit_pathways(cli, job, "--connect", "--", "python3", "-c", CLIENT, "5",
                           slices="1", headless=True, check=None)
    assert proc.returncode == 5, proc.stderr
    assert f"Created headless Pathways job {job}" in proc.stdout
    assert "echoed: through the tunnel" in proc.stdout
    assert cli.kubectl_json("get", "jobset", job)["metadata"]["name"] == job
