"""The five side-by-side scenarios of bench/README.md.

Each scenario prepares what it needs outside the measured commands, measures both tools with
harness.alternate (warm-up rounds first, tool order flipped every round), cleans up, and returns
a result dict: which metric, each tool's summary, the exact command lines and notes.
"""

import copy
import json
import os
import socket
import statistics
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import harness
from cluster import FAKE_LOG_PAYLOAD, TPU_POOLS, yaml_module
from harness import BenchError

GCS = "gs://bench-bucket/pathways"
IMAGE = "us-docker.pkg.dev/bench-project/bench-repo/jax:1"
COMMAND = "python3 train.py"
PROJECT, LOCATION, CLUSTER = "gcluster-testenv", "us-east5", "local"
CLUSTER_FLAGS = ["--cluster", CLUSTER, "--location", LOCATION, "--project", PROJECT]
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
INERT_MANAGER = "bench.gcluster.dev/inert"


@dataclass
class Context:
    gcluster: Path
    xpk: Path
    work: Path
    cluster: object  # cluster.Cluster, None before the environment is up
    iterations: int
    warmup: int
    list_size: int
    log_mib: float
    tunnel_mib: float


def submit_argv(ctx, name, slices, *extra):
    """`gcluster job submit` of a Pathways job on v6e-16 slices, as the seed writes it."""
    return [ctx.gcluster, "job", "submit", "--name", name, *CLUSTER_FLAGS,
            "--compute-type", "v6e-16", "--num-slices", str(slices), "--pathways",
            "--pathways-gcs-location", GCS, "--command", COMMAND, "--image", IMAGE, *extra]


def result(key, title, metric, samples, commands, notes=()):
    return {"key": key, "title": title, "metric": metric,
            "tools": {tool: harness.summary(s) for tool, s in samples.items()},
            "commands": {tool: " ".join(map(str, argv)) for tool, argv in commands.items()},
            "notes": list(notes)}


def with_api(api, out):
    """Adds the traced runs' time in API requests to a result."""
    out["api"] = api
    return out


def measure(ctx, tools, run_one):
    return harness.alternate(tools, ctx.iterations, ctx.warmup, run_one)


# 1 ------------------------------------------------------------------------------------------

def offline(ctx):
    """The manifest of a v6e-16 x 2 Pathways job, nothing contacted, by both tools."""
    xpk_home = ctx.work / "xpk-home"
    xpk_home.mkdir(exist_ok=True)
    xpk_manifest = ctx.work / "xpk-manifest.yaml"
    gc = submit_argv(ctx, "bench-offline", 2, "--dry-run-out", "-")
    xpk = [ctx.xpk, "workload", "create-pathways", "--workload", "bench-offline",
           "--cluster", CLUSTER, "--project", PROJECT, "--zone", f"{LOCATION}-b",
           "--tpu-type", "v6e-16", "--num-slices", "2", "--pathways-gcs-location", GCS,
           "--command", COMMAND, "--docker-image", IMAGE, "--dry-run",
           "--output-manifest-file", xpk_manifest, "--skip-validation"]
    env = offline_env(xpk_home)
    commands = {"gcluster": gc, "xpk": xpk}
    samples = measure(ctx, ["gcluster", "xpk"],
                      lambda tool, i: harness.run_timed(commands[tool], env))
    check_same_workload(env, gc, xpk_manifest)
    return result("offline", "1 offline manifest (v6e-16 x2)", "time", samples, commands, [
        "xpk: --dry-run --output-manifest-file --skip-validation writes the manifest and runs "
        "no gcloud/kubectl (checked with strace: one execve, no connect); telemetry off "
        "(TELEMETRY_ENABLED=false), private HOME"])


def offline_env(home):
    """A private HOME (no gcloud/xpk configuration), xpk's telemetry off, no cluster."""
    env = dict(os.environ, HOME=str(home), TELEMETRY_ENABLED="false")
    env.pop("KUBECONFIG", None)
    return env


def check_same_workload(env, gc, xpk_manifest):
    """Both manifests must describe the same workload: a JobSet with 2 worker slices."""
    yaml = yaml_module()
    ours = yaml.safe_load(subprocess.run(list(map(str, gc)), env=env, capture_output=True,
                                         text=True, check=True).stdout)
    theirs = yaml.safe_load(Path(xpk_manifest).read_text())
    for doc, who in ((ours, "gcluster"), (theirs, "xpk")):
        workers = [r for r in doc["spec"]["replicatedJobs"] if r["name"] == "worker"]
        if doc["kind"] != "JobSet" or not workers or workers[0]["replicas"] != 2:
            raise BenchError(f"{who}'s offline manifest is not a JobSet with 2 worker slices")


# 2 ------------------------------------------------------------------------------------------

def submit(ctx):
    """Create a job: ours with its pre-flight checks vs `kubectl create -f` of our manifest."""
    cl = ctx.cluster
    ns, queue = "bench-submit", "bench-hold"
    flags = ["--namespace", ns, "--queue", queue]
    commands = {}

    def command(tool, name):
        """The command line; kubectl's manifest is our --dry-run-out of the same job."""
        if tool == "gcluster":
            return submit_argv(ctx, name, 2, *flags)
        manifest = ctx.work / f"{name}.yaml"
        with open(manifest, "w") as out:
            subprocess.run(list(map(str, submit_argv(ctx, name, 2, *flags, "--dry-run-out", "-"))),
                           stdout=out, check=True, env=cl.env())
        return ["kubectl", "create", "-n", ns, "-f", manifest]

    def run_one(tool, i):
        commands[tool] = command(tool, f"bsub-{tool[0]}-{i}")
        sample = harness.run_timed(commands[tool], cl.env())
        cl.delete_jobs_and_wait(ns)
        return sample

    samples = measure(ctx, ["gcluster", "kubectl"], run_one)
    api = {}
    for tool in ("gcluster", "kubectl"):
        api[tool] = harness.api_time(tool, [command(tool, f"bsub-{tool[0]}-api")], cl.env())
        cl.delete_jobs_and_wait(ns)
    return with_api(api, result("submit", "2 submit v6e-16 x2 (live)", "time", samples, commands, [
        "gcluster: 3 pre-flight GETs sent together (LocalQueues, ClusterQueues, nodes) + POST; "
        "kubectl: discovery (cached in its HOME after the warm-up) + POST",
        "queue bench-hold holds every job (stopPolicy Hold): nothing is admitted or started; "
        "each job is deleted, and its Jobs gone, before the next run"]))


# 3 ------------------------------------------------------------------------------------------

def list_objects(ctx, count):
    """`count` JobSets from our own offline manifest, made inert: suspended, no queue label
    (Kueue ignores them) and spec.managedBy another controller (the JobSet controller creates no
    Jobs for them), so 10,000 of them cost etcd space and nothing else."""
    yaml = yaml_module()
    text = subprocess.run(list(map(str, submit_argv(ctx, "bench-list", 2, "--dry-run-out", "-"))),
                          capture_output=True, text=True, check=True).stdout
    template = yaml.safe_load(text)
    template["metadata"]["labels"].pop("kueue.x-k8s.io/queue-name", None)
    template["spec"]["suspend"] = True
    template["spec"]["managedBy"] = INERT_MANAGER
    objects = []
    for i in range(count):
        obj = copy.deepcopy(template)
        obj["metadata"]["name"] = f"bench-list-{i:05d}"
        obj["metadata"]["labels"]["gcluster.google.com/workload"] = obj["metadata"]["name"]
        objects.append(obj)
    return objects


def count_rows(cl, argv):
    out = subprocess.run(list(map(str, argv)), capture_output=True, text=True, check=True,
                         env=cl.env()).stdout
    return len(out.splitlines()) - 1  # the header


def list_jobs(ctx):
    """`job list` vs `kubectl get jobsets`, in one namespace and across all (-A)."""
    cl, ns = ctx.cluster, "bench-list"
    path = f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{ns}/jobsets"
    t0 = time.monotonic()
    cl.api.create_many(path, list_objects(ctx, ctx.list_size))
    created = time.monotonic() - t0
    results = []
    try:
        variants = (("namespace", ["--namespace", ns], ["-n", ns]), ("all", ["-A"], ["-A"]))
        for key, ours, theirs in variants:
            commands = {"gcluster": [ctx.gcluster, "job", "list", *ours, *CLUSTER_FLAGS],
                        "kubectl": ["kubectl", "get", "jobsets", *theirs]}
            for tool, argv in commands.items():
                rows = count_rows(cl, argv)
                if rows != ctx.list_size:
                    raise BenchError(f"{tool} listed {rows} jobs, want {ctx.list_size}")
            samples = measure(ctx, ["gcluster", "kubectl"],
                              lambda tool, i, c=commands: harness.run_timed(c[tool], cl.env()))
            scope = f"-n {ns}" if key == "namespace" else "-A"
            api = {tool: harness.api_time(tool, [argv], cl.env())
                   for tool, argv in commands.items()}
            results.append(with_api(api, result(f"list-{key}", f"3 list {ctx.list_size} jobs ({scope})", "time",
                                  samples, commands, [
                f"{ctx.list_size} JobSets created in {created:.1f}s by 16 threads (raw POSTs)",
                "kubectl pages by 500 and asks the server for a Table (rows only); gcluster "
                "asks for 10,000 per page and reads whole JobSets, decoding only the fields "
                "COMPUTE/PATHWAYS/STATUS need, item by item as they arrive"])))
    finally:
        cl.api.delete_collection(path)
        cl.wait_for("the list scenario's JobSets to be deleted",
                    lambda: not cl.kubectl_json("get", "jobsets.jobset.x-k8s.io", "-n", ns,
                                                "--chunk-size=1")["items"], 300)
    return results


# 4 ------------------------------------------------------------------------------------------

def start_job(ctx, name, slices):
    """A Pathways job in default/user-queue, waited for until every pod is Running."""
    cl = ctx.cluster
    harness.run_timed(submit_argv(ctx, name, slices), cl.env())
    pods = 1 + slices * 4
    cl.wait_for(f"{pods} running pods of {name}", lambda: cl.running_pods(name) == pods,
                timeout=600, interval=2)


def logs(ctx):
    """Follow the 64 worker containers of a 16-slice job until log_mib MiB of log lines came."""
    cl, name = ctx.cluster, "bench-logs"
    start_job(ctx, name, TPU_POOLS)
    want_lines = int(ctx.log_mib * 1024 * 1024) // FAKE_LOG_PAYLOAD
    workers = f"{JOBSET_LABEL}={name},jobset.sigs.k8s.io/replicatedjob-name=worker"
    commands = {
        "gcluster": [ctx.gcluster, "job", "logs", name, "--role", "worker", "--all", "-f",
                     *CLUSTER_FLAGS],
        "kubectl": ["kubectl", "logs", "-f", "-l", workers, f"--max-log-requests={TPU_POOLS * 4}",
                    "--prefix", "--tail=-1"]}
    try:
        samples = measure(ctx, ["gcluster", "kubectl"], lambda tool, i: harness.run_until_lines(
            commands[tool], cl.env(), want_lines, timeout=600))
    finally:
        cl.delete_jobs_and_wait("default", timeout=600)
    out = result("logs", f"4 follow logs, 64 pods, {ctx.log_mib:g} MiB", "throughput", samples,
                 commands, [
                     f"kwok serves the same {FAKE_LOG_PAYLOAD}-byte lines to every container; "
                     "MiB counts log payload (lines x 100 B), not the [pod/container] prefixes",
                     "time is from process start (discovery, pod list included) to the last "
                     "wanted line",
                     "kubectl gets --tail=-1: with -l it defaults to the last 10 lines"])
    for summary in out["tools"].values():
        summary["median_mib_s"] = ctx.log_mib / summary["median_s"]
        for run in summary["runs"]:
            run["mib_per_s"] = ctx.log_mib / run["seconds"]
    return out


# 5 ------------------------------------------------------------------------------------------

def inspect(ctx):
    """`job inspect` vs the kubectl gets a user runs for the same facts."""
    cl, name = ctx.cluster, "bench-inspect"
    start_job(ctx, name, 2)
    uid = cl.kubectl_json("get", "jobset", name)["metadata"]["uid"]
    kubectl_steps = [
        ["kubectl", "get", "jobset", name, "-o", "yaml"],
        ["kubectl", "get", "workloads.kueue.x-k8s.io", "-l", f"kueue.x-k8s.io/job-uid={uid}",
         "-o", "yaml"],
        ["kubectl", "get", "pods", "-l", f"{JOBSET_LABEL}={name}", "-o", "wide"],
        ["kubectl", "get", "events", "--field-selector", "type=Warning"],
    ]
    commands = {"gcluster": [ctx.gcluster, "job", "inspect", name, *CLUSTER_FLAGS],
                "kubectl": [" && ".join(" ".join(map(str, s)) for s in kubectl_steps)]}
    try:
        samples = measure(ctx, ["gcluster", "kubectl"], lambda tool, i: (
            harness.run_timed(commands["gcluster"], cl.env()) if tool == "gcluster"
            else harness.run_sequence(kubectl_steps, cl.env())))
        api = {"gcluster": harness.api_time("gcluster", [commands["gcluster"]], cl.env()),
               "kubectl": harness.api_time("kubectl", kubectl_steps, cl.env())}
    finally:
        cl.delete_jobs_and_wait("default", timeout=300)
    return with_api(api, result("inspect", "5 inspect running v6e-16 x2", "time", samples,
                                commands, [
        "kubectl: 4 commands in a row (JobSet, its Kueue Workload, pods -o wide, Warning "
        "events); time summed, RSS the largest; the Workload's job-uid label is looked up "
        "beforehand, which a user would have to do too"]))


# 6 ------------------------------------------------------------------------------------------

PROXY_PORT = 29000
FLOOR_REQUESTS = 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def echo_round_trip(port, payload, timeout=120):
    """Sends `payload` on a new connection to 127.0.0.1:port, reads as many bytes back and checks
    they are the same: testenv's echo server behind the head pod's port 29000 answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        sender = threading.Thread(target=s.sendall, args=(payload,))
        sender.start()
        got = bytearray()
        while len(got) < len(payload):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            got.extend(chunk)
        sender.join()
    if got != payload:
        raise BenchError(f"the echo through 127.0.0.1:{port} came back with {len(got)} of "
                         f"{len(payload)} bytes, or different ones")


def answers(port):
    try:
        echo_round_trip(port, b"ready?", timeout=5)
        return True
    except (OSError, BenchError):
        return False


def proxy_ready_pod(cl, name):
    pods = cl.kubectl_json("get", "pods", "-l", f"{JOBSET_LABEL}={name},"
                           "jobset.sigs.k8s.io/replicatedjob-name=pathways-head")["items"]
    for pod in pods:
        for cs in pod.get("status", {}).get("containerStatuses", []):
            if cs["name"] == "pathways-proxy" and cs.get("ready"):
                return pod["metadata"]["name"]
    return None


def floor(port):
    """The median time of one 1 KiB request on a new connection: what every connection pays."""
    times = []
    for _ in range(FLOOR_REQUESTS):
        t0 = time.perf_counter()
        echo_round_trip(port, b"x" * 1024)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def tunnel(ctx):
    """`job connect` vs `kubectl port-forward` to the same head pod: tunnel_mib MiB echoed
    through each (throughput), the tool's peak RSS, and the floor of one small request."""
    cl, name = ctx.cluster, "bench-tunnel"
    harness.run_timed([ctx.gcluster, "job", "submit", "--name", name, *CLUSTER_FLAGS,
                       "--compute-type", "v6e-16", "--pathways", "--pathways-gcs-location", GCS,
                       "--pathways-headless"], cl.env())
    payload = os.urandom(1 << 20) * max(1, int(ctx.tunnel_mib))
    commands = {}
    try:
        cl.wait_for(f"the IFRT proxy of {name}", lambda: proxy_ready_pod(cl, name), timeout=300)
        pod = proxy_ready_pod(cl, name)

        def run_one(tool, i):
            port = free_port()
            commands[tool] = (
                [ctx.gcluster, "job", "connect", name, *CLUSTER_FLAGS, "--local-port", port]
                if tool == "gcluster" else
                ["kubectl", "port-forward", f"pod/{pod}", f"{port}:{PROXY_PORT}"])

            def work():
                request_floor = floor(port)
                t0 = time.perf_counter()
                echo_round_trip(port, payload)
                return time.perf_counter() - t0, {"floor_s": request_floor}

            return harness.run_serving(commands[tool], cl.env(), lambda: answers(port), work,
                                       timeout=300)

        samples = measure(ctx, ["gcluster", "kubectl"], run_one)
        state = json.loads((Path(cl.kubeconfig).parent / "state.json").read_text())
        direct = floor(state["echo_port"])
    finally:
        cl.delete_jobs_and_wait("default", timeout=300)
    mib = len(payload) / (1 << 20)
    out = result("tunnel", f"6 tunnel to the head pod, {mib:g} MiB echoed", "throughput",
                 samples, commands, [
                     f"both forward to port {PROXY_PORT} of the same head pod through the API "
                     "server (WebSocket carrying SPDY for both); testenv's echo server answers",
                     "throughput: the payload sent and received back on one connection, from the "
                     "first byte out to the last byte in",
                     f"last column for this row: the median of {FLOOR_REQUESTS} 1 KiB requests, each "
                     "on a new connection through the tunnel (what every connection costs); "
                     f"straight to the echo server, without a tunnel: {direct * 1000:.2f} ms"])
    out["api"] = {tool: {"requests": FLOOR_REQUESTS,
                         "seconds": statistics.median(s.floor_s for s in samples[tool])}
                  for tool in samples}
    out["direct_floor_s"] = direct
    for summary in out["tools"].values():
        summary["median_mib_s"] = mib / summary["median_s"]
        for run in summary["runs"]:
            run["mib_per_s"] = mib / run["seconds"]
    return out
