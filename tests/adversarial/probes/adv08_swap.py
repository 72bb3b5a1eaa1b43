# swapon/swapoff. mcp-exec: denied by seccomp (EPERM). The files do not exist.
refused("swapon", "swapon", b"/tmp/no-such-swapfile", 0, also=("ENOENT",))
refused("swapoff", "swapoff", b"/tmp/no-such-swapfile", also=("ENOENT",))
report()
