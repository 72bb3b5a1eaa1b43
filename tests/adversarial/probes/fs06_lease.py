# FS-06: a write lease on an output. A daemon (double fork, setsid, SIGTERM, SIGHUP and SIGIO
# ignored, PARAMS["marker"] on its command line) takes fcntl(F_SETLEASE, F_WRLCK) on
# /tmp/outputs/leased.csv and holds it for ever. Any other open of the file (for reading too)
# must wait until the holder lets go, or until the kernel breaks the lease after
# /proc/sys/fs/lease-break-time (45 s): the holder never lets go. The program checks that the
# lease holds (a non-blocking open of its own gets EWOULDBLOCK) and exits; in a session the
# daemon still holds the lease while the collector walks.
HOLDER = """
import fcntl, os, signal, sys, time
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGIO):
    signal.signal(s, signal.SIG_IGN)
announce_fd = int(sys.argv[1])
fd = os.open("/tmp/outputs/leased.csv", os.O_RDONLY)
try:
    fcntl.fcntl(fd, 1024, fcntl.F_WRLCK)
    result = "ok"
except OSError as e:
    import errno
    result = errno.errorcode.get(e.errno, str(e.errno))
os.write(announce_fd, result.encode())
os.close(announce_fd)
while True:
    time.sleep(3600)
"""

open("/tmp/outputs/leased.csv", "w").write("a,b\n1,2\n")
r = start_daemon(HOLDER, PARAMS["marker"])
observe("F_SETLEASE F_WRLCK", os.read(r, 64).decode() or "EOF")
observe("open O_RDONLY|O_NONBLOCK beside the lease",
        attempt(lambda: os.close(os.open("/tmp/outputs/leased.csv",
                                         os.O_RDONLY | os.O_NONBLOCK))))
open("/tmp/outputs/z-control.txt", "w").write("control\n")
report()
