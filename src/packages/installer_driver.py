"""mcp-exec's package installer (docs/packages.md). It runs as the program of an installer
sandbox, never in a run's: the environment's image, no network, pip and the wheelhouse mounted
read-only. It reads {"requirements", "max_packages", "max_bytes", "max_metadata_bytes"} as JSON
on stdin and:

1. resolves the requirements with pip against the wheelhouse, wheels only, with every
   distribution the image has pinned to its installed version (a requirement that needs another
   version of one is a conflict, never an upgrade);
2. checks every wheel of the resolved set before anything is unpacked: entries confined to the
   install (no absolute path, no "..", no backslash or NUL), no links or device files, no setuid
   or setgid bit, the declared sizes and METADATA within the caps;
3. installs them, without dependencies, into /tmp/outputs/site, and compiles their bytecode for
   the place a run mounts the layer.

It writes one JSON object on stdout: {"packages": [{"name", "version", "file", "sha256"}]} or
{"error": TEXT}. The supervisor trusts none of it: it hashes the wheels itself and checks every
file it copies out of /tmp/outputs/site.
"""
import hashlib
import importlib.metadata
import json
import os
import re
import stat
import subprocess
import sys
import zipfile

WHEELHOUSE = "/usr/lib/mcp-exec/wheelhouse"
INSTALLER = "/usr/lib/mcp-exec/installer"
LAYER_MOUNT = "/usr/lib/mcp-exec/packages"
SITE = "/tmp/outputs/site"
REPORT = "/tmp/report.json"
LINKS = "/tmp/wheels"
CONSTRAINTS = "/tmp/constraints.txt"
MAX_ENTRIES = 100_000
PIP_ERROR_BYTES = 3000


# pip's own packaging (its tags), for the driver's explanations.
sys.path.append(INSTALLER)


class Refused(Exception):
    pass


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def pip(args):
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONPATH": INSTALLER,
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    command = [sys.executable, "-m", "pip", "--isolated", "--disable-pip-version-check",
               "--no-input", "--no-color", "--no-cache-dir"] + args
    return subprocess.run(command, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, errors="replace")


def pip_errors(done):
    lines = [line for line in done.stderr.splitlines()
             if line.strip() and not line.startswith(("WARNING:", "DEPRECATION:"))]
    # What a conflict is caused by, which pip says on stdout.
    out = done.stdout.splitlines()
    for i, line in enumerate(out):
        if "conflict is caused by" in line:
            for cause in out[i:i + 20]:
                if cause.startswith("To fix this"):
                    break
                if cause.strip():
                    lines.append(cause)
            break
    text = "\n".join(lines).strip() or done.stdout.strip() or "pip exited %d" % done.returncode
    return text[-PIP_ERROR_BYTES:]


def wheelhouse_files():
    try:
        return sorted(os.listdir(WHEELHOUSE))
    except OSError as e:
        raise Refused("the wheelhouse cannot be read: %s" % e.strerror)


def project_of(filename):
    """The normalised project of a wheel or sdist file name, or None."""
    for suffix in (".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz"):
        if filename.endswith(suffix):
            stem = filename[:-len(suffix)]
            break
    else:
        return None
    if filename.endswith(".whl"):
        return normalize(stem.split("-")[0])
    # name-version: the version starts at the last "-" followed by a digit
    match = re.match(r"^(.*?)-\d", stem)
    return normalize(match.group(1)) if match else None


def explain_no_match(error_text):
    """pip found nothing for a name: say whether the wheelhouse has only an sdist of it, or only
    wheels for another platform or Python."""
    missing = re.findall(r"No matching distribution found for ([A-Za-z0-9._-]+)", error_text)
    if not missing:
        return None
    from pip._vendor.packaging import tags
    supported = {str(t) for t in tags.sys_tags()}
    name = normalize(missing[0])
    files = [f for f in wheelhouse_files() if project_of(f) == name]
    sdists = [f for f in files if not f.endswith(".whl")]
    wheels = [f for f in files if f.endswith(".whl")]
    if sdists and not wheels:
        return ('"%s": the wheelhouse has only an sdist (%s); building one runs its code, so '
                'mcp-exec installs wheels only: add a wheel of it to the wheelhouse'
                % (missing[0], ", ".join(sdists)))
    unfit = []
    for wheel in wheels:
        parts = wheel[:-4].split("-")
        if len(parts) >= 5:
            wheel_tags = {"%s-%s-%s" % (i, a, p) for i in parts[-3].split(".")
                          for a in parts[-2].split(".") for p in parts[-1].split(".")}
            if not wheel_tags & supported:
                unfit.append(wheel)
    if unfit:
        return ('"%s": no wheel in the wheelhouse fits this environment (Python %d.%d, %s): '
                'found only %s' % (missing[0], sys.version_info[0], sys.version_info[1],
                                   next(iter(tags.sys_tags())).platform, ", ".join(unfit)))
    if not files:
        return '"%s": no such project in the wheelhouse' % missing[0]
    return None


def write_constraints():
    pins = {}
    for dist in importlib.metadata.distributions():
        name = dist.metadata["Name"]
        if name and dist.version:
            pins.setdefault(normalize(name), "%s==%s" % (name, dist.version))
    with open(CONSTRAINTS, "w") as out:
        out.write("".join(pin + "\n" for pin in sorted(pins.values())))


def admissible_wheels(max_metadata_bytes):
    """Links in LINKS to the wheelhouse's wheels whose METADATA pip may read (it reads every
    candidate's while it resolves); the others, by file name, with the reason."""
    os.mkdir(LINKS)
    refused = {}
    for name in wheelhouse_files():
        if not name.endswith(".whl"):
            continue
        path = os.path.join(WHEELHOUSE, name)
        try:
            with zipfile.ZipFile(path) as archive:
                sizes = [info.file_size for info in archive.infolist()
                         if info.filename.count("/") == 1
                         and info.filename.split("/")[0].endswith(".dist-info")
                         and info.filename.endswith("/METADATA")]
        except (OSError, zipfile.BadZipFile) as e:
            refused[name] = "is not a readable wheel (%s)" % e
            continue
        if sizes and max(sizes) > max_metadata_bytes:
            refused[name] = "has a METADATA of %d bytes, over %d" % (max(sizes), max_metadata_bytes)
            continue
        os.symlink(path, os.path.join(LINKS, name))
    return refused


def resolve(requirements, max_metadata_bytes):
    write_constraints()
    refused = admissible_wheels(max_metadata_bytes)
    done = pip(["install", "--no-index", "--find-links", LINKS, "--only-binary", ":all:",
                "--dry-run", "--report", REPORT, "--constraint", CONSTRAINTS,
                "--"] + requirements)
    if done.returncode != 0:
        text = pip_errors(done)
        for name in re.findall(r"No matching distribution found for ([A-Za-z0-9._-]+)", text):
            bad = ["%s %s" % (f, why) for f, why in sorted(refused.items())
                   if project_of(f) == normalize(name)]
            if bad:
                raise Refused('"%s": its wheel %s' % (name, "; ".join(bad)))
        explained = explain_no_match(text)
        if "conflicting dependencies" in text or "ResolutionImpossible" in text:
            raise Refused("the packages cannot be installed beside this environment's own "
                          "(pinned to the versions it has):\n" + text)
        raise Refused(explained or ("pip could not resolve the packages:\n" + text))
    with open(REPORT) as f:
        report = json.load(f)
    resolved = []
    for item in report.get("install", []):
        meta = item.get("metadata", {})
        url = item.get("download_info", {}).get("url", "")
        prefix = next((p for p in ("file://" + LINKS + "/", "file://" + WHEELHOUSE + "/")
                       if url.startswith(p)), None)
        if prefix is None or "/" in url[len(prefix):]:
            raise Refused('pip chose "%s" from outside the wheelhouse' % url)
        resolved.append({"name": meta.get("name", ""), "version": meta.get("version", ""),
                         "file": url[len(prefix):]})
    return resolved


def check_wheel(entry, max_bytes, max_metadata_bytes):
    """Returns the declared unpacked size of the wheel `entry` names; refuses what a layer may
    not hold."""
    path = os.path.join(WHEELHOUSE, entry["file"])
    label = '"%s" (%s)' % (entry["name"], entry["file"])
    if not entry["file"].endswith(".whl"):
        raise Refused("%s is not a wheel: mcp-exec installs wheels only" % label)
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise Refused("%s is not a readable wheel: %s" % (label, e))
    total = 0
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_ENTRIES:
            raise Refused("%s has %d entries, over %d" % (label, len(infos), MAX_ENTRIES))
        for info in infos:
            name = info.filename
            parts = name.split("/")
            if ("\\" in name or "\0" in name or name.startswith("/") or ".." in parts
                    or re.match(r"^[A-Za-z]:", name)):
                raise Refused("%s has an entry outside the install: %r" % (label, name))
            mode = info.external_attr >> 16
            kind = stat.S_IFMT(mode)
            if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
                what = "a symbolic link" if kind == stat.S_IFLNK else "a special file"
                raise Refused("%s has %s: %r" % (label, what, name))
            if mode & (stat.S_ISUID | stat.S_ISGID):
                raise Refused("%s has a setuid or setgid entry: %r" % (label, name))
            if (len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "METADATA"
                    and info.file_size > max_metadata_bytes):
                raise Refused("%s has a METADATA of %d bytes, over %d"
                              % (label, info.file_size, max_metadata_bytes))
            total += info.file_size
            if total > max_bytes:
                raise Refused("%s unpacks to more than %d bytes "
                              "(MCP_EXEC_PACKAGE_MAX_BYTES)" % (label, max_bytes))
    return total


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def install(resolved):
    files = [os.path.join(WHEELHOUSE, entry["file"]) for entry in resolved]
    done = pip(["install", "--no-index", "--no-deps", "--only-binary", ":all:", "--no-compile",
                "--target", SITE, "--quiet", "--"] + files)
    if done.returncode != 0:
        raise Refused("pip could not install the packages:\n" + pip_errors(done))
    # Bytecode for where runs find the layer; unchecked: a layer never changes.
    subprocess.run([sys.executable, "-m", "compileall", "-q", "-q", "-s", SITE, "-p",
                    LAYER_MOUNT, "--invalidation-mode", "unchecked-hash", SITE],
                   stdin=subprocess.DEVNULL, capture_output=True)


def main():
    request = json.load(sys.stdin)
    try:
        resolved = resolve(request["requirements"], request["max_metadata_bytes"])
        if len(resolved) > request["max_packages"]:
            raise Refused("the packages need %d distributions with their dependencies (%s), over "
                          "MCP_EXEC_MAX_PACKAGES, at most %d" % (
                              len(resolved), ", ".join(e["name"] for e in resolved),
                              request["max_packages"]))
        total = 0
        for entry in resolved:
            total += check_wheel(entry, request["max_bytes"], request["max_metadata_bytes"])
            if total > request["max_bytes"]:
                raise Refused("the packages unpack to more than %d bytes "
                              "(MCP_EXEC_PACKAGE_MAX_BYTES)" % request["max_bytes"])
            entry["sha256"] = sha256_of(os.path.join(WHEELHOUSE, entry["file"]))
        if resolved:
            install(resolved)
    except Refused as e:
        json.dump({"error": str(e)}, sys.stdout)
        return
    json.dump({"packages": resolved}, sys.stdout)


main()
