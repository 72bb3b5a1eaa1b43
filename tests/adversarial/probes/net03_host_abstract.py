# NET-03 (containerd CVE-2020-15257): abstract Unix sockets are scoped by network namespace;
# sharing the host's exposes every one of them. PARAMS["name"]: an abstract name the caller
# listens on (stream and datagram). mcp-exec: a network namespace of its own: ECONNREFUSED,
# and /proc/net/unix lists none of the host's sockets.
import socket

address = "\0" + PARAMS["name"]
for label, kind in (("stream", socket.SOCK_STREAM), ("datagram", socket.SOCK_DGRAM)):
    s = socket.socket(socket.AF_UNIX, kind)
    s.settimeout(2)
    result = observe("connect " + label, attempt(s.connect, address + ("-dgram" if kind == socket.SOCK_DGRAM else "")))
    if result == "ok":
        escaped("connected to the host's abstract %s socket" % label)
    s.close()
lines = open("/proc/net/unix").read().splitlines()[1:]
observe("/proc/net/unix entries", len(lines))
if any(PARAMS["name"] in l for l in lines):
    escaped("the host's abstract socket is listed in /proc/net/unix")
report()
