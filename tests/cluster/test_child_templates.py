"""A Job template the API server rejects is refused at submit, before anything is created.

The API server validates only a JobSet's own schema when the JobSet is created; its Job and pod
templates are validated when the JobSet controller creates each Job, after submit has returned.
`job submit` therefore has the API server dry-run the Jobs the controller will create. Here a
Cloud Storage mount whose directory climbs out with ".." becomes a volume mount's subPath that
the JobSet's schema accepts and only Job validation rejects. (A host path with ".." is refused
offline since the fourth hostile sweep; the bucket directory is not yet, which is what lets this
test reach the server: when it is, this test needs another trigger.) Both
`job submit` and `--dry-run=server` must refuse it with exit 2, the server's reason and the
flag that caused it, and leave nothing behind.
"""

import re

import pytest

from gcluster_cli import submit_pathways

BAD_MOUNT = "gs://bucket/../etc:/data"
SERVER_REASON = "subPath: Invalid value: \"../etc\": must not contain '..'"


def assert_nothing_created(cli, name):
    assert cli.kubectl("get", "jobset", name, check=False).returncode != 0
    jobs = cli.kubectl_json("get", "jobs", "-l", f"jobset.sigs.k8s.io/jobset-name={name}")
    assert jobs["items"] == []


@pytest.mark.parametrize("mode", [[], ["--dry-run", "server"]], ids=["submit", "dry-run=server"])
def test_rejected_job_template_is_refused_before_creating(cli, mode):
    name = "pw-badmount"
    proc = submit_pathways(cli, name, "--mount", BAD_MOUNT, "-v", *mode, slices="1", check=2)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("gcluster: error:")]
    assert len(errors) == 1, proc.stderr
    error = errors[0]
    assert "the JobSet controller could not create the Job of the head" in error
    assert "nothing was created" in error
    assert f'Job.batch "{name}-pathways-head-0" is invalid' in error
    assert SERVER_REASON in error
    assert error.endswith("(set by --mount)")
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
