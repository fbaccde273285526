"""Hostile blueprints, deployment files and --vars against `gcluster deploy --dry-run-out -`.

Each case runs the real binary in a child with a time bound and, outside the ASan build (whose
shadow memory needs far more address space), a 1 GiB address-space limit, and asserts the exit
status and what the message says: a nesting bound in expressions and templates (no stack
overflow), a budget on what evaluation makes (no memory or time exhaustion), messages that give
the reason first and a bounded excerpt with line and column, Kueue quota messages that name
what the value is, numbers YAML writes as 1e3 or 480.5 taken as Kubernetes quantities, no
--vars pair dropped, a misspelt deployment-file key refused, cycles through module outputs
named, and index overflow refused.

Run: GCLUSTER=build/gcluster python3 -m pytest -q tests/hostile/test_hostile_blueprints.py
"""
import json
import os
import pathlib
import resource
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
CT = REPO / "tests" / "fixtures" / "cluster-toolkit" / "examples"
GCLUSTER = os.environ.get("GCLUSTER", str(REPO / "build" / "gcluster"))
TIME_LIMIT = 30  # seconds; each case takes well under one
MEMORY_LIMIT = 1 << 30  # bytes of address space
MESSAGE_LIMIT = 1200  # bytes: a message states its reason, not the whole expression

TARGET = "vars:\n  project_id: p\n  deployment_name: d\n  region: us-east5\n  zone: us-east5-b\n"


def sanitized():
    with open(GCLUSTER, "rb") as f:
        return b"__asan_init" in f.read()


ASAN = sanitized()


def limit_memory():
    if not ASAN:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def deploy(tmp_path, blueprint, *args, files=None):
    path = tmp_path / "bp.yaml"
    path.write_text(blueprint)
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    try:
        return subprocess.run([GCLUSTER, "deploy", str(path), *args, "--dry-run-out", "-",
                               "-o", "json"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=TIME_LIMIT, preexec_fn=limit_memory,
                              env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                   "HOME": str(tmp_path)})
    except subprocess.TimeoutExpired:
        pytest.fail("deploy ran past %d s" % TIME_LIMIT)


def refused(result, *phrases):
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    message = result.stderr
    for phrase in phrases:
        assert phrase in message, message[:2000]
    assert len(message) < MESSAGE_LIMIT, message[:2000]
    return message


def var_blueprint(expression):
    return ("blueprint_name: x\n" + TARGET + "  q: " + json.dumps(expression) +
            "\ndeployment_groups: []\n")


def template_blueprint(quota="8"):
    return ("blueprint_name: x\n" + TARGET + "deployment_groups:\n- group: g\n  modules:\n"
            "  - id: c\n    source: modules/scheduler/gke-cluster\n"
            "    settings: {enable_pathways_for_tpus: true}\n"
            "  - id: k\n    source: modules/management/kubectl-apply\n    use: [c]\n"
            "    settings:\n      kueue:\n        install: true\n"
            "        config_path: k.yaml.tftpl\n"
            "        config_template_vars: {quota: %s}\n" % quota)


QUEUE = ("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
         "spec:\n  resourceGroups:\n  - coveredResources: [google.com/tpu]\n"
         "    flavors: [{name: tpu, resources: [{name: google.com/tpu, nominalQuota: %s}]}]\n")


def test_conditional_chain_is_bounded_in_expressions(tmp_path):
    chain = "$(" + "true ? 1 : " * 200000 + "1)"
    message = refused(deploy(tmp_path, var_blueprint(chain)), "nests too deeply", "column")
    assert message.startswith("gcluster: error: ")


def test_conditional_chain_is_bounded_in_templates(tmp_path):
    template = QUEUE % ("${" + "true ? 1 : " * 200000 + "1}")
    refused(deploy(tmp_path, template_blueprint(), files={"k.yaml.tftpl": template}),
            "k.yaml.tftpl:", "nests too deeply")


def test_parentheses_say_why(tmp_path):
    refused(deploy(tmp_path, var_blueprint("$(" + "(" * 10000 + "1" + ")" * 10000 + ")")),
            "nests too deeply", "line 1, column")
    template = QUEUE % ("${" + "(" * 5000 + "quota" + ")" * 5000 + "}")
    refused(deploy(tmp_path, template_blueprint(), files={"k.yaml.tftpl": template}),
            "nests too deeply")


def test_long_syntax_errors_say_what_was_expected(tmp_path):
    long_list = "$([" + "1, " * 10000 + "1 1])"
    refused(deploy(tmp_path, var_blueprint(long_list)), "expected ',' or ']'", "column 30004")
    refused(deploy(tmp_path, var_blueprint("$(" + "1 + " * 5000 + ")")), "expected a value")


def test_doubling_string_hits_the_budget(tmp_path):
    text = "blueprint_name: x\n" + TARGET + "  v0: " + "a" * 100 + "\n"
    for i in range(1, 40):
        text += '  v%d: "$(vars.v%d)$(vars.v%d)"\n' % (i, i - 1, i - 1)
    refused(deploy(tmp_path, text + "deployment_groups: []\n"), "more than 64 MiB")


@pytest.mark.parametrize("step", [
    "$(concat(vars.l{p}, vars.l{p}))",
    '["$(vars.l{p})", "$(vars.l{p})"]',
    "$(flatten([vars.l{p}, [vars.l{p}]]))",
])
def test_growing_lists_hit_the_budget(tmp_path, step):
    text = "blueprint_name: x\n" + TARGET + "  l0: [a, b, c, d]\n"
    for i in range(1, 60):
        text += "  l%d: %s\n" % (i, step.format(p=i - 1))
    text += "  f: $(flatten(vars.l59))\ndeployment_groups: []\n"
    refused(deploy(tmp_path, text), "more than 64 MiB")


def test_deep_values_are_refused(tmp_path):
    text = "blueprint_name: x\n" + TARGET + "  l0: [a]\n"
    for i in range(1, 300):
        text += "  l%d: $([vars.l%d])\n" % (i, i - 1)
    refused(deploy(tmp_path, text + "deployment_groups: []\n"), "deep")


def test_index_overflow_is_refused(tmp_path):
    text = "blueprint_name: x\n" + TARGET + "  l: [a, b]\n  q: $(vars.l.18446744073709551617)\n"
    refused(deploy(tmp_path, text + "deployment_groups: []\n"),
            "index 18446744073709551617 is too large")


def pathways(quota):
    return ("blueprint_name: x\n" + TARGET + "deployment_groups:\n- group: g\n  modules:\n"
            "  - id: c\n    source: modules/scheduler/gke-cluster\n"
            "    settings: {enable_pathways_for_tpus: true}\n"
            "  - id: pool\n    source: modules/compute/gke-node-pool\n    use: [c]\n"
            "    settings: {machine_type: ct6e-standard-4t, placement_policy: "
            "{type: COMPACT, tpu_topology: 4x4}}\n"
            "  - id: k\n    source: modules/management/kubectl-apply\n    use: [c]\n"
            "    settings:\n      kueue:\n        install: true\n"
            "        config_template_vars: {tpu_quota: %s}\n" % quota)


def nominal_quotas(result):
    assert result.returncode == 0, result.stderr
    quotas = []
    for item in json.loads(result.stdout)["items"]:
        if item["kind"] == "ClusterQueue":
            for group in item["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    quotas += [r["nominalQuota"] for r in flavor["resources"]
                               if r["name"] == "google.com/tpu"]
    return quotas[:1]  # the TPU flavor's (pathways-flavor's google.com/tpu is 0)


def test_quota_messages_say_what_the_value_is(tmp_path):
    message = refused(deploy(tmp_path, pathways("null")), "tpu_quota is null")
    assert "list or mapping" not in message
    message = refused(deploy(tmp_path, pathways('"$(frobnicate(1))"')),
                      "known only once Terraform runs", "frobnicate")
    assert "list or mapping" not in message


@pytest.mark.parametrize("written,quantity", [("1e3", "1k"), ("480.5", "480500m"),
                                              ("64", "64")])
def test_yaml_numbers_are_quantities(tmp_path, written, quantity):
    assert nominal_quotas(deploy(tmp_path, pathways(written))) == [quantity]


def test_no_vars_pair_is_dropped(tmp_path):
    pairs = ",".join("v%d=1" % i for i in range(1, 301)) + ",tpu_quota=64"
    text = pathways("$(vars.tpu_quota)").replace("region: us-east5\n",
                                                 "region: us-east5\n  tpu_quota: 32\n")
    assert nominal_quotas(deploy(tmp_path, text, "--vars", pairs)) == ["64"]


def test_misspelt_deployment_file_key_is_refused(tmp_path):
    (tmp_path / "dep.yaml").write_text("varz:\n  tpu_quota: 64\n")
    refused(deploy(tmp_path, pathways("32"), "-d", str(tmp_path / "dep.yaml")),
            "dep.yaml:", "unknown key \"varz\"", "did you mean vars:?")


def test_cycle_through_a_module_output_is_named(tmp_path):
    for machine in ("", "machine_type: $(vars.machine_type), "):
        text = ("blueprint_name: x\n" + TARGET + "  machine_type: $(pool.machine_type)\n"
                "deployment_groups:\n- group: g\n  modules:\n"
                "  - id: pool\n    source: modules/compute/gke-node-pool\n"
                "    settings: {%splacement_policy: {type: COMPACT, tpu_topology: 4x4}}\n"
                % machine)
        refused(deploy(tmp_path, text), "refers to itself",
                "vars.machine_type -> pool.machine_type")


def test_empty_variables_are_named(tmp_path):
    """Google's XPK migration guide's line, over the v6e blueprint that leaves machine_type and
    tpu_topology (and others) empty."""
    result = subprocess.run(
        [GCLUSTER, "deploy", str(CT / "gke-tpu-v6e" / "gke-tpu-v6e.yaml"), "--vars",
         "project_id=my-project,zone=us-east5-b,deployment_name=my-cluster,num_slices=2",
         "--dry-run-out", "-"], capture_output=True, text=True, timeout=TIME_LIMIT,
        cwd=tmp_path, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                           "HOME": str(tmp_path)})
    assert result.returncode == 2, result.stderr
    assert "variables region, machine_type, tpu_topology" in result.stderr, result.stderr
    assert "--vars region=VALUE,machine_type=VALUE,tpu_topology=VALUE" in result.stderr
