"""`gcluster job why` on every situation of issue 16, made on the local control plane.

Each test makes one situation with the setups of why_cases.py (real Kueue, JobSet, scheduler
and controllers; kwok for the kubelets), runs ./gcluster job why on the job as text and as
`-o json`, and asserts the two printed lines, cause and fix, and the state and reason. Parts
that change from run to run (pod name suffixes, ages, time stamps) are matched as patterns.
Every case's output is written to build/job-why-cases.md, for the record of what users see.
"""

import json
import re
from pathlib import Path

import pytest

import why_cases
from conftest import wait_for
from gcluster_cli import CLUSTER, GCS, IMAGE, Cli

REPO = Path(__file__).resolve().parents[2]
REPORT = REPO / "build" / "job-why-cases.md"
POD = r"[a-z0-9]{5}"  # the random suffix of a pod name
AGE = r"\d+[smh]"
TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def literal(text):
    """A pattern for `text` where {POD}, {AGE} and {TIME} stand for what changes between runs."""
    pattern = re.escape(text)
    for name, value in (("POD", POD), ("AGE", AGE), ("TIME", TIME)):
        pattern = pattern.replace(re.escape("{" + name + "}"), value)
    return pattern


# (issue case, situation, state, reason, cause, fix): cause and fix as literal() patterns.
CASES = [
    (1, "queue_missing", "Queued", "QueueMissing",
     "queue no-such-queue does not exist in namespace default (queues there: user-queue)",
     "gcluster job cancel pw-nq, then submit it again with --queue user-queue"),
    (1, "queue_label_missing", "Suspended", "QueueLabelMissing",
     "suspended and in no queue, so nothing will start it: it has no kueue.x-k8s.io/queue-name "
     "label",
     "gcluster job cancel pw-nolabel, then submit it again with --queue user-queue"),
    (1, "cluster_queue_missing", "Queued", "ClusterQueueMissing",
     "queue orphan-queue sends its jobs to cluster queue no-such-cq, which does not exist",
     "gcluster job cancel pw-orphan, then submit it again with --queue user-queue"),
    (2, "cluster_queue_inactive_flavor", "Queued", "ClusterQueueInactive",
     "cluster queue broken-cq is inactive: it names flavor no-such-flavor, which does not exist",
     "create the missing flavor (gcluster deploy BLUEPRINT creates the ones it names) or take it "
     "out of the queue: kubectl edit clusterqueue broken-cq"),
    (2, "cluster_queue_stopped", "Queued", "ClusterQueueInactive",
     "cluster queue held-cq is stopped (stopPolicy Hold): it admits no job",
     "kubectl patch clusterqueue held-cq --type=merge -p '{\"spec\":{\"stopPolicy\":\"None\"}}'"),
    (3, "quota_short", "Queued", "QuotaShort",
     "the workers need 16 google.com/tpu in tpu-flavor; quota 32, 32 used by pw-a",
     "wait for pw-a to finish, or free its quota: gcluster job cancel pw-a; or submit with a "
     "--priority (such as high), which lets the queue preempt it"),
    (3, "quota_below_slice", "Queued", "QuotaShort",
     "the workers need 16 google.com/tpu in tpu-flavor; the quota of cluster queue small-cq is 8, "
     "less than the job needs even when the queue is empty",
     "raise small-cq's google.com/tpu quota for tpu-flavor to at least 16 (tpu_quota in the "
     "blueprint, then gcluster deploy BLUEPRINT), or submit a smaller job (--num-slices, "
     "--compute-type)"),
    (3, "flavor_taint_untolerated", "Queued", "FlavorTaintNotTolerated",
     "the nodes the workers ask for are flavor tainted-tpu-flavor of cluster queue tainted-cq, "
     "tainted team=ml:NoSchedule, which the pods do not tolerate, so Kueue never admits the job",
     "add a toleration for team=ml:NoSchedule to flavor tainted-tpu-flavor (kubectl edit "
     "resourceflavor tainted-tpu-flavor, spec.tolerations: Kueue gives it to the pods it admits "
     "there), or submit to another --queue"),
    (4, "waiting_strict_fifo", "Queued", "WaitingBehind",
     "waiting behind pw-f2 (queued earlier), which needs 32 google.com/tpu in tpu-flavor (16 "
     "free); cluster queue fifo-cq is StrictFIFO, so nothing behind it starts",
     "wait for pw-f2 to start, cancel it (gcluster job cancel pw-f2), or submit with a "
     "--priority (such as high)"),
    (4, "waiting_behind_priority", "Queued", "WaitingBehind",
     "waiting behind pw-hi (priority high (750), above this job's 0), which needs 32 "
     "google.com/tpu in tpu-flavor (16 free); cluster queue fifo-cq is StrictFIFO, so nothing "
     "behind it starts",
     "wait for pw-hi to start, cancel it (gcluster job cancel pw-hi), or submit with a "
     "--priority above high"),
    (4, "quota_short_priority", "Queued", "QuotaShort",
     "the workers need 16 google.com/tpu in tpu-flavor; quota 32, 32 used by pw-p2",
     "wait for pw-p2 to finish, or free its quota: gcluster job cancel pw-p2; or submit with a "
     "--priority above high, which lets the queue preempt it"),
    (5, "unschedulable_selector", "Running", "Unschedulable",
     "1 worker pod asks for nodes with cloud.google.com/gke-tpu-topology=8x8, and no node has it "
     "(the nodes have 4x4, 2x2x2)",
     "gcluster job cancel pw-8x8, then submit again with a --compute-type (and --topology) the "
     "cluster has: tpu-v6e-slice 4x4 (8 hosts), tpu7x 2x2x2 (2 hosts)"),
    (5, "unschedulable_busy", "Running", "Unschedulable",
     "1 worker pod waits for free hosts: all 8 tpu-v6e-slice 4x4 hosts are busy, held by "
     "pw-outside (8 hosts)",
     "wait for pw-outside to end, or free its hosts: gcluster job cancel pw-outside"),
    (5, "head_pool_missing", "Queued", "NoFlavor",
     "the head asks for nodes with cloud.google.com/gke-nodepool=head-np, and no flavor of "
     "cluster queue cluster-queue is for such nodes",
     "submit with --pathways-head-np set to a pool the queue has a flavor for, or add a flavor "
     "for head-np: gcluster deploy BLUEPRINT --pathways-head-np head-np"),
    (6, "image_pull", "Running", "ImagePull",
     f"4 worker pods cannot pull image {why_cases.BAD_IMAGE}: no such image or tag",
     "gcluster job cancel pw-pull, then submit again with --pathways-worker-image (or "
     "--pathways-server-image) set to an image that exists"),
    (6, "stuck_creating", "Running", "Starting",
     "starting: 1/5 pods running (head 1/1, workers 0/4), 5 created; no restarts so far (at "
     "most 1)",
     "nothing to do yet; gcluster job inspect pw-creating shows each pod"),
    (6, "stuck_creating_later", "Running", "StuckCreating",
     "4 worker pods have been on their nodes for {AGE} without starting a container",
     "kubectl describe pod pw-stuck-worker-0-0-{POD} shows what the node waits for (image, "
     "volumes, network)"),
    (7, "running", "Running", "Running",
     "running: 9/9 pods (head 1/1, workers 8/8); no restarts so far (at most 1)",
     "nothing to do; follow it with gcluster job logs pw-run -f"),
    (7, "running_restarted", "Running", "Running",
     "running: 5/5 pods (head 1/1, workers 4/4); restarted 1 time (of at most 3)",
     "nothing to do; follow it with gcluster job logs pw-again -f"),
    (8, "failed_max_restarts", "Failed", "Failed",
     "the head failed {AGE} ago: container workload-container of pod "
     "pw-fail-pathways-head-0-0-{POD} exited with code 1; no restarts were left (0 of at most 0)",
     "see why: gcluster job logs pw-fail; fix it, then submit again"),
    (8, "failed_pod_failure_policy", "Failed", "Failed",
     "the head failed {AGE} ago: container workload-container of pod "
     "pw-pfp-pathways-head-0-0-{POD} exited with code 2; exit code 2 is not one of "
     "--restart-on-exit-codes 42, so the job failed at once",
     "see why: gcluster job logs pw-pfp; fix it, then submit again"),
    (8, "failed_worker_backoff", "Failed", "Failed",
     "the workers failed {AGE} ago: container pathways-worker of pod pw-wfail-worker-0-1-{POD} "
     "exited with code 1; no restarts were left (0 of at most 0)",
     "see why: gcluster job logs pw-wfail --role worker --slice 0 --host 1; fix it, then submit "
     "again"),
    (9, "preempted", "Queued", "Preempted",
     "preempted {AGE} ago by pw-high (priority high (750), above this job's low (250)): its pods "
     "were stopped and it waits in line again; now the workers need 32 google.com/tpu in "
     "tpu-flavor; quota 32, 16 used by pw-high",
     "nothing to do: it starts again from the beginning when quota frees up; submit with a "
     "higher --priority to keep it from being preempted"),
    (9, "disrupted", "Running", "Disrupted",
     "worker pod pw-maint-worker-0-0-{POD} was stopped: its host shut down or ran short of "
     "resources (host maintenance) (container pathways-worker exited 143, SIGTERM); it is "
     "replaced and the job goes on (job restarts so far: 0 of at most 2)",
     "nothing to do: host maintenance ends and the job goes on; gcluster job inspect pw-maint "
     "shows the replacement"),
    (10, "succeeded", "Succeeded", "Succeeded",
     "finished successfully at {TIME} ({AGE} ago)",
     "nothing to do; its output: gcluster job logs pw-done (the job is deleted 1h after it "
     "finished)"),
]

# The words for each case, for the report.
TITLES = {
    1: "no such queue, queue label missing, the queue's cluster queue missing",
    2: "cluster queue inactive",
    3: "quota short",
    4: "waiting behind other workloads",
    5: "admitted, pods cannot be placed",
    6: "image cannot be pulled, pods stuck creating",
    7: "running normally",
    8: "failed",
    9: "preempted or disrupted",
    10: "succeeded",
}


def stuck_creating_later(s):
    """Pods bound to hosts that never start them, for long enough to call them stuck."""
    job, workers = s.stuck_workers("pw-stuck")
    for p in workers:
        s.scheduled_long_ago(p, 300)
    return job, ("as stuck_creating, then the workers' PodScheduled time moved 5 minutes into the "
                 "past, as if they had waited on their hosts that long")


SITUATIONS = dict(why_cases.SITUATIONS, stuck_creating_later=stuck_creating_later)


@pytest.fixture(scope="module")
def situations(testenv):
    s = why_cases.Situations(testenv.kubeconfig, pytest.fail)
    s.clean()
    yield s
    s.clean()


@pytest.fixture(scope="module")
def report():
    """Each case's output, written to REPORT once every test of the module has run."""
    entries = []
    yield entries
    lines = ["# `gcluster job why` on each case of issue 16", "",
             "Written by tests/cluster/test_job_why.py: each situation made on testenv, then "
             "`gcluster job why JOB` (text) and its `-o json` reason.", ""]
    for case, name, how, text, reason in sorted(entries, key=lambda e: e[0]):
        lines += [f"## Case {case} ({TITLES[case]}): {name}", "", f"Made: {how}.", "",
                  f"Reason: `{reason}`", "", "```", text.rstrip("\n"), "```", ""]
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text("\n".join(lines))


@pytest.fixture
def cli(testenv, tmp_path):
    return Cli(testenv.kubeconfig, tmp_path)


def why(cli, job, *flags):
    return cli.gcluster("job", "why", job, *CLUSTER, *flags, check=0)


@pytest.mark.parametrize("case,name,state,reason,cause,fix", CASES, ids=[c[1] for c in CASES])
def test_job_why(case, name, state, reason, cause, fix, situations, cli, report):
    try:
        job, how = SITUATIONS[name](situations)
        text = why(cli, job).stdout
        cause_re, fix_re = literal(cause), literal(fix)
        lines = text.splitlines()
        assert len(lines) == 2, text
        assert re.fullmatch("Cause: " + cause_re, lines[0]), text
        assert re.fullmatch("Fix:   " + fix_re, lines[1]), text

        doc = json.loads(why(cli, job, "-o", "json").stdout)
        assert set(doc) == {"state", "reason", "cause", "fix", "evidence"}
        assert (doc["state"], doc["reason"]) == (state, reason)
        assert re.fullmatch(cause_re, doc["cause"]), doc
        assert re.fullmatch(fix_re, doc["fix"]), doc
        assert doc["evidence"], doc
        report.append((case, name, how, text, doc["reason"]))
        check_more(name, job, doc, cli)
    finally:
        situations.clean()


def check_more(name, job, doc, cli):
    """What some cases show besides the two lines."""
    if name == "running":
        # A healthy running job costs what inspect costs, as -v counts them.
        counts = [re.search(r"(\d+) API requests in (\d+) round trips",
                            cli.gcluster("job", command, job, *CLUSTER, "-v", check=0).stderr)
                  for command in ("why", "inspect")]
        assert all(counts), counts
        assert counts[0].groups() == counts[1].groups() == ("4", "2")
        # list reads the JobSet alone, whose ready counts follow the pods a moment later.
        def listed_running():
            wide = cli.gcluster("job", "list", *CLUSTER, "-o", "wide", check=0).stdout
            if not re.search(rf"^{job}\s.*\suser-queue\s+Running$", wide, re.M):
                raise AssertionError(wide)  # reported if time runs out
            return True

        wait_for(listed_running, timeout=30, what=f"job list to show {job} Running")
    if name == "queue_missing":
        wide = cli.gcluster("job", "list", *CLUSTER, "-o", "wide", check=0).stdout
        assert re.search(rf"^{job}\s.*\sno-such-queue\s+QueueMissing$", wide, re.M), wide
    if name == "quota_short":
        inspect = cli.gcluster("job", "inspect", job, *CLUSTER, check=0).stdout
        assert f"\nCause:      {doc['cause']}\nFix:        {doc['fix']}\n" in inspect, inspect
        report = json.loads(cli.gcluster("job", "inspect", job, *CLUSTER, "--format", "json",
                                         check=0).stdout)
        assert report["diagnosis"] == doc
    if name == "failed_max_restarts":
        # The failed container's last log lines (kwok serves the same fake log everywhere).
        assert any(e.endswith("/workload-container: testenv: fake log end")
                   for e in doc["evidence"]), doc["evidence"]
        # Its child Jobs, read beside the Workload once the JobSet said it failed.
        assert any(e.startswith("Job ") and ": Failed=True" in e
                   for e in doc["evidence"]), doc["evidence"]


def test_await_timeout_says_why(situations, cli, report):
    """--await-job-completion --timeout: the wait ends with the job still queued; why follows."""
    try:
        situations.running("pw-a", slices=2)
        proc = cli.gcluster("job", "submit", "--name", "pw-t", *CLUSTER, "--compute-type",
                            "v6e-16", "--pathways", "--pathways-gcs-location", GCS, "--command",
                            "python3 train.py", "--image", IMAGE, "--await-job-completion",
                            "--timeout", "20s", check=1)
        assert "timed out after 20s waiting for job pw-t" in proc.stderr
        cause = "the workers need 16 google.com/tpu in tpu-flavor; quota 32, 32 used by pw-a"
        assert f"\nCause: {cause}\nFix:   wait for pw-a to finish" in proc.stdout, proc.stdout
        report.append((3, "await_timeout", "pw-a (v6e-16 x2) running; then gcluster job submit "
                       "pw-t (v6e-16) --await-job-completion --timeout 20s",
                       proc.stdout[proc.stdout.index("Cause:"):], "QuotaShort"))
    finally:
        situations.clean()
