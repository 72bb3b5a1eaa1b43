# FS-06 (catalogue: 10 000 files): PARAMS["count"] empty files in /tmp/outputs, or as many as
# the workspace's inodes allow. mcp-exec looks at 200,000 entries at most, lists 256 and reads
# 16; the rest is counted.
made = 0
outputs = os.open("/tmp/outputs", os.O_RDONLY | os.O_DIRECTORY)
try:
    while made < PARAMS["count"]:
        os.close(os.open("f-%d" % made, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=outputs))
        made += 1
    observe("create", "ok")
except OSError as e:
    observe("create", errname(e.errno))
observe("files made", made)
report()
