# FS-09: device nodes beyond the minimal set (kmsg, mem, disks, tty), and making new ones with
# mknod. mcp-exec: /dev is a read-only tmpfs with null, zero, full, random, urandom, the fd
# links and /dev/shm; mknod of a device is refused for want of CAP_MKNOD (EPERM), and /dev is
# read-only (EROFS).
import stat

entries = sorted(os.listdir("/dev"))
observe("/dev", entries)
pty = {"tty", "ptmx", "pts", "console", "core"}
minimal = {"null", "zero", "full", "random", "urandom", "fd", "stdin", "stdout", "stderr", "shm"}
for name in entries:
    if name in minimal or name in pty:
        continue
    path = "/dev/" + name
    st = os.lstat(path)
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        escaped("device node /dev/%s (%d:%d)" % (name, os.major(st.st_rdev), os.minor(st.st_rdev)))
for name in ("kmsg", "mem", "kmem", "port", "tty", "console", "vda", "sda", "fuse", "kvm",
             "net/tun", "userfaultfd"):
    result = observe("open /dev/" + name, attempt(lambda: os.close(os.open("/dev/" + name, os.O_RDONLY))))
    if result == "ok" and name not in pty:
        escaped("opened /dev/" + name)
mem = os.makedev(1, 1)  # /dev/mem
for path in ("/tmp/mem", "/dev/shm/mem", "/dev/mem2"):
    result = observe("mknod " + path, attempt(os.mknod, path, 0o600 | stat.S_IFCHR, mem))
    if result == "ok":
        escaped("made a device node " + path)
        result = observe("open " + path, attempt(lambda: os.close(os.open(path, os.O_RDONLY))))
        if result == "ok":
            escaped("opened the made device node " + path)
observe("create /dev/planted", attempt(lambda: os.close(os.open("/dev/planted", os.O_WRONLY | os.O_CREAT))))
report()
