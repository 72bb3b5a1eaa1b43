# FS-07: writes to /proc/sys (core_pattern: a host helper run as root on the next crash),
# /proc/sysrq-trigger and the other kernel knobs in /proc (runc CVE-2019-16884, CVE-2025-52881).
# mcp-exec: /proc/sys, sysrq-trigger, irq, bus and fs (Docker's ReadonlyPaths) are read-only
# bind mounts (EROFS; O_TRUNC checks the mount before the file's permissions). Files are only
# opened for writing, never written: an open that succeeds proves the hole without changing the
# host.
def open_for_write(path):
    os.close(os.open(path, os.O_WRONLY | os.O_TRUNC))


for path in ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
             "/proc/sys/kernel/hostname", "/proc/sys/vm/drop_caches",
             "/proc/sys/user/max_user_namespaces", "/proc/sysrq-trigger",
             "/proc/irq/default_smp_affinity"):
    if not os.path.exists(path):
        observe(path, "absent")
        continue
    result = observe(path, attempt(open_for_write, path))
    if result == "ok":
        escaped("opened %s for writing" % path)
# Docker's ReadonlyPaths, each a read-only mount (statvfs's ST_RDONLY), whatever they hold.
for path in ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"):
    if not os.path.exists(path):
        observe("mount of " + path, "absent")
    elif os.statvfs(path).f_flag & os.ST_RDONLY:
        observe("mount of " + path, "read-only")
    else:
        observe("mount of " + path, "writable")
        escaped("%s is on a writable mount" % path)
observe("core_pattern", open("/proc/sys/kernel/core_pattern").read().strip())
escalate()
result = observe("after escalation: /proc/sys/kernel/core_pattern",
                 attempt(open_for_write, "/proc/sys/kernel/core_pattern"))
if result == "ok":
    escaped("opened /proc/sys/kernel/core_pattern for writing after escalation")
report()
