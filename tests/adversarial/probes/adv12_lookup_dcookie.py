# lookup_dcookie (oprofile's; removed in Linux 6.10). mcp-exec: denied by seccomp (EPERM),
# on any kernel.
buf = ctypes.create_string_buffer(256)
refused("lookup_dcookie", "lookup_dcookie", 0, buf, 256, also=("EINVAL",))
report()
