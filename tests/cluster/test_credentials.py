"""Credentials against the real API server: bearer tokens and exec plugins (GKE's way), failing
and rejected plugins, a wrong CA, and that no credential ever reaches the -v trace.
"""

import base64
import stat
import textwrap

import pytest
import yaml

from gcluster_cli import CLUSTER, GCS, Cli

CONTEXT = "gke_gcluster-testenv_us-east5_local"


@pytest.fixture(scope="module")
def service_account_token(testenv):
    """A real bearer token: a ServiceAccount allowed to do what gcluster does."""
    testenv.kubectl("create", "serviceaccount", "gcluster-tester", check=False)
    testenv.kubectl("create", "clusterrolebinding", "gcluster-tester", "--clusterrole=cluster-admin",
                    "--serviceaccount=default:gcluster-tester", check=False)
    token = testenv.kubectl("create", "token", "gcluster-tester", "--duration=1h").stdout.strip()
    assert token.count(".") == 2  # a JWT
    yield token
    testenv.kubectl("delete", "clusterrolebinding", "gcluster-tester", check=False)
    testenv.kubectl("delete", "serviceaccount", "gcluster-tester", check=False)


def kubeconfig_with_user(testenv, user, path, ca_data=None):
    """The testenv kubeconfig with its user replaced (and optionally its CA)."""
    config = yaml.safe_load(testenv.kubeconfig.read_text())
    for entry in config["users"]:
        entry["user"] = user
    if ca_data:
        for entry in config["clusters"]:
            entry["cluster"]["certificate-authority-data"] = ca_data
    path.write_text(yaml.safe_dump(config))
    return path


def plugin(tmp_path, body):
    script = tmp_path / "fake-auth-plugin"
    script.write_text("#!/usr/bin/env bash\n" + textwrap.dedent(body))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def exec_user(command, api="client.authentication.k8s.io/v1beta1"):
    return {"exec": {"apiVersion": api, "command": command, "interactiveMode": "Never",
                     "provideClusterInfo": True,
                     "installHint": "install fake-auth-plugin from the test"}}


def test_token_works_and_never_appears_in_traces(testenv, tmp_path, service_account_token):
    config = kubeconfig_with_user(testenv, {"token": service_account_token}, tmp_path / "kc")
    cli = Cli(config, tmp_path)
    cli.submitted.append("pw-token")
    try:
        proc = cli.gcluster("job", "submit", "--name", "pw-token", *CLUSTER, "--compute-type",
                            "v6e-16", "--pathways", "--pathways-gcs-location", GCS,
                            "--pathways-headless", "-v", "-v", check=0)
        listing = cli.gcluster("job", "list", *CLUSTER, "-v", "-v", check=0)
    finally:
        cli.delete_job("pw-token")
    trace = proc.stdout + proc.stderr + listing.stdout + listing.stderr
    assert "Authorization: Bearer" in trace  # the header is traced...
    assert service_account_token not in trace  # ...but never its value
    for part in service_account_token.split("."):
        assert part not in trace


def test_exec_plugin_like_gke(testenv, tmp_path, service_account_token):
    calls = tmp_path / "calls"
    command = plugin(tmp_path, f"""
        echo call >> {calls}
        # The exec protocol: the request arrives in KUBERNETES_EXEC_INFO.
        echo "$KUBERNETES_EXEC_INFO" | grep -q '"kind":"ExecCredential"' || exit 9
        cat <<EOF
        {{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
          "status": {{"token": "{service_account_token}", "expirationTimestamp": "2099-01-01T00:00:00Z"}}}}
        EOF
    """)
    config = kubeconfig_with_user(testenv, exec_user(command), tmp_path / "kc")
    cli = Cli(config, tmp_path)
    proc = cli.gcluster("job", "list", *CLUSTER, "-v", check=0)
    assert service_account_token not in proc.stdout + proc.stderr
    # One plugin run serves every request of the command.
    assert calls.read_text().count("call") == 1


def test_failing_exec_plugin_is_one_clear_line(testenv, tmp_path):
    command = plugin(tmp_path, """
        echo "ERROR: gcloud crashed (secret-looking output xyz)" >&2
        echo '{"status": {"token": "leaked-token-value"}}'
        exit 1
    """)
    config = kubeconfig_with_user(testenv, exec_user(command), tmp_path / "kc")
    proc = Cli(config, tmp_path).gcluster("job", "list", *CLUSTER, check=1)
    errors = [l for l in proc.stderr.splitlines() if l.startswith("gcluster: error:")]
    assert len(errors) == 1, proc.stderr
    assert "fake-auth-plugin" in errors[0] and "exit" in errors[0]
    assert "leaked-token-value" not in proc.stderr + proc.stdout


def test_rejected_plugin_token_is_refreshed_once_then_reported(testenv, tmp_path):
    calls = tmp_path / "calls"
    command = plugin(tmp_path, f"""
        echo call >> {calls}
        cat <<EOF
        {{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
          "status": {{"token": "expired-or-revoked-token"}}}}
        EOF
    """)
    config = kubeconfig_with_user(
        testenv, exec_user(command, "client.authentication.k8s.io/v1"), tmp_path / "kc")
    proc = Cli(config, tmp_path).gcluster("job", "list", *CLUSTER, check=1)
    assert calls.read_text().count("call") == 2  # re-run once on 401
    errors = [l for l in proc.stderr.splitlines() if l.startswith("gcluster: error:")]
    assert len(errors) == 1 and ("401" in errors[0] or "Unauthorized" in errors[0]), proc.stderr
    assert "expired-or-revoked-token" not in proc.stderr


def test_wrong_ca_is_a_clear_tls_error(testenv, tmp_path):
    other_ca = tmp_path / "ca"
    import subprocess
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=not-the-cluster-ca", "-keyout", str(tmp_path / "ca.key"),
                    "-out", str(other_ca)], check=True, capture_output=True)
    data = base64.b64encode(other_ca.read_bytes()).decode()
    config = yaml.safe_load(testenv.kubeconfig.read_text())
    user = config["users"][0]["user"]
    path = kubeconfig_with_user(testenv, user, tmp_path / "kc", ca_data=data)
    proc = Cli(path, tmp_path).gcluster("job", "list", *CLUSTER, check=1)
    errors = [l for l in proc.stderr.splitlines() if l.startswith("gcluster: error:")]
    assert len(errors) == 1, proc.stderr
    assert "certificate" in errors[0].lower()


NARROW_RBAC = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: gcluster-narrow, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: gcluster-narrow}
rules:
  - {apiGroups: [""], resources: [nodes], verbs: [list]}
  - {apiGroups: [kueue.x-k8s.io], resources: [clusterqueues], verbs: [get]}
  - {apiGroups: [scheduling.k8s.io], resources: [priorityclasses], verbs: [get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: gcluster-narrow}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: gcluster-narrow}
subjects: [{kind: ServiceAccount, name: gcluster-narrow, namespace: default}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: gcluster-narrow, namespace: default}
rules:
  - {apiGroups: [kueue.x-k8s.io], resources: [localqueues], verbs: [list]}
  - {apiGroups: [jobset.x-k8s.io], resources: [jobsets], verbs: [create, get]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: gcluster-narrow, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: gcluster-narrow}
subjects: [{kind: ServiceAccount, name: gcluster-narrow, namespace: default}]
"""


def test_submit_with_get_but_not_list_permissions(testenv, tmp_path):
    """Submit lists ClusterQueues and PriorityClasses together with the LocalQueues; a user who
    may only get them by name still submits, with the same checks (two more requests)."""
    rbac = tmp_path / "rbac.yaml"
    rbac.write_text(NARROW_RBAC)
    testenv.kubectl("apply", "-f", str(rbac))
    try:
        token = testenv.kubectl("create", "token", "gcluster-narrow", "--duration=10m").stdout
        config = kubeconfig_with_user(testenv, {"token": token.strip()}, tmp_path / "kc")
        cli = Cli(config, tmp_path)
        cli.submitted.append("pw-narrow")
        proc = cli.gcluster("job", "submit", "--name", "pw-narrow", *CLUSTER, "--compute-type",
                            "v6e-16", "--pathways", "--pathways-gcs-location", GCS,
                            "--pathways-headless", "--priority", "high", "--dry-run", "server",
                            "-v", check=0)
        assert "The cluster accepted headless Pathways job pw-narrow" in proc.stdout
        assert "/clusterqueues -> 403 Forbidden" in proc.stderr
        assert "/clusterqueues/cluster-queue -> 200 OK" in proc.stderr
        assert "/priorityclasses?fieldSelector=metadata.name%3Dhigh -> 403 Forbidden" in proc.stderr
        assert "/priorityclasses/high -> 200 OK" in proc.stderr
        assert "does not exist" not in proc.stderr and "does not cover" not in proc.stderr
    finally:
        testenv.kubectl("delete", "-f", str(rbac), "--wait=false", check=False)
