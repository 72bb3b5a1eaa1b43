# IPC-02 (isolate's flag 4): a covert channel between two runs at the same time through locks
# on the rootfs's inodes, which all sandboxes share read-only. PARAMS: "phase" ("hold" takes an
# exclusive flock on /usr/lib/os-release, starts a process carrying PARAMS["marker"] so the
# caller knows, and holds the lock for PARAMS["seconds"]; "try" tries the same lock without
# blocking).
import fcntl
import subprocess
import time

f = open("/usr/lib/os-release", "rb")
if PARAMS["phase"] == "hold":
    observe("flock exclusive", attempt(fcntl.flock, f, fcntl.LOCK_EX))
    marker = subprocess.Popen(["/usr/bin/python3", "-c", "import sys, time; time.sleep(float(sys.argv[1]))",
                               str(PARAMS["seconds"]), PARAMS["marker"]])
    marker.wait()
else:
    result = observe("flock exclusive, non-blocking", attempt(fcntl.flock, f, fcntl.LOCK_EX | fcntl.LOCK_NB))
    if result in ("EAGAIN", "EWOULDBLOCK"):
        escaped("saw another sandbox's lock on a shared rootfs file: a channel between runs")
    observe("/proc/locks entries", len(open("/proc/locks").read().splitlines()))
report()
