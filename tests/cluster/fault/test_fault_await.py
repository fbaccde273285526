"""`job submit --await-job-completion` through a network that breaks: watch connections cut every
3 s, a 60 s API server outage, a watch connection that goes silent, and a --timeout that must
still be reached. The job's real outcome decides the exit code: 0 succeeded, 3 failed, 1 timeout.
"""

import re
import time

from faults import finish, record, remove_jobs
from gcluster_cli import CLUSTER, GCS, IMAGE


def submit_args(name, timeout="5m", *extra):
    return ("job", "submit", "--name", name, *CLUSTER, "--compute-type", "v6e-16", "--pathways",
            "--pathways-gcs-location", GCS, "--command", "true", "--image", IMAGE, "--restarts",
            "0", "--await-job-completion", "--timeout", timeout, *extra)


def head_pod(env, name):
    heads = [p for p in env.cli.pods(name)
             if p["metadata"]["labels"].get("jobset.sigs.k8s.io/replicatedjob-name")
             == "pathways-head" and p["status"].get("phase") == "Running"]
    return heads[0]["metadata"]["name"] if heads else None


class Jobs:
    """Jobs a test submits, deleted (straight through the API server) afterwards."""

    def __init__(self, env):
        self.env, self.names = env, []

    def submit(self, proxied, name, *args):
        self.names.append(name)
        waiter = proxied.start(*submit_args(name, *args))
        pod = self.env.wait_for(lambda: head_pod(self.env, name), timeout=120,
                                what=f"the head pod of {name} to run")
        return waiter, pod

    def delete(self):
        remove_jobs(self.env, self.names, timeout=180)


def awaited(env, proxied, name, code, disturb, *args):
    """Submits, lets `disturb` break things while the job runs, ends the head pod with `code`,
    and returns gcluster's exit code, stdout and stderr."""
    jobs = Jobs(env)
    try:
        waiter, pod = jobs.submit(proxied, name, *args)
        disturb()
        env.cli.finish_pod(pod, code)
        rc, out, err = finish(waiter, 180)
        proxied.proxy.clear()
        proxied.assert_clean(out, err)
        return rc, out, err
    finally:
        proxied.proxy.clear()
        jobs.delete()


def verdict(rc, out, err, name, want):
    said = {0: f"Job {name} succeeded." in out, 3: f"job {name} failed" in err}.get(want, False)
    return f"exit {rc}" + (", outcome reported" if rc == want and said else f", wanted {want}")


def test_await_with_connections_cut_every_3s(env, proxied):
    outcomes = []
    for name, code, want in (("fault-await-ok", 0, 0), ("fault-await-bad", 3, 3)):
        def cuts():
            proxied.proxy.cut_every(3)
            time.sleep(20)

        rc, out, err = awaited(env, proxied, name, code, cuts, "5m", "-v")
        outcomes.append(verdict(rc, out, err, name, want) + f" ({proxied.proxy.stats['cuts']} "
                        "cuts so far)")
        assert rc == want, err[-3000:]
    record("await, every connection cut every 3 s while the job runs (succeeds / fails)",
           outcomes)


def test_await_across_a_60s_api_server_outage(env, proxied):
    name = "fault-await-outage"
    rc, out, err = awaited(env, proxied, name, 0, lambda: env.restart_apiserver(down_seconds=60))
    result = verdict(rc, out, err, name, 0)
    record("await, API server down for 60 s while the job runs", [result])
    assert rc == 0, err[-3000:]
    assert "reconnecting in" in err and "reconnected to the API server" in err, err[-3000:]


def test_await_notices_a_silent_watch(env, proxied):
    """The watch's connection stops passing data but stays open: the job's end must still be
    seen, once the stall limit (30 s) has replaced the connection."""
    name = "fault-await-silent"
    silenced = []

    def silence():
        time.sleep(5)
        proxied.proxy.stall_next_data()
        env.wait_for(lambda: proxied.proxy.stats["stalls"] == 1, timeout=60,
                     what="a connection to stall")
        silenced.append(time.monotonic())

    rc, out, err = awaited(env, proxied, name, 0, silence, "5m", "-v")
    took = time.monotonic() - silenced[0]
    result = verdict(rc, out, err, name, 0) + f", {took:.0f} s after the connection went silent"
    record("await, the watch connection goes silent (held open) while the job runs", [result])
    assert rc == 0, err[-3000:]
    assert re.search(r"^watch of \S+/jobsets broke \(no data for 30 s\)", err, re.M), err[-3000:]


def test_await_reaches_its_timeout_through_cuts(env, proxied):
    name = "fault-await-timeout"
    jobs = Jobs(env)
    try:
        waiter, _ = jobs.submit(proxied, name, "30s")
        proxied.proxy.cut_every(3)
        rc, out, err = finish(waiter, 120)
        proxied.assert_clean(out, err)
    finally:
        proxied.proxy.clear()
        jobs.delete()
    said = f"timed out after 30s waiting for job {name}" in err and "keeps running" in err
    result = f"exit {rc}, " + ("the timeout reported" if said else "no timeout message")
    record("await --timeout 30s, every connection cut every 3 s, the job never ends", [result])
    assert rc == 1 and said, err[-3000:]
