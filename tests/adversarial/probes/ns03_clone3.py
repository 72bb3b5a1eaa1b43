# NS-03: clone3 passes its flags in memory, where seccomp cannot look, so a filter that
# allowed it could not stop CLONE_NEWUSER (moby#42680). mcp-exec: clone3 fails with ENOSYS, so
# that glibc falls back to clone (checked by the filter); threads, fork, multiprocessing and
# subprocess keep working.
import multiprocessing
import signal
import subprocess
import threading


def clone3(flags):
    args = (ctypes.c_uint64 * 11)()
    args[0] = flags
    args[4] = signal.SIGCHLD  # exit_signal
    ret, err = raw("clone3", ctypes.byref(args), ctypes.sizeof(args))
    if ret == 0:
        os._exit(0)
    if err is None:
        os.waitpid(ret, 0)
    return err or "ok"


observe("clone3 plain", clone3(0))
must_fail("clone3 NEWUSER", clone3(CLONE_NEWUSER))
box = []
t = threading.Thread(target=lambda: box.append("ran"))
t.start()
t.join()
observe("thread", box[0] if box else "did not run")
pid = os.fork()
if pid == 0:
    os._exit(7)
observe("fork", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
with multiprocessing.Pool(2) as pool:
    observe("multiprocessing.Pool(2)", pool.map(abs, [-1, -2, -3]))
observe("subprocess", subprocess.run(["/bin/echo", "hi"], capture_output=True, text=True).stdout)
report()
