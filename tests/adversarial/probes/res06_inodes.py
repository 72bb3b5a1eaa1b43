# RES-06: exhaust inodes. Empty files cost no data blocks, so a tmpfs capped by size= alone
# still lets a program make millions of them, each pinning about 1 KiB of unreclaimable kernel
# memory outside the workspace's size. mcp-exec is expected to cap /tmp and /dev/shm with
# nr_inodes= (at most PARAMS["cap"], 131072 by default): then making files fails with ENOSPC at
# that count. A higher or missing cap is reported without making millions of files.
cap = PARAMS.get("cap", 131072)
for top in ("/tmp", "/dev/shm"):
    vfs = os.statvfs(top)
    files = observe(top + " inodes", vfs.f_files)
    if files > cap:
        escaped("%s allows %d inodes, more than %d" % (top, files, cap))
        continue
    os.mkdir(top + "/inodes")
    made = 0
    try:
        while made <= files:
            os.close(os.open("%s/inodes/%d" % (top, made), os.O_CREAT | os.O_WRONLY, 0o600))
            made += 1
        observe(top + " create", "ok")
        escaped("%s took %d files, beyond its %d inodes" % (top, made, files))
    except OSError as e:
        observe(top + " create", errname(e.errno))
    observe(top + " files made", made)
report()
