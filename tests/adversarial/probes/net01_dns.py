# NET-01: name resolution, a classic exfiltration channel. mcp-exec: the rootfs's resolv.conf
# names no server, so glibc asks 127.0.0.1:53, which is the sandbox's own empty loopback
# (ECONNREFUSED); getaddrinfo fails. A server named in resolv.conf outside loopback would only
# be routed to (no packet sent), and fail with ENETUNREACH.
import socket

servers = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")]
observe("resolv.conf nameservers", servers)
for name in ("example.com", "metadata.google.internal"):
    try:
        answer = socket.getaddrinfo(name, 80)
        observe("getaddrinfo " + name, "resolved")
        escaped("resolved %s: %s" % (name, answer[0][4]))
    except socket.gaierror as e:
        code = {getattr(socket, n): n for n in dir(socket) if n.startswith("EAI_")}.get(e.errno, e.errno)
        observe("getaddrinfo " + name, code)
query = bytes.fromhex("1234010000010000000000000765786d706c6503636f6d0000010001")
for server in servers or ["127.0.0.1"]:
    s = socket.socket(socket.AF_INET6 if ":" in server else socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    if server.startswith("127.") or server == "::1":
        try:
            s.connect((server, 53))
            s.send(query)
            s.recv(512)
            observe("query " + server, "answered")
            escaped("a DNS server answered at " + server)
        except OSError as e:
            observe("query " + server, "timeout" if isinstance(e, socket.timeout) else errname(e.errno))
    else:
        result = observe("route to " + server, attempt(s.connect, (server, 53)))
        if result == "ok":
            escaped("a route to the DNS server " + server)
    s.close()
report()
