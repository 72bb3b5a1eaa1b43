# FS-06: files whose size changes under the collector. A daemon (double fork, setsid, SIGTERM
# and SIGHUP ignored, PARAMS["marker"] on its command line) keeps /tmp/outputs/grows-0.bin to
# grows-3.bin each at 16 bytes or at the largest size the run allows (RLIMIT_FSIZE: the
# workspace's size, sparse), flipping grows-N every 2**N ticks of 5 ms, for ever: at any moment
# some are large, and one that was 16 bytes when looked at may be large when read. A collector
# that trusted the size it saw first, or read until the end of the file, would read up to that
# size into memory. The program exits once the daemon has gone round a few times.
import resource

HEAD = b"sandbox grows\n.."

GROWER = """
import os, signal, sys, time
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_IGN)
announce_fd, big = int(sys.argv[1]), int(sys.argv[2])
fds = [os.open("/tmp/outputs/grows-%d.bin" % n, os.O_WRONLY) for n in range(4)]
tick = 0
while True:
    for n, fd in enumerate(fds):
        os.ftruncate(fd, big if (tick >> n) & 1 else 16)
    tick += 1
    if tick == 20:
        os.write(announce_fd, b"growing")
        os.close(announce_fd)
    time.sleep(0.005)
"""

big = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
observe("RLIMIT_FSIZE", big)
for n in range(4):
    with open("/tmp/outputs/grows-%d.bin" % n, "wb") as f:
        f.write(HEAD)
observe("truncate to RLIMIT_FSIZE",
        attempt(lambda: os.truncate("/tmp/outputs/grows-0.bin", big)))
os.truncate("/tmp/outputs/grows-0.bin", 16)
open("/tmp/outputs/z-control.txt", "w").write("control\n")
r = start_daemon(GROWER, str(big), PARAMS["marker"])
observe("grower announced", os.read(r, 64).decode() or "EOF")
report()
