#!/usr/bin/env python3
"""Starts and stops the local GKE-shaped control plane (`testenv/up`, `testenv/down`) and puts
it on a profile (`testenv/profile`: Kueue configuration and head node pool).

Everything runs as plain processes on 127.0.0.1 with ports picked at start: etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, kwok (fake kubelets for the node pools
of nodepools.yaml), the JobSet controller and the Kueue manager, whose webhooks are served with
certificates from a CA made at start. All state (pids, logs, certificates, kubeconfig) lives in
one directory, ${GCLUSTER_TESTENV_DIR:-~/.cache/gcluster-testenv/run}; `down` stops every
process that refers to it and removes it. JobSet and Kueue are the default releases or the older
ones of versions.env. See README.md.
"""

import argparse
import base64
import fcntl
import hashlib
import ipaddress
import json
import math
import os
import re
import shutil
import signal
import socket
import ssl
import string
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT, LOCATION, CLUSTER = "gcluster-testenv", "us-east5", "local"
CONTEXT = f"gke_{PROJECT}_{LOCATION}_{CLUSTER}"
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
# Started in this order; `down` stops them in reverse.
COMPONENTS = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok",
              "jobset", "kueue"]
# The controllers the tests need: Jobs and their pods, cascading deletion (JobSet -> Job -> Pod),
# namespaces, service accounts (pod admission needs `default`), the JobSet headless Service's
# EndpointSlices, and the volume controllers that bind a claim to its PersistentVolume and hold
# both while a pod or claim uses them (storage-profile gateways). node-lifecycle and
# taint-eviction are left out on purpose: on a busy 2-core machine a late kwok heartbeat must not
# taint nodes and evict the pods under test.
CONTROLLERS = ["job-controller", "garbage-collector-controller", "namespace-controller",
               "serviceaccount-controller", "serviceaccount-token-controller",
               "root-ca-certificate-publisher-controller", "pod-garbage-collector-controller",
               "ttl-after-finished-controller", "endpointslice-controller",
               "persistentvolume-binder-controller", "persistentvolumeclaim-protection-controller",
               "persistentvolume-protection-controller"]
# What runs the Deployments of JobSet and Kueue installed from their release manifests.
DEPLOYMENT_CONTROLLERS = ["deployment-controller", "replicaset-controller"]
KUEUE_WEBHOOK_GROUPS = {"kueue.x-k8s.io", "batch", "jobset.x-k8s.io"}
NUMBERED_CONTAINER, NUMBERED_LOG = "numbered-log", "numbered.log"
# Port-forwards to a pod's port 29000 (the Pathways IFRT proxy's) reach this TCP echo server
# through kwok; a PortForward object (kwok.x-k8s.io/v1alpha1, namespaced, named like the pod)
# sends one pod's ports elsewhere.
ECHO_SERVER = "echo-server"
PROXY_PORT = 29000
# Node addresses. kwok gives a hostNetwork pod (every Pathways pod) its node's InternalIP as pod
# IP, and the API server rejects an EndpointSlice endpoint in 127.0.0.0/8, so an InternalIP of
# 127.0.0.1 kept the endpointslice controller failing (FailedToUpdateEndpointSlices) on every
# Pathways job's Service. InternalIPs come from 198.18.0.0/15 instead (RFC 2544's benchmarking
# block: never routed, and nothing here connects to it, it only fills pod and endpoint
# statuses); kwok's own fallback node IP is its first address, the nodes' are in 198.19.0.0/16.
# The API server still reaches kwok's kubelet endpoint (logs, port-forward) on 127.0.0.1: each
# node also lists ExternalIP 127.0.0.1 and the API server prefers that address type; kwok
# takes a node's InternalIP before its ExternalIP for pod IPs.
KWOK_FALLBACK_IP = "198.18.0.1"
NODE_IP_NETWORK = ipaddress.ip_network("198.19.0.0/16")
KUBELET_ADDRESS_TYPE, KUBELET_ADDRESS = "ExternalIP", "127.0.0.1"


class Failure(Exception):
    """A start-up step that did not succeed; `component` names the log worth showing."""

    def __init__(self, message, component=None):
        super().__init__(message)
        self.component = component


def log(message):
    print(f"testenv: {message}", file=sys.stderr, flush=True)


def state_dir():
    default = Path.home() / ".cache" / "gcluster-testenv" / "run"
    return Path(os.environ.get("GCLUSTER_TESTENV_DIR") or default).expanduser().resolve()


def yaml_module():
    try:
        import yaml  # noqa: PLC0415 - imported lazily so `down` never needs it
    except ImportError:
        log("installing PyYAML (python3 -m pip install PyYAML)")
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "PyYAML>=6"], check=True)
        import yaml  # noqa: PLC0415
    return yaml


# ---------------------------------------------------------------------------------------------
# Processes


def read_cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def is_running(pid):
    """True for a live process (a zombie waiting to be reaped does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def refers_to(pid, root):
    """True if the process's command line names the state directory."""
    prefix = str(root) + "/"
    return any(arg == str(root) or prefix in arg for arg in read_cmdline(pid))


def our_processes(root):
    """Pids of processes started for this state directory: pid files, then stragglers."""
    pids = []
    pid_dir = root / "pids"
    if pid_dir.is_dir():
        for f in sorted(pid_dir.glob("*.pid")):
            try:
                pid = int(f.read_text().strip())
            except (OSError, ValueError):
                continue
            if is_running(pid) and refers_to(pid, root):
                pids.append(pid)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        if pid in pids or pid == os.getpid() or not is_running(pid):
            continue
        args = read_cmdline(pid)
        named = args and (Path(args[0]).name in COMPONENTS or
                          any(Path(a).name == ECHO_SERVER for a in args[1:2]))
        if named and refers_to(pid, root):
            pids.append(pid)
    return pids


def stop_processes(pids, grace=15.0):
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        live = [p for p in pids if is_running(p)]
        for pid in live:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(is_running(p) for p in live):
            time.sleep(0.1)
    return [p for p in pids if is_running(p)]


def teardown(root, quiet=False):
    """Stops every process of this state directory and removes it. Returns the count stopped."""
    pids = our_processes(root)
    # Controllers first, the API server next, etcd last: each stops while its server is still
    # up (a controller whose API server is gone retries instead of exiting promptly).
    tiers = {"kube-apiserver": 1, "etcd": 2}
    left = []
    for tier in (0, 1, 2):
        group = [p for p in pids
                 if tiers.get(Path((read_cmdline(p) or [""])[0]).name, 0) == tier]
        left += stop_processes(group)
    if left:
        raise Failure(f"processes {left} did not exit after SIGKILL")
    if root.exists():
        shutil.rmtree(root, ignore_errors=True)
    if root.exists():
        raise Failure(f"could not remove {root}")
    if not quiet:
        log(f"stopped {len(pids)} process(es); removed {root}")
    return len(pids)


class Launcher:
    """Starts the components as daemons (own session, output to logs/<name>.log)."""

    def __init__(self, root):
        self.root = root
        self.procs = {}
        self.argv = {}

    def start(self, name, argv):
        log_path = self.root / "logs" / f"{name}.log"
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, cwd=self.root,
                                    start_new_session=True)
        (self.root / "pids" / f"{name}.pid").write_text(f"{proc.pid}\n")
        (self.root / "logs" / f"{name}.cmdline").write_text(" ".join(argv) + "\n")
        self.procs[name] = proc
        self.argv[name] = [str(a) for a in argv]
        return proc

    def check_alive(self, name):
        proc = self.procs.get(name)
        if proc is not None and proc.poll() is not None:
            raise Failure(f"{name} exited with code {proc.returncode}", name)


def wait_for(what, probe, timeout, launcher=None, component=None, interval=0.25):
    """Polls probe() until it returns something true; bounded by timeout seconds."""
    deadline = time.monotonic() + timeout
    last_error = None
    while True:
        if launcher and component:
            launcher.check_alive(component)
        try:
            result = probe()
            if result:
                return result
        except Exception as e:  # noqa: BLE001 - any probe error means "not yet"
            last_error = e
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error})" if last_error else ""
            raise Failure(f"timed out after {timeout:.0f}s waiting for {what}{detail}", component)
        time.sleep(interval)


def free_ports(count):
    """Ports the kernel hands out on 127.0.0.1, all held at once so they are distinct."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


# ---------------------------------------------------------------------------------------------
# Certificates and kubeconfig


def openssl(*args):
    proc = subprocess.run(["openssl", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise Failure(f"openssl {args[0]} failed: {proc.stderr.strip()}")


def make_certs(certs):
    """A CA, serving certificates for 127.0.0.1, the admin client certificate, the SA key."""
    certs.mkdir(parents=True)
    ca_key, ca_crt = certs / "ca.key", certs / "ca.crt"
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca_crt,
            "-days", "30", "-subj", "/CN=gcluster-testenv-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def leaf(name, subject, usage, sans=None):
        key, csr, crt, ext = (certs / f"{name}.{s}" for s in ("key", "csr", "crt", "ext"))
        lines = ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment",
                 f"extendedKeyUsage={usage}"]
        if sans:
            lines.append("subjectAltName=" + ",".join(sans))
        ext.write_text("\n".join(lines) + "\n")
        openssl("req", "-new", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
                "-subj", subject)
        openssl("x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-set_serial",
                str(int.from_bytes(os.urandom(8), "big")), "-days", "30", "-extfile", ext,
                "-out", crt)
        csr.unlink()
        ext.unlink()

    loopback = ["IP:127.0.0.1", "DNS:localhost"]
    leaf("apiserver", "/CN=kube-apiserver", "serverAuth",
         loopback + ["DNS:kubernetes", "DNS:kubernetes.default", "DNS:kubernetes.default.svc",
                     "DNS:kubernetes.default.svc.cluster.local", "IP:10.96.0.1"])
    leaf("admin", "/O=system:masters/CN=gcluster-testenv-admin", "clientAuth")
    # The installed webhook Services' names too: with GCLUSTER_TESTENV_PREREQS=none the API
    # server reaches the local controllers through them (installed-webhooks).
    leaf("webhook", "/CN=testenv-webhooks", "serverAuth",
         loopback + [f"DNS:{svc}" for svc in INSTALLED_WEBHOOK_SERVICES.values()])
    leaf("kwok", "/CN=kwok", "serverAuth", loopback)
    openssl("genrsa", "-out", certs / "sa.key", "2048")
    openssl("rsa", "-in", certs / "sa.key", "-pubout", "-out", certs / "sa.pub")
    # controller-runtime webhook servers read tls.crt / tls.key from a directory.
    webhook_dir = certs / "webhook-serving"
    webhook_dir.mkdir()
    shutil.copy(certs / "webhook.crt", webhook_dir / "tls.crt")
    shutil.copy(certs / "webhook.key", webhook_dir / "tls.key")


KUEUE_METRICS_CERTS = Path("/etc/kueue/metrics/certs")


def ensure_kueue_metrics_cert():
    """Kueue v0.17.0 reads a metrics serving certificate from a fixed path whenever its internal
    cert management is off, even with metrics disabled, and exits if it is missing. A self-signed
    pair made once satisfies it (nothing is ever served with it here)."""
    crt, key = KUEUE_METRICS_CERTS / "tls.crt", KUEUE_METRICS_CERTS / "tls.key"
    usable = all(subprocess.run(["openssl", kind, "-in", str(f), "-noout"],
                                capture_output=True).returncode == 0
                 for kind, f in (("x509", crt), ("pkey", key)))
    if usable:
        return
    try:
        KUEUE_METRICS_CERTS.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise Failure(f"Kueue needs {KUEUE_METRICS_CERTS} and it cannot be created ({e}); "
                      "run testenv/up as root once") from e
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", crt,
            "-days", "3650", "-subj", "/CN=gcluster-testenv-kueue-metrics-unused")
    log(f"created a placeholder Kueue metrics certificate in {KUEUE_METRICS_CERTS}")


def b64(path):
    return base64.b64encode(Path(path).read_bytes()).decode()


def write_kubeconfig(path, certs, port):
    """A kubeconfig shaped like `gcloud container clusters get-credentials` writes, with
    client-certificate credentials instead of the gke-gcloud-auth-plugin."""
    path.write_text(f"""apiVersion: v1
kind: Config
clusters:
- name: {CONTEXT}
  cluster:
    server: https://127.0.0.1:{port}
    certificate-authority-data: {b64(certs / "ca.crt")}
users:
- name: {CONTEXT}
  user:
    client-certificate-data: {b64(certs / "admin.crt")}
    client-key-data: {b64(certs / "admin.key")}
contexts:
- name: {CONTEXT}
  context:
    cluster: {CONTEXT}
    user: {CONTEXT}
    namespace: default
current-context: {CONTEXT}
preferences: {{}}
""")
    path.chmod(0o600)


# ---------------------------------------------------------------------------------------------
# Talking to the servers


def https_get(url, certs, client=True, verify=True, timeout=3):
    ctx = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    if not verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if client:
        ctx.load_cert_chain(str(certs / "admin.crt"), str(certs / "admin.key"))
    with urllib.request.urlopen(url, context=ctx, timeout=timeout) as resp:
        return resp.status, resp.read().decode(errors="replace")


def http_get(url, timeout=3):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.status, resp.read().decode(errors="replace")


def ok_body(result, expect="ok"):
    status, body = result
    return status == 200 and body.strip().startswith(expect)


class Kubectl:
    def __init__(self, kubeconfig):
        self.kubeconfig = str(kubeconfig)
        self.binary = shutil.which("kubectl")
        if not self.binary:
            raise Failure("kubectl is not on PATH (it comes with the machine image's "
                          "google-cloud-cli packages; `apt-get install kubectl`)")

    def run(self, *args, input=None, timeout=120, check=True):
        proc = subprocess.run([self.binary, "--kubeconfig", self.kubeconfig, *args],
                              input=input, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise Failure(f"kubectl {' '.join(args[:3])} failed: {proc.stderr.strip()}",
                          "kube-apiserver")
        return proc

    def json(self, *args):
        return json.loads(self.run(*args, "-o", "json").stdout)

    def apply(self, objects, what):
        """Server-side apply (never client-side: the CRDs are far over the annotation limit)."""
        doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        self.run("apply", "--server-side", "--force-conflicts", "--field-manager=gcluster-testenv",
                 "-f", "-", input=doc)
        log(f"applied {what}")


# ---------------------------------------------------------------------------------------------
# What gets registered


def load_all(yaml, path):
    return [d for d in yaml.safe_load_all(Path(path).read_text()) if d]


def crds(yaml, upstream, kueue_webhook, ca_bundle):
    """JobSet's and Kueue's CRDs from the module cache (upstream: project -> its directory);
    the Kueue CRDs that upstream's kustomization gives a conversion webhook (v1beta1 <->
    v1beta2) get it, pointed at Kueue. A Kueue that serves only v1beta1 enables none."""
    objects = []
    for f in sorted((upstream["jobset"] / "crd").glob("*.yaml")):
        objects += load_all(yaml, f)
    kustomization = yaml.safe_load((upstream["kueue"] / "crd-kustomization.yaml").read_text())
    converted = set()
    for patch in kustomization.get("patches") or []:
        name = Path(patch.get("path", "")).name
        if name.startswith("webhook_in_") and name.endswith(".yaml"):
            converted.add(f"{name[len('webhook_in_'):-len('.yaml')]}.kueue.x-k8s.io")
    for f in sorted((upstream["kueue"] / "crd").glob("*.yaml")):
        for crd in load_all(yaml, f):
            if crd["metadata"]["name"] in converted:
                crd["spec"]["conversion"] = {
                    "strategy": "Webhook",
                    "webhook": {"conversionReviewVersions": ["v1"],
                                "clientConfig": {"url": f"{kueue_webhook}/convert",
                                                 "caBundle": ca_bundle}}}
            objects.append(crd)
    return objects


def kwok_portforward_crd(yaml):
    """kwok's PortForward CRD, from the kwok module testenv builds (Go's module cache), so that
    tests can route one pod's port-forwards to a server of their own."""
    proc = subprocess.run(["go", "mod", "download", "-json", "sigs.k8s.io/kwok"],
                          cwd=HERE / "go" / "kwok", capture_output=True, text=True, timeout=300)
    try:
        directory = Path(json.loads(proc.stdout)["Dir"])
    except (ValueError, KeyError):
        raise Failure("cannot find the kwok module for its PortForward CRD (go mod download "
                      f"sigs.k8s.io/kwok in testenv/go/kwok): {proc.stderr.strip()}")
    return load_all(yaml, directory / "kustomize" / "crd" / "bases" /
                    "kwok.x-k8s.io_portforwards.yaml")[0]


def kueue_api_of(crd):
    """v1beta2 when Kueue's ClusterQueue CRD serves it (Kueue v0.15 and later), else v1beta1."""
    served = {v["name"] for v in crd["spec"]["versions"] if v.get("served")}
    return "v1beta2" if "v1beta2" in served else "v1beta1"


def served_kueue_api(yaml, kueue_upstream):
    """The Kueue API version of a release, from its ClusterQueue CRD."""
    return kueue_api_of(load_all(yaml, kueue_upstream / "crd" / "kueue.x-k8s.io_clusterqueues.yaml")[0])


def webhook_configurations(yaml, upstream, urls, ca_bundle):
    """Both projects name their configurations mutating-/validating-webhook-configuration and
    point them at an in-cluster Service; here they get a project prefix and a loopback URL."""
    objects = []
    for project in ("jobset", "kueue"):
        for doc in load_all(yaml, upstream[project] / "webhook.yaml"):
            hooks = []
            for hook in doc.get("webhooks") or []:
                groups = {g for rule in hook.get("rules") or [] for g in rule.get("apiGroups", [])}
                resources = {r for rule in hook.get("rules") or [] for r in rule.get("resources", [])}
                # Kueue ships webhooks for every integration (Ray, Kubeflow, pods, ...); only
                # its own API, batch Jobs and JobSets are enabled here, and a webhook whose
                # handler is not registered would fail every matching request.
                if project == "kueue" and not groups <= KUEUE_WEBHOOK_GROUPS:
                    continue
                path = hook["clientConfig"]["service"]["path"]
                hook["clientConfig"] = {"url": urls[project] + path, "caBundle": ca_bundle}
                if project == "jobset" and "pods" in resources:
                    # As upstream's kustomize patch does: only pods of JobSets.
                    hook["objectSelector"] = {"matchExpressions": [
                        {"key": "jobset.sigs.k8s.io/jobset-name", "operator": "Exists"}]}
                hook["timeoutSeconds"] = 10
                hooks.append(hook)
            doc["metadata"]["name"] = f"{project}-{doc['metadata']['name']}"
            doc["webhooks"] = hooks
            objects.append(doc)
    return objects


def topology_chips(topology):
    return math.prod(int(x) for x in topology.split("x"))


def node_objects(yaml, pools_file, k8s_version):
    """Node objects for every host of every pool, labelled, sized and tainted as GKE does."""
    doc = yaml.safe_load(Path(pools_file).read_text())
    region, default_zone = doc["region"], doc["zone"]
    nodes = []
    seen = set()
    node_ips = NODE_IP_NETWORK.hosts()
    for pool in doc["nodePools"]:
        name, machine, count = pool["name"], pool["machineType"], int(pool["nodes"])
        if name in seen:
            raise Failure(f"{pools_file}: node pool {name} is declared twice")
        seen.add(name)
        zone = pool.get("zone", default_zone)
        tpu = pool.get("tpu")
        capacity = {k: str(v) for k, v in pool["capacity"].items()}
        labels = {
            "cloud.google.com/gke-nodepool": name,
            "cloud.google.com/machine-family": machine.split("-")[0],
            "cloud.google.com/gke-container-runtime": "containerd",
            "cloud.google.com/gke-os-distribution": "cos",
            "cloud.google.com/gke-provisioning": "standard",
            "cloud.google.com/gke-stack-type": "IPV4",
            "cloud.google.com/private-node": "false",
            "node.kubernetes.io/instance-type": machine,
            "beta.kubernetes.io/instance-type": machine,
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/arch": "amd64",
            "kubernetes.io/os": "linux",
            "beta.kubernetes.io/os": "linux",
            "topology.kubernetes.io/region": region,
            "topology.kubernetes.io/zone": zone,
            "failure-domain.beta.kubernetes.io/region": region,
            "failure-domain.beta.kubernetes.io/zone": zone,
            "topology.gke.io/zone": zone,
        }
        taints = []
        if tpu:
            chips, per_host = topology_chips(tpu["topology"]), int(tpu["chipsPerHost"])
            if chips % per_host or chips // per_host != count:
                raise Failure(f"{pools_file}: pool {name}: topology {tpu['topology']} has "
                              f"{chips} chips, {per_host} per host, so it needs "
                              f"{chips // per_host} hosts, not {count}")
            labels.update({
                "cloud.google.com/gke-tpu-accelerator": tpu["accelerator"],
                "cloud.google.com/gke-tpu-topology": tpu["topology"],
                "cloud.google.com/gke-accelerator-count": str(per_host),
            })
            capacity["google.com/tpu"] = str(per_host)
            taints.append({"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"})
        labels.update({k: str(v) for k, v in (pool.get("labels") or {}).items()})
        for i in range(count):
            host = f"gke-{CLUSTER}-{name}-{i:04d}"
            internal_ip = next(node_ips, None)
            if internal_ip is None:
                raise Failure(f"{pools_file}: more nodes than {NODE_IP_NETWORK} has addresses "
                              f"for ({NODE_IP_NETWORK.num_addresses - 2}); use fewer nodes")
            nodes.append({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": host,
                    "labels": {**labels, "kubernetes.io/hostname": host},
                    "annotations": {KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1],
                                    "node.alpha.kubernetes.io/ttl": "0"},
                },
                "spec": {"providerID": f"gce://{PROJECT}/{zone}/{host}", "taints": taints},
                "status": {
                    "capacity": capacity,
                    "allocatable": capacity,
                    # InternalIP for pod IPs (never connected to), ExternalIP for the API
                    # server's way to kwok (see NODE_IP_NETWORK).
                    "addresses": [{"type": "InternalIP", "address": str(internal_ip)},
                                  {"type": KUBELET_ADDRESS_TYPE, "address": KUBELET_ADDRESS},
                                  {"type": "Hostname", "address": host}],
                    "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux",
                                 "osImage": "Container-Optimized OS from Google",
                                 "kernelVersion": "6.6.0-gke", "kubeletVersion": k8s_version,
                                 "kubeProxyVersion": k8s_version,
                                 "containerRuntimeVersion": "containerd://2.0.0",
                                 "bootID": "", "machineID": "", "systemUUID": ""},
                },
            })
    return nodes


PROBE_JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
    "metadata": {"name": "testenv-webhook-probe", "namespace": "default"},
    "spec": {"replicatedJobs": [{"name": "probe", "replicas": 1, "template": {"spec": {
        "template": {"spec": {"restartPolicy": "Never",
                              "containers": [{"name": "c", "image": "busybox"}]}}}}}]},
}
PROBE_FLAVOR = {"kind": "ResourceFlavor", "metadata": {"name": "testenv-webhook-probe"}, "spec": {}}


# ---------------------------------------------------------------------------------------------
# Profiles: the Kueue configuration and the head node pool a test runs on (README.md)

PROFILES = HERE / "profiles"
KUEUE_PROFILES = ("unified", "xpk", "toolkit-split", "none")
# The webhook Services of JobSet's and Kueue's release manifests, by component.
INSTALLED_WEBHOOK_SERVICES = {"jobset": "jobset-webhook-service.jobset-system.svc",
                              "kueue": "kueue-webhook-service.kueue-system.svc"}
# The CRD whose installation starts each local controller in that mode.
INSTALLED_CRDS = {"jobset": "jobsets.jobset.x-k8s.io", "kueue": "clusterqueues.kueue.x-k8s.io"}
NODEPOOL_LABEL = "cloud.google.com/gke-nodepool"
ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
DEFAULT_PROFILE = {"kueue": "unified", "head_pool": "cpu-np", "accelerator": "tpu-v6e-slice"}
NO_HEAD_POOL = "none"
# The pool the CPU nodes are put in when a profile has no head pool: GKE's default node pool,
# which nothing takes for a Pathways head pool.
DEFAULT_POOL = "default-pool"
# How xpk names a TPU type after one slice: chips for v5e and v6e, TensorCores (two per chip)
# for the others.
XPK_DEVICE_TYPES = {"tpu-v6e-slice": ("v6e", 1), "tpu-v5-lite-podslice": ("v5litepod", 1),
                    "tpu-v5p-slice": ("v5p", 2), "tpu-v4-podslice": ("v4", 2),
                    "tpu7x": ("tpu7x", 2)}
PROFILE_ANNOTATION = "testenv.gcluster.dev/profile"
PROBE_LABEL = "testenv.gcluster.dev/scheduler-probe"
# What a profile replaces, whoever made it (a profile, `gcluster deploy`, a test): every Kueue
# object a Pathways setup uses and the PriorityClasses (the system ones are left alone).
REPLACED = ["resourceflavors.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io",
            "localqueues.kueue.x-k8s.io", "admissionchecks.kueue.x-k8s.io",
            "provisioningrequestconfigs.kueue.x-k8s.io", "priorityclasses.scheduling.k8s.io"]
MEMORY_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def gibibytes(quantity):
    """A node's memory capacity (as nodepools.yaml writes it: a number with a binary suffix)."""
    for unit, factor in MEMORY_UNITS.items():
        if quantity.endswith(unit):
            return int(quantity[:-len(unit)]) * factor // 2**30
    return int(quantity) // 2**30


def profile_variables(nodes, profile):
    """What the profile files' ${...} stand for, from the nodes of the running cluster."""
    accelerator = profile["accelerator"]
    labels = [n["metadata"]["labels"] for n in nodes]
    tpu = [n for n in nodes if n["metadata"]["labels"].get(ACCELERATOR_LABEL) == accelerator]
    if not tpu:
        have = sorted({lab[ACCELERATOR_LABEL] for lab in labels if ACCELERATOR_LABEL in lab})
        raise Failure(f"no node has {ACCELERATOR_LABEL}={accelerator}; this cluster has "
                      f"{', '.join(have) or 'no TPU nodes'}")
    if accelerator not in XPK_DEVICE_TYPES:
        raise Failure(f"accelerator {accelerator} has no xpk device type here; known: "
                      f"{', '.join(XPK_DEVICE_TYPES)}")
    topologies = {n["metadata"]["labels"][TOPOLOGY_LABEL] for n in tpu}
    pools = {n["metadata"]["labels"][NODEPOOL_LABEL] for n in tpu}
    chips = sum(int(n["status"]["capacity"]["google.com/tpu"]) for n in tpu)
    family, cores_per_chip = XPK_DEVICE_TYPES[accelerator]
    cpu_nodes = [n for n in nodes if ACCELERATOR_LABEL not in n["metadata"]["labels"]]
    head_pool = profile["head_pool"]
    # A flavor made for one slice shape (xpk's) needs a single topology; the others select the
    # accelerator only, so a cluster may mix slice sizes (nodepools-scale.yaml does).
    shape = {}
    if len(topologies) == 1:
        shape = {"topology": topologies.pop(), "num_slices": len(pools),
                 "device_type": f"{family}-{chips // len(pools) * cores_per_chip}"}
    return {
        "head_pool": "cpu-np" if head_pool == NO_HEAD_POOL else head_pool,
        "accelerator": accelerator,
        **shape,
        "tpu_chips": chips,
        "tpu_cpu": sum(int(n["status"]["capacity"]["cpu"]) for n in tpu),
        "tpu_memory": f"{sum(gibibytes(n['status']['capacity']['memory']) for n in tpu)}Gi",
        "head_cpu": sum(int(n["status"]["capacity"]["cpu"]) for n in cpu_nodes),
        "head_memory":
            f"{sum(gibibytes(n['status']['capacity']['memory']) for n in cpu_nodes)}Gi",
    }


def render_profile(yaml, kueue, variables, kueue_api):
    """The objects of a Kueue profile. A v1beta2 file is sent as v1beta1 to a Kueue that serves
    only v1beta1: the fields the profiles use (flavors, queues, quotas) are the same in both."""
    if kueue == "none":
        return []
    try:
        text = string.Template((PROFILES / f"kueue-{kueue}.yaml").read_text()).substitute(
            variables)
    except KeyError as e:
        raise Failure(f"Kueue profile {kueue} is made for one slice shape (${{{e.args[0]}}}), "
                      f"and the {variables['accelerator']} nodes have several topologies; use a "
                      "node pool file with one topology for that accelerator") from e
    objects = [d for d in yaml.safe_load_all(text) if d]
    for obj in objects:
        if obj["apiVersion"] == "kueue.x-k8s.io/v1beta2" and kueue_api == "v1beta1":
            obj["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    return objects


def identity(obj):
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def replace_kueue_objects(kubectl, objects, stamp, launcher=None):
    """Deletes every Kueue object and PriorityClass that is not the profile's, as applied with
    this stamp, then creates the profile's and waits until its queues are Active."""
    existing = [o for o in kubectl.json("get", ",".join(REPLACED), "--all-namespaces")["items"]
                if not (o["kind"] == "PriorityClass" and o["metadata"]["name"].startswith("system-"))]
    current = {identity(o) for o in existing
               if (o["metadata"].get("annotations") or {}).get(PROFILE_ANNOTATION) == stamp}
    if current == {identity(o) for o in objects} and len(existing) == len(objects):
        log(f"Kueue profile {stamp.split('/')[0]} is already in effect")
        return
    if existing:
        kubectl.run("delete", "--wait=false", "--ignore-not-found", "-f", "-",
                    input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
                        {"apiVersion": o["apiVersion"], "kind": o["kind"],
                         "metadata": {k: v for k, v in o["metadata"].items()
                                      if k in ("name", "namespace")}} for o in existing]}))

        def all_gone():
            left = [identity(o) for o in kubectl.json(
                "get", ",".join(REPLACED), "--all-namespaces")["items"]
                if identity(o) in {identity(e) for e in existing}]
            if left:
                raise RuntimeError(f"still there: {left}; a ClusterQueue or ResourceFlavor stays "
                                   "while a workload holds quota in it (delete the jobs first)")
            return True

        wait_for(f"{len(existing)} Kueue objects and PriorityClasses to be deleted", all_gone,
                 60, launcher, "kueue")
    if not objects:
        log("no Kueue configuration")
        return
    kubectl.apply(objects, f"Kueue profile {stamp.split('/')[0]}")
    for kind in ("ClusterQueue", "LocalQueue"):
        for obj in (o for o in objects if o["kind"] == kind):
            meta = obj["metadata"]
            name = f"{kind.lower()}s.{obj['apiVersion'].split('/')[1]}.kueue.x-k8s.io"
            scope = ["-n", meta["namespace"]] if meta.get("namespace") else []

            def active(name=name, meta=meta, scope=scope):
                got = kubectl.json("get", name, meta["name"], *scope)
                return any(c["type"] == "Active" and c["status"] == "True"
                           for c in got.get("status", {}).get("conditions", []))

            wait_for(f"{kind} {meta['name']} to be Active", active, 60, launcher, "kueue")
    log(f"Kueue profile {stamp.split('/')[0]} is in effect")


def relabel_head_pool(kubectl, nodes, head_pool, launcher=None):
    """Moves the CPU nodes into the node pool `head_pool` (DEFAULT_POOL for none) by their
    cloud.google.com/gke-nodepool label, then waits until the scheduler places a pod on each of
    them by the new label, so the next pod scheduled sees the new pool."""
    target = DEFAULT_POOL if head_pool == NO_HEAD_POOL else head_pool
    moved = [n["metadata"]["name"] for n in nodes
             if ACCELERATOR_LABEL not in n["metadata"]["labels"]
             and n["metadata"]["labels"].get(NODEPOOL_LABEL) != target]
    if not moved:
        return
    kubectl.run("label", "--overwrite", "nodes", *moved, f"{NODEPOOL_LABEL}={target}")
    probes = [{"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"testenv-scheduler-probe-{i}", "namespace": "default",
                            "labels": {PROBE_LABEL: "true"}},
               "spec": {"nodeSelector": {"kubernetes.io/hostname": node, NODEPOOL_LABEL: target},
                        "restartPolicy": "Never", "terminationGracePeriodSeconds": 0,
                        "automountServiceAccountToken": False,
                        "containers": [{"name": "probe", "image": "testenv/scheduler-probe"}]}}
              for i, node in enumerate(moved)]
    kubectl.run("create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "List", "items": probes}))
    try:
        def all_bound():
            pods = kubectl.json("get", "pods", "-n", "default", "-l", PROBE_LABEL)["items"]
            unbound = [p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName")]
            if unbound or len(pods) != len(probes):
                raise RuntimeError(f"not placed yet: {unbound}")
            return True

        wait_for(f"the scheduler to place a pod on each node of pool {target}", all_bound, 60,
                 launcher, "kube-scheduler")
    finally:
        kubectl.run("delete", "pods", "-n", "default", "-l", PROBE_LABEL, "--wait=true",
                    "--timeout=60s", check=False)
    log(f"{len(moved)} CPU node(s) moved to node pool {target}")


def apply_profile(kubectl, yaml, profile, launcher=None):
    """Puts a running environment on a profile (kueue, head_pool, accelerator; README.md) and
    waits until it is in effect. What is already in effect is left alone."""
    if profile["kueue"] not in KUEUE_PROFILES:
        raise Failure(f"unknown Kueue profile {profile['kueue']!r}; choose one of "
                      f"{', '.join(KUEUE_PROFILES)}")
    head_pool = profile["head_pool"]
    if not re.fullmatch(r"[a-z]([-a-z0-9]{0,38}[a-z0-9])?", head_pool):
        raise Failure(f"head pool {head_pool!r} is not a node pool name (lower-case letters, "
                      f"digits and '-', at most 40) nor {NO_HEAD_POOL!r}")
    nodes = kubectl.json("get", "nodes")["items"]
    kueue_api = kueue_api_of(kubectl.json("get", "crd", "clusterqueues.kueue.x-k8s.io"))
    objects = render_profile(yaml, profile["kueue"], profile_variables(nodes, profile), kueue_api)
    digest = hashlib.sha256(json.dumps(objects, sort_keys=True).encode()).hexdigest()[:12]
    stamp = f"{profile['kueue']}/{digest}"
    for obj in objects:
        obj["metadata"].setdefault("annotations", {})[PROFILE_ANNOTATION] = stamp
    replace_kueue_objects(kubectl, objects, stamp, launcher)
    relabel_head_pool(kubectl, nodes, head_pool, launcher)


# ---------------------------------------------------------------------------------------------
# up


def run_build(older):
    """testenv/build, its progress shown on stderr; the older releases only when `older`, so an
    environment on the default pins (make demo, most tests) never waits for their build. Returns
    the default binary directory and {(component, version): directory} of the older releases."""
    argv = [str(HERE / "build")] + ([] if older else ["--default-only"])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    last = ""
    releases = {}
    for line in proc.stdout:
        line = line.rstrip("\n")
        if line:
            last = line
        if line.startswith("TESTENV_RELEASE="):
            component, version, directory = line.split("=", 1)[1].split(" ", 2)
            releases[(component, version)] = Path(directory)
        elif not line.startswith("TESTENV_BIN="):
            print(line, file=sys.stderr, flush=True)
    if proc.wait() != 0:
        raise Failure(f"testenv/build failed (exit {proc.returncode})")
    if not last.startswith("TESTENV_BIN="):
        raise Failure(f"testenv/build did not print TESTENV_BIN=... (last line: {last!r})")
    return Path(last.split("=", 1)[1]), releases


def read_pins():
    pins = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, value = line.split("=", 1)
            pins[key.strip()] = value.strip()
    return pins


# The JobSet and Kueue releases `up` can start: the default pin or the older one (versions.env).
RELEASE_CHOICES = {
    "jobset": ("GCLUSTER_TESTENV_JOBSET_VERSION", "JOBSET_VERSION", "OLD_JOBSET_VERSION"),
    "kueue": ("GCLUSTER_TESTENV_KUEUE_VERSION", "KUEUE_VERSION", "OLD_KUEUE_VERSION"),
}


def settings():
    """The choices that make one running environment differ from another."""
    pools = os.environ.get("GCLUSTER_TESTENV_NODEPOOLS") or str(HERE / "nodepools.yaml")
    # "minimal" is the name the unified profile had before there were others.
    kueue = os.environ.get("GCLUSTER_TESTENV_KUEUE") or "minimal"
    if kueue != "minimal" and kueue not in KUEUE_PROFILES:
        raise Failure(f"GCLUSTER_TESTENV_KUEUE must be one of {', '.join(KUEUE_PROFILES)} "
                      f"(or minimal, the same as unified), not {kueue!r}")
    # "portforward": what pods' port 29000 reaches; environments started before it had none.
    wanted = {"nodepools": str(Path(pools).resolve()), "kueue": kueue, "portforward": "echo"}
    # An older release is recorded only when chosen, so environments started before the choice
    # existed still count as healthy.
    pins = read_pins()
    for component, (variable, default_key, old_key) in RELEASE_CHOICES.items():
        version = os.environ.get(variable) or pins[default_key]
        if version not in (pins[default_key], pins[old_key]):
            raise Failure(f"{variable} must be {pins[default_key]} (the default) or "
                          f"{pins[old_key]} (the older release), the {component} versions pinned "
                          f"in versions.env; not {version!r}")
        if version != pins[default_key]:
            wanted[f"{component}_version"] = version
    # Opt-in: GCLUSTER_TESTENV_FAKE_LOG=<file in CRI log format> makes kwok serve that file as
    # every container's log instead of fake-logs/container.log (the benchmarks stream megabytes).
    # The key is absent by default, so environments started without it still count as healthy.
    fake_log = os.environ.get("GCLUSTER_TESTENV_FAKE_LOG")
    if fake_log:
        wanted["fake_log"] = str(Path(fake_log).resolve())
    # Opt-in: GCLUSTER_TESTENV_PREREQS=none starts without JobSet and Kueue, for a deploy that
    # installs them from their release manifests (README.md, "Installed by deploy").
    prereqs = os.environ.get("GCLUSTER_TESTENV_PREREQS")
    if prereqs not in (None, "", "none"):
        raise Failure(f"GCLUSTER_TESTENV_PREREQS must be none (or unset), not {prereqs!r}")
    if prereqs == "none":
        wanted["prereqs"] = "none"
        wanted["kueue"] = "none"
    return wanted


def healthy(root, wanted):
    """An environment started earlier that is complete, running and started with `wanted`."""
    try:
        state = json.loads((root / "state.json").read_text())
    except (OSError, ValueError):
        return None
    if state.get("settings") != wanted:
        log(f"the running environment was started with {state.get('settings')}; restarting it")
        return None
    for name, pid in state["pids"].items():
        if not (is_running(pid) and refers_to(pid, root)):
            log(f"{name} (pid {pid}) is not running; restarting the environment")
            return None
    certs, ports = root / "certs", state["ports"]
    try:
        ready = ok_body(https_get(f"https://127.0.0.1:{ports['apiserver']}/readyz", certs))
        # Without prerequisites the controllers start only once deploy installed their CRDs.
        if wanted.get("prereqs") != "none":
            ready = ready and (
                ok_body(http_get(f"http://127.0.0.1:{ports['jobset_health']}/readyz"))
                and ok_body(http_get(f"http://127.0.0.1:{ports['kueue_health']}/readyz")))
    except OSError as e:
        log(f"the running environment does not answer ({e}); restarting it")
        return None
    return state if ready else None


class ControlPlane:
    """One start of the environment, step by step; each step waits until its part is ready."""

    PORTS = ["etcd", "etcd_peer", "apiserver", "controller_manager", "scheduler", "kwok",
             "jobset_webhook", "jobset_health", "kueue_webhook", "kueue_health"]

    def __init__(self, root, wanted, build):
        bin_dir, releases = build
        self.root, self.wanted, self.bin_dir = root, wanted, bin_dir
        self.yaml = yaml_module()
        self.pins = read_pins()
        # Each project's binary and upstream YAML: the default build, or an older release's.
        self.bin_dirs = {}
        self.upstream = {p: bin_dir.parent / "upstream" / p for p in ("jobset", "kueue")}
        self.versions = {"jobset": self.pins["JOBSET_VERSION"], "kueue": self.pins["KUEUE_VERSION"]}
        for project in ("jobset", "kueue"):
            version = wanted.get(f"{project}_version")
            if version:
                directory = releases.get((project, version))
                if directory is None:
                    raise Failure(f"testenv/build did not build {project} {version}")
                self.bin_dirs[project] = directory / "bin"
                self.upstream[project] = directory / "upstream" / project
                self.versions[project] = version
        self.kueue_api = served_kueue_api(self.yaml, self.upstream["kueue"])
        self.certs, self.config = root / "certs", root / "config"
        self.kubeconfig = root / "kubeconfig"
        self.ports = dict(zip(self.PORTS, free_ports(len(self.PORTS))))
        self.api = f"https://127.0.0.1:{self.ports['apiserver']}"
        self.etcd_url = f"http://127.0.0.1:{self.ports['etcd']}"
        self.urls = {"jobset": f"https://127.0.0.1:{self.ports['jobset_webhook']}",
                     "kueue": f"https://127.0.0.1:{self.ports['kueue_webhook']}"}
        self.launcher = Launcher(root)
        self.kubectl = None
        # GCLUSTER_TESTENV_PREREQS=none: no JobSet or Kueue until something installs them.
        self.bare = wanted.get("prereqs") == "none"
        # Read (and checked) before anything starts.
        self.nodes = node_objects(self.yaml, wanted["nodepools"], self.pins["KUBERNETES_VERSION"])

    def bin(self, name):
        return str(self.bin_dirs.get(name, self.bin_dir) / name)

    def wait(self, what, probe, timeout, component, interval=0.25):
        return wait_for(what, probe, timeout, self.launcher, component, interval)

    def prepare(self):
        for sub in ("pids", "logs", "etcd", "config", "fake-logs"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        (self.root / "etcd").chmod(0o700)
        make_certs(self.certs)
        ensure_kueue_metrics_cert()
        write_kubeconfig(self.kubeconfig, self.certs, self.ports["apiserver"])
        self.ca_bundle = b64(self.certs / "ca.crt")
        self.write_configs()

    def write_configs(self):
        ports, certs, config = self.ports, self.certs, self.config
        webhook = {"host": "127.0.0.1", "certDir": str(certs / "webhook-serving")}
        (config / "scheduler.yaml").write_text(json.dumps({
            "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "clientConnection": {"kubeconfig": str(self.kubeconfig), "qps": 200, "burst": 400},
            "leaderElection": {"leaderElect": False}}))
        (config / "jobset.yaml").write_text(json.dumps({
            "apiVersion": "config.jobset.x-k8s.io/v1alpha1", "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {**webhook, "port": ports["jobset_webhook"]},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['jobset_health']}"},
            "clientConnection": {"qps": 200, "burst": 400}}))
        # Kueue's configuration API moved to v1beta2 together with its object API.
        (config / "kueue.yaml").write_text(json.dumps({
            "apiVersion": f"config.kueue.x-k8s.io/{self.kueue_api}", "kind": "Configuration",
            "namespace": "kueue-system",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {**webhook, "port": ports["kueue_webhook"]},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['kueue_health']}"},
            "clientConnection": {"qps": 200, "burst": 400},
            "manageJobsWithoutQueueName": False,
            "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
            # The visibility API server needs an APIService and in-cluster auth; not used here.
            "featureGates": {"VisibilityOnDemand": False}}))
        # Cluster traffic (webhooks behind Services, kwok's kubelet port) through
        # installed-webhooks, which sends the installed webhook Services to the local controllers.
        (config / "egress.yaml").write_text(json.dumps({
            "apiVersion": "apiserver.k8s.io/v1beta1", "kind": "EgressSelectorConfiguration",
            "egressSelections": [{"name": "cluster", "connection": {
                "proxyProtocol": "HTTPConnect",
                "transport": {"uds": {"udsName": str(self.root / "egress.sock")}}}}]}))
        shutil.copy(HERE / "kwok" / "stages.yaml", config / "kwok-stages.yaml")
        # A copy, so a running environment does not depend on the work tree it came from.
        fake_log = self.root / "fake-logs" / "container.log"
        shutil.copy(self.wanted.get("fake_log") or HERE / "fake-logs" / "container.log", fake_log)
        # Containers named `numbered-log` get fake-logs/numbered.log instead: empty at start, for
        # tests that append (CRI-format) lines to it, or point it (a symlink) at a file of their
        # own, while a follower reads. kwok follows a growing file as a kubelet follows a
        # container's log, and honours sinceTime, tailLines and timestamps.
        numbered_log = self.root / "fake-logs" / NUMBERED_LOG
        numbered_log.touch()
        (config / "kwok-logs.yaml").write_text(json.dumps({
            "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterLogs",
            "metadata": {"name": "testenv-fake-logs"},
            "spec": {"selector": {}, "logs": [
                {"containers": [NUMBERED_CONTAINER], "logsFile": str(numbered_log),
                 "previousLogsFile": str(numbered_log)},
                {"logsFile": str(fake_log), "previousLogsFile": str(fake_log)}]}}))

    def start_etcd(self):
        peer = f"http://127.0.0.1:{self.ports['etcd_peer']}"
        self.launcher.start("etcd", [
            self.bin("etcd"), "--name=testenv", f"--data-dir={self.root / 'etcd'}",
            f"--listen-client-urls={self.etcd_url}", f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer}", f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=testenv={peer}", "--initial-cluster-state=new",
            "--unsafe-no-fsync", "--log-level=warn", "--listen-metrics-urls="])
        self.wait("etcd /health",
                  lambda: '"health":"true"' in http_get(f"{self.etcd_url}/health")[1], 30, "etcd")
        log(f"etcd is up on {self.etcd_url}")

    def start_apiserver(self):
        certs = self.certs
        self.launcher.start("kube-apiserver", [
            self.bin("kube-apiserver"), f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
            f"--secure-port={self.ports['apiserver']}",
            f"--cert-dir={certs / 'apiserver-generated'}",
            f"--tls-cert-file={certs / 'apiserver.crt'}",
            f"--tls-private-key-file={certs / 'apiserver.key'}",
            f"--client-ca-file={certs / 'ca.crt'}", "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={certs / 'sa.pub'}",
            f"--service-account-signing-key-file={certs / 'sa.key'}",
            "--service-cluster-ip-range=10.96.0.0/16", "--allow-privileged=true",
            f"--kubelet-client-certificate={certs / 'admin.crt'}",
            f"--kubelet-client-key={certs / 'admin.key'}",
            f"--kubelet-preferred-address-types={KUBELET_ADDRESS_TYPE}", "--profiling=false",
            # Nothing in the cluster dials the `kubernetes` Service, and loopback endpoints are
            # rejected, so the API server does not publish its own address.
            "--endpoint-reconciler-type=none",
            # GKE's nodes lose the not-ready taint when the node lifecycle controller sees them
            # Ready; that controller is off here (see CONTROLLERS), so nodes never get it.
            "--disable-admission-plugins=TaintNodesByCondition",
            *([f"--egress-selector-config-file={self.config / 'egress.yaml'}"] if self.bare else []),
            "--v=1"])
        self.wait("kube-apiserver /readyz",
                  lambda: ok_body(https_get(f"{self.api}/readyz", certs)), 120, "kube-apiserver")
        log(f"kube-apiserver is ready on {self.api}")
        self.kubectl = Kubectl(self.kubeconfig)

    def register_apis(self):
        """CRDs before the controllers that serve them; Nodes (with GKE's capacity) before kwok,
        so kwok only has to mark them Ready."""
        crd_objects = [] if self.bare else crds(self.yaml, self.upstream, self.urls["kueue"],
                                                 self.ca_bundle)
        crd_objects.append(kwok_portforward_crd(self.yaml))
        self.kubectl.apply(crd_objects, f"{len(crd_objects)} JobSet, Kueue and kwok CRDs")
        self.kubectl.run("wait", "--for=condition=Established", "--timeout=60s",
                         *[f"crd/{c['metadata']['name']}" for c in crd_objects])
        if not self.bare:
            self.kubectl.apply([{"apiVersion": "v1", "kind": "Namespace",
                                 "metadata": {"name": "kueue-system"}}], "namespace kueue-system")
        pools = self.wanted["nodepools"]
        self.kubectl.run("create", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": self.nodes}))
        log(f"created {len(self.nodes)} nodes from {pools}")

    def start_echo(self):
        """The echo server behind every pod's port 29000, and kwok's rule that routes there."""
        port_file = self.root / "echo.port"
        self.launcher.start(ECHO_SERVER, [sys.executable, str(HERE / ECHO_SERVER),
                                          f"--port-file={port_file}"])
        self.echo_port = self.wait("the echo server", lambda: int(port_file.read_text()), 30,
                                   ECHO_SERVER)
        (self.config / "kwok-portforward.yaml").write_text(json.dumps({
            "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "ClusterPortForward",
            "metadata": {"name": "testenv-echo"},
            "spec": {"forwards": [{"ports": [PROXY_PORT],
                                   "target": {"address": "127.0.0.1", "port": self.echo_port}}]}}))
        log(f"echo server on 127.0.0.1:{self.echo_port} behind every pod's port {PROXY_PORT}")

    def start_controllers(self):
        ports, certs, config, kubeconfig = self.ports, self.certs, self.config, self.kubeconfig
        start = self.launcher.start
        start("kube-controller-manager", [
            self.bin("kube-controller-manager"), f"--kubeconfig={kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={ports['controller_manager']}",
            f"--cert-dir={certs / 'kcm-generated'}", "--leader-elect=false",
            # Installed controllers run as Deployments, so their controllers run too.
            f"--controllers={','.join(CONTROLLERS + (DEPLOYMENT_CONTROLLERS if self.bare else []))}",
            f"--service-account-private-key-file={certs / 'sa.key'}",
            f"--root-ca-file={certs / 'ca.crt'}", "--use-service-account-credentials=false",
            "--kube-api-qps=200", "--kube-api-burst=400", "--v=1"])
        start("kube-scheduler", [
            self.bin("kube-scheduler"), f"--config={config / 'scheduler.yaml'}",
            "--bind-address=127.0.0.1", f"--secure-port={ports['scheduler']}",
            f"--cert-dir={certs / 'scheduler-generated'}", "--v=1"])
        # kwok renews every node's lease each quarter of its duration; with thousands of nodes
        # that is most of the API server's work when idle, so the duration grows with the node
        # count (nothing here reads leases: the node lifecycle controller is off).
        lease_seconds = max(40, len(self.nodes) // 5)
        start("kwok", [
            self.bin("kwok"), f"--kubeconfig={kubeconfig}",
            f"--config={config / 'kwok-stages.yaml'}", f"--config={config / 'kwok-logs.yaml'}",
            f"--config={config / 'kwok-portforward.yaml'}", "--enable-crds=PortForward",
            "--manage-nodes-with-annotation-selector=" + "=".join(KWOK_NODE_ANNOTATION),
            f"--server-address=127.0.0.1:{ports['kwok']}", f"--node-port={ports['kwok']}",
            f"--node-ip={KWOK_FALLBACK_IP}", "--cidr=10.64.0.0/16",
            f"--node-lease-duration-seconds={lease_seconds}",
            f"--tls-cert-file={certs / 'kwok.crt'}",
            f"--tls-private-key-file={certs / 'kwok.key'}"])
        controllers = {name: [self.bin(name), f"--kubeconfig={kubeconfig}",
                              f"--config={config / (name + '.yaml')}",
                              "--zap-devel=false", "--zap-log-level=info"]
                       for name in ("jobset", "kueue")}
        if self.bare:
            start("installed-webhooks", [
                sys.executable, str(HERE / "installed-webhooks"), f"--server={self.api}",
                f"--certs={certs}", f"--socket={self.root / 'egress.sock'}",
                f"--logs={self.root / 'logs'}",
                *[f"--route={svc.split('.')[1]}/{svc.split('.')[0]}="
                  f"{ports[name + '_webhook']}"
                  for name, svc in INSTALLED_WEBHOOK_SERVICES.items()],
                *[f"--start={name}={INSTALLED_CRDS[name]}={json.dumps(argv)}"
                  for name, argv in controllers.items()]])
        else:
            for name, argv in controllers.items():
                start(name, argv)

        def https_ok(port, client):
            return ok_body(https_get(f"https://127.0.0.1:{port}/healthz", certs, client, False))

        self.wait("kube-controller-manager /healthz",
                  lambda: https_ok(ports["controller_manager"], False), 60,
                  "kube-controller-manager")
        self.wait("kube-scheduler /healthz", lambda: https_ok(ports["scheduler"], False), 60,
                  "kube-scheduler")
        self.wait("kwok /healthz", lambda: https_ok(ports["kwok"], True), 60, "kwok")
        if self.bare:
            self.wait("the egress proxy", lambda: (self.root / "egress.sock").exists(), 30,
                      "installed-webhooks")
            log("controller-manager, scheduler and kwok are up; JobSet and Kueue start when "
                "their CRDs are installed")
            return
        for name in ("jobset", "kueue"):
            self.wait(f"{name} /readyz", lambda n=name: ok_body(http_get(
                f"http://127.0.0.1:{ports[n + '_health']}/readyz")), 90, name)
        log("controller-manager, scheduler, kwok, JobSet and Kueue are up")

    def register_webhooks(self):
        if self.bare:
            return
        hooks = webhook_configurations(self.yaml, self.upstream, self.urls, self.ca_bundle)
        self.kubectl.apply(hooks, "JobSet and Kueue webhook configurations")

        def webhooks_answer():
            # A server-side dry run passes through the JobSet and the Kueue webhooks for
            # JobSets and Kueue's webhooks for its own objects, and stores nothing.
            flavor = {**PROBE_FLAVOR, "apiVersion": f"kueue.x-k8s.io/{self.kueue_api}"}
            for probe, component in ((PROBE_JOBSET, "jobset"), (flavor, "kueue")):
                proc = self.kubectl.run("create", "--dry-run=server", "-o", "name", "-f", "-",
                                        input=json.dumps(probe), check=False)
                if proc.returncode != 0:
                    raise RuntimeError(f"{component}: {proc.stderr.strip()}")
            return True

        self.wait("the JobSet and Kueue webhooks to answer", webhooks_answer, 60, "kueue")

    def wait_nodes_ready(self):
        def nodes_ready():
            items = self.kubectl.json("get", "nodes")["items"]
            ready = {n["metadata"]["name"] for n in items
                     if any(c["type"] == "Ready" and c["status"] == "True"
                            for c in n.get("status", {}).get("conditions", []))}
            missing = {n["metadata"]["name"] for n in self.nodes} - ready
            if missing:
                raise RuntimeError(f"{len(missing)} not Ready, e.g. {sorted(missing)[0]}")
            return True

        # kwok marks a few dozen nodes Ready a second: allow for that on a large node pool file.
        self.wait(f"{len(self.nodes)} nodes to be Ready", nodes_ready, 60 + len(self.nodes) / 10,
                  "kwok", interval=0.5)
        log(f"{len(self.nodes)} nodes are Ready")
        self.wait("service account default/default", lambda: self.kubectl.run(
            "get", "serviceaccount", "default", "-n", "default", check=False).returncode == 0,
            60, "kube-controller-manager")

    def apply_profile(self):
        kueue = "unified" if self.wanted["kueue"] == "minimal" else self.wanted["kueue"]
        apply_profile(self.kubectl, self.yaml, {**DEFAULT_PROFILE, "kueue": kueue},
                      self.launcher)

    def save_state(self, startup_seconds):
        versions = {**self.pins, "JOBSET_VERSION": self.versions["jobset"],
                    "KUEUE_VERSION": self.versions["kueue"]}
        state = {"settings": self.wanted, "ports": self.ports, "bin": str(self.bin_dir),
                 "bin_dirs": {k: str(v) for k, v in self.bin_dirs.items()},
                 "kubeconfig": str(self.kubeconfig), "versions": versions,
                 "pids": {name: proc.pid for name, proc in self.launcher.procs.items()},
                 "echo_port": self.echo_port,
                 "argv": self.launcher.argv, "startup_seconds": startup_seconds}
        (self.root / "state.json").write_text(json.dumps(state, indent=2) + "\n")


def start(root, wanted):
    t0 = time.monotonic()
    if not Path(wanted["nodepools"]).is_file():
        raise Failure(f"node pool file {wanted['nodepools']} does not exist")
    if "fake_log" in wanted and not Path(wanted["fake_log"]).is_file():
        raise Failure(f"GCLUSTER_TESTENV_FAKE_LOG: {wanted['fake_log']} does not exist")
    older = any(f"{component}_version" in wanted for component in RELEASE_CHOICES)
    plane = ControlPlane(root, wanted, run_build(older))
    t_built = time.monotonic()
    plane.prepare()
    plane.start_etcd()
    plane.start_apiserver()
    plane.register_apis()
    plane.start_echo()
    plane.start_controllers()
    plane.register_webhooks()
    plane.wait_nodes_ready()
    if wanted["kueue"] != "none":
        plane.apply_profile()
    startup = round(time.monotonic() - t_built, 1)
    plane.save_state(startup)
    log(f"ready in {time.monotonic() - t0:.1f}s ({startup}s after the build): "
        f"{len(plane.nodes)} nodes, JobSet {plane.versions['jobset']}, Kueue "
        f"{plane.versions['kueue']} ({plane.kueue_api}), API server {plane.api}, context {CONTEXT}, "
        f"state in {root}")


def tail(path, lines=40):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def start_with_retry(root, wanted):
    """start(), once more if a port picked at random was taken before its server bound it."""
    for attempt in (1, 2):
        if root.exists() or our_processes(root):
            teardown(root, quiet=True)
        try:
            return start(root, wanted)
        except Failure as e:
            log_path = root / "logs" / f"{e.component}.log"
            if attempt == 1 and e.component and "address already in use" in tail(log_path):
                log(f"{e.component} lost its port to another process; starting again")
                continue
            raise


INOTIFY_INSTANCES = Path("/proc/sys/fs/inotify/max_user_instances")
INOTIFY_WANTED = 1024


def raise_inotify_limit():
    """Every controller's file watches (certificates, configs) take inotify instances, and
    Debian's default of 128 per user runs out with two or three environments up at once (the
    matrix's second environment, a bench beside the tests): a controller then dies with "too many
    open files". As root, raise the limit; otherwise say what to run."""
    try:
        current = int(INOTIFY_INSTANCES.read_text())
    except (OSError, ValueError):
        return
    if current >= INOTIFY_WANTED:
        return
    try:
        INOTIFY_INSTANCES.write_text(f"{INOTIFY_WANTED}\n")
        log(f"raised fs.inotify.max_user_instances from {current} to {INOTIFY_WANTED}")
    except OSError:
        log(f"warning: fs.inotify.max_user_instances is {current}; several environments at once "
            f"need more: sudo sysctl fs.inotify.max_user_instances={INOTIFY_WANTED}")


def up():
    raise_inotify_limit()
    root = state_dir()
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            wanted = settings()
            if healthy(root, wanted):
                log(f"already up (state in {root})")
            else:
                start_with_retry(root, wanted)
        except Exception as e:  # noqa: BLE001 - whatever went wrong, leave nothing running
            component = getattr(e, "component", None)
            log(f"error: {e}")
            if component:
                log_path = root / "logs" / f"{component}.log"
                print(f"---- last lines of {log_path} ----\n{tail(log_path)}\n----",
                      file=sys.stderr)
            try:
                teardown(root, quiet=True)
                log("stopped everything this attempt started")
            except Failure as e2:
                log(f"error during clean-up: {e2}")
            return 1
        except KeyboardInterrupt:
            teardown(root, quiet=True)
            return 130
    print(f"KUBECONFIG={root / 'kubeconfig'}", flush=True)
    return 0


def down():
    root = state_dir()
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            teardown(root)
        except Failure as e:
            log(f"error: {e}")
            return 1
    return 0


def apiserver(action):
    """`testenv/apiserver stop|kill|start`: stops the running environment's kube-apiserver
    (stop: SIGTERM, as a control plane upgrade does, letting answers under way finish; kill:
    SIGKILL, as when its machine dies, cutting them) or starts it again with the same flags, port
    and etcd, so every object survives; for tests of clients that must ride out a restart."""
    root = state_dir()
    try:
        state = json.loads((root / "state.json").read_text())
        argv = state["argv"]["kube-apiserver"]
    except (OSError, ValueError, KeyError) as e:
        log(f"error: no running environment with a restartable API server in {root} ({e})")
        return 1
    pid = state["pids"]["kube-apiserver"]
    if action in ("stop", "kill"):
        live = [pid] if is_running(pid) and refers_to(pid, root) else []
        left = stop_processes(live, grace=0.0 if action == "kill" else 15.0)
        if left:
            log(f"error: kube-apiserver (pid {pid}) did not exit")
            return 1
        log(f"{'killed' if action == 'kill' else 'stopped'} kube-apiserver (pid {pid})")
        return 0
    if is_running(pid) and refers_to(pid, root):
        log(f"kube-apiserver is already running (pid {pid})")
        return 0
    launcher = Launcher(root)
    proc = launcher.start("kube-apiserver", argv)
    api = f"https://127.0.0.1:{state['ports']['apiserver']}"
    try:
        wait_for("kube-apiserver /readyz",
                 lambda: ok_body(https_get(f"{api}/readyz", root / "certs")), 120, launcher,
                 "kube-apiserver")
    except Failure as e:
        log(f"error: {e}")
        return 1
    state["pids"]["kube-apiserver"] = proc.pid
    (root / "state.json").write_text(json.dumps(state, indent=2) + "\n")
    log(f"kube-apiserver is ready again on {api} (pid {proc.pid})")
    return 0


def profile(args):
    kubeconfig = Path(args.kubeconfig or state_dir() / "kubeconfig")
    if not kubeconfig.is_file():
        log(f"error: {kubeconfig} does not exist; start the environment with testenv/up "
            "(or name its kubeconfig with --kubeconfig)")
        return 1
    try:
        apply_profile(Kubectl(kubeconfig), yaml_module(), {
            "kueue": args.kueue, "head_pool": args.head_pool, "accelerator": args.accelerator})
    except Failure as e:
        log(f"error: {e}")
        return 1
    return 0


def main(argv):
    # SIGTERM (e.g. a CI time-out) during `up` must still tear down what was started.
    def interrupted(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    parser = argparse.ArgumentParser(prog="testenv.py", description="The local control plane "
                                     "of the cluster tests (testenv/README.md).")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("up", help="start (or reuse) the environment")
    commands.add_parser("down", help="stop the environment and remove its state")
    p = commands.add_parser("profile", help="put the running environment on a profile: Kueue "
                            "configuration and head node pool")
    p.add_argument("kueue", choices=KUEUE_PROFILES, help="the Kueue configuration")
    p.add_argument("--head-pool", default=DEFAULT_PROFILE["head_pool"], metavar="NAME",
                   help=f"node pool of the CPU nodes (default {DEFAULT_PROFILE['head_pool']}); "
                        f"{NO_HEAD_POOL}: no head pool (they go to {DEFAULT_POOL})")
    p.add_argument("--accelerator", default=DEFAULT_PROFILE["accelerator"], metavar="LABEL",
                   help="the TPU accelerator the Kueue configuration is made for (default "
                        f"{DEFAULT_PROFILE['accelerator']})")
    p.add_argument("--kubeconfig", help="the environment's kubeconfig (default: the one in "
                   "the state directory, as testenv/up prints it)")
    a = commands.add_parser("apiserver", help="stop (SIGTERM), kill (SIGKILL) or start again "
                            "the running environment's kube-apiserver, keeping its state")
    a.add_argument("action", choices=("stop", "kill", "start"))
    args = parser.parse_args(argv[1:])
    if args.command == "profile":
        return profile(args)
    if args.command == "apiserver":
        return apiserver(args.action)
    return {"up": up, "down": down}[args.command]()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
