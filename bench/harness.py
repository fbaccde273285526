"""Running one command under /usr/bin/time -v and summarising many runs.

Wall time is taken here, around the whole `/usr/bin/time -v CMD` process, with a monotonic clock:
GNU time's own "Elapsed" field has only centisecond resolution, too coarse for a 5 ms command.
The wrapper costs the same for every tool; `harness_overhead()` measures it (`time -v true`) so the
report can state it. Peak RSS is GNU time's "Maximum resident set size" of the command (for a
sequence of commands: the largest of them).
"""

import os
import re
import select
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

TIME = "/usr/bin/time"


class BenchError(Exception):
    """A step of the benchmark failed; the message says which and why."""


@dataclass
class Sample:
    seconds: float
    rss_kib: int
    exit: int | None  # None: stopped by the harness (log following, port-forwards)
    lines: int = 0
    floor_s: float = 0.0  # port-forwards: one small request on a new connection, median


def ensure_gnu_time():
    """GNU time from Debian's `time` package; installed here when missing (we run as root)."""
    if Path(TIME).is_file():
        return
    print("bench: installing Debian package `time` for /usr/bin/time -v", flush=True)
    for argv in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "time"]):
        proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise BenchError(f"{' '.join(argv)} failed (root needed?): {proc.stderr.strip()}")


def _parse_time_report(path):
    text = Path(path).read_text(errors="replace")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    status = re.search(r"Exit status: (\d+)", text)
    if not rss:
        raise BenchError(f"no RSS in /usr/bin/time output:\n{text}")
    return int(rss.group(1)), int(status.group(1)) if status else None


def _command_name(argv):
    return " ".join(str(a) for a in argv[:4])


def wait_with_watchdog(proc, timeout):
    """Blocks in wait() until proc ends, killing it after `timeout` seconds. A blocking wait
    returns as soon as the child exits; subprocess.run(timeout=...) and Popen.wait(timeout=...)
    poll instead, sleeping in steps that double up to 50 ms, which rounds every short time up to
    the next step (`sleep 0.07` measured 118 ms)."""
    fired = threading.Event()

    def kill():
        fired.set()
        proc.kill()

    watchdog = threading.Timer(timeout, kill)
    watchdog.daemon = True
    watchdog.start()
    try:
        proc.wait()
    finally:
        watchdog.cancel()
    return not fired.is_set()


def run_timed(argv, env, cwd=None, check=True, timeout=600):
    """Runs argv to completion with its output discarded; returns its Sample."""
    with tempfile.NamedTemporaryFile(prefix="bench-time-") as report:
        errors = tempfile.TemporaryFile()
        t0 = time.perf_counter()
        proc = subprocess.Popen([TIME, "-v", "-o", report.name, *map(str, argv)], env=env, cwd=cwd,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors)
        finished = wait_with_watchdog(proc, timeout)
        seconds = time.perf_counter() - t0
        if not finished:
            raise BenchError(f"`{_command_name(argv)} ...` did not finish in {timeout}s")
        rss, _ = _parse_time_report(report.name)
    if check and proc.returncode != 0:
        errors.seek(0)
        raise BenchError(f"`{_command_name(argv)} ...` exited {proc.returncode}:\n"
                         f"{errors.read().decode(errors='replace')[-3000:]}")
    errors.close()
    return Sample(seconds, rss, proc.returncode)


def run_sequence(argvs, env):
    """Several commands one after the other, as a user types them: summed time, largest RSS."""
    samples = [run_timed(argv, env) for argv in argvs]
    return Sample(sum(s.seconds for s in samples), max(s.rss_kib for s in samples), 0)


def _stop_child_of(time_pid):
    """SIGTERM to the command GNU time runs (not to time itself, which must still report)."""
    try:
        children = Path(f"/proc/{time_pid}/task/{time_pid}/children").read_text().split()
    except OSError:
        children = []
    for pid in children:
        try:
            os.kill(int(pid), signal.SIGTERM)
        except ProcessLookupError:
            pass


def run_until_lines(argv, env, want_lines, timeout):
    """Runs a following command, counts the lines it prints and stops it once `want_lines` have
    arrived. Returns the Sample with the time at which the last wanted line arrived."""
    with tempfile.NamedTemporaryFile(prefix="bench-time-") as report:
        errors = tempfile.TemporaryFile()
        t0 = time.perf_counter()
        proc = subprocess.Popen([TIME, "-v", "-o", report.name, *map(str, argv)], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors)
        lines, reached = 0, None
        fd = proc.stdout.fileno()
        try:
            while reached is None and time.perf_counter() - t0 < timeout:
                ready, _, _ = select.select([fd], [], [], 1.0)
                if not ready:
                    continue
                chunk = os.read(fd, 1 << 17)
                if not chunk:
                    break  # the command ended by itself
                lines += chunk.count(b"\n")
                if lines >= want_lines:
                    reached = time.perf_counter() - t0
            _stop_child_of(proc.pid)
            while os.read(fd, 1 << 17):  # let it exit instead of blocking on a full pipe
                pass
            wait_with_watchdog(proc, 30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        rss, _ = _parse_time_report(report.name)
    if reached is None:
        errors.seek(0)
        raise BenchError(f"`{_command_name(argv)} ...` printed {lines} of {want_lines} lines "
                         f"before it ended or {timeout}s passed (exit {proc.returncode}):\n"
                         f"{errors.read().decode(errors='replace')[-3000:]}")
    errors.close()
    return Sample(reached, rss, None, lines)


def run_serving(argv, env, ready, work, timeout):
    """Runs a command that serves until it is stopped (a port-forward), waits until `ready()` is
    true, then calls `work()` (what is measured: it returns the Sample's seconds and anything
    else for it as a dict), stops the command with SIGTERM and waits for it. The RSS is the
    command's peak over its whole run."""
    with tempfile.NamedTemporaryFile(prefix="bench-time-") as report:
        errors = tempfile.TemporaryFile()
        proc = subprocess.Popen([TIME, "-v", "-o", report.name, *map(str, argv)], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors)
        try:
            deadline = time.monotonic() + timeout
            while not ready():
                if proc.poll() is not None or time.monotonic() > deadline:
                    errors.seek(0)
                    raise BenchError(f"`{_command_name(argv)} ...` was not ready within "
                                     f"{timeout}s (exit {proc.returncode}):\n"
                                     f"{errors.read().decode(errors='replace')[-3000:]}")
                time.sleep(0.2)
            seconds, extra = work()
            _stop_child_of(proc.pid)
            wait_with_watchdog(proc, 30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        rss, _ = _parse_time_report(report.name)
    errors.close()
    sample = Sample(seconds, rss, None)
    for key, value in extra.items():
        setattr(sample, key, value)
    return sample


def harness_overhead(env, runs=11):
    """Median wall time of `/usr/bin/time -v true`: what the wrapper adds to every number."""
    return statistics.median(run_timed(["true"], env).seconds for _ in range(runs))


# A pause before every measured run: a run right after a heavy one (xpk's Python exiting with
# 100 MiB mapped) otherwise pays for the kernel's clean-up on this 2-core machine.
SETTLE_SECONDS = 0.5


def alternate(tools, iterations, warmup, run_one):
    """Runs run_one(tool, i) for each tool, `warmup` unrecorded rounds first, then `iterations`
    recorded ones; the order of the tools flips every round so neither always goes first."""
    samples = {t: [] for t in tools}
    for i in range(warmup + iterations):
        order = tools if i % 2 == 0 else list(reversed(tools))
        for tool in order:
            time.sleep(SETTLE_SECONDS)
            sample = run_one(tool, i)
            if i >= warmup:
                samples[tool].append(sample)
    return samples


def summary(samples):
    secs = [s.seconds for s in samples]
    rss = [s.rss_kib for s in samples]
    return {"median_s": statistics.median(secs), "min_s": min(secs), "max_s": max(secs),
            "median_rss_kib": statistics.median(rss), "max_rss_kib": max(rss),
            "runs": [asdict(s) for s in samples]}


# Request lines of `gcluster -v` ("GET https://... -> 200 OK (12 ms, HTTP/2)") and of
# `kubectl -v=6` ("GET https://... 200 OK in 12 milliseconds").
REQUEST_TIME = {
    "gcluster": re.compile(r"^(?:GET|POST|PUT|PATCH|DELETE) https://\S+ -> .*\((\d+) ms"),
    "kubectl": re.compile(r"\] (?:GET|POST|PUT|PATCH|DELETE) https://\S+ \d{3}\b.* in (\d+) "
                          r"milliseconds"),
}


def covered_seconds(intervals):
    """How long at least one of the (start, end) intervals was running: requests sent together
    count once."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def api_time(tool, argvs, env):
    """Where the time goes, split coarsely: one extra (unrecorded) run of each command with
    request tracing on, measuring the time during which at least one API request was in flight
    (server, network, TLS). A request's interval ends when its trace line arrives and starts its
    traced duration earlier, so requests sent together are not counted twice."""
    requests, seconds = 0, 0.0
    for argv in argvs:
        flag = "-v" if tool == "gcluster" else "-v=6"
        intervals = []
        with subprocess.Popen([*map(str, argv), flag], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) as proc:
            watchdog = threading.Timer(600, proc.kill)
            watchdog.start()
            for line in proc.stderr:
                if m := REQUEST_TIME[tool].search(line):
                    end = time.monotonic()
                    intervals.append((end - int(m.group(1)) / 1000, end))
            watchdog.cancel()
            wait_with_watchdog(proc, 60)
        requests += len(intervals)
        seconds += covered_seconds(intervals)
    return {"requests": requests, "seconds": seconds}
