# Invariant 2: become root. mcp-exec: the user namespace maps one uid and one gid (65532, to
# an unprivileged host uid), so uid 0 does not exist in it (EINVAL); setgroups is denied
# (EPERM); the maps cannot be rewritten from inside (EPERM). Which host uid the sandbox's user
# is cannot be seen from inside (uid_map is relative to the parent namespace, and a sandbox may
# nest two): a process carrying PARAMS["marker"] runs for PARAMS["seconds"] so that the caller
# can read its uid from the host.
import subprocess

marked = None
if "marker" in PARAMS:
    marked = subprocess.Popen(["/usr/bin/python3", "-c", "import sys, time; time.sleep(float(sys.argv[1]))",
                               str(PARAMS.get("seconds", 1)), PARAMS["marker"]])
observe("uid_map", open("/proc/self/uid_map").read().split())
observe("gid_map", open("/proc/self/gid_map").read().split())
must_fail("setuid(0)", attempt(os.setuid, 0), also=("EINVAL",))
must_fail("setresuid(0, 0, 0)", attempt(os.setresuid, 0, 0, 0), also=("EINVAL",))
must_fail("setgid(0)", attempt(os.setgid, 0), also=("EINVAL",))
must_fail("setgroups([0])", attempt(os.setgroups, [0]), also=("EINVAL",))
must_fail("seteuid(65534)", attempt(os.seteuid, 65534), also=("EINVAL",))


def write_map(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


must_fail("write /proc/self/uid_map", attempt(write_map, "/proc/self/uid_map", "0 0 1\n"))
observe("ids", [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getgroups()])
if marked:
    marked.wait()
report()
