# The kernel log (addresses, other tenants' activity): syslog(2), /dev/kmsg, /proc/kmsg and
# dmesg(1). mcp-exec: syslog is denied by seccomp (EPERM), /dev has no kmsg (ENOENT),
# /proc/kmsg is root's (EACCES).
import subprocess

buf = ctypes.create_string_buffer(4096)
refused("syslog read all", "syslog", 3, buf, 4096)
refused("syslog size", "syslog", 10, None, 0)
for path in ("/dev/kmsg", "/proc/kmsg"):
    result = observe("read " + path, attempt(lambda: open(path, "rb").read(1)))
    if result == "ok":
        escaped("read " + path)
if os.path.exists("/usr/bin/dmesg"):
    p = subprocess.run(["/usr/bin/dmesg"], capture_output=True, text=True)
    observe("dmesg", {"status": p.returncode, "lines": len(p.stdout.splitlines()),
                      "stderr": p.stderr.strip()[-120:]})
    if p.returncode == 0 and p.stdout:
        escaped("dmesg printed the kernel log")
report()
