#!/usr/bin/env python3
"""Every published `gcluster job submit` line of tests/fixtures/published-gcluster-lines.txt, run
offline (--dry-run-out - --output json) through our binary, and its manifest checked for what
Google's gcluster means by the line.

The meaning is read from the line's own flags, independently of our code: the JobSet's name; the
image and the command of the workload container(s) (none when headless); the slices
(replicas of the TPU/worker job) and, for GPU and CPU jobs, the hosts per slice; the topology
(the JobSet's annotation, and the node selector, or Kueue's annotation for a dynamic slice);
every mount (destination, read-only unless rw, the volume's kind and source, gcsfuse options)
in the workload container and, with Pathways, in the TPU workers; every --env in the workload
container and in no Pathways server or sidecar; multi-tier checkpointing's volume; Pathways'
replicated jobs. A line Google's gcluster refuses must be refused (exit 2, saying why).

A published `gcluster deploy` line runs from the Cluster Toolkit checkout of
tests/fixtures/cluster-toolkit (where its examples/ path points), offline with --dry-run-out:
it must be accepted and give the Kueue configuration, or be refused as @expect-error says; and
every flag it passes must be described in `gcluster deploy --help`.

Usage: published_lines.py GCLUSTER [FIXTURE]. Prints one line per entry and a summary; exit 1 if
any entry fails.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "published-gcluster-lines.txt")
IMAGE_REPO = "us-docker.pkg.dev/my-project/gcluster-repo"
MTC_DRIVER = "multitier-checkpoint.csi.storage.gke.io"
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
PATHWAYS_SERVERS = ("pathways-proxy", "pathways-rm", "pathways-worker")
ENV_FLAGS = {
    "--pathways-proxy-env": "pathways-proxy",
    "--pathways-server-env": "pathways-rm",
    "--pathways-worker-env": "pathways-worker",
}
BOOL_FLAGS = {
    "--pathways", "--pathways-headless", "--gke-mtc-enabled", "--verbose",
    "--await-job-completion", "--gke-disable-parallel-containers", "--skip-prereqs",
}
# Flags whose value may hold '=' (--command=... is split on the first '=' only).

TPU_PREFIXES = ("v4", "v5p", "v5e", "v5litepod", "v6e", "tpu7x", "tpu-v", "ct4p", "ct5p",
                "ct5lp", "ct6e")


class Entry:
    def __init__(self, source):
        self.source = source
        self.text = []
        self.dots = None
        self.expect_error = None


def read_fixture(path):
    variables, entries, entry = {}, [], None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("@var "):
                _, name, value = line.split(" ", 2)
                variables[name] = value
            elif line.startswith("@replace "):
                parts = line.split(" ", 2)
                variables.setdefault("@replace", []).append(
                    (parts[1], parts[2] if len(parts) > 2 else ""))
            elif line.startswith("@source "):
                entry = Entry(line[len("@source "):])
                entries.append(entry)
            elif line.startswith("@dots "):
                entry.dots = line[len("@dots "):]
            elif line.startswith("@expect-error "):
                entry.expect_error = line[len("@expect-error "):]
            elif line.startswith("#") and entry is None:
                continue
            elif line.strip() and entry is not None:
                entry.text.append(line)
    return variables, entries


def substitute(text, variables):
    """The reader's values for <NAME>, ${NAME}, ${NAME?} and $NAME placeholders (not for an
    escaped \\$, which the command keeps for the container's shell)."""
    for old, new in variables.get("@replace", []):
        text = text.replace(old, new)

    def value(match):
        name = match.group(1) or match.group(2) or match.group(3)
        if name not in variables:
            raise ValueError("no @var for placeholder " + match.group(0))
        return variables[name]
    return re.sub(r"<([A-Za-z_/]+)>|(?<!\\)\$\{([A-Za-z_]+)\??\}|(?<!\\)\$([A-Z_][A-Z0-9_]*)",
                  value, text)


def argv_of(entry, variables):
    text = "\n".join(entry.text).replace("\\\n", " ")
    words = shlex.split(substitute(text, variables), comments=True)
    if entry.dots:
        dots = shlex.split(substitute(entry.dots, variables))
        i = words.index("...")
        words[i:i + 1] = dots
    if os.path.basename(words[0]) != "gcluster":
        raise ValueError("not a gcluster line")
    if words[1:2] == ["deploy"]:
        return words[1:]
    if words[1:3] != ["job", "submit"]:
        raise ValueError("not a gcluster job submit or deploy line")
    return words[3:]


def flags_of(args):
    """The line's flags as Google's gcluster (cobra/pflag) reads them: --flag value or
    --flag=value, repeatable flags in order."""
    flags, i = [], 0
    while i < len(args):
        arg = args[i]
        if "=" in arg and arg.startswith("--"):
            name, value = arg.split("=", 1)
        elif arg in BOOL_FLAGS:
            name, value = arg, "true"
        else:
            name, value = arg, args[i + 1]
            i += 1
        flags.append((name, value))
        i += 1
    return flags


def first(flags, *names, default=None):
    for name, value in flags:
        if name in names:
            return value
    return default


def every(flags, name):
    return [value for n, value in flags if n == name]


def without_output_flags(args):
    """The published line minus its own --dry-run-out (ours writes to stdout as JSON)."""
    out, i = [], 0
    while i < len(args):
        if args[i] in ("--dry-run-out", "-o"):
            i += 2
            continue
        if args[i].startswith("--dry-run-out="):
            i += 1
            continue
        out.append(args[i])
        i += 1
    return out


def pod_spec(replicated_job):
    return replicated_job["template"]["spec"]["template"]["spec"]


def pod_metadata(replicated_job):
    return replicated_job["template"]["spec"]["template"].get("metadata", {})


def containers(spec):
    return spec.get("initContainers", []) + spec.get("containers", [])


def env_of(container):
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def mount_profile(spec):
    """The profile= of a SRC;DEST;... mount, or None."""
    return next((p[len("profile="):] for p in spec.split(";")[2:] if p.startswith("profile=")),
                None)


def parse_mount(spec):
    """Google's reading of one --mount value: SRC;DEST[;ro|rw][;options=...], or the older
    SRC:DEST[:ro|rw]; read-only unless rw."""
    if ";" in spec:
        parts = spec.split(";")
        src, dest, rest = parts[0], parts[1], parts[2:]
        mode = "rw" if "rw" in rest else "ro"
        options = next((p[len("options="):] for p in rest if p.startswith("options=")), None)
        attributes = next((p[len("attributes="):] for p in rest if p.startswith("attributes=")),
                          "")
        return src, dest, mode == "ro", options, dict(
            a.split("=", 1) for a in attributes.split(",") if a)
    scheme = spec.find("://")
    start = scheme + 3 if scheme >= 0 else 0
    colon = spec.index(":", start)
    src, rest = spec[:colon], spec[colon + 1:].split(":")
    return src, rest[0], not (len(rest) > 1 and rest[1] == "rw"), None, {}


class Check:
    def __init__(self, entry):
        self.entry = entry
        self.problems = []

    def expect(self, ok, what):
        if not ok:
            self.problems.append(what)


def check_volume(check, volume, mount, src, read_only, options, attributes, profile=None):
    """Google's meaning of a gs:// mount: the bucket alone names the bucket and a directory in
    it is the container mount's subPath; with profile= the volume is the gateway claim on the
    profile's gcsfusecsi-* StorageClass (gcluster-gcsfuse-BUCKET-PROFILE-DIGEST)."""
    where = "volume for --mount %s" % src
    if src.startswith("gs://"):
        bucket, _, directory = src[len("gs://"):].partition("/")
        if directory.strip("/"):
            check.expect(mount.get("subPath") == directory.strip("/"), where + ": subPath")
        if profile:
            short = profile.lower().replace("gcsfusecsi-", "")
            claim = volume.get("persistentVolumeClaim", {}).get("claimName", "")
            check.expect(claim.startswith("gcluster-gcsfuse-%s-%s-" % (bucket, short)),
                         where + ": the gateway claim for profile " + profile)
            return
        csi = volume.get("csi", {})
        check.expect(csi.get("driver") == GCSFUSE_DRIVER, where + ": not the GCS FUSE driver")
        check.expect(csi.get("volumeAttributes", {}).get("bucketName") == bucket,
                     where + ": bucketName")
        check.expect(csi.get("readOnly") == read_only, where + ": readOnly")
        mount_options = csi.get("volumeAttributes", {}).get("mountOptions", "")
        if options:
            check.expect(options in mount_options, where + ": options " + options)
        for key, value in attributes.items():
            check.expect(csi.get("volumeAttributes", {}).get(key) == value,
                         where + ": attribute " + key)
    elif src.startswith("filestore://"):
        server, _, share = src[len("filestore://"):].partition("/")
        nfs = volume.get("nfs", {})
        check.expect(nfs.get("server") == server and nfs.get("path") == "/" + share,
                     where + ": NFS server and share")
    elif src.startswith("/"):
        check.expect(volume.get("hostPath", {}).get("path") == src, where + ": hostPath")
    else:
        claim = src[len("pvc://"):] if src.startswith("pvc://") else src
        check.expect(volume.get("persistentVolumeClaim", {}).get("claimName") == claim,
                     where + ": claimName")


def check_mounts(check, flags, spec, mounted_in):
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for value in every(flags, "--mount"):
        for one in ([value] if ";" in value else [v for v in value.split(",") if v]):
            src, dest, read_only, options, attributes = parse_mount(one)
            dest = "/" + "/".join(p for p in dest.split("/") if p and p != ".")
            for c in mounted_in:
                found = [m for m in c.get("volumeMounts", []) if m["mountPath"] == dest]
                check.expect(len(found) == 1, "%s: no mount at %s" % (c["name"], dest))
                if found:
                    check.expect(bool(found[0].get("readOnly")) == read_only,
                                 "%s: %s readOnly should be %s" % (c["name"], dest, read_only))
                    check_volume(check, volumes.get(found[0]["name"], {}), found[0], src,
                                 read_only, options, attributes, mount_profile(one))


def check_mtc(check, flags, spec, mounted_in):
    if first(flags, "--gke-mtc-enabled") != "true":
        return
    ramdisk = first(flags, "--gke-mtc-ramdisk-dir", default="/tmp/mtc_checkpoints")
    names = [v["name"] for v in spec.get("volumes", [])
             if v.get("csi", {}).get("driver") == MTC_DRIVER]
    check.expect(len(names) == 1, "no multi-tier checkpointing CSI volume")
    for c in mounted_in:
        check.expect(any(m["mountPath"] == ramdisk and m["name"] in names
                         for m in c.get("volumeMounts", [])),
                     "%s: MTC volume not mounted at %s" % (c["name"], ramdisk))


def check_env(check, flags, workload, others):
    given = [tuple(v.split("=", 1)) for v in every(flags, "--env")]
    role_env = {ENV_FLAGS[n]: dict(v.split("=", 1) for v in every(flags, n)) for n in ENV_FLAGS}
    for name, value in given:
        for c in workload:
            check.expect(env_of(c).get(name) == value, "%s: --env %s" % (c["name"], name))
        for c in others:
            if name not in role_env.get(c["name"], {}):
                check.expect(name not in env_of(c),
                             "--env %s also in %s (Google: workload container only)" %
                             (name, c["name"]))


def check_workload(check, flags, containers_, image):
    command = first(flags, "--command", "-e")
    for c in containers_:
        if first(flags, "--image", "-i"):
            check.expect(c["image"] == image, "%s: image %s" % (c["name"], c["image"]))
        else:
            check.expect(c["image"].startswith(IMAGE_REPO + "/"),
                         "%s: built image %s not in %s" % (c["name"], c["image"], IMAGE_REPO))
        check.expect(c.get("command") == ["/bin/bash", "-c", command],
                     "%s: command %r" % (c["name"], c.get("command")))


def check_manifest(check, flags, jobset):
    name = first(flags, "--name", "-n")
    check.expect(jobset["metadata"]["name"] == name, "JobSet name")
    jobs = {rj["name"]: rj for rj in jobset["spec"]["replicatedJobs"]}
    pathways = first(flags, "--pathways") == "true"
    headless = first(flags, "--pathways-headless") == "true"
    slices = int(first(flags, "--num-slices", default="1"))
    image = first(flags, "--image", "-i")
    compute = first(flags, "--compute-type").lower()
    tpu = compute.startswith(TPU_PREFIXES)
    if pathways:
        check.expect(sorted(jobs) == ["pathways-head", "worker"], "Pathways replicated jobs")
        head, worker = pod_spec(jobs["pathways-head"]), pod_spec(jobs["worker"])
        tpu_job = jobs["worker"]
        workload = [c for c in containers(head) if c["name"] == "workload-container"]
        check.expect(len(workload) == (0 if headless else 1), "workload container in the head")
        workers = [c for c in containers(worker) if c["name"] == "pathways-worker"]
        others = [c for c in containers(head) + containers(worker)
                  if c["name"] != "workload-container"]
        check_mounts(check, flags, worker, workers)
        check_mtc(check, flags, worker, workers)
        if not headless:
            check_mounts(check, flags, head, workload)
    else:
        check.expect(sorted(jobs) == ["main-job"], "one replicated job, main-job")
        tpu_job = jobs["main-job"]
        spec = pod_spec(tpu_job)
        workload = [c for c in spec["containers"] if c["name"].startswith("workload-container")]
        others = [c for c in spec["containers"] if c not in workload]
        check_mounts(check, flags, spec, workload)
        check_mtc(check, flags, spec, workload)
        if not tpu:
            nodes = int(first(flags, "--num-nodes", default="1"))
            check.expect(tpu_job["template"]["spec"]["parallelism"] == nodes,
                         "hosts per group %d" % nodes)
    check.expect(tpu_job["replicas"] == slices, "slices: replicas %s" % tpu_job["replicas"])
    check_workload(check, flags, workload, image)
    check_env(check, flags, workload, others)
    topology = first(flags, "--topology")
    if topology:
        annotations = jobset["metadata"]["annotations"]
        check.expect(annotations.get("gcluster.google.com/topology") == topology,
                     "topology annotation")
        selector = pod_spec(tpu_job).get("nodeSelector", {})
        slice_annotation = pod_metadata(tpu_job).get("annotations", {}).get(
            "cloud.google.com/gke-tpu-slice-topology")
        check.expect(selector.get("cloud.google.com/gke-tpu-topology") == topology or
                     slice_annotation == topology, "TPU pods not placed on topology " + topology)


CT_CHECKOUT = os.path.join(SOURCE_DIR, "tests", "fixtures", "cluster-toolkit")


def run_deploy(gcluster, check, args, env):
    """A deploy line: accepted (the Kueue configuration written) or refused as expected, and each
    of its flags described in deploy's --help."""
    helped = subprocess.run([gcluster, "deploy", "--help"], env=env, capture_output=True,
                            text=True, timeout=120).stdout
    for arg in args[2:]:
        if arg.startswith("-") and len(arg) > 1:
            name = arg.split("=", 1)[0]
            shown = ("-%s, " % name[1]) if not name.startswith("--") else name
            check.expect(shown in helped, "deploy --help does not describe " + name)
    result = subprocess.run([gcluster] + args + ["--dry-run-out", "-", "--output", "json"],
                            cwd=CT_CHECKOUT, env=env, capture_output=True, text=True, timeout=120)
    if check.entry.expect_error:
        check.expect(result.returncode == 2 and check.entry.expect_error in result.stderr,
                     "want exit 2 saying %r, got exit %d: %s" %
                     (check.entry.expect_error, result.returncode, result.stderr.strip()))
        return check
    if result.returncode != 0:
        check.problems.append("exit %d: %s" % (result.returncode, result.stderr.strip()))
        return check
    kinds = [item.get("kind") for item in json.loads(result.stdout).get("items", [])]
    check.expect("ClusterQueue" in kinds, "no ClusterQueue in the deploy's objects")
    return check


def run_entry(gcluster, entry, variables, workdir):
    check = Check(entry)
    try:
        args = argv_of(entry, variables)
        if args[0] == "deploy":
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": workdir}
            return run_deploy(gcluster, check, args, env)
        flags = flags_of(args)
    except (ValueError, IndexError) as e:
        check.problems.append("cannot read the line: %s" % e)
        return check
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": workdir, "USER": "tester",
           "GCLUSTER_IMAGE_REPO": IMAGE_REPO}
    argv = [gcluster, "job", "submit"] + without_output_flags(args) + [
        "--dry-run-out", "-", "--output", "json"]
    result = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True,
                            timeout=120)
    if entry.expect_error:
        check.expect(result.returncode == 2 and entry.expect_error in result.stderr,
                     "want exit 2 saying %r, got exit %d: %s" %
                     (entry.expect_error, result.returncode, result.stderr.strip()))
        return check
    if result.returncode != 0:
        check.problems.append("exit %d: %s" % (result.returncode, result.stderr.strip()))
        return check
    try:
        doc = json.loads(result.stdout)
    except json.JSONDecodeError as e:
        check.problems.append("the output is not JSON: %s" % e)
        return check
    # With profile= mounts, the gateways come first and everything is one List.
    items = doc["items"] if doc.get("kind") == "List" else [doc]
    jobset = items[-1]
    check_manifest(check, flags, jobset)
    check_gateways(check, flags, items[:-1])
    return check


def check_gateways(check, flags, objects):
    """Each profile= mount's gateway: a PersistentVolume on the profile's gcsfusecsi-*
    StorageClass naming the bucket, and the claim bound to it, both labelled as Google's."""
    claims = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PersistentVolumeClaim"}
    volumes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "PersistentVolume"}
    for value in every(flags, "--mount"):
        profile = mount_profile(value) if ";" in value else None
        if not profile:
            continue
        bucket = value.split(";")[0][len("gs://"):].partition("/")[0]
        storage_class = "gcsfusecsi-" + profile.lower().replace("gcsfusecsi-", "")
        found = [c for c in claims.values() if c["spec"]["storageClassName"] == storage_class and
                 volumes.get(c["spec"]["volumeName"], {}).get("spec", {}).get("csi", {})
                 .get("volumeHandle") == bucket]
        check.expect(len(found) == 1, "no gateway for --mount %s" % value)
        for o in found + [volumes.get(c["spec"]["volumeName"], {}) for c in found]:
            labels = o.get("metadata", {}).get("labels", {})
            check.expect(labels.get("gcluster.google.com/managed-by") == "cluster-toolkit",
                         "gateway %s: managed-by label" % o.get("metadata", {}).get("name"))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    gcluster = os.path.abspath(sys.argv[1])
    fixture = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_FIXTURE
    variables, entries = read_fixture(fixture)
    failed = 0
    with tempfile.TemporaryDirectory() as workdir:
        # The build contexts the guides use: job_details/app.py, and "." (MaxText's checkout).
        os.makedirs(os.path.join(workdir, "job_details"))
        for path in ("job_details/app.py", "app.py"):
            with open(os.path.join(workdir, path), "w", encoding="utf-8") as f:
                f.write('print("Hello from the gcluster job submit application!")\n')
        for entry in entries:
            check = run_entry(gcluster, entry, variables, workdir)
            status = "FAIL" if check.problems else "ok"
            print("%-4s %s" % (status, entry.source))
            for problem in check.problems:
                print("       " + problem)
            failed += bool(check.problems)
    print("%d of %d published lines mean what Google's gcluster means, %d fail" %
          (len(entries) - failed, len(entries), failed))
    if len(entries) < 40:
        print("the corpus has fewer than 40 lines")
        return 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
