# NET-02: a UDP service on the host's loopback. PARAMS["port"]: where the caller's socket is
# bound on 127.0.0.1 (it answers whatever it receives). mcp-exec: the datagram goes to the
# sandbox's own loopback, where no socket is bound: the kernel answers with ICMP port
# unreachable, seen as ECONNREFUSED on the connected socket.
import socket

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
s.connect(("127.0.0.1", PARAMS["port"]))
observe("send", attempt(s.send, b"from the sandbox"))
try:
    data = s.recv(512)
    observe("recv", "answered")
    escaped("the host's UDP service answered: %r" % data)
except socket.timeout:
    observe("recv", "timeout")
except OSError as e:
    observe("recv", errname(e.errno))
report()
