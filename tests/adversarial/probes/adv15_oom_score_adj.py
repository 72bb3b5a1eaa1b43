# oom_score_adj lowering: make the program the OOM killer's last choice, so that the host's
# processes die first. mcp-exec: lowering needs CAP_SYS_RESOURCE (EACCES); raising is allowed.
def write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


observe("initial", open("/proc/self/oom_score_adj").read().strip())
must_fail("oom_score_adj -1000", attempt(write, "/proc/self/oom_score_adj", "-1000"))
must_fail("oom_score_adj -1", attempt(write, "/proc/self/oom_score_adj", "-1"))
must_fail("oom_adj -17", attempt(write, "/proc/self/oom_adj", "-17"))
observe("oom_score_adj 500", attempt(write, "/proc/self/oom_score_adj", "500"))
observe("final", open("/proc/self/oom_score_adj").read().strip())
report()
