"""A real JAX client through `gcluster job connect`: jax, jaxlib and pathwaysutils from PyPI
(tests/jax/requirements.txt, in the venv tests/jax/build-venv makes), a program that calls
`pathwaysutils.initialize()` and prints `jax.devices()`, run as `gcluster job connect NAME -- CMD`
against a headless job of testenv. Port 29000 of the job's head pod is routed (a kwok
PortForward) to tests/cluster/ifrt_proxy_server.py, which answers jaxlib's IFRT proxy client as
the Pathways proxy does for listing devices. The tests assert the devices the program printed and
that the client's calls (GetVersion, then the IfrtSession's init) reached the server through the
tunnel.

jaxlib's client speaks plaintext gRPC only with IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS=true,
ALTS otherwise, and ALTS needs Google Cloud ("Invalid credentials" elsewhere, before a byte is
sent). job connect sets the variable for CMD when the head pod's proxy container has it "true";
without it connect says what to do, and the client reaches nothing.
"""

import subprocess
from pathlib import Path

import grpc
import pytest

from conftest import REPO, wait_for
from gcluster_cli import CLUSTER, GCLUSTER, submit_pathways
from ifrt_proxy_server import SERVICE, IfrtProxyServer
from test_job_connect import READY_TIMEOUT, proxy_ready, route, unroute

INSECURE = "IFRT_PROXY_USE_INSECURE_GRPC_CREDENTIALS"
VENV_TIMEOUT = 900  # a cold build downloads ~400 MB of wheels
CLIENT_TIMEOUT = 180  # jax's import, the connection and the program, on 2 busy cores
DEVICES = 16  # v6e-16, one slice: 4 hosts of 4 chips


def readme_program():
    """The JAX program README.md's headless section shows (its python block that starts with
    `# my_program.py`): the test runs it as it is, so the README stays true."""
    text = (REPO / "README.md").read_text()
    start = text.index("```python\n  # my_program.py\n")
    block = text[start:text.index("```\n", start + 3)].splitlines()[1:]
    return "\n".join(line[2:] for line in block) + "\n"


# Runs the program after printing the target job connect gave it.
WRAPPER = ("import os, runpy, sys; "
           "print('target:', os.environ['JAX_BACKEND_TARGET'], flush=True); "
           "runpy.run_path(sys.argv[1], run_name='__main__')")


@pytest.fixture(scope="module")
def venv_python():
    """The python of the cached venv (built here if `make cluster-test` has not yet)."""
    proc = subprocess.run([str(REPO / "tests/jax/build-venv")], capture_output=True, text=True,
                          timeout=VENV_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    python = proc.stdout.strip().splitlines()[-1]
    assert Path(python).is_file(), proc.stdout
    return python


@pytest.fixture
def proxy_server():
    server = IfrtProxyServer(devices=DEVICES, kind="TPU v6 lite")
    yield server
    server.close()


def headless_job(cli, job, *extra):
    submit_pathways(cli, job, *extra, compute="v6e-16", slices="1", headless=True, check=0)
    return wait_for(lambda: proxy_ready(cli, job), timeout=READY_TIMEOUT, what=f"{job}'s proxy")


def wait_for_route(cli, job, server):
    """Until kwok sends the head pod's port 29000 to `server` (it notices a PortForward a moment
    after it is created): one GetVersion call through a `job connect` of its own, from grpcio.
    The server's record of calls is then cleared, so that the test sees only its client's."""
    env = cli.env()
    with subprocess.Popen([str(GCLUSTER), "job", "connect", job, *CLUSTER, "--local-port", "0"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL, text=True, env=env) as connect:
        try:
            target = ""
            for line in connect.stdout:
                if line.startswith("JAX_BACKEND_TARGET=grpc://"):
                    target = line.strip().split("grpc://", 1)[1]
                    break
            assert target, "job connect --env printed no JAX_BACKEND_TARGET"

            def get_version():
                with grpc.insecure_channel(target) as channel:
                    call = channel.unary_unary(f"/{SERVICE}/GetVersion")
                    return call(b"", timeout=5) is not None
            wait_for(get_version, timeout=60, what="the route to the IFRT proxy stand-in")
        finally:
            connect.terminate()
            connect.wait(timeout=60)
    server.calls.clear()


def run_client(cli, job, venv_python, tmp_path, extra_env=None):
    prog = tmp_path / "my_program.py"
    prog.write_text(readme_program())
    env = cli.env(extra_env)
    env.pop(INSECURE, None)  # only what job connect sets
    return subprocess.run([str(GCLUSTER), "job", "connect", job, *CLUSTER, "--local-port", "0",
                           "--", venv_python, "-c", WRAPPER, str(prog)], capture_output=True, text=True,
                          env=env, timeout=CLIENT_TIMEOUT)


def test_jax_devices_through_connect(cli, venv_python, proxy_server, tmp_path):
    job = "jax-plain"
    pod = headless_job(cli, job, "--pathways-proxy-env", f"{INSECURE}=true")
    try:
        route(cli, pod, proxy_server.port)
        wait_for_route(cli, job, proxy_server)
        proc = run_client(cli, job, venv_python, tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        lines = proc.stdout.splitlines()
        # print(jax.devices()): every device the server listed, as the proxy client made them.
        assert lines[-1] == "[" + ", ".join(
            f"TpuDevice(id={d}, process_index=0, coords=({d % 4},{d // 4},0), core_on_chip=0)"
            for d in range(DEVICES)) + "]", proc.stdout
        # The client's target was job connect's local listener, not the server: its calls came
        # through the tunnel.
        target = next(line for line in lines if line.startswith("target: "))
        local_port = int(target.rsplit(":", 1)[1])
        assert target.startswith("target: grpc://127.0.0.1:") and local_port != proxy_server.port
        methods = proxy_server.methods()
        assert methods[:2] == [f"/{SERVICE}/GetVersion", f"/{SERVICE}/IfrtSession"], methods
        version = proxy_server.calls[0]["request"]
        assert 0 < version["min_version"]["protocol_version"] <= \
            version["max_version"]["protocol_version"]
        session = proxy_server.calls[1]
        assert session["request"]["fields"] == [2]  # IfrtRequest.init_request
        assert session["request"]["session_version"] == version["max_version"]
        # The plaintext client came from jaxlib because connect set the variable; it says so.
        assert "IFRT proxy using insecure client credentials" in proc.stderr
        assert "uses ALTS credentials" not in proc.stderr
    finally:
        unroute(cli, pod)


def test_env_lines_name_the_credentials(cli, tmp_path):
    """--env prints the variable too when the proxy serves plaintext gRPC."""
    job = "jax-env"
    headless_job(cli, job, "--pathways-proxy-env", f"{INSECURE}=true")
    env = cli.env()
    env.pop(INSECURE, None)
    proc = subprocess.run(
        ["sh", "-c", f'eval "$({GCLUSTER} job connect {job} {" ".join(CLUSTER)} --local-port 0 '
                     f'--env 2>{tmp_path / "err"} & echo PID=$!)"; echo "${INSECURE}"; '
                     f'kill $PID'],
        capture_output=True, text=True, env=env, timeout=READY_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "true", proc.stdout


def test_alts_proxy_gets_a_notice_and_no_call(cli, venv_python, proxy_server, tmp_path):
    """A proxy without the variable uses ALTS: connect does not set it for CMD and says how to
    fix the job; jaxlib's client then fails off Google Cloud before it sends a byte."""
    job = "jax-alts"
    pod = headless_job(cli, job)
    try:
        route(cli, pod, proxy_server.port)
        wait_for_route(cli, job, proxy_server)
        proc = run_client(cli, job, venv_python, tmp_path,
                          {"PATHWAYS_PROXY_CONNECTION_TIMEOUT_SECS": "5"})
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert (f"does not set {INSECURE}=true), which only Google Cloud machines have; "
                f"elsewhere jaxlib fails with \"Invalid credentials\": submit the job with "
                f"--pathways-proxy-env {INSECURE}=true") in proc.stderr
        assert "Invalid credentials" in proc.stderr
        assert proxy_server.methods() == []
    finally:
        unroute(cli, pod)
