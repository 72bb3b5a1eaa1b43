# FS-06: files that change while they are collected. A daemon (double fork, setsid, SIGTERM and
# SIGHUP ignored, PARAMS["marker"] on its command line) writes version after version for ever,
# version v into /tmp/outputs/live-NN with NN = v % 16, each version a whole page of 4 KiB
# whose 256 lines hold the number. Between two live files in the walk's order sits a directory
# of 100 empty ones (walked, not listed), so that a collector reading beside the daemon would
# take long enough to see it move on. The program waits until the daemon has written
# PARAMS["versions"] versions, then exits while it still writes.
WRITER = """
import os, signal, sys
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_IGN)
announce_fd, announce_at = int(sys.argv[1]), int(sys.argv[2])
fds = [os.open("/tmp/outputs/live-%02d" % i, os.O_WRONLY | os.O_CREAT, 0o644) for i in range(16)]
version = 0
while True:
    os.pwrite(fds[version % 16], ("%015d\\n" % version).encode() * 256, 0)
    if version == announce_at:
        os.write(announce_fd, b"written")
        os.close(announce_fd)
    version += 1
"""

for i in range(15):
    for k in range(100):
        os.makedirs("/tmp/outputs/live-%02d-pad/%d" % (i, k))
r = start_daemon(WRITER, str(PARAMS["versions"]), PARAMS["marker"])
observe("writer announced", os.read(r, 16).decode() or "EOF")
observe("live files", sorted(n for n in os.listdir("/tmp/outputs") if not n.endswith("-pad")))
report()
