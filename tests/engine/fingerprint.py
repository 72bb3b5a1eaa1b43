# The sandbox as a program sees it: everything it can observe of the confinement it runs in,
# printed as one JSON object whose values are the same in every run of one configuration
# (identifiers the kernel hands out anew, such as mount ids, pids of other namespaces and inode
# numbers, are dropped or turned into what they mean). tests/integration/sandbox_fingerprint_test.cc
# runs it in every engine and compares. @HOST_NS@ is replaced by the host's namespace inodes,
# {"user": 4026531837, ...}, so that each namespace can be called "host" or "own".
import ctypes
import errno
import fcntl
import json
import os
import re
import resource
import signal
import socket
import struct

HOST_NS = @HOST_NS@
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
report = {}


def read(path, mode="r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError as e:
        return "error: " + errno.errorcode.get(e.errno, str(e.errno))


def status_fields():
    fields = {}
    for line in read("/proc/self/status").splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return fields


status = status_fields()

# Identity.
report["resuid"] = list(os.getresuid())
report["resgid"] = list(os.getresgid())
report["groups"] = sorted(os.getgroups())
for name in ("uid_map", "gid_map", "setgroups", "projid_map"):
    report[name] = " ".join(read("/proc/self/" + name).split())

# Privileges.
for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp",
             "Seccomp_filters", "Speculation_Store_Bypass", "SpeculationIndirectBranch",
             "SigBlk", "SigIgn", "SigCgt", "SigQ", "Umask", "Cpus_allowed_list",
             "Mems_allowed_list"):
    value = status.get(name, "(absent)")
    if name == "SigQ":
        value = value.split("/")[1]  # the limit; the count queued is the run's own
    report["status." + name] = value
PR_GET_DUMPABLE, PR_GET_KEEPCAPS, PR_GET_SECUREBITS, PR_GET_NO_NEW_PRIVS = 3, 7, 27, 39
PR_GET_CHILD_SUBREAPER, PR_GET_THP_DISABLE, PR_GET_IO_FLUSHER, PR_GET_PDEATHSIG = 37, 42, 58, 2
for name, option in (("dumpable", PR_GET_DUMPABLE), ("keepcaps", PR_GET_KEEPCAPS),
                     ("securebits", PR_GET_SECUREBITS), ("no_new_privs", PR_GET_NO_NEW_PRIVS),
                     ("child_subreaper", PR_GET_CHILD_SUBREAPER),
                     ("thp_disable", PR_GET_THP_DISABLE)):
    report["prctl." + name] = libc.prctl(option, 0, 0, 0, 0)
pdeathsig = ctypes.c_int(-1)
libc.prctl(PR_GET_PDEATHSIG, ctypes.byref(pdeathsig), 0, 0, 0)
report["prctl.pdeathsig"] = pdeathsig.value
report["personality"] = libc.syscall(135, 0xFFFFFFFF)  # personality(0xffffffff) reads it

# The seccomp filter's answer to a sample of syscalls (x86_64 numbers), with arguments that make
# each fail harmlessly when it is allowed: the errno each returns, or "ok".
SAMPLE = {
    "getpid": (39, ()), "unshare(0)": (272, (0,)), "setns": (308, (-1, 0)),
    "mount": (165, (0, 0, 0, 0, 0)), "umount2": (166, (0, 0)), "pivot_root": (155, (0, 0)),
    "chroot": (161, (0,)), "fsopen": (430, (0, 0)), "open_tree": (428, (-1, 0, 0)),
    "move_mount": (429, (-1, 0, -1, 0, 0)), "mount_setattr": (442, (-1, 0, 0, 0, 0)),
    "keyctl": (250, (-1, 0, 0, 0, 0)), "add_key": (248, (0, 0, 0, 0, 0)),
    "bpf": (321, (-1, 0, 0)), "perf_event_open": (298, (0, 0, -1, -1, 0)),
    "io_uring_setup": (425, (0, 0)), "userfaultfd": (323, (-1,)), "ptrace": (101, (-1, 0, 0, 0)),
    "process_vm_readv": (310, (0, 0, 0, 0, 0, -1)), "kcmp": (312, (0, 0, -1, 0, 0)),
    "init_module": (175, (0, 0, 0)), "finit_module": (313, (-1, 0, -1)),
    "kexec_load": (246, (0, 0, 0, -1)), "reboot": (169, (0, 0, 0, 0)),
    "swapon": (167, (0, 0)), "acct": (163, (0,)), "syslog": (103, (-1, 0, 0)),
    "clock_settime": (227, (-1, 0)), "settimeofday": (164, (0, 0)), "adjtimex": (159, (0,)),
    "open_by_handle_at": (304, (-1, 0, -1)), "name_to_handle_at": (303, (-1, 0, 0, 0, -1)),
    "lookup_dcookie": (212, (0, 0, 0)), "quotactl": (179, (0, 0, 0, 0)),
    "personality(-2)": (135, (0xFFFFFFFE,)), "iopl": (172, (4,)), "ioperm": (173, (0, 0, 0)),
    "sethostname": (170, (0, 0)), "setdomainname": (171, (0, 0)), "vhangup": (153, ()),
    "pidfd_getfd": (438, (-1, -1, 0)), "memfd_secret": (447, (-1,)),
    "clone(newuser)": (56, (0x10000000 | 0x11, 0, 0, 0, 0)),
    "fanotify_init": (300, (-1, 0)), "create_module": (174, ()),
    "nfsservctl": (180, ()), "mbind": (237, (0, 0, -1, 0, 0, 0)),
}


def errno_of(number, args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    if result >= 0:
        return "ok"
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


report["syscalls"] = {name: errno_of(*call) for name, call in SAMPLE.items()}

# Namespaces: the host's or the sandbox's own.
namespaces = {}
for name in sorted(os.listdir("/proc/self/ns")):
    try:
        inode = os.stat("/proc/self/ns/" + name).st_ino
    except OSError as e:
        namespaces[name] = "error: " + errno.errorcode.get(e.errno, str(e.errno))
        continue
    namespaces[name] = "host" if HOST_NS.get(name) == inode else "own"
report["namespaces"] = namespaces

# Mounts, in order: where, what of its file system, its type and options. Mount ids and peer
# group numbers are the kernel's counters.
mounts = []
for line in read("/proc/self/mountinfo").splitlines():
    fields = line.split()
    separator = fields.index("-")
    optional = [re.sub(r":\d+", "", f) for f in fields[6:separator]]
    fstype, source, super_options = fields[separator + 1:separator + 4]
    mounts.append(" ".join([fields[4], fields[3], fields[5], ",".join(optional) or "-", fstype,
                            source, super_options]))
report["mountinfo"] = mounts

# Limits.
report["rlimits"] = {name: list(resource.getrlimit(getattr(resource, name)))
                     for name in sorted(dir(resource)) if name.startswith("RLIMIT_")}
report["cgroup"] = read("/proc/self/cgroup").splitlines()
report["oom_score_adj"] = read("/proc/self/oom_score_adj").strip()
report["sched"] = [os.sched_getscheduler(0), os.getpriority(os.PRIO_PROCESS, 0)]
report["affinity_count"] = len(os.sched_getaffinity(0))


# The thread's rseq registration, which glibc reads the CPU from: sched_getcpu() must follow the
# affinity (it did not in a zygote run whose init was a CLONE_VM child, which loses it).
def cpu_follows_affinity():
    cpus = sorted(os.sched_getaffinity(0))
    try:
        for cpu in cpus:
            os.sched_setaffinity(0, {cpu})
            if libc.sched_getcpu() != cpu:
                return False
        return True
    except OSError as e:
        return "error: " + errno.errorcode.get(e.errno, str(e.errno))
    finally:
        os.sched_setaffinity(0, cpus)


report["sched_getcpu_follows_affinity"] = cpu_follows_affinity()

# Process.
report["environ"] = dict(os.environ)
report["cwd"] = os.getcwd()
mask = os.umask(0)
os.umask(mask)
report["umask"] = oct(mask)
report["pid"] = os.getpid()
report["ppid"] = os.getppid()
report["session_leader"] = os.getsid(0) == os.getpid()
report["group_leader"] = os.getpgrp() == os.getpid()
# Init pads its name with NULs to the length of the supervisor's command line: its name only.
report["init_cmdline"] = read("/proc/1/cmdline", "rb").rstrip(b"\0").decode("utf-8", "replace")
report["init_comm"] = read("/proc/1/comm").strip()
report["processes"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
try:
    os.close(os.open("/dev/tty", os.O_RDWR))
    report["controlling_tty"] = "yes"
except OSError as e:
    report["controlling_tty"] = errno.errorcode.get(e.errno, str(e.errno))


def fd_kind(target):
    return re.sub(r"\[\d+\]$", "", target) if ":" in target else target


listing = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
fds = {}
for name in os.listdir(listing):
    fd = int(name)
    if fd == listing:
        continue
    try:
        target = os.readlink(name, dir_fd=listing)
    except OSError:
        continue
    flags = os.get_inheritable(fd)
    fds[name] = "%s %s" % (fd_kind(target), "inheritable" if flags else "cloexec")
os.close(listing)
report["fds"] = fds
report["isatty"] = [os.isatty(fd) for fd in (0, 1, 2)]


def handler(h):
    if h == signal.SIG_DFL:
        return "SIG_DFL"
    if h == signal.SIG_IGN:
        return "SIG_IGN"
    return "python" if callable(h) else str(h)


report["python_handlers"] = {
    str(s): handler(signal.getsignal(s)) for s in sorted(signal.valid_signals())
    if s not in (signal.SIGKILL, signal.SIGSTOP)}

# Host name and network.
report["uname"] = [os.uname().sysname, os.uname().nodename, os.uname().machine]
report["domainname"] = read("/proc/sys/kernel/domainname").strip()
report["interfaces"] = socket.if_nameindex()
SIOCGIFFLAGS = 0x8913
probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
flags = {}
for _, name in socket.if_nameindex():
    answer = fcntl.ioctl(probe.fileno(), SIOCGIFFLAGS, struct.pack("16sh22x", name.encode(), 0))
    flags[name] = hex(struct.unpack("16sh22x", answer)[1])
probe.close()
report["interface_flags"] = flags

# /proc: what of it is masked or read-only.
proc = {}
for path in ("/proc/kcore", "/proc/sysrq-trigger", "/proc/sys", "/proc/sys/kernel/hostname",
             "/proc/keys", "/proc/timer_list", "/proc/latency_stats", "/proc/sched_debug",
             "/proc/scsi", "/proc/acpi", "/proc/kmsg", "/proc/bus", "/proc/fs", "/proc/irq",
             "/proc/asound", "/proc/interrupts", "/proc/modules", "/proc/kallsyms",
             "/proc/self/mem", "/proc/1/environ", "/proc/1/root"):
    try:
        st = os.lstat(path)
        kind = "dir" if os.path.isdir(path) else "file"
        entry = [kind, oct(st.st_mode & 0o7777), os.access(path, os.R_OK),
                 os.access(path, os.W_OK)]
        if kind == "dir":
            try:
                entry.append(len(os.listdir(path)))
            except OSError as e:
                entry.append(errno.errorcode.get(e.errno, str(e.errno)))
    except OSError as e:
        entry = errno.errorcode.get(e.errno, str(e.errno))
    proc[path] = entry
report["proc"] = proc
report["dev"] = sorted(os.listdir("/dev"))
report["tmp_mode"] = oct(os.stat("/tmp").st_mode)
report["dev_shm_mode"] = oct(os.stat("/dev/shm").st_mode)
print(json.dumps(report, sort_keys=True))
