"""The kube client (src/kube) against a real API server: the testenv control plane.

Every call goes through kube_probe (tests/unit/support/programs/kube_probe.c), a thin
command-line driver over the public client API, so what is tested here is exactly what gcluster's commands use: create with
strict validation and server-side dry run, conflicts and schema errors from the real server,
paging, watch with resume over connections that are cut, delete propagation through the real
garbage collector, server-side apply, pod logs, HTTP/2, and redaction in traces.
"""
import json
import os
import select
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from conftest import FAKE_LOG_LINES

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("GCLUSTER_BUILD_DIR", REPO / "build"))
PROBE = BUILD / "test-programs" / "kube_probe"


@pytest.fixture(scope="module")
def kubeconfig(testenv):
    # `make cluster-test` builds the probe with gcluster; a missing probe is a broken build.
    assert PROBE.exists(), f"{PROBE} is not built (cmake --build {BUILD})"
    return str(testenv.kubeconfig)


class Probe:
    def __init__(self, kubeconfig, namespace=None):
        self.kubeconfig = kubeconfig
        self.namespace = namespace

    def argv(self, *args, verbose=0):
        argv = [str(PROBE), "--kubeconfig", self.kubeconfig]
        if self.namespace:
            argv += ["-n", self.namespace]
        if verbose:
            argv.append("-v" if verbose == 1 else "-vv")
        return argv + [str(a) for a in args]

    def run(self, *args, body=None, verbose=0, timeout=90):
        """Runs one command; returns (summary, stderr). `body` goes to stdin as JSON ("-")."""
        proc = subprocess.run(self.argv(*args, verbose=verbose), capture_output=True, text=True,
                              timeout=timeout,
                              input=json.dumps(body) if body is not None else None)
        lines = [l for l in proc.stdout.splitlines() if l.strip()]
        assert lines, f"no output from {args}: {proc.stderr}"
        summary = json.loads(lines[-1])
        assert (proc.returncode == 0) == summary["ok"], (proc.returncode, summary)
        return summary, proc.stderr

    def ok(self, *args, **kw):
        summary, _ = self.run(*args, **kw)
        assert summary["ok"], summary
        return summary["result"]

    def fails(self, *args, **kw):
        summary, _ = self.run(*args, **kw)
        assert not summary["ok"], summary
        return summary


def configmap(name, data=None, labels=None, **extra):
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, **({"labels": labels} if labels else {})},
           "data": data or {"k": "v"}}
    obj.update(extra)
    return obj


@pytest.fixture(scope="module")
def ns(kubeconfig):
    name = "kube-client-" + uuid.uuid4().hex[:8]
    Probe(kubeconfig).ok("create", "/api/v1/namespaces", "-",
                         body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    Probe(kubeconfig).run("delete", f"/api/v1/namespaces/{name}", "Background")


@pytest.fixture
def probe(kubeconfig, ns):
    return Probe(kubeconfig, ns)


def cm_path(ns, name=""):
    return f"/api/v1/namespaces/{ns}/configmaps" + (f"/{name}" if name else "")


def test_create_dry_run_strict_conflict_and_schema(probe, ns):
    # A server-side dry run is validated and answered, and stores nothing.
    would_be = probe.ok("create", cm_path(ns), "-", "dry-run", "strict", body=configmap("dry"))
    assert would_be["metadata"]["name"] == "dry"
    missing = probe.fails("get", cm_path(ns, "dry"))
    assert missing["http_status"] == 404 and missing["reason"] == "NotFound"

    created = probe.ok("create", cm_path(ns), "-", "strict", body=configmap("made"))
    assert created["metadata"]["uid"]
    again, stderr = probe.run("create", cm_path(ns), "-", "strict", body=configmap("made"),
                              verbose=1)
    assert not again["ok"], again
    assert again["http_status"] == 409 and again["reason"] == "AlreadyExists"
    assert "already exists" in again["error"]
    # An answer, not something to retry: the POST is not sent again. One read of the object
    # tells whose it is (a proxy on the way may have re-sent our own create): not ours.
    traces = [line.split(" https://")[0] + " " + line.split(" -> ")[1].split(" (")[0]
              for line in stderr.splitlines() if " -> " in line]
    assert traces == ["POST 409 Conflict", "GET 200 OK"], stderr

    # Strict field validation: an unknown field is an error, not a dropped field and a warning.
    unknown = probe.fails("create", cm_path(ns), "-", "strict",
                          body=configmap("typo", bogusField=1))
    assert unknown["http_status"] == 400
    assert 'unknown field "bogusField"' in unknown["error"]

    # The real schema: an invalid name is 422 Invalid with the field named.
    invalid = probe.fails("create", cm_path(ns), "-", body=configmap("Not_A_Name"))
    assert invalid["http_status"] == 422 and invalid["reason"] == "Invalid"
    assert "metadata.name" in invalid["error"]


def test_crd_schema_rejects_a_bad_jobset(probe, ns):
    found, _ = probe.run("get", "/apis/jobset.x-k8s.io/v1alpha2")
    assert found["ok"], f"testenv installs JobSet, but its API is not served: {found}"
    jobset = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
              "metadata": {"name": "bad-schema"},
              "spec": {"replicatedJobs": [{"name": "w", "replicas": "two", "template": {}}]}}
    bad = probe.fails("create", f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets", "-",
                      "strict", "dry-run", body=jobset)
    assert bad["http_status"] in (400, 422)
    assert "replicas" in bad["error"]


def create_many(probe, ns, names, labels):
    def worker(chunk):
        for name in chunk:
            probe.ok("create", cm_path(ns), "-", body=configmap(name, labels=labels))

    chunks = [names[i::8] for i in range(8)]
    threads = [threading.Thread(target=worker, args=(c,)) for c in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)


def test_list_pages_of_100(probe, ns):
    batch = uuid.uuid4().hex[:8]
    names = [f"page-{batch}-{i:03d}" for i in range(250)]
    create_many(probe, ns, names, {"batch": batch})
    listed = probe.run("list", cm_path(ns), "limit=100", f"label=batch={batch}")[0]
    assert listed["ok"], listed
    assert sorted(listed["result"]["names"]) == names
    assert listed["requests"] == 3  # 100 + 100 + 50
    assert listed["result"]["resourceVersion"]
    meta = probe.run("list", cm_path(ns), "limit=100", f"label=batch={batch}", "metadata")[0]
    assert sorted(meta["result"]["names"]) == names and meta["requests"] == 3


class CuttingProxy:
    """A loopback TCP proxy in front of the API server that can cut every connection."""

    def __init__(self, host, port):
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.sockets = []
        self.cuts = 0
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target, timeout=10)
            with self.lock:
                self.sockets += [client, upstream]
            threading.Thread(target=self.pump, args=(client, upstream), daemon=True).start()

    @staticmethod
    def pump(a, b):
        try:
            while True:
                ready, _, _ = select.select([a, b], [], [], 1)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    (b if s is a else a).sendall(data)
        except OSError:
            return
        finally:
            a.close()
            b.close()

    def cut(self):
        with self.lock:
            for s in self.sockets:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.sockets = []
            self.cuts += 1

    def close(self):
        self.listener.close()
        self.cut()


def proxied_kubeconfig(probe, tmp_path, proxy_port, server):
    """The testenv kubeconfig with its server replaced by the proxy (certificates unchanged)."""
    text = Path(probe.kubeconfig).read_text()
    assert server in text, "the kubeconfig names its server literally"
    host = urlsplit(server).hostname
    path = tmp_path / "proxied.kubeconfig"
    text = text.replace(server, f"https://127.0.0.1:{proxy_port}")
    if host not in ("127.0.0.1", "localhost"):
        text = text.replace("    server: ", f"    tls-server-name: {host}\n    server: ", 1)
    path.write_text(text)
    return str(path)


def test_watch_resumes_over_cut_connections(probe, ns, tmp_path):
    info = probe.ok("namespace")
    server = info["server"]
    url = urlsplit(server)
    proxy = CuttingProxy(url.hostname, url.port or 443)
    proc = None
    try:
        watcher = Probe(proxied_kubeconfig(probe, tmp_path, proxy.port, server), ns)
        label = "watch-" + uuid.uuid4().hex[:6]
        proc = subprocess.Popen(
            watcher.argv("watch", cm_path(ns), 120, f"label=run={label}", f"until=ADDED:{label}-end",
                         verbose=1),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        events = []
        reader = threading.Thread(target=lambda: events.extend(proc.stdout), daemon=True)
        reader.start()
        deadline = time.monotonic() + 30
        while not any('"SYNCED"' in e for e in events) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert any('"SYNCED"' in e for e in events), "the watch never finished its list"
        names = [f"{label}-{i}" for i in range(12)]
        for i, name in enumerate(names):
            probe.ok("create", cm_path(ns), "-", body=configmap(name, labels={"run": label}))
            if i % 4 == 3:
                time.sleep(0.5)
                proxy.cut()
        probe.ok("create", cm_path(ns), "-", body=configmap(f"{label}-end", labels={"run": label}))
        proc.wait(timeout=90)
        reader.join(timeout=10)
        stderr = proc.stderr.read()
        assert proc.returncode == 0, stderr
        added = [json.loads(e)["name"] for e in events if '"ADDED"' in e]
        # Every object exactly once, in order, although the connection was cut three times.
        assert added == names + [f"{label}-end"], (added, stderr)
        watches = [l for l in stderr.splitlines() if "watch=1" in l and "->" in l]
        assert len(watches) >= 2, stderr
        assert proxy.cuts == 3
    finally:
        if proc and proc.poll() is None:  # a failed assertion leaves no watcher behind
            proc.kill()
            proc.wait(timeout=10)
        proxy.close()


def wait_until_gone(probe, path, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        summary, _ = probe.run("get", path)
        if not summary["ok"]:
            assert summary["http_status"] == 404, summary
            return
        time.sleep(0.3)
    pytest.fail(f"{path} still exists after {timeout} s")


def test_delete_propagation(probe, ns):
    parent = probe.ok("create", cm_path(ns), "-", body=configmap("parent"))
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "parent",
             "uid": parent["metadata"]["uid"], "blockOwnerDeletion": True}
    for child in ("child-a", "child-b"):
        probe.ok("create", cm_path(ns), "-",
                 body=configmap(child, metadata={"name": child, "ownerReferences": [owner]}))

    # Foreground: the parent stays (with its finalizer) until the garbage collector removed the
    # children, then goes.
    deleting = probe.ok("delete", cm_path(ns, "parent"), "Foreground")
    assert "foregroundDeletion" in deleting["metadata"].get("finalizers", [])
    assert deleting["metadata"].get("deletionTimestamp")
    wait_until_gone(probe, cm_path(ns, "parent"))
    for child in ("child-a", "child-b"):
        gone = probe.fails("get", cm_path(ns, child))
        assert gone["http_status"] == 404

    # Orphan: the child survives, without its owner reference.
    parent = probe.ok("create", cm_path(ns), "-", body=configmap("parent2"))
    owner.update(name="parent2", uid=parent["metadata"]["uid"])
    probe.ok("create", cm_path(ns), "-",
             body=configmap("orphan", metadata={"name": "orphan", "ownerReferences": [owner]}))
    probe.ok("delete", cm_path(ns, "parent2"), "Orphan")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        child = probe.ok("get", cm_path(ns, "orphan"))
        if not child["metadata"].get("ownerReferences"):
            break
        time.sleep(0.5)
    assert not child["metadata"].get("ownerReferences")

    missing = probe.fails("delete", cm_path(ns, "never-existed"), "Background")
    assert missing["http_status"] == 404 and missing["reason"] == "NotFound"


def test_server_side_apply(probe, ns):
    desired = configmap("applied", data={"owner": "gcluster", "size": "1"})
    first = probe.ok("apply", cm_path(ns, "applied"), "-", "manager=gcluster-test", body=desired)
    again = probe.ok("apply", cm_path(ns, "applied"), "-", "manager=gcluster-test", body=desired)
    # Idempotent: applying the same object again changes nothing, not even the version.
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    managers = [m["manager"] for m in again["metadata"]["managedFields"]]
    assert managers == ["gcluster-test"]

    # Another manager changing an owned field conflicts, unless it forces.
    other = configmap("applied", data={"size": "2"})
    conflict = probe.fails("apply", cm_path(ns, "applied"), "-", "manager=someone-else",
                           body=other)
    assert conflict["http_status"] == 409 and conflict["reason"] == "Conflict"
    assert "data.size" in conflict["error"] and "gcluster-test" in conflict["error"]
    assert conflict["error"].count("data.size") == 1  # the cause is not repeated
    dry = probe.ok("apply", cm_path(ns, "applied"), "-", "manager=someone-else", "force",
                   "dry-run", body=other)
    assert dry["data"]["size"] == "2"
    assert probe.ok("get", cm_path(ns, "applied"))["data"]["size"] == "1"
    forced = probe.ok("apply", cm_path(ns, "applied"), "-", "manager=someone-else", "force",
                      body=other)
    assert forced["data"]["size"] == "2"

    patched = probe.ok("patch", cm_path(ns, "applied"), "-", body={"data": {"extra": "x"}})
    assert patched["data"]["extra"] == "x" and patched["data"]["owner"] == "gcluster"


def test_http2_connection_reuse_and_redaction(probe, ns):
    summary, stderr = probe.run("list", cm_path(ns), "limit=1", verbose=2)
    assert summary["ok"], summary
    traces = [l for l in stderr.splitlines() if " -> " in l]
    assert len(traces) == summary["requests"] >= 2
    assert all("HTTP/2" in l for l in traces), stderr
    # Whatever credential the kubeconfig holds (testenv's: a client key) never reaches the trace.
    text = Path(probe.kubeconfig).read_text()
    secrets = [line.split(":", 1)[1].strip() for line in text.splitlines()
               if line.strip().startswith(("token:", "client-key-data:", "password:"))]
    assert secrets and all(len(secret) > 8 for secret in secrets), "no credential to look for"
    for secret in secrets:
        assert secret not in stderr
    assert "Authorization: Bearer " not in stderr.replace("Bearer <redacted>", "")


def probe_lines(probe, *args, verbose=0):
    """Runs a streaming command: (summary, [event lines], stderr)."""
    proc = subprocess.run(probe.argv(*args, verbose=verbose), capture_output=True, text=True,
                          timeout=60)
    lines = [json.loads(l) for l in proc.stdout.splitlines() if l.strip()]
    assert lines, proc.stderr
    return lines[-1], lines[:-1], proc.stderr


def wait_for_running_pod(probe, ns, name, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = probe.ok("get", f"/api/v1/namespaces/{ns}/pods/{name}")
        if pod.get("status", {}).get("phase") == "Running":
            return pod
        time.sleep(1)
    pytest.fail(f"pod {name} did not run within {timeout} s")


def test_pod_logs(probe, ns):
    nodes = probe.ok("list", "/api/v1/nodes")["names"]
    assert nodes, "testenv starts kwok nodes, but the API server lists none"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "logger"},
           "spec": {"containers": [{"name": "main", "image": "busybox"},
                                   {"name": "side", "image": "busybox"}],
                    "tolerations": [{"operator": "Exists"}]}}
    probe.ok("create", f"/api/v1/namespaces/{ns}/pods", "-", body=pod)
    wait_for_running_pod(probe, ns, "logger")

    # Both containers at once, whole lines, each attributed to its container.
    summary, stdout, stderr = probe_lines(probe, "logs", f"{ns}/logger/main", f"{ns}/logger/side")
    assert summary["ok"], (summary, stderr)
    by_container = {0: [], 1: []}
    for line in stdout:
        by_container[line["index"]].append(line["line"])
    assert by_container[0] == FAKE_LOG_LINES and by_container[1] == FAKE_LOG_LINES
    assert summary["result"]["lines"] == 2 * len(FAKE_LOG_LINES)

    tail, _, _ = probe_lines(probe, "logs", f"{ns}/logger/main", "tail=1", "timestamps")
    assert tail["ok"] and tail["result"]["lines"] == 1

    # Following: the server keeps the streams open (the fake containers never end); the caller
    # ends them after 3 s, having read every line of both.
    summary, stdout, stderr = probe_lines(probe, "logs", f"{ns}/logger/main", f"{ns}/logger/side",
                                          "follow", "for=3", verbose=1)
    assert summary["ok"], (summary, stderr)
    assert summary["result"]["stopped_by_caller"], summary
    for index in (0, 1):
        assert [l["line"] for l in stdout if l["index"] == index] == FAKE_LOG_LINES, stdout
    traces = [l for l in stderr.splitlines() if "/log?" in l and " -> 200 OK" in l]
    assert len(traces) == 2 and all("HTTP/2" in l for l in traces), stderr

    # A container that does not exist: the real server's message, naming it.
    bad = probe.fails("logs", f"{ns}/logger/nope")
    assert bad["http_status"] == 400
    assert "nope" in bad["error"]
