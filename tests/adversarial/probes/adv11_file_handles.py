# open_by_handle_at ("shocker", 2014): with a handle, a file is opened by inode number without
# a path, past any chroot or bind mount; name_to_handle_at makes handles. mcp-exec: both
# denied by seccomp (EPERM).
AT_FDCWD = -100
handle = (ctypes.c_uint8 * 136)()
ctypes.cast(handle, ctypes.POINTER(ctypes.c_uint32))[0] = 128  # handle_bytes
mount_id = ctypes.c_int()
result = observe("name_to_handle_at /etc/passwd",
                 call("name_to_handle_at", AT_FDCWD, b"/etc/passwd", ctypes.byref(handle), ctypes.byref(mount_id), 0))
root = os.open("/", os.O_RDONLY)
refused("open_by_handle_at", "open_by_handle_at", root, ctypes.byref(handle), os.O_RDONLY, also=("EINVAL", "ESTALE"))
report()
