"""The scale scenario (`bench/run --scale`, `make bench-scale`; bench/README.md, "Scale").

Every command on the small testenv (testenv/nodepools.yaml, 13 nodes) and the large one
(testenv/nodepools-scale.yaml, 1,994 nodes), on Pathways jobs of 1, 16 and 64 slices of v6e-64
(16, 256 and 1,024 workers + the head), beside kubectl doing the same reads and curl fetching the
same objects with the same credentials (the floor). Per command and tool: median wall time, peak
RSS (GNU time), and from one extra counted run the API requests (`gcluster -v`, `kubectl -v=6`
request lines) and the bytes received, counted by a TCP proxy between the tool and the API server
(TLS end to end: the proxy only relays and counts). The output is the cost-growth table and the
ratios issue 17's "Done when" names.
"""

import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import cluster
import harness
from harness import TIME, BenchError
from scenarios import CLUSTER_FLAGS, COMMAND, GCS, IMAGE

HERE = Path(__file__).resolve().parent
SCALE_NODEPOOLS = cluster.TESTENV / "nodepools-scale.yaml"
SMALL_NODEPOOLS = cluster.TESTENV / "nodepools.yaml"
HOSTS_PER_SLICE = 16  # v6e-64: 8x8 chips, 4 per host
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
EXIT_CODE_ANNOTATION = "testenv.gcluster.dev/exit-code"
START_TIMEOUT = 900  # 1,025 pods admitted, scheduled and Running on 2 shared cores: ~2 min
# What every container of a job started here logs: FAKE_LOG_PAYLOAD-byte lines (the last one says
# so, so a test of completeness can look for it).
LAST_LINE_MARK = "bench scale log end"


def log(message):
    print(f"bench: {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Counting bytes and requests


class ByteProxy:
    """A TCP relay on 127.0.0.1 in front of the API server that counts the bytes each way; TLS
    passes through untouched (the server's certificate names 127.0.0.1, whatever the port)."""

    def __init__(self, port):
        self.upstream = ("127.0.0.1", port)
        self.received = 0  # server -> tool
        self.sent = 0
        self.connections = 0
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(256)
        self.port = self.listener.getsockname()[1]
        self.threads = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            with self.lock:
                self.connections += 1
            for src, dst, field in ((client, server, "sent"), (server, client, "received")):
                t = threading.Thread(target=self._pump, args=(src, dst, field), daemon=True)
                t.start()
                self.threads.append(t)

    def _pump(self, src, dst, field):
        try:
            while chunk := src.recv(1 << 16):
                with self.lock:
                    setattr(self, field, getattr(self, field) + len(chunk))
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.listener.close()
        for t in self.threads:
            t.join(timeout=10)


def proxied_kubeconfig(kubeconfig, port, path):
    text = Path(kubeconfig).read_text()
    Path(path).write_text(re.sub(r"(server: https://127\.0\.0\.1:)\d+", rf"\g<1>{port}", text))
    os.chmod(path, 0o600)
    return path


def api_port(kubeconfig):
    return int(re.search(r"server: https://127\.0\.0\.1:(\d+)", Path(kubeconfig).read_text())[1])


TRACE_FLAG = {"gcluster": "-v", "kubectl": "-v=6"}


def run_counted(cl, tool, argvs, work, timeout=900, trace=None):
    """One run of each command through a ByteProxy with request tracing on: requests (trace
    lines), MiB received, and the run's time and peak RSS (the trace included). The traces go
    to the file `trace` when given (where the time goes: every request with its duration)."""
    requests, received, seconds, rss, lines, connections = 0, 0, 0.0, 0, 0, 0
    for argv in argvs:
        proxy = ByteProxy(api_port(cl.kubeconfig))
        try:
            env = dict(cl.env(), KUBECONFIG=str(proxied_kubeconfig(
                cl.kubeconfig, proxy.port, work / "proxied-kubeconfig")))
            flag = [TRACE_FLAG[tool]] if tool in TRACE_FLAG else []
            s, stderr = run_once([*argv, *flag], env, timeout)
        finally:
            proxy.close()
        if trace:
            with open(trace, "a") as f:
                f.write(f"$ {' '.join(map(str, argv))} {' '.join(flag)}\n{stderr}\n")
        requests += sum(1 for line in stderr.splitlines()
                        if tool in harness.REQUEST_TIME and harness.REQUEST_TIME[tool].search(line))
        received += proxy.received
        connections += proxy.connections
        seconds += s.seconds
        rss = max(rss, s.rss_kib)
        lines += s.lines
    return {"requests": requests, "mib_received": received / 2**20, "seconds": seconds,
            "rss_kib": rss, "lines": lines, "connections": connections}


def run_once(argv, env, timeout=900):
    """argv under /usr/bin/time -v: (Sample with stdout's line count, stderr text)."""
    with tempfile.NamedTemporaryFile(prefix="bench-time-") as report, \
            tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([TIME, "-v", "-o", report.name, *map(str, argv)], env=env,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        finished = harness.wait_with_watchdog(proc, timeout)
        seconds = time.perf_counter() - t0
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        if not finished or proc.returncode != 0:
            raise BenchError(f"`{' '.join(map(str, argv[:5]))} ...` "
                             f"{'timed out' if not finished else f'exited {proc.returncode}'}:\n"
                             f"{stderr[-3000:]}")
        out.seek(0)
        lines = sum(chunk.count(b"\n") for chunk in iter(lambda: out.read(1 << 20), b""))
        rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                            Path(report.name).read_text())[1])
    return harness.Sample(seconds, rss, 0, lines), stderr


# ---------------------------------------------------------------------------------------------
# Environments and jobs


def write_fake_log(path, lines):
    prefix = "2026-01-01T00:00:00.000000000Z stdout F "
    with open(path, "w") as f:
        for i in range(lines):
            text = (f"bench scale log line {i:06d} " if i < lines - 1 else LAST_LINE_MARK + " ")
            f.write(prefix + text + "x" * (cluster.FAKE_LOG_PAYLOAD - 1 - len(text)) + "\n")


def start_env(name, nodepools, fake_log, work):
    state_dir = cluster.TESTENV_CACHE / f"{cluster.STATE_PREFIX}{os.getpid()}-{name}"
    log(f"starting the {name} control plane ({nodepools.name}) in {state_dir}")
    t0 = time.monotonic()
    kubeconfig = cluster.testenv_up(state_dir, nodepools, fake_log)
    log(f"{name} control plane up in {time.monotonic() - t0:.0f}s")
    home = work / f"home-{name}"
    home.mkdir(exist_ok=True)
    cl = cluster.Cluster(kubeconfig, home, work)
    cl.kubectl("apply", "--server-side", "--field-manager=gcluster-bench", "-f",
               str(HERE / "kueue-scale.yaml"))
    return state_dir, cl


class Scale:
    def __init__(self, ctx, slices, log_lines, trace_dir):
        self.ctx = ctx
        self.trace_dir = trace_dir
        self.timings = {}  # seconds per part of the run
        self.sizes = slices
        self.log_lines = log_lines
        self.rows = []  # one per (command, cluster, job size)
        self.work = ctx.work

    # -- measuring ---------------------------------------------------------------------------

    def trace(self, command, where, job, tool):
        name = re.sub(r"[^A-Za-z0-9]+", "-", f"{command} {where} {job} {tool}").strip("-")
        return self.trace_dir / f"{name}.txt"

    def measure(self, command, where, job, argvs, cl, counted=("gcluster", "kubectl"),
                metric="time", payload_lines=0):
        """argvs: tool -> list of argv (a sequence a user types in a row: time summed, RSS the
        largest). The tools alternate as in the other scenarios; then one counted run each."""
        log(f"{command} on {where}, {job}")

        def run_one(tool, i):
            samples = [run_once(argv, cl.env())[0] for argv in argvs[tool]]
            return harness.Sample(sum(s.seconds for s in samples), max(s.rss_kib for s in samples),
                                  0, sum(s.lines for s in samples))

        samples = harness.alternate(list(argvs), self.ctx.iterations, self.ctx.warmup, run_one)
        row = {"command": command, "cluster": where, "job": job, "metric": metric, "tools": {}}
        for tool, runs in samples.items():
            entry = {"median_s": statistics.median(s.seconds for s in runs),
                     "median_rss_kib": statistics.median(s.rss_kib for s in runs),
                     "lines": runs[-1].lines, "argv": [" ".join(map(str, a)) for a in argvs[tool]]}
            if tool in counted:
                counted_run = run_counted(cl, tool, argvs[tool], self.work,
                                          trace=self.trace(command, where, job, tool))
                entry.update({k: v for k, v in counted_run.items()
                              if k in ("requests", "mib_received", "connections")})
            if payload_lines:
                entry["mib_s"] = payload_lines * cluster.FAKE_LOG_PAYLOAD / 2**20 / entry["median_s"]
            row["tools"][tool] = entry
        self.rows.append(row)
        return row

    def measure_once(self, command, where, job, argv, cl):
        """A command that changes the cluster (cancel): one counted gcluster run is the sample."""
        log(f"{command} on {where}, {job}")
        c = run_counted(cl, "gcluster", [argv], self.work,
                        trace=self.trace(command, where, job, "gcluster"))
        self.rows.append({"command": command, "cluster": where, "job": job, "metric": "time",
                          "tools": {"gcluster": {"median_s": c["seconds"],
                                                 "median_rss_kib": c["rss_kib"],
                                                 "requests": c["requests"],
                                                 "mib_received": c["mib_received"],
                                                 "argv": [" ".join(map(str, argv))],
                                                 "runs": 1}}})

    # -- scenarios ---------------------------------------------------------------------------

    def submit_argv(self, name, compute, slices, *extra):
        return [self.ctx.gcluster, "job", "submit", "--name", name, *CLUSTER_FLAGS,
                "--compute-type", compute, "--num-slices", str(slices), "--pathways",
                "--pathways-gcs-location", GCS, "--command", COMMAND, "--image", IMAGE, *extra]

    def submit(self, cl, where):
        """The same 1-slice v6e-16 job on both clusters (the small pools exist in both), into the
        held queue: live, and --dry-run server; kubectl create -f (--dry-run=server) of the
        same manifest."""
        ns = "bench-submit"
        flags = ["--namespace", ns, "--queue", "bench-hold"]
        manifest = self.work / "submit.yaml"
        with open(manifest, "w") as out:
            subprocess.run(list(map(str, self.submit_argv("bsub", "v6e-16", 1, *flags,
                                                          "--dry-run-out", "-"))),
                           stdout=out, check=True, env=cl.env())
        self.measure("job submit --dry-run server", where, "v6e-16 x1", {
            "gcluster": [self.submit_argv("bsub", "v6e-16", 1, *flags, "--dry-run", "server")],
            "kubectl": [["kubectl", "create", "--dry-run=server", "-n", ns, "-f", manifest]]}, cl)
        counter = iter(range(10**6))

        def live(tool):
            """A fresh name on every run; kubectl's manifest is our --dry-run-out of it."""
            n = next(counter)
            argv = self.submit_argv(f"bsub-{tool[0]}-{n}", "v6e-16", 1, *flags)
            if tool == "gcluster":
                return argv
            path = self.work / f"submit-{n}.yaml"
            with open(path, "w") as out:
                subprocess.run(list(map(str, argv + ["--dry-run-out", "-"])), stdout=out,
                               check=True, env=cl.env())
            return ["kubectl", "create", "-n", ns, "-f", path]

        log(f"job submit (live) on {where}")

        def run_one(tool, i):
            s = run_once(live(tool), cl.env())[0]
            cl.delete_jobs_and_wait(ns)
            return s

        samples = harness.alternate(["gcluster", "kubectl"], self.ctx.iterations, self.ctx.warmup,
                                    run_one)
        row = {"command": "job submit (live)", "cluster": where, "job": "v6e-16 x1",
               "metric": "time", "tools": {}}
        for tool, runs in samples.items():
            c = run_counted(cl, tool, [live(tool)], self.work,
                            trace=self.trace("job submit live", where, "", tool))
            cl.delete_jobs_and_wait(ns)
            row["tools"][tool] = {"median_s": statistics.median(s.seconds for s in runs),
                                  "median_rss_kib": statistics.median(s.rss_kib for s in runs),
                                  "requests": c["requests"], "mib_received": c["mib_received"]}
        self.rows.append(row)

    def job_commands(self, cl, where, slices):
        """Start a job of `slices` v6e-64 slices with --await-job-completion (counted, in the
        background), then inspect, list, logs --all, logs -f --all; finish every pod (exit 0) so
        the await ends; then cancel --wait."""
        name = f"scale-{slices}"
        job = f"v6e-64 x{slices} ({slices * HOSTS_PER_SLICE + 1} pods)"
        pods = 1 + slices * HOSTS_PER_SLICE
        awaiting = {}
        waiter = threading.Thread(target=lambda: awaiting.update(run_counted(
            cl, "gcluster", [self.submit_argv(name, "v6e-64", slices, "--await-job-completion")],
            self.work, timeout=3 * START_TIMEOUT,
            trace=self.trace("await", where, job, "gcluster"))), daemon=True)
        waiter.start()
        cl.wait_for(f"{pods} running pods of {name}", lambda: cl.running_pods(name) == pods,
                    timeout=START_TIMEOUT, interval=5)
        uid = cl.kubectl_json("get", "jobset", name)["metadata"]["uid"]
        api = cl.api_url()
        curl = ["curl", "-sS", "--fail", "--http2", *cl.api_curl_auth()]
        pod_list = cl.kubectl_json("get", "pods", "-l", f"{JOBSET_LABEL}={name}")["items"]
        containers = [(p["metadata"]["name"], c["name"]) for p in pod_list
                      for c in p["spec"].get("initContainers", []) + p["spec"]["containers"]]
        selector = f"{JOBSET_LABEL}%3D{name}"
        reads = [f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets/{name}",
                 f"/api/v1/namespaces/default/pods?labelSelector={selector}",
                 "/api/v1/namespaces/default/events?fieldSelector=type%3DWarning",
                 f"/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads?labelSelector="
                 f"kueue.x-k8s.io%2Fjob-uid%3D{uid}"]

        def fetch(paths, parallel=False):
            argv = [*curl, *(["-Z", "--parallel-max", "100"] if parallel else [])]
            for p in paths:
                argv += ["-o", "/dev/null", api + p]
            return argv

        self.measure("job inspect", where, job, {
            "gcluster": [[self.ctx.gcluster, "job", "inspect", name, *CLUSTER_FLAGS]],
            "kubectl": [["kubectl", "get", "jobset", name, "-o", "yaml"],
                        ["kubectl", "get", "workloads.kueue.x-k8s.io", "-l",
                         f"kueue.x-k8s.io/job-uid={uid}", "-o", "yaml"],
                        ["kubectl", "get", "pods", "-l", f"{JOBSET_LABEL}={name}", "-o", "wide"],
                        ["kubectl", "get", "events", "--field-selector", "type=Warning"]],
            "curl": [fetch(reads)]}, cl)
        self.measure("job list", where, job, {
            "gcluster": [[self.ctx.gcluster, "job", "list", *CLUSTER_FLAGS]],
            "kubectl": [["kubectl", "get", "jobsets"]],
            "curl": [fetch(["/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets"])]}, cl)
        total_lines = len(containers) * self.log_lines
        logs_k = ["kubectl", "logs", "-l", f"{JOBSET_LABEL}={name}", "--all-containers",
                  "--max-log-requests=1100", "--prefix", "--tail=-1"]
        row = self.measure("job logs --all", where, job, {
            "gcluster": [[self.ctx.gcluster, "job", "logs", name, "--all", *CLUSTER_FLAGS]],
            "kubectl": [logs_k],
            "curl": [fetch([f"/api/v1/namespaces/default/pods/{p}/log?container={c}"
                            for p, c in containers], parallel=True)]},
            cl, metric="throughput", payload_lines=total_lines)
        for tool in ("gcluster", "kubectl"):
            row["tools"][tool]["every_line"] = row["tools"][tool]["lines"] >= total_lines
        self.follow(cl, where, job, name, total_lines)
        log(f"finishing the {pods} pods of {name} (exit 0) so --await-job-completion returns")
        # A pod the JobSet controller replaced meanwhile fails the whole command (NotFound);
        # annotating again covers its successor.
        cl.wait_for(f"every pod of {name} annotated to exit 0", lambda: cl.kubectl(
            "annotate", "pods", "--overwrite", "-l", f"{JOBSET_LABEL}={name}",
            f"{EXIT_CODE_ANNOTATION}=0", check=False, timeout=600).returncode == 0,
            timeout=900, interval=2)
        waiter.join(timeout=START_TIMEOUT)
        if waiter.is_alive() or not awaiting:
            raise BenchError(f"`job submit --await-job-completion` of {name} did not return")
        self.rows.append({"command": "job submit --await-job-completion", "cluster": where,
                          "job": job, "metric": "time", "tools": {"gcluster": {
                              "median_s": awaiting["seconds"],
                              "median_rss_kib": awaiting["rss_kib"],
                              "requests": awaiting["requests"],
                              "mib_received": awaiting["mib_received"], "runs": 1}}})
        self.measure_once("job cancel --wait", where, job,
                          [self.ctx.gcluster, "job", "cancel", name, "--wait", "--timeout", "600s",
                           *CLUSTER_FLAGS], cl)
        left = cl.kubectl_json("get", "pods", "-l", f"{JOBSET_LABEL}={name}")["items"]
        if left:
            raise BenchError(f"{len(left)} pods of {name} left after `job cancel --wait`")

    def follow(self, cl, where, job, name, total_lines):
        """logs -f --all until half of every container's lines arrived (bounded), both tools."""
        want = total_lines // 2
        log(f"job logs -f --all on {where}, {job}: until {want} lines")
        argvs = {"gcluster": [self.ctx.gcluster, "job", "logs", name, "--all", "-f",
                              *CLUSTER_FLAGS],
                 "kubectl": ["kubectl", "logs", "-f", "-l", f"{JOBSET_LABEL}={name}",
                             "--all-containers", "--max-log-requests=1100", "--prefix",
                             "--tail=-1"]}
        samples = harness.alternate(list(argvs), self.ctx.iterations, self.ctx.warmup,
                                    lambda tool, i: harness.run_until_lines(
                                        argvs[tool], cl.env(), want, timeout=600))
        row = {"command": "job logs -f --all (half)", "cluster": where, "job": job,
               "metric": "throughput", "tools": {}}
        for tool, runs in samples.items():
            median = statistics.median(s.seconds for s in runs)
            row["tools"][tool] = {"median_s": median,
                                  "median_rss_kib": statistics.median(s.rss_kib for s in runs),
                                  "mib_s": want * cluster.FAKE_LOG_PAYLOAD / 2**20 / median}
        self.rows.append(row)


# ---------------------------------------------------------------------------------------------
# Report


def fmt_time(seconds):
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def cells(entry, metric):
    if entry is None:
        return ["-"] * 4
    speed = (f"{entry['mib_s']:.1f} MiB/s" if metric == "throughput" and "mib_s" in entry
             else fmt_time(entry["median_s"]))
    if metric == "throughput" and "mib_s" in entry:
        speed += f" ({fmt_time(entry['median_s'])})"
    reqs = str(entry["requests"]) if "requests" in entry else "-"
    mib = f"{entry['mib_received']:.2f}" if "mib_received" in entry else "-"
    return [speed, reqs, mib, f"{entry['median_rss_kib'] / 1024:.1f}"]


def table(rows):
    header = ["command", "cluster", "job", "gcluster", "req", "MiB in", "RSS MiB", "kubectl",
              "req", "MiB in", "RSS MiB", "curl floor"]
    out = [header]
    for r in rows:
        t = r["tools"]
        floor = fmt_time(t["curl"]["median_s"]) if "curl" in t else "-"
        out.append([r["command"], r["cluster"], r["job"], *cells(t.get("gcluster"), r["metric"]),
                    *cells(t.get("kubectl"), r["metric"]), floor])
    widths = [max(len(row[c]) for row in out) for c in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in out]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def targets(rows):
    """Issue 17's targets, as ratios, from this run's medians."""
    def find(command, where=None, job_prefix=None):
        for r in rows:
            if r["command"] == command and (where is None or r["cluster"] == where) and (
                    job_prefix is None or r["job"].startswith(job_prefix)):
                return r
        return None

    out = []
    for command in ("job submit (live)", "job submit --dry-run server"):
        small, large = find(command, SMALL), find(command, LARGE)
        if small and large:
            ratio = large["tools"]["gcluster"]["median_s"] / small["tools"]["gcluster"]["median_s"]
            out.append((f"{command}: 1,994 nodes <= 1.3x 13 nodes", ratio <= 1.3,
                        f"{ratio:.2f}x ({fmt_time(large['tools']['gcluster']['median_s'])} vs "
                        f"{fmt_time(small['tools']['gcluster']['median_s'])})"))
    biggest = max((r["job"] for r in rows if r["job"].startswith("v6e-64")),
                  key=lambda j: int(j.split("x")[1].split()[0]), default=None)
    if biggest:
        r = find("job inspect", LARGE, biggest)
        if r:
            g, k = r["tools"]["gcluster"], r["tools"]["kubectl"]
            out.append((f"inspect {biggest} < 1 s", g["median_s"] < 1, fmt_time(g["median_s"])))
            req = g["requests"] / k["requests"]
            out.append((f"inspect {biggest}: requests <= 1/3 of kubectl's", req <= 1 / 3,
                        f"{g['requests']} vs {k['requests']} ({req:.2f}); time vs kubectl "
                        f"{g['median_s'] / k['median_s']:.2f}x"))
        r = find("job logs --all", LARGE, biggest)
        if r:
            g, k = r["tools"]["gcluster"], r["tools"]["kubectl"]
            speed, rss = g["mib_s"] / k["mib_s"], g["median_rss_kib"] / k["median_rss_kib"]
            out.append((f"logs --all {biggest}: every line", g["every_line"],
                        f"gcluster {g['lines']} lines, kubectl {k['lines']}"))
            out.append((f"logs --all {biggest}: throughput >= kubectl --max-log-requests=1100 "
                        "--prefix", speed >= 1, f"{speed:.2f}x"))
            out.append((f"logs --all {biggest}: peak RSS <= 1/5 of kubectl's", rss <= 0.2,
                        f"{rss:.2f} ({g['median_rss_kib'] / 1024:.1f} vs "
                        f"{k['median_rss_kib'] / 1024:.1f} MiB)"))
    worst = [(r["tools"]["gcluster"]["median_rss_kib"], r["command"], r["cluster"], r["job"])
             for r in rows if "gcluster" in r["tools"]]
    over = [w for w in worst if w[0] > 64 * 1024]
    top = max(worst, default=None)
    if top:
        out.append(("peak RSS of every command <= 64 MiB", not over,
                    f"largest {top[0] / 1024:.1f} MiB ({top[1]}, {top[2]}, {top[3]}); "
                    f"{len(over)} of {len(worst)} rows over"))
    return out


SMALL, LARGE = "13 nodes", "1,994 nodes"


def run(ctx, scale, keep_env=False):
    """Both environments, one after the other. Fills scale.rows (kept when a later step fails)
    and returns how long each part took."""
    log_lines, slices = scale.log_lines, scale.sizes
    fake_log = ctx.work / f"scale-log-{log_lines}.log"
    write_fake_log(fake_log, log_lines)
    timings = scale.timings
    for name, pools in (("small", SMALL_NODEPOOLS), ("large", SCALE_NODEPOOLS)):
        where = SMALL if name == "small" else LARGE
        t0 = time.monotonic()
        state_dir, cl = start_env(name, pools, fake_log, ctx.work)
        timings[f"{name} up"] = time.monotonic() - t0
        try:
            t0 = time.monotonic()
            scale.submit(cl, where)
            timings[f"{name} submit"] = time.monotonic() - t0
            if name == "large":
                for n in slices:
                    t0 = time.monotonic()
                    scale.job_commands(cl, where, n)
                    timings[f"large v6e-64 x{n}"] = time.monotonic() - t0
        finally:
            if keep_env:
                log(f"control plane left running: GCLUSTER_TESTENV_DIR={state_dir}")
            else:
                cluster.testenv_down(state_dir)
