"""A JobSet-less job (GCLUSTER_DISABLE_JOBSET=1: a batch/v1 Indexed Job and a headless Service,
as Google's gcluster falls back) is seen by every command that follows a job, not only by submit
and cancel: `job list` shows its row, `job inspect` its state and slices and says what it runs
as, `job logs` reads its pods, `job why` says it is JobSet-less, and `job wait` follows it to
running and to its end. The commands themselves run without the variable: they find the Job.
"""

import json

from gcluster_cli import CLUSTER, IMAGE
from conftest import FAKE_LOG_LINES

NO_JOBSET = {"GCLUSTER_DISABLE_JOBSET": "1"}
NAME = "fb-list"


def job_pods(cli, name):
    return cli.kubectl_json("get", "pods", "-l", f"batch.kubernetes.io/job-name={name}")["items"]


def test_a_jobset_less_job_is_followed_by_every_command(testenv, cli):
    proc = cli.gcluster("job", "submit", "--name", NAME, *CLUSTER, "--compute-type", "v6e-16",
                        "--image", IMAGE, "--command", "python train.py", env=NO_JOBSET, check=0)
    assert "as a batch/v1 Indexed Job and a headless Service" in proc.stderr, proc.stderr
    try:
        waited = cli.gcluster("job", "wait", NAME, *CLUSTER, "--for", "running", "--timeout",
                              "90s", check=0)
        assert waited.stdout == f"{NAME}: Running 4/4\n", waited.stdout

        # The list counts the Job's ready pods, which its controller updates a moment after
        # the pods run.
        rows = testenv.wait_for(
            lambda: (r := cli.list_json())[NAME]["status"] == "Running 4/4" and r,
            what="job list to show the Job's 4 ready pods")
        assert rows[NAME]["compute"] == "v6e-16 x1", rows[NAME]
        listed = cli.gcluster("job", "list", *CLUSTER, check=0).stdout
        assert any(line.split()[:3] == [NAME, "Running", "4/4"] for line in listed.splitlines()), \
            listed

        inspected = cli.gcluster("job", "inspect", NAME, *CLUSTER, check=0).stdout
        assert "Status:     Running 4/4\n" in inspected, inspected
        assert ("Runs as:    a batch/v1 Indexed Job and a headless Service (no JobSet)\n"
                in inspected), inspected
        assert "main-job         1 slice of 4 pods: 1 fully running" in inspected, inspected
        doc = json.loads(cli.gcluster("job", "inspect", NAME, *CLUSTER, "--format", "json",
                                      check=0).stdout)
        assert doc["jobset_less"] is True
        assert sorted(p["host"] for p in doc["pods"]) == [0, 1, 2, 3]
        assert {p["role"] for p in doc["pods"]} == {"main-job"}
        shown = cli.gcluster("job", "inspect", NAME, *CLUSTER, "--manifest", check=0).stdout
        assert "kind: Job\n" in shown and "kind: JobSet" not in shown, shown

        why = cli.gcluster("job", "why", NAME, *CLUSTER, check=0).stdout
        assert f"(a JobSet-less job: batch/v1 Indexed Job {NAME} and its headless Service)" \
            in why, why

        logs = cli.gcluster("job", "logs", NAME, *CLUSTER, check=0).stdout
        assert logs.splitlines() == FAKE_LOG_LINES, logs
        every = cli.gcluster("job", "logs", NAME, *CLUSTER, "--all", check=0).stdout
        prefixes = {line.split("]")[0] + "]" for line in every.splitlines()}
        assert len(prefixes) == 4, prefixes

        for pod in job_pods(cli, NAME):
            testenv.finish_pod(pod["metadata"]["name"], 0)
        done = cli.gcluster("job", "wait", NAME, *CLUSTER, "--timeout", "90s", check=0)
        assert done.stdout == f"{NAME}: Succeeded\n", done.stdout
        testenv.wait_for(lambda: cli.list_json()[NAME]["status"] == "Succeeded",
                         what="job list to show the job succeeded")
    finally:
        cli.gcluster("job", "cancel", NAME, *CLUSTER)


def test_a_missing_job_is_still_not_found(cli):
    proc = cli.gcluster("job", "wait", "fb-nowhere", *CLUSTER, "--timeout", "5s", check=1)
    assert "no job named fb-nowhere in namespace default" in proc.stderr, proc.stderr
    proc = cli.gcluster("job", "inspect", "fb-nowhere", *CLUSTER, check=1)
    assert "no job named fb-nowhere in namespace default" in proc.stderr, proc.stderr
