# RES-08 and invariant 7 (nothing of a run outlives it): a program that tries to leave things
# behind. It tries to move itself into another cgroup, to make a cgroup namespace of its own
# and to mount over /tmp/outputs (a mount there would keep the workspace busy), then starts a
# daemon: double fork, setsid, SIGTERM and SIGHUP ignored, its cwd in the workspace, files of
# /tmp and /dev/shm held open, PARAMS["marker"] on its command line. The caller looks at the
# daemon from the host (its cgroups and namespaces) and then sends it SIGUSR1, on which it tells
# the program to go; the program exits and leaves the daemon running.
import select

observe("write own pid to /sys/fs/cgroup/cgroup.procs",
        attempt(lambda: open("/sys/fs/cgroup/cgroup.procs", "w").write(str(os.getpid()))))
must_fail("unshare NEWCGROUP", call("unshare", CLONE_NEWCGROUP))
must_fail("mount tmpfs on /tmp/outputs", call("mount", b"tmpfs", b"/tmp/outputs", b"tmpfs", 0, 0))

DAEMON = """
import os, signal, sys, time
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, signal.SIG_IGN)
announce_fd = int(sys.argv[1])
os.chdir("/tmp/outputs")
held = [os.open("/tmp/outputs/held.bin", os.O_RDWR | os.O_CREAT, 0o644),
        os.open("/dev/shm/held.bin", os.O_RDWR | os.O_CREAT, 0o644)]
signal.signal(signal.SIGUSR1, lambda *_: os.write(announce_fd, b"go"))
os.write(announce_fd, b"ready")
while True:
    time.sleep(3600)
"""

r = start_daemon(DAEMON, PARAMS["marker"])
observe("daemon", os.read(r, 5).decode() or "EOF")
ready, _, _ = select.select([r], [], [], 20)
observe("host's signal", (os.read(r, 2).decode() or "EOF") if ready else "none in 20 s")
report()
