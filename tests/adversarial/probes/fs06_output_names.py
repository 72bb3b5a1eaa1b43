# FS-06: names in /tmp/outputs chosen against the host directory that `run --output-dir` writes
# them to: a file 14 directories of 200-byte names down, a 255-byte name, names that look like
# "..", options, escapes and line breaks, and names the caller's directory already holds as
# something else (PARAMS["taken"]: a link out of it, a file where a directory goes, a file to
# replace). A name with "/" in it cannot be made, nor a file named "..": that one is observed.
os.chdir("/tmp/outputs")
deep = "/".join(["n" * 200] * 14)
os.makedirs(deep)
open(deep + "/deep.txt", "w").write("deep\n")
names = ["x" * 251 + ".txt", "...", "..txt", " ..", "-rf", "a\\b", "new\nline", "a:b"]
for name in names:
    open(name, "w").write("odd name\n")
for path in PARAMS["taken"]:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    open(path, "w").write("from the sandbox\n")
observe("create ..", attempt(lambda: os.close(os.open("..", os.O_WRONLY | os.O_CREAT))))
observe("outputs", sorted(os.listdir(".")))
report()
