# chroot, after the nested user namespace an attacker would try first (with CAP_SYS_CHROOT
# in it, chroot plus "cd .." games are the classic way out of a chroot). mcp-exec: denied by
# seccomp (EPERM).
escalate()
os.makedirs("/tmp/jail", exist_ok=True)
refused("chroot /tmp/jail", "chroot", b"/tmp/jail")
report()
