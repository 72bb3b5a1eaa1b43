# An environment's wheels (docs/environments.md, "Wheels"), in two steps of tools/build-rootfs:
#
#   python3 wheels.py check DIR ENTRY...   on the build machine, before anything is built:
#       each ENTRY ("FILE" or "FILE sha256=HEX", a line of the recipe's wheels.txt) names a
#       wheel in DIR; checks its name, its pinned digest, its RECORD (every file listed, with
#       its sha256) and its paths (relative, no "..", no links, devices or setuid bits), and
#       that no two wheels are the same distribution. Reads the archives only: nothing in a
#       wheel runs, here or later. Prints "SHA256  wheels/FILE" a wheel, for the recipe hash.
#   python3 -I wheels.py install FILE...   in the finished tree (chroot), before finalize, with
#       the build machine's pypa "installer" and "packaging" (Debian's python3-installer and
#       python3-packaging) in lib/ beside this file: checks each wheel's tags against the
#       tree's own interpreter, installs the ones that fit into its site directory
#       (/usr/local/lib/python3.X/dist-packages; bytecode is finalize's), then checks every
#       installed wheel's requirements against what the tree holds. Every problem is reported
#       before it fails.
import base64
import hashlib
import re
import stat
import sys
import zipfile
from email.parser import HeaderParser
from pathlib import Path

WHEEL_NAME = re.compile(
    r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._]*[A-Za-z0-9])?)-(?P<version>[A-Za-z0-9_.!+]+)"
    r"(?:-(?P<build>\d[A-Za-z0-9_.]*))?-(?P<tags>[A-Za-z0-9_.]+-[A-Za-z0-9_.]+-[A-Za-z0-9_.]+)"
    r"\.whl$")
SIGNATURES = ("RECORD.jws", "RECORD.p7s")


class Refused(Exception):
    pass


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def record_digest(value):
    """(algorithm, raw digest) of a RECORD hash field "sha256=<urlsafe base64>"."""
    algorithm, _, encoded = value.partition("=")
    if algorithm not in ("sha256", "sha384", "sha512") or not encoded:
        raise Refused(f"RECORD hash '{value}' is not sha256, sha384 or sha512")
    return algorithm, base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))


def check_member(info):
    name = info.filename
    parts = name.rstrip("/").split("/")
    if name.startswith("/") or "\\" in name or any(p in ("", ".", "..") for p in parts):
        raise Refused(f"path '{name}' leaves the install directory or is not a plain relative path")
    mode = info.external_attr >> 16
    if mode:
        kind = stat.S_IFMT(mode)
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            raise Refused(f"'{name}' is not a regular file or directory (mode {mode:o})")
        if mode & (stat.S_ISUID | stat.S_ISGID):
            raise Refused(f"'{name}' has the setuid or setgid bit")


def check_wheel(path, pinned):
    """The wheel's distribution name (normalized) and its sha256; Refused names what is wrong."""
    match = WHEEL_NAME.match(path.name)
    if not match:
        raise Refused("not a wheel file name (NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM.whl)")
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if pinned is not None and digest != pinned:
        raise Refused(f"sha256 is {digest}, wheels.txt pins {pinned}")
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as e:
        raise Refused(f"not a zip archive: {e}") from None
    with archive:
        infos = archive.infolist()
        for info in infos:
            check_member(info)
        files = {i.filename: i for i in infos if not i.is_dir()}
        if len(files) != len([i for i in infos if not i.is_dir()]):
            raise Refused("a path appears twice in the archive")
        dist_info = {n.split("/", 1)[0] for n in files if n.split("/", 1)[0].endswith(".dist-info")}
        if len(dist_info) != 1:
            raise Refused(f"{len(dist_info)} .dist-info directories, not one")
        dist_info = dist_info.pop()
        name, _, version = dist_info[:-len(".dist-info")].partition("-")
        if normalize(name) != normalize(match["name"]) or version != match["version"]:
            raise Refused(f"{dist_info} does not match the file name")
        for required in ("WHEEL", "METADATA", "RECORD"):
            if f"{dist_info}/{required}" not in files:
                raise Refused(f"no {dist_info}/{required}")
        wheel = HeaderParser().parsestr(archive.read(f"{dist_info}/WHEEL").decode())
        if not (wheel.get("Wheel-Version") or "").startswith("1."):
            raise Refused(f"Wheel-Version '{wheel.get('Wheel-Version')}' is not 1.x")
        record = archive.read(f"{dist_info}/RECORD").decode().splitlines()
        listed = {}
        for line in filter(None, record):
            fields = line.rsplit(",", 2)
            if len(fields) != 3:
                raise Refused(f"RECORD line '{line}' is not PATH,HASH,SIZE")
            listed[fields[0].strip('"')] = fields[1]
        unsigned = {f"{dist_info}/RECORD"} | {f"{dist_info}/{s}" for s in SIGNATURES}
        for member in files:
            if member in unsigned:
                continue
            if member not in listed or not listed[member]:
                raise Refused(f"'{member}' is not in RECORD with a hash")
            algorithm, expected = record_digest(listed[member])
            if hashlib.new(algorithm, archive.read(member)).digest() != expected:
                raise Refused(f"'{member}' does not match its RECORD hash")
        for member in listed:
            if member not in files:
                raise Refused(f"RECORD lists '{member}', which the archive does not hold")
    return normalize(match["name"]), digest


def check(directory, entries):
    directory = Path(directory)
    problems, seen = [], {}
    for entry in entries:
        fields = entry.split()
        file, pinned = fields[0], None
        for field in fields[1:]:
            if not re.fullmatch(r"sha256=[0-9a-f]{64}", field) or pinned is not None:
                problems.append(f"{file}: bad field '{field}' in wheels.txt (only sha256=<64 hex>)")
                break
            pinned = field[len("sha256="):]
        if "/" in file or file in (".", ".."):
            problems.append(f"{file}: a file name in {directory}, not a path")
            continue
        path = directory / file
        if not path.is_file():
            problems.append(f"{file}: no such file in {directory}")
            continue
        try:
            dist, digest = check_wheel(path, pinned)
        except Refused as e:
            problems.append(f"{file}: {e}")
            continue
        print(f"{digest}  wheels/{file}")
        if dist in seen:
            problems.append(f"{file}: the same distribution as {seen[dist]}")
        seen[dist] = file
    for problem in problems:
        print(f"wheel {problem}", file=sys.stderr)
    return 1 if problems else 0


def install(files):
    sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
    import importlib.metadata
    import sysconfig

    import installer
    import installer.exceptions
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile
    from packaging.requirements import Requirement
    from packaging.tags import sys_tags
    from packaging.utils import parse_wheel_filename
    from packaging.version import InvalidVersion

    supported = set(sys_tags())
    python = f"{sys.implementation.name} {sys.version_info[0]}.{sys.version_info[1]}"
    best = next(iter(sys_tags()))
    problems, installed = [], []
    for file in files:
        path = Path(file)
        dist, version, _, tags = parse_wheel_filename(path.name)
        if not tags & supported:
            wanted = ", ".join(sorted(str(t) for t in tags))
            problems.append(f"{path.name}: built for {wanted}, which this image's Python "
                            f"({python}, e.g. {best}) cannot load")
            continue
        try:
            shadowed = importlib.metadata.version(dist)
            print(f"wheels: {dist} {version} shadows the image's {dist} {shadowed}")
        except importlib.metadata.PackageNotFoundError:
            pass
        with WheelFile.open(path) as source:
            scheme = sysconfig.get_paths()
            scheme["headers"] = str(Path(sysconfig.get_path("include")) / source.distribution)
            destination = SchemeDictionaryDestination(
                scheme_dict=scheme, interpreter=sys.executable, script_kind="posix",
                bytecode_optimization_levels=())
            try:
                installer.install(source, destination, {"INSTALLER": b"mcp-exec-build-rootfs\n"})
            except (FileExistsError, installer.exceptions.InstallerError) as e:
                problems.append(f"{path.name}: {e}")
                continue
        installed.append((path.name, dist))
        print(f"wheels: installed {dist} {version}")
    importlib.invalidate_caches()
    for file, dist in installed:
        for text in importlib.metadata.requires(str(dist)) or []:
            requirement = Requirement(text)
            if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                continue
            try:
                have = importlib.metadata.version(requirement.name)
            except importlib.metadata.PackageNotFoundError:
                problems.append(f"{file}: requires {requirement}, which the image does not have "
                                "(add its wheel to wheels.txt or its Debian package to packages.txt)")
                continue
            try:
                fits = requirement.specifier.contains(have, prereleases=True)
            except InvalidVersion:
                print(f"wheels: {file}: {requirement.name} {have} is no PEP 440 version: "
                      f"'{requirement}' is not checked")
                continue
            if not fits:
                problems.append(f"{file}: requires {requirement}, the image has {have}")
    for problem in problems:
        print(f"wheel {problem}", file=sys.stderr)
    return 1 if problems else 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "check":
        return check(argv[1], argv[2:])
    if argv and argv[0] == "install":
        return install(argv[1:])
    print("usage: wheels.py check DIR ENTRY... | wheels.py install FILE...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
