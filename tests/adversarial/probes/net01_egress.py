# NET-01: egress to the Internet (IPv4, IPv6) and to the cloud metadata service. No packet is
# aimed outside loopback: a UDP connect() only looks up a route, so it fails with ENETUNREACH
# when there is none and sends nothing when there is one. mcp-exec: an empty network namespace
# with loopback only (ENETUNREACH).
import socket

names = observe("interfaces", sorted(name for _, name in socket.if_nameindex()))
for name in names:
    if name != "lo":
        escaped("interface " + name)
routes = observe("IPv4 routes", len(open("/proc/net/route").read().splitlines()) - 1)
if routes:
    escaped("%d IPv4 routes" % routes)
v6 = [l for l in value(lambda: open("/proc/net/ipv6_route").read().splitlines()) or [] if not l.endswith(" lo")]
observe("IPv6 routes off lo", len(v6) if isinstance(v6, list) else v6)


def route(family, address):
    s = socket.socket(family, socket.SOCK_DGRAM)
    try:
        s.connect(address)
    finally:
        s.close()


for label, family, address in (("TEST-NET-1 192.0.2.1", socket.AF_INET, ("192.0.2.1", 9)),
                               ("metadata 169.254.169.254", socket.AF_INET, ("169.254.169.254", 80)),
                               ("public 1.1.1.1", socket.AF_INET, ("1.1.1.1", 53)),
                               ("IPv6 2001:db8::1", socket.AF_INET6, ("2001:db8::1", 9))):
    result = observe("route to " + label, attempt(route, family, address))
    if result == "ok":
        escaped("a route to " + label)
report()
