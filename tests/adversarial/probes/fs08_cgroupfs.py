# FS-08: cgroupfs and sysfs writes (cgroup v1 release_agent, CVE-2022-0492; a writable
# /sys/fs/cgroup in rootless runc). mcp-exec: nothing is mounted on /sys (an empty directory of
# the rootfs), and mounting a cgroup hierarchy is denied by seccomp (EPERM). Files are only
# opened for writing, never written.
observe("list /sys", value(lambda: sorted(os.listdir("/sys"))))
observe("list /sys/fs/cgroup", value(lambda: sorted(os.listdir("/sys/fs/cgroup"))))
for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes",
             "/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/release_agent",
             "/sys/kernel/uevent_helper"):
    result = observe("write " + path, attempt(lambda: os.close(os.open(path, os.O_WRONLY))))
    if result == "ok":
        escaped("wrote " + path)
escalate()
# EINVAL: the kernel will not mount that v1 hierarchy here (no such controller, or not from a
# nested namespace): refused all the same.
refused("mount cgroup v1 rdma (release_agent)", "mount", b"cgroup", b"/tmp", b"cgroup", 0, b"rdma",
        also=("EINVAL",))
refused("mount cgroup2", "mount", b"cgroup2", b"/tmp", b"cgroup2", 0, None)
refused("mount sysfs", "mount", b"sysfs", b"/tmp", b"sysfs", 0, None)
report()
