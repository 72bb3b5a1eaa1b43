# NS-10 (issue 11, finding 3): socket types and protocols of the allowed families beyond what
# Python's stack uses: SOCK_PACKET, raw and ping sockets, and the protocols that reach SCTP,
# DCCP, L2TP, MPTCP, SMC and UDP-Lite code or autoload their modules (CVE-2021-23133 in SCTP,
# CVE-2017-6074 in DCCP). mcp-exec: socket()
# is allowed for AF_UNIX stream/dgram/seqpacket, TCP and UDP on AF_INET/AF_INET6 (protocol 0 or
# the named one) and NETLINK_ROUTE, with SOCK_NONBLOCK and SOCK_CLOEXEC; the rest gets the
# filter's EPERM. Without the filter the kernel answers these with another errno or makes the
# socket; the raw sockets with protocol 300 (above IPPROTO_MAX) get EINVAL from it, so their
# EPERM shows the filter is what refuses raw sockets.
import socket

NONBLOCK_CLOEXEC = 0x800 | 0x80000


def try_socket(family, kind, proto=0):
    return attempt(lambda: socket.socket(family, kind, proto).close())


ALLOWED = {"AF_UNIX stream": (1, 1, 0), "AF_UNIX dgram": (1, 2, 0),
           "AF_UNIX seqpacket": (1, 5, 0),
           "AF_INET stream": (2, 1, 0), "AF_INET stream tcp": (2, 1, 6),
           "AF_INET dgram": (2, 2, 0), "AF_INET dgram udp": (2, 2, 17),
           "AF_INET6 stream": (10, 1, 0), "AF_INET6 stream tcp": (10, 1, 6),
           "AF_INET6 dgram": (10, 2, 0), "AF_INET6 dgram udp": (10, 2, 17),
           "AF_INET stream nonblock cloexec": (2, 1 | NONBLOCK_CLOEXEC, 6),
           "AF_NETLINK route raw": (16, 3, 0), "AF_NETLINK route dgram": (16, 2, 0)}
DENIED = {"AF_INET packet": (2, 10, 0), "AF_INET raw proto 300": (2, 3, 300),
          "AF_INET6 raw proto 300": (10, 3, 300),
          "AF_INET ping": (2, 2, 1), "AF_INET6 ping": (10, 2, 58),
          "AF_INET smc": (2, 1, 256), "AF_INET6 smc": (10, 1, 256),
          "AF_INET sctp stream": (2, 1, 132), "AF_INET sctp seqpacket": (2, 5, 132),
          "AF_INET6 sctp stream": (10, 1, 132), "AF_INET dccp": (2, 6, 33),
          "AF_INET6 dccp": (10, 6, 33), "AF_INET l2tp": (2, 2, 115),
          "AF_INET6 l2tp": (10, 2, 115), "AF_INET mptcp": (2, 1, 262),
          "AF_INET6 mptcp": (10, 1, 262), "AF_INET udplite": (2, 2, 136),
          "AF_INET6 udplite": (10, 2, 136), "AF_INET stream udp": (2, 1, 17),
          "AF_INET dgram tcp": (2, 2, 6), "AF_INET seqpacket": (2, 5, 0),
          "AF_INET stream unknown flag": (2, 1 | 0x100, 0),
          "AF_UNIX raw": (1, 3, 0), "AF_UNIX stream proto 1": (1, 1, 1),
          "AF_NETLINK route seqpacket": (16, 5, 0)}
for label, args in ALLOWED.items():
    observe(label, try_socket(*args))
for label, args in DENIED.items():
    must_fail(label, try_socket(*args),
              also=("EAFNOSUPPORT", "EPROTONOSUPPORT", "ESOCKTNOSUPPORT", "EINVAL"))
report()
