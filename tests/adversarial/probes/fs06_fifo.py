# FS-06: FIFOs in /tmp/outputs, named like outputs. A collector that opened one for reading would
# wait for a writer that never comes (every process of the run is gone). mcp-exec lists them
# without opening them, and opens what it reads with O_NONBLOCK.
for name in ("out.csv", "plot.png"):
    observe("mkfifo " + name, attempt(os.mkfifo, "/tmp/outputs/" + name))
open("/tmp/outputs/z-control.txt", "w").write("control\n")
report()
