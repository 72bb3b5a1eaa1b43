# NS-02: join other namespaces with setns(2), through /proc/PID/ns or a pidfd, and see the
# host's processes. mcp-exec: setns is denied by seccomp (EPERM); the PID namespace shows
# only the sandbox's processes, and its init's namespace files are closed to the program
# (EACCES: not dumpable).
pids = observe("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
if len(pids) > 10:
    escaped("%d processes visible" % len(pids))
for ns in ("user", "mnt", "net", "pid", "ipc", "uts", "cgroup"):
    fd = os.open("/proc/self/ns/" + ns, os.O_RDONLY)
    refused("setns " + ns, "setns", fd, 0, also=("EINVAL",))  # EINVAL: already in it
    os.close(fd)
observe("open /proc/1/ns/net", attempt(lambda: os.close(os.open("/proc/1/ns/net", os.O_RDONLY))))
pidfd = value(os.pidfd_open, 1)
observe("pidfd_open 1", "ok" if isinstance(pidfd, int) else pidfd)
if isinstance(pidfd, int):
    refused("setns pidfd of 1", "setns", pidfd, CLONE_NEWNET | CLONE_NEWNS)
report()
