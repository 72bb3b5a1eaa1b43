# XRUN-04: the counters a run's figures come from, and those it can read in /proc, after hostile
# runs of the same server. PARAMS: "phase" ("hog", "oom" or "look") and, for "hog",
# "touch_mib", "burn_ms", "child_mib", "child_burn_ms", "file_mib" and "net_kib".
# "hog": a child it reaps and an orphan init reaps each touch child_mib and burn child_burn_ms
# of CPU; then it touches touch_mib, burns burn_ms, writes file_mib into /tmp and into /dev/shm
# and sends net_kib over TCP and a datagram per KiB over UDP on its loopback. Reports the
# figures below once the orphan is reaped, as the positive control of each.
# "oom": touches 16 MiB blocks until the memory limit kills it; stops at PARAMS["max_mib"] and
# asks for 1 TiB instead (the rlimit backend, which has no memory limit: MemoryError).
# "look": the figures a program can read: its own and init's /proc/PID/stat counters, its
# /proc/self/status, io and schedstat, getrusage, the mounts (less the numbers that name mounts
# and devices, new for every sandbox), the space used on /tmp and /dev/shm, /proc/self/cgroup,
# and the loopback's counters (/proc/net/dev, /proc/net/snmp).
# mcp-exec: each run has its own cgroup, its own processes (its interpreter forked or started
# for it) and its own mount, network and IPC namespaces, made for it and used once.
import mmap
import resource
import socket
import time

def stat_of(pid):
    """Fields 10 to 17 of proc(5)'s /proc/PID/stat; the CPU times (in clock ticks) as the sum of
    user and system time, whose split depends on how the time is spent."""
    f = [int(x) for x in open("/proc/%s/stat" % pid).read().rpartition(")")[2].split()[7:15]]
    return {"minflt": f[0], "cminflt": f[1], "majflt": f[2], "cmajflt": f[3],
            "cpu ticks": f[4] + f[5], "children cpu ticks": f[6] + f[7]}


def keyed_numbers(path):
    """A file of "key: number" lines (/proc/self/io) as a dict."""
    out = {}
    for line in open(path):
        key, _, number = line.partition(":")
        out[key.strip()] = int(number.split()[0])
    return out


def loopback():
    for line in open("/proc/net/dev"):
        name, _, counters = line.partition(":")
        if name.strip() == "lo":
            c = [int(x) for x in counters.split()]
            return {"rx_bytes": c[0], "rx_packets": c[1], "tx_bytes": c[8], "tx_packets": c[9]}
    return {}


def snmp():
    """The Tcp and Udp rows of /proc/net/snmp: the network namespace's counters."""
    rows = {}
    for line in open("/proc/net/snmp"):
        proto, _, rest = line.partition(":")
        rows.setdefault(proto, []).append(rest.split())
    out = {}
    for proto, keys in (("Tcp", ("ActiveOpens", "PassiveOpens", "InSegs", "OutSegs")),
                        ("Udp", ("InDatagrams", "OutDatagrams"))):
        names, numbers = rows[proto]
        out.update({proto + " " + k: int(numbers[names.index(k)]) for k in keys})
    return out


def used(path):
    v = os.statvfs(path)
    return {"bytes": (v.f_blocks - v.f_bfree) * v.f_frsize, "inodes": v.f_files - v.f_ffree}


def figures():
    observe("self stat", stat_of("self"))
    observe("init stat", value(stat_of, 1))
    fields = status_fields("VmHWM", "VmPeak")
    observe("self status", {k: int(v.split()[0]) for k, v in fields.items()})
    observe("self io", value(keyed_numbers, "/proc/self/io"))
    observe("self schedstat ns", int(open("/proc/self/schedstat").read().split()[0]))
    for who, name in ((resource.RUSAGE_SELF, "self"), (resource.RUSAGE_CHILDREN, "children")):
        u = resource.getrusage(who)
        observe("rusage " + name, {"maxrss KiB": u.ru_maxrss, "minflt": u.ru_minflt,
                                   "cpu ms": int((u.ru_utime + u.ru_stime) * 1000)})
    # Mount id, parent id and major:minor are new for every sandbox: the rest says what is
    # mounted where, how.
    observe("mounts", [" ".join(line.split()[3:]) for line in open("/proc/self/mountinfo")])
    observe("used", {p: used(p) for p in ("/tmp", "/dev/shm")})
    observe("cgroup", open("/proc/self/cgroup").read().splitlines())
    observe("loopback", loopback())
    observe("snmp", snmp())


def touch(mib):
    block = mmap.mmap(-1, mib << 20)
    for offset in range(0, len(block), mmap.PAGESIZE):
        block[offset] = 1
    return block


def burn(ms):
    start = time.process_time()
    while time.process_time() - start < ms / 1000:
        pass


def child_work():
    touch(PARAMS["child_mib"])
    burn(PARAMS["child_burn_ms"])


def hog():
    init_before = stat_of(1)
    # A child of its own, which it reaps, and an orphan, which init reaps: forked before the
    # big block, so that they do not start with its pages.
    child = os.fork()
    if child == 0:
        child_work()
        os._exit(0)
    middle = os.fork()
    if middle == 0:
        if os.fork() == 0:
            child_work()
        os._exit(0)
    os.waitpid(middle, 0)
    block = touch(PARAMS["touch_mib"])
    burn(PARAMS["burn_ms"])
    for path in ("/tmp/hog-" + PARAMS["token"], "/dev/shm/hog-" + PARAMS["token"]):
        with open(path, "wb") as f:
            f.write(os.urandom(PARAMS["file_mib"] << 20))
    talk(PARAMS["net_kib"])
    os.waitpid(child, 0)
    deadline = time.time() + 10
    while stat_of(1)["cminflt"] == init_before["cminflt"] and time.time() < deadline:
        time.sleep(0.02)
    observe("orphan reaped by init", stat_of(1)["cminflt"] != init_before["cminflt"])
    figures()
    del block


def talk(kib):
    """kib KiB over a TCP connection and one datagram per KiB over UDP, to itself."""
    listener = socket.create_server(("127.0.0.1", 0))
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    payload = b"x" * 1024
    for _ in range(kib):
        client.sendall(payload)
        server.recv(1024, socket.MSG_WAITALL)
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(kib):
        sender.sendto(payload, receiver.getsockname())
        receiver.recv(1024)
    for s in (client, server, listener, sender, receiver):
        s.close()


def oom():
    blocks = []
    while len(blocks) * 16 < PARAMS["max_mib"]:
        blocks.append(touch(16))
    blocks.append(bytearray(1 << 40))


if PARAMS["phase"] == "hog":
    hog()
elif PARAMS["phase"] == "oom":
    oom()
else:
    figures()
identity()
report()
