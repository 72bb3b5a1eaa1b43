# NET-04: Unix sockets of the host reachable by path (docker.sock, D-Bus, systemd), or
# PARAMS["paths"]: sockets the caller bound in the host's /tmp and /run. mcp-exec: no host
# directory is mounted in the sandbox, so no socket file of the host exists in it (ENOENT).
import socket
import stat

found = []
for top, dirs, files in os.walk("/"):
    if top == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys")]
    for name in files + dirs:
        path = os.path.join(top, name)
        try:
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                found.append(path)
        except OSError:
            pass
observe("socket files", found)
for path in found:
    escaped("socket file " + path)
for path in PARAMS.get("paths", []) + ["/run/docker.sock", "/var/run/docker.sock",
                                       "/run/dbus/system_bus_socket", "/run/systemd/private"]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    result = observe("connect " + path, attempt(s.connect, path))
    if result == "ok":
        escaped("connected to " + path)
    s.close()
report()
