"""A Job template the API server rejects is refused at submit, before anything is created.

The API server validates only a JobSet's own schema when the JobSet is created; its Job and pod
templates are validated when the JobSet controller creates each Job, after submit has returned.
`job submit` therefore has the API server dry-run the Jobs the controller will create. Every
flag's value that would end up in a Job the server refuses is refused offline now (a '..' in a
host path, a Cloud Storage directory or a Filestore share: exit 2 naming --mount), so the
trigger here is what only the server judges: an overlay (--gke-custom-templates-path) whose head
pod template mounts a volume with subPath "../etc", which the JobSet's schema accepts and only
Job validation rejects. Both `job submit` and `--dry-run=server` must refuse it with exit 2 and
the server's reason, and leave nothing behind; the same '..' given to --mount never reaches the
server.
"""

import json
import re

import pytest

from gcluster_cli import submit_pathways

SERVER_REASON = "subPath: Invalid value: \"../etc\": must not contain '..'"


def bad_overlay(cli, tmp_path, name):
    """An overlay directory whose Pathways JobSet mounts the node's /tmp into the head's
    workload container a second time, at subPath "../etc" (lists are replaced whole by a merge
    patch, so it carries the job's own replicatedJobs with that one mount added)."""
    rendered = submit_pathways(cli, name, "--dry-run-out", "-", "--output", "json", slices="1")
    jobs = json.loads(rendered.stdout)["spec"]["replicatedJobs"]
    head = next(j for j in jobs if j["name"] == "pathways-head")
    pod = head["template"]["spec"]["template"]["spec"]
    workload = next(c for c in pod["containers"] if c["name"] == "workload-container")
    workload["volumeMounts"].append({"name": "shared-tmp", "mountPath": "/host-etc",
                                     "subPath": "../etc"})
    templates = tmp_path / "templates"
    templates.mkdir()
    # JSON is YAML: the overlay file is the patch itself.
    (templates / "pathways_jobset.yaml").write_text(
        json.dumps({"spec": {"replicatedJobs": jobs}}))
    return templates


def assert_nothing_created(cli, name):
    assert cli.kubectl("get", "jobset", name, check=False).returncode != 0
    jobs = cli.kubectl_json("get", "jobs", "-l", f"jobset.sigs.k8s.io/jobset-name={name}")
    assert jobs["items"] == []


@pytest.mark.parametrize("mode", [[], ["--dry-run", "server"]], ids=["submit", "dry-run=server"])
def test_rejected_job_template_is_refused_before_creating(cli, tmp_path, mode):
    name = "pw-badmount"
    templates = bad_overlay(cli, tmp_path, name)
    proc = submit_pathways(cli, name, "--gke-custom-templates-path", str(templates), "-v", *mode,
                           slices="1", check=2)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("gcluster: error:")]
    assert len(errors) == 1, proc.stderr
    error = errors[0]
    assert "the JobSet controller could not create the Job of the head" in error
    assert "nothing was created" in error
    assert f'Job.batch "{name}-pathways-head-0" is invalid' in error
    assert SERVER_REASON in error
    # No flag set that field: the overlay did.
    assert "(set by --mount)" not in error
    # Everything sent after the reads was a dry run: the two Jobs' (and with --dry-run=server
    # the JobSet's, in the same round trip).
    posts = re.findall(r"^POST (https://\S+)", proc.stderr, re.M)
    assert posts and all("dryRun=All" in p for p in posts), proc.stderr
    assert sum("/apis/batch/v1/namespaces/default/jobs?" in p for p in posts) == 2
    assert len(posts) == 2 + bool(mode)
    assert_nothing_created(cli, name)


def test_the_same_job_without_the_bad_mount_is_created(cli):
    """The control: the mount's destination and the rest of the job are fine."""
    proc = submit_pathways(cli, "pw-goodmount", "--mount", "/data:/data", slices="1")
    assert "Created Pathways job pw-goodmount" in proc.stdout
    assert cli.kubectl("get", "jobset", "pw-goodmount", check=False).returncode == 0


def test_the_same_subpath_given_to_mount_is_refused_offline(cli):
    """A Cloud Storage directory is the mount's subPath: its '..' is refused before anything is
    sent, with the flag named."""
    proc = submit_pathways(cli, "pw-dotdot", "--mount", "gs://bucket/../etc:/data", "-v",
                           slices="1", check=2)
    assert '--mount "gs://bucket/../etc:/data": a Cloud Storage directory may not contain ".."' \
        in proc.stderr
    assert not re.search(r"^(GET|POST) https://", proc.stderr, re.M), proc.stderr
    assert cli.kubectl("get", "jobset", "pw-dotdot", check=False).returncode != 0
