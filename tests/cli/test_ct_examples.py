"""`gcluster deploy` over Cluster Toolkit's own blueprints (tests/fixtures/cluster-toolkit, see
its SOURCE file): every GKE blueprint of CT v1.98.0's examples/ and community/examples/.

For each blueprint:
- `deploy BP --vars <only the variables it leaves empty> --dry-run-out -` exits 0, and so does
  the same with the toolkit's deployment file next to it (-d) where there is one;
- the Kueue objects equal, field by field, what the toolkit's kubectl-apply module applies for
  the blueprint: its template (the blueprint's staged file, or the module's built-in
  kueue-configuration*.yaml.tftpl) rendered below by `templatefile`, a substitute for
  Terraform's function that knows only what these files use (${name} and
  %{ if name != "" }...%{ endif }), then treated as the module's main.tf does (its default
  template variables, the documents split on "\\n---", ClusterQueues of one name merged, the
  Helm release's namespace kueue-system for namespaced objects without one). The template
  variables each blueprint passes are written out by hand below, with their arithmetic.

Quantities are compared by value, as the API server stores them (2000G and 2T are one
quantity). Run: GCLUSTER=build/gcluster python3 -m pytest -q tests/cli/test_ct_examples.py
"""
import json
import os
import pathlib
import re
import ssl
import subprocess
import sys
import time
import urllib.request
from fractions import Fraction

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
CT = REPO / "tests" / "fixtures" / "cluster-toolkit"
GCLUSTER = os.environ.get("GCLUSTER", str(REPO / "build" / "gcluster"))
BUILTIN = "modules/management/kubectl-apply/kueue/"


def is_blueprint(path):
    text = path.read_text()
    return "blueprint_name:" in text and "deployment_groups:" in text


BLUEPRINTS = sorted(str(p.relative_to(CT)) for p in CT.rglob("*.yaml") if is_blueprint(p))

# Values for the variables a blueprint leaves empty (the ones its README says to set).
VALUES = {
    "project_id": "ct-test-project",
    "deployment_name": "ct-test",
    "region": "us-central1",
    "zone": "us-central1-b",
    "authorized_cidr": "10.0.0.0/32",
    "reservation": "test-reservation",
    "reservation_project_id": "ct-test-project",
    "static_node_count": 2,
    "num_node_pools": 1,
    "num_slices": 2,
    "autoscaling_min_node_count": 0,
    "autoscaling_max_node_count": 4,
    "num_gpus": 1,
}
# Those that depend on the blueprint's machine.
PER_BLUEPRINT = {
    "gke-tpu-v6e": {"machine_type": "ct6e-standard-4t", "tpu_topology": "4x4"},
    "gke-tpu-v5e": {"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "4x4"},
    "gke-tpu-7x": {"tpu_topology": "2x2x2"},
    "gke-g4": {"machine_type": "g4-standard-48"},
}

# The Kueue configuration the toolkit applies: (template, config_template_vars), or absent when
# it applies none (no kueue.install, or install without config_path and without Pathways or
# dynamic slicing). num_slices is 2; a 4x4 slice of ct6e/ct5lp 4-chip hosts has 4 hosts, a
# 2x2x2 slice of tpu7x-standard-4t 2; static GPU pools have static_node_count 2.
EXPECTED = {
    # 2 slices x 4 hosts x 4 chips
    "examples/gke-tpu-v6e/gke-tpu-v6e.yaml": (
        "examples/gke-tpu-v6e/kueue-configuration.yaml.tftpl",
        {"tpu_quota": 32, "accelerator_type": "tpu-v6e-slice", "namespace": "default"}),
    "examples/gke-tpu-v6e/gke-tpu-v6e-advanced.yaml": (
        "examples/gke-tpu-v6e/kueue-configuration.yaml.tftpl",
        {"tpu_quota": 32, "accelerator_type": "tpu-v6e-slice", "namespace": "default"}),
    # 2 slices x 2 hosts x 4 chips
    "examples/gke-tpu-7x/gke-tpu-7x.yaml": (
        "examples/gke-tpu-7x/kueue-configuration.yaml.tftpl",
        {"tpu_quota": 16, "accelerator_type": "tpu7x", "namespace": "default"}),
    "examples/gke-tpu-7x/gke-tpu-7x-advanced.yaml": (
        "examples/gke-tpu-7x/kueue-configuration.yaml.tftpl",
        {"tpu_quota": 16, "accelerator_type": "tpu7x", "namespace": "default"}),
    # No config_path and enable_pathways_for_tpus: the built-in Pathways configuration.
    "examples/gke-tpu-v5e/gke-tpu-v5e.yaml": (
        BUILTIN + "kueue-configuration-pathways.yaml.tftpl",
        {"tpu_quota": 32, "accelerator_type": "tpu-v5-lite-podslice", "tpu_topology": "4x4",
         "namespace": "default"}),
    # flex-start: 2 slices x autoscaling_max_node_count 4 x 4 chips
    "examples/gke-consumption-options/dws-flex-start/gke-tpu-v6e/gke-tpu-v6e.yaml": (
        "examples/gke-consumption-options/dws-flex-start/gke-tpu-v6e/"
        "kueue-configuration.yaml.tftpl",
        {"tpu_quota": 32, "accelerator_type": "tpu-v6e-slice"}),
    "examples/gke-consumption-options/dws-flex-start/gke-tpu-7x/gke-tpu-7x.yaml": (
        "examples/gke-consumption-options/dws-flex-start/gke-tpu-7x/"
        "kueue-configuration.yaml.tftpl",
        {"tpu_quota": 32, "accelerator_type": "tpu7x"}),
    "examples/gke-consumption-options/dws-flex-start-queued-provisioning/gke-tpu-v6e/"
    "gke-tpu-v6e.yaml": (
        "examples/gke-consumption-options/dws-flex-start-queued-provisioning/"
        "tpu-dws-queues.yaml.tftpl",
        {"tpu_quota": 32, "accelerator_type": "tpu-v6e-slice", "tpu_topology": "4x4"}),
    "examples/gke-consumption-options/dws-flex-start-queued-provisioning/gke-tpu-7x/"
    "gke-tpu-7x.yaml": (
        "examples/gke-consumption-options/dws-flex-start-queued-provisioning/"
        "tpu-dws-queues.yaml.tftpl",
        {"tpu_quota": 32, "accelerator_type": "tpu7x", "tpu_topology": "2x2x2"}),
    "examples/gke-consumption-options/dws-flex-start-queued-provisioning/gke-a3-ultragpu.yaml": (
        "examples/gke-consumption-options/dws-flex-start-queued-provisioning/"
        "dws-queues.yaml.tftpl",
        {"num_gpus": 512}),
    # static_gpu_count: static_node_count x guest_accelerator count
    "examples/gke-a3-highgpu/gke-a3-highgpu.yaml": (
        "examples/gke-a3-highgpu/kueue-configuration.yaml.tftpl",
        {"num_gpus": 16, "accelerator_type": "nvidia-h100-80gb"}),
    "examples/gke-a3-megagpu/gke-a3-megagpu.yaml": (
        "examples/gke-a3-megagpu/kueue-configuration.yaml.tftpl",
        {"num_gpus": 16, "accelerator_type": "nvidia-h100-mega-80gb"}),
    "examples/gke-a3-ultragpu/gke-a3-ultragpu.yaml": (
        "examples/gke-a3-ultragpu/kueue-configuration.yaml.tftpl",
        {"num_gpus": 16, "accelerator_type": "nvidia-h200-141gb"}),
    "examples/gke-a4/gke-a4.yaml": (
        "examples/gke-a4/kueue-configuration.yaml.tftpl",
        {"num_gpus": 16, "accelerator_type": "nvidia-b200"}),
    "examples/gke-a4x/gke-a4x.yaml": (
        "examples/gke-a4x/kueue-configuration.yaml.tftpl",
        {"num_gpus": 8, "accelerator_type": "nvidia-gb200"}),
    "examples/gke-a4x-max-bm/gke-a4x-max-bm.yaml": (
        "examples/gke-a4x-max-bm/kueue-configuration.yaml.tftpl",
        {"num_gpus": 8, "accelerator_type": "nvidia-gb300"}),
    "community/examples/xpk-n2-filestore/xpk-n2-filestore.yaml": (
        "community/examples/xpk-n2-filestore/kueue-xpk-configuration.yaml.tftpl",
        {"machine_type": "n2-standard-32", "vms_per_slice": 2, "cpu_count": 64}),
}

# kubectl-apply's template variables before config_template_vars (its main.tf locals).
MODULE_DEFAULTS = {"pathways_cpu_quota": 480, "pathways_memory_quota": "2000G",
                   "tpu_flavor_cpu_quota": "999999", "tpu_flavor_memory_quota": "999999T",
                   "tpu_quota": "999999", "tpu_topology": ""}
NAMESPACED_WITHOUT_NAMESPACE_GO_TO = "kueue-system"  # the module's Helm release namespace
CLUSTER_SCOPED = {"ResourceFlavor", "ClusterQueue", "Topology", "AdmissionCheck",
                  "ProvisioningRequestConfig", "PriorityClass", "WorkloadPriorityClass",
                  "GKENetworkParamSet", "Network", "CheckpointConfiguration", "Namespace",
                  "PersistentVolume"}
# What the gke-cluster module applies beside the Kueue configuration: per additional gVNIC network
# a GKENetworkParamSet and a Network of the same name (multi-networking), and for multi-tier
# checkpointing the CheckpointConfiguration; with configure_workload_identity_sa the Workload
# Identity ServiceAccount (and its Namespace when not default); and the gke-persistent-volume
# modules' gcsfuse PersistentVolume and PersistentVolumeClaim.
CLUSTER_MODULE_KINDS = {"GKENetworkParamSet", "Network", "CheckpointConfiguration",
                        "ServiceAccount", "Namespace", "PersistentVolume",
                        "PersistentVolumeClaim"}


def templatefile(text, variables):
    """Terraform's templatefile for the constructs these templates use."""
    def condition(m):
        return m.group(2) if str(variables[m.group(1)]) != "" else ""
    text = re.sub(r'%\{ if (\w+) != "" \}(.*?)%\{ endif \}', condition, text)
    text = re.sub(r"\$\{(\w+)\}", lambda m: str(variables[m.group(1)]), text)
    assert "${" not in text and "%{" not in text, "a construct the substitute does not know"
    return text


def toolkit_objects(template, user_vars):
    variables = dict(MODULE_DEFAULTS, **user_vars)
    raw = (CT / template).read_text()
    content = templatefile(raw, variables) if template.endswith(".tftpl") or user_vars else raw
    docs = [yaml.safe_load(d.strip()) for d in content.split("\n---") if d.strip()]
    docs = [d for d in docs if d is not None]
    others = [d for d in docs if d.get("kind") != "ClusterQueue"]
    queues = {}
    for cq in (d for d in docs if d.get("kind") == "ClusterQueue"):
        queues.setdefault(cq["metadata"]["name"], []).append(cq)
    merged = []
    for cqs in queues.values():
        spec = {}
        for cq in cqs:
            spec.update(cq.get("spec") or {})
        spec["resourceGroups"] = [g for cq in cqs for g in (cq.get("spec") or {}).get(
            "resourceGroups", [])]
        metadata = {}
        for cq in cqs:
            metadata.update(cq.get("metadata") or {})
        merged.append({"apiVersion": cqs[0]["apiVersion"], "kind": cqs[0]["kind"],
                       "metadata": metadata, "spec": spec})
    objects = others + merged
    for obj in objects:
        if obj["kind"] not in CLUSTER_SCOPED:
            obj["metadata"].setdefault("namespace", NAMESPACED_WITHOUT_NAMESPACE_GO_TO)
    return objects


QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")
SUFFIX = {None: 1, "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
          "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def quantity(v):
    m = QUANTITY.match(str(v))
    assert m, f"{v!r} is not a quantity"
    return ("quantity", Fraction(m.group(1)) * SUFFIX[m.group(2)])


def normalized(v, key=None):
    if isinstance(v, dict):
        return {k: normalized(x, k) for k, x in v.items()}
    if isinstance(v, list):
        return [normalized(x) for x in v]
    if key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
        return quantity(v)
    return v


def by_identity(objects):
    out = {}
    for obj in objects:
        key = (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        assert key not in out, f"{key} twice"
        out[key] = normalized(obj)
    return out


def blueprint_vars(bp):
    doc = yaml.safe_load((CT / bp).read_text())
    return doc.get("vars") or {}


# A deployment file's placeholders: COMPUTE_ZONE, IP_ADDRESS/SUFFIX (not an enum value: NONE).
PLACEHOLDER = re.compile(r"^[A-Z]+(_[A-Z]+)+(/[A-Z_]+)?$")


def fill(bp, declared):
    """--vars for exactly the variables left empty (or as a deployment file's placeholder)."""
    family = next((v for k, v in PER_BLUEPRINT.items() if pathlib.Path(bp).stem.startswith(k)),
                  {})
    out = []
    for name, value in declared.items():
        if value is not None and not (isinstance(value, str) and PLACEHOLDER.match(value)):
            continue
        region = declared.get("region")
        if name == "zone" and region and not PLACEHOLDER.match(str(region)):
            chosen = region + "-b"  # a zone of the blueprint's own region
        else:
            chosen = family.get(name, VALUES.get(name))
        assert chosen is not None, f"{bp}: no test value for required variable {name}"
        out += ["--vars", f"{name}={chosen}"]
    return out


def required_vars(bp):
    return fill(bp, blueprint_vars(bp))


def gcluster(*args):
    return subprocess.run([GCLUSTER, *args], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, KUBECONFIG="/nonexistent/kubeconfig"))


def dry_run(bp, *extra):
    proc = gcluster("deploy", str(CT / bp), *extra, "--dry-run-out", "-", "-o", "json")
    assert proc.returncode == 0, f"{bp}: exit {proc.returncode}: {proc.stderr}"
    doc = json.loads(proc.stdout)
    assert doc["kind"] == "List"
    return doc["items"]


def test_the_corpus_is_complete():
    """Every GKE blueprint of the examples is here, and each TPU/GPU one has an expectation."""
    assert len(BLUEPRINTS) == 30, BLUEPRINTS
    for bp in EXPECTED:
        assert bp in BLUEPRINTS, bp


# The additional networks each blueprint's gke-cluster module gets, as (network, subnetwork,
# nic_type), written out by hand from the network modules' own outputs with the test's
# deployment names: a vpc module's instance_additional_networks is its network and first
# subnetwork with nic_type GVNIC; multivpc's additional_networks is network_count networks
# "<prefix>-<i>" with subnetworks "<prefix>-<i>-subnet" and network_interface_defaults.nic_type
# (GVNIC); gpu-rdma-vpc's subnetwork_interfaces_gke is one MRDMA interface per subnetwork
# "<name_prefix>-<i>" of subnetworks_template (count 8). With them, the cluster module's
# k8s_network_names when the blueprint sets it.
def vpc(net, sub):
    return [(net, sub, "GVNIC")]


def multivpc(prefix, count, nic="GVNIC"):
    return [(f"{prefix}-{i}", f"{prefix}-{i}-subnet", nic) for i in range(count)]


def rdma_vpc(net, prefix, count=8):
    return [(net, f"{prefix}-{i}", "MRDMA") for i in range(count)]


VPC_NAMES = {"gvnic_prefix": "vpc", "gvnic_start_index": 1}
FLEX = "examples/gke-consumption-options/dws-flex-start/"
QUEUED = "examples/gke-consumption-options/dws-flex-start-queued-provisioning/"
NETWORKS = {
    "examples/gke-a3-highgpu-inference-gateway.yaml": (multivpc("ct-test-gpunet", 4), VPC_NAMES),
    "examples/gke-a3-highgpu/gke-a3-highgpu.yaml": (multivpc("gke-a3-high-gpunet", 4), VPC_NAMES),
    "examples/gke-a3-megagpu/gke-a3-megagpu.yaml": (multivpc("gke-a3-mega-gpunet", 8), VPC_NAMES),
    "examples/gke-a3-ultragpu/gke-a3-ultragpu.yaml": (
        vpc("ct-test-net-1", "ct-test-sub-1") + rdma_vpc("ct-test-rdma-net", "ct-test-rdma-sub"),
        None),
    "examples/gke-a4/gke-a4.yaml": (
        vpc("gke-a4-net-1", "gke-a4-sub-1") + rdma_vpc("gke-a4-rdma-net", "gke-a4-rdma-sub"), None),
    "examples/gke-h4d/gke-h4d.yaml": (multivpc("gke-h4d-rdma-net", 1, "IRDMA"), None),
    "examples/gke-consumption-options/dws-flex-start-compact-placement/gke-h4d/gke-h4d.yaml": (
        multivpc("ct-test-rdma-net", 1, "IRDMA"), None),
    FLEX + "gke-a3-ultragpu.yaml": (
        vpc("gke-a3u-dws-fs-net-1", "gke-a3u-dws-fs-sub-1")
        + rdma_vpc("gke-a3u-dws-fs-rdma-net", "gke-a3u-dws-fs-rdma-sub"), None),
    FLEX + "gke-tpu-7x/gke-tpu-7x.yaml": (
        vpc("gke-tpu-7x-flex-net-1", "gke-tpu-7x-flex-sub-1"), None),
    FLEX + "gke-tpu-v6e/gke-tpu-v6e.yaml": (
        vpc("gke-tpu-v6e-flex-net-1", "gke-tpu-v6e-flex-sub-1"), None),
    QUEUED + "gke-a3-ultragpu.yaml": (
        vpc("gke-a3u-dws-fs-qp-net-1", "gke-a3u-dws-fs-qp-sub-1")
        + rdma_vpc("gke-a3u-dws-fs-qp-rdma-net", "gke-a3u-dws-fs-qp-rdma-sub"), None),
    QUEUED + "gke-tpu-7x/gke-tpu-7x.yaml": (vpc("gke-tpu-7x-qp-net-1", "gke-tpu-7x-qp-sub-1"), None),
    QUEUED + "gke-tpu-v6e/gke-tpu-v6e.yaml": (
        vpc("gke-tpu-v6e-qp-net-1", "gke-tpu-v6e-qp-sub-1"), None),
    "examples/gke-g4-confidential/gke-g4-confidential.yaml": (
        vpc("gke-g4-cvm-net-1", "gke-g4-cvm-sub-1"), None),
    "examples/gke-g4/gke-g4.yaml": (vpc("gke-g4-net-1", "gke-g4-sub-1"), None),
    "examples/gke-tpu-7x/gke-tpu-7x-advanced.yaml": (
        vpc("gke-tpu-7x-net-1", "gke-tpu-7x-sub-1"), None),
    "examples/gke-tpu-v6e/gke-tpu-v6e-advanced.yaml": (
        vpc("gke-tpu-v6e-net-1", "gke-tpu-v6e-sub-1"), None),
    "examples/gke-tpu-v6e/gke-tpu-v6e.yaml": (vpc("gke-tpu-v6e-net-1", "gke-tpu-v6e-sub-1"), None),
}
CLUSTER_TEMPLATES = "modules/scheduler/gke-cluster/templates/"
# k8s_network_names: unset, the variable's default; set, its unset attributes take their
# optional() defaults.
NAMES_DEFAULT = {"gvnic_prefix": "gvnic-", "gvnic_start_index": 1, "gvnic_postfix": "",
                 "rdma_prefix": "rdma-", "rdma_start_index": 0, "rdma_postfix": ""}
NAMES_OPTIONAL = {"gvnic_prefix": "", "gvnic_start_index": 1, "gvnic_postfix": "",
                  "rdma_prefix": "", "rdma_start_index": 0, "rdma_postfix": ""}


def toolkit_network_objects(networks, k8s_network_names):
    """The gke-cluster module's main.tf: gVNIC networks (nic_type containing GVNIC) then RDMA
    ones, each named prefix + (index + start) + postfix, rendered through its two templates."""
    names = dict(NAMES_OPTIONAL, **k8s_network_names) if k8s_network_names else NAMES_DEFAULT
    objects = []
    for kind in ("gvnic", "rdma"):
        chosen = [n for n in networks if kind.upper() in n[2].upper()]
        for idx, (network, subnetwork, nic) in enumerate(chosen):
            name = (f"{names[kind + '_prefix']}{idx + names[kind + '_start_index']}"
                    f"{names[kind + '_postfix']}")
            device = "RDMA" if "RDMA" in nic.upper() else "NetDevice"
            variables = {"name": name, "network_name": network, "subnetwork_name": subnetwork,
                         "device_mode": device}
            for template in ("gke-network-paramset.yaml.tftpl", "network-object.yaml.tftpl"):
                text = templatefile((CT / CLUSTER_TEMPLATES / template).read_text(), variables)
                objects += [d for d in yaml.safe_load_all(text) if d]
    return objects


def test_every_blueprint_with_additional_networks_has_an_expectation():
    """Each blueprint whose cluster module gets additional networks (its own setting, or a
    multivpc module through use) is in NETWORKS; no other is."""
    have = set()
    for bp in BLUEPRINTS:
        doc = yaml.safe_load((CT / bp).read_text())
        modules = [m for g in doc["deployment_groups"] for m in g["modules"]]
        sources = {m["id"]: m["source"] for m in modules}
        for m in modules:
            if m["source"].endswith("scheduler/gke-cluster") and (
                    "additional_networks" in (m.get("settings") or {}) or any(
                        sources[u].endswith("network/multivpc") for u in m.get("use", []))):
                have.add(bp)
    assert have == set(NETWORKS)


@pytest.mark.parametrize("bp", BLUEPRINTS)
def test_dry_run_objects_equal_the_toolkits(bp):
    objects = dry_run(bp, *required_vars(bp))
    kueue = [o for o in objects if o["kind"] not in CLUSTER_MODULE_KINDS]
    expected = toolkit_objects(*EXPECTED[bp]) if bp in EXPECTED else []
    assert by_identity(kueue) == by_identity(expected)
    # The cluster module's networking objects, field by field.
    networking = [o for o in objects if o["kind"] in ("GKENetworkParamSet", "Network")]
    expected = toolkit_network_objects(*NETWORKS[bp]) if bp in NETWORKS else []
    assert by_identity(networking) == by_identity(expected)


DEPLOYMENT_FILES = sorted(
    str(p.relative_to(CT)) for p in CT.rglob("*-deployment.yaml")
    if (p.parent / p.name.replace("-deployment.yaml", ".yaml")).exists())


@pytest.mark.parametrize("deployment", DEPLOYMENT_FILES)
def test_deployment_file_supplies_the_vars(deployment):
    """-d: the toolkit's deployment file next to the blueprint; what it leaves empty too comes
    from --vars."""
    bp = deployment.replace("-deployment.yaml", ".yaml")
    dep_vars = yaml.safe_load((CT / deployment).read_text()).get("vars") or {}
    merged = dict(blueprint_vars(bp), **dep_vars)
    dry_run(bp, "-d", str(CT / deployment), *fill(bp, merged))


# --plan, offline: the cluster is tests/unit/support/test_server.py on loopback, scripted as a cluster
# that serves Kueue and JobSet and has no node pools yet. The plan must exit 0, send every
# object only as a server-side-apply dry run (dryRun=All), and send nothing else that writes.

PLURALS = {"ResourceFlavor": "resourceflavors", "ClusterQueue": "clusterqueues",
           "LocalQueue": "localqueues", "AdmissionCheck": "admissionchecks",
           "Topology": "topologies", "ProvisioningRequestConfig": "provisioningrequestconfigs",
           "PriorityClass": "priorityclasses", "WorkloadPriorityClass": "workloadpriorityclasses",
           "GKENetworkParamSet": "gkenetworkparamsets", "Network": "networks",
           "CheckpointConfiguration": "checkpointconfigurations",
           "ServiceAccount": "serviceaccounts", "Namespace": "namespaces",
           "PersistentVolume": "persistentvolumes",
           "PersistentVolumeClaim": "persistentvolumeclaims"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plan")
    cert, key, port_file = tmp / "server.pem", tmp / "server.key", tmp / "port"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "unit" / "support" / "test_server.py"),
                             "--cert", str(cert), "--key", str(key), "--port-file",
                             str(port_file), "--lifetime", "600"])
    try:
        for _ in range(200):  # bounded: 20 s
            if port_file.exists() and port_file.read_text().strip():
                break
            time.sleep(0.1)
        port = int(port_file.read_text().strip())
        kubeconfig = tmp / "kubeconfig"
        kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": f"https://127.0.0.1:{port}",
                                                      "insecure-skip-tls-verify": True}}],
            "users": [{"name": "test", "user": {"token": "test-token"}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test",
                                                      "namespace": "default"}}]}))
        yield port, kubeconfig
    finally:
        proc.kill()
        proc.wait(timeout=30)


def control(port, method, path, doc=None):
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    data = json.dumps(doc).encode() if doc is not None else None
    req = urllib.request.Request(f"https://127.0.0.1:{port}{path}", data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
        body = resp.read()
    return json.loads(body) if body else None


def object_path(obj):
    group_version = obj["apiVersion"]
    prefix = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
    ns = obj["metadata"].get("namespace")
    ns_part = f"/namespaces/{ns}" if ns else ""
    return f"{prefix}{ns_part}/{PLURALS[obj['kind']]}/{obj['metadata']['name']}"


def cluster_script(objects):
    """A cluster with Kueue (v1beta2 and v1beta1) and JobSet, no nodes, none of `objects`."""
    script = {
        "GET /api/v1/nodes": [{"json": {"kind": "NodeList", "metadata": {}, "items": []},
                               "repeat": True}],
        "GET /apis/kueue.x-k8s.io": [{"json": {"kind": "APIGroup", "versions": [
            {"groupVersion": "kueue.x-k8s.io/v1beta2", "version": "v1beta2"},
            {"groupVersion": "kueue.x-k8s.io/v1beta1", "version": "v1beta1"}]},
            "repeat": True}],
        "GET /apis/jobset.x-k8s.io": [{"json": {"kind": "APIGroup", "versions": [
            {"groupVersion": "jobset.x-k8s.io/v1alpha2", "version": "v1alpha2"}]},
            "repeat": True}],
    }
    for group_version in sorted({o["apiVersion"] for o in objects}):
        resources = [{"name": PLURALS[k], "kind": k, "namespaced": k not in CLUSTER_SCOPED}
                     for k in PLURALS]
        path = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
        script[f"GET {path}"] = [{"json": {"kind": "APIResourceList",
                                           "groupVersion": group_version,
                                           "resources": resources}, "repeat": True}]
    for obj in objects:
        script[f"PATCH {object_path(obj)}"] = [{"json": obj}]
    return script


@pytest.mark.parametrize("bp", BLUEPRINTS)
def test_plan_exits_0_and_only_dry_runs(bp, server):
    port, kubeconfig = server
    objects = dry_run(bp, *required_vars(bp))
    control(port, "POST", "/_test/reset", {"drop_old_connections": True})
    control(port, "POST", "/_test/script", cluster_script(objects))
    proc = gcluster("deploy", str(CT / bp), *required_vars(bp), "--plan", "--context", "test",
                    "--kubeconfig", str(kubeconfig), "-o", "json")
    assert proc.returncode == 0, f"{bp}: exit {proc.returncode}: {proc.stderr}"
    report = json.loads(proc.stdout)
    log = control(port, "GET", "/_test/log")
    writes = [r for r in log if r["method"] not in ("GET",)]
    assert all(r["method"] == "PATCH" and "dryRun=All" in r["query"] for r in writes), writes
    assert sorted(r["path"] for r in writes) == sorted(object_path(o) for o in objects)
    assert len(report["kueue_objects"]) == len(objects)


# The module's built-in configurations, one per (enable_pathways_for_tpus,
# enable_dynamic_slicing_for_tpus): a v6e blueprint without config_path. Without either, the
# module applies no configuration at all.
BUILTIN_BLUEPRINT = """blueprint_name: builtin
vars:
  project_id: p
  deployment_name: d
  region: us-east5
  zone: us-east5-b
deployment_groups:
- group: primary
  modules:
  - id: cluster
    source: modules/scheduler/gke-cluster
  - id: pool
    source: modules/compute/gke-node-pool
    use: [cluster]
    settings:
      machine_type: ct6e-standard-4t
      num_slices: 2
      placement_policy: {type: COMPACT, tpu_topology: 4x4}
  - id: kueue
    source: modules/management/kubectl-apply
    use: [cluster]
    settings:
      kueue:
        install: true
        enable_pathways_for_tpus: %(pathways)s
        enable_dynamic_slicing_for_tpus: %(slicing)s
        config_template_vars:
          accelerator_type: tpu-v6e-slice
          tpu_quota: $(vars.slices * pool.node_count_static * pool.tpu_chips_per_node)
%(topology)s"""
BUILTIN_TEMPLATES = {
    (True, False): "kueue-configuration-pathways.yaml.tftpl",
    (False, True): "kueue-configuration-dynamic-slicing.yaml.tftpl",
    (True, True): "kueue-configuration-dynamic-slicing-pathways.yaml.tftpl",
}


@pytest.mark.parametrize("pathways", [False, True])
@pytest.mark.parametrize("slicing", [False, True])
@pytest.mark.parametrize("topology", ["", "4x4"])
def test_builtin_configurations_equal_the_modules(tmp_path, pathways, slicing, topology):
    text = BUILTIN_BLUEPRINT % {
        "pathways": str(pathways).lower(), "slicing": str(slicing).lower(),
        "topology": f"          tpu_topology: {topology}\n" if topology else ""}
    text = text.replace("  region: us-east5\n", "  region: us-east5\n  slices: 2\n")
    bp = tmp_path / "builtin.yaml"
    bp.write_text(text)
    proc = gcluster("deploy", str(bp), "--dry-run-out", "-", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    objects = json.loads(proc.stdout)["items"]
    template = BUILTIN_TEMPLATES.get((pathways, slicing))
    # 2 slices x 4 hosts x 4 chips
    variables = {"accelerator_type": "tpu-v6e-slice", "tpu_quota": 32}
    if topology:
        variables["tpu_topology"] = topology
    expected = toolkit_objects(BUILTIN + template, variables) if template else []
    assert by_identity(objects) == by_identity(expected)
    if template:  # the TPU flavor first, in the objects and in the queue
        flavors = [o for o in objects if o["kind"] == "ResourceFlavor"]
        assert flavors[0]["metadata"]["name"] == ("flavor-tpu-v6e-slice" if pathways
                                                  else "tpu-flavor")


USER_TEMPLATE_BLUEPRINT = """blueprint_name: user
vars: {project_id: p, deployment_name: d, region: us-east5, zone: us-east5-b}
deployment_groups:
- group: primary
  modules:
  - id: cluster
    source: modules/scheduler/gke-cluster
  - id: kueue
    source: modules/management/kubectl-apply
    use: [cluster]
    settings:
      kueue:
        install: true
        config_path: %s
"""


def test_user_template_keeps_every_object_and_namespaces_them_as_the_module(tmp_path):
    """A ClusterQueue and a LocalQueue of one name are both kept; two ClusterQueues of one name
    become one; a namespaced object without a namespace goes to kueue-system; a file that is
    not .tftpl and gets no config_template_vars is taken as it is (${x} stays)."""
    template = tmp_path / "queues.yaml"
    template.write_text("""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a3-high}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: a3-high}
spec: {clusterQueue: a3-high}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: a3-high, labels: {team: x}}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: cpu, resources: [{name: cpu, nominalQuota: "${x}"}]}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: note, namespace: team-a}
data: {text: "${x}"}
""")
    bp = tmp_path / "user.yaml"
    bp.write_text(USER_TEMPLATE_BLUEPRINT % template.name)
    proc = gcluster("deploy", str(bp), "--dry-run-out", "-", "-o", "json")
    assert proc.returncode == 0, proc.stderr
    objects = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o
               for o in json.loads(proc.stdout)["items"]}
    assert set(objects) == {("ClusterQueue", None, "a3-high"),
                            ("LocalQueue", "kueue-system", "a3-high"),
                            ("ConfigMap", "team-a", "note")}
    cq = objects[("ClusterQueue", None, "a3-high")]
    assert [g["coveredResources"] for g in cq["spec"]["resourceGroups"]] == [
        ["nvidia.com/gpu"], ["cpu"]]
    assert cq["metadata"]["labels"] == {"team": "x"}
    assert objects[("ConfigMap", "team-a", "note")]["data"] == {"text": "${x}"}


# The advanced blueprints (the Pathways user guide's) keep enable_pathways_for_tpus: true but set
# kueue.config_path through a variable; with that variable null the module applies its built-in
# Pathways configuration, with the blueprint's config_template_vars.
@pytest.mark.parametrize("bp,variables", [
    ("examples/gke-tpu-v6e/gke-tpu-v6e-advanced.yaml",
     {"tpu_quota": 32, "accelerator_type": "tpu-v6e-slice", "namespace": "default"}),
    ("examples/gke-tpu-7x/gke-tpu-7x-advanced.yaml",
     {"tpu_quota": 16, "accelerator_type": "tpu7x", "namespace": "default"}),
])
def test_advanced_blueprints_without_their_template_get_the_builtin_pathways(bp, variables):
    objects = dry_run(bp, *required_vars(bp), "--vars", "kueue_configuration_path=null")
    kueue = [o for o in objects if o["kind"] not in CLUSTER_MODULE_KINDS]
    expected = toolkit_objects(BUILTIN + "kueue-configuration-pathways.yaml.tftpl", variables)
    assert by_identity(kueue) == by_identity(expected)


# configure_workload_identity_sa: the workload-identity module's Kubernetes service account,
# annotated with the cluster's Google account (the blueprint's workload service account, named
# with the deployment prefix), in the cluster module's namespace.
@pytest.mark.parametrize("bp", [b for b in BLUEPRINTS if "configure_workload_identity_sa: true"
                                in (CT / b).read_text()])
def test_workload_identity_service_account(bp):
    objects = dry_run(bp, *required_vars(bp))
    accounts = [o for o in objects if o["kind"] == "ServiceAccount"]
    assert len(accounts) == 1, accounts
    meta = accounts[0]["metadata"]
    assert meta["name"] == "workload-identity-k8s-sa"
    email = meta["annotations"]["iam.gke.io/gcp-service-account"]
    assert re.fullmatch(r"[a-z0-9-]+-gke-wl-sa@ct-test-project\.iam\.gserviceaccount\.com", email) \
        or email.endswith(".iam.gserviceaccount.com"), email
    namespaces = [o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"]
    assert namespaces == ([] if meta["namespace"] == "default" else [meta["namespace"]])


# gke-persistent-volume over a cloud-storage-bucket module (through use): the module's main.tf
# and its gcs-pv/gcs-pvc templates, written out here: the bucket named name_prefix, deployment
# name, suffix joined by "-" (deploy's suffix: the first 8 hex digits of
# SHA-256("PROJECT/DEPLOYMENT/MODULE_ID"), where Terraform draws random ones), the volume and
# claim "<bucket>-pv" and "<bucket>-pvc" unless named, "<capacity_gib>Gi", ReadWriteMany, the
# gcsfuse CSI driver, the mount options without "defaults" and "_netdev" (and implicit_dirs
# under a gcsfuse storage class).
def expected_volumes(bp, variables):
    import hashlib
    doc = yaml.safe_load((CT / bp).read_text())
    modules = {m["id"]: m for g in doc["deployment_groups"] for m in g["modules"]}
    values = dict(doc.get("vars") or {}, **variables)
    deployment = values["deployment_name"]
    volumes = []
    for m in modules.values():
        if not m["source"].endswith("file-system/gke-persistent-volume"):
            continue
        buckets = [modules[u] for u in m.get("use", [])
                   if modules[u]["source"].endswith("file-system/cloud-storage-bucket")]
        if not buckets:
            continue
        b, s = buckets[0], m.get("settings") or {}
        bs = b.get("settings") or {}
        prefix = bs.get("name_prefix") or ""
        dep = deployment if bs.get("use_deployment_name_in_bucket_name", True) else ""
        seed = f"{values['project_id']}/{deployment}/{b['id']}".encode()
        suffix = hashlib.sha256(seed).hexdigest()[:8] if bs.get("random_suffix") else ""
        name = "-".join(x for x in (prefix, dep, suffix) if x)
        sc = s.get("gcsfuse_storage_class_name") or ""
        options = [o for o in bs.get("mount_options", "defaults,_netdev,implicit_dirs").split(",")
                   if o not in ("defaults", "_netdev") and not (sc and o == "implicit_dirs")]
        volumes.append((name, s.get("pv_name") or f"{name}-pv", s.get("pvc_name") or f"{name}-pvc",
                        f"{s['capacity_gib']}Gi", sc, options))
    return volumes


PV_BLUEPRINTS = [bp for bp in BLUEPRINTS if "gke-persistent-volume" in (CT / bp).read_text()]


@pytest.mark.parametrize("bp", PV_BLUEPRINTS)
def test_gcsfuse_volumes_as_the_module_renders_them(bp):
    extra = required_vars(bp)
    objects = dry_run(bp, *extra)
    variables = {}
    for arg in extra[1::2] if extra and extra[0] == "--vars" else []:
        for pair in arg.split(","):
            key, _, value = pair.partition("=")
            variables[key] = value
    pvs = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PersistentVolume"
           and o["spec"]["csi"]["driver"] == "gcsfuse.csi.storage.gke.io"}
    pvcs = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PersistentVolumeClaim"
            and o["spec"]["volumeName"] in pvs}
    want = expected_volumes(bp, variables)
    assert len(pvs) == len(pvcs) == len(want)
    for bucket, pv, pvc, capacity, sc, options in want:
        spec = pvs[pv]["spec"]
        assert spec["csi"] == {"driver": "gcsfuse.csi.storage.gke.io", "volumeHandle": bucket}
        assert spec["capacity"] == {"storage": capacity} and spec["storageClassName"] == sc
        assert spec["accessModes"] == ["ReadWriteMany"]
        assert spec.get("mountOptions", []) == options
        claim = pvcs[pvc]["spec"]
        assert claim["volumeName"] == pv and claim["resources"]["requests"]["storage"] == capacity
        assert claim["storageClassName"] == sc
        assert pvs[pv]["metadata"]["labels"]["ghpc_module"] == "gke-persistent-volume"


def expected_filestore_volumes(bp, variables):
    """The filestore module's instance (its name, else the deployment name and 8 hexadecimal
    digits: deploy's stand-in for Terraform's random ones; the zone below the ENTERPRISE and
    REGIONAL tiers) and the gke-persistent-volume module's templates over it."""
    import hashlib
    doc = yaml.safe_load((CT / bp).read_text())
    modules = {m["id"]: m for g in doc["deployment_groups"] for m in g["modules"]}
    values = dict(doc.get("vars") or {}, **variables)
    deployment = values["deployment_name"]

    def value(text):
        if isinstance(text, str) and text.startswith("$(vars.") and text.endswith(")"):
            return values[text[7:-1]]
        return text

    volumes = []
    for m in modules.values():
        if not m["source"].endswith("file-system/gke-persistent-volume"):
            continue
        used = [modules[u] for u in m.get("use", [])
                if modules[u]["source"].endswith("file-system/filestore")]
        if not used:
            continue
        fs, s = used[0], m.get("settings") or {}
        fss = fs.get("settings") or {}
        seed = f"{values['project_id']}/{deployment}/{fs['id']}".encode()
        name = value(fss.get("name")) or f"{deployment}-{hashlib.sha256(seed).hexdigest()[:8]}"
        tier = fss.get("filestore_tier", "BASIC_SSD")
        location = value(fss.get("region", "$(vars.region)") if tier in ("ENTERPRISE", "REGIONAL")
                         else fss.get("zone", "$(vars.zone)"))
        share = fss.get("filestore_share_name", "nfsshare")
        capacity = f"{s.get('capacity_gib', fss.get('size_gb', 2560))}Gi"
        volumes.append((f"modeInstance/{location}/{name}/{share}", share,
                        s.get("pv_name") or f"{name}-pv", s.get("pvc_name") or f"{name}-pvc",
                        capacity, s.get("namespace", "default")))
    return volumes


@pytest.mark.parametrize("bp", PV_BLUEPRINTS)
def test_filestore_volumes_as_the_module_renders_them(bp):
    extra = required_vars(bp)
    objects = dry_run(bp, *extra)
    variables = {}
    for arg in extra[1::2] if extra and extra[0] == "--vars" else []:
        for pair in arg.split(","):
            key, _, value = pair.partition("=")
            variables[key] = value
    pvs = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PersistentVolume"
           and o["spec"]["csi"]["driver"] == "filestore.csi.storage.gke.io"}
    pvcs = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PersistentVolumeClaim"
            and o["spec"]["volumeName"] in pvs}
    want = expected_filestore_volumes(bp, variables)
    assert len(pvs) == len(pvcs) == len(want)
    for handle, share, pv, pvc, capacity, namespace in want:
        spec = pvs[pv]["spec"]
        name = handle.split("/")[2]
        assert spec["csi"] == {
            "driver": "filestore.csi.storage.gke.io", "volumeHandle": handle,
            "volumeAttributes": {
                "ip": f"(the IP address of Filestore instance {name}, read when applying)",
                "volume": share}}
        assert spec["capacity"] == {"storage": capacity} and spec["storageClassName"] == ""
        assert spec["accessModes"] == ["ReadWriteMany"]
        assert spec["persistentVolumeReclaimPolicy"] == "Retain"
        assert spec["claimRef"] == {"name": pvc, "namespace": namespace}
        claim = pvcs[pvc]["spec"]
        assert claim["volumeName"] == pv and claim["resources"]["requests"]["storage"] == capacity
        assert claim["storageClassName"] == ""
        assert pvcs[pvc]["metadata"]["namespace"] == namespace
        assert pvs[pv]["metadata"]["labels"]["ghpc_module"] == "gke-persistent-volume"
