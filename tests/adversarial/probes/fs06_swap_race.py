# FS-06: entries of /tmp/outputs that change type under the collector. Daemons (double fork,
# setsid, SIGTERM and SIGHUP ignored, PARAMS["marker"] on their command lines) swap pairs of
# names with renameat2(RENAME_EXCHANGE), for ever, one daemon per kind of pair:
#   f-N.txt (a regular file)  <->  l-N.txt (a link to a host path: PARAMS["host_file"], or the
#                                  supervisor's /proc/self/environ)
#   d-N (a directory)         <->  p-N (a FIFO)
#   e-N (a directory)         <->  h-N (a link to a host directory: PARAMS["host_dir"], which
#                                  holds a z-inner.txt of its own)
# d-N holds z-inner.txt. e-N holds 150 empty directories and then, in the walk's order,
# z-inner.txt: the walk spends milliseconds inside e-N while the daemon swaps it for the link
# many times, so that a collector that opened e-N/z-inner.txt by its path would go through the
# link. The program exits once each daemon has swapped its pairs a few hundred times. In a
# session the collector walks while the daemons swap; in a one-shot run they are dead first.
RENAME_EXCHANGE = 2
_NR_RENAMEAT2 = {"x86_64": 316, "aarch64": 276}[platform.machine()]
PAIRS = PARAMS["pairs"]

SWAPPER = """
import ctypes, os, signal, sys
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_IGN)
libc = ctypes.CDLL(None, use_errno=True)
announce_fd, nr, announce_at = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
pairs = [tuple(p.split("|")) for p in sys.argv[4].split(",")]
os.chdir("/tmp/outputs")
pairs = [(a.encode(), b.encode()) for a, b in pairs]
rounds = 0
while True:
    for a, b in pairs:
        if libc.syscall(nr, -100, a, -100, b, 2) != 0:
            os.write(announce_fd, ("renameat2 %s: errno %d" % (a, ctypes.get_errno())).encode())
            os._exit(1)
    rounds += 1
    if rounds == announce_at:
        os.write(announce_fd, b"s")
        os.close(announce_fd)
"""

os.chdir("/tmp/outputs")
links = (PARAMS["host_file"], "/proc/self/environ")
results = {"symlink": set(), "mkfifo": set(), "mkdir": set()}
groups = {"f": [], "d": [], "e": []}
for n in range(PAIRS):
    open("f-%d.txt" % n, "w").write("sandbox file %d\n" % n)
    results["symlink"].add(attempt(os.symlink, links[n % 2], "l-%d.txt" % n))
    groups["f"].append("f-%d.txt|l-%d.txt" % (n, n))
for n in range(PAIRS // 2):
    for d in ("d-%d" % n, "e-%d" % n):
        results["mkdir"].add(attempt(os.mkdir, d))
        open(d + "/z-inner.txt", "w").write("sandbox inner %s\n" % d)
    for k in range(150):
        os.mkdir("e-%d/pad-%03d" % (n, k))
    results["mkfifo"].add(attempt(os.mkfifo, "p-%d" % n))
    results["symlink"].add(attempt(os.symlink, PARAMS["host_dir"], "h-%d" % n))
    groups["d"].append("d-%d|p-%d" % (n, n))
    groups["e"].append("e-%d|h-%d" % (n, n))
for what, seen in results.items():
    observe(what, sorted(seen))

announcements = []
for pairs in groups.values():
    announcements.append(start_daemon(SWAPPER, _NR_RENAMEAT2, 200, ",".join(pairs),
                                      PARAMS["marker"]))
observe("swappers announced", "".join(os.read(r, 200).decode() or "EOF" for r in announcements))
report()
