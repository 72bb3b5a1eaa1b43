# RES-05: block forever: sleep in the program, a read from a pipe nobody writes in a child,
# signals ignored. mcp-exec: the same wall-clock kill as RES-04. Prints nothing.
import signal
import time

for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
r, w = os.pipe()
if os.fork() == 0:
    os.read(r, 1)
time.sleep(1e9)
