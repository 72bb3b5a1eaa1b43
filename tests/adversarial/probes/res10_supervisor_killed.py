# RES-10: the supervisor dies mid-run (crash, SIGKILL). A program that ignores SIGTERM and
# SIGHUP starts a child and a setsid daemon carrying PARAMS["marker"], then waits. The caller
# kills the supervisor once both are visible. mcp-exec: the sandbox's init has
# PR_SET_PDEATHSIG(SIGKILL); its death ends the PID namespace. Prints nothing.
import signal
import subprocess
import time

for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(sig, signal.SIG_IGN)
sleeper = ["/usr/bin/python3", "-c",
           "import signal, time\n"
           "for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):\n"
           "    signal.signal(s, signal.SIG_IGN)\n"
           "time.sleep(600)", PARAMS["marker"]]
subprocess.Popen(sleeper)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sleeper[0], sleeper)
    os._exit(0)
time.sleep(600)
