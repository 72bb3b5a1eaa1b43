# x86 port I/O and LDT: iopl, ioperm (hardware ports) and modify_ldt (a history of kernel
# bugs). mcp-exec: denied by seccomp (EPERM). On other architectures they do not exist.
if platform.machine() == "x86_64":
    refused("iopl 3", "iopl", 3)
    refused("ioperm 0x80", "ioperm", 0x80, 1, 1)
    buf = ctypes.create_string_buffer(16)
    refused("modify_ldt read", "modify_ldt", 0, buf, 16)
else:
    observe("x86 port I/O", "not x86_64")
report()
