"""Shell completion of job names against the local control plane: bash, with the script of
`gcluster completion bash`, completes NAME arguments with the jobs of the cluster and namespace
the command line selects.
"""

import subprocess

import pytest

from gcluster_cli import GCLUSTER, REPO, Cli

JOBSET = """
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata:
  name: {name}
spec:
  suspend: true
  replicatedJobs:
  - name: main
    replicas: 1
    template:
      spec:
        template:
          spec:
            restartPolicy: Never
            containers:
            - name: main
              image: busybox
"""
NAMES = ["complete-me-1", "complete-me-2"]


@pytest.fixture
def cli(testenv, tmp_path):
    """Two suspended JobSets (no pods), deleted afterwards."""
    cli = Cli(testenv.kubeconfig, tmp_path)
    for name in NAMES:
        subprocess.run(["kubectl", "apply", "-f", "-"], input=JOBSET.format(name=name),
                       check=True, capture_output=True, text=True, timeout=60, env=cli.env())
    yield cli
    for name in NAMES:
        cli.delete_job(name)


def bash_complete(cli, tmp_path, line):
    script = tmp_path / "gcluster.bash"
    script.write_text(cli.gcluster("completion", "bash", check=0).stdout)
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    if not (bindir / "gcluster").exists():
        (bindir / "gcluster").symlink_to(GCLUSTER.resolve())
    env = cli.env({"PATH": f"{bindir}:{cli.env()['PATH']}"})
    proc = subprocess.run(["bash", "--norc", "--noprofile",
                           str(REPO / "tests" / "completion" / "bash_complete.sh"), str(script),
                           line], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return sorted(proc.stdout.split())


def test_job_names_complete_from_the_cluster(cli, tmp_path):
    assert bash_complete(cli, tmp_path, "gcluster job inspect complete-") == NAMES
    assert bash_complete(cli, tmp_path, "gcluster job logs --name complete-me-") == NAMES
    # A name already on the line is not offered again.
    assert bash_complete(cli, tmp_path, "gcluster job wait complete-me-1 complete-") == \
        ["complete-me-2"]
    # The namespace on the line is the one asked: none there.
    assert bash_complete(cli, tmp_path, "gcluster job cancel --namespace kube-system complete-") \
        == []
    # Flags still complete from the tables.
    assert bash_complete(cli, tmp_path, "gcluster job inspect complete-me-1 --format ") == \
        ["json", "text", "yaml"]
