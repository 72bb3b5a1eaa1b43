# NS-09: userfaultfd, the classic way to widen a kernel race window. mcp-exec: the syscall is
# denied by seccomp (EPERM) and there is no /dev/userfaultfd.
UFFD_USER_MODE_ONLY = 1
ret, err = raw("userfaultfd", os.O_CLOEXEC | UFFD_USER_MODE_ONLY)
must_fail("userfaultfd user-mode-only", err or "ok")
if err is None:
    os.close(ret)
result = observe("open /dev/userfaultfd", attempt(lambda: os.close(os.open("/dev/userfaultfd", os.O_RDWR))))
if result == "ok":
    escaped("opened /dev/userfaultfd")
report()
