# FS-03: files of the host. The caller planted files whose names and contents hold
# PARAMS["token"] in the host's /tmp, /var/tmp, /dev/shm, /run and home directories; a walk of
# the whole tree (names everywhere, contents outside /usr) must find them nowhere.
import stat

token = PARAMS["token"]
found, walked, read = [], 0, 0
for top, dirs, files in os.walk("/"):
    if top == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "usr")]
    for name in dirs + files:
        walked += 1
        if token in name:
            found.append(os.path.join(top, name))
    for name in files:
        path = os.path.join(top, name)
        try:
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_size < (1 << 20):
                with open(path, "rb") as f:
                    read += 1
                    if token.encode() in f.read():
                        found.append(path + " (content)")
        except OSError:
            pass
for top, dirs, files in os.walk("/usr"):
    for name in dirs + files:
        walked += 1
        if token in name:
            found.append(os.path.join(top, name))
observe("entries walked", walked)
observe("files read", read)
observe("found", found)
for f in found:
    escaped("found the host's secret: " + f)
report()
