"""`--mount filestore://INSTANCE/SHARE` with an instance name, as Google's gcluster takes it: a fake
gcloud (first on $PATH) lists the configured project's Filestore instances, and the JobSet created on the
local cluster mounts the share over NFS at the instance's IP address. An instance that is not
there stops the submit with exit 2 naming --mount, before anything is sent to the cluster.
"""

import os
import re
import stat
import textwrap

from gcluster_cli import CLUSTER, IMAGE

FAKE_GCLOUD = textwrap.dedent("""\
    #!/bin/sh
    echo "$*" >> "$(dirname "$0")/calls"
    if [ "$*" = "filestore instances list --format=json" ]; then
      echo '[{"name": "projects/my-project/locations/us-east5-a/instances/team-nfs",
              "state": "READY", "networks": [{"ipAddresses": ["10.0.5.2"]}],
              "fileShares": [{"name": "share", "capacityGb": "1024"}]}]'
      exit 0
    fi
    echo "ERROR: (gcloud) unexpected: $*" >&2; exit 1
    """)


def fake_gcloud(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gcloud = bin_dir / "gcloud"
    gcloud.write_text(FAKE_GCLOUD)
    gcloud.chmod(gcloud.stat().st_mode | stat.S_IXUSR)
    return bin_dir, {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def submit(cli, name, mount, env, *extra, check=0):
    cli.submitted.append(name)
    return cli.gcluster("job", "submit", "--name", name, *CLUSTER, "--compute-type", "v6e-16", "--image", IMAGE, "--command",
                        "python train.py", "--mount", mount, *extra, env=env, check=check)


def test_an_instance_name_mounts_its_ip(testenv, cli, tmp_path):
    bin_dir, env = fake_gcloud(tmp_path)
    # The manifest a dry run writes already carries the address...
    shown = submit(cli, "fs-1", "filestore://team-nfs/share;/data;rw", env, "--dry-run-out", "-")
    assert "nfs:\n" in shown.stdout and 'server: "10.0.5.2"\n' in shown.stdout, shown.stdout
    # ...and so does the JobSet created on the cluster.
    proc = submit(cli, "fs-1", "filestore://team-nfs/share;/data;rw", env)
    assert ('--mount filestore://team-nfs/share: the Filestore instance "team-nfs" (us-east5-a) '
            'is at 10.0.5.2') in proc.stderr, proc.stderr
    jobset = testenv.kubectl_json("get", "jobset", "fs-1")
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    nfs = [v["nfs"] for v in pod["volumes"] if "nfs" in v]
    assert len(nfs) == 1, pod["volumes"]
    assert (nfs[0]["server"], nfs[0]["path"], nfs[0].get("readOnly", False)) == \
        ("10.0.5.2", "/share", False)
    mounts = [m for c in pod["containers"] for m in c.get("volumeMounts", [])
              if m["mountPath"] == "/data"]
    assert mounts, pod["containers"]
    calls = (bin_dir / "calls").read_text().splitlines()
    # gcloud's configured project (--project here would also choose the cluster's context).
    assert calls == ["filestore instances list --format=json"] * 2
    cli.gcluster("job", "cancel", "fs-1", *CLUSTER, check=0)


def test_an_unknown_instance_is_refused_before_anything_is_sent(testenv, cli, tmp_path):
    _, env = fake_gcloud(tmp_path)
    proc = submit(cli, "fs-2", "filestore://other-nfs/share;/data", env, "-v", check=2)
    assert ('gcluster: error: --mount filestore://other-nfs/share: no Filestore instance named '
            '"other-nfs" in gcloud\'s configured project') in proc.stderr, proc.stderr
    assert not re.search(r"^(GET|POST|PUT|PATCH|DELETE) https://", proc.stderr, re.M), proc.stderr
    assert testenv.kubectl("get", "jobset", "fs-2", check=False).returncode != 0
