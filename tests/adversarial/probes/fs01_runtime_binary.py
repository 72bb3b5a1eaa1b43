# FS-01 (runc CVE-2019-5736): overwrite the runtime through /proc/self/exe or /proc/1/exe.
# mcp-exec: the program's own binary is on the read-only rootfs (EROFS); PID 1 is mcp-exec's
# init, which is not dumpable, so its /proc/1/exe cannot be opened, read or even resolved
# (EACCES, from the ptrace access check on the magic link).


def open_for_write(path):
    os.close(os.open(path, os.O_WRONLY | os.O_TRUNC))


for path in ("/proc/self/exe", "/proc/1/exe"):
    result = observe("write " + path, attempt(open_for_write, path))
    if result == "ok":
        escaped("opened %s for writing" % path)
    elif result == "ETXTBSY":
        # Permission was granted: only the binary being in use stopped the write, which an
        # attacker can outwait (the exploit of CVE-2019-5736 holds an O_PATH descriptor).
        escaped("%s passed the permission checks for writing (ETXTBSY only)" % path)
    observe("readlink " + path, value(os.readlink, path))
observe("read /proc/1/exe", attempt(lambda: open("/proc/1/exe", "rb").read(4)))
observe("list /proc/1/map_files", attempt(os.listdir, "/proc/1/map_files"))
report()
