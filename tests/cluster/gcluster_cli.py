"""Running ./gcluster and kubectl against the local control plane, for the cluster tests.

Every wait is bounded; every command runs with the test kubeconfig and a private HOME, so no
user configuration leaks in.
"""

import json
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GCLUSTER = Path(os.environ.get("GCLUSTER_BIN", REPO / "build" / "gcluster"))
CLUSTER = ["--cluster", "local", "--location", "us-east5"]
GCS = "gs://test-bucket/pathways"
IMAGE = "us-docker.pkg.dev/test-project/test-repo/jax:1"


class Cli:
    """Runs gcluster and kubectl with one kubeconfig."""

    def __init__(self, kubeconfig, home):
        self.kubeconfig = str(kubeconfig)
        self.home = str(home)
        self.submitted = []  # jobs to clean up after the test

    def env(self, extra=None):
        env = dict(os.environ)
        env.update({"KUBECONFIG": self.kubeconfig, "HOME": self.home})
        env.pop("GCLUSTER_IMAGE_REPO", None)
        if extra:
            env.update(extra)
        return env

    def gcluster(self, *args, timeout=120, env=None, check=None):
        """Runs ./gcluster; check=N asserts the exit code."""
        proc = subprocess.run(
            [str(GCLUSTER), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(env),
        )
        if check is not None:
            assert proc.returncode == check, (
                f"gcluster {' '.join(args)}: exit {proc.returncode}, want {check}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
            )
        return proc

    def kubectl(self, *args, check=True, timeout=60):
        proc = subprocess.run(
            ["kubectl", *args], capture_output=True, text=True, timeout=timeout, env=self.env()
        )
        if check:
            assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc

    def kubectl_json(self, *args):
        return json.loads(self.kubectl(*args, "-o", "json").stdout)

    def pods(self, job):
        return self.kubectl_json("get", "pods", "-l", f"jobset.sigs.k8s.io/jobset-name={job}")[
            "items"
        ]

    def workload(self, job):
        uid = self.kubectl_json("get", "jobset", job)["metadata"]["uid"]
        items = self.kubectl_json(
            "get", "workloads.kueue.x-k8s.io", "-l", f"kueue.x-k8s.io/job-uid={uid}"
        )["items"]
        return items[0] if items else None

    def list_json(self, *args):
        out = self.gcluster("job", "list", *CLUSTER, "-o", "json", *args, check=0).stdout
        return {row["name"]: row for row in json.loads(out)}

    def finish_pod(self, pod, exit_code):
        self.kubectl(
            "annotate", "--overwrite", f"pod/{pod}", f"testenv.gcluster.dev/exit-code={exit_code}"
        )

    def head_pod(self, job):
        pods = [
            p
            for p in self.pods(job)
            if p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name")
            == "pathways-head"
        ]
        assert len(pods) == 1, f"want one head pod, got {[p['metadata']['name'] for p in pods]}"
        return pods[0]

    def delete_job(self, job):
        self.kubectl("delete", "jobset", job, "--ignore-not-found", "--wait=false", check=False)


def condition(obj, kind):
    for c in obj.get("status", {}).get("conditions", []):
        if c["type"] == kind:
            return c
    return None


def is_true(obj, kind):
    c = condition(obj, kind)
    return bool(c and c["status"] == "True")


def submit_pathways(cli, name, *extra, compute="v6e-16", slices="2", headless=False, check=0):
    cli.submitted.append(name)
    args = ["job", "submit", "--name", name, *CLUSTER, "--compute-type", compute, "--pathways",
            "--pathways-gcs-location", GCS]
    if compute.startswith("v6e") or slices != "1":
        args += ["--num-slices", slices]
    if headless:
        args.append("--pathways-headless")
    else:
        args += ["--command", "python3 train.py", "--image", IMAGE]
    return cli.gcluster(*args, *extra, check=check)
