# RES-04: burn CPU forever, in pure Python and in a C extension (numpy), with SIGTERM, SIGINT
# and SIGHUP ignored. mcp-exec: the wall-clock timeout kills the sandbox's init, which takes
# every process of the PID namespace with it; nothing relies on the program's cooperation.
# Prints nothing: it never ends by itself.
import signal

for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, signal.SIG_IGN)
if os.fork() == 0:
    import numpy
    a = numpy.random.rand(200, 200)
    while True:
        numpy.linalg.inv(a)
while True:
    pass
