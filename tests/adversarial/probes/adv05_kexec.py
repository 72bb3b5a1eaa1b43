# kexec_load and kexec_file_load: replace the running kernel. mcp-exec: denied by seccomp
# (EPERM). Arguments are empty: even a permitted call would load nothing.
refused("kexec_load", "kexec_load", 0, 0, None, 0, also=("EINVAL",))
refused("kexec_file_load", "kexec_file_load", -1, -1, 0, None, 0, also=("EBADF", "EINVAL"))
report()
