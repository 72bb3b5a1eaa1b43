# Shared by every probe in this directory: the C++ tests (tests/adversarial) and
# tools/security-compare put this file in front of a probe's own code and run the whole as the
# sandboxed program, with the probe's parameters as a JSON object on stdin.
#
# A probe attacks, records what it saw with observe() (errno names such as "EPERM", or "ok",
# never bare booleans, so that a test can tell which mechanism stopped it), records each attack
# that worked with escaped(), and ends with report(), which prints one JSON object:
#   {"observed": {...}, "escaped": [...]}
# "escaped" empty means that, as far as the program can tell from inside, it was contained; the
# host-side half of a check (a listener that got nothing, a process that survived) is the
# caller's.
import ctypes
import errno
import json
import os
import platform
import sys

PARAMS = json.loads(sys.stdin.read() or "{}")

_OBSERVED = {}
_ESCAPED = []

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

# Syscall numbers: x86_64, then the generic table aarch64 uses. None: no such call there.
_NR = {
    "acct": (163, 89), "add_key": (248, 217), "adjtimex": (159, 171), "bpf": (321, 280),
    "capset": (126, 91), "chroot": (161, 51), "clock_adjtime": (305, 266),
    "clock_settime": (227, 112), "clone": (56, 220), "clone3": (435, 435),
    "delete_module": (176, 106), "fanotify_init": (300, 262), "finit_module": (313, 273),
    "fsconfig": (431, 431), "fsmount": (432, 432), "fsopen": (430, 430), "fspick": (433, 433),
    "getpid": (39, 172), "init_module": (175, 105), "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427), "io_uring_setup": (425, 425), "ioctl": (16, 29),
    "ioperm": (173, None), "iopl": (172, None), "kcmp": (312, 272), "kexec_file_load": (320, 294),
    "kexec_load": (246, 104), "keyctl": (250, 219), "lookup_dcookie": (212, 18),
    "modify_ldt": (154, None), "mount": (165, 40), "mount_setattr": (442, 442),
    "move_mount": (429, 429), "name_to_handle_at": (303, 264), "open_by_handle_at": (304, 265),
    "open_tree": (428, 428), "perf_event_open": (298, 241), "personality": (135, 92),
    "pidfd_getfd": (438, 438), "pivot_root": (155, 41), "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271), "ptrace": (101, 117), "quotactl": (179, 60),
    "quotactl_fd": (443, 443), "reboot": (169, 142), "request_key": (249, 218),
    "setdomainname": (171, 162), "sethostname": (170, 161), "setns": (308, 268),
    "settimeofday": (164, 170), "swapoff": (168, 225), "swapon": (167, 224),
    "syslog": (103, 116), "umount2": (166, 39), "unshare": (272, 97), "userfaultfd": (323, 282),
}
_ARCH = {"x86_64": 0, "aarch64": 1}.get(platform.machine())

# clone/unshare flags
CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS = 0x20000, 0x02000000, 0x04000000
CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID = 0x08000000, 0x10000000, 0x20000000
CLONE_NEWNET = 0x40000000

# Errors that mean the call was refused before doing anything: a permission check, the
# seccomp filter's EPERM, or ENOSYS. Any other error means kernel code behind the call ran.
REFUSED = ("EPERM", "EACCES", "ENOSYS")


def observe(key, value):
    _OBSERVED[key] = value
    return value


def escaped(what):
    _ESCAPED.append(what)


def report(**extra):
    print(json.dumps({"observed": _OBSERVED, "escaped": _ESCAPED, **extra}, default=repr),
          flush=True)


def errname(number):
    return errno.errorcode.get(number, "errno %d" % number)


def attempt(fn, *args):
    """Calls fn(*args): "ok", or the errno name of the OSError it raised."""
    try:
        fn(*args)
        return "ok"
    except OSError as e:
        return errname(e.errno) if e.errno is not None else type(e).__name__


def value(fn, *args):
    """fn(*args)'s value, or the errno name of the OSError it raised."""
    try:
        return fn(*args)
    except OSError as e:
        return errname(e.errno) if e.errno is not None else type(e).__name__


def _arg(a):
    if isinstance(a, int):
        return ctypes.c_long(a)
    return a


def raw(name, *args):
    """The raw syscall `name`: (return value, errno name or None)."""
    if _ARCH is None or _NR[name][_ARCH] is None:
        return -1, "no such syscall on " + platform.machine()
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(_NR[name][_ARCH]), *[_arg(a) for a in args])
    return ret, (errname(ctypes.get_errno()) if ret == -1 else None)


def call(name, *args):
    """The raw syscall `name`: "ok" or its errno name."""
    ret, err = raw(name, *args)
    return err or "ok"


def refused(label, name, *args, also=()):
    """Makes a call that a contained program must not get through; records the result under
    `label`, and as an escape unless it was refused (see REFUSED; `also` adds errors that mean
    the same for this call)."""
    return must_fail(label, call(name, *args), also)


def must_fail(label, result, also=()):
    """Records the result of an attempt like refused()."""
    observe(label, result)
    if result not in REFUSED + tuple(also):
        escaped("%s: %s" % (label, result))
    return result


def escalate():
    """What an attacker tries first: a nested user namespace (full capabilities inside it) with
    its own mount and network namespaces. Returns True when it worked. Not an escape by itself
    here (NS-01 counts that): the probe's own attacks that follow say what it bought."""
    result = observe("escalate: unshare(NEWUSER|NEWNS|NEWNET)",
                     call("unshare", CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET))
    return result == "ok"


# Taken at module level, in the program's own frame: a pool sandbox's agent runs the program
# from a function of its own, so there the frame has a caller (docs/engine.md).
_HAS_CALLER = sys._getframe(0).f_back is not None


def identity():
    """Observes which sandbox and interpreter this is, for probes whose caller tells runs apart
    (several runs through one server): the PID namespace, the interpreter's start time (clock
    ticks since boot, as the host's /proc/PID/stat has it: there is no time namespace), and
    whether it started before the program (a pool sandbox: the preloads frozen, a caller frame
    above the program's)."""
    observe("pid namespace", os.readlink("/proc/self/ns/pid"))
    observe("start ticks", int(open("/proc/self/stat").read().rpartition(")")[2].split()[19]))
    observe("frozen objects", __import__("gc").get_freeze_count())
    observe("program has a caller frame", _HAS_CALLER)


def connect_unix(address):
    """Connects a stream socket to the unix `address` (abstract when it starts with NUL): "ok"
    or the errno name."""
    import socket
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(address)
        return "ok"
    except OSError as e:
        return errname(e.errno)
    finally:
        s.close()


def kill_everything():
    """kill(-1, SIGKILL) with a sleeping child of our own, which shows that the signal went out:
    records the call's result and the child's end."""
    import signal, time
    child = os.fork()
    if child == 0:
        time.sleep(30)
        os._exit(0)
    observe("kill(-1, SIGKILL)", attempt(os.kill, -1, signal.SIGKILL))
    status = os.waitpid(child, 0)[1]
    observe("own child",
            signal.Signals(os.WTERMSIG(status)).name if os.WIFSIGNALED(status) else "survived")


def status_fields(*names):
    fields = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in names:
            fields[key] = value.strip()
    return fields

def start_daemon(script, *args):
    """Runs `script` (Python source) as a daemon that outlives the program: forked twice, in a
    new session, on /dev/null. Its argv[1] is the write end of a pipe, then `args`; returns the
    read end, for the daemon to announce itself on."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            os.close(r)
            os.set_inheritable(w, True)
            devnull = os.open("/dev/null", os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.execv("/usr/bin/python3",
                     ["/usr/bin/python3", "-c", script, str(w)] + [str(a) for a in args])
        os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    return r

# ---- the probe ----
