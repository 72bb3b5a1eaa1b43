# NS-15: the host's name, seen or set. PARAMS["host_hostname"]: the host's. mcp-exec: the
# sandbox has its own UTS namespace named "sandbox"; sethostname and setdomainname are denied
# by seccomp (EPERM) and /proc/sys is read-only (EROFS). Every attempt sets the current name.
import socket

name = observe("gethostname", socket.gethostname())
if name == PARAMS.get("host_hostname"):
    escaped("the sandbox sees the host's hostname")
observe("uname nodename", os.uname().nodename)
current = name.encode()
refused("sethostname", "sethostname", current, len(current))
domain = open("/proc/sys/kernel/domainname").read().strip().encode()
refused("setdomainname", "setdomainname", domain, len(domain))
result = observe("write /proc/sys/kernel/hostname",
                 attempt(lambda: os.close(os.open("/proc/sys/kernel/hostname", os.O_WRONLY | os.O_TRUNC))))
if result == "ok":
    escaped("opened /proc/sys/kernel/hostname for writing")
report()
