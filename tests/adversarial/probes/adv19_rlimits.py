# ADV-19 (issue 11, finding 8): resource limits inherited from the server. A positive
# RLIMIT_RTPRIO gives SCHED_FIFO threads, which cpu.max does not throttle; RLIMIT_NICE lets a
# program raise its priority; RLIMIT_MEMLOCK pins memory; RLIMIT_MSGQUEUE and RLIMIT_SIGPENDING
# size kernel queues. mcp-exec sets each for the program (RTPRIO 0, NICE 0, MEMLOCK 64 KiB,
# MSGQUEUE 0, SIGPENDING 1024, never above its own hard limits), and without capabilities the
# program cannot raise them. sched_setscheduler itself passes the filter (SCHED_BATCH works):
# SCHED_FIFO and SCHED_RR get the kernel's EPERM for RLIMIT_RTPRIO 0.
import mmap
import resource
import signal


def proc_limits():
    limits = {}
    with open("/proc/self/limits") as f:
        next(f)
        for line in f:
            name, soft, hard = line[:26].strip(), line[26:47].strip(), line[47:68].strip()
            limits[name] = [s if s == "unlimited" else int(s) for s in (soft, hard)]
    return limits


observe("limits", proc_limits())


def raise_hard(res):
    soft, hard = resource.getrlimit(res)
    try:
        resource.setrlimit(res, (soft, resource.RLIM_INFINITY if hard != resource.RLIM_INFINITY
                                 else hard))
        return "ok" if hard != resource.RLIM_INFINITY else "already unlimited"
    except ValueError as e:
        # CPython's translation of the kernel's EPERM for a hard limit raised without privilege.
        return "EPERM" if "not allowed to raise" in str(e) else "ValueError: %s" % e
    except OSError as e:
        return errname(e.errno)


for name in ("RTPRIO", "NICE", "MEMLOCK", "MSGQUEUE", "SIGPENDING"):
    must_fail("raise RLIMIT_" + name, raise_hard(getattr(resource, "RLIMIT_" + name)))

for policy in ("SCHED_FIFO", "SCHED_RR"):
    must_fail(policy, attempt(os.sched_setscheduler, 0, getattr(os, policy), os.sched_param(1)))
observe("SCHED_BATCH", attempt(os.sched_setscheduler, 0, os.SCHED_BATCH, os.sched_param(0)))
observe("SCHED_OTHER", attempt(os.sched_setscheduler, 0, os.SCHED_OTHER, os.sched_param(0)))
nice = os.getpriority(os.PRIO_PROCESS, 0)
must_fail("lower the nice value", attempt(os.setpriority, os.PRIO_PROCESS, 0, nice - 1))

libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
buf = mmap.mmap(-1, 1 << 20)
address = ctypes.addressof(ctypes.c_char.from_buffer(buf))


def mlock(size):
    if libc.mlock(ctypes.c_void_p(address), ctypes.c_size_t(size)) != 0:
        return errname(ctypes.get_errno())
    libc.munlock(ctypes.c_void_p(address), ctypes.c_size_t(size))
    return "ok"


observe("mlock 4 KiB", mlock(4096))
must_fail("mlock 1 MiB", mlock(1 << 20), also=("ENOMEM",))

libc.mq_open.restype = ctypes.c_int
libc.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p]
mqd = libc.mq_open(b"/adv19", os.O_CREAT | os.O_RDWR, 0o600, None)
if mqd < 0:
    must_fail("mq_open", errname(ctypes.get_errno()), also=("EMFILE",))
else:
    must_fail("mq_open", "ok")
    libc.mq_unlink(b"/adv19")

# Real-time signals queued to itself, blocked, until the kernel refuses (EAGAIN).
libc.sigqueue.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGRTMIN])
queued = 0
while queued < 1 << 20 and libc.sigqueue(os.getpid(), int(signal.SIGRTMIN), None) == 0:
    queued += 1
observe("queued real-time signals", queued)
observe("sigqueue after that", errname(ctypes.get_errno()))
report()
