# /dev/shm: a second writable tmpfs, and so a second place to fill memory. mcp-exec: its own
# tmpfs with size= (64 MiB by default): ENOSPC at the cap. Files of at most 1 MiB each, so that
# a file size limit (EFBIG) is not what stops it. One without a cap is filled up to
# PARAMS["max_bytes"] (128 MiB by default), not further.
limit = PARAMS.get("max_bytes", 128 << 20)
vfs = os.statvfs("/dev/shm")
observe("size", vfs.f_blocks * vfs.f_frsize)
written = 0
chunk = b"\x5a" * (64 << 10)
try:
    while written < limit:
        with open("/dev/shm/fill-%d" % (written >> 20), "ab") as f:
            f.write(chunk)
        written += len(chunk)
    observe("write", "ok")
    escaped("wrote %d MiB to /dev/shm without reaching a cap" % (written >> 20))
except OSError as e:
    observe("write", errname(e.errno))
observe("written", written)
for name in os.listdir("/dev/shm"):
    if name.startswith("fill-"):
        os.unlink("/dev/shm/" + name)
report()
