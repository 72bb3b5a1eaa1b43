# acct(2): process accounting for the whole host. mcp-exec: denied by seccomp (EPERM). The
# file does not exist.
refused("acct on", "acct", b"/tmp/no-such-acct-file", also=("ENOENT",))
refused("acct off", "acct", None)
report()
