# NS-11: push input into a terminal with TIOCSTI or TIOCLINUX (CVE-2017-5226), including the
# 64-bit request bypass (CVE-2019-10063: the kernel reads the request as 32 bits). The caller
# starts the sandbox from a session with a controlling terminal. mcp-exec: the program runs
# in a new session without a terminal, its stdio are pipes, and the filter denies both
# requests, comparing the low 32 bits only (EPERM).
TIOCSTI, TIOCLINUX = 0x5412, 0x541C
char = ctypes.c_char(b"#")
fds = {"fd %d" % fd: fd for fd in (0, 1, 2)}
tty = value(os.open, "/dev/tty", os.O_RDWR)
observe("open /dev/tty", "ok" if isinstance(tty, int) else tty)
if isinstance(tty, int):
    fds["/dev/tty"] = tty
NO_TERMINAL = ("ENOTTY", "EIO")
for label, fd in fds.items():
    refused("TIOCSTI " + label, "ioctl", fd, TIOCSTI, ctypes.byref(char), also=NO_TERMINAL)
    refused("TIOCSTI|1<<32 " + label, "ioctl", fd, TIOCSTI | (1 << 32), ctypes.byref(char), also=NO_TERMINAL)
    sub = ctypes.c_char(b"\x0c")  # TIOCL_GETKMSGREDIRECT, harmless if it ran
    refused("TIOCLINUX " + label, "ioctl", fd, TIOCLINUX, ctypes.byref(sub), also=NO_TERMINAL + ("EINVAL",))
stat = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
observe("tty_nr", int(stat[4]))
observe("session leader", os.getsid(0) == os.getpid())
report()
