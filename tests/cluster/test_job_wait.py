"""`gcluster job wait` against the local control plane: several jobs followed by one watch, and
the exit status a script reads: 0 all succeeded, 3 one failed (named, with why) or was
cancelled, 1 when the time ran out. Pods end through testenv's exit-code annotation.
"""

import json
import os
import pty
import select
import subprocess
import time

from conftest import wait_for
from gcluster_cli import CLUSTER, GCLUSTER, submit_pathways

WAIT_LIMIT = 180  # seconds any waiter of these tests is given before the test fails


def submit(cli, job):
    submit_pathways(cli, job, "--restarts", "0", slices="1")


def head_running(cli, job):
    heads = [p for p in cli.pods(job)
             if p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name")
             == "pathways-head" and p["status"].get("phase") == "Running"]
    return heads[0]["metadata"]["name"] if heads else None


def start_wait(cli, *args):
    return subprocess.Popen([str(GCLUSTER), "job", "wait", *args, *CLUSTER],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=cli.env())


def finish(waiter):
    try:
        out, err = waiter.communicate(timeout=WAIT_LIMIT)
    finally:
        waiter.kill()
    return waiter.returncode, out, err


def test_two_jobs_succeed(cli):
    jobs = ["wait-ok-a", "wait-ok-b"]
    for job in jobs:
        submit(cli, job)
    waiter = start_wait(cli, *jobs, "--timeout", "3m", "-o", "json")
    for job in jobs:
        head = wait_for(lambda: head_running(cli, job), what=f"{job}'s head pod running")
        cli.finish_pod(head, 0)
    code, out, err = finish(waiter)
    assert code == 0, err
    # Piped: no progress lines, only the result.
    assert err == ""
    report = json.loads(out)
    assert [r["name"] for r in report] == jobs
    assert all(r["outcome"] == "reached" and r["phase"] == "Succeeded" for r in report), report


def test_one_failure_is_exit_3_with_its_name(cli):
    good, bad = "wait-one-good", "wait-one-bad"
    for job in (good, bad):
        submit(cli, job)
    waiter = start_wait(cli, good, bad, "--for", "finished", "--timeout", "3m")
    cli.finish_pod(wait_for(lambda: head_running(cli, good), what="head running"), 0)
    cli.finish_pod(wait_for(lambda: head_running(cli, bad), what="head running"), 3)
    code, out, err = finish(waiter)
    assert code == 3, err
    assert f"gcluster: error: job {bad} failed: pod " in err
    assert "container workload-container exited with code 3" in err
    assert f"{good}: Succeeded\n" in out and f"{bad}: Failed - " in out


def read_until(stream, until, timeout):
    """Lines of a pipe until one contains `until` (bounded)."""
    seen = ""
    deadline = time.monotonic() + timeout
    while until not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([stream], [], [], 0.5)
        if ready:
            line = stream.readline()
            if not line:
                break
            seen += line
    return seen


def read_tty(fd, until, timeout):
    """What a pseudo-terminal shows until `until` appears in it (bounded)."""
    seen = b""
    deadline = time.monotonic() + timeout
    while until.encode() not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen.decode(errors="replace")


def test_running_timeout_and_cancel(cli):
    job = "wait-running"
    submit(cli, job)
    # --for running: every pod of the job runs.
    code, out, err = finish(start_wait(cli, job, "--for", "running", "--timeout", "3m"))
    assert code == 0, err
    assert out == f"{job}: Running 5/5\n"

    # The job runs on: waiting for it to succeed runs out of time, exit 1, with its state. On
    # a terminal, its progress line shows while it waits.
    controller, terminal = pty.openpty()
    waiter = subprocess.Popen([str(GCLUSTER), "job", "wait", job, *CLUSTER, "--timeout", "3s"],
                              stdout=subprocess.PIPE, stderr=terminal, text=True, env=cli.env())
    os.close(terminal)
    try:
        shown = read_tty(controller, "timed out", WAIT_LIMIT)
        waiter.wait(timeout=WAIT_LIMIT)
    finally:
        waiter.kill()
        os.close(controller)
    assert waiter.returncode == 1, shown
    assert f"{job}: Running 5/5" in shown
    assert f"gcluster: error: timed out after 3s; not succeeded yet: {job} Running 5/5" in shown

    # --timeout 0 looks once and does not wait: one list, no watch; exit 0 when the job is
    # already there, 1 (with its state) when it is not, and a missing job is said as such.
    code, out, err = finish(start_wait(cli, job, "--for", "running", "--timeout", "0"))
    assert code == 0, err
    assert out == f"{job}: Running 5/5\n"
    code, out, err = finish(start_wait(cli, job, "--timeout", "0s", "-v"))
    assert code == 1, err
    assert ("gcluster: error: timed out at the one look (--timeout 0); not succeeded yet: "
            f"{job} Running 5/5") in err
    assert "watch=1" not in err
    code, out, err = finish(start_wait(cli, "wait-no-such-job", "--timeout", "0"))
    assert code == 1, err
    assert "wait-no-such-job" in err and "watch=1" not in err

    # Cancelled while waited on: a clear line and exit 3. The waiter's -v trace says when its
    # watch has started.
    waiter = start_wait(cli, job, "--timeout", "3m", "-v")
    traced = read_until(waiter.stderr, "watch=1", WAIT_LIMIT)
    assert "watch=1" in traced, traced
    cli.gcluster("job", "cancel", job, *CLUSTER, check=0)
    code, out, err = finish(waiter)
    assert code == 3, err
    assert (f"gcluster: error: job {job} was cancelled (its JobSet was deleted) before it "
            "succeeded\n") in err
    assert out == f"{job}: Cancelled\n"
