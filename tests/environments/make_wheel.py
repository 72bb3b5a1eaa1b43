# Writes a small wheel for the environments suite's wheel cases, byte for byte the same on
# every run (fixed timestamps), so that a recipe naming it keeps its hash:
#
#   python3 make_wheel.py DIR NAME VERSION TAGS [--requires REQ]... [--flaw FLAW]
#
# TAGS is PYTHON-ABI-PLATFORM (py3-none-any). The wheel holds the package NAME, whose
# __init__.py sets VALUE = "NAME VERSION", a console script NAME-hello, and a valid RECORD.
# FLAW makes it one a build must refuse: dotdot (a path with ".."), symlink (a member that is a
# symbolic link), setuid (a member with the setuid bit), record (a file whose digest differs
# from RECORD's). Prints the wheel's path.
import argparse
import base64
import hashlib
import zipfile
from pathlib import Path

STAMP = (2020, 1, 1, 0, 0, 0)


def digest(data):
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("name")
    parser.add_argument("version")
    parser.add_argument("tags")
    parser.add_argument("--requires", action="append", default=[])
    parser.add_argument("--flaw", choices=["dotdot", "symlink", "setuid", "record"])
    args = parser.parse_args()

    dist_info = f"{args.name}-{args.version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: {args.name}\nVersion: {args.version}\n"
                + "".join(f"Requires-Dist: {r}\n" for r in args.requires))
    files = {
        f"{args.name}/__init__.py": f'VALUE = "{args.name} {args.version}"\n'.encode(),
        f"{args.name}/hello.py": b"def main():\n    print('hello')\n",
        f"{dist_info}/METADATA": metadata.encode(),
        f"{dist_info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: make_wheel\n"
                               f"Root-Is-Purelib: true\nTag: {args.tags}\n").encode(),
        f"{dist_info}/entry_points.txt":
            f"[console_scripts]\n{args.name}-hello = {args.name}.hello:main\n".encode(),
        f"{dist_info}/top_level.txt": f"{args.name}\n".encode(),
    }
    modes = {path: 0o100644 for path in files}
    if args.flaw == "dotdot":
        files[f"{args.name}/../../escape.py"] = b"x = 1\n"
    elif args.flaw == "symlink":
        files[f"{args.name}/link.py"] = b"/etc/passwd"
        modes[f"{args.name}/link.py"] = 0o120777
    elif args.flaw == "setuid":
        modes[f"{args.name}/hello.py"] = 0o104755
    record = "".join(f"{path},{digest(data)},{len(data)}\n" for path, data in files.items())
    record += f"{dist_info}/RECORD,,\n"
    if args.flaw == "record":
        files[f"{args.name}/__init__.py"] = b'VALUE = "changed after RECORD"\n'
    files[f"{dist_info}/RECORD"] = record.encode()

    out = Path(args.dir) / f"{args.name}-{args.version}-{args.tags}.whl"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, STAMP)
            info.external_attr = modes.get(path, 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    print(out)


if __name__ == "__main__":
    main()
