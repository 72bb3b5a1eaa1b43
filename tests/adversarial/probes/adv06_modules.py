# Kernel modules: init_module, finit_module, delete_module. mcp-exec: denied by seccomp
# (EPERM). Arguments are invalid: even a permitted call would load or remove nothing.
refused("init_module", "init_module", None, 0, b"", also=("EFAULT", "EINVAL"))
refused("finit_module", "finit_module", -1, b"", 0, also=("EBADF",))
refused("delete_module", "delete_module", b"mcpexec_no_such_module", 0, also=("ENOENT",))
report()
