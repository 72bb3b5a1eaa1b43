# FS-06 (docker cp CVE-2018-15664 class): links in /tmp/outputs to files the host has too. The
# collector runs on the host, outside every namespace of the run: were it to follow them,
# /etc/shadow would be the host's, /proc/self/environ and /proc/1/environ a host process's, and
# PARAMS["host_file"] a file the test planted on the host. mcp-exec: openat2 with
# RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, and links are listed, never
# opened.
targets = {
    "plot.png": "/etc/shadow",
    "environ-1.txt": "/proc/1/environ",
    "environ-self.txt": "/proc/self/environ",
    "fd-0.txt": "/proc/self/fd/0",
    "planted.txt": PARAMS["host_file"],
    "up.txt": "../../../../etc/passwd",
    "etc": "/etc",
    "sub/inner.csv": "/etc/shadow",
}
os.mkdir("/tmp/outputs/sub")
for name, target in targets.items():
    observe("symlink " + name, attempt(os.symlink, target, "/tmp/outputs/" + name))
# Positive control: an ordinary file beside them comes back.
open("/tmp/outputs/control.txt", "w").write("control\n")
observe("readlink plot.png", os.readlink("/tmp/outputs/plot.png"))
report()
