# NS-10 (issue 11, finding 2): socketpair(2) for families other than AF_UNIX. The kernel builds
# pairs in AF_TIPC when TIPC is built in (which NS-10 counts as denied), and socketpair reaches
# the family's code (and module autoload) before it can say EOPNOTSUPP. mcp-exec: socketpair is
# allowed for AF_UNIX only; every other family gets the filter's EPERM, where the kernel would
# answer EAFNOSUPPORT (family absent) or EOPNOTSUPP (no pairs; Python names it ENOTSUP), never
# EPERM.
import socket


def try_pair(family, kind, proto=0):
    return attempt(lambda: [s.close() for s in socket.socketpair(family, kind, proto)])


ALLOWED = {"AF_UNIX stream": (1, 1), "AF_UNIX dgram": (1, 2), "AF_UNIX seqpacket": (1, 5)}
DENIED = {"AF_TIPC": (30, 5), "AF_INET": (2, 1), "AF_INET6": (10, 2), "AF_NETLINK": (16, 3),
          "AF_VSOCK": (40, 1), "AF_ALG": (38, 5), "AF_RDS": (21, 5), "AF_CAN": (29, 2),
          "AF_BLUETOOTH": (31, 5), "AF_SMC": (43, 1)}
for label, args in ALLOWED.items():
    observe(label, try_pair(*args))
for label, args in DENIED.items():
    must_fail(label, try_pair(*args), also=("EAFNOSUPPORT", "ENOTSUP", "EOPNOTSUPP", "EINVAL"))
report()
