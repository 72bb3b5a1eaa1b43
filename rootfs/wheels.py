# An environment's wheels (docs/environments.md, "Wheels"), in two steps of tools/build-rootfs.
# Both use pypa's "installer" and "packaging" (Debian's python3-installer and python3-packaging).
#
#   python3 -I wheels.py check DIR ENTRY...   on the build machine, before anything is built:
#       each ENTRY ("FILE" or "FILE sha256=HEX", a line of the recipe's wheels.txt) names a
#       wheel in DIR. Checks its name, its pinned digest, its RECORD (every file listed, with
#       its digest), its paths (relative, no "..", no links, devices or setuid bits, at most
#       MAX_UNPACKED in all), what it would install where (site-packages, /usr/local/bin and
#       /usr/local/share only; no .pth file or sitecustomize, which would run code at every
#       interpreter start; script names that are plain file names), its metadata (requirements
#       that parse), and that no two wheels are the same distribution. Reads the archives only:
#       nothing in a wheel runs, here or later.
#   python3 -I wheels.py install FILE...   in the built tree (chroot), before finalize, with
#       installer and packaging copied into lib/ beside this file. For each wheel: its tags and
#       its Requires-Python against the tree's own interpreter; the install into the tree's site
#       directory (/usr/local/lib/python3.X/dist-packages; bytecode is finalize's); what it
#       installed checked again (under its roots, no command of the tree's shadowed). Then
#       every installed wheel's requirements against what the tree holds. Every problem is
#       reported, a line each, before it fails; the build then throws the tree away.
import base64
import binascii
import configparser
import csv
import hashlib
import io
import re
import stat
import sys
import zipfile
import zlib
from email.parser import HeaderParser
from pathlib import Path

# A wheel holding more than this, unpacked, is refused before anything is read whole.
MAX_UNPACKED = 2 << 30
SIGNATURES = ("RECORD.jws", "RECORD.p7s")
# What a script may be called: a file name in /usr/local/bin, nothing more.
SCRIPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
# Files that Python's site module runs or imports at every interpreter start.
SITE_HOOKS = re.compile(r"(.*\.pth|sitecustomize\.py|usercustomize\.py)")
# The .data/ directories a wheel may install from; "data" only below share/.
DATA_SCHEMES = ("purelib", "platlib", "scripts", "data")
# The archive, zlib, base64, text and packaging errors a broken wheel raises (ValueError
# covers packaging's InvalidWheelFilename, InvalidVersion and InvalidRequirement).
UNREADABLE = (zipfile.BadZipFile, zlib.error, binascii.Error, UnicodeDecodeError, ValueError,
              NotImplementedError, RuntimeError, EOFError, OSError, configparser.Error,
              AssertionError)


class Refused(Exception):
    pass


def sha256_of(stream):
    digest = hashlib.sha256()
    for block in iter(lambda: stream.read(1 << 20), b""):
        digest.update(block)
    return digest


def record_rows(text):
    """RECORD's (path, hash) pairs: a CSV file, as the wheel format says."""
    return [(row[0], row[1] if len(row) > 1 else "") for row in csv.reader(io.StringIO(text)) if row]


def check_member(info):
    name = info.filename
    parts = name.rstrip("/").split("/")
    if (name.startswith("/") or "\\" in name or "\0" in name
            or any(p in ("", ".", "..") for p in parts)):
        raise Refused(f"path '{name}' leaves the install directory or is not a plain relative path")
    mode = info.external_attr >> 16
    if mode:
        kind = stat.S_IFMT(mode)
        if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
            raise Refused(f"'{name}' is not a regular file or directory (mode {mode:o})")
        if mode & (stat.S_ISUID | stat.S_ISGID):
            raise Refused(f"'{name}' has the setuid or setgid bit")


def check_destination(member, data_dir):
    """Where the member would go is allowed: refuses what would run at start or escape."""
    parts = member.split("/")
    if parts[0] == data_dir:
        if len(parts) < 3 or parts[1] not in DATA_SCHEMES:
            raise Refused(f"'{member}': a wheel may install only {', '.join(DATA_SCHEMES)} "
                          "from its .data directory")
        if parts[1] == "data" and parts[2] != "share":
            raise Refused(f"'{member}': .data/data may install only below share/ (/usr/local/share)")
        if parts[1] == "scripts" and (len(parts) != 3 or not SCRIPT_NAME.fullmatch(parts[2])):
            raise Refused(f"'{member}': a script must be a plain file name")
        if parts[1] in ("purelib", "platlib"):
            parts = parts[2:]
        else:
            return
    if len(parts) == 1 and SITE_HOOKS.fullmatch(parts[0]):
        raise Refused(f"'{member}' would run at every start of Python (a .pth file or "
                      "sitecustomize): refused")


def check_wheel(path, pinned):
    """The wheel's distribution name (normalized) and its sha256; Refused names what is wrong."""
    from installer.utils import parse_entrypoints
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.utils import canonicalize_name, parse_wheel_filename

    name, version, _, _ = parse_wheel_filename(path.name)
    with path.open("rb") as stream:
        digest = sha256_of(stream).hexdigest()
    if pinned is not None and digest != pinned:
        raise Refused(f"sha256 is {digest}, wheels.txt pins {pinned}")
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        unpacked = sum(i.file_size for i in infos)
        if unpacked > MAX_UNPACKED:
            raise Refused(f"{unpacked} bytes unpacked, more than {MAX_UNPACKED}")
        names = [i.filename.rstrip("/") for i in infos]
        if len(set(names)) != len(names):
            raise Refused("a path appears twice in the archive")
        for info in infos:
            check_member(info)
        files = {i.filename for i in infos if not i.is_dir()}
        # As the installer counts them: every top-level directory named *.dist-info.
        dist_infos = {n.split("/", 1)[0] for n in names
                      if "/" in n and n.split("/", 1)[0].endswith(".dist-info")}
        dist_infos |= {n for n in names if n.endswith(".dist-info")}
        if len(dist_infos) != 1:
            raise Refused(f"{len(dist_infos)} .dist-info directories, not one")
        dist_info = dist_infos.pop()
        stem = dist_info[:-len(".dist-info")]
        info_name, _, info_version = stem.partition("-")
        if canonicalize_name(info_name) != name or (
                info_version != str(version) and info_version != path.name.split("-")[1]):
            raise Refused(f"{dist_info} does not match the file name")
        for required in ("WHEEL", "METADATA", "RECORD"):
            if f"{dist_info}/{required}" not in files:
                raise Refused(f"no {dist_info}/{required}")
        wheel = HeaderParser().parsestr(archive.read(f"{dist_info}/WHEEL").decode())
        if not (wheel.get("Wheel-Version") or "").startswith("1."):
            raise Refused(f"Wheel-Version '{wheel.get('Wheel-Version')}' is not 1.x")
        listed = dict(record_rows(archive.read(f"{dist_info}/RECORD").decode()))
        unsigned = {f"{dist_info}/RECORD"} | {f"{dist_info}/{s}" for s in SIGNATURES}
        for member in files:
            check_destination(member, f"{stem}.data")
            if member in unsigned:
                continue
            algorithm, _, encoded = listed.get(member, "").partition("=")
            if algorithm not in ("sha256", "sha384", "sha512") or not encoded:
                raise Refused(f"'{member}' is not in RECORD with a sha256, sha384 or sha512 hash")
            expected = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
            with archive.open(member) as stream:
                digest_of_member = hashlib.new(algorithm)
                for block in iter(lambda: stream.read(1 << 20), b""):
                    digest_of_member.update(block)
            if digest_of_member.digest() != expected:
                raise Refused(f"'{member}' does not match its RECORD hash")
        for member in listed:
            if member not in files:
                raise Refused(f"RECORD lists '{member}', which the archive does not hold")
        if f"{dist_info}/entry_points.txt" in files:
            text = archive.read(f"{dist_info}/entry_points.txt").decode()
            for script, _, _, _ in parse_entrypoints(text):
                if not SCRIPT_NAME.fullmatch(script):
                    raise Refused(f"script name '{script}' in entry_points.txt is not a plain "
                                  "file name")
        metadata = HeaderParser().parsestr(archive.read(f"{dist_info}/METADATA").decode())
        for text in metadata.get_all("Requires-Dist") or []:
            Requirement(text)
        if metadata.get("Requires-Python"):
            SpecifierSet(metadata["Requires-Python"])
    return name, digest


def check(directory, entries):
    try:
        import installer.utils  # noqa: F401
        import packaging.utils  # noqa: F401
    except ImportError as e:
        print(f"wheels: {e}: install python3-installer and python3-packaging", file=sys.stderr)
        return 1
    directory = Path(directory)
    problems, seen = [], {}
    for entry in entries:
        fields = entry.split()
        file, pinned = fields[0], None
        bad = [f for f in fields[1:] if not re.fullmatch(r"sha256=[0-9a-f]{64}", f)]
        if bad or len(fields) > 2:
            problems.append(f"{file}: bad field '{(bad or fields[2:])[0]}' in wheels.txt "
                            "(only one sha256=<64 lower-case hex digits>)")
            continue
        if len(fields) == 2:
            pinned = fields[1][len("sha256="):]
        path = directory / file
        if "/" in file or not path.is_file():
            problems.append(f"{file}: no such file in {directory}")
            continue
        try:
            dist, digest = check_wheel(path, pinned)
        except Refused as e:
            problems.append(f"{file}: {e}")
            continue
        except UNREADABLE as e:
            first = (str(e).splitlines() or [""])[0]
            problems.append(f"{file}: refused: {type(e).__name__}: {first}")
            continue
        if pinned is None:
            print(f"wheels: {file} is not pinned; its line would be: {file} sha256={digest}")
        if dist in seen:
            problems.append(f"{file}: the same distribution as {seen[dist]}")
        seen[dist] = file
    for problem in problems:
        print(f"wheel {problem}", file=sys.stderr)
    return 1 if problems else 0


def install(files):
    sys.path.insert(0, str(Path(__file__).resolve().parent / "lib"))
    import importlib.metadata
    import platform
    import sysconfig

    import installer
    from installer.destinations import SchemeDictionaryDestination
    from installer.sources import WheelFile
    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.tags import sys_tags
    from packaging.utils import parse_wheel_filename
    from packaging.version import InvalidVersion

    supported = set(sys_tags())
    python = f"{sys.implementation.name} {platform.python_version()}"
    best = next(iter(sys_tags()))
    scheme = sysconfig.get_paths()
    site = Path(scheme["purelib"]).resolve()
    scripts = Path(scheme["scripts"]).resolve()
    share = (Path(scheme["data"]) / "share").resolve()
    # A wheel's script must not take the name of a command of the tree: /usr/local/bin comes
    # first on the sandbox's PATH.
    commands = {p.name for d in ("/usr/bin", "/bin", "/usr/sbin", "/sbin") if Path(d).is_dir()
                for p in Path(d).iterdir()}

    def placed(dist):
        """What the installed distribution put outside its roots, or in a place it must not."""
        wrong = []
        for file in importlib.metadata.distribution(dist).files or []:
            where = Path(file.locate()).resolve()
            if where.parent == scripts and where.name in commands:
                wrong.append(f"its script {where.name} would shadow the image's command")
            elif where.parent == site and SITE_HOOKS.fullmatch(where.name):
                wrong.append(f"{where} would run at every start of Python")
            elif not any(where.is_relative_to(root) for root in (site, scripts, share)):
                wrong.append(f"{where} is outside {site}, {scripts} and {share}")
        return wrong

    problems, installed = [], []
    for file in files:
        path = Path(file)
        try:
            dist, version, _, tags = parse_wheel_filename(path.name)
            if not tags & supported:
                wanted = ", ".join(sorted(str(t) for t in tags))
                problems.append(f"{path.name}: built for {wanted}, which this image's Python "
                                f"({python}, e.g. {best}) cannot load")
                continue
            with WheelFile.open(path) as source:
                metadata = HeaderParser().parsestr(
                    source.read_dist_info("METADATA"))
                requires_python = metadata.get("Requires-Python")
                if requires_python and not SpecifierSet(requires_python).contains(
                        platform.python_version(), prereleases=True):
                    problems.append(f"{path.name}: requires Python {requires_python}, this "
                                    f"image's is {platform.python_version()}")
                    continue
                try:
                    shadowed = importlib.metadata.version(dist)
                    print(f"wheels: {dist} {version} shadows the image's {dist} {shadowed}")
                except importlib.metadata.PackageNotFoundError:
                    pass
                scheme_of_wheel = dict(scheme)
                scheme_of_wheel["headers"] = str(
                    Path(scheme["data"]) / "include" / source.distribution)
                destination = SchemeDictionaryDestination(
                    scheme_dict=scheme_of_wheel, interpreter=sys.executable,
                    script_kind="posix", bytecode_optimization_levels=())
                installer.install(source, destination,
                                  {"INSTALLER": b"mcp-exec-build-rootfs\n"})
            importlib.invalidate_caches()
            wrong = placed(str(dist))
            if wrong:
                problems.extend(f"{path.name}: {w}" for w in wrong)
                continue
        except Exception as e:  # each wheel's problem reported, the others still checked
            problems.append(f"{path.name}: {type(e).__name__}: {e}")
            continue
        installed.append((path.name, dist))
        print(f"wheels: installed {dist} {version}")
    for file, dist in installed:
        for text in importlib.metadata.requires(str(dist)) or []:
            try:
                requirement = Requirement(text)
                if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
                    continue
                have = importlib.metadata.version(requirement.name)
            except importlib.metadata.PackageNotFoundError:
                problems.append(f"{file}: requires {requirement}, which the image does not have "
                                "(add its wheel to wheels.txt or its Debian package to packages.txt)")
                continue
            except Exception as e:
                problems.append(f"{file}: requirement '{text}': {type(e).__name__}: {e}")
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
