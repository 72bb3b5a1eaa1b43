# FS-04: write to the rootfs (/usr, /etc, /), or remount it read-write, also after trying to
# gain capabilities in a nested user namespace. mcp-exec: the rootfs is a read-only bind mount
# (EROFS, checked before file permissions); mount(2) is denied by seccomp (EPERM).
# Every attempt leaves the tree as it was if it succeeds: new names only, same modes, same
# times.
import random

suffix = "%08x" % random.getrandbits(32)
planted = []


def create(path):
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    planted.append(path)


def unchanged_times(path):
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


attacks = {
    "create /usr/bin/planted": lambda: create("/usr/bin/planted-" + suffix),
    "create /etc/planted": lambda: create("/etc/planted-" + suffix),
    "mkdir /planted": lambda: os.mkdir("/planted-" + suffix),
    "chown /etc/passwd (same owner)": lambda: os.chown("/etc/passwd", -1, -1),
    "chmod /usr/bin/su (same mode)": lambda: os.chmod("/usr/bin/su", os.stat("/usr/bin/su").st_mode & 0o7777),
    "utime /etc/passwd (same times)": lambda: unchanged_times("/etc/passwd"),
    "rename /etc/hosts onto itself": lambda: os.rename("/etc/hosts", "/etc/hosts"),
}
for label, fn in attacks.items():
    result = observe(label, attempt(fn))
    if result == "ok":
        escaped(label)
MS_REMOUNT, MS_BIND = 0x20, 0x1000
escalate()
refused("remount / read-write", "mount", None, b"/", None, MS_REMOUNT | MS_BIND, None)
result = observe("after escalation: create /etc/planted", attempt(create, "/etc/planted2-" + suffix))
if result == "ok":
    escaped("created a file in /etc after escalation")
for path in planted:
    attempt(os.unlink, path)
attempt(os.rmdir, "/planted-" + suffix)
report()
