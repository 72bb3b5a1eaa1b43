# NET-02: a TCP service on the host's loopback (the MCP server's own HTTP port is one).
# PARAMS: "port" (127.0.0.1), optionally "port6" ([::1]), where the caller listens. mcp-exec: the
# sandbox's loopback is its own: nothing listens there (ECONNREFUSED).
import socket


def connect(family, address):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(address)
        s.sendall(b"from the sandbox\n")
    finally:
        s.close()


targets = [("127.0.0.1", socket.AF_INET, ("127.0.0.1", PARAMS["port"])),
           ("localhost", socket.AF_INET, ("localhost", PARAMS["port"]))]
if PARAMS.get("port6"):
    targets.append(("::1", socket.AF_INET6, ("::1", PARAMS["port6"])))
for label, family, address in targets:
    result = observe("connect " + label, attempt(connect, family, address))
    if result == "ok":
        escaped("connected to the host's %s:%s" % (label, address[1]))
report()
