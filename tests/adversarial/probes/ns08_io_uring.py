# NS-08: io_uring, ~60 % of kCTF VRP 2022 submissions, and a way to make syscalls (sockets,
# opens) that the seccomp filter never sees. mcp-exec: io_uring_setup, io_uring_enter and
# io_uring_register are denied by seccomp (EPERM).
params = (ctypes.c_uint8 * 120)()
ret, err = raw("io_uring_setup", 4, ctypes.byref(params))
must_fail("io_uring_setup", err or "ok")
if err is None:
    os.close(ret)
refused("io_uring_enter", "io_uring_enter", -1, 0, 0, 0, None, 0, also=("EBADF",))
refused("io_uring_register", "io_uring_register", -1, 0, None, 0, also=("EBADF",))
report()
