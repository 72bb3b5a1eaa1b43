# FS-03: the host's tree reachable after pivot_root (old root not detached, host mounts left,
# "cd .." out of the root). mcp-exec: pivot_root then umount2(MNT_DETACH) of the old root; the
# only mounts are the rootfs, /proc, /dev and /tmp with what is under them, and a run with
# packages (docs/packages.md) has its layer at /usr/lib/mcp-exec/packages, read-only, nosuid,
# nodev.
LAYER = "/usr/lib/mcp-exec/packages"
mountinfo = [line.split() for line in open("/proc/self/mountinfo")]
mounts = [fields[4] for fields in mountinfo]
observe("mount points", mounts)
for fields in mountinfo:
    m, options = fields[4], set(fields[5].split(","))
    if m == LAYER:
        if not {"ro", "nosuid", "nodev"} <= options:
            escaped("the package layer is mounted " + fields[5])
    elif m not in ("/", "/tmp") and not m.startswith(("/proc", "/dev", "/tmp/")):
        escaped("mount point " + m)
os.chdir("/")
for _ in range(8):
    os.chdir("..")
observe("cwd after chdir('..') x8", os.getcwd())
root, parent = os.stat("/"), os.stat("/..")
observe("/.. is /", (root.st_dev, root.st_ino) == (parent.st_dev, parent.st_ino))
observe("list /proc/1/root", attempt(os.listdir, "/proc/1/root"))
observe("list /proc/1/cwd", attempt(os.listdir, "/proc/1/cwd"))
report()
