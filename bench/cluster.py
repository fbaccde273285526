"""The benchmark's own local control plane (testenv/) and small helpers to drive it.

The bench starts its own environment (state directory ~/.cache/gcluster-testenv/bench-<pid>), so
it never disturbs one that tests or a developer are using, with node pools sized for the log
scenario (16 v6e 4x4 slices of 4 hosts, plus cpu-np for Pathways heads) and, through testenv's
opt-in GCLUSTER_TESTENV_FAKE_LOG, a log file big enough to stream megabytes. Everything talks to
127.0.0.1 only.
"""

import base64
import json
import os
import shutil
import ssl
import subprocess
import threading
import time
import http.client
from pathlib import Path
from urllib.parse import urlparse

from harness import BenchError

REPO = Path(__file__).resolve().parents[1]
TESTENV = REPO / "testenv"
TESTENV_CACHE = Path(os.environ.get("GCLUSTER_TESTENV_CACHE")
                     or Path.home() / ".cache" / "gcluster-testenv")
STATE_PREFIX = "bench-"
TPU_POOLS = 16  # v6e 4x4 slices of 4 hosts each: the log scenario's 64 worker pods
FAKE_LOG_PAYLOAD = 100  # bytes per fake log line, newline included


def yaml_module():
    try:
        import yaml  # noqa: PLC0415 - installed on first use, as testenv/testenv.py does
    except ImportError:
        print("bench: installing PyYAML (python3 -m pip install PyYAML)", flush=True)
        subprocess.run(["python3", "-m", "pip", "install", "--quiet", "PyYAML>=6"], check=True)
        import yaml  # noqa: PLC0415
    return yaml


def write_nodepools(path):
    """testenv's node pool format (testenv/nodepools.yaml): cpu-np and TPU_POOLS v6e pools."""
    lines = ["region: us-east5", "zone: us-east5-b", "nodePools:",
             "  - {name: cpu-np, machineType: n4-standard-64, nodes: 3,",
             '     capacity: {cpu: "64", memory: 256Gi, pods: "110"}}']
    for i in range(TPU_POOLS):
        lines += [f"  - {{name: tpu-v6e-np-{i}, machineType: ct6e-standard-4t, nodes: 4,",
                  "     tpu: {accelerator: tpu-v6e-slice, topology: 4x4, chipsPerHost: 4},",
                  '     capacity: {cpu: "180", memory: 720Gi, pods: "110"}}']
    path.write_text("\n".join(lines) + "\n")


def write_fake_log(path, mib):
    """A CRI-format container log of about `mib` MiB of payload, FAKE_LOG_PAYLOAD bytes a line
    (what a client receives per line, before any prefix it adds)."""
    prefix = "2026-01-01T00:00:00.000000000Z stdout F "
    lines = max(1, int(mib * 1024 * 1024) // FAKE_LOG_PAYLOAD)
    with open(path, "w") as f:
        for i in range(lines):
            text = f"bench log line {i:09d} "
            f.write(prefix + text + "x" * (FAKE_LOG_PAYLOAD - 1 - len(text)) + "\n")
    return lines


def stop_abandoned():
    """Environments of bench runs that died without tearing down (e.g. SIGKILL)."""
    for state_dir in TESTENV_CACHE.glob(f"{STATE_PREFIX}*"):
        pid = state_dir.name[len(STATE_PREFIX):]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            testenv_down(state_dir)


def testenv_up(state_dir, nodepools, fake_log):
    env = dict(os.environ, GCLUSTER_TESTENV_DIR=str(state_dir),
               GCLUSTER_TESTENV_NODEPOOLS=str(nodepools), GCLUSTER_TESTENV_FAKE_LOG=str(fake_log))
    env.pop("GCLUSTER_TESTENV_KUEUE", None)
    proc = subprocess.run([str(TESTENV / "up")], env=env, stdout=subprocess.PIPE, text=True,
                          timeout=3600)
    last = proc.stdout.strip().splitlines()[-1:] or [""]
    if proc.returncode != 0 or not last[0].startswith("KUBECONFIG="):
        raise BenchError(f"testenv/up failed (exit {proc.returncode}); its log is above")
    return Path(last[0].split("=", 1)[1])


def testenv_down(state_dir):
    env = dict(os.environ, GCLUSTER_TESTENV_DIR=str(state_dir))
    subprocess.run([str(TESTENV / "down")], env=env, timeout=300, check=False)


class Cluster:
    """kubectl and a raw API client bound to the bench environment's kubeconfig."""

    def __init__(self, kubeconfig, home, work):
        self.kubeconfig = Path(kubeconfig)
        self.home = home  # a private HOME: no user config or discovery cache leaks in
        self.api = Api(kubeconfig, work)

    def env(self):
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig), HOME=str(self.home))
        for var in ("GCLUSTER_IMAGE_REPO", "KUBECTL_EXTERNAL_DIFF"):
            env.pop(var, None)
        return env

    def api_url(self):
        return f"https://{self.api.host}:{self.api.port}"

    def api_curl_auth(self):
        """curl's flags for the kubeconfig's credentials (the same ones the tools use)."""
        f = self.api.files
        return ["--cacert", f["ca.crt"], "--cert", f["client.crt"], "--key", f["client.key"]]

    def kubectl(self, *args, input=None, check=True, timeout=120):
        proc = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True,
                              timeout=timeout, env=self.env())
        if check and proc.returncode != 0:
            raise BenchError(f"kubectl {' '.join(args)} exited {proc.returncode}: "
                             f"{proc.stderr.strip()}")
        return proc

    def kubectl_json(self, *args):
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def wait_for(self, what, probe, timeout, interval=1.0):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                if probe():
                    return
            except (BenchError, ValueError, KeyError) as e:
                last = e
            time.sleep(interval)
        raise BenchError(f"timed out after {timeout}s waiting for {what}"
                         + (f" (last error: {last})" if last else ""))

    def running_pods(self, job, namespace="default"):
        pods = self.kubectl_json("get", "pods", "-n", namespace, "-l",
                                 f"jobset.sigs.k8s.io/jobset-name={job}")["items"]
        return sum(1 for p in pods if p.get("status", {}).get("phase") == "Running")

    def delete_jobs_and_wait(self, namespace, timeout=300):
        """Deletes every JobSet of a namespace and waits until their pods and Jobs are gone, so
        the next measurement does not share the machine with cascading deletion."""
        self.api.delete_collection(f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets")

        def empty():
            for kind in ("jobsets.jobset.x-k8s.io", "jobs", "pods"):
                if self.kubectl_json("get", kind, "-n", namespace)["items"]:
                    return False
            return True

        self.wait_for(f"namespace {namespace} to have no JobSets, Jobs or pods", empty, timeout)


class Api:
    """A few raw HTTPS calls with the kubeconfig's client certificate (testenv's kubeconfig
    embeds the CA, certificate and key), one keep-alive connection per thread."""

    def __init__(self, kubeconfig, work):
        yaml = yaml_module()
        doc = yaml.safe_load(Path(kubeconfig).read_text())
        cluster = doc["clusters"][0]["cluster"]
        user = doc["users"][0]["user"]
        url = urlparse(cluster["server"])
        if url.hostname != "127.0.0.1":
            raise BenchError(f"the bench only talks to 127.0.0.1, not {url.hostname}")
        self.host, self.port = url.hostname, url.port
        files = {}
        for name, key in (("ca.crt", "certificate-authority-data"),
                          ("client.crt", "client-certificate-data"),
                          ("client.key", "client-key-data")):
            path = Path(work) / name
            path.touch(mode=0o600)
            path.write_bytes(base64.b64decode(cluster.get(key) or user.get(key)))
            files[name] = str(path)
        self.files = files
        self.ctx = ssl.create_default_context(cafile=files["ca.crt"])
        self.ctx.load_cert_chain(files["client.crt"], files["client.key"])
        self.local = threading.local()

    def _conn(self):
        if getattr(self.local, "conn", None) is None:
            self.local.conn = http.client.HTTPSConnection(self.host, self.port, context=self.ctx,
                                                          timeout=60)
        return self.local.conn

    def request(self, method, path, body=None):
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in range(5):
            try:
                conn = self._conn()
                conn.request(method, path, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
            except (OSError, http.client.HTTPException):
                self.local.conn = None
                time.sleep(0.2 * (attempt + 1))
                continue
            if resp.status in (429, 500, 503, 504):
                time.sleep(0.2 * (attempt + 1))
                continue
            return resp.status, payload
        raise BenchError(f"{method} {path}: no answer after 5 attempts")

    def create_many(self, path, objects, threads=16):
        """POSTs every object with `threads` parallel connections; fails on the first error."""
        errors = []
        lock = threading.Lock()
        queue = list(reversed(objects))

        def worker():
            while True:
                with lock:
                    if errors or not queue:
                        return
                    obj = queue.pop()
                status, payload = self.request("POST", path, obj)
                if status != 201:
                    with lock:
                        errors.append(f"POST {path} -> {status}: {payload[:500]!r}")

        pool = [threading.Thread(target=worker) for _ in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
        if errors:
            raise BenchError(errors[0])

    def delete_collection(self, path):
        status, payload = self.request("DELETE", path)
        if status not in (200, 404):
            raise BenchError(f"DELETE {path} -> {status}: {payload[:500]!r}")


def find_gcluster():
    path = REPO / "build" / "gcluster"
    if not path.is_file():
        raise BenchError(f"{path} is missing; run `make` (or `make bench`, which builds it)")
    return path


def kubectl_path():
    path = shutil.which("kubectl")
    if not path:
        raise BenchError("kubectl is not on PATH (it comes with google-cloud-cli; "
                         "`apt-get install kubectl`)")
    return path
