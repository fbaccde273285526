"""The seed's own line, as Cluster Toolkit's job guide gives it: "Inspect the JobSet status and
generated manifest by using the gcluster job inspect command: ./gcluster job inspect --name
JOB_NAME --cluster CLUSTER_NAME --location LOCATION --show". With a job name, Google's report
carries the JobSet's spec, so ours prints the status and the stored manifest.
"""

import yaml

from gcluster_cli import submit_pathways


def test_inspect_name_show_prints_status_and_manifest(testenv, cli):
    submit_pathways(cli, "seed-show", compute="v6e-16", slices="1")
    out = cli.gcluster("job", "inspect", "--name", "seed-show", "--cluster", "local",
                       "--location", "us-east5", "--show", check=0).stdout
    # The status, as the report gives it (comment lines, so the whole output is YAML).
    lines = out.splitlines()
    assert lines[0].split() == ["#", "Name:", "seed-show"], out
    assert lines[2].startswith("# Status:") and lines[2].split()[2] in (
        "Queued", "Admitted", "Running"), out
    # The generated manifest: the JobSet as YAML after the report, status lines as comments.
    docs = [d for d in yaml.safe_load_all(out) if isinstance(d, dict)]
    jobsets = [d for d in docs if d.get("kind") == "JobSet"]
    assert len(jobsets) == 1, out
    assert jobsets[0]["metadata"]["name"] == "seed-show"
    assert jobsets[0]["apiVersion"] == "jobset.x-k8s.io/v1alpha2"
    names = [rj["name"] for rj in jobsets[0]["spec"]["replicatedJobs"]]
    assert names == ["pathways-head", "worker"], names
    # Without --show the report stands alone, as before.
    plain = cli.gcluster("job", "inspect", "--name", "seed-show", "--cluster", "local",
                         "--location", "us-east5", check=0).stdout
    assert "apiVersion: jobset.x-k8s.io/v1alpha2" not in plain
