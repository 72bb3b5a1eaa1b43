# LEAK-03: escape the run's cgroup (and its limits) by writing the program's pid into an
# ancestor's cgroup.procs. mcp-exec: a cgroup namespace of its own (every hierarchy reads as
# "/"), and no cgroupfs in the sandbox (ENOENT).
paths = observe("/proc/self/cgroup", sorted({l.strip().split(":", 2)[2] for l in open("/proc/self/cgroup")}))
if paths != ["/"]:
    escaped("the program sees its cgroup path: %s" % paths)
for path in ("/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/../cgroup.procs",
             "/sys/fs/cgroup/memory/cgroup.procs", "/sys/fs/cgroup/pids/cgroup.procs",
             "/sys/fs/cgroup/unified/cgroup.procs"):
    def move():
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)
    result = observe("write " + path, attempt(move))
    if result == "ok":
        escaped("moved itself with " + path)
report()
