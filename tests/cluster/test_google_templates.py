"""Google's `job gke-template-extract` and `job submit --gke-custom-templates-path`, with our
overlays: a template extracted, edited (one label added) and passed back yields a job carrying
that label on the local cluster, through the same checks and dry runs as any submit; the
JobSet-less fallback takes its own overlay; an overlay the API server rejects is stopped by the
dry run before anything exists.
"""

from gcluster_cli import CLUSTER, IMAGE

NO_JOBSET = {"GCLUSTER_DISABLE_JOBSET": "1"}
NO_CHANGE = "metadata:\n  labels: {}\n"


def extract(cli, tmp_path):
    out = tmp_path / "gke-templates"
    proc = cli.gcluster("job", "gke-template-extract", "--output-dir", str(out), check=0)
    assert f"Wrote {out}/jobset.yaml" in proc.stdout, proc.stdout
    return out


def edit(path, overlay):
    """Replaces the overlay that changes nothing at the end of an extracted file."""
    text = path.read_text()
    assert text.endswith(NO_CHANGE), text[-200:]
    path.write_text(text[:-len(NO_CHANGE)] + overlay)


def submit(cli, name, templates, *extra, env=None, check=0):
    cli.submitted.append(name)
    return cli.gcluster("job", "submit", "--name", name, *CLUSTER, "--compute-type", "v6e-16",
                        "--image", IMAGE, "--command", "python train.py",
                        "--gke-custom-templates-path", str(templates), *extra, env=env,
                        check=check)


def test_an_extracted_template_edited_with_one_label_reaches_the_job(testenv, cli, tmp_path):
    templates = extract(cli, tmp_path)
    edit(templates / "jobset.yaml", "metadata:\n  labels:\n    team: research\n")
    submit(cli, "tpl-a", templates)
    jobset = testenv.kubectl_json("get", "jobset", "tpl-a")
    labels = jobset["metadata"]["labels"]
    assert labels["team"] == "research"
    # What gcluster owns is as it would be without the overlay.
    assert labels["kueue.x-k8s.io/queue-name"] == "user-queue"
    assert labels["gcluster.google.com/workload"] == "tpl-a"
    listed = cli.gcluster("job", "list", *CLUSTER, check=0).stdout
    assert "tpl-a" in listed, listed


def test_the_indexed_job_fallback_takes_its_own_overlay(testenv, cli, tmp_path):
    templates = extract(cli, tmp_path)
    edit(templates / "indexed_job.yaml", "metadata:\n  labels:\n    team: research\n")
    edit(templates / "indexed_job_service.yaml",
         "metadata:\n  annotations:\n    owner: ml-platform\n")
    submit(cli, "tpl-b", templates, env=NO_JOBSET)
    job = testenv.kubectl_json("get", "job", "tpl-b")
    assert job["metadata"]["labels"]["team"] == "research"
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
    service = testenv.kubectl_json("get", "service", "tpl-b")
    assert service["metadata"]["annotations"]["owner"] == "ml-platform"
    cli.gcluster("job", "cancel", "tpl-b", *CLUSTER, env=NO_JOBSET, check=0)


def test_an_overlay_the_api_server_rejects_is_stopped_before_the_create(testenv, cli, tmp_path):
    templates = extract(cli, tmp_path)
    edit(templates / "jobset.yaml", "spec:\n  ttlSecondsAfterFinished: -5\n")
    proc = submit(cli, "tpl-c", templates, check=1)
    assert "ttlSecondsAfterFinished" in proc.stderr, proc.stderr
    assert testenv.kubectl("get", "jobset", "tpl-c", check=False).returncode != 0
