# RES-09: signals to the outside: kill(-1, SIGKILL), and signals to host processes by pid.
# PARAMS: "host_pids" (live host processes of the caller's, one of them running as the same host
# uid as the sandbox), "scan" ([first, last]: host pids to probe with signal 0; the caller puts
# the supervisor's pid in that range). mcp-exec: a PID namespace of its own: host pids do not
# exist in it (ESRCH), and kill(-1) reaches only the sandbox's processes (not even its init).
import signal
import time

own = {int(p) for p in os.listdir("/proc") if p.isdigit()}
# A host pid that is also one of the sandbox's (1 or 2, on a host whose test runner is a child of
# init) cannot be told apart from it: it is left out.
visible = {p: attempt(os.kill, p, 0) for p in PARAMS["host_pids"] if p not in own}
observe("signal 0 to host pids", sorted(set(visible.values())))
for pid, result in visible.items():
    if result != "ESRCH":
        escaped("host pid %d answers signal 0 (%s)" % (pid, result))
first, last = PARAMS["scan"]
answering = [p for p in range(first, last + 1) if p not in own and attempt(os.kill, p, 0) != "ESRCH"]
observe("pids answering in the scan", answering[:20])
for p in answering:
    escaped("pid %d outside the sandbox answers" % p)
if any(result != "ESRCH" for result in visible.values()):
    observe("kill(-1, SIGKILL)", "not attempted: host processes are visible")
else:
    kill_everything()
    observe("kill(1, SIGKILL)", attempt(os.kill, 1, signal.SIGKILL))
    time.sleep(0.1)
    observe("init alive", attempt(os.kill, 1, 0))
report()
