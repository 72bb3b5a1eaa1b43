# NS-12: a syscall through the x32 ABI (the number with __X32_SYSCALL_BIT), which a filter
# written for x86_64 numbers would not recognise. mcp-exec: the filter kills the process
# (SIGSYS) for a syscall of an architecture it was not built for. Prints only if it survived.
if platform.machine() != "x86_64":
    observe("x32 getpid", "not x86_64")
else:
    ret, err = raw("getpid")  # warm up ctypes before the attempt
    ctypes.set_errno(0)
    ret = libc.syscall(ctypes.c_long(39 | 0x40000000))  # getpid | __X32_SYSCALL_BIT
    result = observe("x32 getpid", errname(ctypes.get_errno()) if ret == -1 else "ok")
    if result == "ok":
        escaped("a syscall through the x32 ABI")
report()
