"""Helpers of the fault tier (see conftest.py): the environment seen from the tests, gcluster
through the fault proxy, line-numbered fake logs, and the record of tries and outcomes."""

import base64
import json
import os
import re
import selectors
import subprocess
import threading
import time
from pathlib import Path

import pytest

from fault_proxy import FaultProxy
from gcluster_cli import CLUSTER, GCLUSTER, REPO, Cli

TESTENV = REPO / "testenv"

RESULTS = []  # (scenario, tries, outcomes)
# Any control character but newline and tab in gcluster's output is a defect (escape sequences
# or bells from server text), and so is anything of the client key.
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def record(scenario, outcomes):
    """Adds a scenario's row: how many tries, and how each went."""
    RESULTS.append((scenario, len(outcomes), outcomes))


class Env:
    """The session's testenv seen from the fault tests: its state directory and API server."""

    def __init__(self, testenv):
        self.wait_for = testenv.wait_for
        self.kubeconfig = Path(testenv.kubeconfig)
        self.root = self.kubeconfig.parent
        self.state = json.loads((self.root / "state.json").read_text())
        self.api_port = self.state["ports"]["apiserver"]
        self.cli = Cli(self.kubeconfig, self.root)  # kubectl straight to the API server

    def apiserver(self, action):
        proc = subprocess.run([str(TESTENV / "apiserver"), action], capture_output=True,
                              text=True, timeout=180,
                              env={**os.environ, "GCLUSTER_TESTENV_DIR": str(self.root)})
        assert proc.returncode == 0, f"testenv/apiserver {action}: {proc.stderr}"

    def restart_apiserver(self, down_seconds=0, kill=False):
        """Stops the API server (SIGTERM, or SIGKILL: a crash), waits, starts it again."""
        self.apiserver("kill" if kill else "stop")
        time.sleep(down_seconds)
        self.apiserver("start")


class Proxied:
    """A fault proxy in front of the API server, and gcluster talking through it."""

    def __init__(self, env, home):
        self.env = env
        self.proxy = FaultProxy(env.api_port)
        text = env.kubeconfig.read_text()
        text = text.replace(f"https://127.0.0.1:{env.api_port}",
                            f"https://127.0.0.1:{self.proxy.port}")
        self.kubeconfig = Path(home) / "kubeconfig-proxied"
        self.kubeconfig.write_text(text)
        self.kubeconfig.chmod(0o600)
        self.cli = Cli(self.kubeconfig, home)
        # A run of the client key's own base64 (not its PEM header, which every key shares).
        key = base64.b64decode(re.search(r"client-key-data: (\S+)", text).group(1)).decode()
        self.secret = "".join(line for line in key.splitlines() if "-----" not in line)[100:148]

    def start(self, *args):
        """gcluster ARGS through the proxy, running in the background."""
        return subprocess.Popen([str(GCLUSTER), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=self.cli.env())

    def run(self, *args, timeout=180):
        return self.cli.gcluster(*args, timeout=timeout)

    def assert_clean(self, *texts):
        """No control characters (but newlines and tabs) and no piece of the key in output."""
        for text in texts:
            bad = CONTROL.search(text or "")
            assert not bad, f"control character {bad.group()!r} in output:\n{text[-2000:]}"
            assert self.secret not in (text or ""), "the client key reached the output"
            assert "PRIVATE KEY" not in (text or "")


def remove_jobs(env, names, timeout=120):
    """Deletes each JobSet, its Jobs and its pods by label, and waits (bounded) until the pods
    are gone. Left to the controller-manager, the Jobs and pods can outlive the test by minutes
    after an API server restart, while its garbage collector and Job controller wait for their
    watches to sync again."""
    for name in names:
        env.cli.delete_job(name)
        selector = f"jobset.sigs.k8s.io/jobset-name={name}"
        env.cli.kubectl("delete", "jobs", "-l", selector, "--ignore-not-found", "--wait=false",
                        check=False)
        env.cli.kubectl("delete", "pods", "-l", selector, "--ignore-not-found", "--wait=false",
                        "--grace-period=0", "--force", check=False)

    def all_gone():
        pods = [p for n in names for p in env.cli.pods(n)]
        for p in pods:
            # The Job controller's job-tracking finalizer: after an API server restart the
            # controller can take minutes to re-sync and release the pods of a deleted Job.
            if p["metadata"].get("deletionTimestamp") and p["metadata"].get("finalizers"):
                env.cli.kubectl("patch", "pod", p["metadata"]["name"], "--type=merge", "-p",
                                '{"metadata":{"finalizers":null}}', check=False)
        left = [f"{p['metadata']['name']} ({p['status'].get('phase')}, deleting since "
                f"{p['metadata'].get('deletionTimestamp', 'never')}, finalizers "
                f"{p['metadata'].get('finalizers', [])})" for p in pods]
        if left:
            raise AssertionError("still there: " + ", ".join(left))  # reported if time runs out
        return True

    if names:
        env.wait_for(all_gone, timeout=timeout, what="the pods of " + ", ".join(names) +
                     " to be gone")


def wait_for_first_line(process, timeout):
    """Waits (bounded) until a background gcluster prints its first line of output, so that a
    fault injected next hits an open stream and not the requests before it. The line read is
    kept for finish()."""
    deadline = time.monotonic() + timeout
    head, ended = b"", False
    # os.read, not readline: communicate() later reads the descriptor itself, so nothing may
    # sit in the text wrapper's buffer.
    with selectors.DefaultSelector() as sel:
        sel.register(process.stdout, selectors.EVENT_READ)
        while b"\n" not in head and time.monotonic() < deadline:
            if sel.select(timeout=max(0.0, deadline - time.monotonic())):
                chunk = os.read(process.stdout.fileno(), 65536)
                ended = not chunk  # gcluster ended before printing a line; finish() reports it
                head += chunk
                if ended:
                    break
    process.head = head.decode()
    if b"\n" in head or ended:
        return
    process.kill()
    _, err = process.communicate()
    pytest.fail(f"gcluster printed no line within {timeout}s\nstderr:\n{err[-3000:]}")


def finish(process, timeout):
    """Waits (bounded) for a background gcluster and returns (exit code, stdout, stderr)."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"gcluster did not end within {timeout}s\nstderr:\n{err[-3000:]}")
    return process.returncode, getattr(process, "head", "") + out, err


def stamp(ns):
    """A CRI log time stamp (RFC 3339 with nanoseconds, UTC) for time.time_ns() value ns."""
    seconds, nanos = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanos:09d}Z"


class NumberedLog:
    """Line-numbered CRI log lines for the numbered-log container of a job: line i reads
    "line <i, 6 digits> ...". Several lines share each time stamp (as a burst of output does),
    and every seventh line goes to stderr, so a resume must get both right."""

    PER_STAMP = 3

    def __init__(self, env, name):
        self.name = name
        logs = env.root / "fake-logs"
        self.path = logs / f"numbered-{name}.log"
        self.path.write_text("")
        link = logs / f".numbered-{name}.link"
        link.unlink(missing_ok=True)
        link.symlink_to(self.path.name)
        os.replace(link, logs / "numbered.log")
        self.count = 0
        self.lock = threading.Lock()
        self.writer = None
        self.stopping = threading.Event()

    def append(self, n, at_ns=None, step_ns=1_000_000):
        """n more lines, stamped from at_ns (default: now) in steps, PER_STAMP to a stamp."""
        with self.lock:
            t = at_ns if at_ns is not None else time.time_ns()
            lines = []
            for _ in range(n):
                i = self.count
                if i % self.PER_STAMP == 0 and i:
                    t += step_ns
                stream = "stderr" if i % 7 == 6 else "stdout"
                lines.append(f"{stamp(t)} {stream} F line {i:06d} of the numbered log\n")
                self.count += 1
            with open(self.path, "a") as f:
                f.write("".join(lines))

    def start_writing(self, lines_per_second):
        """Appends lines in the background, a few at a time, stamped with the current time."""
        def write():
            while not self.stopping.wait(self.PER_STAMP / lines_per_second):
                self.append(self.PER_STAMP)
        self.writer = threading.Thread(target=write, daemon=True)
        self.writer.start()

    def stop_writing(self):
        self.stopping.set()
        if self.writer:
            self.writer.join(timeout=10)


def check_lines(out, expected):
    """Every numbered line exactly once and in order: a description of what is wrong, or ""."""
    numbers = [int(m.group(1)) for m in re.finditer(r"^line (\d{6}) of the numbered log$", out,
                                                    re.M)]
    if numbers == list(range(expected)):
        return ""
    seen = {}
    for n in numbers:
        seen[n] = seen.get(n, 0) + 1
    missing = [n for n in range(expected) if n not in seen]
    repeated = [n for n, c in seen.items() if c > 1]
    order = "" if numbers == sorted(numbers) else ", out of order"
    return (f"{len(numbers)} of {expected} lines, {len(missing)} missing (first {missing[:5]}), "
            f"{len(repeated)} repeated (first {repeated[:5]}){order}")


NUMBERED_JOBSET = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: {name}
spec:
  replicatedJobs:
  - name: main-job
    replicas: 1
    template:
      spec:
        completionMode: Indexed
        parallelism: 1
        completions: 1
        backoffLimit: 0
        template:
          spec:
            restartPolicy: Never
            nodeSelector:
              cloud.google.com/gke-nodepool: cpu-np
            containers:
            - name: numbered-log  # testenv serves fake-logs/numbered.log as its log
              image: registry.example/numbered:1
              resources:
                requests:
                  cpu: "1"
"""


def logs_args(name, *extra):
    return ("job", "logs", name, *CLUSTER, *extra)


# A JobSet that never runs (suspended, so no pods), listed by job list (it has the label).
SUSPENDED_JOBSET = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: {name}
  namespace: {ns}
  labels:
    gcluster.google.com/workload: {name}
spec:
  suspend: true
  replicatedJobs:
  - name: main-job
    replicas: 1
    template:
      spec:
        parallelism: 1
        completions: 1
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: registry.example/idle:1
"""


def kubectl_apply(env, text):
    """kubectl apply of the YAML documents in text, straight to the API server."""
    proc = subprocess.run(["kubectl", "apply", "-f", "-"], input=text, capture_output=True,
                          text=True, env=env.cli.env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
