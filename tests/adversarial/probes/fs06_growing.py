# FS-06: a file whose size changes under the collector. A daemon (double fork, setsid, SIGTERM
# and SIGHUP ignored, PARAMS["marker"] on its command line) sets /tmp/outputs/grows.bin to
# 16 bytes, then to the largest size the run allows (RLIMIT_FSIZE: the workspace's size, a
# sparse file), and back, for ever. A collector that trusted the size it saw first, or read
# until the end of the file, would read up to that size into memory. The program exits once
# the daemon has gone round a few hundred times.
import resource

HEAD = b"sandbox grows\n.."

GROWER = """
import os, signal, sys
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_IGN)
announce_fd, big = int(sys.argv[1]), int(sys.argv[2])
fd = os.open("/tmp/outputs/grows.bin", os.O_WRONLY)
rounds = 0
while True:
    os.ftruncate(fd, 16)
    os.ftruncate(fd, big)
    rounds += 1
    if rounds == 200:
        os.write(announce_fd, b"growing")
        os.close(announce_fd)
"""

big = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
observe("RLIMIT_FSIZE", big)
with open("/tmp/outputs/grows.bin", "wb") as f:
    f.write(HEAD)
observe("truncate to RLIMIT_FSIZE",
        attempt(lambda: os.truncate("/tmp/outputs/grows.bin", big)))
os.truncate("/tmp/outputs/grows.bin", 16)
open("/tmp/outputs/z-control.txt", "w").write("control\n")
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
        os.execv("/usr/bin/python3", ["/usr/bin/python3", "-c", GROWER, str(w), str(big),
                                      PARAMS["marker"]])
    os._exit(0)
os.close(w)
os.waitpid(pid, 0)
observe("grower announced", os.read(r, 64).decode() or "EOF")
report()
