"""Hostile server text, secrets and oversized or endless answers.

A scripted HTTPS server (test_server.py, in tests/unit/support/) plays an API server that puts escape
sequences, bells and carriage returns in its errors and echoes the request's Authorization header
back; testenv holds an Event with the same in its reason and message. Nothing of it may reach the
output raw (text, -v and -vv), and the bearer token never. Passwords in the server's and the
proxy's URL are never printed. A Status body over 1 MiB gives its own message; an endless list
ends with a clear message and bounded memory.
"""

import json
import os
import ssl
import subprocess
import sys
import time
import urllib.request

import pytest

from faults import CONTROL, SUSPENDED_JOBSET, kubectl_apply, record
from gcluster_cli import CLUSTER, GCLUSTER, REPO

TOKEN = "tok-0123456789-hostile-SECRET"
JOBSETS = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"
HOSTILE = "\x1b[2J\x1b]0;owned\x07bell\x07 carriage\rreturn \u009b31m"

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: scripted
  cluster:
    server: {server}
    certificate-authority: {ca}
{proxy}contexts:
- name: scripted
  context: {{cluster: scripted, user: scripted}}
current-context: scripted
users:
- name: scripted
  user:
    token: {token}
"""


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


class Scripted:
    """The scripted server and a kubeconfig for it."""

    def __init__(self, tmp):
        self.tmp = tmp
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-keyout", str(tmp / "server.key"), "-out", str(tmp / "server.pem"),
                "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1")
        port_file = tmp / "port"
        self.proc = subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "unit" / "support" / "test_server.py"), "--cert",
             str(tmp / "server.pem"), "--key", str(tmp / "server.key"), "--port-file",
             str(port_file), "--lifetime", "600"])
        deadline = time.monotonic() + 30
        while not port_file.exists():
            assert time.monotonic() < deadline, "the scripted server did not start"
            time.sleep(0.1)
        self.port = int(port_file.read_text())
        self.url = f"https://127.0.0.1:{self.port}"
        self.ssl = ssl.create_default_context(cafile=str(tmp / "server.pem"))

    def kubeconfig(self, server=None, proxy=None):
        path = self.tmp / f"kubeconfig-{time.monotonic_ns()}"
        path.write_text(KUBECONFIG.format(
            server=server or self.url, ca=self.tmp / "server.pem", token=TOKEN,
            proxy=f"    proxy-url: {proxy}\n" if proxy else ""))
        path.chmod(0o600)
        return path

    def control(self, path, doc=None):
        data = None if doc is None else json.dumps(doc).encode()
        req = urllib.request.Request(self.url + path, data=data, method="POST" if data else "GET")
        with urllib.request.urlopen(req, context=self.ssl, timeout=30) as r:
            return r.read()

    def script(self, doc):
        self.control("/_test/reset", {})
        self.control("/_test/script", doc)

    def gcluster(self, kubeconfig, *args, measure=False):
        """gcluster ARGS (with its peak RSS in kB when `measure`): (process, rss)."""
        argv = [str(GCLUSTER), *args, "--kubeconfig", str(kubeconfig)]
        env = {**os.environ, "HOME": str(self.tmp)}
        if not measure:
            return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300), 0
        # A process of its own whose one child is gcluster: its children's peak RSS is gcluster's.
        wrapper = ("import resource, subprocess, sys\n"
                   "p = subprocess.run(sys.argv[1:])\n"
                   "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
                   "print(peak, file=sys.stderr)\n"
                   "sys.exit(p.returncode)\n")
        proc = subprocess.run([sys.executable, "-c", wrapper, *argv], capture_output=True,
                              text=True, env=env, timeout=300)
        lines = proc.stderr.rstrip("\n").split("\n")
        return subprocess.CompletedProcess(argv, proc.returncode, proc.stdout,
                                           "\n".join(lines[:-1])), int(lines[-1])

    def close(self):
        self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture
def scripted(tmp_path):
    s = Scripted(tmp_path)
    yield s
    s.close()


def clean(*texts, secrets=(TOKEN,)):
    """"" when no text holds a control character (but newline and tab) or a secret, else what
    was found."""
    for text in texts:
        bad = CONTROL.search(text) or ("\u009b" in text and "\u009b")
        if bad:
            return f"control character {bad if isinstance(bad, str) else bad.group()!r}"
        for secret in secrets:
            if secret in text:
                return f"{secret} printed"
    return ""


def test_hostile_server_errors(scripted):
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 400,
              "reason": "BadRequest" + HOSTILE,
              "message": f"{HOSTILE} you sent Authorization: Bearer {TOKEN}",
              "details": {"causes": [{"field": "x" + HOSTILE, "message": f"token {TOKEN}"}]}}
    answers = {
        "Status with escape sequences and the echoed Authorization header": {
            "status": 400, "json": status},
        "plain-text error body with escape sequences and the token": {
            "status": 403, "body": f"proxy says {HOSTILE} Authorization: Bearer {TOKEN}\nmore"},
        "a JobSet whose status texts hold escape sequences": {
            "json": {"kind": "JobSetList", "metadata": {}, "items": [{
                "metadata": {"name": "evil", "namespace": "default",
                             "creationTimestamp": "2026-01-01T00:00:00Z",
                             "labels": {"gcluster.google.com/workload": "evil"}},
                "status": {"conditions": [{"type": "Failed", "status": "True",
                                           "reason": "Bad" + HOSTILE,
                                           "message": HOSTILE}]}}]}},
    }
    kubeconfig = scripted.kubeconfig()
    for what, answer in answers.items():
        outcomes = []
        for output in ("table", "wide", "json", "yaml"):
            for verbose in ((), ("-v",), ("-vv",)):
                scripted.script({f"GET {JOBSETS}": [{**answer, "repeat": True}]})
                proc, _ = scripted.gcluster(kubeconfig, "job", "list", "-o", output, *verbose)
                problem = clean(proc.stdout, proc.stderr)
                outcomes.append(f"exit {proc.returncode}, " + (problem.upper() if problem else
                                                               "nothing raw, no secret"))
                assert not problem, f"{what}, -o {output} {verbose}: {problem}\n" \
                    f"{proc.stdout}\n{proc.stderr}"
                if answer.get("status", 200) != 200:
                    assert proc.returncode == 1 and "\\x1b[2J" in proc.stderr, proc.stderr
                    assert "<redacted>" in proc.stderr, proc.stderr
        record(f"job list -o table/wide/json/yaml, plain/-v/-vv: {what}", outcomes)


def test_passwords_in_urls_are_never_printed(scripted):
    outcomes = []
    cases = {
        "server URL with a password": scripted.kubeconfig(
            server="https://admin:server-pass-SECRET@127.0.0.1:1"),
        "proxy-url with a password": scripted.kubeconfig(
            proxy="http://admin:proxy-pass-SECRET@127.0.0.1:1"),
    }
    for what, kubeconfig in cases.items():
        for verbose in ((), ("-v",), ("-vv",)):
            proc, _ = scripted.gcluster(kubeconfig, "job", "list", *verbose)
            problem = clean(proc.stdout, proc.stderr,
                            secrets=(TOKEN, "server-pass-SECRET", "proxy-pass-SECRET"))
            outcomes.append(f"exit {proc.returncode}, " + (problem.upper() if problem else
                                                           "cannot reach, no password"))
            assert not problem, f"{what} {verbose}: {problem}\n{proc.stderr}"
            assert proc.returncode == 1 and "127.0.0.1:1" in proc.stderr, proc.stderr
    record("cannot reach: passwords in server / proxy-url, plain/-v/-vv", outcomes)


def test_huge_status_on_a_list(scripted):
    huge = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500,
            "reason": "InternalError", "message": "etcd is on fire",
            "details": {"causes": [{"message": "y" * (3 << 20)}]}}
    scripted.script({f"GET {JOBSETS}": [{"status": 500, "json": huge, "repeat": True}]})
    proc, _ = scripted.gcluster(scripted.kubeconfig(), "job", "list")
    ok = (proc.returncode == 1 and "etcd is on fire" in proc.stderr
          and "larger than 1024 KiB and was cut" in proc.stderr and "512 MiB" not in proc.stderr)
    record("job list, a 3 MiB Status body", [f"exit {proc.returncode}, "
                                            + ("its message, said to be cut" if ok else
                                               "WRONG MESSAGE")])
    assert ok, proc.stderr[-2000:]


def test_endless_lists_end_with_bounded_memory(scripted):
    head = '{"kind":"JobSetList","apiVersion":"jobset.x-k8s.io/v1alpha2","metadata":{},"items":['
    row = ('{"metadata":{"name":"r","namespace":"default",'
           '"creationTimestamp":"2026-01-01T00:00:00Z",'
           '"labels":{"gcluster.google.com/workload":"r"}}},')
    cases = {
        "endless rows": ({"chunks": [{"data": head}], "forever": row * 500}, "-o json",
                         "more than 1000000 jobs match"),
        "one endless row": ({"chunks": [{"data": head + '{"metadata":{"name":"'}],
                             "forever": "a" * 65536}, "-o table", "larger than 64 MiB"),
    }
    outcomes = []
    for what, (answer, output, message) in cases.items():
        scripted.script({f"GET {JOBSETS}": [{**answer, "repeat": True}]})
        proc, rss = scripted.gcluster(scripted.kubeconfig(), "job", "list", *output.split(),
                                      measure=True)
        good = proc.returncode == 1 and message in proc.stderr and not proc.stdout
        outcomes.append(f"{what}, {output}: exit {proc.returncode}, "
                        f"{'the message' if good else 'WRONG'}, peak RSS {rss // 1024} MB")
        assert good, proc.stderr[-2000:]
        assert rss < 1024 * 1024, f"{what}: peak RSS {rss} kB"
    record("job list, an endless answer", outcomes)


HOSTILE_EVENT = """
apiVersion: v1
kind: Event
metadata:
  name: hostile-text.evil
  namespace: default
involvedObject:
  apiVersion: jobset.x-k8s.io/v1alpha2
  kind: JobSet
  name: hostile-text
  namespace: default
  uid: {uid}
type: Warning
reason: {reason}
message: {message}
count: 3
firstTimestamp: "{now}"
lastTimestamp: "{now}"
source:
  component: hostile
"""

def test_hostile_event_text_in_inspect_and_why(env, tmp_path):
    kubectl_apply(env, SUSPENDED_JOBSET.format(name="hostile-text", ns="default"))
    try:
        uid = env.cli.kubectl_json("get", "jobset", "hostile-text")["metadata"]["uid"]
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        kubectl_apply(env, HOSTILE_EVENT.format(uid=uid, now=now, reason=json.dumps("Evil" + HOSTILE),
                                   message=json.dumps(f"{HOSTILE} token {TOKEN}")))
        outcomes = []
        for command in (("inspect",), ("why", "--evidence"), ("inspect", "--format", "json")):
            for verbose in ((), ("-vv",)):
                proc = env.cli.gcluster("job", command[0], "hostile-text", *CLUSTER,
                                        *command[1:], *verbose)
                problem = clean(proc.stdout, proc.stderr, secrets=())
                outcomes.append(f"exit {proc.returncode}, " + (problem.upper() if problem else
                                                               "nothing raw"))
                assert not problem, f"{command} {verbose}: {problem}\n{proc.stdout}"
        inspected = env.cli.gcluster("job", "inspect", "hostile-text", *CLUSTER).stdout
        assert "\\x1b[2J" in inspected, inspected  # the warning is shown, escaped
        record("job inspect / why / inspect --format json, plain/-vv: an Event with escape sequences",
               outcomes)
    finally:
        env.cli.kubectl("delete", "event", "hostile-text.evil", "--ignore-not-found",
                        check=False)
        env.cli.delete_job("hostile-text")
