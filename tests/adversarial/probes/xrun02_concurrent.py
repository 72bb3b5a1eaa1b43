# XRUN-02: two runs of one server at the same time look for each other. PARAMS: "self" and
# "other" (the two runs' names), "token", "shm_keys" ({name: SysV key}), "window" (seconds),
# "host_pids" (the server and, in the pool, its waiting sandboxes' processes: the other run's
# processes among them as the host numbers them), "scan" ([[first, last], ...]: pids to kill).
# Each run puts up what the other will look for (an abstract unix socket listening, a file in
# /tmp and /dev/shm, a SysV segment), waits `window` seconds so that both are up, then looks
# for the other's and sends SIGKILL to every pid it does not own, then stays up `window` seconds
# more while the other looks. The times (CLOCK_MONOTONIC, the host's: no time namespace) let
# the caller check that each looked while the other was up.
# mcp-exec: each run has its own PID, network, IPC and mount namespaces.
import signal
import socket
import time

token, me, other = PARAMS["token"], PARAMS["self"], PARAMS["other"]
IPC_CREAT = 0o1000
libc.shmget.restype = ctypes.c_int


def name(run):
    return "\0mcp-exec-xrun-%s-%s" % (token, run)


def shmget(key, flags):
    ctypes.set_errno(0)
    ret = libc.shmget(ctypes.c_int(key), ctypes.c_size_t(4096), ctypes.c_int(flags))
    return errname(ctypes.get_errno()) if ret == -1 else "ok"


def now():
    return time.clock_gettime(time.CLOCK_MONOTONIC)


listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(name(me))
listener.listen(8)
for top in ("/tmp", "/dev/shm"):
    open("%s/xrun-%s-%s" % (top, token, me), "w").write(token)
observe("shmget own key", shmget(PARAMS["shm_keys"][me], IPC_CREAT | 0o600))
observe("up at", now())
time.sleep(PARAMS["window"])

observe("looked from", now())
identity()
own = observe("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
observe("connect own socket", connect_unix(name(me)))
if observe("connect other's socket", connect_unix(name(other))) != "ECONNREFUSED":
    escaped("reached the other run's abstract socket")
for top in ("/tmp", "/dev/shm"):
    path = "%s/xrun-%s-%s" % (top, token, other)
    if observe("read " + path, attempt(lambda: open(path).read())) != "ENOENT":
        escaped("the other run's " + path)
if observe("shmget other's key", shmget(PARAMS["shm_keys"][other], 0)) != "ENOENT":
    escaped("the other run's SysV segment")
observe("/proc/net/unix rows", len(open("/proc/net/unix").readlines()) - 1)
observe("/proc/sysvipc/shm rows", len(open("/proc/sysvipc/shm").readlines()) - 1)
visible = {p: attempt(os.kill, p, 0) for p in PARAMS["host_pids"] if p not in own}
observe("signal 0 to host pids", sorted(set(visible.values())))
for pid, result in visible.items():
    if result != "ESRCH":
        escaped("host pid %d answers signal 0 (%s)" % (pid, result))
killed = {}
for first, last in PARAMS["scan"]:
    for p in range(first, last + 1):
        if p not in own:
            result = attempt(os.kill, p, signal.SIGKILL)
            killed.setdefault(result, []).append(p)
observe("SIGKILL to pids not its own", sorted(killed))
if set(killed) - {"ESRCH"}:
    escaped("SIGKILL reached pids %s" % {k: v[:10] for k, v in killed.items() if k != "ESRCH"})
observe("pids after", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
observe("looked until", now())
time.sleep(PARAMS["window"])
observe("connect own socket at the end", connect_unix(name(me)))
observe("down at", now())
report()
