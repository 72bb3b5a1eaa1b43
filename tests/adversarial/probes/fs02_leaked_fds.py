# FS-02 (runc CVE-2024-21626, "Leaky Vessels"): a descriptor of the host leaked into the
# sandbox (PARAMS["leaked_fd"], opened by whoever started the sandbox) gives a way out, e.g.
# through /proc/self/fd/N/.. . mcp-exec: only 0, 1 and 2 (pipes) cross; the cwd is /tmp.
fds = {}
for entry in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink("/proc/self/fd/" + entry)
    except OSError:
        continue  # the descriptor listdir used, closed by now
    fds[entry] = "pipe" if target.startswith("pipe:") else target
observe("fds", fds)
# A session's program also holds its session's control socket (PARAMS["session_fd"]), which
# leads only to the supervisor of this session.
for fd in fds:
    if int(fd) > 2 and not (int(fd) == PARAMS.get("session_fd") and fds[fd].startswith("socket:")):
        escaped("fd %s (%s) is open" % (fd, fds[fd]))
observe("cwd", os.getcwd())
for fd in sorted({3, int(PARAMS.get("leaked_fd", 3))}):
    observe("list /proc/self/fd/%d/.." % fd, attempt(os.listdir, "/proc/self/fd/%d/.." % fd))
report()
