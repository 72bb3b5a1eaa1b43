# FS-03: the host's tree reachable after pivot_root (old root not detached, host mounts left,
# "cd .." out of the root). mcp-exec: pivot_root then umount2(MNT_DETACH) of the old root; the
# only mounts are the rootfs, /proc, /dev and /tmp with what is under them.
mounts = [line.split()[4] for line in open("/proc/self/mountinfo")]
observe("mount points", mounts)
for m in mounts:
    if m not in ("/", "/tmp") and not m.startswith(("/proc", "/dev", "/tmp/")):
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
