"""The situations `gcluster job why` tells apart, made on the local control plane.

One home for the setups both users need: tests/cluster/test_job_why.py (which asserts what
`job why` says about each) and tests/fixtures/diagnose/capture.py (which saves the objects the
controllers wrote, for the engine's unit tests). Each situation submits our Pathways JobSet
(v6e-16 slices, as `gcluster job submit --dry-run-out` writes it), bends the cluster or the
JobSet the way the situation needs, waits (bounded) until the real controllers have written
what they write, and returns the job's name and how it was made. A few situations need a
kubelet that kwok does not imitate (a container waiting on its image, a pod whose node never
starts it); there the objects are written as the kubelet would write them, and `how` says so.

Every wait is bounded; everything talks to 127.0.0.1 through kubectl and ./gcluster.
"""

import datetime
import json
import os
import subprocess
import time
from pathlib import Path

import yaml

from gcluster_cli import condition, is_true

REPO = Path(__file__).resolve().parents[2]
GCLUSTER = Path(os.environ.get("GCLUSTER_BIN", REPO / "build" / "gcluster"))
IMAGE = "us-docker.pkg.dev/test-project/test-repo/jax:1"
EXIT_CODE = "testenv.gcluster.dev/exit-code"
KWOK_NODE = "kwok.x-k8s.io/node"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
MANUAL_POOL = "tpu-v6e-np-manual"  # a v6e pool kwok does not act for (see unmanaged_tpu_pool)
BAD_IMAGE = "us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:no-such-tag"


def now_rfc3339(delta=0):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=delta)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class Situations:
    """The setups, against the cluster of `kubeconfig`; `fail(message)` ends the caller's run
    (pytest.fail in the tests, sys.exit in the capture script)."""

    def __init__(self, kubeconfig, fail):
        self.env = dict(os.environ, KUBECONFIG=str(kubeconfig))
        self.fail = fail

    # ---- kubectl ------------------------------------------------------------------------

    def kubectl(self, *args, input=None, check=True):
        proc = subprocess.run(["kubectl", *args], input=input, capture_output=True, text=True,
                              timeout=120, env=self.env)
        if check and proc.returncode:
            self.fail(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc

    def get(self, *args):
        proc = self.kubectl("get", *args, "-o", "json", check=False)
        return json.loads(proc.stdout) if proc.returncode == 0 else None

    def items(self, *args):
        found = self.get(*args)
        return found["items"] if found else []

    def apply(self, objects):
        self.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "List", "items": list(objects)}))

    def wait(self, predicate, what, timeout=90):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                self.fail(f"timed out after {timeout}s waiting for {what}")
            time.sleep(1)

    # ---- jobs ---------------------------------------------------------------------------

    def render(self, name, *flags, slices=1):
        """Our Pathways JobSet for `name`, as ./gcluster job submit writes it (v6e-16 slices)."""
        args = [str(GCLUSTER), "job", "submit", "--name", name, "--compute-type", "v6e-16",
                "--pathways", "--pathways-gcs-location", "gs://test-bucket/pathways",
                "--num-slices", str(slices), "--command", "python3 train.py", "--image", IMAGE,
                *flags, "--dry-run-out", "-"]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60, env=self.env)
        if proc.returncode:
            self.fail(f"gcluster job submit --dry-run-out: {proc.stderr}")
        return yaml.safe_load(proc.stdout)

    def submit(self, name, *flags, slices=1, edit=None):
        """Creates the JobSet with kubectl, so that situations submit refuses can be made."""
        jobset = self.render(name, *flags, slices=slices)
        if edit:
            edit(jobset)
        self.kubectl("create", "-f", "-", input=json.dumps(jobset))
        return name

    def pods(self, job):
        return self.items("pods", "-l", f"{JOBSET_LABEL}={job}")

    def workload(self, job):
        js = self.get("jobset", job)
        if not js:
            return None
        found = self.items("workloads", "-l", f"kueue.x-k8s.io/job-uid={js['metadata']['uid']}")
        return found[-1] if found else None

    def pods_running(self, job, n):
        return len([p for p in self.pods(job) if p["status"].get("phase") == "Running"]) == n

    def role_pods(self, job, role):
        return [p for p in self.pods(job)
                if p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name") == role]

    def finish(self, pod, code):
        self.kubectl("annotate", "--overwrite", f"pod/{pod['metadata']['name']}",
                     f"{EXIT_CODE}={code}")

    def quota_pending(self, job):
        c = condition(self.workload(job) or {}, "QuotaReserved")
        return c if c and c["status"] == "False" else None

    def not_admitted(self, job):
        """A Workload Kueue has not admitted (behind a StrictFIFO head it may carry no
        condition)."""
        wl = self.workload(job)
        return wl if wl and not is_true(wl, "QuotaReserved") else None

    def unschedulable(self, job, role):
        """Waits until one of the job's `role` pods is refused by the scheduler."""
        def refused():
            return any(condition(p, "PodScheduled") and condition(p, "PodScheduled")["status"]
                       == "False" for p in self.role_pods(job, role))

        self.wait(refused, f"an unschedulable {role} pod of {job}")
        time.sleep(2)

    def bound_workers(self, job, n):
        workers = self.role_pods(job, "worker")
        return len([p for p in workers if p["spec"].get("nodeName")]) == n and workers

    # ---- the cluster --------------------------------------------------------------------

    def clean(self):
        """Every job and its pods gone; the queues, flavors and nodes as the default profile
        has them."""
        # Pods on hosts kwok does not act for are never stopped by a kubelet: remove them now.
        def force_manual_pods():
            for p in self.items("pods", "-l", JOBSET_LABEL):
                if p["spec"].get("nodeName", "").startswith(f"gke-local-{MANUAL_POOL}-"):
                    self.kubectl("delete", "pod", p["metadata"]["name"], "--force",
                                 "--grace-period=0", check=False)

        force_manual_pods()
        self.kubectl("delete", "jobset", "--all", "--wait=false")
        force_manual_pods()
        self.wait(lambda: not self.items("pods", "-l", JOBSET_LABEL)
                  and not self.items("jobsets"), "every job's pods to go", 180)
        for kind, keep in (("localqueues", {"user-queue"}), ("clusterqueues", {"cluster-queue"}),
                           ("resourceflavors", {"pathways-flavor", "tpu-flavor"})):
            for obj in self.items(kind, "-A"):
                if obj["metadata"]["name"] not in keep:
                    ns = obj["metadata"].get("namespace")
                    self.kubectl("delete", kind, obj["metadata"]["name"],
                                 *(["-n", ns] if ns else []))
        for n in self.items("nodes"):
            if n["metadata"]["labels"].get("cloud.google.com/gke-nodepool") == MANUAL_POOL:
                self.kubectl("delete", "node", n["metadata"]["name"])
            elif n["spec"].get("unschedulable"):
                self.kubectl("uncordon", n["metadata"]["name"])

    @staticmethod
    def queue_objects(cq_name, lq_name, tpu_quota=32, strategy="BestEffortFIFO",
                      flavor="tpu-flavor", stop=None):
        cq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
              "metadata": {"name": cq_name},
              "spec": {"namespaceSelector": {}, "queueingStrategy": strategy,
                       "resourceGroups": [{
                           "coveredResources": ["google.com/tpu", "cpu", "memory"],
                           "flavors": [
                               {"name": "pathways-flavor", "resources": [
                                   {"name": "google.com/tpu", "nominalQuota": 0},
                                   {"name": "cpu", "nominalQuota": 192},
                                   {"name": "memory", "nominalQuota": "768Gi"}]},
                               {"name": flavor, "resources": [
                                   {"name": "google.com/tpu", "nominalQuota": tpu_quota},
                                   {"name": "cpu", "nominalQuota": 1440},
                                   {"name": "memory", "nominalQuota": "5760Gi"}]}]}]}}
        if stop:
            cq["spec"]["stopPolicy"] = stop
        lq = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
              "metadata": {"name": lq_name, "namespace": "default"},
              "spec": {"clusterQueue": cq_name}}
        return [cq, lq]

    def queued(self, name, queue, objects=()):
        """Submits `name` to `queue` (after creating `objects`) and waits until Kueue has said
        why it does not admit it."""
        if objects:
            self.apply(objects)
        job = self.submit(name, "--queue", queue)
        self.wait(lambda: self.quota_pending(job), f"Kueue to leave {name} pending")
        return job

    def unmanaged_tpu_pool(self):
        """A v6e pool whose hosts kwok does not act for (their pods stay as bound, as on hosts
        whose kubelet does not start them), and every other v6e host cordoned, so the workers
        land there."""
        template = self.items("nodes", "-l", "cloud.google.com/gke-nodepool=tpu-v6e-np-0")
        for i, node in enumerate(template):
            meta = node["metadata"]
            name = f"gke-local-{MANUAL_POOL}-{i:04d}"
            labels = dict(meta["labels"], **{"cloud.google.com/gke-nodepool": MANUAL_POOL,
                                             "kubernetes.io/hostname": name})
            spec = {k: v for k, v in node["spec"].items() if k != "providerID"}
            self.kubectl("create", "-f", "-", input=json.dumps({
                "apiVersion": "v1", "kind": "Node", "spec": spec, "status": node["status"],
                "metadata": {"name": name, "labels": labels,
                             "annotations": {KWOK_NODE: "off"}}}))
        for n in self.items("nodes", "-l", "cloud.google.com/gke-tpu-accelerator=tpu-v6e-slice"):
            if n["metadata"]["labels"]["cloud.google.com/gke-nodepool"] != MANUAL_POOL:
                self.kubectl("cordon", n["metadata"]["name"])

    def stuck_workers(self, name):
        """Our job's workers bound to hosts kwok does not act for: Pending, nothing started."""
        self.unmanaged_tpu_pool()
        job = self.submit(name)
        workers = self.wait(lambda: self.bound_workers(job, 4), "the workers to be bound")
        time.sleep(2)
        return job, workers

    def pull_fails(self, pod):
        """Writes what the kubelet writes for a worker whose image cannot be pulled: the
        container waiting with ImagePullBackOff, and its Warning events."""
        name = pod["metadata"]["name"]
        message = (f"Back-off pulling image \"{BAD_IMAGE}\": ErrImagePull: rpc error: code = "
                   f"NotFound desc = failed to pull and unpack image \"{BAD_IMAGE}\": not found")
        status = {"status": {"phase": "Pending", "containerStatuses": [{
            "name": "pathways-worker", "image": BAD_IMAGE, "imageID": "", "ready": False,
            "started": False, "restartCount": 0,
            "state": {"waiting": {"reason": "ImagePullBackOff", "message": message}}}],
            "conditions": [{"type": "PodScheduled", "status": "True"},
                           {"type": "Initialized", "status": "True"},
                           {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                            "message": "containers with unready status: [pathways-worker]"}]}}
        self.kubectl("patch", "pod", name, "--subresource=status", "--type=merge", "-p",
                     json.dumps(status))
        for reason, text in (("Failed", f"Failed to pull image \"{BAD_IMAGE}\": not found"),
                             ("BackOff", f"Back-off pulling image \"{BAD_IMAGE}\"")):
            self.kubectl("create", "-f", "-", input=json.dumps({
                "apiVersion": "v1", "kind": "Event", "type": "Warning", "reason": reason,
                "metadata": {"generateName": name + ".", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": name, "namespace": "default",
                                   "uid": pod["metadata"]["uid"],
                                   "fieldPath": "spec.containers{pathways-worker}"},
                "message": text, "count": 3, "source": {"component": "kubelet"},
                "firstTimestamp": pod["metadata"]["creationTimestamp"],
                "lastTimestamp": pod["metadata"]["creationTimestamp"]}))

    def scheduled_long_ago(self, pod, seconds):
        """Moves a bound pod's PodScheduled time `seconds` into the past, as if it had waited on
        its node that long (the wait itself has no place in a test)."""
        self.kubectl("patch", "pod", pod["metadata"]["name"], "--subresource=status",
                     "--type=strategic", "-p", json.dumps({"status": {"conditions": [{
                         "type": "PodScheduled", "status": "True",
                         "lastTransitionTime": now_rfc3339(-seconds)}]}}))

    def running(self, name, *flags, slices=1):
        job = self.submit(name, *flags, slices=slices)
        self.wait(lambda: self.pods_running(job, 1 + 4 * slices), f"{name} to run")
        return job

    def failed(self, name, role, index, code, *flags, edit=None):
        job = self.submit(name, *flags, edit=edit)
        self.wait(lambda: self.pods_running(job, 5), f"{name} to run")
        self.finish(self.role_pods(job, role)[index], code)
        self.wait(lambda: is_true(self.get("jobset", job), "Failed"), f"{name} to fail")
        time.sleep(2)
        return job


def pod_spec(jobset, rjob):
    for r in jobset["spec"]["replicatedJobs"]:
        if r["name"] == rjob:
            return r["template"]["spec"]["template"]["spec"]
    raise KeyError(rjob)


# ---- the situations: each returns (job, how) ------------------------------------------------


def queue_missing(s):
    return (s.queued("pw-nq", "no-such-queue"),
            "./gcluster job submit --queue no-such-queue --dry-run-out - | kubectl create (submit "
            "refuses a missing queue, so the check is bypassed)")


def queue_label_missing(s):
    def edit(js):
        del js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
        js["spec"]["suspend"] = True

    job = s.submit("pw-nolabel", edit=edit)
    s.wait(lambda: condition(s.get("jobset", job), "Suspended"), "the JobSet to report Suspended")
    return job, ("our Pathways JobSet without the kueue.x-k8s.io/queue-name label and with "
                 "spec.suspend=true, created with kubectl: Kueue leaves it alone")


def cluster_queue_missing(s):
    orphan = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
              "metadata": {"name": "orphan-queue", "namespace": "default"},
              "spec": {"clusterQueue": "no-such-cq"}}
    return (s.queued("pw-orphan", "orphan-queue", [orphan]),
            "LocalQueue orphan-queue pointing at ClusterQueue no-such-cq (which does not exist); "
            "job submitted with --queue orphan-queue")


def cluster_queue_inactive_flavor(s):
    objects = s.queue_objects("broken-cq", "broken-queue", flavor="no-such-flavor")
    return (s.queued("pw-broken", "broken-queue", objects),
            "ClusterQueue broken-cq whose TPU flavor no-such-flavor does not exist (LocalQueue "
            "broken-queue); job submitted to it")


def cluster_queue_stopped(s):
    objects = s.queue_objects("held-cq", "held-queue", stop="Hold")
    return (s.queued("pw-held", "held-queue", objects),
            "ClusterQueue held-cq with stopPolicy Hold (LocalQueue held-queue); job submitted to "
            "it")


def quota_short(s):
    s.running("pw-a", slices=2)
    job = s.submit("pw-b")
    s.wait(lambda: s.quota_pending(job), "pw-b to wait for quota")
    return job, ("pw-a (v6e-16 x2, 32 chips) admitted and running on cluster-queue (TPU quota "
                 "32); then pw-b (v6e-16 x1, 16 chips) submitted to the same queue")


def quota_below_slice(s):
    objects = s.queue_objects("small-cq", "small-queue", tpu_quota=8)
    return (s.queued("pw-small", "small-queue", objects),
            "ClusterQueue small-cq with a TPU quota of 8 chips (LocalQueue small-queue); "
            "pw-small (v6e-16 x1, 16 chips) submitted to it")


def flavor_taint_untolerated(s):
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
              "metadata": {"name": "tainted-tpu-flavor"},
              "spec": {"nodeLabels": {"cloud.google.com/gke-tpu-accelerator": "tpu-v6e-slice"},
                       "nodeTaints": [{"key": "team", "value": "ml", "effect": "NoSchedule"}]}}
    objects = [flavor, *s.queue_objects("tainted-cq", "tainted-queue",
                                        flavor="tainted-tpu-flavor")]
    return (s.queued("pw-taint", "tainted-queue", objects),
            "ClusterQueue tainted-cq whose TPU flavor tainted-tpu-flavor has the node taint "
            "team=ml:NoSchedule, which our workers do not tolerate (LocalQueue tainted-queue); "
            "job created with kubectl (submit refuses it)")


def line_of_three(s, first, blocker, job, queue=(), blocker_flags=(), job_flags=()):
    """`first` (16 chips) running, then `blocker` (32 chips) waiting for quota, then `job` (16
    chips) submitted; returns once Kueue has not admitted `job`."""
    s.running(first, *queue)
    s.submit(blocker, *queue, *blocker_flags, slices=2)
    s.wait(lambda: s.quota_pending(blocker), f"{blocker} to wait for quota")
    time.sleep(2)  # a later creation time stamp than the blocker's, as between two users' submits
    s.submit(job, *queue, *job_flags)
    s.wait(lambda: s.not_admitted(job), f"{job} to wait")
    time.sleep(3)
    return job


def waiting_strict_fifo(s):
    s.apply(s.queue_objects("fifo-cq", "fifo-queue", strategy="StrictFIFO"))
    return (line_of_three(s, "pw-f1", "pw-f2", "pw-f3", queue=("--queue", "fifo-queue")),
            "ClusterQueue fifo-cq (StrictFIFO, TPU quota 32, LocalQueue fifo-queue): pw-f1 (16 "
            "chips) running, pw-f2 (32 chips) pending, then pw-f3 (16 chips, would fit) "
            "submitted")


def waiting_behind_priority(s):
    s.apply(s.queue_objects("fifo-cq", "fifo-queue", strategy="StrictFIFO"))
    return (line_of_three(s, "pw-h1", "pw-hi", "pw-lo", queue=("--queue", "fifo-queue"),
                          blocker_flags=("--priority", "high")),
            "ClusterQueue fifo-cq (StrictFIFO, TPU quota 32, no preemption): pw-h1 (16 chips) "
            "running, pw-hi (32 chips, --priority high) pending, then pw-lo (16 chips, no "
            "priority, would fit) submitted")


def quota_short_priority(s):
    return (line_of_three(s, "pw-p1", "pw-p2", "pw-p3", blocker_flags=("--priority", "high"),
                          job_flags=("--priority", "low")),
            "cluster-queue (BestEffortFIFO, TPU quota 32, preemption LowerPriority): pw-p1 (16 "
            "chips, no priority) running, pw-p2 (32 chips, --priority high) pending, then pw-p3 "
            "(16 chips, --priority low) submitted")


def unschedulable_selector(s):
    def edit(js):
        pod_spec(js, "worker")["nodeSelector"]["cloud.google.com/gke-tpu-topology"] = "8x8"

    job = s.submit("pw-8x8", edit=edit)
    s.unschedulable(job, "worker")
    return job, ("our v6e-16 job with the workers' node selector cloud.google.com/gke-tpu-topology "
                 "changed to 8x8 (no node has it), created with kubectl; Kueue admits it (its "
                 "flavor only names the accelerator)")


def unschedulable_busy(s):
    def outside(js):
        del js["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]

    other = s.submit("pw-outside", slices=2, edit=outside)
    s.wait(lambda: s.pods_running(other, 9), "pw-outside to run")
    job = s.submit("pw-busy")
    s.unschedulable(job, "worker")
    return job, ("pw-outside (v6e-16 x2, no queue label, so Kueue does not manage it) running on "
                 "all 8 v6e hosts; then pw-busy (v6e-16 x1) submitted to user-queue: admitted, "
                 "its workers find no free host")


def head_pool_missing(s):
    def edit(js):
        pod_spec(js, "pathways-head")["nodeSelector"]["cloud.google.com/gke-nodepool"] = "head-np"

    job = s.submit("pw-nohead", edit=edit)
    s.wait(lambda: s.quota_pending(job), "Kueue to find no flavor for the head")
    return job, ("our v6e-16 job with the head's node pool selector changed to head-np (no such "
                 "pool), created with kubectl (submit refuses a missing head pool): no flavor of "
                 "cluster-queue is for that pool")


def image_pull(s):
    job, workers = s.stuck_workers("pw-pull")
    for p in workers:
        s.pull_fails(p)
    return job, (f"as stuck_creating (workers bound to hosts kwok does not act for), then each "
                 f"worker's status written as the kubelet writes it for an image that cannot be "
                 f"pulled ({BAD_IMAGE}: container waiting with ImagePullBackOff, Warning events "
                 f"Failed and BackOff from the kubelet)")


def stuck_creating(s):
    job, _ = s.stuck_workers("pw-creating")
    return job, (f"a copy of v6e pool tpu-v6e-np-0 that kwok does not act for ({MANUAL_POOL}), "
                 f"the other v6e hosts cordoned, then our v6e-16 job submitted: the workers are "
                 f"bound there and stay Pending with no container started, as on hosts whose "
                 f"kubelet does not start them")


def running(s):
    return (s.running("pw-run", slices=2),
            "our v6e-16 x2 job submitted to user-queue, all 9 pods Running")


def running_restarted(s):
    job = s.running("pw-again", "--restarts", "3")
    s.finish(s.role_pods(job, "pathways-head")[0], 1)
    s.wait(lambda: s.get("jobset", job)["status"].get("restarts", 0) == 1,
           "the JobSet to restart")
    s.wait(lambda: s.pods_running(job, 5), "pw-again to run again", 180)
    return job, ("our v6e-16 job with --restarts 3; once running its head pod's user container "
                 "made to exit 1; captured when it runs again")


def failed_max_restarts(s):
    return (s.failed("pw-fail", "pathways-head", 0, 1, "--restarts", "0"),
            "our v6e-16 job with --restarts 0; once running its head pod's user container made "
            "to exit 1")


def failed_pod_failure_policy(s):
    return (s.failed("pw-pfp", "pathways-head", 0, 2, "--restarts", "3",
                     "--restart-on-exit-codes", "42"),
            "our v6e-16 job with --restarts 3 --restart-on-exit-codes 42; once running its head "
            "pod's user container made to exit 2 (not a restart code)")


def failed_worker_backoff(s):
    def edit(js):
        for r in js["spec"]["replicatedJobs"]:
            if r["name"] == "worker":
                r["template"]["spec"]["backoffLimit"] = 0

    return (s.failed("pw-wfail", "worker", 1, 1, "--restarts", "0", edit=edit),
            "our v6e-16 job with --restarts 0 and the workers' backoffLimit lowered from 16 to 0 "
            "(the Job controller's growing delay between replacement pods would make 16 "
            "failures take many minutes); once running, one worker pod made to exit 1")


def preempted(s):
    low = s.running("pw-low", "--priority", "low", slices=2)
    high = s.submit("pw-high", "--priority", "high")
    s.wait(lambda: is_true(s.workload(low) or {}, "Evicted"), "pw-low to be preempted")
    s.wait(lambda: is_true(s.workload(high) or {}, "Admitted"), "pw-high to be admitted", 120)
    time.sleep(2)
    return low, ("pw-low (v6e-16 x2, --priority low) running on cluster-queue; then pw-high "
                 "(v6e-16 x1, --priority high) submitted: Kueue preempts pw-low")


def disrupted(s):
    job = s.running("pw-maint", "--restarts", "2")
    victim = s.role_pods(job, "worker")[0]
    s.kubectl("patch", "pod", victim["metadata"]["name"], "--subresource=status",
              "--type=strategic", "-p", json.dumps({"status": {"conditions": [{
                  "type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                  "message": "Pod was terminated in response to imminent node shutdown.",
                  "lastTransitionTime": now_rfc3339()}]}}))
    s.finish(victim, 143)
    s.wait(lambda: s.get("jobset", job)["status"].get("restarts", 0) >= 1 or any(
        condition(p, "DisruptionTarget") and p["status"].get("phase") == "Failed"
        for p in s.pods(job)), "the worker to end", 60)
    return job, ("our v6e-16 job with --restarts 2; once running, one worker pod given the "
                 "DisruptionTarget condition the kubelet sets on node shutdown "
                 "(TerminationByKubelet) and made to exit 143 (SIGTERM)")


def succeeded(s):
    job = s.running("pw-done")
    s.finish(s.role_pods(job, "pathways-head")[0], 0)
    s.wait(lambda: is_true(s.get("jobset", job), "Completed"), "pw-done to complete")
    time.sleep(2)
    return job, "our v6e-16 job; once running its head pod's user container made to exit 0"


SITUATIONS = {f.__name__: f for f in (
    queue_missing, queue_label_missing, cluster_queue_missing, cluster_queue_inactive_flavor,
    cluster_queue_stopped, quota_short, quota_below_slice, flavor_taint_untolerated,
    waiting_strict_fifo,
    waiting_behind_priority, quota_short_priority, unschedulable_selector, unschedulable_busy,
    head_pool_missing, image_pull, stuck_creating, running, running_restarted, failed_max_restarts,
    failed_pod_failure_policy, failed_worker_backoff, preempted, disrupted, succeeded)}
