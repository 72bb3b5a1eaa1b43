# NS-10: socket families that reach kernel code beyond TCP/UDP/Unix: AF_ALG (CVE-2026-31431
# "Copy Fail"), AF_VSOCK (reaches the hypervisor's host), AF_PACKET and raw sockets
# (CVE-2020-14386), netlink beyond NETLINK_ROUTE, AF_KEY, and others; first as the program is,
# then after trying a nested user namespace with a network namespace of its own (which would
# give CAP_NET_RAW there). mcp-exec: socket(2) is allowed for AF_UNIX, AF_INET, AF_INET6 and
# NETLINK_ROUTE only, and raw AF_INET and AF_INET6 sockets not at all (EPERM from seccomp;
# ns10_socket_protocols shows it is the filter's).
import socket


def try_socket(family, kind, proto=0):
    return attempt(lambda: socket.socket(family, kind, proto).close())


ALLOWED = {"AF_UNIX stream": (1, 1, 0), "AF_INET stream": (2, 1, 0), "AF_INET6 dgram": (10, 2, 0),
           "AF_NETLINK route": (16, 3, 0)}
DENIED = {"AF_ALG": (38, 5, 0), "AF_VSOCK": (40, 1, 0), "AF_PACKET raw": (17, 3, 0x0300),
          "AF_INET raw icmp": (2, 3, 1), "AF_INET6 raw": (10, 3, 58),
          "AF_NETLINK audit": (16, 3, 9), "AF_NETLINK netfilter": (16, 3, 12),
          "AF_NETLINK uevent": (16, 3, 15), "AF_NETLINK xfrm": (16, 3, 6), "AF_KEY": (15, 3, 2),
          "AF_RDS": (21, 5, 0), "AF_TIPC": (30, 5, 0), "AF_BLUETOOTH": (31, 3, 0),
          "AF_XDP": (44, 3, 0), "AF_CAN": (29, 3, 1), "AF_SMC": (43, 1, 0)}
UNSUPPORTED = ("EAFNOSUPPORT", "EPROTONOSUPPORT", "ESOCKTNOSUPPORT", "EINVAL")
for label, args in ALLOWED.items():
    observe(label, try_socket(*args))
for label, args in DENIED.items():
    must_fail(label, try_socket(*args), also=UNSUPPORTED)
if escalate():
    for label in ("AF_PACKET raw", "AF_INET raw icmp", "AF_NETLINK netfilter"):
        must_fail("after escalation: " + label, try_socket(*DENIED[label]), also=UNSUPPORTED)
report()
