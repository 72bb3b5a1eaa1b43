# NS-04 (CVE-2019-13272): ptrace and process_vm_readv/writev, the debugger interfaces; Docker
# allows ptrace on recent kernels. mcp-exec: all denied by seccomp (EPERM), even against the
# program's own child, and against the sandbox's init.
import signal
import time

PTRACE_TRACEME, PTRACE_ATTACH, PTRACE_SEIZE = 0, 16, 0x4206
secret = ctypes.create_string_buffer(b"the child's memory")
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
refused("ptrace attach child", "ptrace", PTRACE_ATTACH, child, 0, 0)
refused("ptrace seize init", "ptrace", PTRACE_SEIZE, 1, 0, 0)


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


buf = ctypes.create_string_buffer(len(secret))
local = IoVec(ctypes.cast(buf, ctypes.c_void_p), len(secret))
remote = IoVec(ctypes.cast(secret, ctypes.c_void_p), len(secret))
refused("process_vm_readv child", "process_vm_readv", child, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
refused("process_vm_writev child", "process_vm_writev", child, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
os.kill(child, signal.SIGKILL)
os.waitpid(child, 0)
r, w = os.pipe()
tracee = os.fork()
if tracee == 0:
    os.write(w, call("ptrace", PTRACE_TRACEME, 0, 0, 0).encode())
    os._exit(0)
os.close(w)
must_fail("ptrace traceme", os.read(r, 64).decode())
os.waitpid(tracee, 0)
report()
