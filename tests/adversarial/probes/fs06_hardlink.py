# FS-06: a hard link in /tmp/outputs to a file of the rootfs, so that a name inside the
# workspace reaches an inode outside it. The rootfs and the workspace are different mounts:
# link() gives EXDEV, and so does linkat(AT_SYMLINK_FOLLOW) through /proc/self/fd. Were a link
# made, it could only be to the rootfs's file (the host's is not in the sandbox's tree).
observe("link /etc/passwd", attempt(os.link, "/etc/passwd", "/tmp/outputs/passwd.txt"))
fd = os.open("/etc/passwd", os.O_RDONLY)
observe("link /proc/self/fd (AT_SYMLINK_FOLLOW)",
        attempt(lambda: os.link("/proc/self/fd/%d" % fd, "/tmp/outputs/fd.txt",
                                follow_symlinks=True)))
observe("link /usr/bin/python3", attempt(os.link, "/usr/bin/python3", "/tmp/outputs/python3"))
# Positive control: a hard link within the workspace is made and comes back as a file.
open("/tmp/inside.txt", "w").write("workspace bytes\n")
observe("link within the workspace", attempt(os.link, "/tmp/inside.txt", "/tmp/outputs/inside.txt"))
observe("outputs", sorted(os.listdir("/tmp/outputs")))
report()
