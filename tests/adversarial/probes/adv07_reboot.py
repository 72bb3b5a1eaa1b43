# reboot(2). mcp-exec: denied by seccomp (EPERM). The magic numbers are wrong on purpose, so
# that even a permitted call would fail (EINVAL) and do nothing.
refused("reboot", "reboot", 0, 0, 0x01234567, None, also=("EINVAL",))
report()
