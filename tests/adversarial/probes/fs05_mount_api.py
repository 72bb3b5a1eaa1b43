# FS-05: the mount API, old and new (CVE-2022-0185 was in fsconfig), after the attacker's first
# move, a nested user namespace with its own mount namespace. mcp-exec: every call is denied by
# seccomp with EPERM, whatever its arguments (invalid descriptors included: the kernel never
# sees them).
AT_FDCWD, OPEN_TREE_CLONE, MNT_DETACH = -100, 1, 2
escalate()
refused("mount tmpfs", "mount", b"none", b"/tmp", b"tmpfs", 0, None)
refused("umount2 /tmp", "umount2", b"/tmp", MNT_DETACH, also=("EINVAL",))
refused("pivot_root", "pivot_root", b"/tmp", b"/tmp", also=("EINVAL",))
ret, err = raw("fsopen", b"tmpfs", 0)
must_fail("fsopen tmpfs", err or "ok")
fd = ret if err is None else -1
refused("fsconfig", "fsconfig", fd, 1, b"source", b"x", 0)  # FSCONFIG_SET_STRING
refused("fsmount", "fsmount", fd, 0, 0)
refused("fspick", "fspick", AT_FDCWD, b"/tmp", 0)
refused("open_tree clone", "open_tree", AT_FDCWD, b"/tmp", OPEN_TREE_CLONE)
refused("move_mount", "move_mount", -1, b"", AT_FDCWD, b"/tmp", 0)
attr = ctypes.create_string_buffer(32)
refused("mount_setattr", "mount_setattr", AT_FDCWD, b"/tmp", 0, attr, 32)
report()
