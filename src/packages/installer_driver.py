"""mcp-exec's package installer (docs/packages.md). It runs as the program of an installer
sandbox, never in a run's: the environment's image, no network, pip mounted read-only, and at
/usr/lib/mcp-exec/wheelhouse either the wheelhouse (read-only) or, for an index, a directory
holding the supervisor's channel socket (index_channel.h), which pip reaches through a relay on
the sandbox's loopback. It reads {"requirements", "max_packages", "max_bytes",
"max_metadata_bytes", "index", "timeout"} as JSON on stdin and:

1. resolves the requirements with pip against the wheelhouse or the index, wheels only, with every
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
import socket
import stat
import subprocess
import sys
import threading
import urllib.error
import urllib.request
import zipfile

WHEELHOUSE = "/usr/lib/mcp-exec/wheelhouse"
INSTALLER = "/usr/lib/mcp-exec/installer"
LAYER_MOUNT = "/usr/lib/mcp-exec/packages"
SITE = "/tmp/outputs/site"
REPORT = "/tmp/report.json"
LINKS = "/tmp/wheels"
CHANNEL = WHEELHOUSE + "/index.sock"
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


class Wheelhouse:
    """The operator's directory of wheels, bound read-only."""
    name = "the wheelhouse"

    def __init__(self, max_metadata_bytes):
        self.refused = admissible_wheels(max_metadata_bytes)

    def files_of(self, project):
        return [f for f in wheelhouse_files() if project_of(f) == project]

    def pip_args(self):
        return ["--no-index", "--find-links", LINKS]

    def file_of(self, url):
        """The wheel file of a report's download URL: (name, sha256 or None)."""
        for prefix in ("file://" + LINKS + "/", "file://" + WHEELHOUSE + "/"):
            if url.startswith(prefix) and "/" not in url[len(prefix):]:
                return url[len(prefix):], None
        raise Refused('pip chose "%s" from outside the wheelhouse' % url)

    def local(self, entry):
        return os.path.join(WHEELHOUSE, entry["file"])


class Index:
    """The operator's index, through the supervisor's channel: a relay on this sandbox's
    loopback passes pip's connections to the channel's socket, the only way out."""
    name = "the index"

    def __init__(self, timeout):
        self.timeout = timeout
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        self.base = "http://127.0.0.1:%d" % listener.getsockname()[1]
        threading.Thread(target=self._relay, args=(listener,), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def _relay(self, listener):
        while True:
            conn, _ = listener.accept()
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                up.connect(CHANNEL)
            except OSError:
                conn.close()
                continue
            threading.Thread(target=self._pump, args=(conn, up), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, conn), daemon=True).start()

    def files_of(self, project):
        """The project's files, [] when the index has no such project, None when its page could
        not be had (the supervisor says why)."""
        try:
            with urllib.request.urlopen("%s/simple/%s/" % (self.base, project),
                                        timeout=self.timeout) as page:
                text = page.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as e:
            return [] if e.code == 404 else None
        except (OSError, urllib.error.URLError):
            return None
        # A page with no link the channel kept (none had a sha256): the channel says why.
        return re.findall(r">([^<>/]+)</a>", text) or None

    def pip_args(self):
        return ["--index-url", self.base + "/simple/", "--retries", "0",
                "--timeout", str(self.timeout)]

    def file_of(self, url):
        match = re.match(re.escape(self.base) + r"/files/([0-9a-f]{64})/([^/#?]+)$", url)
        if not match:
            raise Refused('pip chose "%s", which the channel did not list' % url)
        return match.group(2), match.group(1)

    def local(self, entry):
        """Fetches the wheel through the channel into the workspace; checks its sha256."""
        os.makedirs(LINKS, exist_ok=True)
        path = os.path.join(LINKS, entry["file"])
        digest = hashlib.sha256()
        with urllib.request.urlopen("%s/files/%s/%s" % (self.base, entry["sha256"], entry["file"]),
                                    timeout=self.timeout) as src, open(path, "wb") as dst:
            for block in iter(lambda: src.read(1 << 20), b""):
                digest.update(block)
                dst.write(block)
        if digest.hexdigest() != entry["sha256"]:
            raise Refused("%s arrived with another sha256 than the index's" % entry["file"])
        return path


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


def explain_no_match(error_text, source):
    """pip found nothing for a name: say whether the source has only an sdist of it, or only
    wheels for another platform or Python."""
    missing = re.findall(r"No matching distribution found for ([A-Za-z0-9._-]+)", error_text)
    if not missing:
        return None
    from pip._vendor.packaging import tags
    supported = {str(t) for t in tags.sys_tags()}
    name = normalize(missing[0])
    files = source.files_of(name)
    if files is None:
        return None
    sdists = [f for f in files if not f.endswith(".whl")]
    wheels = [f for f in files if f.endswith(".whl")]
    if sdists and not wheels:
        return ('"%s": %s has only an sdist (%s); building one runs its code, so '
                'mcp-exec installs wheels only: add a wheel of it to %s'
                % (missing[0], source.name, ", ".join(sdists), source.name))
    unfit = []
    for wheel in wheels:
        parts = wheel[:-4].split("-")
        if len(parts) >= 5:
            wheel_tags = {"%s-%s-%s" % (i, a, p) for i in parts[-3].split(".")
                          for a in parts[-2].split(".") for p in parts[-1].split(".")}
            if not wheel_tags & supported:
                unfit.append(wheel)
    if unfit:
        return ('"%s": no wheel in %s fits this environment (Python %d.%d, %s): '
                'found only %s' % (missing[0], source.name, sys.version_info[0],
                                   sys.version_info[1], next(iter(tags.sys_tags())).platform,
                                   ", ".join(unfit)))
    if not files:
        return '"%s": no such project in %s' % (missing[0], source.name)
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


def resolve(requirements, source):
    write_constraints()
    done = pip(["install"] + source.pip_args() + ["--only-binary", ":all:",
                "--dry-run", "--report", REPORT, "--constraint", CONSTRAINTS,
                "--"] + requirements)
    if done.returncode != 0:
        text = pip_errors(done)
        for name in re.findall(r"No matching distribution found for ([A-Za-z0-9._-]+)", text):
            bad = ["%s %s" % (f, why) for f, why in sorted(getattr(source, "refused", {}).items())
                   if project_of(f) == normalize(name)]
            if bad:
                raise Refused('"%s": its wheel %s' % (name, "; ".join(bad)))
        explained = explain_no_match(text, source)
        if "conflicting dependencies" in text or "ResolutionImpossible" in text:
            raise Refused("the packages cannot be installed beside this environment's own "
                          "(pinned to the versions it has):\n" + text)
        raise Refused(explained or ("pip could not resolve the packages:\n" + text))
    with open(REPORT) as f:
        report = json.load(f)
    resolved = []
    for item in report.get("install", []):
        meta = item.get("metadata", {})
        name, sha256 = source.file_of(item.get("download_info", {}).get("url", ""))
        resolved.append({"name": meta.get("name", ""), "version": meta.get("version", ""),
                         "file": name, "sha256": sha256})
    return resolved


def check_wheel(entry, path, max_bytes, max_metadata_bytes):
    """Returns the declared unpacked size of the wheel at `path`; refuses what a layer may not
    hold."""
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


def install(files):
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
        source = (Index(request["timeout"]) if request.get("index")
                  else Wheelhouse(request["max_metadata_bytes"]))
        resolved = resolve(request["requirements"], source)
        if len(resolved) > request["max_packages"]:
            raise Refused("the packages need %d distributions with their dependencies (%s), over "
                          "MCP_EXEC_MAX_PACKAGES, at most %d" % (
                              len(resolved), ", ".join(e["name"] for e in resolved),
                              request["max_packages"]))
        total = 0
        files = []
        for entry in resolved:
            if not re.match(r"^[A-Za-z0-9._+!-]+\.whl$", entry["file"]):
                raise Refused('"%s" (%s) is not a wheel: mcp-exec installs wheels only'
                              % (entry["name"], entry["file"]))
            path = source.local(entry)
            total += check_wheel(entry, path, request["max_bytes"], request["max_metadata_bytes"])
            if total > request["max_bytes"]:
                raise Refused("the packages unpack to more than %d bytes "
                              "(MCP_EXEC_PACKAGE_MAX_BYTES)" % request["max_bytes"])
            entry["sha256"] = sha256_of(path)
            files.append(path)
        if resolved:
            install(files)
    except Refused as e:
        json.dump({"error": str(e)}, sys.stdout)
        return
    json.dump({"packages": resolved}, sys.stdout)


main()
