# XRUN-03: a run hunts for the sandboxes the server keeps ready for the next runs (the pool's
# waiting interpreters, each with the preloads imported and a start socket to its supervisor).
# PARAMS: "phase" ("hunt", or "next": a later run that imports PARAMS["modules"] and looks for
# what the hunt left in /dev/shm), "host_pids" (the waiting sandboxes' inits and interpreters and
# the server, as the host numbers them), "scan" ([[first, last], ...]: pids to probe with
# signal 0), "token".
# It looks for other Python processes in /proc, signals, pidfd_open, ptrace and
# process_vm_readv of the host's pids, kill(-1, SIGKILL), the start socket (no path: a
# socketpair; fd 5 in the interpreter until the program starts), and /dev/shm.
# mcp-exec: the run's PID namespace holds only its init and itself; ptrace and process_vm_readv
# are denied by seccomp; fd 5 is closed before the program's first line; /dev/shm is the run's
# own tmpfs. The caller checks from the host that the waiting sandboxes were untouched.

PTRACE_ATTACH = 16
token = PARAMS["token"]


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def cmdline(pid):
    try:
        return open("/proc/%s/cmdline" % pid).read().split("\0")
    except OSError as e:
        return errname(e.errno)


if PARAMS["phase"] == "next":
    for module in PARAMS["modules"]:
        __import__(module)
    path = "/dev/shm/hunt-" + token
    if observe("read " + path, attempt(lambda: open(path).read())) != "ENOENT":
        escaped("found the hunt's " + path)
    identity()
    report()
    sys.exit(0)

identity()
own = observe("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
pythons = [p for p in own if isinstance(cmdline(p), list) and "python" in cmdline(p)[0]]
observe("python processes", pythons)
if pythons != [os.getpid()]:
    escaped("python processes other than the program: %s" % pythons)
observe("own pid", os.getpid())
observe("/proc/1/fd", attempt(os.listdir, "/proc/1/fd"))

hosts = [p for p in PARAMS["host_pids"] if p not in own]
results = {"signal 0": {}, "pidfd_open": {}, "ptrace attach": {}, "process_vm_readv": {}}
buf = ctypes.create_string_buffer(64)
local = IoVec(ctypes.cast(buf, ctypes.c_void_p), 64)
remote = IoVec(0x400000, 64)
for p in hosts:
    results["signal 0"][p] = attempt(os.kill, p, 0)
    fd = value(os.pidfd_open, p)
    results["pidfd_open"][p] = "ok" if isinstance(fd, int) else fd
    results["ptrace attach"][p] = call("ptrace", PTRACE_ATTACH, p, 0, 0)
    results["process_vm_readv"][p] = call("process_vm_readv", p, ctypes.byref(local), 1,
                                          ctypes.byref(remote), 1, 0)
for what, by_pid in results.items():
    observe(what + " to host pids", sorted(set(by_pid.values())))
    for p, result in by_pid.items():
        if result not in ("ESRCH", "EPERM"):
            escaped("%s of host pid %d: %s" % (what, p, result))
answering = [p for first, last in PARAMS["scan"] for p in range(first, last + 1)
             if p not in own and attempt(os.kill, p, 0) != "ESRCH"]
observe("pids answering in the scan", answering[:20])
for p in answering:
    escaped("pid %d outside the run answers" % p)

fds = {}
for entry in os.listdir("/proc/self/fd"):
    try:
        fds[entry] = os.readlink("/proc/self/fd/" + entry)
    except OSError:
        continue  # the descriptor listdir used, closed by now
observe("fds", sorted(int(fd) for fd in fds))
for fd in fds:
    if int(fd) > 2:
        escaped("fd %s (%s) is open" % (fd, fds[fd]))
for fd in (3, 4, 5):
    observe("fstat fd %d" % fd, attempt(os.fstat, fd))
    observe("send on fd %d" % fd, attempt(os.write, fd, b"G"))
observe("/proc/net/unix rows", len(open("/proc/net/unix").readlines()) - 1)

observe("/dev/shm", sorted(os.listdir("/dev/shm")))
observe("write /dev/shm/hunt", attempt(lambda: open("/dev/shm/hunt-" + token, "w").write(token)))
observe("/dev/shm and /tmp are one mount", os.stat("/dev/shm").st_dev == os.stat("/tmp").st_dev)
roots = {p: attempt(os.listdir, "/proc/%d/root/dev/shm" % p) for p in hosts}
observe("list /proc/<host pid>/root/dev/shm", sorted(set(roots.values())))
for p, result in roots.items():
    if result != "ENOENT":
        escaped("/proc/%d/root/dev/shm: %s" % (p, result))

kill_everything()
observe("pids after kill(-1)", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
report()
