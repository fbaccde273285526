"""`job logs` through a network that breaks: connections cut after some bytes or every few
seconds, a stream that stalls mid-answer, API server restarts, with and without -f. The container
logs numbered lines (fake-logs/numbered.log, several to a time stamp), and every run must print
every line exactly once and in order, or end with exit code 4 naming what may be missing.
"""

import re
import time

from faults import check_lines, finish, logs_args, record, wait_for_first_line

LINES = 55000  # ~2.7 MB of log, as in the measurement


def outcome(rc, out, err, expected):
    """How a run went: its exit code, whether every line came once, and how often the streams
    were resumed (from the -v trace and the notices)."""
    problem = check_lines(out, expected)
    what = "every line once" if not problem else problem
    resumed = len(re.findall(r"^log stream \S+ broke \(", err, re.M))
    return f"exit {rc}, {what}, {resumed} resumes"


def test_logs_cut_after_some_bytes(proxied, numbered_job):
    _, log = numbered_job("fault-cut-bytes")
    log.append(LINES, at_ns=time.time_ns() - 120 * 10**9)
    outcomes = []
    for cut in (250_000, 900_000, 2_000_000):
        proxied.proxy.clear()
        proxied.proxy.stats["cuts"] = 0
        proxied.proxy.cut_after(cut)
        proc = proxied.run(*logs_args("fault-cut-bytes", "-v"))
        proxied.assert_clean(proc.stdout, proc.stderr)
        outcomes.append(outcome(proc.returncode, proc.stdout, proc.stderr, LINES))
    record(f"logs, {LINES} lines, every connection cut after 250 kB / 900 kB / 2 MB", outcomes)
    assert all(o.startswith("exit 0, every line once") for o in outcomes), outcomes


def test_logs_cut_every_second(proxied, numbered_job):
    _, log = numbered_job("fault-cut-every")
    log.append(LINES, at_ns=time.time_ns() - 120 * 10**9)
    proxied.proxy.throttle(400_000)  # the stream then lasts ~7 s: several cuts
    proxied.proxy.cut_every(1)
    proc = proxied.run(*logs_args("fault-cut-every", "-v"))
    proxied.proxy.clear()
    proxied.assert_clean(proc.stdout, proc.stderr)
    result = outcome(proc.returncode, proc.stdout, proc.stderr, LINES)
    record(f"logs, {LINES} lines at 400 kB/s, every connection cut every 1 s", [result])
    assert result.startswith("exit 0, every line once"), proc.stderr[-3000:]


def test_logs_across_an_api_server_restart(env, proxied, numbered_job):
    # More than the loopback buffers between kwok, the API server and the proxy hold (~10 MB),
    # or the whole answer would already be on its way when the API server dies.
    lines = 300_000
    _, log = numbered_job("fault-restart")
    log.append(lines, at_ns=time.time_ns() - 600 * 10**9)
    proxied.proxy.throttle(1_000_000)  # ~16 s of stream; the restart comes early in it
    reader = proxied.start(*logs_args("fault-restart", "-v"))
    time.sleep(3)
    # Killed: stopped gracefully, the API server would let the answer finish first.
    env.restart_apiserver(down_seconds=2, kill=True)
    rc, out, err = finish(reader, 240)
    proxied.assert_clean(out, err)
    result = outcome(rc, out, err, lines)
    record(f"logs, {lines} lines at 1 MB/s, API server killed mid-stream and restarted",
           [result])
    assert result.startswith("exit 0, every line once"), err[-3000:]
    assert "0 resumes" not in result, err[-3000:]


def test_stalled_stream_is_resumed(proxied, numbered_job):
    _, log = numbered_job("fault-stall")
    log.append(LINES, at_ns=time.time_ns() - 120 * 10**9)
    proxied.proxy.stall_after(1_000_000, count=1)
    started = time.monotonic()
    reader = proxied.start(*logs_args("fault-stall", "-v"))
    rc, out, err = finish(reader, 120)  # the bound: the stall limit is 20 s
    took = time.monotonic() - started
    proxied.assert_clean(out, err)
    result = outcome(rc, out, err, LINES) + f", done after {took:.0f} s"
    record(f"logs, {LINES} lines, the stream stalls (held open) after 1 MB", [result])
    assert proxied.proxy.stats["stalls"] == 1
    assert result.startswith("exit 0, every line once"), err[-3000:]
    assert re.search(r"log stream \S+/numbered-log broke \(no data for 20 s\)", err), err[-3000:]


def follow(env, proxied, job, disturb):
    """logs -f while lines are written; `disturb` breaks things meanwhile; then the pod ends.
    Returns the exit code, the output, and how many lines were written."""
    pod, log = job
    log.start_writing(60)
    reader = proxied.start(*logs_args(log.name, "-f", "-v"))
    wait_for_first_line(reader, 60)  # the stream is open: the fault hits it, not the setup
    disturb()
    time.sleep(3)
    log.stop_writing()
    time.sleep(3)  # let the last lines through before the pod ends
    env.cli.finish_pod(pod, 0)
    rc, out, err = finish(reader, 120)
    proxied.assert_clean(out, err)
    return rc, out, err, log.count


def test_follow_across_an_api_server_restart(env, proxied, numbered_job):
    job = numbered_job("fault-follow-restart")
    rc, out, err, count = follow(env, proxied, job, lambda: env.restart_apiserver(down_seconds=3))
    result = outcome(rc, out, err, count)
    record("logs -f, 60 lines/s, API server down for 3 s", [f"{result}, {count} lines written"])
    assert result.startswith("exit 0, every line once"), err[-3000:]
    assert "reconnect" in err, err[-3000:]


def test_follow_with_connections_cut_every_3s(env, proxied, numbered_job):
    job = numbered_job("fault-follow-cuts")

    def cuts():
        proxied.proxy.cut_every(3)
        time.sleep(15)
        proxied.proxy.clear()

    rc, out, err, count = follow(env, proxied, job, cuts)
    result = outcome(rc, out, err, count)
    record("logs -f, 60 lines/s, every connection cut every 3 s for 15 s",
           [f"{result}, {count} lines written"])
    assert result.startswith("exit 0, every line once"), err[-3000:]


def test_unresumable_stream_says_what_is_missing(env, proxied, numbered_job):
    """The pod is deleted while the stream is down: the lines after the last one printed are
    gone, and the exit status and the message say so."""
    pod, log = numbered_job("fault-gone")
    log.append(LINES, at_ns=time.time_ns() - 120 * 10**9)
    proxied.proxy.throttle(200_000)
    reader = proxied.start(*logs_args("fault-gone"))
    time.sleep(3)
    proxied.proxy.refuse_for(15)
    proxied.proxy.cut_all()
    env.cli.kubectl("delete", "pod", pod, "--grace-period=0", "--force", "--wait=true")
    rc, out, err = finish(reader, 180)
    proxied.assert_clean(out, err)
    printed = check_lines(out, len(re.findall(r"^line \d{6}", out, re.M)))
    named = f"{pod}/numbered-log" in err and re.search(r"lines after \S+Z may be missing", err)
    result = (f"exit {rc}, {'a clean prefix of lines' if not printed else printed}, "
              f"{'the message names pod, container and time' if named else 'message unclear'}")
    record("logs, the pod deleted while the stream is cut and refused", [result])
    assert rc == 4 and not printed and named, err[-3000:]
    assert "the logs of job fault-gone are incomplete" in err
