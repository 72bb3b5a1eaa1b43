# Writes a small wheel for the environments suite's wheel cases, byte for byte the same on
# every run (fixed timestamps), so that a recipe naming it keeps its hash:
#
#   python3 make_wheel.py DIR NAME VERSION TAGS [--requires REQ]... [--requires-python SPEC]
#                         [--script NAME] [--flaw FLAW]
#
# TAGS is PYTHON-ABI-PLATFORM (py3-none-any). The wheel holds the package NAME, whose
# __init__.py sets VALUE = "NAME VERSION", a console script (--script, default NAME-hello), and
# a valid RECORD. FLAW makes it one a build must refuse: dotdot (a path with ".."), symlink (a
# member that is a symbolic link), setuid (a member with the setuid bit), record (a file whose
# digest differs from RECORD's), crc (a member whose bytes differ from the archive's CRC),
# script (a script name that is a path out of the scripts directory), pth (a .pth file, which
# Python runs at start), datadir (a file for /usr/local/bin through .data/data), headers (a C
# header). Prints the wheel's path.
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
    parser.add_argument("--requires-python")
    parser.add_argument("--script")
    parser.add_argument("--flaw", choices=["dotdot", "symlink", "setuid", "record", "crc",
                                           "script", "pth", "datadir", "headers"])
    args = parser.parse_args()

    dist_info = f"{args.name}-{args.version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: {args.name}\nVersion: {args.version}\n"
                + (f"Requires-Python: {args.requires_python}\n" if args.requires_python else "")
                + "".join(f"Requires-Dist: {r}\n" for r in args.requires))
    script = args.script or f"{args.name}-hello"
    if args.flaw == "script":
        script = "../../../etc/profile.d/evil.sh"
    data = f"{args.name}-{args.version}.data"
    files = {
        f"{args.name}/__init__.py": f'VALUE = "{args.name} {args.version}"\n'.encode(),
        f"{args.name}/hello.py": b"def main():\n    print('hello')\n",
        f"{dist_info}/METADATA": metadata.encode(),
        f"{dist_info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: make_wheel\n"
                               f"Root-Is-Purelib: true\nTag: {args.tags}\n").encode(),
        f"{dist_info}/entry_points.txt":
            f"[console_scripts]\n{script} = {args.name}.hello:main\n".encode(),
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
    elif args.flaw == "pth":
        files[f"{args.name}-start.pth"] = b"import os; os.system('id')\n"
    elif args.flaw == "datadir":
        files[f"{data}/data/bin/python3"] = b"#!/bin/sh\necho shadowed\n"
    elif args.flaw == "headers":
        files[f"{data}/headers/{args.name}.h"] = b"int x;\n"
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
            info.compress_type = zipfile.ZIP_STORED if args.flaw == "crc" else zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    if args.flaw == "crc":
        # The archive's CRC of __init__.py no longer matches its bytes (stored, not deflated).
        raw = out.read_bytes()
        value = f'VALUE = "{args.name} {args.version}"'.encode()
        out.write_bytes(raw.replace(value, value.replace(b"VALUE", b"VALUF"), 1))
    print(out)


if __name__ == "__main__":
    main()
