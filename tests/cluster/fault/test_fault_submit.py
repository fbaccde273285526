"""`job submit` whose create answer is lost, and many submits and cancels at once.

The fault proxy loses the answer to the POST (the one request with a large body) at a sweep of
byte offsets, from "the connection dies right after the request went up" to "the whole answer
came through": the server has the request every time, the client never sees (all of) the answer.
Every try must end with exactly one JobSet, carrying a submission id, and gcluster saying it was
created (exit 0). A try that says "already exists", exits non-zero while the job exists, or leaves
no JobSet behind is a misreport; there must be none.
"""

import concurrent.futures
import re

from faults import record
from gcluster_cli import CLUSTER, GCS, IMAGE

SUBMISSION_ID = "gcluster.google.com/submission-id"
# Requests with a body: the server-side dry runs of the JobSet's Jobs, then the create; lookups
# are a few hundred bytes, a client certificate about one kB. The create is told from the dry
# runs by its size (the proxy sees only TLS): the last such request of a submit, give or take
# what the job's name changes. Dry runs sent together may arrive as one chunk, of their sum.
BODY_SIZE = 2000
WINDOW = 100
TRIES = 56


def submit_args(name, *extra):
    return ("job", "submit", "--name", name, *CLUSTER, "--compute-type", "v6e-16", "--pathways",
            "--pathways-gcs-location", GCS, "--command", "true", "--image", IMAGE, *extra)


def delete_jobs(env, names):
    env.cli.kubectl("delete", "jobset", *names, "--ignore-not-found", "--wait=false",
                    check=False)


def jobsets(env, name):
    items = env.cli.kubectl_json("get", "jobsets")["items"]
    return [j for j in items if j["metadata"]["name"] == name]


def judge(env, proxied, name, proc):
    """How one try went: "ok: ..." or "MISREPORT: ..."."""
    found = jobsets(env, name)
    out, err = proc.stdout, proc.stderr
    proxied.assert_clean(out, err)
    errors = [line for line in err.splitlines() if line.startswith("gcluster: error:")]
    if proc.returncode != 0 or errors:
        return f"MISREPORT: exit {proc.returncode}, {len(found)} JobSets: {err.strip()[-300:]}"
    if len(found) != 1:
        return f"MISREPORT: exit 0 but {len(found)} JobSets"
    if not found[0]["metadata"].get("annotations", {}).get(SUBMISSION_ID):
        return "MISREPORT: the JobSet has no submission id"
    if f"Created Pathways job {name} in namespace default" not in out:
        return f"MISREPORT: exit 0 without saying it was created: {out[:200]}"
    if "libcurl sent the request again" in err and "submission id: it was created" in err:
        return ("ok: created, answer lost, libcurl re-sent the POST and its 409 was judged ours "
                "by the submission id")
    posts = len(re.findall(r"^POST https://\S+/jobsets[?\s]", err, re.M))  # not dry runs
    if "was lost" in err and "submission id: it was created" in err:
        return f"ok: created, answer lost, found by its submission id ({posts} POST)"
    if proxied.proxy.stats["lost answers"]:
        # The cut fell after the create's answer (on the reads that follow it), or libcurl's
        # own resend of a first copy the server never read was answered 201.
        return f"ok: created, no lookup needed ({posts} POST)"
    return "ok: created, the whole answer arrived"


def test_lost_create_answers_are_never_misreported(env, proxied):
    names = []
    try:
        # Measure the requests with a body, the create last and largest, and the answers.
        names.append("fault-create-measure")
        proxied.proxy.lose_answer(BODY_SIZE, None, count=None)
        proc = proxied.run(*submit_args("fault-create-measure"))
        assert proc.returncode == 0, proc.stderr
        sizes = proxied.proxy.big_requests
        create = sizes[-1]
        assert not [n for n in sizes[:-1] if abs(n - create) <= WINDOW], f"request sizes {sizes}"
        size = proxied.proxy.answer_bytes
        assert size > 500, f"the create's answer is {size} bytes"
        env.cli.delete_job("fault-create-measure")

        # Cut points: right after the request (5 times: libcurl's own resend of a request on a
        # connection that died happens there), then every point up to past the answer's end.
        points = [0] * 5 + [round(i * (size + 200) / (TRIES - 6)) for i in range(1, TRIES - 4)]
        outcomes = []
        for i, n in enumerate(points):
            name = f"fault-create-{i}"
            names.append(name)
            proxied.proxy.clear()
            proxied.proxy.stats["lost answers"] = 0
            proxied.proxy.lose_answer(create - WINDOW, n, count=1, upto=create + WINDOW)
            proc = proxied.run(*submit_args(name, "-v"))
            outcomes.append(judge(env, proxied, name, proc))
            env.cli.delete_job(name)
        record(f"submit, the create's answer ({size} B) lost at a sweep of points from byte 0",
               outcomes)
        bad = [o for o in outcomes if not o.startswith("ok")]
        assert not bad, "\n".join(bad)
        assert len(outcomes) >= 50
        assert any("found by its submission id" in o for o in outcomes), outcomes
    finally:
        proxied.proxy.clear()
        delete_jobs(env, names)


def test_200_concurrent_submits_and_cancels(env, proxied):
    """200 submits at once: exactly 200 JobSets, each reported created; 200 cancels at once:
    nothing of them left."""
    names = [f"fault-many-{i:03d}" for i in range(200)]

    def left():
        sets = [j["metadata"]["name"] for j in env.cli.kubectl_json("get", "jobsets")["items"]
                if j["metadata"]["name"].startswith("fault-many-")]
        pods = [p for p in env.cli.kubectl_json("get", "pods")["items"]
                if p["metadata"]["name"].startswith("fault-many-")]
        return sets, pods

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=200) as pool:
            submits = list(pool.map(lambda n: proxied.run(*submit_args(n), timeout=300), names))
        sets, _ = left()
        assert sorted(sets) == names, f"{len(sets)} JobSets"
        with concurrent.futures.ThreadPoolExecutor(max_workers=200) as pool:
            cancels = list(pool.map(
                lambda n: proxied.run("job", "cancel", n, *CLUSTER, timeout=300), names))
        env.wait_for(lambda: left() == ([], []), timeout=300, what="the 200 jobs to be gone")
        outcomes = []
        for s, c in zip(submits, cancels):
            proxied.assert_clean(s.stdout, s.stderr, c.stdout, c.stderr)
            created = s.returncode == 0 and "Created Pathways job" in s.stdout
            outcomes.append(f"{'created' if created else 'SUBMIT FAILED'}, "
                            f"{'cancelled' if c.returncode == 0 else 'CANCEL FAILED'}, "
                            "one JobSet, then nothing left")
        record("200 concurrent submits, then 200 concurrent cancels", outcomes)
        bad = [s.stderr for s in submits if s.returncode] + [c.stderr for c in cancels
                                                             if c.returncode]
        assert not bad, bad[:3]
    finally:
        delete_jobs(env, names)
