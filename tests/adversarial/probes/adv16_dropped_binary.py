# Run a binary the program wrote itself: from the workspace, from /dev/shm, by mmap with
# PROT_EXEC, and from a memfd. mcp-exec: /tmp and /dev/shm are noexec (execve: EACCES; mmap
# PROT_EXEC of a file there: EPERM). A memfd is not on a mount, so it can be executed; the
# process it becomes keeps every restriction (no capabilities, no_new_privs, the same filter).
# Running native code gains nothing over what ctypes already allows.
import mmap
import subprocess

binary = open("/usr/bin/cat", "rb").read()
for path in ("/tmp/dropped", "/dev/shm/dropped"):
    with open(path, "wb") as f:
        f.write(binary)
    os.chmod(path, 0o755)
    result = observe("execve " + path, attempt(lambda: subprocess.run([path, "/dev/null"], check=True)))
    if result == "ok":
        escaped("executed a dropped binary from " + path)
    with open(path, "rb") as f:
        result = observe("mmap PROT_EXEC " + path, attempt(lambda: mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ | mmap.PROT_EXEC)))
    if result == "ok":
        escaped("mapped a dropped file executable from " + path)
fd = os.memfd_create("dropped", 0)
os.write(fd, binary)
try:
    out = subprocess.run(["/proc/self/fd/%d" % fd, "/proc/self/status"], pass_fds=[fd],
                         capture_output=True, text=True, check=True).stdout
    observe("execve memfd", "ok")
    status = {l.split(":")[0]: l.split(":", 1)[1].strip() for l in out.splitlines()}
    got = observe("memfd process", {k: status[k] for k in ("CapEff", "CapBnd", "NoNewPrivs", "Seccomp")})
    if int(got["CapEff"], 16) or int(got["CapBnd"], 16) or got["NoNewPrivs"] != "1":
        escaped("the memfd process has privileges: %s" % got)
except (OSError, subprocess.CalledProcessError) as e:
    observe("execve memfd", errname(e.errno) if isinstance(e, OSError) else "failed")
report()
