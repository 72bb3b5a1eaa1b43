# NS-13: a seccomp filter is in force before the program's first instruction, and the program
# can only add restrictions: a filter it installs itself (here, one that allows everything)
# does not lift the first one. mcp-exec: Seccomp 2 with one filter, NoNewPrivs 1; after the
# program's own filter, unshare(CLONE_NEWUSER) is still EPERM.
before = observe("before", status_fields("Seccomp", "Seccomp_filters", "NoNewPrivs"))
if before.get("Seccomp") != "2":
    escaped("no seccomp filter in force")


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]


allow_all = (SockFilter * 1)(SockFilter(0x06, 0, 0, 0x7FFF0000))  # BPF_RET|BPF_K ALLOW
prog = SockFprog(1, allow_all)
ctypes.set_errno(0)
rc = libc.prctl(22, 2, ctypes.byref(prog), 0, 0)  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
observe("install an allow-all filter", "ok" if rc == 0 else errname(ctypes.get_errno()))
observe("after", status_fields("Seccomp", "Seccomp_filters"))
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, call("unshare", CLONE_NEWUSER).encode())
    os._exit(0)
os.close(w)
must_fail("unshare NEWUSER after the program's filter", os.read(r, 64).decode())
os.waitpid(pid, 0)
report()
