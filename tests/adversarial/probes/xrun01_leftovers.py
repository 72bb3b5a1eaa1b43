# XRUN-01: what one run leaves behind for the next run of the same server, whichever engine
# made their sandboxes. PARAMS: "phase" ("leave" or "look"), "token" (names everything),
# "marker" (on the daemon's command line), "shm_key" (a SysV key), "hold_s" (seconds "leave"
# waits before it ends, for runs that are to be in flight at once: XRUN-05's burst).
# "leave": files in /tmp, /tmp/outputs and /dev/shm, a POSIX shared memory object, variables set
# with os.environ and os.putenv, a sys.modules entry, a builtins attribute and attributes on
# modules (preloaded ones too), a SysV segment, and a double-forked setsid daemon listening on an
# abstract unix socket; each is checked to be there before the program ends.
# "look": looks for each of them, and reports which interpreter and namespace it ran in.
# mcp-exec: every run has its own sandbox, used once: a fresh interpreter, environment, tmpfs
# /tmp and /dev/shm, IPC and network namespaces; the PID namespace dies with the run's init.
import builtins
import time
import types

import _posixshmem

token = PARAMS["token"]
files = ["/tmp/leftover-" + token, "/tmp/outputs/leftover-" + token,
         "/dev/shm/leftover-" + token]
shm_name = "/leftover-shm-" + token
socket_name = "\0mcp-exec-leftover-" + token
env_names = ["MCP_EXEC_LEFTOVER", "MCP_EXEC_LEFTOVER_PUTENV"]
modules = ["os", "json", "numpy"]
IPC_CREAT = 0o1000
libc.getenv.restype = ctypes.c_char_p
libc.shmget.restype = ctypes.c_int


def marked():
    """Pids (in this PID namespace) whose command line holds the marker."""
    found = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and PARAMS["marker"] in open("/proc/%s/cmdline" % p).read().split("\0"):
                found.append(int(p))
        except OSError:
            pass
    return found


def shmget(key, flags):
    """shmget(key, 4096, flags): "ok" or its errno name."""
    ctypes.set_errno(0)
    ret = libc.shmget(ctypes.c_int(key), ctypes.c_size_t(4096), ctypes.c_int(flags))
    return errname(ctypes.get_errno()) if ret == -1 else "ok"


def leave():
    for path in files:
        observe("write " + path, attempt(lambda: open(path, "w").write(token)))
    fd = value(_posixshmem.shm_open, shm_name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    observe("shm_open " + shm_name, "ok" if isinstance(fd, int) else fd)
    if isinstance(fd, int):
        os.write(fd, token.encode())
        os.close(fd)
    os.environ[env_names[0]] = token
    os.putenv(env_names[1], token)
    for name in env_names:
        observe("getenv " + name, (libc.getenv(name.encode()) or b"").decode() == token)
    sys.modules["leftover"] = types.ModuleType("leftover")
    builtins.leftover = token
    for name in modules:
        setattr(__import__(name), "leftover", token)
    observe("shmget key", shmget(PARAMS["shm_key"], IPC_CREAT | 0o600))
    start_daemon()
    deadline = time.time() + 5
    while connect_unix(socket_name) != "ok" and time.time() < deadline:
        time.sleep(0.02)
    observe("connect to the daemon's socket", connect_unix(socket_name))
    observe("daemons running", len(marked()))
    observe("pid", os.getpid())
    identity()
    time.sleep(PARAMS.get("hold_s", 0))


# The daemon: double fork, setsid, signals ignored, its own interpreter (with the marker as an
# argument, for the host to look for), holding the abstract socket.
DAEMON = """
import signal, socket, sys, time
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_IGN)
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind("\\0" + sys.argv[1])
listener.listen(8)
time.sleep(600)
"""


def start_daemon():
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                devnull = os.open("/dev/null", os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                os.execv(sys.executable,
                         [sys.executable, "-c", DAEMON, socket_name[1:], PARAMS["marker"]])
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def look():
    for path in files:
        if observe("read " + path, attempt(lambda: open(path).read())) == "ok":
            escaped("found the previous run's " + path)
    observe("/tmp/outputs", sorted(os.listdir("/tmp/outputs")))
    observe("/dev/shm", sorted(os.listdir("/dev/shm")))
    fd = value(_posixshmem.shm_open, shm_name, os.O_RDWR, 0o600)
    if observe("shm_open " + shm_name, "ok" if isinstance(fd, int) else fd) == "ok":
        escaped("opened the previous run's POSIX shared memory")
    for name in env_names:
        found = observe("getenv " + name, (libc.getenv(name.encode()) or b"").decode())
        if found:
            escaped("the previous run's variable %s=%s" % (name, found))
    if observe("token in /proc/self/environ", token in open("/proc/self/environ").read()):
        escaped("the previous run's token is in the environment")
    observe("environment", sorted(os.environ))
    try:
        import leftover  # noqa: F401
        observe("import leftover", "ok")
        escaped("the previous run's sys.modules entry")
    except ImportError as e:
        observe("import leftover", type(e).__name__)
    if observe("builtins.leftover", hasattr(builtins, "leftover")):
        escaped("the previous run's builtins attribute")
    for name in modules:
        if observe(name + ".leftover", hasattr(__import__(name), "leftover")):
            escaped("the previous run's attribute on " + name)
    if observe("shmget key", shmget(PARAMS["shm_key"], 0)) == "ok":
        escaped("the previous run's SysV segment")
    observe("/proc/sysvipc/shm rows", len(open("/proc/sysvipc/shm").readlines()) - 1)
    if observe("connect to the daemon's socket", connect_unix(socket_name)) == "ok":
        escaped("the previous run's daemon answers on its socket")
    observe("/proc/net/unix rows", len(open("/proc/net/unix").readlines()) - 1)
    if observe("daemons running", len(marked())):
        escaped("the previous run's daemon runs here")
    observe("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
    observe("pid", os.getpid())
    identity()


leave() if PARAMS["phase"] == "leave" else look()
report()
