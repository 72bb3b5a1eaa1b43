# kcmp: compares kernel objects of two processes (a KASLR and object-reuse oracle).
# mcp-exec: denied by seccomp (EPERM).
KCMP_FILE, KCMP_VM = 0, 1
refused("kcmp files", "kcmp", os.getpid(), os.getppid(), KCMP_FILE, 0, 0, also=("ESRCH",))
refused("kcmp vm", "kcmp", os.getpid(), os.getpid(), KCMP_VM, 0, 0)
report()
