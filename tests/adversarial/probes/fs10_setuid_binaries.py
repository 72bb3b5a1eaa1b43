# FS-10: setuid/setgid binaries of the rootfs (su, mount, passwd, unix_chkpwd ...) giving
# their owner's ids. mcp-exec: the rootfs is mounted nosuid and no_new_privs is set: they run
# with the program's own ids. unix_chkpwd (setgid shadow) and su wait for a password on stdin,
# so their ids can be read from /proc while they run.
import stat
import subprocess
import time

found = []
for top, dirs, files in os.walk("/usr"):
    for name in files:
        path = os.path.join(top, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_mode & (stat.S_ISUID | stat.S_ISGID):
            found.append(path)
observe("setuid/setgid binaries", sorted(found))
ours = (os.geteuid(), os.getegid())
for argv in (["/usr/sbin/unix_chkpwd", "root", "nullok"], ["/usr/bin/su", "-c", "true", "root"]):
    if not os.path.exists(argv[0]):
        observe(argv[0], "absent")
        continue
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    seen = set()
    deadline = time.time() + 2
    while child.poll() is None and time.time() < deadline and not seen:
        try:
            lines = open("/proc/%d/status" % child.pid).read().splitlines()
            # Wait for the exec: until then the child is a copy of this python.
            if "python" in open("/proc/%d/comm" % child.pid).read():
                continue
            ids = {l.split(":")[0]: int(l.split()[2]) for l in lines if l.startswith(("Uid", "Gid"))}
            seen.add((ids["Uid"], ids["Gid"]))
        except (OSError, IndexError):
            pass
    child.kill()
    child.wait()
    observe(argv[0] + " effective uid/gid", sorted(seen))
    for ids in seen:
        if ids != ours:
            escaped("%s ran with effective ids %s" % (argv[0], ids))
root_mount = [l.split() for l in open("/proc/self/mountinfo") if l.split()[4] == "/"][0]
observe("/ mount options", root_mount[5].split(","))
observe("NoNewPrivs", status_fields("NoNewPrivs")["NoNewPrivs"])
report()
