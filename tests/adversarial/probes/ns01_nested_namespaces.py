# NS-01: new namespaces from inside, above all a nested user namespace, which hands the
# program every capability over its own namespaces and opens the kernel code behind them
# (CVE-2022-0185 fsconfig, CVE-2021-22555 netfilter, CVE-2023-0386 overlayfs). mcp-exec:
# unshare(2), and clone(2) with any CLONE_NEW* flag, are denied by seccomp (EPERM).
# Each attempt runs in a child of its own, so that one that works does not change the next.
import signal

FLAGS = {"NEWUSER": CLONE_NEWUSER, "NEWNS": CLONE_NEWNS, "NEWNET": CLONE_NEWNET,
         "NEWPID": CLONE_NEWPID, "NEWIPC": CLONE_NEWIPC, "NEWUTS": CLONE_NEWUTS,
         "NEWCGROUP": CLONE_NEWCGROUP, "NEWTIME": 0x80}


def in_child(fn):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.write(w, fn().encode())
        finally:
            os._exit(0)
    os.close(w)
    result = os.read(r, 100).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return result


def raw_clone(flags):
    ret, err = raw("clone", flags | signal.SIGCHLD, 0, 0, 0, 0)
    if ret == 0:
        os._exit(0)  # the new process: gone at once
    if err is None:
        os.waitpid(ret, 0)
    return err or "ok"


for name, flag in FLAGS.items():
    must_fail("unshare " + name, in_child(lambda: call("unshare", flag)))
for name in ("NEWUSER", "NEWNET", "NEWNS", "NEWPID"):
    must_fail("clone " + name, in_child(lambda: raw_clone(FLAGS[name])))
observe("max_user_namespaces", value(lambda: open("/proc/sys/user/max_user_namespaces").read().strip()))
report()
