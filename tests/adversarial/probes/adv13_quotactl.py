# quotactl and quotactl_fd: filesystem quota control, reachable without privileges for some
# commands (Q_SYNC). mcp-exec: denied by seccomp (EPERM).
Q_SYNC, Q_GETINFO = 0x800001, 0x800005
refused("quotactl Q_SYNC", "quotactl", Q_SYNC << 8, None, 0, None)
fd = os.open("/tmp", os.O_RDONLY)
info = (ctypes.c_uint8 * 64)()
refused("quotactl_fd Q_GETINFO", "quotactl_fd", fd, Q_GETINFO << 8, 0, ctypes.byref(info), also=("ENOTTY", "ESRCH", "ENOSYS"))
report()
