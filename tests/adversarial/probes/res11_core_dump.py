# RES-11: core dumps, which leak memory to files and, with a pipe core_pattern, run a host
# helper as root whatever RLIMIT_CORE says for pipes. mcp-exec: RLIMIT_CORE is 0 with a hard
# limit of 0 (raising it: EPERM, no CAP_SYS_RESOURCE), so an abort dumps nothing.
import resource
import signal

observe("RLIMIT_CORE", list(resource.getrlimit(resource.RLIMIT_CORE)))
try:
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    observe("raise RLIMIT_CORE", "ok")
except ValueError as e:
    # CPython's translation of the kernel's EPERM for a hard limit raised without privilege.
    observe("raise RLIMIT_CORE", "EPERM" if "not allowed to raise" in str(e) else "ValueError: %s" % e)
except OSError as e:
    observe("raise RLIMIT_CORE", errname(e.errno))
soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
attempt(resource.setrlimit, resource.RLIMIT_CORE, (hard, hard))
pid = os.fork()
if pid == 0:
    os.chdir("/tmp")
    os.abort()
status = os.waitpid(pid, 0)[1]
observe("child", signal.Signals(os.WTERMSIG(status)).name)
dumped = observe("core dumped", os.WCOREDUMP(status))
if dumped:
    escaped("the aborted child dumped core")
observe("core files in /tmp", [n for n in os.listdir("/tmp") if n.startswith("core")])
report()
