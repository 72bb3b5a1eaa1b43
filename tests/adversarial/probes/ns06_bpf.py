# NS-06 (e.g. CVE-2021-3490, the verifier): bpf(2). mcp-exec: denied by seccomp (EPERM), before
# the kernel's own unprivileged_bpf_disabled check.
attr = (ctypes.c_uint32 * 32)()
attr[0], attr[1], attr[2], attr[3] = 2, 4, 4, 1  # BPF_MAP_TYPE_ARRAY, key 4, value 4, 1 entry
refused("bpf map create", "bpf", 0, ctypes.byref(attr), ctypes.sizeof(attr))
insns = (ctypes.c_uint64 * 2)(0x00000000000000b7, 0x0000000000000095)  # r0 = 0; exit
license = ctypes.create_string_buffer(b"GPL")
prog = (ctypes.c_uint64 * 16)()
ctypes.cast(prog, ctypes.POINTER(ctypes.c_uint32))[0] = 1  # BPF_PROG_TYPE_SOCKET_FILTER
ctypes.cast(prog, ctypes.POINTER(ctypes.c_uint32))[1] = 2  # insn_cnt
prog[1] = ctypes.addressof(insns)
prog[2] = ctypes.addressof(license)
refused("bpf prog load", "bpf", 5, ctypes.byref(prog), ctypes.sizeof(prog))
report()
