"""Google's fallback without JobSet: with GCLUSTER_DISABLE_JOBSET=1 (or a cluster without the
JobSet API) a single-slice job without Pathways runs as a batch/v1 Indexed Job, queued by Kueue
like a JobSet, and a headless Service for its pods' host names; `job cancel` removes both. A job
that needs JobSet (several slices, Pathways) is refused with the fix.
"""

from gcluster_cli import CLUSTER, IMAGE, is_true
from conftest import wait_for

NO_JOBSET = {"GCLUSTER_DISABLE_JOBSET": "1"}


def submit(cli, name, *extra, check=0):
    cli.submitted.append(name)
    return cli.gcluster("job", "submit", "--name", name, *CLUSTER, "--compute-type", "v6e-16",
                        "--image", IMAGE, "--command", "python train.py", *extra,
                        env=NO_JOBSET, check=check)


def test_single_slice_job_runs_as_an_indexed_job(testenv, cli):
    proc = submit(cli, "nojs-a")
    assert "created nojs-a as a batch/v1 Indexed Job and a headless Service" in proc.stderr, \
        proc.stderr
    assert testenv.kubectl("get", "jobset", "nojs-a", check=False).returncode != 0
    job = testenv.kubectl_json("get", "job", "nojs-a")
    assert job["metadata"]["labels"]["gcluster.google.com/workload"] == "nojs-a"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 4, 4)
    assert spec["template"]["spec"]["subdomain"] == "nojs-a"
    service = testenv.kubectl_json("get", "service", "nojs-a")
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"batch.kubernetes.io/job-name": "nojs-a"}
    # Kueue admits it as it admits JobSets, and the Job's four pods are made.
    wait_for(lambda: not testenv.kubectl_json("get", "job", "nojs-a")["spec"].get("suspend"),
             timeout=120, what="Kueue to admit the Indexed Job")
    wait_for(lambda: len(testenv.pods("batch.kubernetes.io/job-name=nojs-a")) == 4, timeout=120,
             what="the Indexed Job's 4 pods")
    out = cli.gcluster("job", "cancel", "nojs-a", *CLUSTER, check=0).stdout
    assert out.startswith("Cancelled job nojs-a"), out
    wait_for(lambda: testenv.kubectl("get", "job", "nojs-a", check=False).returncode != 0 and
             testenv.kubectl("get", "service", "nojs-a", check=False).returncode != 0,
             timeout=120, what="the Indexed Job and its Service to be gone")


def test_a_job_that_needs_jobset_is_refused(cli):
    proc = submit(cli, "nojs-b", "--num-slices", "2", check=2)
    assert "--num-slices above 1 needs the JobSet API" in proc.stderr, proc.stderr
