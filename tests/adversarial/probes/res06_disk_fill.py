# RES-06: fill the workspace. mcp-exec: /tmp is a tmpfs with size= (ENOSPC at the cap). Files of
# at most 1 MiB each, so that a file size limit (RLIMIT_FSIZE, EFBIG) is not what stops it. A
# workspace with no cap is filled up to PARAMS["max_bytes"] (128 MiB by default), not further.
limit = PARAMS.get("max_bytes", 128 << 20)
vfs = os.statvfs("/tmp")
observe("size", vfs.f_blocks * vfs.f_frsize)
written = 0
chunk = b"\xa5" * (64 << 10)
os.mkdir("/tmp/fill")
try:
    while written < limit:
        with open("/tmp/fill/%d" % (written >> 20), "ab") as f:
            f.write(chunk)
        written += len(chunk)
    observe("write", "ok")
    escaped("wrote %d MiB without reaching a cap" % (written >> 20))
except OSError as e:
    observe("write", errname(e.errno))
observe("written", written)
for name in os.listdir("/tmp/fill"):
    os.unlink("/tmp/fill/" + name)
report()
