# NS-07: perf_event_open, a large kernel surface and a side channel. mcp-exec: denied by
# seccomp (EPERM), whatever perf_event_paranoid allows.
attr = (ctypes.c_uint8 * 128)()
header = ctypes.cast(attr, ctypes.POINTER(ctypes.c_uint32))
header[0] = 1    # PERF_TYPE_SOFTWARE
header[1] = 128  # size
flags = ctypes.cast(ctypes.byref(attr, 40), ctypes.POINTER(ctypes.c_uint64))
flags[0] = 1 | (1 << 5) | (1 << 6)  # disabled, exclude_kernel, exclude_hv; config 0: cpu-clock
ret, err = raw("perf_event_open", ctypes.byref(attr), 0, -1, -1, 0)
must_fail("perf_event_open cpu-clock of self", err or "ok")
if err is None:
    os.close(ret)
report()
