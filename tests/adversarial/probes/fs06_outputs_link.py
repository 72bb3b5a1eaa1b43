# FS-06: /tmp/outputs itself replaced by a link, to a directory the host has (PARAMS["target"],
# where the test planted a file) or to one beneath the workspace. mcp-exec opens /tmp/outputs
# with RESOLVE_NO_SYMLINKS: the run has no outputs.
os.rmdir("/tmp/outputs")
observe("symlink /tmp/outputs", attempt(os.symlink, PARAMS["target"], "/tmp/outputs"))
observe("listdir /tmp/outputs", value(os.listdir, "/tmp/outputs"))
os.mkdir("/tmp/elsewhere")
open("/tmp/elsewhere/beneath.txt", "w").write("beneath the workspace, through a link\n")
if PARAMS.get("beneath"):
    os.unlink("/tmp/outputs")
    observe("symlink /tmp/outputs beneath", attempt(os.symlink, "elsewhere", "/tmp/outputs"))
report()
