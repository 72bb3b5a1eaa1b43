# RES-08 (nsjail#263, snekbox PR #95): a daemon that outlives the run: double fork, setsid,
# SIGTERM and SIGHUP ignored, descriptors closed, with PARAMS["marker"] on its command line
# so that the caller can look for it from the host. The program itself exits at once.
# mcp-exec: the sandbox's init exits with the program, and the kernel kills every process left
# in the PID namespace.
import time

pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        os.execv("/usr/bin/python3", ["/usr/bin/python3", "-c",
                 "import signal, time\n"
                 "for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):\n"
                 "    signal.signal(s, signal.SIG_IGN)\n"
                 "time.sleep(600)", PARAMS["marker"]])
    os._exit(0)
os.waitpid(pid, 0)


def marked():
    n = 0
    for p in os.listdir("/proc"):
        try:
            if PARAMS["marker"] in open("/proc/%s/cmdline" % p).read().split("\0"):
                n += 1
        except OSError:
            pass
    return n


deadline = time.time() + 5
while marked() < 1 and time.time() < deadline:
    time.sleep(0.01)
observe("daemons running", marked())
report()
