"""The compatibility matrix: `./gcluster job submit` on the clusters users already have.

Each cell puts the environment on a testenv profile (testenv/README.md, "Profiles": the Kueue
configuration that xpk, earlier Cluster Toolkit releases or our own deploy make, or none; the
head node pool named cpu-np, pathways-np, something else, or absent), submits one job shape
(headless v6e-16, two slices of v6e-16, one tpu7x slice) and records within a bounded wait:
submit's exit code and message, whether Kueue admitted the job (or why not), and which pods run
where. The older JobSet and Kueue releases (versions.env) get the seed's flow in an environment
of their own: submit, all pods Running, `job list`, `job cancel`.

Every cell must end one of two ways (issue 13): all pods Running on the right nodes (the head on
the head pool, each slice's workers on one TPU node pool of the job's accelerator and topology,
the slices in different pools), or refused with exit 2, a one-line error naming the fix and
nothing created. A job that is created and then stuck fails its cell. On the configurations of
xpk and earlier Cluster Toolkit releases (cpu and memory in a resource group of their own) the
workers run because they request only google.com/tpu, which submit says; the cell notes it.

The outcome of every cell is written as a table to build/compat-matrix.md.
"""

import json
import time
from dataclasses import dataclass

import pytest

from conftest import REPO, another_testenv, older_releases, wait_for
from gcluster_cli import CLUSTER, GCS, IMAGE, Cli, condition, is_true

NODEPOOL = "cloud.google.com/gke-nodepool"
ACCELERATOR = "cloud.google.com/gke-tpu-accelerator"
TOPOLOGY = "cloud.google.com/gke-tpu-topology"
CUSTOM_POOL = "pw-head-np"
# A verdict short of all pods Running must still hold this long before the cell is called stuck
# (the environment is otherwise idle, so nothing else will change it).
SETTLE = 5
# The longest a cell waits for its job to run or settle.
CELL_TIMEOUT = 90
REPORT = REPO / "build" / "compat-matrix.md"


@dataclass(frozen=True)
class Shape:
    compute: str
    slices: int
    headless: bool
    accelerator: str
    topology: str
    hosts: int  # per slice


SHAPES = {
    "headless v6e-16": Shape("v6e-16", 1, True, "tpu-v6e-slice", "4x4", 4),
    "2 x v6e-16": Shape("v6e-16", 2, False, "tpu-v6e-slice", "4x4", 4),
    "tpu7x-16": Shape("tpu7x-16", 1, False, "tpu7x", "2x2x2", 2),
}
KUEUE = ["unified", "xpk", "toolkit-split", "none"]
HEAD_POOLS = ["cpu-np", "pathways-np", CUSTOM_POOL, "none"]


def head_name(head_pool):
    return "custom" if head_pool == CUSTOM_POOL else head_pool


class Report:
    """The cells' outcomes, written as tables when the module ends."""

    def __init__(self):
        self.rows = {}

    def add(self, table, row, column, text):
        self.rows.setdefault(table, {}).setdefault(row, {})[column] = text

    def markdown(self):
        out = []
        for table, rows in self.rows.items():
            columns = [c for c in SHAPES if any(c in r for r in rows.values())]
            out += [f"## {table}", "", "| cell | " + " | ".join(columns) + " |",
                    "|---" * (len(columns) + 1) + "|"]
            for row, cells in rows.items():
                out.append(f"| {row} | " + " | ".join(
                    cells.get(c, "").replace("|", "/") for c in columns) + " |")
            out.append("")
        return "\n".join(out)


@pytest.fixture(scope="module")
def report():
    r = Report()
    yield r
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("# Compatibility matrix (tests/cluster/test_compat_matrix.py)\n\n" + r.markdown())
    print(f"\n{r.markdown()}\n(written to {REPORT})")


@pytest.fixture(scope="module")
def matrix_env(testenv):
    """The session's environment; back on the default profile when the module is done."""
    yield testenv
    testenv.use_profile()


@dataclass
class Cell:
    outcome: str = ""
    ok: bool = False
    notes: str = ""

    def text(self):
        return f"{self.outcome}{' (' + self.notes + ')' if self.notes else ''}"


def submit(cli, name, shape, head_pool):
    args = ["job", "submit", "--name", name, *CLUSTER, "--compute-type", shape.compute,
            "--num-slices", str(shape.slices), "--pathways", "--pathways-gcs-location", GCS]
    if shape.headless:
        args.append("--pathways-headless")
    else:
        args += ["--command", "python3 train.py", "--image", IMAGE]
    if head_pool == CUSTOM_POOL:
        args += ["--pathways-head-np", CUSTOM_POOL]
    return cli.gcluster(*args)


def placement_errors(cli, pods, shape, head_pool):
    """What is wrong with where the pods run; empty when every pod is on the right node."""
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"]
             for n in cli.kubectl_json("get", "nodes")["items"]}
    errors = []
    pools = {}
    for pod in pods:
        labels = nodes[pod["spec"]["nodeName"]]
        role = pod["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]
        if role == "pathways-head":
            if labels.get(NODEPOOL) != head_pool or ACCELERATOR in labels:
                errors.append(f"head on pool {labels.get(NODEPOOL)}")
            continue
        if (labels.get(ACCELERATOR), labels.get(TOPOLOGY)) != (shape.accelerator, shape.topology):
            errors.append(f"worker on {labels.get(ACCELERATOR)} {labels.get(TOPOLOGY)}")
        pools.setdefault(pod["metadata"]["labels"]["jobset.sigs.k8s.io/job-index"], set()).add(
            labels.get(NODEPOOL))
    if any(len(p) != 1 for p in pools.values()):
        errors.append(f"a slice spans pools {sorted(map(sorted, pools.values()))}")
    elif len({next(iter(p)) for p in pools.values()}) != shape.slices:
        errors.append("two slices share a pool")
    if len({p["spec"]["nodeName"] for p in pods}) != len(pods):
        errors.append("two pods share a host")
    return errors


def stuck_reason(cli, name, pods):
    """Why the job does not run, once Kueue, the scheduler or JobSet has said so; else None."""
    jobset = cli.kubectl_json("get", "jobset", name)
    if is_true(jobset, "Failed"):
        return f"JobSet failed: {condition(jobset, 'Failed').get('message', '')}"
    workload = cli.workload(name)
    if workload is None:
        return None
    if not is_true(workload, "Admitted"):
        reserved = condition(workload, "QuotaReserved")
        if reserved and reserved.get("message"):
            return f"not admitted: {reserved['message']}"
        return None
    for pod in pods:
        scheduled = condition(pod, "PodScheduled")
        if scheduled and scheduled["status"] == "False" and scheduled.get("reason") == "Unschedulable":
            role = pod["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]
            return f"admitted, {role} pod unschedulable: {scheduled.get('message', '')}"
    return None


def watch(cli, name, shape, head_pool):
    """Follows a created job until all its pods run, it is stuck, or CELL_TIMEOUT passes."""
    want = 1 + shape.slices * shape.hosts
    deadline = time.monotonic() + CELL_TIMEOUT
    reason, since = None, None
    while True:
        pods = cli.pods(name)
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        if len(running) == want == len(pods):
            errors = placement_errors(cli, running, shape, head_pool)
            if errors:
                return Cell("RUNS on wrong nodes", False, "; ".join(errors))
            flavors = {a["name"]: sorted(set(a.get("flavors", {}).values())) for a in
                       ((cli.workload(name) or {}).get("status", {}).get("admission") or {})
                       .get("podSetAssignments", [])}
            return Cell("RUNS", True, ", ".join(f"{k} on {'/'.join(v)}" for k, v in flavors.items()))
        now_reason = stuck_reason(cli, name, pods)
        if now_reason != reason:
            reason, since = now_reason, time.monotonic()
        elif reason and time.monotonic() - since >= SETTLE:
            return Cell("STUCK", False, f"{reason[:160]}; {len(running)}/{want} pods Running")
        if time.monotonic() >= deadline:
            return Cell("STUCK", False, f"{len(running)}/{want} pods Running after {CELL_TIMEOUT}s"
                        + (f"; {reason[:160]}" if reason else ""))
        time.sleep(1)


def run_cell(cli, name, shape, head_pool, when_running=None):
    """Submits one job and says how it ended; when_running(cli, name, shape) -> (ok, notes)
    continues a job whose pods all run. The job is gone afterwards."""
    proc = submit(cli, name, shape, head_pool)
    warning = next((line[len("gcluster: warning: "):] for line in proc.stderr.splitlines()
                    if line.startswith("gcluster: warning: ")), "")
    tpu_only = any(line.startswith("gcluster: the workers request only google.com/tpu: ")
                   for line in proc.stderr.splitlines())
    created = cli.kubectl("get", "jobset", name, check=False).returncode == 0
    try:
        if proc.returncode != 0:
            errors = [line for line in proc.stderr.splitlines()
                      if line.startswith("gcluster: error:")]
            error = errors[0][len("gcluster: error: "):] if errors else proc.stderr.strip()
            names_fix = any(s in error for s in ("--", "gcluster ", "kubectl "))
            ok = proc.returncode == 2 and not created and len(errors) == 1 and names_fix
            return Cell(f"REFUSED exit {proc.returncode}{', job created' if created else ''}",
                        ok, error)
        cell = watch(cli, name, shape, head_pool)
        if cell.ok and when_running:
            cell.ok, notes = when_running(cli, name, shape)
            cell.notes = f"{cell.notes}; {notes}" if cell.notes else notes
            if not cell.ok:
                cell.outcome = "RUNS, seed flow fails"
        if tpu_only:
            cell.notes += "; workers request google.com/tpu only"
        if warning:
            cell.notes += f"; submit warned: {warning[:120]}"
        return cell
    finally:
        if created:
            cli.delete_job(name)
            wait_for(lambda: not cli.pods(name) and cli.kubectl(
                "get", "jobset", name, check=False).returncode != 0, timeout=120,
                what=f"job {name} to be gone")


def matrix_params():
    codes = {"unified": "u", "xpk": "x", "toolkit-split": "t", "none": "n"}
    for kueue in KUEUE:
        for head_pool in HEAD_POOLS:
            for i, shape in enumerate(SHAPES):
                marks = [pytest.mark.testenv_profile(kueue, head_pool, SHAPES[shape].accelerator)]
                name = f"mx-{codes[kueue]}{HEAD_POOLS.index(head_pool)}{i}"
                yield pytest.param(kueue, head_pool, shape, name, marks=marks,
                                   id=f"{kueue}/{head_name(head_pool)}/{shape}")


@pytest.mark.parametrize("kueue,head_pool,shape,name", list(matrix_params()))
def test_matrix(matrix_env, report, tmp_path, kueue, head_pool, shape, name):
    cli = Cli(matrix_env.kubeconfig, tmp_path)
    cell = run_cell(cli, name, SHAPES[shape], head_pool)
    report.add("Current releases (rows: Kueue profile / head pool)",
               f"{kueue} / {head_name(head_pool)}", shape, cell.text())
    assert cell.ok, cell.text()


# ---------------------------------------------------------------------------------------------
# The older releases


@pytest.fixture(scope="module")
def old_releases():
    settings, releases = older_releases()
    with another_testenv("old-releases", **settings) as env:
        yield env, releases


def seed_flow(cli, name, shape):
    """After all pods run: `job list` shows the job Running n/n (once the JobSet's status has
    caught up with its pods), and `job cancel --wait` removes it."""
    want = f"Running {1 + shape.slices * shape.hosts}/{1 + shape.slices * shape.hosts}"
    deadline = time.monotonic() + 60
    while True:
        listed = cli.gcluster("job", "list", *CLUSTER, "-o", "json")
        if listed.returncode != 0:
            return False, f"job list exit {listed.returncode}: {listed.stderr.strip()[:160]}"
        rows = {row["name"]: row for row in json.loads(listed.stdout)}
        status = rows.get(name, {}).get("status")
        if status == want:
            break
        if time.monotonic() >= deadline:
            return False, f"job list says {status!r} after 60s, want {want!r}"
        time.sleep(1)
    cancel = cli.gcluster("job", "cancel", name, *CLUSTER, "--wait", "--timeout", "90s")
    if cancel.returncode != 0:
        return False, f"job cancel exit {cancel.returncode}: {cancel.stderr.strip()[:160]}"
    if cli.pods(name) or cli.kubectl("get", "jobset", name, check=False).returncode == 0:
        return False, "job cancel --wait left the job behind"
    return True, f"job list: {status}; job cancel: gone"


OLD_SHAPES = ["headless v6e-16", "2 x v6e-16"]
OLD_KUEUE = ["unified", "xpk"]


def old_params():
    for kueue in OLD_KUEUE:
        for shape in OLD_SHAPES:
            name = f"old-{kueue[0]}{OLD_SHAPES.index(shape)}"
            yield pytest.param(kueue, shape, name, id=f"old/{kueue}/{shape}")


@pytest.mark.parametrize("kueue,shape,name", list(old_params()))
def test_older_releases_seed_flow(old_releases, report, tmp_path, kueue, shape, name):
    env, releases = old_releases
    env.use_profile(kueue, "cpu-np", SHAPES[shape].accelerator)
    cli = Cli(env.kubeconfig, tmp_path)
    cell = run_cell(cli, name, SHAPES[shape], "cpu-np", when_running=seed_flow)
    report.add(f"Older releases ({releases}; rows: Kueue profile, head pool cpu-np)", kueue,
               shape, cell.text())
    assert cell.ok, cell.text()
