# Builds the wheelhouses of the packages suite (tests/packages/check) and of the interop test
# (tests/interop/test/packages.test.mjs), byte for byte the same on every run (fixed timestamps):
#
#   /usr/bin/python3 make_wheels.py DIR [--good-only]
#
# Standard library only. Writes, below DIR:
#
#   good/           what a server offers in the good-path cases:
#     mcpx-hello 1.0 and 2.0 (mcpx_hello.VALUE is "hello 1.0" or "hello 2.0"),
#     the chain mcpx-a -> mcpx-b -> mcpx-c, the cycle mcpx-cyc1 <-> mcpx-cyc2,
#     mcpx-boom requiring the 40 wheels mcpx-boom-dep-00 .. mcpx-boom-dep-39 (41 in the set),
#     mcpx-np99 (requires numpy>=99), mcpx-usesnp (requires numpy>=1.20, which the image meets),
#     mcpx-win (only a win_amd64 wheel), mcpx-py27 (only a cp27 wheel),
#     mcpx-src-1.0.tar.gz (an sdist, no wheel), MCPX_Odd.Name (mcpx_odd_name-1.0-...whl),
#     mcpx-pth (mcpx_pth.pth: import os; os.environ["MCPX_PTH"]="1", and MCPX_PTH_FD5 whether
#       descriptor 5, a warm sandbox's start socket, was open when it ran),
#     mcpx-conc-root, mcpx-conc-user (a set of their own for each concurrency case),
#     mcpx-fresh-N (N < 8: small sets nothing else asks for, for "the next install still works").
#   hostile/NAME/   one wheelhouse per hostile wheel, each also holding mcpx-hello 1.0 and the
#                   mcpx-fresh-N wheels:
#     dotdot   mcpx-evil-dotdot: a member ../x (path traversal)
#     abs      mcpx-evil-abs: a member /etc/x (an absolute path)
#     symlink  mcpx-evil-symlink: a member that is a symbolic link (S_IFLNK in external_attr)
#     bomb     mcpx-evil-bomb: 10 members of 1 GiB of zeros each (10 GiB) in about 10 MB
#     bigmeta  mcpx-evil-bigmeta: a METADATA of 100 MB
#
# With --good-only only good/ is written (the interop test's, a second or so). Prints DIR.
import argparse
import base64
import hashlib
import io
import shutil
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path

STAMP = (2020, 1, 1, 0, 0, 0)
BOOM_DEPS = 40
FRESH = 8
GIB = 1 << 30
BOMB_MEMBERS = 10
BIG_METADATA = 100 * 1000 * 1000


def record_digest(data):
    raw = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def module_name(name):
    return name.lower().replace("-", "_").replace(".", "_")


def wheel_files(name, version, tags, requires=(), module_text=None, extra=None):
    """The members of a wheel (path -> bytes, in order) without its RECORD; `extra` adds members
    or replaces one in its place."""
    mod = module_name(name)
    dist_info = f"{mod}-{version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                + "".join(f"Requires-Dist: {r}\n" for r in requires))
    files = {
        f"{mod}/__init__.py": (module_text or f'VALUE = "{mod} {version}"\n').encode(),
        f"{dist_info}/METADATA": metadata.encode(),
        f"{dist_info}/WHEEL": (f"Wheel-Version: 1.0\nGenerator: mcpx make_wheels\n"
                               f"Root-Is-Purelib: true\nTag: {tags}\n").encode(),
        f"{dist_info}/top_level.txt": f"{mod}\n".encode(),
    }
    files.update(extra or {})
    return files, dist_info


def add_record(files, dist_info, more=""):
    """Adds RECORD to files: a line for each member, then `more` (lines for members written
    apart), then RECORD's own line."""
    record = "".join(f"{p},{record_digest(d)},{len(d)}\n" for p, d in files.items())
    record += more
    record += f"{dist_info}/RECORD,,\n"
    files[f"{dist_info}/RECORD"] = record.encode()


def write_wheel(directory, name, version, tags="py3-none-any", requires=(), module_text=None,
                extra=None, modes=None):
    """A wheel with a RECORD that lists every member (a bad one too, as a real wheel would);
    modes maps member paths to st_mode values."""
    files, dist_info = wheel_files(name, version, tags, requires, module_text, extra)
    add_record(files, dist_info)
    out = Path(directory) / f"{module_name(name)}-{version}-{tags}.whl"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, STAMP)
            # ZipInfo keeps a leading "/" on Linux; make sure, as the hostile abs case needs it.
            info.filename = path
            info.external_attr = (modes or {}).get(path, 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return out


def write_sdist(directory, name, version):
    """An sdist (PKG-INFO, setup.py, the module): what --only-binary :all: must never build."""
    base = f"{name}-{version}"
    members = {
        f"{base}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{base}/setup.py": (f"from setuptools import setup\nsetup(name={name!r}, "
                             f"version={version!r}, py_modules=['mcpx_src'])\n").encode(),
        f"{base}/mcpx_src.py": b'raise SystemExit("an sdist was built")\n',
    }
    out = Path(directory) / f"{base}.tar.gz"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data in members.items():
            info = tarfile.TarInfo(path)
            info.size, info.mtime, info.mode = len(data), 1577836800, 0o644
            tar.addfile(info, io.BytesIO(data))
    # gzip with a fixed mtime, so that the bytes are the same on every run.
    import gzip
    with open(out, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out


def good(directory):
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    for version in ("1.0", "2.0"):
        write_wheel(d, "mcpx-hello", version, module_text=f'VALUE = "hello {version}"\n')
    write_wheel(d, "mcpx-a", "1.0", requires=["mcpx-b>=1.0"])
    write_wheel(d, "mcpx-b", "1.0", requires=["mcpx-c"])
    write_wheel(d, "mcpx-c", "1.0")
    write_wheel(d, "mcpx-cyc1", "1.0", requires=["mcpx-cyc2"])
    write_wheel(d, "mcpx-cyc2", "1.0", requires=["mcpx-cyc1"])
    deps = [f"mcpx-boom-dep-{i:02d}" for i in range(BOOM_DEPS)]
    for dep in deps:
        write_wheel(d, dep, "1.0")
    write_wheel(d, "mcpx-boom", "1.0", requires=deps)
    write_wheel(d, "mcpx-np99", "1.0", requires=["numpy>=99"])
    write_wheel(d, "mcpx-usesnp", "1.0", requires=["numpy>=1.20"],
                module_text='import numpy\nVALUE = "usesnp " + numpy.__version__\n')
    write_wheel(d, "mcpx-win", "1.0", tags="py3-none-win_amd64")
    write_wheel(d, "mcpx-py27", "1.0", tags="cp27-cp27mu-manylinux1_x86_64")
    write_sdist(d, "mcpx-src", "1.0")
    write_wheel(d, "MCPX_Odd.Name", "1.0")
    write_wheel(d, "mcpx-pth", "1.0", extra={
        "mcpx_pth.pth": b'import os; os.environ["MCPX_PTH"]="1"; '
                        b'os.environ["MCPX_PTH_FD5"]=str(os.path.exists("/proc/self/fd/5"))\n'})
    for who in ("root", "user"):
        write_wheel(d, f"mcpx-conc-{who}", "1.0", requires=[f"mcpx-conc-{who}-dep"])
        write_wheel(d, f"mcpx-conc-{who}-dep", "1.0")
    fresh(d)


def fresh(d):
    for i in range(FRESH):
        write_wheel(d, f"mcpx-fresh-{i}", "1.0")


# --- hostile ------------------------------------------------------------------------------------

def hostile_simple(directory, flaw):
    """dotdot, abs, symlink: a wheel whose RECORD lists the bad member, as a real one would."""
    name = f"mcpx-evil-{flaw}"
    mod = module_name(name)
    extra, modes = {}, {}
    if flaw == "dotdot":
        extra["../x"] = b"escaped = True\n"
    elif flaw == "abs":
        extra["/etc/x"] = b"escaped = True\n"
    elif flaw == "symlink":
        extra[f"{mod}/link"] = b"/etc/shadow"
        modes[f"{mod}/link"] = 0o120777
    out = write_wheel(directory, name, "1.0", extra=extra, modes=modes)
    check = zipfile.ZipFile(out).namelist()
    assert all(p in check for p in extra), (out, check)
    return out


def deflate_zeros(size, chunk=1 << 24):
    """Raw deflate of `size` zero bytes, with their CRC-32 and SHA-256."""
    comp = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    zeros = bytes(chunk)
    out, crc, sha = [], 0, hashlib.sha256()
    left = size
    while left:
        n = min(chunk, left)
        block = zeros if n == chunk else bytes(n)
        out.append(comp.compress(block))
        crc = zlib.crc32(block, crc)
        sha.update(block)
        left -= n
    out.append(comp.flush())
    return b"".join(out), crc, sha


def raw_zip(out, members):
    """A zip from (name, method, crc, compressed, size) members: zipfile cannot write members
    compressed ahead of time, which the bomb needs (each 1 GiB member is deflated once)."""
    central, offset = [], 0
    dos_time, dos_date = 0, (2020 - 1980) << 9 | 1 << 5 | 1
    with open(out, "wb") as f:
        for name, method, crc, data, size in members:
            encoded = name.encode()
            header = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, dos_time,
                                 dos_date, crc, len(data), size, len(encoded), 0)
            f.write(header + encoded)
            f.write(data)
            central.append(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 0x0314, 20, 0,
                                       method, dos_time, dos_date, crc, len(data), size,
                                       len(encoded), 0, 0, 0, 0, 0o100644 << 16, offset)
                           + encoded)
            offset += len(header) + len(encoded) + len(data)
        cd = b"".join(central)
        f.write(cd)
        f.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members),
                            len(cd), offset, 0))


def hostile_bomb(directory):
    name, mod = "mcpx-evil-bomb", "mcpx_evil_bomb"
    files, dist_info = wheel_files(name, "1.0", "py3-none-any")
    blob, crc, sha = deflate_zeros(GIB)
    big_digest = "sha256=" + base64.urlsafe_b64encode(sha.digest()).decode().rstrip("=")
    big = [f"{mod}/zeros{i}.bin" for i in range(BOMB_MEMBERS)]
    add_record(files, dist_info, "".join(f"{p},{big_digest},{GIB}\n" for p in big))
    members = []
    for path, data in files.items():
        comp = zlib.compressobj(9, zlib.DEFLATED, -15)
        members.append((path, 8, zlib.crc32(data), comp.compress(data) + comp.flush(), len(data)))
    # The big members go before RECORD's place would not matter; put them after the package.
    members[1:1] = [(p, 8, crc, blob, GIB) for p in big]
    out = Path(directory) / f"{mod}-1.0-py3-none-any.whl"
    raw_zip(out, members)
    with zipfile.ZipFile(out) as z:
        assert sum(i.file_size for i in z.infolist()) >= BOMB_MEMBERS * GIB
    return out


def hostile_bigmeta(directory):
    name, mod = "mcpx-evil-bigmeta", "mcpx_evil_bigmeta"
    line = b"Description: " + b"x" * 80 + b"\n"
    head = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode()
    filler = b"Classifier: " + b"y" * 87 + b"\n"  # 100 bytes a line
    body = head + filler * ((BIG_METADATA - len(head) - len(line)) // len(filler)) + line
    body += b"z" * (BIG_METADATA - len(body))
    assert len(body) == BIG_METADATA
    # wheel_files puts the replaced METADATA where its own would be.
    return write_wheel(directory, name, "1.0", extra={f"{mod}-1.0.dist-info/METADATA": body})


HOSTILE = {
    "dotdot": lambda d: hostile_simple(d, "dotdot"),
    "abs": lambda d: hostile_simple(d, "abs"),
    "symlink": lambda d: hostile_simple(d, "symlink"),
    "bomb": hostile_bomb,
    "bigmeta": hostile_bigmeta,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--good-only", action="store_true")
    args = parser.parse_args()
    root = Path(args.dir)
    good(root / "good")
    if not args.good_only:
        for flaw, make in HOSTILE.items():
            d = root / "hostile" / flaw
            d.mkdir(parents=True, exist_ok=True)
            make(d)
            shutil.copy(root / "good" / "mcpx_hello-1.0-py3-none-any.whl", d)
            fresh(d)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    root.chmod(0o755)
    print(root)


if __name__ == "__main__":
    main()
